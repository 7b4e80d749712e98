/**
 * Administrative and dashboard calls: resources, message lookup and DLQ, consumer groups, traces,
 * status feeds, analytics and system switches. Reached as `client.admin`.
 *
 * Every method rejects with a {@link ReginaError} carrying the broker's code when the broker
 * refuses (`queue_not_found`, `message_not_found`, `not_in_dlq`, `forbidden`, …).
 */

import type * as T from "./admin-types.js";
import type * as S from "./status-types.js";
import { instant } from "./core.js";
import { segment, type QueryValue, type Transport } from "./transport.js";
import type { CallOptions, DeleteQueueResult } from "./types.js";

/** The administrative API of one client. */
export class Admin {
  constructor(private readonly transport: Transport) {}

  // --- resources -------------------------------------------------------------------------------

  /** Cluster-wide counts, lag and throughput. */
  overview(options?: CallOptions): Promise<T.ResourcesOverview> {
    return this.get("/api/v1/resources/overview", {}, options);
  }

  /** Queues ordered by name. */
  queues(query: T.QueueListQuery = {}, options?: CallOptions): Promise<T.QueueList> {
    return this.get("/api/v1/resources/queues", { ...query }, options);
  }

  /** One queue with its options and partitions. Rejects with `queue_not_found`. */
  queue(name: string, query: T.PageQuery = {}, options?: CallOptions): Promise<T.QueueDetail> {
    return this.get(`/api/v1/resources/queues/${segment(name)}`, { ...query }, options);
  }

  /** Deletes a queue and everything in it; `existed: false` when there was none. */
  deleteQueue(name: string, options?: CallOptions): Promise<DeleteQueueResult> {
    return this.send("DELETE", `/api/v1/resources/queues/${segment(name)}`, undefined, options);
  }

  /** Empties a queue but keeps its configuration, partitions and groups. */
  clearQueue(name: string, options?: CallOptions): Promise<T.ClearQueueResult> {
    return this.send("DELETE", `/api/v1/queues/${segment(name)}/clear`, undefined, options);
  }

  /** Namespaces with their queue and message counts. */
  async namespaces(options?: CallOptions): Promise<T.NamespaceSummary[]> {
    const body = await this.get<{ namespaces: T.NamespaceSummary[] }>("/api/v1/resources/namespaces", {}, options);
    return body.namespaces;
  }

  /** Tasks with their queue and message counts. */
  async tasks(options?: CallOptions): Promise<T.TaskSummary[]> {
    const body = await this.get<{ tasks: T.TaskSummary[] }>("/api/v1/resources/tasks", {}, options);
    return body.tasks;
  }

  /** Partitions ordered by queue, then name. */
  partitions(query: T.PartitionListQuery = {}, options?: CallOptions): Promise<T.PartitionList> {
    return this.get("/api/v1/resources/partitions", { ...query }, options);
  }

  // --- messages and DLQ ------------------------------------------------------------------------

  /** Messages newest first, without payloads. */
  messages(query: T.MessageListQuery = {}, options?: CallOptions): Promise<T.MessageList> {
    const { namespace, from, to, ...rest } = query;
    return this.get("/api/v1/messages", { ...rest, ns: namespace, from: instant(from), to: instant(to) }, options);
  }

  /** One message with its payload and per-group status. Rejects with `message_not_found`. */
  message<P = unknown>(ref: T.MessageRef, options?: CallOptions): Promise<T.MessageDetail<P>> {
    return this.get(messagePath(ref), {}, options);
  }

  /** Deletes a message; every group skips it. Rejects with `message_leased` inside a lease. */
  deleteMessage(ref: T.MessageRef, options?: CallOptions): Promise<T.DeleteMessageResult> {
    return this.send("DELETE", messagePath(ref), undefined, options);
  }

  /**
   * Requeues a dead-lettered message for one group, or for every group whose DLQ holds it. Takes a
   * DLQ entry (its `consumerGroup` is used unless `consumerGroup` is given) or any message ref.
   * Rejects with `not_in_dlq`.
   */
  requeue(
    ref: T.MessageRef & { consumerGroup?: string },
    target: { consumerGroup?: string } = {},
    options?: CallOptions,
  ): Promise<T.RequeueResult> {
    const consumerGroup = target.consumerGroup ?? ref.consumerGroup;
    return this.send("POST", `${messagePath(ref)}/retry`, { consumerGroup }, options);
  }

  /** Moves a pending message to the DLQ of one group (default: queue mode). */
  moveToDlq(
    ref: T.MessageRef,
    target: { consumerGroup?: string; error?: string } = {},
    options?: CallOptions,
  ): Promise<T.MoveToDlqResult> {
    return this.send("POST", `${messagePath(ref)}/dlq`, { ...target }, options);
  }

