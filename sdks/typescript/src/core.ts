/**
 * The messaging calls on the wire — configure, push, pop, ack, lease extension — shared by the
 * queue builder, the client-side buffer, the consumer and transactions.
 */

import { ReginaError } from "./errors.js";
import { segment, type Transport } from "./transport.js";
import type {
  AckResult,
  AckStatus,
  ConfigureResult,
  DeleteQueueResult,
  Message,
  PopResponse,
  PushItem,
  PushResult,
  QueueOptions,
  RenewResult,
  SubscriptionMode,
} from "./types.js";
import { uuidv7 } from "./uuid.js";

/** The partition a push goes to when none is named. */
export const DEFAULT_PARTITION = "Default";

/** The broker's pop `timeout` default, used when a long-poll names none. */
export const POP_TIMEOUT_MILLIS_DEFAULT = 30_000;

/** One pop request. */
export interface PopRequest {
  queue: string;
  partition?: string | undefined;
  group?: string | undefined;
  batch: number;
  partitions?: number | undefined;
  wait: boolean;
  /** Long-poll deadline in milliseconds (the broker's default when absent). */
  timeoutMillis?: number | undefined;
  autoAck: boolean;
  subscriptionMode?: SubscriptionMode | undefined;
  subscriptionFrom?: string | undefined;
}

/** One item of an ack request. */
export interface AckItem {
  message: Message;
  status: AckStatus;
  error?: string | undefined;
}

/** A push item on the wire. */
interface WireItem {
  queue: string;
  partition: string;
  payload: unknown;
  transactionId: string;
  traceId?: string | null;
}

interface WirePushResult {
  index: number;
  transaction_id: string;
  status: PushResult["status"];
  message_id?: string;
  partition_id?: string;
  trace_id?: string | null;
  queueName: string;
  error?: string;
  code?: string;
}

/** Wire calls of one client. */
export class Core {
  /** Messages settled by an explicit ack or a committed transaction; consumers skip their ack. */
  readonly settled = new WeakSet<Message>();

  constructor(
    readonly transport: Transport,
    private readonly longPollMarginMillis: number,
  ) {}

  /** Creates or reconfigures a queue. */
  async configure(
    queue: string,
    options: QueueOptions,
    names: { namespace?: string | undefined; task?: string | undefined },
    signal?: AbortSignal,
  ): Promise<ConfigureResult> {
    const body = { queue, namespace: names.namespace, task: names.task, options };
    const result = await this.transport.request<ConfigureResult>({
      method: "POST",
      path: "/api/v1/configure",
      body,
      signal,
    });
    return result.body as ConfigureResult;
  }

  /** Deletes a queue with everything in it. */
  async deleteQueue(queue: string, signal?: AbortSignal): Promise<DeleteQueueResult> {
    const path = `/api/v1/resources/queues/${segment(queue)}`;
    const result = await this.transport.request<DeleteQueueResult>({ method: "DELETE", path, signal });
    return result.body as DeleteQueueResult;
  }

  /**
   * Pushes items to one partition. Items must already carry their transactionId (see
   * {@link withTransactionIds}) so that a retried request is deduplicated.
   *
   * @throws {ReginaError} `queue_full` (status 429) when any item was rejected for capacity; its
   *   `results` holds every item's {@link PushResult}.
   */
  async push(queue: string, partition: string, items: PushItem[], signal?: AbortSignal): Promise<PushResult[]> {
    if (items.length === 0) return [];
    const wire: WireItem[] = items.map((item) => wireItem(queue, partition, item));
    try {
      const result = await this.transport.request<WirePushResult[]>({
        method: "POST",
        path: "/api/v1/push",
        body: { items: wire },
        signal,
      });
      return (result.body ?? []).map(pushResult);
    } catch (error) {
      throw capacityError(error);
    }
  }

