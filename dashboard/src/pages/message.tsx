/** One message: decrypted payload, status per group, traces as a timeline; delete, move to the DLQ. */

import { useState } from "preact/hooks";
import { Link, useLocation } from "wouter-preact";
import type { MessageDetail, MessageRef } from "regina-client";
import { admin } from "../api";
import { ActionButton, ActionResult } from "../components/action";
import { ConfirmDialog } from "../components/dialog";
import { JsonView } from "../components/json";
import { Table } from "../components/table";
import { Badge, Empty, Facts, Id, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { count, duration, groupName } from "../format";
import { useAction, useResource } from "../hooks";
import { pathOf } from "../query";

const QUEUE_MODE = "__QUEUE_MODE__";

export function MessagePage(props: MessageRef) {
  const ref = { partitionId: props.partitionId, transactionId: props.transactionId };
  const key = `${ref.partitionId}/${ref.transactionId}`;
  const message = useResource(`message:${key}`, (signal) => admin.message(ref, { signal }));
  const remove = useAction("write");
  const toDlq = useAction("write");
  const [dialog, setDialog] = useState<"delete" | "dlq" | null>(null);
  const [, navigate] = useLocation();
  const m = message.data;

  return (
    <>
      <PageHeader
        crumbs={[["Messages", "/messages"]]}
        title={<span class="mono-title">{props.transactionId}</span>}
        subtitle={
          m && (
            <>
              <Link href={pathOf("queues", m.queue)}>{m.queue}</Link> / {m.partition} · created{" "}
              <Time value={m.createdAt} full />
            </>
          )
        }
        actions={
          <>
            <ActionButton
              level="write"
              action={toDlq}
              disabled={!m}
              onClick={() => setDialog("dlq")}
              testId="move-to-dlq"
            >
              Move to DLQ…
            </ActionButton>
            <ActionButton
              level="write"
              action={remove}
              tone="danger"
              disabled={!m}
              onClick={() => setDialog("delete")}
              testId="delete-message"
            >
              Delete…
            </ActionButton>
          </>
        }
      />
      <ActionResult action={remove} />
      <ActionResult action={toDlq} />
      {dialog === "delete" && (
        <ConfirmDialog
          title="Delete this message?"
          confirmLabel="Delete message"
          danger
          onCancel={() => setDialog(null)}
          onConfirm={() => {
            setDialog(null);
            void remove.run(
              () => admin.deleteMessage(ref),
              () => "Message deleted.",
              () => navigate(m ? `/messages?queue=${encodeURIComponent(m.queue)}` : "/messages"),
            );
          }}
        >
          The message is deleted with its traces and dead letters; every consumer group skips it. This cannot
          be undone.
        </ConfirmDialog>
      )}
      {dialog === "dlq" && m && (
        <MoveToDlqDialog
          message={m}
          onCancel={() => setDialog(null)}
          onConfirm={(group, error) => {
            setDialog(null);
            void toDlq.run(
              () => admin.moveToDlq(ref, { consumerGroup: group, error: error || undefined }),
              (r) => `Moved to the dead-letter queue of ${groupName(r.consumerGroup)}.`,
              message.reload,
            );
          }}
        />
      )}
      <Loaded resource={message} lines={8}>
        {(d) => (
          <div class="split">
            <div>
              <Panel
                title="Payload"
                testId="payload"
                actions={
                  d.isEncrypted && (
                    <Badge tone="violet" title="Stored encrypted (AES-256-GCM); shown decrypted">
                      encrypted at rest
                    </Badge>
                  )
                }
              >
                <JsonView value={d.payload} testId="payload-json" />
              </Panel>
              <Traces refKey={key} messageRef={ref} />
            </div>
            <div>
              <Panel title="Details" testId="message-details">
                <Facts
                  items={[
                    ["Status", <Badge>{d.status}</Badge>],
                    ["Message id", <Id value={d.id} length={40} />],
                    ["Partition id", <Id value={d.partitionId} length={40} />],
                    ["Trace id", <Id value={d.traceId} length={40} />],
                    ["Producer", d.producerSub ?? "—"],
                    ["Retries", count(d.retryCount)],
                    ["Lease expires", <Time value={d.leaseExpiresAt} />],
                    ["Last error", d.errorMessage ?? "—"],
                    [
                      "Consumption",
                      `${d.mode.type} · ${d.mode.consumedByGroups} of ${d.mode.busGroupsCount + (d.mode.hasQueueMode ? 1 : 0)} groups done`,
                    ],
                    ["Queue lease time", duration(d.queueConfig.leaseTime)],
                    ["Queue retry limit", count(d.queueConfig.retryLimit)],
                  ]}
                />
              </Panel>
              <Panel title="Consumer groups" testId="message-groups">
                <Table
                  columns={[
                    {
                      label: "Group",
                      cell: (g) => <Link href={pathOf("consumer-groups", g.name)}>{groupName(g.name)}</Link>,
                    },
                    { label: "Status", cell: (g) => <Badge>{g.status}</Badge> },
                    { label: "Retries", numeric: true, cell: (g) => count(g.retryCount) },
                    {
                      label: "Dead letter",
                      cell: (g) =>
                        g.dlq ? (
                          <span title={g.dlq.errorMessage}>
                            <span class="truncate">{g.dlq.errorMessage}</span> ·{" "}
                            <Time value={g.dlq.failedAt} />
                          </span>
                        ) : (
                          <span class="muted">—</span>
                        ),
                    },
                  ]}
                  rows={d.consumerGroups}
                  rowKey={(g) => g.name}
                  empty="No group has consumed this queue yet."
                />
              </Panel>
            </div>
          </div>
        )}
      </Loaded>
    </>
  );
}

function MoveToDlqDialog(props: {
  message: MessageDetail;
  onCancel: () => void;
  onConfirm: (group: string, error: string) => void;
}) {
  const groups = props.message.consumerGroups.map((g) => g.name);
  const choices = groups.includes(QUEUE_MODE) ? groups : [QUEUE_MODE, ...groups];
  const [group, setGroup] = useState(choices[0] ?? QUEUE_MODE);
  const [error, setError] = useState("");
  return (
    <ConfirmDialog
      title="Move to the dead-letter queue"
      confirmLabel="Move to DLQ"
      onCancel={props.onCancel}
      onConfirm={() => props.onConfirm(group, error)}
    >
      <p>The group skips this message; it can be requeued from the dead-letter queue later.</p>
      <label class="field">
        <span>Consumer group</span>
        <select
          value={group}
          onChange={(e) => setGroup((e.target as HTMLSelectElement).value)}
          aria-label="Consumer group"
        >
          {choices.map((name) => (
            <option key={name} value={name}>
              {groupName(name)}
            </option>
          ))}
        </select>
      </label>
      <label class="field" style={{ marginTop: "10px" }}>
        <span>Reason (optional)</span>
        <input
          value={error}
          onInput={(e) => setError((e.target as HTMLInputElement).value)}
          placeholder="Moved to DLQ manually"
          aria-label="Reason"
        />
      </label>
    </ConfirmDialog>
  );
}

/** The message's trace events as a timeline, oldest first. */
export function Traces(props: { refKey: string; messageRef: MessageRef }) {
  const { messageRef } = props;
  const traces = useResource(`traces:${props.refKey}`, (signal) => admin.traces(messageRef, { signal }));
  return (
    <Panel title="Traces" testId="message-traces">
      <Loaded resource={traces} lines={3}>
        {(events) =>
          events.length === 0 ? (
            <Empty>No trace events were recorded for this message.</Empty>
          ) : (
            <ol class="timeline">
              {events.map((e) => (
                <li key={e.id}>
                  <div class="timeline-head">
                    <Badge tone="violet">{e.event_type}</Badge>
                    <Time value={e.created_at} full />
                    <span class="muted">
                      {groupName(e.consumer_group)}
                      {e.worker_id && <> · {e.worker_id}</>}
                    </span>
                    {e.trace_names.map((n) => (
                      <Link key={n} href={pathOf("traces", n)}>
                        #{n}
                      </Link>
                    ))}
                  </div>
                  <JsonView value={e.data} testId="trace-data" />
                </li>
              ))}
            </ol>
          )
        }
      </Loaded>
    </Panel>
  );
}
