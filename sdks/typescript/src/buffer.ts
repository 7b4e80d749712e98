/**
 * Client-side push buffer of one (queue, partition): items collect in memory and are pushed when
 * `messageCount` of them are waiting or `timeMillis` after the first one arrived, whichever comes
 * first, or on `flush()`. Pushes of one buffer run one at a time, oldest items first, so the order
 * of the partition is the order of `push` calls.
 */

import type { Core } from "./core.js";
import { withTransactionIds } from "./core.js";
import type { PushItem } from "./types.js";

/** When a buffer pushes. */
export interface BufferOptions {
  /** Push once this many items are waiting (also the size of each push request). */
  messageCount: number;
  /** Push this long after the first waiting item arrived, in milliseconds. */
  timeMillis: number;
  /** Called when a timed push fails; its items stay buffered and are retried after `timeMillis`. */
  onError?: ((error: unknown) => void) | undefined;
}

/** Items buffered for one (queue, partition). */
export class PushBuffer {
  private pending: PushItem[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly core: Core,
    private readonly queue: string,
    private readonly partition: string,
    private readonly options: BufferOptions,
  ) {
    if (!(options.messageCount >= 1)) throw new RangeError("buffer messageCount must be at least 1");
    if (!(options.timeMillis >= 0)) throw new RangeError("buffer timeMillis must not be negative");
  }

  /** Items waiting to be pushed. */
  get size(): number {
    return this.pending.length;
  }

  /**
   * Adds items (each gets its transactionId now). Resolves once they are buffered; when the buffer
   * is full, waits for that push, and rejects if it fails — the items then stay buffered for the
   * next attempt, so they must not be pushed again.
   */
  async add(items: readonly PushItem[]): Promise<void> {
    this.pending.push(...withTransactionIds(items));
    if (this.pending.length >= this.options.messageCount) {
      await this.flush();
    } else {
      this.arm();
    }
  }

  /** Pushes every buffered item; rejects if a push fails (the unsent items stay buffered). */
  flush(): Promise<void> {
    this.disarm();
    const run = this.chain.then(() => this.drain());
    // The chain must survive a failed push, or every later flush would fail with it; the unsent
    // items are retried by the timer.
    this.chain = run.catch(() => this.arm());
    return run;
  }

  /** Stops the timer without pushing. */
  dispose(): void {
    this.disarm();
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, this.options.messageCount);
      await this.core.push(this.queue, this.partition, batch);
      this.pending.splice(0, batch.length);
    }
  }

  private arm(): void {
    if (this.timer !== undefined || this.pending.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((error: unknown) => this.options.onError?.(error));
    }, this.options.timeMillis);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