  /** Pops messages; an empty pop (`204`, or `200` with no messages) is an empty list. */
  async pop<T>(request: PopRequest, signal?: AbortSignal): Promise<Message<T>[]> {
    const base = `/api/v1/pop/queue/${segment(request.queue)}`;
    const path = request.partition === undefined ? base : `${base}/partition/${segment(request.partition)}`;
    const timeout = request.wait ? (request.timeoutMillis ?? POP_TIMEOUT_MILLIS_DEFAULT) : undefined;
    const result = await this.transport.request<PopResponse<T>>({
      method: "GET",
      path,
      query: {
        batch: request.batch,
        partitions: request.partitions,
        wait: request.wait,
        timeout,
        consumerGroup: request.group,
        autoAck: request.autoAck,
        subscriptionMode: request.subscriptionMode,
        subscriptionFrom: request.subscriptionFrom,
      },
      // A long-poll legitimately takes its whole timeout; the request may take a margin more.
      timeoutMillis: timeout === undefined ? undefined : timeout + this.longPollMarginMillis,
      signal,
    });
    return result.body?.messages ?? [];
  }

  /** Acks messages: one item through `/ack`, several through `/ack/batch`. Results in input order. */
  async ack(items: AckItem[], signal?: AbortSignal): Promise<AckResult[]> {
    if (items.length === 0) return [];
    const wire = items.map(wireAck);
    const request =
      wire.length === 1
        ? { method: "POST" as const, path: "/api/v1/ack", body: wire[0], signal }
        : { method: "POST" as const, path: "/api/v1/ack/batch", body: { acknowledgments: wire }, signal };
    const result = await this.transport.request<AckResult[]>(request);
    const results = result.body ?? [];
    results.forEach((outcome, position) => {
      const item = items[position];
      if (outcome.success && item) this.settled.add(item.message);
    });
    return results;
  }

  /** Extends a lease (by the queue's `leaseTime` unless `seconds` is given). */
  async renew(leaseId: string, seconds?: number, signal?: AbortSignal): Promise<RenewResult> {
    const path = `/api/v1/lease/${segment(leaseId)}/extend`;
    const body = seconds === undefined ? {} : { seconds };
    const result = await this.transport.request<RenewResult[]>({ method: "POST", path, body, signal });
    const first = result.body?.[0];
    if (!first)
      throw new ReginaError({ code: "http_error", status: result.status, message: "Empty lease extension answer" });
    return first;
  }
}

/** RFC 3339 text of an instant given as a `Date` or as text. */
export function instant(value: string | Date): string;
export function instant(value: string | Date | undefined): string | undefined;
export function instant(value: string | Date | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

/** Copies the items, giving every item without a transactionId a new UUIDv7. */
export function withTransactionIds<T>(items: readonly PushItem<T>[]): PushItem<T>[] {
  return items.map((item) => (item.transactionId ? { ...item } : { ...item, transactionId: uuidv7() }));
}

/** The wire form of a push item for a queue and partition. */
export function wireItem(queue: string, partition: string, item: PushItem): WireItem {
  const wire: WireItem = {
    queue,
    partition,
    payload: item.payload ?? null,
    transactionId: item.transactionId ?? uuidv7(),
  };
  if (item.traceId !== undefined && item.traceId !== null) wire.traceId = item.traceId;
  return wire;
}

/** The wire form of an ack item. */
export function wireAck(item: AckItem): Record<string, unknown> {
  const { message } = item;
  const wire: Record<string, unknown> = {
    transactionId: message.transactionId,
    partitionId: message.partitionId,
    status: item.status,
    consumerGroup: message.consumerGroup,
  };
  if (message.leaseId) wire.leaseId = message.leaseId;
  if (item.error !== undefined) wire.error = item.error;
  return wire;
}

function pushResult(wire: WirePushResult): PushResult {
  const result: PushResult = {
    index: wire.index,
    transactionId: wire.transaction_id,
    status: wire.status,
    queueName: wire.queueName,
  };
  if (wire.message_id !== undefined) result.messageId = wire.message_id;
  if (wire.partition_id !== undefined) result.partitionId = wire.partition_id;
  if (wire.trace_id !== undefined) result.traceId = wire.trace_id;
  if (wire.error !== undefined) result.error = wire.error;
  if (wire.code !== undefined) result.code = wire.code;
  return result;
}

/** A push answered `429` becomes a `queue_full` error whose `results` are camelCase push results. */
function capacityError(error: unknown): unknown {
  if (!(error instanceof ReginaError) || error.status !== 429 || !Array.isArray(error.results)) return error;
  const results = (error.results as WirePushResult[]).map(pushResult);
  const rejected = results.find((result) => result.status === "failed");
  return new ReginaError({
    code: rejected?.code ?? "queue_full",
    status: 429,
    message: rejected?.error ?? "Queue is full",
    requestId: error.requestId,
    results,
  });
}
