/**
 * The consumer loop behind `queue(...).consume(handler)`.
 *
 * `concurrency` workers each long-poll, run the handler and ack: `completed` when it returns,
 * `failed` with the error text when it throws. Per-message handlers (`each()`) run a partition's
 * messages in order and stop at the first failure in that partition: the `failed` ack ends the
 * partition's lease and the broker redelivers the rest from there. A batch handler that throws
 * fails the first message of each partition in the batch (the head carries the attempt).
 *
 * Stopping — by the caller's signal, `limit`, `idleMillis` or a fatal error — pops nothing new;
 * handlers already running finish and are acked, and messages not yet handed to a handler are
 * given back at once with a `retry` ack (nothing charged).
 */

import { ReginaError } from "./errors.js";
import type { AckItem, Core, PopRequest } from "./core.js";
import { POP_TIMEOUT_MILLIS_DEFAULT } from "./core.js";
import { sleep } from "./transport.js";
import type { Message } from "./types.js";

/** What a handler gets besides its message(s). */
export interface HandlerContext {
  /** Aborted when the consumer is stopping; long handlers may finish early. */
  signal: AbortSignal;
}

/** A handler for a batch of messages (the default). */
export type BatchHandler<T> = (messages: Message<T>[], context: HandlerContext) => unknown;
/** A handler for one message (`each()`). */
export type EachHandler<T> = (message: Message<T>, context: HandlerContext) => unknown;

/** Options of one `consume` call. */
export interface ConsumeOptions {
  /** Stops the consumer gracefully. */
  signal?: AbortSignal | undefined;
  /**
   * Told about every handler failure and every transient problem (pop retried later, ack or lease
   * renewal failed), with the messages concerned. Without it they are counted in the summary only.
   */
  onError?: ((error: unknown, messages: Message[]) => void) | undefined;
}

/** Why a consumer stopped. */
export type StopReason = "signal" | "limit" | "idle";

/** What a finished `consume` call did. */
export interface ConsumeSummary {
  /** Messages handed to the handler (repeats included). */
  messages: number;
  /** Handler calls that threw. */
  failures: number;
  stoppedBy: StopReason;
}

/** Consumer settings collected by the queue builder. */
export interface ConsumerSettings {
  pop: Omit<PopRequest, "batch" | "wait" | "timeoutMillis">;
  batch: number;
  /** Long-poll timeout of each pop, in milliseconds. */
  pollMillis: number | undefined;
  concurrency: number;
  each: boolean;
  limit: number | undefined;
  idleMillis: number | undefined;
  renewEveryMillis: number | undefined;
}

const BACKOFF_BASE_MILLIS = 200;
const BACKOFF_MAX_MILLIS = 5_000;

/** Runs a consumer until it stops; rejects with the first fatal (4xx) error of a pop. */
export function consume<T>(
  core: Core,
  settings: ConsumerSettings,
  handler: BatchHandler<T> | EachHandler<T>,
  options: ConsumeOptions = {},
): Promise<ConsumeSummary> {
  return new ConsumerRun<T>(core, settings, handler, options).run();
}

class ConsumerRun<T> {
  private readonly stop = new AbortController();
  private reason: StopReason | undefined;
  private fatal: unknown;
  private handled = 0;
  private failures = 0;
  /** Messages handled plus messages reserved by pops and handlers in progress (for `limit`). */
  private claimed = 0;
  private busy = 0;
  private lastActivity = Date.now();

  constructor(
    private readonly core: Core,
    private readonly settings: ConsumerSettings,
    private readonly handler: BatchHandler<T> | EachHandler<T>,
    private readonly options: ConsumeOptions,
  ) {}

  async run(): Promise<ConsumeSummary> {
    const external = this.options.signal;
    const onAbort = () => this.halt("signal");
    if (external?.aborted) this.halt("signal");
    external?.addEventListener("abort", onAbort, { once: true });
    try {
      const workers = Array.from({ length: Math.max(1, this.settings.concurrency) }, () => this.worker());
      await Promise.all(workers);
    } finally {
      external?.removeEventListener("abort", onAbort);
    }
    if (this.fatal !== undefined) throw this.fatal;
    return { messages: this.handled, failures: this.failures, stoppedBy: this.reason ?? "limit" };
  }

  private halt(reason: StopReason): void {
    if (this.stop.signal.aborted) return;
    this.reason = reason;
    this.stop.abort();
  }

  private async worker(): Promise<void> {
    let errors = 0;
    while (!this.stop.signal.aborted) {
      const batch = this.reserve();
      if (batch === undefined) return;
      const pollMillis = this.pollMillis();
      if (pollMillis === undefined) {
        this.release(batch);
        this.halt("idle");
        return;
      }
      let messages: Message<T>[];
      try {
        const request = { ...this.settings.pop, batch, wait: true, timeoutMillis: pollMillis };
        messages = await this.core.pop<T>(request, this.stop.signal);
        errors = 0;
      } catch (error) {
        this.release(batch);
        if (this.stop.signal.aborted) return;
        if (error instanceof ReginaError && error.status >= 400 && error.status < 500) {
          this.fatal ??= error;
          this.halt("signal");
          return;
        }
        this.report(error, []);
        errors += 1;
        await sleep(backoffMillis(errors), this.stop.signal).catch(() => undefined);
        continue;
      }
      this.release(batch - messages.length);
      if (messages.length > 0) await this.deliver(messages);
    }
  }

