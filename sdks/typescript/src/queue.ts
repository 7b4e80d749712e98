/**
 * The queue grammar: `client.queue(name)` and its chainable settings. Every setting returns a new
 * builder, so a builder can be kept and specialised without side effects:
 *
 * ```ts
 * const orders = client.queue("orders");
 * await orders.config({ retryLimit: 5 }).create();
 * await orders.partition("customer-7").push([{ payload: { n: 1 } }]);
 * const summary = await orders.group("billing").batch(10).each().limit(100).consume(handle);
 * ```
 */

import type { BufferOptions, PushBuffer } from "./buffer.js";
import type { Core } from "./core.js";
import { DEFAULT_PARTITION, instant, withTransactionIds } from "./core.js";
import { consume, type BatchHandler, type ConsumeOptions, type ConsumeSummary, type EachHandler } from "./consumer.js";
import type {
  CallOptions,
  ConfigureResult,
  DeleteQueueResult,
  Message,
  PushItem,
  PushResult,
  QueueOptions,
  SubscriptionMode,
} from "./types.js";

/** Lease renewal period when `renewLease(true)` names none, in milliseconds. */
export const RENEW_EVERY_MILLIS_DEFAULT = 10_000;

/** Client-wide state a queue builder reaches. */
export interface QueueHost {
  core: Core;
  buffer(queue: string, partition: string, options: BufferOptions): PushBuffer;
  flushBuffers(queue: string, partition: string | undefined): Promise<void>;
}

interface QueueState {
  name: string;
  partition: string | undefined;
  namespace: string | undefined;
  task: string | undefined;
  options: QueueOptions;
  buffer: BufferOptions | undefined;
  group: string | undefined;
  subscriptionMode: SubscriptionMode | undefined;
  subscriptionFrom: string | undefined;
  batch: number;
  partitions: number | undefined;
  concurrency: number;
  autoAck: boolean;
  each: boolean;
  limit: number | undefined;
  idleMillis: number | undefined;
  renewEveryMillis: number | undefined;
  wait: boolean;
  timeoutMillis: number | undefined;
}

/**
 * A queue, with the settings chosen so far. `T` is the payload type; `M` says whether `consume`
 * takes a batch handler (default) or a per-message handler (`each()`).
 */
export class Queue<T = unknown, M extends "batch" | "each" = "batch"> {
  /** @internal */
  constructor(
    private readonly host: QueueHost,
    private readonly state: QueueState,
  ) {}

  /** @internal */
  static create<T>(host: QueueHost, name: string): Queue<T> {
    return new Queue<T>(host, {
      name,
      partition: undefined,
      namespace: undefined,
      task: undefined,
      options: {},
      buffer: undefined,
      group: undefined,
      subscriptionMode: undefined,
      subscriptionFrom: undefined,
      batch: 1,
      partitions: undefined,
      concurrency: 1,
      autoAck: false,
      each: false,
      limit: undefined,
      idleMillis: undefined,
      renewEveryMillis: undefined,
      wait: false,
      timeoutMillis: undefined,
    });
  }

  /** The queue name. */
  get name(): string {
    return this.state.name;
  }

  private with<N extends "batch" | "each" = M>(patch: Partial<QueueState>): Queue<T, N> {
    return new Queue<T, N>(this.host, { ...this.state, ...patch });
  }

  // --- configuration ---------------------------------------------------------------------------

  /** Options for {@link create}; merged with options set earlier on this builder. */
  config(options: QueueOptions): Queue<T, M> {
    return this.with({ options: { ...this.state.options, ...options } });
  }

  /** Namespace for {@link create} (default: derived from the name on a new queue). */
  namespace(namespace: string): Queue<T, M> {
    return this.with({ namespace });
  }

  /** Task for {@link create} (default: derived from the name on a new queue). */
  task(task: string): Queue<T, M> {
    return this.with({ task });
  }

  /**
   * Creates the queue, or updates an existing one: options given replace the stored ones, others
   * keep their value. `created` tells which happened.
   */
  create(options: CallOptions = {}): Promise<ConfigureResult> {
    const { name, namespace, task } = this.state;
    return this.host.core.configure(name, this.state.options, { namespace, task }, options.signal);
  }

  /** Deletes the queue with its partitions, messages, groups and DLQ; `existed: false` if absent. */
  delete(options: CallOptions = {}): Promise<DeleteQueueResult> {
    return this.host.core.deleteQueue(this.state.name, options.signal);
  }

  // --- producing -------------------------------------------------------------------------------

  /** The partition to push to or pop from (push default: `Default`; pop default: any). */
  partition(partition: string): Queue<T, M> {
    return this.with({ partition });
  }

  /**
   * Buffers pushes of this (queue, partition) on the client: they are sent `messageCount` at a
   * time, or `timeMillis` after the first waiting item, or on `flush()`.
   */
  buffer(options: BufferOptions): Queue<T, M> {
    return this.with({ buffer: { ...options } });
  }

