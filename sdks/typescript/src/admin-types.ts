/**
 * Shapes of the administrative and dashboard endpoints, with their wire field names (some rows
 * are snake_case on the wire and stay so here). Timestamps are ISO-8601 UTC strings.
 *
 * Each shape is read from the types generated out of the OpenAPI document (see `wire.ts`). Where
 * the document says less than the broker guarantees (a free-form object, `string | null` for a
 * column that is never null), the SDK names the shape itself, checked against the document by
 * {@link Conform}.
 */

import type { Answer, Conform, Item, Optional, Queries, QueryParams } from "./wire.js";

/** `GET /api/v1/resources/queues`. */
type QueueListWire = Answer<"/api/v1/resources/queues", "get">;
/** `GET /api/v1/resources/queues/:queue`. */
type QueueDetailWire = Answer<"/api/v1/resources/queues/{queue}", "get">;

/** Paging of list answers. */
export type Pagination = QueueListWire["pagination"];

/** Paging parameters of list calls. */
export type PageQuery = Pick<QueryParams<"/api/v1/resources/queues", "get">, "limit" | "offset">;

/** Message counts of a partition or queue (§4.16 of the API). */
export type MessageCounts = QueueDetailWire["totals"];

/** `GET /api/v1/resources/overview`; `statsAge` is in seconds since the stats were computed. */
export type ResourcesOverview = Answer<"/api/v1/resources/overview", "get">;

/** Average, median, minimum and maximum of a lag measure. */
export type LagStats = ResourcesOverview["lag"]["time"];

/** Filters of the queue listing (`search`: a substring of the queue name). */
export type QueueListQuery = QueryParams<"/api/v1/resources/queues", "get">;

/** One row of the queue listing. */
export type QueueSummary = Conform<
  Item<QueueListWire["queues"]>,
  Omit<Item<QueueListWire["queues"]>, "namespace" | "task"> & { namespace: string; task: string }
>;

/** `GET /api/v1/resources/queues`. */
export type QueueList = Conform<QueueListWire, Omit<QueueListWire, "queues"> & { queues: QueueSummary[] }>;

/** A partition inside {@link QueueDetail}. */
export type QueuePartition = Item<QueueDetailWire["partitions"]>;

/** `GET /api/v1/resources/queues/:queue`. */
export type QueueDetail = Conform<
  QueueDetailWire,
  Omit<QueueDetailWire, "namespace" | "task"> & { namespace: string; task: string }
>;

/** `DELETE /api/v1/queues/:queue/clear`. */
export type ClearQueueResult = Answer<"/api/v1/queues/{queue}/clear", "delete">;

/** One row of `GET /api/v1/resources/namespaces`. */
export type NamespaceSummary = Item<Answer<"/api/v1/resources/namespaces", "get">["namespaces"]>;

/** One row of `GET /api/v1/resources/tasks`. */
export type TaskSummary = Item<Answer<"/api/v1/resources/tasks", "get">["tasks"]>;

/** Filters of the partition listing. */
export type PartitionListQuery = QueryParams<"/api/v1/resources/partitions", "get">;

/**
 * One row of `GET /api/v1/resources/partitions`: `consumerGroups` counts the groups with a cursor
 * on the partition, `leasedBy` its active leases.
 */
export type PartitionSummary = Item<PartitionList["partitions"]>;

/** `GET /api/v1/resources/partitions`. */
export type PartitionList = Answer<"/api/v1/resources/partitions", "get">;

/** Derived status of a message (§4.16). */
export type MessageStatus = "pending" | "processing" | "completed" | "dead_letter";

/** Filters of the message listing. */
export interface MessageListQuery extends PageQuery {
  queue?: string;
  partition?: string;
  namespace?: string;
  task?: string;
  consumerGroup?: string;
  status?: MessageStatus;
  from?: string | Date;
  to?: string | Date;
}

/** How a queue is consumed: queue mode, named groups ("bus"), both, or not yet. */
export type ConsumptionMode = Answer<"/api/v1/messages", "get">["mode"];

/** One row of `GET /api/v1/messages`. */
export interface MessageSummary {
  id: string;
  transactionId: string;
  partitionId: string;
  /** `<queue>/<partition>`. */
  queuePath: string;
  queue: string;
  partition: string;
  namespace: string;
  task: string;
  status: MessageStatus;
  queueStatus: MessageStatus | null;
  busStatus: { consumedBy: number; totalGroups: number };
  traceId: string | null;
  producerSub: string | null;
  queuePriority: number;
  createdAt: string;
  leaseExpiresAt: string | null;
}

/** `GET /api/v1/messages`. */
export interface MessageList {
  messages: MessageSummary[];
  mode: ConsumptionMode;
  pagination: { limit: number; offset: number; hasMore: boolean };
}