  private async deliver(messages: Message<T>[]): Promise<void> {
    this.busy += 1;
    const stopRenewal = this.startRenewal(messages);
    try {
      if (this.stop.signal.aborted && !this.settings.pop.autoAck) {
        // The pop raced the stop: hand the messages back instead of starting new work.
        this.release(messages.length);
        await this.settle(firstPerPartition(messages).map((message) => ({ message, status: "retry" })));
      } else if (this.settings.each) {
        await this.handleEach(messages);
      } else {
        await this.handleBatch(messages);
      }
    } finally {
      stopRenewal();
      this.busy -= 1;
      this.lastActivity = Date.now();
    }
    const { limit } = this.settings;
    if (limit !== undefined && this.handled >= limit) this.halt("limit");
  }

  private async handleBatch(messages: Message<T>[]): Promise<void> {
    const handler = this.handler as BatchHandler<T>;
    let acks: AckItem[];
    try {
      await handler(messages, { signal: this.stop.signal });
      this.handled += messages.length;
      acks = this.unsettled(messages).map((message) => ({ message, status: "completed" }));
    } catch (error) {
      this.handled += messages.length;
      this.failures += 1;
      this.report(error, messages);
      const heads = firstPerPartition(this.unsettled(messages));
      acks = heads.map((message) => ({ message, status: "failed", error: errorText(error) }));
    }
    await this.settle(acks);
  }

  private async handleEach(messages: Message<T>[]): Promise<void> {
    const handler = this.handler as EachHandler<T>;
    const autoAck = this.settings.pop.autoAck;
    const acks: AckItem[] = [];
    for (const run of partitionRuns(messages)) {
      for (const [position, message] of run.entries()) {
        if (this.stop.signal.aborted && !autoAck) {
          this.release(run.length - position);
          acks.push({ message, status: "retry" });
          break;
        }
        try {
          await handler(message, { signal: this.stop.signal });
          this.handled += 1;
          acks.push({ message, status: "completed" });
        } catch (error) {
          this.handled += 1;
          this.failures += 1;
          this.report(error, [message]);
          if (autoAck) continue;
          this.release(run.length - position - 1);
          acks.push({ message, status: "failed", error: errorText(error) });
          break;
        }
      }
    }
    await this.settle(acks.filter((ack) => !this.core.settled.has(ack.message)));
  }

  /** Sends the acks (never cancelled: a stopping consumer still settles what it handled). */
  private async settle(acks: AckItem[]): Promise<void> {
    if (acks.length === 0 || this.settings.pop.autoAck) return;
    try {
      const results = await this.core.ack(acks);
      results.forEach((result, position) => {
        const ack = acks[position];
        if (result.success || !ack) return;
        const message = result.error ?? `Ack ${ack.status} failed`;
        this.report(new ReginaError({ code: result.code ?? "http_error", status: 200, message }), [ack.message]);
      });
    } catch (error) {
      this.report(
        error,
        acks.map((ack) => ack.message),
      );
    }
  }

  private startRenewal(messages: Message<T>[]): () => void {
    const every = this.settings.renewEveryMillis;
    const leaseIds = [...new Set(messages.map((message) => message.leaseId).filter((id) => id !== ""))];
    if (every === undefined || leaseIds.length === 0) return () => undefined;
    const timer = setInterval(() => {
      for (const leaseId of leaseIds) {
        this.core.renew(leaseId).then(
          (result) => {
            if (result.success) return;
            const error = new ReginaError({
              code: result.code ?? "http_error",
              status: 200,
              message: result.error ?? "Lease renewal failed",
            });
            this.report(error, messages);
          },
          (error: unknown) => this.report(error, messages),
        );
      }
    }, every);
    return () => clearInterval(timer);
  }

  /** The batch size of the next pop, or `undefined` when `limit` is reached (or reserved). */
  private reserve(): number | undefined {
    const { limit, batch } = this.settings;
    // An invalid batch goes to the broker as it is, which refuses it with its own code.
    if (limit === undefined || batch < 1) return batch;
    const count = Math.min(batch, limit - this.claimed);
    if (count <= 0) return undefined;
    this.claimed += count;
    return count;
  }

  private release(count: number): void {
    if (this.settings.limit !== undefined && this.settings.batch >= 1) this.claimed -= count;
  }

  /** Timeout of the next long-poll, or `undefined` when the consumer has been idle long enough. */
  private pollMillis(): number | undefined {
    const poll = this.settings.pollMillis ?? POP_TIMEOUT_MILLIS_DEFAULT;
    const idle = this.settings.idleMillis;
    if (idle === undefined) return poll;
    if (this.busy > 0) return Math.min(poll, idle);
    const left = idle - (Date.now() - this.lastActivity);
    return left <= 0 ? undefined : Math.min(poll, Math.ceil(left));
  }

  private unsettled(messages: Message<T>[]): Message<T>[] {
    return messages.filter((message) => !this.core.settled.has(message));
  }

  private report(error: unknown, messages: Message[]): void {
    try {
      this.options.onError?.(error, messages);
    } catch {
      // An error reporter that throws must not stop the consumer.
    }
  }
}

/** The messages grouped by partition, in delivery order. */
function partitionRuns<M extends Message>(messages: M[]): M[][] {
  const runs = new Map<string, M[]>();
  for (const message of messages) {
    const run = runs.get(message.partitionId);
    if (run) run.push(message);
    else runs.set(message.partitionId, [message]);
  }
  return [...runs.values()];
}

function firstPerPartition<M extends Message>(messages: M[]): M[] {
  return partitionRuns(messages).map((run) => run[0] as M);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function backoffMillis(errors: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MILLIS, BACKOFF_BASE_MILLIS * 2 ** (errors - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
