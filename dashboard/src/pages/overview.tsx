/** Overview: cluster counts, live throughput and latency, workers, DLQ summary, health. */

import { Link } from "wouter-preact";
import type { SystemStatus } from "regina-client";
import { admin } from "../api";
import { TimeChart } from "../components/chart";
import { Table } from "../components/table";
import { Badge, ErrorBox, Facts, Loaded, PageHeader, Panel, Skeleton, Stat, Time } from "../components/ui";
import { count, duration, groupName, rate } from "../format";
import { useResource, type Resource } from "../hooks";
import { pathOf } from "../query";

/** How often the live parts of the overview refresh, in milliseconds. */
const REFRESH_MILLIS = 5_000;

export function OverviewPage() {
  const overview = useResource("overview", (signal) => admin.overview({ signal }), REFRESH_MILLIS);
  const status = useResource("status", (signal) => admin.status({}, { signal }), REFRESH_MILLIS);
  return (
    <>
      <PageHeader
        title="Overview"
        subtitle={
          <>
            Live view of the cluster, refreshed every {REFRESH_MILLIS / 1000} s
            {overview.data && <> · counts computed {duration(overview.data.statsAge)} ago</>}
          </>
        }
      />
      <Panel title="Cluster" testId="cluster">
        <Loaded resource={overview} lines={2}>
          {(o) => (
            <div class="stats eight">
              <Stat label="Queues" value={count(o.queues)} hint={`${count(o.namespaces)} namespaces`} />
              <Stat label="Partitions" value={count(o.partitions)} hint={`${count(o.tasks)} tasks`} />
              <Stat
                label="Messages"
                value={count(o.messages.total)}
                hint={`${count(o.messages.completed)} completed`}
              />
              <Stat label="Pending" value={count(o.messages.pending)} tone="blue" />
              <Stat label="Processing" value={count(o.messages.processing)} tone="amber" />
              <Stat
                label="Dead letters"
                value={count(o.messages.deadLetter)}
                tone={o.messages.deadLetter ? "red" : ""}
              />
              <Stat
                label="Max lag"
                value={duration(o.lag.time.max)}
                hint={`${count(o.lag.offset.max)} messages`}
              />
              <Stat
                label="Throughput"
                value={`${rate(o.throughput.ingestedPerSecond)}/s`}
                hint={`${rate(o.throughput.processedPerSecond)}/s processed`}
              />
            </div>
          )}
        </Loaded>
      </Panel>
      <div class="grid two">
        <Panel title="Throughput (messages per second)" testId="throughput">
          <StatusChart status={status} kind="throughput" />
        </Panel>
        <Panel title="Latency (lag, milliseconds)" testId="latency">
          <StatusChart status={status} kind="latency" />
        </Panel>
      </div>
      <div class="grid two">
        <HealthPanel />
        <DlqPanel status={status.data} />
      </div>
      <div class="grid two">
        <GroupsPanel />
        <WorkersPanel status={status} />
      </div>
    </>
  );
}

function StatusChart(props: { status: Resource<SystemStatus>; kind: "throughput" | "latency" }) {
  const { status } = props;
  if (status.error) return <ErrorBox error={status.error} retry={status.reload} />;
  if (!status.data) return <Skeleton lines={6} />;
  const points = status.data.throughput;
  const times = points.map((p) => new Date(p.timestamp).getTime() / 1000);
  const lines =
    props.kind === "throughput"
      ? [
          { label: "Ingested/s", color: "#4338ca", values: points.map((p) => p.ingestedPerSecond) },
          { label: "Processed/s", color: "#059669", values: points.map((p) => p.processedPerSecond) },
        ]
      : [
          { label: "Average lag", color: "#d97706", values: points.map((p) => p.avgLagMs) },
          { label: "Max lag", color: "#dc2626", values: points.map((p) => p.maxLagMs) },
        ];
  return <TimeChart times={times} lines={lines} format={props.kind === "throughput" ? rate : formatMillis} />;
}

