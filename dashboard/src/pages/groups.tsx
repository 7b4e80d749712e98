/** Consumer groups: every (group, queue) with its lag, paged by the broker; and the lagging view. */

import { Link } from "wouter-preact";
import { admin } from "../api";
import { Pager, Table } from "../components/table";
import { Badge, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { count, duration, groupName } from "../format";
import { useResource } from "../hooks";
import { intParam, pathOf, useQueryParams } from "../query";

const LAG_CHOICES: [number, string][] = [
  [0, "any lag"],
  [60, "1 min"],
  [300, "5 min"],
  [3600, "1 hour"],
  [86_400, "1 day"],
];

export function GroupsPage() {
  const [params, set] = useQueryParams();
  const lagging = params.get("view") === "lagging";
  return (
    <>
      <PageHeader title="Consumer groups" subtitle="Lag of every group on every queue it consumes" />
      <nav class="tabs">
        <a
          class={`tab ${lagging ? "" : "active"}`}
          href="/consumer-groups"
          onClick={tab(() => set({ view: undefined, offset: undefined }))}
        >
          All groups
        </a>
        <a
          class={`tab ${lagging ? "active" : ""}`}
          href="/consumer-groups?view=lagging"
          onClick={tab(() => set({ view: "lagging", offset: undefined }))}
        >
          Lagging partitions
        </a>
      </nav>
      {lagging ? <Lagging /> : <AllGroups />}
    </>
  );
}

function tab(go: () => void) {
  return (e: Event) => {
    e.preventDefault();
    go();
  };
}

function AllGroups() {
  const [params, set] = useQueryParams();
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const groups = useResource(
    `groups:${offset}:${limit}`,
    (signal) => admin.consumerGroups({ offset, limit }, { signal }),
    10_000,
  );
  return (
    <Panel testId="groups">
      <Loaded resource={groups} lines={8}>
        {(page) => (
          <>
            <Table
              testId="groups-table"
              columns={[
                {
                  label: "Group",
                  cell: (g) => <Link href={pathOf("consumer-groups", g.name)}>{groupName(g.name)}</Link>,
                },
                {
                  label: "Queue",
                  cell: (g) => <Link href={pathOf("queues", g.queueName)}>{g.queueName}</Link>,
                },
                { label: "Partitions", numeric: true, cell: (g) => count(g.members) },
                { label: "Lagging", numeric: true, cell: (g) => count(g.partitionsWithLag) },
                { label: "Lag", numeric: true, cell: (g) => count(g.totalLag) },
                { label: "Time lag", numeric: true, cell: (g) => duration(g.maxTimeLag) },
                { label: "State", cell: (g) => <Badge>{g.state}</Badge> },
                {
                  label: "Subscription",
                  cell: (g) =>
                    g.subscriptionMode === "timestamp" ? (
                      <>
                        from <Time value={g.subscriptionTimestamp} />
                      </>
                    ) : (
                      g.subscriptionMode
                    ),
                },
              ]}
              rows={page.items}
              rowKey={(g) => `${g.name}/${g.queueName}`}
              empty="No consumer groups yet: a group appears with its first pop on a queue."
            />
            <Pager
              offset={offset}
              limit={limit}
              shown={page.items.length}
              total={page.total}
              onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
            />
          </>
        )}
      </Loaded>
    </Panel>
  );
}

function Lagging() {
  const [params, set] = useQueryParams();
  const minLagSeconds = intParam(params, "minLag", 3600);
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const rows = useResource(
    `lagging:${minLagSeconds}:${offset}:${limit}`,
    (signal) => admin.laggingConsumerGroups({ minLagSeconds, offset, limit }, { signal }),
    10_000,
  );
  return (
    <Panel testId="lagging">
      <div class="toolbar">
        <label class="field">
          <span>Lagging more than</span>
          <select
            value={minLagSeconds}
            onChange={(e) => set({ minLag: (e.target as HTMLSelectElement).value, offset: undefined })}
            aria-label="Lagging more than"
          >
            {LAG_CHOICES.map(([seconds, label]) => (
              <option key={seconds} value={seconds}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Loaded resource={rows} lines={6}>
        {(page) => (
          <>
            <Table
              testId="lagging-table"
              columns={[
                {
                  label: "Group",
                  cell: (r) => (
                    <Link href={pathOf("consumer-groups", r.consumer_group)}>
                      {groupName(r.consumer_group)}
                    </Link>
                  ),
                },
                {
                  label: "Queue",
                  cell: (r) => <Link href={pathOf("queues", r.queue_name)}>{r.queue_name}</Link>,
                },
                { label: "Partition", cell: (r) => r.partition_name },
                { label: "Lag", numeric: true, cell: (r) => count(r.offset_lag) },
                { label: "Time lag", numeric: true, cell: (r) => duration(r.time_lag_seconds) },
                { label: "Oldest unconsumed", cell: (r) => <Time value={r.oldest_unconsumed_at} /> },
                { label: "Last consumed", cell: (r) => <Time value={r.last_consumed_at} /> },
                {
                  label: "Lease",
                  cell: (r) =>
                    r.worker_id ? <Badge tone="amber">leased</Badge> : <span class="muted">—</span>,
                },
              ]}
              rows={page.items}
              rowKey={(r) => `${r.consumer_group}/${r.partition_id}`}
              empty="No partition lags that much. Every group is keeping up."
            />
            <Pager
              offset={offset}
              limit={limit}
              shown={page.items.length}
              total={page.total}
              onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
            />
          </>
        )}
      </Loaded>
    </Panel>
  );
}
