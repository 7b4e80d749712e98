/** Dead letters: filters, paging with the total, payload view and requeue. */

import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { DlqEntry, DlqQuery } from "regina-client";
import { admin } from "../api";
import { ActionButton, ActionResult } from "../components/action";
import { JsonView } from "../components/json";
import { RangeField, rangeInstants } from "../components/range";
import { SearchField } from "../components/search";
import { Pager, Table } from "../components/table";
import { Facts, Id, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { count, groupName } from "../format";
import { useAction, useResource, type Action } from "../hooks";
import { intParam, pathOf, useQueryParams } from "../query";

export function DlqPage() {
  const [params, set] = useQueryParams();
  const [now] = useState(() => Date.now());
  const range = params.get("range") ?? "all";
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const query: DlqQuery = {
    queue: params.get("queue") || undefined,
    consumerGroup: params.get("group") || undefined,
    partition: params.get("partition") || undefined,
    ...rangeInstants(range, params.get("from"), params.get("to"), now),
    offset,
    limit,
  };
  const entries = useResource(JSON.stringify(query), (signal) => admin.dlq(query, { signal }), 15_000);
  const requeue = useAction("write");
  const [open, setOpen] = useState<DlqEntry | null>(null);

  function requeueEntry(entry: DlqEntry, allGroups: boolean) {
    const ref = { partitionId: entry.partitionId, transactionId: entry.transactionId };
    setOpen(null);
    void requeue.run(
      () => admin.requeue(ref, allGroups ? {} : { consumerGroup: entry.consumerGroup }),
      (r) => `Requeued ${entry.transactionId} for ${r.consumerGroups.map(groupName).join(", ")}.`,
      entries.reload,
    );
  }

  return (
    <>
      <PageHeader
        title="Dead letters"
        subtitle={
          entries.data
            ? `${count(entries.data.total)} entries match · newest failure first`
            : "Messages that exhausted their retries, per group"
        }
      />
      <ActionResult action={requeue} />
      <Panel>
        <div class="toolbar">
          <SearchField
            label="Queue"
            value={params.get("queue") ?? ""}
            placeholder="Exact name"
            onChange={(v) => set({ queue: v, offset: undefined })}
          />
          <SearchField
            label="Consumer group"
            value={params.get("group") ?? ""}
            placeholder="Exact name"
            onChange={(v) => set({ group: v, offset: undefined })}
          />
          <SearchField
            label="Partition"
            value={params.get("partition") ?? ""}
            placeholder="Exact name"
            onChange={(v) => set({ partition: v, offset: undefined })}
          />
          <RangeField
            range={range}
            from={params.get("from")}
            to={params.get("to")}
            anyLabel="Any time"
            onChange={(patch) => set({ ...patch, offset: undefined })}
          />
        </div>
        <Loaded resource={entries} lines={8}>
          {(list) => (
            <>
              <Table
                testId="dlq-table"
                columns={[
                  { label: "Failed", cell: (e) => <Time value={e.failedAt} /> },
                  { label: "Queue", cell: (e) => <Link href={pathOf("queues", e.queue)}>{e.queue}</Link> },
                  { label: "Partition", cell: (e) => e.partition },
                  { label: "Group", cell: (e) => groupName(e.consumerGroup) },
                  {
                    label: "Error",
                    cell: (e) => (
                      <span class="truncate" title={e.errorMessage ?? ""}>
                        {e.errorMessage ?? "—"}
                      </span>
                    ),
                  },
                  { label: "Retries", numeric: true, cell: (e) => count(e.retryCount) },
                  {
                    label: "Transaction",
                    cell: (e) => (
                      <Link
                        href={`/messages/${encodeURIComponent(e.partitionId)}/${encodeURIComponent(e.transactionId)}`}
                      >
                        <Id value={e.transactionId} />
                      </Link>
                    ),
                  },
                  {
                    label: "",
                    cell: (e) => (
                      <div class="row-actions">
                        <button type="button" class="button small" onClick={() => setOpen(e)}>
                          View
                        </button>
                        <ActionButton
                          level="write"
                          small
                          action={requeue}
                          onClick={() => requeueEntry(e, false)}
                          testId="requeue"
                        >
                          Requeue
                        </ActionButton>
                      </div>
                    ),
                  },
                ]}
                rows={list.messages}
                rowKey={(e) => `${e.partitionId}/${e.transactionId}/${e.consumerGroup}`}
                empty="No dead letters match. Failed messages land here after their last retry."
              />
              <Pager
                offset={list.pagination.offset}
                limit={limit}
                shown={list.messages.length}
                total={list.total}
                onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
              />
            </>
          )}
        </Loaded>
      </Panel>
      {open && (
        <EntryDialog entry={open} action={requeue} onClose={() => setOpen(null)} onRequeue={requeueEntry} />
      )}
    </>
  );
}

function EntryDialog(props: {
  entry: DlqEntry;
  action: Action;
  onClose: () => void;
  onRequeue: (entry: DlqEntry, allGroups: boolean) => void;
}) {
  const e = props.entry;
  return (
    <dialog
      class="dialog wide"
      ref={(d) => {
        if (d && !d.open) d.showModal();
      }}
      onCancel={props.onClose}
      data-testid="dlq-entry"
    >
      <h3>Dead letter of {groupName(e.consumerGroup)}</h3>
      <Facts
        items={[
          ["Queue", `${e.queue} / ${e.partition}`],
          ["Transaction", <Id value={e.transactionId} length={40} />],
          ["Error", e.errorMessage ?? "—"],
          ["Retries", count(e.retryCount)],
          ["Created", <Time value={e.createdAt} full />],
          ["Failed", <Time value={e.failedAt} full />],
          ["Trace id", <Id value={e.traceId} length={40} />],
          ["Producer", e.producerSub ?? "—"],
        ]}
      />
      <div class="section-title">Payload</div>
      <JsonView value={e.data} testId="dlq-payload" />
      <div class="dialog-actions">
        <button type="button" class="button" onClick={props.onClose}>
          Close
        </button>
        <ActionButton level="write" action={props.action} onClick={() => props.onRequeue(e, true)}>
          Requeue for every group
        </ActionButton>
        <ActionButton
          level="write"
          tone="primary"
          action={props.action}
          onClick={() => props.onRequeue(e, false)}
        >
          Requeue for {groupName(e.consumerGroup)}
        </ActionButton>
      </div>
    </dialog>
  );
}