function formatMillis(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function HealthPanel() {
  const health = useResource("health-panel", (signal) => admin.health({ signal }), REFRESH_MILLIS);
  const metrics = useResource("metrics", (signal) => admin.metrics({ signal }), REFRESH_MILLIS);
  return (
    <Panel
      title="Health and maintenance"
      testId="health-panel"
      actions={<Link href="/maintenance">Maintenance →</Link>}
    >
      <Loaded resource={health} lines={5}>
        {(h) => (
          <Facts
            items={[
              ["Status", <Badge>{h.status}</Badge>],
              ["Database", <Badge tone={h.database === "connected" ? "green" : "red"}>{h.database}</Badge>],
              [
                "Push maintenance",
                <Badge tone={h.maintenanceMode ? "amber" : "green"}>
                  {h.maintenanceMode ? "on" : "off"}
                </Badge>,
              ],
              [
                "Pop maintenance",
                <Badge tone={h.popMaintenanceMode ? "amber" : "green"}>
                  {h.popMaintenanceMode ? "on" : "off"}
                </Badge>,
              ],
              [
                "Failover buffer",
                `${count(h.failoverBuffer.pending)} pending${h.failoverBuffer.healthy ? "" : " · unhealthy"}`,
              ],
              ["Instance", <code>{h.worker_id}</code>],
              ["Version", h.version],
              ["Uptime", duration(h.uptimeSeconds)],
              ["Requests", metrics.data ? `${rate(metrics.data.requests.rate)}/s` : "—"],
              ["Long-poll waiters", metrics.data ? count(metrics.data.longPoll.waiters) : "—"],
            ]}
          />
        )}
      </Loaded>
    </Panel>
  );
}

function DlqPanel(props: { status: SystemStatus | undefined }) {
  const dlq = useResource("dlq-summary", (signal) => admin.dlq({ limit: 5 }, { signal }), REFRESH_MILLIS);
  const top = props.status?.deadLetterQueue.topErrors ?? [];
  return (
    <Panel
      title="Dead-letter queue"
      testId="dlq-summary"
      actions={<Link href="/dlq">All dead letters →</Link>}
    >
      <Loaded resource={dlq} lines={5}>
        {(d) => (
          <>
            <div class="stats compact">
              <Stat label="Entries" value={count(d.total)} tone={d.total ? "red" : ""} />
              {props.status && <Stat label="Last 24 h" value={count(props.status.deadLetterQueue.last24h)} />}
            </div>
            <Table
              columns={[
                { label: "Failed", cell: (e) => <Time value={e.failedAt} /> },
                { label: "Queue", cell: (e) => <Link href={pathOf("queues", e.queue)}>{e.queue}</Link> },
                { label: "Group", cell: (e) => groupName(e.consumerGroup) },
                { label: "Error", cell: (e) => <span class="truncate">{e.errorMessage ?? "—"}</span> },
              ]}
              rows={d.messages}
              rowKey={(e) => `${e.partitionId}/${e.transactionId}/${e.consumerGroup}`}
              empty="No dead letters. Every failed message was retried successfully."
            />
            {top.length > 0 && (
              <div class="top-errors">
                <h3>Most frequent errors</h3>
                {top.map((t) => (
                  <div key={t.error} class="top-error">
                    <span class="truncate">{t.error}</span>
                    <span class="num">{count(t.count)}</span>
                  </div>
                ))}
              </div>
            )}
          </>
        )}
      </Loaded>
    </Panel>
  );
}

function GroupsPanel() {
  const groups = useResource(
    "groups-summary",
    (signal) => admin.consumerGroups({ limit: 1000 }, { signal }),
    REFRESH_MILLIS,
  );
  return (
    <Panel
      title="Consumer groups with the most lag"
      testId="groups-summary"
      actions={<Link href="/consumer-groups">All groups →</Link>}
    >
      <Loaded resource={groups} lines={4}>
        {(page) => (
          <Table
            columns={[
              {
                label: "Group",
                cell: (g) => <Link href={pathOf("consumer-groups", g.name)}>{groupName(g.name)}</Link>,
              },
              { label: "Queue", cell: (g) => g.queueName },
              { label: "Lag", numeric: true, cell: (g) => count(g.totalLag) },
              { label: "Time lag", numeric: true, cell: (g) => duration(g.maxTimeLag) },
              { label: "State", cell: (g) => <Badge>{g.state}</Badge> },
            ]}
            rows={[...page.items].sort((a, b) => b.totalLag - a.totalLag).slice(0, 6)}
            rowKey={(g) => `${g.name}/${g.queueName}`}
            empty="No consumer groups yet: they appear with their first pop."
          />
        )}
      </Loaded>
    </Panel>
  );
}

function WorkersPanel(props: { status: Resource<SystemStatus> }) {
  return (
    <Panel title="Workers" testId="workers">
      <Loaded resource={props.status} lines={3}>
        {(s) => (
          <Table
            columns={[
              {
                label: "Instance",
                cell: (w) => (
                  <span title={`${w.hostname} · version ${w.version} · started ${w.startedAt}`}>
                    <code>{w.workerId}</code>
                  </span>
                ),
              },
              { label: "Requests/s", numeric: true, cell: (w) => rate(w.requestsPerSecond) },
              { label: "Waiters", numeric: true, cell: (w) => count(w.longPollWaiters) },
              { label: "Last seen", cell: (w) => <Time value={w.lastSeen} /> },
            ]}
            rows={s.workers}
            rowKey={(w) => w.workerId}
            empty="No worker has reported yet."
          />
        )}
      </Loaded>
    </Panel>
  );
}
