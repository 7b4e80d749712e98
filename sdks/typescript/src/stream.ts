/**
 * The stream grammar: `client.stream(queue)` and its operators. Every operator returns a new
 * stream, so a stream can be kept and extended without side effects:
 *
 * ```ts
 * const run = await client
 *   .stream<{ amount: number }>("payments")
 *   .windowTumbling({ seconds: 60 })
 *   .aggregate({ count: () => 1, sum: (payment) => payment.amount })
 *   .to("payments-per-minute")
 *   .run({ queryId: "payments-per-minute" });
 * ```
 *
 * Operator functions are synchronous and should be pure: a batch that fails is processed again.
 * Side effects belong in `foreach` (at least once) or in the sink `to` (exactly once).
 */

import {
  compileChain,
  configHash,
  CRON_PERIOD_MS,
  secondsToMs,
  windowSpec,
  type CronEvery,
  type GateContext,
  type Stage,
  type StreamContext,
  type WindowOptions,
} from "./stream-chain.js";
import { StreamRun, type StreamHost, type StreamRunOptions } from "./stream-runner.js";

/** A stream that is complete: it can only be run (or hashed). */
export class RunnableStream {
  /** @internal */
  constructor(
    protected readonly host: StreamHost,
    protected readonly source: string,
    protected readonly stages: readonly Stage[],
  ) {}

  /** The source queue. */
  get sourceQueue(): string {
    return this.source;
  }

  /** The `config_hash` this chain registers with (SHA-256 hex of its shape). */
  configHash(): Promise<string> {
    return configHash(compileChain(this.stages).shape);
  }

  /**
   * Registers the query and starts processing; resolves once the query is registered.
   *
   * @throws {TypeError} the chain breaks a rule (say, a window without `reduce`).
   * @throws {ReginaError} `config_hash_mismatch` (409) when the query exists with another chain
   *   and `reset` is not set; any other refusal of the registration.
   */
  async run(options: StreamRunOptions): Promise<StreamRun> {
    checkRunOptions(options);
    const chain = compileChain(this.stages);
    const hash = await configHash(chain.shape);
    const sink = chain.sink?.kind === "to" ? chain.sink.queue : undefined;
    const registration = await this.host.wire.register(
      options.queryId,
      this.source,
      sink,
      hash,
      options.reset ?? false,
    );
    return new StreamRun(this.host, chain, this.source, registration, options);
  }
}

/** A stream of values of type `T`. */
export class Stream<T = unknown> extends RunnableStream {
  /** Replaces each value by `fn(value)`. */
  map<U>(fn: (value: T, context: StreamContext) => U): Stream<U> {
    return this.then<U>({ kind: "map", fn: requireFunction(fn, "map") });
  }

  /** Keeps the values for which `fn` is truthy. */
  filter(fn: (value: T, context: StreamContext) => unknown): Stream<T> {
    return this.then<T>({ kind: "filter", fn: requireFunction(fn, "filter") });
  }

  /** Replaces each value by the values of the array `fn` returns (none, one or several). */
  flatMap<U>(fn: (value: T, context: StreamContext) => readonly U[]): Stream<U> {
    return this.then<U>({ kind: "flatMap", fn: requireFunction(fn, "flatMap") });
  }

  /** Keys the values for the window or gate that follows (default key: the source partition id). */
  keyBy(fn: (value: T, context: StreamContext) => string | number): Stream<T> {
    return this.then<T>({ kind: "keyBy", fn: requireFunction(fn, "keyBy") });
  }

  /** Fixed windows of `seconds`, aligned to the epoch. */
  windowTumbling(options: { seconds: number } & WindowOptions<T>): WindowedStream<T> {
    const size = secondsToMs(options?.seconds, "windowTumbling seconds");
    return this.windowed(windowSpec("tumbling", size, size, undefined, options));
  }

  /** Windows of `size` seconds starting every `slide` seconds (`size` a multiple of `slide`). */
  windowSliding(options: { size: number; slide: number } & WindowOptions<T>): WindowedStream<T> {
    const size = secondsToMs(options?.size, "windowSliding size");
    const slide = secondsToMs(options?.slide, "windowSliding slide");
    if (size % slide !== 0) throw new TypeError("windowSliding size must be a multiple of slide");
    return this.windowed(windowSpec("sliding", size, slide, undefined, options));
  }

