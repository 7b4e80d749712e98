/** Queues: the list with search, namespace and task filters, paged by the broker. */

import { Link } from "wouter-preact";
import { admin } from "../api";
import { SearchField } from "../components/search";
import { Pager, Table } from "../components/table";
import { Loaded, PageHeader, Panel, Time } from "../components/ui";
import { count } from "../format";
import { useResource } from "../hooks";
import { intParam, pathOf, useQueryParams } from "../query";

export function QueuesPage() {
  const [params, set] = useQueryParams();
  const search = params.get("search") ?? "";
  const namespace = params.get("namespace") ?? "";
  const task = params.get("task") ?? "";
  const offset = intParam(params, "offset", 0);
  const limit = intParam(params, "limit", 50);
  const query = {
    search: search || undefined,
    namespace: namespace || undefined,
    task: task || undefined,
    offset,
    limit,
  };
  const queues = useResource(JSON.stringify(query), (signal) => admin.queues(query, { signal }), 15_000);
  const namespaces = useResource("namespaces", (signal) => admin.namespaces({ signal }));
  const tasks = useResource("tasks", (signal) => admin.tasks({ signal }));
  const total = queues.data?.pagination.total;

  return (
    <>
      <PageHeader
        title="Queues"
        subtitle={
          total === undefined
            ? "Every queue, ordered by name"
            : `${count(total)} ${total === 1 ? "queue matches" : "queues match"}`
        }
      />
      <Panel>
        <div class="toolbar">
          <SearchField
            label="Search"
            value={search}
            placeholder="Part of a queue name"
            onChange={(v) => set({ search: v, offset: undefined })}
            grow
          />
          <label class="field">
            <span>Namespace</span>
            <select
              value={namespace}
              onChange={(e) => set({ namespace: (e.target as HTMLSelectElement).value, offset: undefined })}
              aria-label="Namespace"
            >
              <option value="">All namespaces</option>
              {(namespaces.data ?? [])
                .filter((n) => n.namespace)
                .map((n) => (
                  <option key={n.namespace} value={n.namespace}>
                    {n.namespace} ({n.queues})
                  </option>
                ))}
            </select>
          </label>
          <label class="field">
            <span>Task</span>
            <select
              value={task}
              onChange={(e) => set({ task: (e.target as HTMLSelectElement).value, offset: undefined })}
              aria-label="Task"
            >
              <option value="">All tasks</option>
              {(tasks.data ?? [])
                .filter((t) => t.task)
                .map((t) => (
                  <option key={t.task} value={t.task}>
                    {t.task} ({t.queues})
                  </option>
                ))}
            </select>
          </label>
        </div>
        <Loaded resource={queues} lines={8}>
          {(list) => (
            <>
              <Table
                testId="queues-table"
                columns={[
                  { label: "Queue", cell: (q) => <Link href={pathOf("queues", q.name)}>{q.name}</Link> },
                  { label: "Namespace", cell: (q) => q.namespace || <span class="muted">—</span> },
                  { label: "Task", cell: (q) => q.task || <span class="muted">—</span> },
                  { label: "Partitions", numeric: true, cell: (q) => count(q.partitions) },
                  { label: "Messages", numeric: true, cell: (q) => count(q.messages.total) },
                  { label: "Pending", numeric: true, cell: (q) => count(q.messages.pending) },
                  { label: "Processing", numeric: true, cell: (q) => count(q.messages.processing) },
                  { label: "Priority", numeric: true, cell: (q) => q.priority },
                  { label: "Created", cell: (q) => <Time value={q.createdAt} /> },
                ]}
                rows={list.queues}
                rowKey={(q) => q.id}
                empty={
                  search || namespace || task
                    ? "No queue matches these filters."
                    : "No queues yet. A queue is created by its first push or by POST /api/v1/configure."
                }
              />
              <Pager
                offset={list.pagination.offset}
                limit={limit}
                shown={list.queues.length}
                total={list.pagination.total}
                onChange={(o, l) => set({ offset: o || undefined, limit: l === 50 ? undefined : l })}
              />
            </>
          )}
        </Loaded>
      </Panel>
    </>
  );
}
