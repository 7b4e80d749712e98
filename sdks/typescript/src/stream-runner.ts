/**
 * The running stream: pops the source with the ordinary pop API, runs each partition's batch
 * through the chain and commits one cycle per partition; window streams also run the idle flush
 * that closes windows of partitions that went quiet.
 *
 * A partition's batch and its flushes never overlap within one run (a lock per partition), so a
 * run never races itself on a state shard. A failed batch is acked `failed` on its first message:
 * the lease ends, an attempt is charged, and the broker delivers the batch again (after
 * `retryLimit` failures the head goes to the dead-letter queue, as with the consumer).
 */

import type { Core, PopRequest } from "./core.js";
import { ReginaError } from "./errors.js";
import type { CompiledChain } from "./stream-chain.js";
import {
  flushPlan,
  flushPrefix,
  processBatch,
  type BatchPlan,
  type PartitionBatch,
  type StreamRecord,
} from "./stream-engine.js";
import type { CycleItem, Registration, StreamWire } from "./stream-wire.js";
import type { Message, SubscriptionMode } from "./types.js";
import { uuidv7 } from "./uuid.js";

/** Partitions touched within this long are flushed when idle. */
const RECENT_PARTITION_MILLIS = 5 * 60_000;
/** Pause after a pop failed on every server, before the next one. */
const POP_ERROR_PAUSE_MILLIS = 1_000;

/** Settings of `stream.run(...)`. */
export interface StreamRunOptions {
  /** Durable name of the query: its state, its consumer group and its registration. */
  queryId: string;
  /** Messages per pop. Default 200. */
  batchSize?: number;
  /** Partitions per pop. Default 4. */
  maxPartitions?: number;
  /** Long-poll wait of a pop, in milliseconds. Default 1 000. */
  maxWaitMillis?: number;
  /** Consent to drop the query's state when its chain changed. Default false. */
  reset?: boolean;
  /** Consumer group of the source. Default `streams.<queryId>`. */
  consumerGroup?: string;
  /** Where a new group starts (`all` by default). */
  subscriptionMode?: SubscriptionMode;
  /** Start a new group at messages created at or after this instant. */
  subscriptionFrom?: string | Date;
  /** Called for every failure that does not end the run (a batch, a flush, a pop). */
  onError?: (error: unknown, context: StreamErrorContext) => void;
  /** Stops the run gracefully when aborted (as `stop()` does). */
  signal?: AbortSignal;
}

/** Where a reported failure happened. */
export interface StreamErrorContext {
  phase: "pop" | "state" | "process" | "foreach" | "cycle" | "flush";
  partition?: string;
  partitionId?: string;
}

/** Counters of a run. */
export interface StreamMetrics {
  /** The broker's id of the query. */
  queryId: string;
  /** The query's name. */
  name: string;
  /** Pops answered (empty ones included). */
  popsTotal: number;
  /** Cycles that settled source messages. */
  cyclesTotal: number;
  /** Ack-less cycles of the idle flush. */
  flushCyclesTotal: number;
  /** Source messages settled by cycles. */
  messagesTotal: number;
  /** Records that reached the sink (pushed or given to `foreach`) in committed cycles. */
  resultsTotal: number;
  /** Sink items pushed by committed cycles. */
  pushItemsTotal: number;
  /** State operations of committed cycles. */
  stateOpsTotal: number;
  /** Event-time events older than the watermark (dropped or included, per `onLate`). */
  lateEventsTotal: number;
  /** Records a gate allowed, in committed cycles. */
  gateAllowsTotal: number;
  /** Times a gate denied a record (each parks the rest of a batch). */
  gateDenialsTotal: number;
  /** Failures reported to `onError`. */
  errorsTotal: number;
  lastError: string | null;
  /** When the last cycle / flush cycle committed (ISO-8601). */
  lastCycleAt: string | null;
  lastFlushAt: string | null;
}

/** What a run needs from the client. */
export interface StreamHost {
  core: Core;
  wire: StreamWire;
}

/** A running stream. */
export class StreamRun {
  /** Resolves when the run has stopped; rejects when the broker refused a pop (a 4xx). */
  readonly done: Promise<void>;
  private stopping = false;
  private readonly wakers = new Set<() => void>();
  private readonly locks = new PartitionLocks();
  private readonly recent = new Map<string, { partition: string; at: number }>();
  private readonly watermarks = new Map<string, number>();
  private readonly counters: StreamMetrics;
  private readonly group: string;