  /**
   * Pushes items. Items without a transactionId get one before the first attempt, so retries are
   * deduplicated. With {@link buffer}, resolves once the items are buffered (an empty list).
   *
   * @throws {ReginaError} `queue_full` (429) with every item's result in `results`;
   *   `validation_failed` (400) naming the offending `field` and `index`.
   */
  async push(items: PushItem<T> | readonly PushItem<T>[], options: CallOptions = {}): Promise<PushResult[]> {
    const list = Array.isArray(items) ? (items as readonly PushItem<T>[]) : [items as PushItem<T>];
    const partition = this.state.partition ?? DEFAULT_PARTITION;
    if (this.state.buffer) {
      await this.host.buffer(this.state.name, partition, this.state.buffer).add(list);
      return [];
    }
    return this.host.core.push(this.state.name, partition, withTransactionIds(list), options.signal);
  }

  /** Pushes what is buffered for this queue (and partition, when one is set). */
  flush(): Promise<void> {
    return this.host.flushBuffers(this.state.name, this.state.partition);
  }

  // --- consuming -------------------------------------------------------------------------------

  /** Consumer group (default: queue mode). */
  group(group: string): Queue<T, M> {
    return this.with({ group });
  }

  /** Where a new group starts: `all` (from the beginning) or `new` (only later messages). */
  subscriptionMode(mode: SubscriptionMode): Queue<T, M> {
    return this.with({ subscriptionMode: mode });
  }

  /** Where a new group starts: messages created at or after this instant, or `now`. */
  subscriptionFrom(from: Date | string): Queue<T, M> {
    return this.with({ subscriptionFrom: instant(from) });
  }

  /**
   * Messages per pop (default 1); the cap is global across the claimed partitions. The broker
   * validates it (`invalid_parameter` outside 1–`POP_BATCH_MAX`).
   */
  batch(size: number): Queue<T, M> {
    return this.with({ batch: size });
  }

  /** Partitions one pop may claim (default 1). */
  partitions(count: number): Queue<T, M> {
    return this.with({ partitions: count });
  }

  /** Pop loops run in parallel by `consume` (default 1). */
  concurrency(workers: number): Queue<T, M> {
    return this.with({ concurrency: positive(workers, "concurrency") });
  }

  /** Let the broker settle messages on delivery (at-most-once); the consumer then sends no acks. */
  autoAck(enabled = true): Queue<T, M> {
    return this.with({ autoAck: enabled });
  }

  /** `consume` calls the handler once per message instead of once per batch. */
  each(): Queue<T, "each"> {
    return this.with<"each">({ each: true });
  }

  /** `consume` stops after handing this many messages to the handler. */
  limit(messages: number): Queue<T, M> {
    return this.with({ limit: positive(messages, "limit") });
  }

  /** `consume` stops after this long without messages, in milliseconds. */
  idleMillis(millis: number): Queue<T, M> {
    return this.with({ idleMillis: Math.max(0, millis) });
  }

  /** While a handler runs, `consume` extends its lease every `everyMillis` (default 10 s). */
  renewLease(enabled = true, everyMillis = RENEW_EVERY_MILLIS_DEFAULT): Queue<T, M> {
    return this.with({ renewEveryMillis: enabled ? positive(everyMillis, "renewLease interval") : undefined });
  }

  /** `pop` long-polls: waits up to `timeoutMillis` for a message. */
  wait(enabled = true): Queue<T, M> {
    return this.with({ wait: enabled });
  }

  /** Long-poll timeout of `pop` and of each pop of `consume`, in milliseconds (default 30 000). */
  timeoutMillis(millis: number): Queue<T, M> {
    return this.with({ timeoutMillis: Math.max(0, millis) });
  }

  /** One pop with the settings chosen; empty when nothing is available. */
  pop(options: CallOptions = {}): Promise<Message<T>[]> {
    const request = {
      ...this.popSettings(),
      batch: this.state.batch,
      wait: this.state.wait,
      timeoutMillis: this.state.timeoutMillis,
    };
    return this.host.core.pop<T>(request, options.signal);
  }

  /**
   * Consumes until stopped by `limit`, `idleMillis` or `options.signal`, acking as it goes
   * (`completed` when the handler returns, `failed` with the error text when it throws). Messages
   * the handler settles itself (through `client.ack` or a committed transaction) are not acked
   * again.
   *
   * @throws {ReginaError} when a pop is refused (4xx), after in-flight handlers finished.
   */
  consume(
    handler: M extends "each" ? EachHandler<T> : BatchHandler<T>,
    options: ConsumeOptions = {},
  ): Promise<ConsumeSummary> {
    const settings = {
      pop: this.popSettings(),
      batch: this.state.batch,
      pollMillis: this.state.timeoutMillis,
      concurrency: this.state.concurrency,
      each: this.state.each,
      limit: this.state.limit,
      idleMillis: this.state.idleMillis,
      renewEveryMillis: this.state.renewEveryMillis,
    };
    return consume<T>(this.host.core, settings, handler, options);
  }

  private popSettings() {
    const { name, partition, group, partitions, autoAck, subscriptionMode, subscriptionFrom } = this.state;
    return { queue: name, partition, group, partitions, autoAck, subscriptionMode, subscriptionFrom };
  }
}

function positive(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${what} must be a positive integer`);
  return value;
}
