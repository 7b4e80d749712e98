/** Messages: the browser with queue, partition, status, group and time filters, paged by the broker. */

import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { MessageListQuery, MessageStatus } from "regina-client";
import { admin } from "../api";
import { RangeField, rangeInstants } from "../components/range";
import { SearchField } from "../components/search";
import { Pager, Table } from "../components/table";
import { Badge, Id, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { useResource } from "../hooks";
import { intParam, useQueryParams } from "../query";

const STATUSES: MessageStatus[] = ["pending", "processing", "completed", "dead_letter"];

export function MessagesPage() {
  const [params, set] = useQueryParams();
  const [now, setNow] = useState(() => Date.now());
  const range = params.get("range") ?? "24h";
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const query: MessageListQuery = {
    queue: params.get("queue") || undefined,
    partition: params.get("partition") || undefined,
    consumerGroup: params.get("group") || undefined,
    status: (params.get("status") as MessageStatus | null) || undefined,
    ...rangeInstants(range, params.get("from"), params.get("to"), now),
    offset,
    limit,
  };
  const messages = useResource(JSON.stringify(query), (signal) => admin.messages(query, { signal }));
  const queues = useResource("queue-names", (signal) => admin.queues({ limit: 1000 }, { signal }));

  return (
    <>
      <PageHeader
        title="Messages"
        subtitle="Newest first, without payloads: open a message to see its payload, groups and traces"
        actions={
          <button type="button" class="button" onClick={() => setNow(Date.now())}>
            Refresh
          </button>
        }
      />
      <Panel>
        <div class="toolbar">
          <label class="field">
            <span>Queue</span>
            <input
              list="queue-names"
              value={params.get("queue") ?? ""}
              placeholder="Any queue"
              onChange={(e) => set({ queue: (e.target as HTMLInputElement).value.trim(), offset: undefined })}
              aria-label="Queue"
            />
            <datalist id="queue-names">
              {(queues.data?.queues ?? []).map((q) => (
                <option key={q.id} value={q.name} />
              ))}
            </datalist>
          </label>
          <SearchField
            label="Partition"
            value={params.get("partition") ?? ""}
            placeholder="Exact name"
            onChange={(v) => set({ partition: v, offset: undefined })}
          />
          <label class="field">
            <span>Status</span>
            <select
              value={params.get("status") ?? ""}
              onChange={(e) => set({ status: (e.target as HTMLSelectElement).value, offset: undefined })}
              aria-label="Status"
            >
              <option value="">Any status</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s.replace("_", " ")}
                </option>
              ))}
            </select>
          </label>
          <SearchField
            label="Consumer group"
            value={params.get("group") ?? ""}
            placeholder="Status for this group"
            onChange={(v) => set({ group: v, offset: undefined })}
          />
          <RangeField
            range={range}
            from={params.get("from")}
            to={params.get("to")}
            onChange={(patch) => set({ ...patch, offset: undefined })}
          />
        </div>
        <Loaded resource={messages} lines={10}>
          {(list) => (
            <>
              <Table
                testId="messages-table"
                columns={[
                  { label: "Created", cell: (m) => <Time value={m.createdAt} /> },
                  {
                    label: "Transaction",
                    cell: (m) => (
                      <Link
                        href={`/messages/${encodeURIComponent(m.partitionId)}/${encodeURIComponent(m.transactionId)}`}
                      >
                        <Id value={m.transactionId} length={28} />
                      </Link>
                    ),
                  },
                  { label: "Queue", cell: (m) => m.queue },
                  { label: "Partition", cell: (m) => m.partition },
                  { label: "Status", cell: (m) => <Badge>{m.status}</Badge> },
                  {
                    label: "Groups done",
                    numeric: true,
                    cell: (m) =>
                      m.busStatus.totalGroups ? `${m.busStatus.consumedBy}/${m.busStatus.totalGroups}` : "—",
                  },
                  { label: "Trace", cell: (m) => <Id value={m.traceId} /> },
                ]}
                rows={list.messages}
                rowKey={(m) => `${m.partitionId}/${m.transactionId}`}
                empty="No message matches these filters in this time range."
              />
              <Pager
                offset={list.pagination.offset}
                limit={limit}
                shown={list.messages.length}
                hasMore={list.pagination.hasMore}
                onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
              />
            </>
          )}
        </Loaded>
      </Panel>
    </>
  );
}
