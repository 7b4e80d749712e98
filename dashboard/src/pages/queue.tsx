/**
 * One queue: options, totals, consumer groups with their lag, and its partitions — paged and
 * filtered by the broker, so a queue with 100 000 partitions opens as fast as one with ten.
 */

import { useState } from "preact/hooks";
import { Link, useLocation } from "wouter-preact";
import type { QueueDetail } from "regina-client";
import { admin } from "../api";
import { ActionButton, ActionResult } from "../components/action";
import { ConfirmDialog } from "../components/dialog";
import { SearchField } from "../components/search";
import { Pager, Table } from "../components/table";
import { Badge, ErrorBox, Facts, Loaded, PageHeader, Panel, Stat, Time } from "../components/ui";
import { count, duration, groupName } from "../format";
import { useAction, useResource, type Resource } from "../hooks";
import { intParam, pathOf, useQueryParams } from "../query";

/** Pauses between asking for a stats pass while one runs elsewhere, and how many times to ask. */
const RECOUNT_RETRY_MILLIS = 250;
const RECOUNT_ATTEMPTS = 40;

/**
 * The totals come from the stats tables, which the broker recounts every STATS_INTERVAL_MS
 * (http-api.md §4.16): after a clear, a pass now, so that the reload shows the emptied queue
 * instead of the counts of the pass before it. A pass that runs elsewhere makes the broker skip
 * this one, and may have read the queue before the clear: ask again until one runs here, for ten
 * seconds at most. A refused or failed recount leaves the counts to the next pass; the clear
 * itself succeeded either way.
 */
async function recountNow(): Promise<void> {
  for (let attempt = 0; attempt < RECOUNT_ATTEMPTS; attempt++) {
    try {
      if ("refreshed" in (await admin.refreshStats())) return;
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, RECOUNT_RETRY_MILLIS));
  }
}

export function QueuePage(props: { name: string }) {
  const { name } = props;
  // Only the totals are needed from the detail: its own partition page is one row.
  const detail = useResource(
    `queue:${name}`,
    (signal) => admin.queue(name, { limit: 1 }, { signal }),
    15_000,
  );
  const [confirming, setConfirming] = useState<"clear" | "delete" | null>(null);
  const clear = useAction("admin");
  const remove = useAction("admin");
  const [, navigate] = useLocation();
  const q = detail.data;
  const missing = detail.error?.code === "queue_not_found";

  return (
    <>
      <PageHeader
        crumbs={[["Queues", "/queues"]]}
        title={name}
        subtitle={
          q && (
            <>
              Namespace <strong>{q.namespace || "—"}</strong> · task <strong>{q.task || "—"}</strong> ·
              created <Time value={q.createdAt} full />
            </>
          )
        }
        actions={
          <>
            <Link class="button" href={`/messages?queue=${encodeURIComponent(name)}`}>
              Browse messages
            </Link>
            <Link class="button" href={`/dlq?queue=${encodeURIComponent(name)}`}>
              Dead letters
            </Link>
            <ActionButton
              level="admin"
              action={clear}
              disabled={!q}
              onClick={() => setConfirming("clear")}
              testId="clear-queue"
            >
              Clear…
            </ActionButton>
            <ActionButton
              level="admin"
              action={remove}
              disabled={!q}
              tone="danger"
              onClick={() => setConfirming("delete")}
              testId="delete-queue"
            >
              Delete…
            </ActionButton>
          </>
        }
      />
      <ActionResult action={clear} />
      <ActionResult action={remove} />
      {confirming === "clear" && (
        <ConfirmDialog
          title={`Clear queue ${name}?`}
          confirmLabel="Clear queue"
          danger
          onCancel={() => setConfirming(null)}
          onConfirm={() => {
            setConfirming(null);
            void clear.run(
              async () => {
                const result = await admin.clearQueue(name);
                await recountNow();
                return result;
              },
              (r) =>
                `Cleared ${name}: ${count(r.deletedMessages)} messages and ${count(r.deletedDlq)} dead letters deleted.`,
              detail.reload,
            );
          }}
        >
          Every message, dead letter and trace of the queue is deleted and every consumer group moves to the
          end of each partition. Options, partitions and groups stay. This cannot be undone.
        </ConfirmDialog>
      )}
      {confirming === "delete" && (
        <ConfirmDialog
          title={`Delete queue ${name}?`}
          confirmLabel="Delete queue"
          danger
          typeToConfirm={name}
          onCancel={() => setConfirming(null)}
          onConfirm={() => {
            setConfirming(null);
            void remove.run(
              () => admin.deleteQueue(name),
              () => `Deleted ${name}.`,
              () => navigate("/queues"),
            );
          }}
        >
          The queue is deleted with its partitions, messages, consumer groups' cursors, subscriptions, dead
          letters and traces. This cannot be undone.
        </ConfirmDialog>
      )}
      {missing && detail.error ? (
        <Panel>
          <ErrorBox error={detail.error} retry={detail.reload} />
          <p class="muted">
            No queue is named <strong>{name}</strong>: it may have been deleted.{" "}
            <Link href="/queues">All queues</Link>
          </p>
        </Panel>
      ) : (
        <QueueBody name={name} detail={detail} />
      )}
    </>
  );
}

function QueueBody(props: { name: string; detail: Resource<QueueDetail> }) {
  const { name, detail } = props;
  return (
    <>
      <Panel title="Totals" testId="queue-totals">
        <Loaded resource={detail} lines={2}>
          {(d) => <Totals detail={d} />}
        </Loaded>
      </Panel>
      <div class="split">
        <Partitions queue={name} />
        <div>
          <Groups queue={name} />
          <Panel title="Options" testId="queue-options">
            <Loaded resource={detail} lines={6}>
              {(d) => <Options detail={d} />}
            </Loaded>
          </Panel>
        </div>
      </div>
    </>
  );
}

