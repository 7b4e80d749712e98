/** Traces: the names, the events of one name, and the timeline of one message's events. */

import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { MessageRef } from "regina-client";
import { admin } from "../api";
import { Pager, Table } from "../components/table";
import { Badge, Id, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { count, groupName } from "../format";
import { useResource } from "../hooks";
import { intParam, pathOf, useQueryParams } from "../query";
import { Traces } from "./message";

export function TracesPage(props: { name?: string }) {
  return props.name === undefined ? <Names /> : <Events name={props.name} />;
}

function Names() {
  const [params, set] = useQueryParams();
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const names = useResource(
    `trace-names:${offset}:${limit}`,
    (signal) => admin.traceNames({ offset, limit }, { signal }),
    15_000,
  );
  return (
    <>
      <PageHeader
        title="Traces"
        subtitle="Events that consumers recorded on messages, grouped by trace name"
      />
      <Panel testId="trace-names">
        <Loaded resource={names} lines={6}>
          {(list) => (
            <>
              <Table
                testId="trace-names-table"
                columns={[
                  {
                    label: "Trace name",
                    cell: (n) => <Link href={pathOf("traces", n.trace_name)}>{n.trace_name}</Link>,
                  },
                  { label: "Events", numeric: true, cell: (n) => count(n.trace_count) },
                  { label: "Messages", numeric: true, cell: (n) => count(n.message_count) },
                  { label: "Last seen", cell: (n) => <Time value={n.last_seen} /> },
                ]}
                rows={list.trace_names}
                rowKey={(n) => n.trace_name}
                empty="No trace names yet. Consumers record events with POST /api/v1/traces."
              />
              <Pager
                offset={list.pagination.offset}
                limit={limit}
                shown={list.trace_names.length}
                total={list.total}
                onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
              />
            </>
          )}
        </Loaded>
      </Panel>
    </>
  );
}

/** Where the chosen message's timeline opens, below the events. */
const TIMELINE_ID = "trace-timeline";

function Events(props: { name: string }) {
  const [params, set] = useQueryParams();
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const events = useResource(`trace-events:${props.name}:${offset}:${limit}`, (signal) =>
    admin.tracesByName(props.name, { offset, limit }, { signal }),
  );
  const [selected, setSelected] = useState<MessageRef | null>(null);
  return (
    <>
      <PageHeader
        crumbs={[["Traces", "/traces"]]}
        title={props.name}
        subtitle="Events of this trace name, newest first"
      />
      {/* Stacked, not side by side: the events table needs the page's width. */}
      <div class="stack">
        <Panel
          testId="trace-events"
          actions={events.data && <span class="muted">{count(events.data.total)} events</span>}
        >
          <Loaded resource={events} lines={8}>
            {(list) => (
              <>
                <Table
                  testId="trace-events-table"
                  columns={[
                    { label: "When", cell: (e) => <Time value={e.created_at} /> },
                    { label: "Event", cell: (e) => <Badge tone="violet">{e.event_type}</Badge> },
                    { label: "Queue", cell: (e) => `${e.queue_name} / ${e.partition_name}` },
                    { label: "Group", cell: (e) => groupName(e.consumer_group) },
                    { label: "Data", cell: (e) => <code class="truncate">{JSON.stringify(e.data)}</code> },
                    {
                      label: "",
                      cell: (e) => (
                        <button
                          type="button"
                          class="button small"
                          onClick={() => {
                            setSelected({ partitionId: e.partition_id, transactionId: e.transaction_id });
                            requestAnimationFrame(() =>
                              document.getElementById(TIMELINE_ID)?.scrollIntoView({ block: "start" }),
                            );
                          }}
                        >
                          Timeline
                        </button>
                      ),
                    },
                  ]}
                  rows={list.traces}
                  rowKey={(e) => e.id}
                  rowClass={(e) =>
                    selected?.transactionId === e.transaction_id && selected.partitionId === e.partition_id
                      ? "selected"
                      : ""
                  }
                  empty="No events carry this name."
                />
                <Pager
                  offset={list.pagination.offset}
                  limit={limit}
                  shown={list.traces.length}
                  total={list.total}
                  onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
                />
              </>
            )}
          </Loaded>
        </Panel>
        <div id={TIMELINE_ID}>
          {selected ? (
            <>
              <p class="muted">
                Message{" "}
                <Link
                  href={`/messages/${encodeURIComponent(selected.partitionId)}/${encodeURIComponent(selected.transactionId)}`}
                >
                  <Id value={selected.transactionId} length={30} />
                </Link>
              </p>
              <Traces refKey={`${selected.partitionId}/${selected.transactionId}`} messageRef={selected} />
            </>
          ) : (
            <Panel title="Timeline">
              <p class="muted">Choose an event to see every event of its message in order.</p>
            </Panel>
          )}
        </div>
      </div>
    </>
  );
}
