/** One consumer group: its lag per partition on each queue, and seeks (replay or skip). */

import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { ConsumerGroupDetail } from "regina-client";
import { admin } from "../api";
import { ActionButton, ActionResult } from "../components/action";
import { ConfirmDialog } from "../components/dialog";
import { Table } from "../components/table";
import { Badge, Empty, Loaded, PageHeader, Panel, Stat, Time } from "../components/ui";
import { absolute, count, duration, fromLocalInput, groupName } from "../format";
import { useAction, useResource, type Action } from "../hooks";
import { pathOf } from "../query";

type QueueFigures = ConsumerGroupDetail[string];

/** Partitions fetched and listed per queue, most lagging first; the stats above count them all. */
const PARTITION_ROWS_MAX = 200;

/** A seek waiting for confirmation: a whole queue or one partition, to the end or to an instant. */
interface Seek {
  queue: string;
  partition?: string;
  timestamp?: string;
}

export function GroupPage(props: { name: string }) {
  const group = useResource(
    `group:${props.name}`,
    (signal) => admin.consumerGroup(props.name, { sort: "lag", limit: PARTITION_ROWS_MAX }, { signal }),
    10_000,
  );
  const seek = useAction("write");
  const [pending, setPending] = useState<Seek | null>(null);

  function confirmSeek(target: Seek) {
    setPending(null);
    const to = target.timestamp ? { timestamp: target.timestamp } : ({ toEnd: true } as const);
    if (target.partition === undefined)
      void seek.run(
        () => admin.seek(props.name, target.queue, to),
        (r) =>
          `Moved ${groupName(props.name)} on ${r.queueName}: ${count(r.partitionsUpdated)} partitions updated.`,
        group.reload,
      );
    else {
      const partition = target.partition;
      void seek.run(
        () => admin.seekPartition(props.name, target.queue, partition, to),
        (r) => `Moved ${groupName(props.name)} on ${r.queueName}/${r.partitionName}.`,
        group.reload,
      );
    }
  }

  return (
    <>
      <PageHeader
        crumbs={[["Consumer groups", "/consumer-groups"]]}
        title={groupName(props.name)}
        subtitle="Lag per partition. A seek moves the group: to the end skips what is there; to an instant replays (or skips) to the first message created after it."
      />
      <ActionResult action={seek} />
      {pending && (
        <ConfirmDialog
          title={pending.timestamp ? "Replay from an instant?" : "Skip to the end?"}
          confirmLabel={pending.timestamp ? "Seek" : "Seek to end"}
          onCancel={() => setPending(null)}
          onConfirm={() => confirmSeek(pending)}
        >
          {groupName(props.name)} will next receive, on{" "}
          <strong>
            {pending.partition === undefined
              ? `every partition of ${pending.queue}`
              : `${pending.queue}/${pending.partition}`}
          </strong>
          ,{" "}
          {pending.timestamp
            ? `the first message created after ${absolute(pending.timestamp)}.`
            : "only messages pushed after now."}{" "}
          Its active leases there end.
        </ConfirmDialog>
      )}
      <Loaded resource={group} lines={6}>
        {(detail) => {
          const queues = Object.entries(detail);
          if (queues.length === 0)
            return (
              <Panel>
                <Empty>This group has no cursor on any queue. It gets one at its first pop.</Empty>
              </Panel>
            );
          return (
            <>
              {queues.map(([queue, figures]) => (
                <QueuePanel key={queue} queue={queue} figures={figures} action={seek} onSeek={setPending} />
              ))}
            </>
          );
        }}
      </Loaded>
    </>
  );
}

function QueuePanel(props: {
  queue: string;
  figures: QueueFigures;
  action: Action;
  onSeek: (s: Seek) => void;
}) {
  const [when, setWhen] = useState("");
  const timestamp = fromLocalInput(when);
  const { queue } = props;
  const { partitions, total, totalLag: lag, maxTimeLag: maxTime, leased } = props.figures;
  return (
    <Panel
      testId={`group-queue-${queue}`}
      title={
        <>
          Queue <Link href={pathOf("queues", queue)}>{queue}</Link>
        </>
      }
      actions={
        <div class="inline-form">
          <ActionButton
            level="write"
            small
            action={props.action}
            onClick={() => props.onSeek({ queue })}
            testId="seek-end"
          >
            Seek to end
          </ActionButton>
          <input
            type="datetime-local"
            step={1}
            value={when}
            onInput={(e) => setWhen((e.target as HTMLInputElement).value)}
            aria-label="Seek to instant"
          />
          <ActionButton
            level="write"
            small
            action={props.action}
            disabled={!timestamp}
            onClick={() => props.onSeek({ queue, timestamp })}
            testId="seek-time"
          >
            Seek to instant
          </ActionButton>
        </div>
      }
    >
      <div class="stats compact">
        <Stat label="Lag" value={count(lag)} hint="messages" tone={lag ? "amber" : "green"} />
        <Stat label="Max time lag" value={duration(maxTime)} />
        <Stat label="Partitions" value={count(total)} />
        <Stat label="Leased" value={count(leased)} />
      </div>
      <Table
        columns={[
          { label: "Partition", cell: (p) => p.partition },
          { label: "Lag", numeric: true, cell: (p) => count(p.offsetLag) },
          { label: "Time lag", numeric: true, cell: (p) => duration(p.timeLagSeconds) },
          { label: "Consumed", numeric: true, cell: (p) => count(p.totalConsumed) },
          { label: "Last consumed", cell: (p) => <Time value={p.lastConsumedAt} /> },
          {
            label: "Lease",
            cell: (p) =>
              p.leaseActive ? (
                <Badge tone="amber" title={p.workerId ?? undefined}>
                  leased
                </Badge>
              ) : (
                <span class="muted">idle</span>
              ),
          },
          {
            label: "",
            cell: (p) => (
              <div class="row-actions">
                <ActionButton
                  level="write"
                  small
                  action={props.action}
                  onClick={() => props.onSeek({ queue, partition: p.partition })}
                >
                  To end
                </ActionButton>
                <ActionButton
                  level="write"
                  small
                  action={props.action}
                  disabled={!timestamp}
                  onClick={() => props.onSeek({ queue, partition: p.partition, timestamp })}
                >
                  To instant
                </ActionButton>
              </div>
            ),
          },
        ]}
        rows={partitions}
        rowKey={(p) => p.partition}
        empty="No partition yet."
      />
      {total > partitions.length && (
        <p class="muted">
          The {count(partitions.length)} most lagging of {count(total)} partitions are listed.
        </p>
      )}
    </Panel>
  );
}