  /** @internal */
  constructor(
    private readonly host: StreamHost,
    private readonly chain: CompiledChain,
    private readonly source: string,
    /** The registration answer: the broker's query id, and whether it was created or reset. */
    readonly registration: Registration,
    private readonly options: StreamRunOptions,
  ) {
    this.group = options.consumerGroup ?? `streams.${options.queryId}`;
    this.counters = {
      queryId: registration.queryId,
      name: registration.name,
      popsTotal: 0,
      cyclesTotal: 0,
      flushCyclesTotal: 0,
      messagesTotal: 0,
      resultsTotal: 0,
      pushItemsTotal: 0,
      stateOpsTotal: 0,
      lateEventsTotal: 0,
      gateAllowsTotal: 0,
      gateDenialsTotal: 0,
      errorsTotal: 0,
      lastError: null,
      lastCycleAt: null,
      lastFlushAt: null,
    };
    const loops = [this.popLoop()];
    if (chain.window && chain.window.idleFlushMs > 0) loops.push(this.flushLoop(chain.window.idleFlushMs));
    this.done = Promise.all(loops).then(
      () => undefined,
      (error: unknown) => {
        this.halt();
        throw error;
      },
    );
    // A caller that never awaits `done` must not see an unhandled rejection.
    this.done.catch(() => undefined);
    options.signal?.addEventListener("abort", () => void this.stop(), { once: true });
    if (options.signal?.aborted) void this.stop();
  }

  /** Stops gracefully: the pop in flight ends (within `maxWaitMillis`), its batches are committed. */
  async stop(): Promise<void> {
    this.halt();
    await this.done.catch(() => undefined);
  }

  /** A snapshot of the counters. */
  metrics(): StreamMetrics {
    return { ...this.counters };
  }

  private halt(): void {
    this.stopping = true;
    for (const wake of this.wakers) wake();
  }