  /** DLQ entries, newest failure first. */
  dlq<P = unknown>(query: T.DlqQuery = {}, options?: CallOptions): Promise<T.DlqList<P>> {
    const { from, to, ...rest } = query;
    return this.get("/api/v1/dlq", { ...rest, from: instant(from), to: instant(to) }, options);
  }

  // --- consumer groups -------------------------------------------------------------------------

  /** Every (group, queue) pair with a cursor or subscription, queue mode included. */
  consumerGroups(query: T.PageQuery = {}, options?: CallOptions): Promise<T.Page<T.ConsumerGroupSummary>> {
    return this.page("/api/v1/consumer-groups", { ...query }, options);
  }

  /** Partitions whose group lags more than `minLagSeconds` (default 3600), largest lag first. */
  laggingConsumerGroups(
    query: T.PageQuery & { minLagSeconds?: number } = {},
    options?: CallOptions,
  ): Promise<T.Page<T.LaggingPartition>> {
    return this.page("/api/v1/consumer-groups/lagging", { ...query }, options);
  }

  /**
   * One group's partitions on every queue (or on `query.queue`): a page of at most `limit`
   * partitions per queue (default 10 000), by name or most lagging first (`sort: "lag"`), with
   * figures over all of them; `{}` for a group without cursors.
   */
  consumerGroup(name: string, query: T.GroupDetailQuery = {}, options?: CallOptions): Promise<T.ConsumerGroupDetail> {
    return this.get(`/api/v1/consumer-groups/${segment(name)}`, { ...query }, options);
  }

  /**
   * Deletes a group's cursors (ending its leases) on every queue, or on `queue` only; its
   * subscriptions too unless `deleteMetadata` is false. DLQ entries stay.
   */
  deleteConsumerGroup(
    name: string,
    scope: { queue?: string; deleteMetadata?: boolean } = {},
    options?: CallOptions,
  ): Promise<T.DeleteGroupResult> {
    const base = `/api/v1/consumer-groups/${segment(name)}`;
    const path = scope.queue === undefined ? base : `${base}/queues/${segment(scope.queue)}`;
    return this.send("DELETE", path, undefined, options, { deleteMetadata: scope.deleteMetadata });
  }

  /** Sets where the group starts on partitions it has no cursor on yet. */
  updateSubscription(name: string, timestamp: string | Date, options?: CallOptions): Promise<T.SubscriptionResult> {
    const path = `/api/v1/consumer-groups/${segment(name)}/subscription`;
    return this.send("POST", path, { subscriptionTimestamp: instant(timestamp) }, options);
  }

  /**
   * Moves a group on every partition of a queue: to the end, or to just after `timestamp` (the
   * group next receives the first message created after it). Rejects with `queue_not_found`.
   */
  seek(group: string, queue: string, target: T.SeekTarget, options?: CallOptions): Promise<T.SeekResult> {
    const path = `/api/v1/consumer-groups/${segment(group)}/queues/${segment(queue)}/seek`;
    return this.send("POST", path, seekBody(target), options);
  }

  /** Moves a group on one partition (default: to the end). */
  seekPartition(
    group: string,
    queue: string,
    partition: string,
    target: T.SeekTarget = { toEnd: true },
    options?: CallOptions,
  ): Promise<T.PartitionSeekResult> {
    const path =
      `/api/v1/consumer-groups/${segment(group)}/queues/${segment(queue)}` + `/partitions/${segment(partition)}/seek`;
    return this.send("POST", path, seekBody(target), options);
  }

  // --- traces ----------------------------------------------------------------------------------

  /** Records a trace event on a message. */
  recordTrace(trace: T.TraceInput, options?: CallOptions): Promise<T.TraceRecorded> {
    return this.send("POST", "/api/v1/traces", { ...trace }, options);
  }

  /** A message's trace events, oldest first. */
  async traces(ref: T.MessageRef, options?: CallOptions): Promise<T.TraceEvent[]> {
    const path = `/api/v1/traces/${segment(ref.partitionId)}/${segment(ref.transactionId)}`;
    const body = await this.get<{ traces: T.TraceEvent[] }>(path, {}, options);
    return body.traces;
  }

  /** Trace events carrying a name, newest first. */
  tracesByName(name: string, query: T.PageQuery = {}, options?: CallOptions): Promise<T.NamedTraceList> {
    return this.get(`/api/v1/traces/by-name/${segment(name)}`, { ...query }, options);
  }

  /** Trace names, most recently seen first. */
  traceNames(query: T.PageQuery = {}, options?: CallOptions): Promise<T.TraceNameList> {
    return this.get("/api/v1/traces/names", { ...query }, options);
  }

  // --- status and analytics --------------------------------------------------------------------

  /** The dashboard's main feed. */
  status(query: S.StatusQuery = {}, options?: CallOptions): Promise<S.SystemStatus> {
    return this.get("/api/v1/status", statusQuery(query), options);
  }

  /** Queues with throughput over the range. */
  statusQueues(
    query: Omit<S.StatusQuery, "queue"> & T.PageQuery = {},
    options?: CallOptions,
  ): Promise<S.StatusQueueList> {
    return this.get("/api/v1/status/queues", statusQuery(query), options);
  }

