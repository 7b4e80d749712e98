/**
 * Shapes of the administrative and dashboard endpoints, with their wire field names (some rows
 * are snake_case on the wire and stay so here). Timestamps are ISO-8601 UTC strings.
 */

import type { QueueOptions } from "./types.js";

/** Paging of list answers. */
export interface Pagination {
  limit: number;
  offset: number;
  total: number;
}

/** Paging parameters of list calls. */
export interface PageQuery {
  limit?: number;
  offset?: number;
}

/** Message counts of a partition or queue (§4.16 of the API). */
export interface MessageCounts {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  deadLetter: number;
}

/** Average, median, minimum and maximum of a lag measure. */
export interface LagStats {
  avg: number;
  median: number;
  min: number;
  max: number;
}

/** `GET /api/v1/resources/overview`. */
export interface ResourcesOverview {
  queues: number;
  partitions: number;
  namespaces: number;
  tasks: number;
  messages: MessageCounts;
  lag: { time: LagStats; offset: LagStats };
  throughput: { ingestedPerSecond: number; processedPerSecond: number };
  timestamp: string;
  /** Seconds since the stats were computed. */
  statsAge: number;
}

/** Filters of the queue listing. */
export interface QueueListQuery extends PageQuery {
  namespace?: string;
  task?: string;
  /** Substring of the queue name. */
  search?: string;
}

/** One row of the queue listing. */
export interface QueueSummary {
  id: string;
  name: string;
  namespace: string;
  task: string;
  priority: number;
  createdAt: string;
  partitions: number;
  messages: { total: number; pending: number; processing: number };
}

/** `GET /api/v1/resources/queues`. */
export interface QueueList {
  queues: QueueSummary[];
  pagination: Pagination;
}

/** A partition inside {@link QueueDetail}. */
export interface QueuePartition {
  id: string;
  name: string;
  createdAt: string;
  lastActivity: string | null;
  stats: MessageCounts;
  oldestMessage: string | null;
  newestMessage: string | null;
}

/** `GET /api/v1/resources/queues/:queue`. */
export interface QueueDetail {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  options: Required<QueueOptions>;
  partitionCount: number;
  partitions: QueuePartition[];
  totals: MessageCounts;
}

/** `DELETE /api/v1/queues/:queue/clear`. */
export interface ClearQueueResult {
  success: boolean;
  cleared: boolean;
  queue: string;
  deletedMessages: number;
  deletedDlq: number;
}

/** One row of `GET /api/v1/resources/namespaces`. */
export interface NamespaceSummary {
  namespace: string;
  queues: number;
  partitions: number;
  messages: { total: number; pending: number };
}

/** One row of `GET /api/v1/resources/tasks`. */
export interface TaskSummary {
  task: string;
  queues: number;
  partitions: number;
  messages: { total: number; pending: number };
}

/** Filters of the partition listing. */
export interface PartitionListQuery extends PageQuery {
  queue?: string;
  search?: string;
}

/** One row of `GET /api/v1/resources/partitions`. */
export interface PartitionSummary {
  id: string;
  name: string;
  queue: string;
  queueId: string;
  createdAt: string;
  lastActivity: string | null;
  messages: { total: number; pending: number };
  /** Number of groups with a cursor on the partition. */
  consumerGroups: number;
  /** Number of active leases. */
  leasedBy: number;
}

/** `GET /api/v1/resources/partitions`. */
export interface PartitionList {
  partitions: PartitionSummary[];
  pagination: Pagination;
}

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
export interface ConsumptionMode {
  hasQueueMode: boolean;
  busGroupsCount: number;
  type: "queue" | "bus" | "hybrid" | "none";
}

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

/** `DELETE /api/v1/consumer-groups/:group[/queues/:queue]`. */
export interface DeleteGroupResult {
  success: boolean;
  consumerGroup: string;
  /** Present when one queue was named. */
  queueName?: string;
  deletedPartitions: number;
  metadataDeleted: boolean;
}

/** `POST /api/v1/consumer-groups/:group/subscription`. */
export interface SubscriptionResult {
  success: boolean;
  consumerGroup: string;
  newTimestamp: string;
  rowsUpdated: number;
}

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

/** `POST /api/v1/traces`. */
export interface TraceRecorded {
  success: boolean;
  /** Id of the trace event. */
  traceId: string;
}

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