  private pause(millis: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, millis);
      this.wakers.add(wake);
    });
  }

  private async popLoop(): Promise<void> {
    const o = this.options;
    const request: PopRequest = {
      queue: this.source,
      group: this.group,
      batch: o.batchSize ?? 200,
      partitions: o.maxPartitions ?? 4,
      wait: true,
      timeoutMillis: o.maxWaitMillis ?? 1_000,
      autoAck: false,
      subscriptionMode: o.subscriptionMode,
      subscriptionFrom: o.subscriptionFrom instanceof Date ? o.subscriptionFrom.toISOString() : o.subscriptionFrom,
    };
    while (!this.stopping) {
      let messages: Message[];
      try {
        messages = await this.host.core.pop(request);
        this.counters.popsTotal += 1;
      } catch (error) {
        if (error instanceof ReginaError && error.status < 500 && ![408, 429].includes(error.status)) throw error;
        this.report(error, { phase: "pop" });
        await this.pause(POP_ERROR_PAUSE_MILLIS);
        continue;
      }
      // A pop that does not wait must not spin.
      if (messages.length === 0 && request.timeoutMillis !== undefined && request.timeoutMillis < 100) {
        await this.pause(100);
      }
      for (const batch of byPartition(messages)) {
        await this.locks.run(batch.partitionId, () => this.processBatch(batch));
      }
    }
  }

  private async processBatch(batch: PartitionBatch): Promise<void> {
    const { partition, partitionId } = batch;
    this.recent.set(partitionId, { partition, at: Date.now() });
    let phase: StreamErrorContext["phase"] = "state";
    try {
      const stateful = this.chain.window !== undefined || this.chain.gate !== undefined;
      const rows = stateful ? await this.host.wire.state({ queryId: this.registration.queryId, partitionId }) : [];
      phase = "process";
      const plan = processBatch(this.chain, batch, rows, Date.now());
      this.counters.gateDenialsTotal += plan.denied;
      this.counters.lateEventsTotal += plan.late;
      // A gate that allowed nothing sends no cycle: the lease runs out and the batch comes again.
      if (plan.settled === 0) return;
      phase = "foreach";
      const items = await this.deliver(plan.results);
      phase = "cycle";
      const last = batch.messages[plan.settled - 1] as Message;
      await this.host.wire.cycle({
        queryId: this.registration.queryId,
        partitionId,
        consumerGroup: this.group,
        stateOps: plan.stateOps,
        pushItems: items,
        ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: "completed", count: plan.settled },
        ...(this.chain.gate ? { releaseLease: plan.releaseLease } : {}),
      });
      this.committed(plan, items, false);
      if (plan.watermark !== undefined) this.watermarks.set(partitionId, plan.watermark);
    } catch (error) {
      this.report(error, { phase, partition, partitionId });
      await this.release(batch, error);
    }
  }

  private async flushLoop(everyMillis: number): Promise<void> {
    while (!this.stopping) {
      await this.pause(everyMillis);
      for (const [partitionId, seen] of this.recent) {
        if (this.stopping) break;
        if (Date.now() - seen.at > RECENT_PARTITION_MILLIS) {
          this.recent.delete(partitionId);
          continue;
        }
        await this.locks.run(partitionId, () => this.flush(partitionId, seen.partition));
      }
    }
  }

  private async flush(partitionId: string, partition: string): Promise<void> {
    const window = this.chain.window;
    const clock = window?.eventTime ? this.watermarks.get(partitionId) : Date.now();
    if (!window || clock === undefined) return;
    try {
      const rows = await this.host.wire.state({
        queryId: this.registration.queryId,
        partitionId,
        keyPrefix: flushPrefix(window),
        ripeAtOrBefore: clock - window.graceMs,
      });
      const plan = flushPlan(this.chain, partition, partitionId, rows);
      if (plan.stateOps.length === 0) return;
      const items = await this.deliver(plan.results);
      await this.host.wire.cycle({
        queryId: this.registration.queryId,
        partitionId,
        consumerGroup: this.group,
        stateOps: plan.stateOps,
        pushItems: items,
        ack: null,
      });
      this.committed(plan, items, true);
    } catch (error) {
      this.report(error, { phase: "flush", partition, partitionId });
    }
  }

  /** Runs `foreach` on the results, or turns them into sink items (ids fixed before any attempt). */
  private async deliver(results: StreamRecord[]): Promise<CycleItem[]> {
    const sink = this.chain.sink;
    if (!sink) return [];
    if (sink.kind === "foreach") {
      const effect = sink.fn as (value: unknown, context: unknown) => unknown;
      for (const result of results) await effect(result.value, result.context);
      return [];
    }
    return results.map((result) => {
      const chosen =
        typeof sink.partition === "function"
          ? sink.partition(result.value as never, result.context as never)
          : sink.partition;
      const item: CycleItem = {
        queue: sink.queue,
        partition: chosen === undefined ? result.context.partition : String(chosen),
        payload: result.value ?? null,
        transactionId: uuidv7(),
      };
      const traceId = result.context.message?.traceId;
      if (traceId) item.traceId = traceId;
      return item;
    });
  }

  private committed(plan: BatchPlan, items: CycleItem[], flush: boolean): void {
    const c = this.counters;
    const now = new Date().toISOString();
    if (flush) {
      c.flushCyclesTotal += 1;
      c.lastFlushAt = now;
    } else {
      c.cyclesTotal += 1;
      c.messagesTotal += plan.settled;
      c.lastCycleAt = now;
    }
    c.resultsTotal += plan.results.length;
    c.pushItemsTotal += items.length;
    c.stateOpsTotal += plan.stateOps.length;
    c.gateAllowsTotal += plan.allowed;
  }

  /** Ends the lease of a failed batch (`failed`: one attempt charged, redelivered in order). */
  private async release(batch: PartitionBatch, error: unknown): Promise<void> {
    const first = batch.messages[0] as Message;
    const text = error instanceof Error ? error.message : String(error);
    try {
      await this.host.core.ack([{ message: first, status: "failed", error: text || "stream batch failed" }]);
    } catch {
      // The lease runs out instead; the batch comes again either way.
    }
  }

  private report(error: unknown, context: StreamErrorContext): void {
    this.counters.errorsTotal += 1;
    this.counters.lastError = error instanceof Error ? error.message : String(error);
    try {
      this.options.onError?.(error, context);
    } catch {
      // A failing error handler must not stop the stream.
    }
  }
}

/** Splits a pop into per-partition batches, each in delivery order. */
export function byPartition(messages: readonly Message[]): PartitionBatch[] {
  const batches = new Map<string, PartitionBatch>();
  for (const message of messages) {
    let batch = batches.get(message.partitionId);
    if (!batch) {
      batch = { partition: message.partition, partitionId: message.partitionId, messages: [] };
      batches.set(message.partitionId, batch);
    }
    batch.messages.push(message);
  }
  return [...batches.values()];
}

/** Serialises tasks per key. */
class PartitionLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async run(key: string, task: () => Promise<void>): Promise<void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      await task();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
