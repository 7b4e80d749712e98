/**
 * Shapes of the messaging calls: push, pop, ack, lease extension, transaction, configure.
 * Field names are the wire names, except push results, which the client turns to camelCase.
 * Read from the generated types, or checked against them, as in `admin-types.ts`.
 */

import type { Answer, Conform, Item, Nullable, Optional, RequestBody } from "./wire.js";

/** Options of a queue, as `POST /api/v1/configure` names them. Absent options keep their value. */
export interface QueueOptions {
  /** Seconds a pop's lease lasts (0 is stored as 60). Default 300. */
  leaseTime?: number;
  /** Failed attempts before a message is dead-lettered. Default 3. */
  retryLimit?: number;
  /** Milliseconds before a failed partition is eligible again. Default 0. */
  retryDelay?: number;
  /** Maximum queue depth in messages; 0 means unlimited. */
  maxSize?: number;
  /** Seconds after which a message expires; 0 means never. */
  ttl?: number;
  /** Order of queues in multi-queue pops, highest first. */
  priority?: number;
  /** Seconds a message stays invisible after push. */
  delayedProcessing?: number;
  /** Seconds a partition must be quiet before it is delivered. */
  windowBuffer?: number;
  /** Keep dead-lettered messages in the DLQ (otherwise they are discarded). Default true. */
  deadLetterQueue?: boolean;
  /** Accepted for compatibility; no effect. */
  dlqAfterMaxRetries?: boolean;
  /** Master switch of the two retention options. Default true. */
  retentionEnabled?: boolean;
  /** Delete messages older than this many seconds; 0 means off. */
  retentionSeconds?: number;
  /** Delete settled messages older than this many seconds; 0 means off. */
  completedRetentionSeconds?: number;
  /** Evict unsettled messages older than this many seconds; 0 means off. */
  maxWaitTimeSeconds?: number;
  /** Store payloads encrypted (needs a key on the broker). */
  encryptionEnabled?: boolean;
}

/** Answer of `POST /api/v1/configure`. */
export interface ConfigureResult {
  configured: boolean;
  /** True when this call created the queue. */
  created: boolean;
  queueId: string;
  /** Id of the queue's `Default` partition. */
  partitionId: string;
  queue: string;
  namespace: string;
  task: string;
  /** Every option with its effective value. */
  options: Required<QueueOptions>;
}

/**
 * Answer of `DELETE /api/v1/resources/queues/:queue`; `existed` is false when there was no such
 * queue (deleting is idempotent).
 */
export type DeleteQueueResult = Answer<"/api/v1/resources/queues/{queue}", "delete">;

/** One message to push. */
export interface PushItem<T = unknown> {
  /** Any JSON value. */
  payload: T;
  /**
   * Idempotency key within the partition. When absent the client assigns a UUIDv7 before the
   * first attempt, so retries cannot store the message twice.
   */
  transactionId?: string | undefined;
  /** Correlation id carried with the message (up to 128 characters). */
  traceId?: string | null | undefined;
}

/** Outcome of one pushed item. */
export type PushStatus = Item<Answer<"/api/v1/push", "post">>["status"];

/** Result of one pushed item, in the order of the items. */
export interface PushResult {
  index: number;
  transactionId: string;
  status: PushStatus;
  /** Id of the stored message (of the earlier one for a duplicate); absent for `failed`. */
  messageId?: string;
  partitionId?: string;
  traceId?: string | null;
  queueName: string;
  /** Set when `status` is `failed`. */
  error?: string;
  /** Set when `status` is `failed` (`queue_full`). */
  code?: string;
}

/** A delivered message. */
export interface Message<T = unknown> {
  id: string;
  transactionId: string;
  traceId: string | null;
  /** The payload. */
  data: T;
  producerSub: string | null;
  /** ISO-8601 UTC with microseconds. */
  createdAt: string;
  partitionId: string;
  partition: string;
  queue: string;
  /** Lease of the pop that delivered it; `""` for autoAck deliveries. */
  leaseId: string;
  /** `__QUEUE_MODE__` in queue mode. */
  consumerGroup: string;
  /** Failed attempts already recorded for this message. */
  retryCount: number;
}

/** Body of a `200` pop answer. */
export interface PopResponse<T = unknown> {
  success: boolean;
  queue: string;
  partition: string;
  partitionId: string | null;
  leaseId: string | null;
  consumerGroup: string;
  partitionsClaimed?: number;
  messages: Message<T>[];
  reason?: string;
}

/** Status an ack gives a message. `success` is an alias of `completed`. */
export type AckStatus = NonNullable<RequestBody<"/api/v1/ack", "post">["status"]>;

/** Result of one ack item. Failures are in-band: `success: false` with a `code`. */
export interface AckResult {
  index: number;
  transactionId: string;
  success: boolean;
  error: string | null;
  code: string | null;
  queueName: string | null;
  partitionName: string | null;
  /** This ack ended the lease. */
  leaseReleased: boolean;
  /** This ack moved the message to the DLQ. */
  dlq: boolean;
}

/** Result of a lease extension. Failures are in-band (`lease_expired`, `lease_not_found`). */
export interface RenewResult {
  index: number;
  leaseId: string;
  success: boolean;
  error: string | null;
  code: string | null;
  /** Earliest new expiry among the lease's partitions. */
  expiresAt: string | null;
  newExpiresAt: string | null;
}

/** Result of one operation of a committed transaction. */
export type TransactionOperationResult =
  | {
      index: number;
      type: "ack";
      success: boolean;
      transactionId: string;
      error: string | null;
      code: string | null;
      dlq: boolean;
      leaseReleased: boolean;
    }
  | {
      index: number;
      type: "push";
      success: boolean;
      status: "queued" | "duplicate";
      transactionId: string;
      messageId: string;
      partitionId: string;
      queueName: string;
    };

/** Answer of a committed transaction. */
export interface TransactionResult {
  /** UUIDv7 naming this transaction. */
  transactionId: string;
  success: boolean;
  /** One per ack operation and per pushed item, in operation order. */
  results: TransactionOperationResult[];
}

/** Where a named group starts on a queue it has never read. */
export type SubscriptionMode = "all" | "new" | "new-only";

/** Options every call accepts. */
export interface CallOptions {
  /** Cancels the call, including its retries. */
  signal?: AbortSignal;
}

type PopWire = Answer<"/api/v1/pop/queue/{queue}", "get">;
type RenewWire = Answer<"/api/v1/lease/{leaseId}/extend", "post">;

/** The SDK's own shapes above, checked against the document: compiling fails when they part ways. */
type ConformanceChecks = [
  Conform<Partial<NonNullable<RequestBody<"/api/v1/configure", "post">["options"]>>, QueueOptions>,
  Conform<Answer<"/api/v1/configure", "post">, ConfigureResult>,
  Conform<Item<PopWire["messages"]>, Message>,
  // `partitionsClaimed` only in answers of multi-partition pops; the empty `200` form (with a
  // `reason`) has no partition id and no lease.
  Conform<Nullable<Optional<PopWire, "partitionsClaimed">, "partitionId" | "leaseId">, PopResponse>,
  Conform<Item<Answer<"/api/v1/ack/batch", "post">>, AckResult>,
  Conform<Exclude<RenewWire, unknown[]>, RenewResult>,
  Conform<Answer<"/api/v1/transaction", "post">, TransactionResult>,
];