  /** Per-key sessions that close after `gap` seconds without events. */
  windowSession(options: { gap: number } & WindowOptions<T>): WindowedStream<T> {
    const gap = secondsToMs(options?.gap, "windowSession gap");
    return this.windowed(windowSpec("session", gap, gap, undefined, options));
  }

  /** Calendar windows in UTC: every second, minute, hour, day or week (from Monday). */
  windowCron(options: { every: CronEvery } & WindowOptions<T>): WindowedStream<T> {
    const period = CRON_PERIOD_MS[options?.every];
    if (period === undefined) throw new TypeError("windowCron every must be second, minute, hour, day or week");
    return this.windowed(windowSpec("cron", period, period, options.every, options));
  }

  /**
   * Lets values through while `fn` returns true; the first false parks the rest of the
   * partition's batch until the lease ends. `context.state` is the key's persistent state.
   */
  gate(fn: (value: T, context: GateContext) => boolean): Stream<T> {
    return this.then<T>({ kind: "gate", fn: requireFunction(fn, "gate") });
  }

  /**
   * Pushes every value to `queue` in the same cycle that acks the source (exactly once). The
   * partition is the source's unless `partition` names one or computes it.
   */
  to(
    queue: string,
    options: { partition?: string | ((value: T, context: StreamContext) => string) } = {},
  ): RunnableStream {
    if (typeof queue !== "string" || queue === "") throw new TypeError("to() needs a queue name");
    return this.then<T>({ kind: "to", queue, partition: options.partition as never });
  }

  /** Calls `fn` for every value before the cycle commits (at least once; may be async). */
  foreach(fn: (value: T, context: StreamContext) => unknown): RunnableStream {
    return this.then<T>({ kind: "foreach", fn: requireFunction(fn, "foreach") });
  }

  private then<U>(stage: Stage): Stream<U> {
    return new Stream<U>(this.host, this.source, [...this.stages, stage]);
  }

  private windowed(window: ReturnType<typeof windowSpec>): WindowedStream<T> {
    return new WindowedStream<T>(this.host, this.source, [...this.stages, { kind: "window", window }]);
  }
}

/** A windowed stream: name how each window's values combine. */
export class WindowedStream<T> {
  /** @internal */
  constructor(
    private readonly host: StreamHost,
    private readonly source: string,
    private readonly stages: readonly Stage[],
  ) {}

  /** Folds each window's values with `fn`, starting from (a copy of) `initial`, a JSON value. */
  reduce<A>(fn: (acc: A, value: T, context: StreamContext) => A, initial: A): Stream<A> {
    const stage: Stage = { kind: "reduce", fn: requireFunction(fn, "reduce"), initial };
    return new Stream<A>(this.host, this.source, [...this.stages, stage]);
  }

  /**
   * Named statistics per window: `count`, `sum`, `min`, `max`, `avg` of the extracted numbers;
   * any other name is a sum. `count` counts 1 per value unless its extractor returns a number.
   */
  aggregate<K extends string>(
    fields: Record<K, (value: T, context: StreamContext) => unknown>,
  ): Stream<Record<K, number | null>> {
    const entries = Object.entries(fields ?? {}) as [string, Stage & { fn: never }][];
    if (entries.length === 0) throw new TypeError("aggregate() needs at least one field");
    for (const [name, extract] of entries) {
      if (name.startsWith("__")) throw new TypeError(`aggregate field names cannot start with "__": ${name}`);
      requireFunction(extract, `aggregate field ${name}`);
    }
    const stage: Stage = { kind: "aggregate", fields: entries as never };
    return new Stream(this.host, this.source, [...this.stages, stage]);
  }
}

function requireFunction<F>(fn: F, what: string): F & ((...args: never[]) => unknown) {
  if (typeof fn !== "function") throw new TypeError(`${what}() needs a function`);
  return fn as F & ((...args: never[]) => unknown);
}

function checkRunOptions(options: StreamRunOptions): void {
  if (typeof options?.queryId !== "string" || options.queryId === "") throw new TypeError("run() needs a queryId");
  const positive = (value: number | undefined, what: string) => {
    if (value !== undefined && (!Number.isInteger(value) || value < 1))
      throw new TypeError(`${what} must be at least 1`);
  };
  positive(options.batchSize, "batchSize");
  positive(options.maxPartitions, "maxPartitions");
  const wait = options.maxWaitMillis;
  if (wait !== undefined && (!Number.isInteger(wait) || wait < 0)) throw new TypeError("maxWaitMillis must be >= 0");
}