/** Names a stored message: any object with its partition id and transaction id. */
export interface MessageRef {
  partitionId: string;
  transactionId: string;
}

/** `GET /api/v1/messages/:partitionId/:transactionId`. */
export interface MessageDetail<T = unknown> {
  id: string;
  transactionId: string;
  partitionId: string;
  queuePath: string;
  queue: string;
  partition: string;
  namespace: string;
  task: string;
  status: MessageStatus;
  /** The payload, decrypted. */
  payload: T;
  isEncrypted: boolean;
  traceId: string | null;
  producerSub: string | null;
  createdAt: string;
  errorMessage: string | null;
  retryCount: number;
  leaseExpiresAt: string | null;
  queueConfig: { leaseTime: number; retryLimit: number; retryDelay: number; ttl: number; priority: number };
  mode: ConsumptionMode & { consumedByGroups: number };
  consumerGroups: {
    name: string;
    status: MessageStatus;
    consumed: boolean;
    retryCount: number;
    leaseExpiresAt: string | null;
    dlq: { errorMessage: string; failedAt: string } | null;
  }[];
}

/** `DELETE /api/v1/messages/:partitionId/:transactionId`. */
export interface DeleteMessageResult {
  success: boolean;
  partitionId: string;
  transactionId: string;
  message: string;
}

/** `POST /api/v1/messages/:partitionId/:transactionId/retry`. */
export interface RequeueResult {
  success: boolean;
  partitionId: string;
  transactionId: string;
  /** Groups for which the message was requeued. */
  consumerGroups: string[];
  message: string;
}

/** `POST /api/v1/messages/:partitionId/:transactionId/dlq`. */
export interface MoveToDlqResult {
  success: boolean;
  partitionId: string;
  transactionId: string;
  consumerGroup: string;
  message: string;
}

/** Filters of the DLQ listing (`from`/`to` apply to `failedAt`). */
export interface DlqQuery extends PageQuery {
  queue?: string;
  consumerGroup?: string;
  partition?: string;
  from?: string | Date;
  to?: string | Date;
}

/** One DLQ entry: a copy of the message with why and when it failed. */
export interface DlqEntry<T = unknown> {
  /** Id of the original message. */
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string | null;
  retryCount: number;
  /** The payload, decrypted. */
  data: T;
  traceId: string | null;
  producerSub: string | null;
  createdAt: string;
  failedAt: string;
}

/** `GET /api/v1/dlq`, newest failure first. */
export interface DlqList<T = unknown> {
  messages: DlqEntry<T>[];
  total: number;
  pagination: Pagination;
}

/** One (group, queue) row of `GET /api/v1/consumer-groups`. */
export interface ConsumerGroupSummary {
  name: string;
  topics: string[];
  queueName: string;
  members: number;
  partitionsWithLag: number;
  totalLag: number;
  maxTimeLag: number;
  state: "Stable" | "Lagging" | "Dead";
  subscriptionMode: "all" | "new" | "timestamp";
  subscriptionTimestamp: string | null;
  subscriptionCreatedAt: string | null;
}

/** A page of a bare-array listing; `total` comes from `X-Total-Count`. */
export interface Page<T> {
  items: T[];
  /** Count of all matching rows (the length of `items` when the broker does not say). */
  total: number;
}

/** One row of `GET /api/v1/consumer-groups/lagging`. */
export interface LaggingPartition {
  consumer_group: string;
  queue_name: string;
  partition_name: string;
  partition_id: string;
  worker_id: string | null;
  offset_lag: number;
  time_lag_seconds: number;
  lag_hours: number;
  oldest_unconsumed_at: string | null;
  last_consumed_at: string | null;
}

/** The page of `GET /api/v1/consumer-groups/:group`: partitions per queue. */
export interface GroupDetailQuery extends PageQuery {
  /** Only this queue. */
  queue?: string;
  /** By partition name (default), or most lagging first. */
  sort?: "partition" | "lag";
}

/**
 * `GET /api/v1/consumer-groups/:group`: per queue, a page of the group's partitions, and
 * `total`, `totalLag`, `maxTimeLag` (seconds) and `leased` over all of them.
 */
export type ConsumerGroupDetail = Record<
  string,
  {
    partitions: {
      partition: string;
      workerId: string | null;
      lastConsumedAt: string | null;
      totalConsumed: number;
      offsetLag: number;
      timeLagSeconds: number;
      leaseActive: boolean;
    }[];
    total: number;
    totalLag: number;
    maxTimeLag: number;
    leased: number;
  }
>;

