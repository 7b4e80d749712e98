/**
 * The client: `new Regina(...)`, the entry point of the grammar.
 */

import { Admin } from "./admin.js";
import { PushBuffer, type BufferOptions } from "./buffer.js";
import { Core } from "./core.js";
import { Queue, type QueueHost } from "./queue.js";
import { Stream } from "./stream.js";
import type { StreamHost } from "./stream-runner.js";
import { StreamWire } from "./stream-wire.js";
import { Transaction } from "./transaction.js";
import { Transport, type TokenSource } from "./transport.js";
import type { AckResult, AckStatus, Message, RenewResult } from "./types.js";

/** Settings of a client. Every field is optional. */
export interface ReginaOptions {
  /** One broker URL. Default `http://localhost:6632`. */
  url?: string;
  /** Several broker URLs for failover, tried in order (wins over `url`). */
  servers?: string[];
  /** Bearer token, or a function returning the current token. */
  token?: TokenSource;
  /** Retries after a failed attempt (network error, timeout, 5xx). Default 3. */
  retries?: number;
  /** First backoff delay in milliseconds, doubled per round over the servers. Default 100. */
  retryBaseMillis?: number;
  /** Longest backoff delay in milliseconds. Default 5 000. */
  retryMaxMillis?: number;
  /** Timeout of one request attempt in milliseconds. Default 30 000. */
  timeoutMillis?: number;
  /** Added to a long-poll's own timeout to get its request timeout, in milliseconds. Default 5 000. */
  longPollMarginMillis?: number;
  /** A `fetch` implementation (default: the global one). */
  fetch?: typeof fetch;
}

/** The URL used when none is given. */
export const DEFAULT_URL = "http://localhost:6632";

/** A Regina client. Safe to share; keeps no connection state besides the preferred server. */
export class Regina {
  /** Administrative and dashboard calls. */
  readonly admin: Admin;
  private readonly core: Core;
  private readonly buffers = new Map<string, PushBuffer>();
  private readonly host: QueueHost;
  private readonly streamHost: StreamHost;

  /** Accepts a URL, a list of URLs (failover), or {@link ReginaOptions}. */
  constructor(options: ReginaOptions | string | string[] = {}) {
    const settings: ReginaOptions =
      typeof options === "string" ? { url: options } : Array.isArray(options) ? { servers: options } : options;
    const transport = new Transport({
      servers: settings.servers ?? [settings.url ?? DEFAULT_URL],
      token: settings.token,
      retries: settings.retries ?? 3,
      retryBaseMillis: settings.retryBaseMillis ?? 100,
      retryMaxMillis: settings.retryMaxMillis ?? 5_000,
      timeoutMillis: settings.timeoutMillis ?? 30_000,
      fetch: settings.fetch,
    });
    this.core = new Core(transport, settings.longPollMarginMillis ?? 5_000);
    this.admin = new Admin(transport);
    this.host = {
      core: this.core,
      buffer: (queue, partition, bufferOptions) => this.buffer(queue, partition, bufferOptions),
      flushBuffers: (queue, partition) => this.flushMatching(queue, partition),
    };
    this.streamHost = { core: this.core, wire: new StreamWire(transport) };
  }

  /** The broker URLs in use. */
  get servers(): readonly string[] {
    return this.core.transport.serverUrls;
  }

  /** A queue; chain settings, then `create`, `push`, `pop` or `consume`. */
  queue<T = unknown>(name: string): Queue<T> {
    return Queue.create<T>(this.host, name);
  }

  /**
   * A stream sourced from a queue; chain operators (`map`, `windowTumbling`, `gate`, …), a sink
   * (`to` or `foreach`), then `run({queryId})`.
   */
  stream<T = unknown>(queue: string): Stream<T> {
    if (typeof queue !== "string" || queue === "") throw new TypeError("stream() needs a source queue name");
    return new Stream<T>(this.streamHost, queue, []);
  }

  /** A transaction; chain `ack` and `queue(q).partition(p).push(items)`, then `commit`. */
  transaction(): Transaction {
    return new Transaction(this.core);
  }

  /**
   * Acks one message (`/ack`) or several (`/ack/batch`) with one status (default `completed`).
   * Failures are in-band: check `success` and `code` of each result.
   */
  ack(message: Message, status?: AckStatus, options?: AckOptions): Promise<AckResult>;
  ack(messages: readonly Message[], status?: AckStatus, options?: AckOptions): Promise<AckResult[]>;
  async ack(
    target: Message | readonly Message[],
    status: AckStatus = "completed",
    options: AckOptions = {},
  ): Promise<AckResult | AckResult[]> {
    const messages = Array.isArray(target) ? (target as readonly Message[]) : [target as Message];
    const results = await this.core.ack(
      messages.map((message) => ({ message, status, error: options.error })),
      options.signal,
    );
    return Array.isArray(target) ? results : (results[0] as AckResult);
  }

  /** Acks several messages, each with its own status and error text, in one request. */
  ackBatch(
    items: readonly { message: Message; status: AckStatus; error?: string }[],
    options: { signal?: AbortSignal } = {},
  ): Promise<AckResult[]> {
    return this.core.ack([...items], options.signal);
  }

  /**
   * Extends the lease of a message (or a lease id) by the queue's `leaseTime`, or by `seconds`.
   * Failures are in-band (`lease_expired`, `lease_not_found`).
   */
  renew(target: Message | string, options: { seconds?: number; signal?: AbortSignal } = {}): Promise<RenewResult> {
    const leaseId = typeof target === "string" ? target : target.leaseId;
    return this.core.renew(leaseId, options.seconds, options.signal);
  }

  /** Pushes everything buffered by `queue(...).buffer(...)`, in order per (queue, partition). */
  async flush(): Promise<void> {
    await Promise.all([...this.buffers.values()].map((buffer) => buffer.flush()));
  }

  /** Flushes the buffers and stops their timers. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      for (const buffer of this.buffers.values()) buffer.dispose();
    }
  }

  private buffer(queue: string, partition: string, options: BufferOptions): PushBuffer {
    const key = bufferKey(queue, partition);
    let buffer = this.buffers.get(key);
    if (!buffer) {
      buffer = new PushBuffer(this.core, queue, partition, options);
      this.buffers.set(key, buffer);
    }
    return buffer;
  }

  private async flushMatching(queue: string, partition: string | undefined): Promise<void> {
    const flushes = [...this.buffers.entries()]
      .filter(([key]) =>
        partition === undefined ? key.startsWith(bufferKey(queue, "")) : key === bufferKey(queue, partition),
      )
      .map(([, buffer]) => buffer.flush());
    await Promise.all(flushes);
  }
}

/** Options of {@link Regina.ack}. */
export interface AckOptions {
  /** Failure reason, kept in the DLQ entry. */
  error?: string;
  signal?: AbortSignal;
}

function bufferKey(queue: string, partition: string): string {
  // NUL cannot occur in names, so the key is unambiguous.
  return `${queue}\u0000${partition}`;
}
