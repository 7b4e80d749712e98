/** Streams (at `/stream-queries`: `/streams` is the API's prefix): the registered queries, the size of their state and when they last committed. */

import { streamQueries } from "../api";
import { Pager, Table } from "../components/table";
import { Badge, Id, Loaded, PageHeader, Panel, Time } from "../components/ui";
import { bytes, count } from "../format";
import { useResource } from "../hooks";
import { intParam, useQueryParams } from "../query";

export function StreamsPage() {
  const [params, set] = useQueryParams();
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const queries = useResource(
    `streams:${offset}:${limit}`,
    (signal) => streamQueries({ offset, limit }, { signal }),
    15_000,
  );
  return (
    <>
      <PageHeader
        title="Streams"
        subtitle="Queries registered by the streaming SDKs: their per-key state and their last cycle"
      />
      <Panel testId="stream-queries">
        <Loaded resource={queries} lines={6}>
          {(list) => (
            <>
              <Table
                testId="stream-queries-table"
                columns={[
                  { label: "Query", cell: (q) => q.name },
                  { label: "Id", cell: (q) => <Id value={q.queryId} /> },
                  { label: "Source", cell: (q) => q.sourceQueue },
                  { label: "Sink", cell: (q) => q.sinkQueue ?? <Badge>none</Badge> },
                  { label: "State rows", numeric: true, cell: (q) => count(q.stateRows) },
                  { label: "State size", numeric: true, cell: (q) => bytes(q.stateBytes) },
                  { label: "Shards", numeric: true, cell: (q) => count(q.shards) },
                  { label: "Cycles", numeric: true, cell: (q) => count(q.cycles) },
                  { label: "Last cycle", cell: (q) => <Time value={q.lastCycleAt} /> },
                ]}
                rows={list.queries}
                rowKey={(q) => q.queryId}
                empty="No streams queries yet. A streaming consumer registers one with POST /streams/v1/queries."
              />
              <Pager
                offset={list.offset}
                limit={limit}
                shown={list.queries.length}
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