/** `DELETE /api/v1/consumer-groups/:group[/queues/:queue]`; `queueName` only when one queue was named. */
export type DeleteGroupResult = Optional<Answer<"/api/v1/consumer-groups/{group}", "delete">, "queueName">;

/** `POST /api/v1/consumer-groups/:group/subscription`. */
export type SubscriptionResult = Answer<"/api/v1/consumer-groups/{group}/subscription", "post">;

/** Where a seek moves a group: to the end, or to just after an instant. */
export type SeekTarget = { toEnd: true } | { timestamp: string | Date };

/** `POST /api/v1/consumer-groups/:group/queues/:queue/seek`. */
export interface SeekResult {
  success: boolean;
  consumerGroup: string;
  queueName: string;
  seekToEnd: boolean;
  targetTimestamp: string | null;
  partitionsUpdated: number;
}

/** `POST …/queues/:queue/partitions/:partition/seek`. */
export interface PartitionSeekResult {
  success: boolean;
  consumerGroup: string;
  queueName: string;
  partitionName: string;
  updated: boolean;
  cursorMovedTo: { messageId: string; transactionId: string; createdAt: string } | null;
}

/** A trace event to record on a message. */
export interface TraceInput extends MessageRef {
  /** Any JSON value but null. */
  data: unknown;
  consumerGroup?: string;
  /** Default `info`. */
  eventType?: string;
  traceNames?: string | string[];
  workerId?: string;
}

/** `POST /api/v1/traces`; `traceId` is the id of the trace event. */
export type TraceRecorded = Answer<"/api/v1/traces", "post">;

/** One trace event of a message. */
export interface TraceEvent {
  id: string;
  event_type: string;
  data: unknown;
  consumer_group: string;
  worker_id: string | null;
  created_at: string;
  trace_names: string[];
}

/** One trace event found by name. */
export interface NamedTraceEvent extends TraceEvent {
  transaction_id: string;
  partition_id: string;
  queue_name: string;
  partition_name: string;
  message_payload: unknown;
}

/** `GET /api/v1/traces/by-name/:traceName`. */
export interface NamedTraceList {
  traces: NamedTraceEvent[];
  total: number;
  pagination: Pagination;
}

/** `GET /api/v1/traces/names`. */
export interface TraceNameList {
  trace_names: { trace_name: string; trace_count: number; message_count: number; last_seen: string }[];
  total: number;
  pagination: Pagination;
}

/** The answer of a message action, which names one group, several, or none. */
type MessageAction<W extends { consumerGroup: unknown; consumerGroups: unknown }> = Optional<
  W,
  "consumerGroup" | "consumerGroups"
>;

/** The SDK's own shapes above, checked against the document: compiling fails when they part ways. */
type ConformanceChecks = [
  Queries<QueryParams<"/api/v1/messages", "get">, MessageListQuery>,
  Queries<QueryParams<"/api/v1/dlq", "get">, DlqQuery>,
  Queries<QueryParams<"/api/v1/consumer-groups/{group}", "get">, GroupDetailQuery>,
  Conform<Item<Answer<"/api/v1/messages", "get">["messages"]>, MessageSummary>,
  Conform<Answer<"/api/v1/messages", "get">, MessageList>,
  Conform<Answer<"/api/v1/messages/{partitionId}/{transactionId}", "get">, MessageDetail>,
  // The three message actions share one answer schema, the union of their fields.
  Conform<MessageAction<Answer<"/api/v1/messages/{partitionId}/{transactionId}", "delete">>, DeleteMessageResult>,
  Conform<MessageAction<Answer<"/api/v1/messages/{partitionId}/{transactionId}/retry", "post">>, RequeueResult>,
  Conform<MessageAction<Answer<"/api/v1/messages/{partitionId}/{transactionId}/dlq", "post">>, MoveToDlqResult>,
  Conform<Answer<"/api/v1/dlq", "get">, DlqList>,
  Conform<Item<Answer<"/api/v1/consumer-groups", "get">>, ConsumerGroupSummary>,
  Conform<Item<Answer<"/api/v1/consumer-groups/lagging", "get">>, LaggingPartition>,
  Conform<Answer<"/api/v1/consumer-groups/{group}", "get">, ConsumerGroupDetail>,
  Conform<Answer<"/api/v1/consumer-groups/{group}/queues/{queue}/seek", "post">, SeekResult>,
  Conform<
    Answer<"/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", "post">,
    PartitionSeekResult
  >,
  Conform<Item<Answer<"/api/v1/traces/{partitionId}/{transactionId}", "get">["traces"]>, TraceEvent>,
  Conform<Answer<"/api/v1/traces/by-name/{traceName}", "get">, NamedTraceList>,
  Conform<Answer<"/api/v1/traces/names", "get">, TraceNameList>,
];