  /** One queue's configuration, partitions and totals. */
  statusQueue(name: string, query: T.PageQuery = {}, options?: CallOptions): Promise<S.StatusQueueDetail> {
    return this.get(`/api/v1/status/queues/${segment(name)}`, { ...query }, options);
  }

  /** A queue's messages, newest first. */
  statusQueueMessages(
    name: string,
    query: T.PageQuery = {},
    options?: CallOptions,
  ): Promise<T.Page<S.StatusQueueMessage>> {
    return this.page(`/api/v1/status/queues/${segment(name)}/messages`, { ...query }, options);
  }

  /** Messages pushed per bucket. */
  messageAnalytics(
    query: S.StatusQuery & { interval?: S.MessageAnalytics["interval"] } = {},
    options?: CallOptions,
  ): Promise<S.MessageAnalytics> {
    return this.get("/api/v1/status/analytics", { ...statusQuery(query), interval: query.interval }, options);
  }

  /** One time-series feed. */
  analytics(feed: S.AnalyticsFeed, query: S.AnalyticsQuery = {}, options?: CallOptions): Promise<S.AnalyticsSeries> {
    const { from, to, ...rest } = query;
    return this.get(`/api/v1/analytics/${feed}`, { ...rest, from: instant(from), to: instant(to) }, options);
  }

  /** The failover buffer of the instance that answers. */
  buffers(options?: CallOptions): Promise<S.BufferStatus> {
    return this.get("/api/v1/status/buffers", {}, options);
  }

  // --- system ----------------------------------------------------------------------------------

  /** Push and pop maintenance flags and the failover buffer. */
  maintenance(options?: CallOptions): Promise<S.MaintenanceStatus> {
    return this.get("/api/v1/system/maintenance", {}, options);
  }

  /** Turns push maintenance (every push buffered) on or off, cluster-wide. */
  setMaintenance(enabled: boolean, options?: CallOptions): Promise<S.MaintenanceResult> {
    return this.send("POST", "/api/v1/system/maintenance", { enabled }, options);
  }

  /** Whether pop maintenance (every pop answers empty) is on. */
  popMaintenance(options?: CallOptions): Promise<S.PopMaintenanceResult> {
    return this.get("/api/v1/system/maintenance/pop", {}, options);
  }

  /** Turns pop maintenance on or off, cluster-wide. */
  setPopMaintenance(enabled: boolean, options?: CallOptions): Promise<S.PopMaintenanceResult> {
    return this.send("POST", "/api/v1/system/maintenance/pop", { enabled }, options);
  }

  /** Recomputes the dashboard stats now. */
  refreshStats(options?: CallOptions): Promise<S.StatsRefreshResult> {
    return this.send("POST", "/api/v1/stats/refresh", {}, options);
  }

  /** Health of the instance that answers; an unhealthy one answers too (not an error). */
  async health(options?: CallOptions): Promise<S.Health> {
    const result = await this.transport.request<S.Health>({
      method: "GET",
      path: "/health",
      signal: options?.signal,
      acceptStatuses: [503],
    });
    return result.body as S.Health;
  }

  /** Counters of the instance that answers. */
  metrics(options?: CallOptions): Promise<S.InstanceMetrics> {
    return this.get("/metrics", {}, options);
  }

  // --- plumbing --------------------------------------------------------------------------------

  private async get<R>(path: string, query: Record<string, QueryValue>, options?: CallOptions): Promise<R> {
    const result = await this.transport.request<R>({ method: "GET", path, query, signal: options?.signal });
    return result.body as R;
  }

  private async send<R>(
    method: "POST" | "DELETE",
    path: string,
    body: unknown,
    options?: CallOptions,
    query?: Record<string, QueryValue>,
  ): Promise<R> {
    const result = await this.transport.request<R>({ method, path, body, query, signal: options?.signal });
    return result.body as R;
  }

  private async page<R>(path: string, query: Record<string, QueryValue>, options?: CallOptions): Promise<T.Page<R>> {
    const result = await this.transport.request<R[]>({ method: "GET", path, query, signal: options?.signal });
    const items = result.body ?? [];
    const total = Number(result.headers.get("x-total-count") ?? Number.NaN);
    return { items, total: Number.isFinite(total) ? total : items.length };
  }
}

function messagePath(ref: T.MessageRef): string {
  return `/api/v1/messages/${segment(ref.partitionId)}/${segment(ref.transactionId)}`;
}

function seekBody(target: T.SeekTarget): Record<string, unknown> {
  return "toEnd" in target ? { toEnd: true } : { timestamp: instant(target.timestamp) };
}

function statusQuery(query: S.StatusQuery & T.PageQuery): Record<string, QueryValue> {
  const { from, to, ...rest } = query;
  return { ...rest, from: instant(from), to: instant(to) };
}