function Totals(props: { detail: QueueDetail }) {
  const t = props.detail.totals;
  return (
    <div class="stats eight">
      <Stat label="Partitions" value={count(props.detail.partitionCount)} />
      <Stat label="Messages" value={count(t.total)} />
      <Stat label="Depth" value={count(t.pending + t.processing)} hint="not done by all groups" />
      <Stat label="Pending" value={count(t.pending)} tone="blue" />
      <Stat label="Processing" value={count(t.processing)} tone="amber" />
      <Stat label="Completed" value={count(t.completed)} tone="green" />
      <Stat label="Failing heads" value={count(t.failed)} hint="awaiting a retry" />
      <Stat label="Dead letters" value={count(t.deadLetter)} tone={t.deadLetter ? "red" : ""} />
    </div>
  );
}

function Options(props: { detail: QueueDetail }) {
  const o = props.detail.options;
  const seconds = (v: number) => (v ? duration(v) : "off");
  return (
    <Facts
      items={[
        ["Lease time", duration(o.leaseTime)],
        ["Retry limit", count(o.retryLimit)],
        ["Retry delay", o.retryDelay ? `${count(o.retryDelay)} ms` : "none"],
        ["Max size", o.maxSize ? count(o.maxSize) : "unlimited"],
        ["TTL", seconds(o.ttl)],
        ["Priority", count(o.priority)],
        ["Delayed processing", seconds(o.delayedProcessing)],
        ["Window buffer", seconds(o.windowBuffer)],
        ["Dead-letter queue", o.deadLetterQueue ? "on" : "off"],
        ["Retention", o.retentionEnabled ? seconds(o.retentionSeconds) : "disabled"],
        ["Completed retention", o.retentionEnabled ? seconds(o.completedRetentionSeconds) : "disabled"],
        ["Max wait (eviction)", seconds(o.maxWaitTimeSeconds)],
        ["Encryption", o.encryptionEnabled ? <Badge tone="violet">encrypted</Badge> : "off"],
      ]}
    />
  );
}

function Partitions(props: { queue: string }) {
  const [params, set] = useQueryParams();
  const search = params.get("partition") ?? "";
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 25);
  const query = { queue: props.queue, search: search || undefined, offset, limit };
  const partitions = useResource(
    JSON.stringify(query),
    (signal) => admin.partitions(query, { signal }),
    15_000,
  );
  return (
    <Panel
      title="Partitions"
      testId="partitions"
      actions={
        partitions.data && <span class="muted">{count(partitions.data.pagination.total)} partitions</span>
      }
    >
      <div class="toolbar">
        <SearchField
          label="Find partition"
          value={search}
          placeholder="Part of a partition name"
          onChange={(v) => set({ partition: v, offset: undefined })}
          grow
        />
      </div>
      <Loaded resource={partitions} lines={8}>
        {(list) => (
          <>
            <Table
              testId="partitions-table"
              columns={[
                {
                  label: "Partition",
                  cell: (p) => (
                    <Link
                      href={`/messages?queue=${encodeURIComponent(props.queue)}&partition=${encodeURIComponent(p.name)}`}
                    >
                      {p.name}
                    </Link>
                  ),
                },
                { label: "Messages", numeric: true, cell: (p) => count(p.messages.total) },
                { label: "Pending", numeric: true, cell: (p) => count(p.messages.pending) },
                { label: "Groups", numeric: true, cell: (p) => count(p.consumerGroups) },
                {
                  label: "Leases",
                  numeric: true,
                  cell: (p) => (p.leasedBy ? <Badge tone="amber">{String(p.leasedBy)}</Badge> : "0"),
                },
                { label: "Last activity", cell: (p) => <Time value={p.lastActivity} /> },
              ]}
              rows={list.partitions}
              rowKey={(p) => p.id}
              empty={
                search ? "No partition matches." : "No partitions: the queue has not received a push yet."
              }
            />
            <Pager
              offset={list.pagination.offset}
              limit={limit}
              shown={list.partitions.length}
              total={list.pagination.total}
              onChange={(o, l) => set({ offset: o || undefined, limit: l === 25 ? undefined : l })}
            />
          </>
        )}
      </Loaded>
    </Panel>
  );
}

/** The groups consuming this queue and their lag (the listing is small: one row per group and queue). */
function Groups(props: { queue: string }) {
  const groups = useResource(
    "groups-all",
    (signal) => admin.consumerGroups({ limit: 10_000 }, { signal }),
    15_000,
  );
  return (
    <Panel title="Consumer groups" testId="queue-groups">
      <Loaded resource={groups} lines={3}>
        {(page) => (
          <Table
            columns={[
              {
                label: "Group",
                cell: (g) => <Link href={pathOf("consumer-groups", g.name)}>{groupName(g.name)}</Link>,
              },
              { label: "Lag", numeric: true, cell: (g) => count(g.totalLag) },
              { label: "Time lag", numeric: true, cell: (g) => duration(g.maxTimeLag) },
              { label: "State", cell: (g) => <Badge>{g.state}</Badge> },
            ]}
            rows={page.items.filter((g) => g.queueName === props.queue)}
            rowKey={(g) => g.name}
            empty="No group consumes this queue yet."
          />
        )}
      </Loaded>
    </Panel>
  );
}
