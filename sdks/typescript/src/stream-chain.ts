/**
 * The operator chain of a stream: its stages as data, the rules a chain must follow, and the
 * `config_hash` that identifies its shape on the broker.
 *
 * The hash covers what decides the meaning of stored state — the operator kinds in order, window
 * sizes, aggregate field names and the sink queue — and never the user's functions, so a new
 * version of a `map` function keeps the query's state while a new window size does not.
 */

import type { Message } from "./types.js";

/** What every operator function receives besides the value. */
export interface StreamContext {
  /** Name of the source partition. */
  partition: string;
  /** Id of the source partition (the state shard). */
  partitionId: string;
  /** The record's key: the source partition id unless `keyBy` chose another. */
  key: string;
  /** The source message; `null` for window results. */
  message: Message | null;
  /** Start of the window, epoch milliseconds (window results only). */
  windowStart?: number;
  /** End of the window (exclusive), epoch milliseconds (window results only). */
  windowEnd?: number;
}

/** Context of a gate function: the key's persistent state, which the function may change. */
export interface GateContext extends StreamContext {
  /** The key's state; changes are stored when the gate allows a record of that key. */
  state: Record<string, unknown>;
  /** The instant the batch is judged at, epoch milliseconds (one value for the whole batch). */
  streamTimeMs: number;
}

/** How a window treats events older than the watermark (event-time windows only). */
export type LatePolicy = "drop" | "include";

/** Settings every window accepts. Durations are in seconds unless the name says otherwise. */
export interface WindowOptions<T> {
  /** How long after its end a window stays open for more events. Default 0. */
  gracePeriod?: number;
  /** Period of the idle flush that closes windows of quiet partitions; 0 disables it. */
  idleFlushMs?: number;
  /** The event's time (epoch ms, `Date` or ISO text); default: the message's `createdAt`. */
  eventTime?: (value: T, context: StreamContext) => number | Date | string;
  /** Out-of-orderness the watermark tolerates (event time only). Default 0. */
  allowedLateness?: number;
  /** What happens to events older than the watermark. Default `drop`. */
  onLate?: LatePolicy;
}

/** Cron-like window periods, aligned to UTC (weeks start on Monday). */
export type CronEvery = "second" | "minute" | "hour" | "day" | "week";

type Fn = (...args: never[]) => unknown;

/** One operator of a chain, as the runner executes it. */
export type Stage =
  | { kind: "map"; fn: Fn }
  | { kind: "filter"; fn: Fn }
  | { kind: "flatMap"; fn: Fn }
  | { kind: "keyBy"; fn: Fn }
  | { kind: "window"; window: WindowSpec }
  | { kind: "reduce"; fn: Fn; initial: unknown }
  | { kind: "aggregate"; fields: [string, Fn][] }
  | { kind: "gate"; fn: Fn }
  | { kind: "to"; queue: string; partition: string | Fn | undefined }
  | { kind: "foreach"; fn: Fn };

/** A window, with every duration in milliseconds. */
export interface WindowSpec {
  type: "tumbling" | "sliding" | "session" | "cron";
  /** Window length (tumbling, cron), size (sliding) or gap (session). */
  sizeMs: number;
  /** Distance between window starts (sliding; equals `sizeMs` otherwise). */
  slideMs: number;
  every: CronEvery | undefined;
  graceMs: number;
  idleFlushMs: number;
  eventTime: Fn | undefined;
  latenessMs: number;
  onLate: LatePolicy;
  /** The state-key tag: `tumb:<s>`, `slide:<size>:<slide>`, `cron:<every>` or `sess:<gap>`. */
  tag: string;
}

/** A chain checked and split into the parts the runner executes in order. */
export interface CompiledChain {
  /** Stateless operators before the stateful stage (all of them when there is none). */
  pre: Stage[];
  window: WindowSpec | undefined;
  reducer: Extract<Stage, { kind: "reduce" | "aggregate" }> | undefined;
  gate: Extract<Stage, { kind: "gate" }> | undefined;
  /** Stateless operators after the stateful stage, applied to its results. */
  post: Stage[];
  sink: Extract<Stage, { kind: "to" | "foreach" }> | undefined;
  /** The text whose SHA-256 is the `config_hash`. */
  shape: string;
}

/** Milliseconds per `every` period of cron windows. */
export const CRON_PERIOD_MS: Record<CronEvery, number> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};

/** Default idle-flush period of session windows, in milliseconds (others: 5 000). */
export const SESSION_IDLE_FLUSH_MS_DEFAULT = 1_000;
/** Default idle-flush period of tumbling, sliding and cron windows, in milliseconds. */
export const IDLE_FLUSH_MS_DEFAULT = 5_000;

/** A duration in seconds as whole milliseconds; throws unless it is positive (or zero if allowed). */
export function secondsToMs(seconds: unknown, what: string, allowZero = false): number {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0 || (!allowZero && seconds === 0)) {
    throw new TypeError(`${what} must be a ${allowZero ? "non-negative" : "positive"} number of seconds`);
  }
  const ms = Math.round(seconds * 1000);
  if (Math.abs(ms - seconds * 1000) > 1e-6) throw new TypeError(`${what} must be a whole number of milliseconds`);
  return ms;
}

/** Seconds as text from whole milliseconds, the same in every SDK: 5000 → "5", 1500 → "1.5". */
export function secondsText(ms: number): string {
  const whole = Math.floor(ms / 1000);
  const rest = ms % 1000;
  return rest === 0 ? String(whole) : `${whole}.${String(rest).padStart(3, "0").replace(/0+$/, "")}`;
}

/** Builds a window spec from its options. */
export function windowSpec<T>(
  type: WindowSpec["type"],
  sizeMs: number,
  slideMs: number,
  every: CronEvery | undefined,
  options: WindowOptions<T>,
): WindowSpec {
  const onLate = options.onLate ?? "drop";
  if (onLate !== "drop" && onLate !== "include") throw new TypeError("onLate must be 'drop' or 'include'");
  const idle = options.idleFlushMs ?? (type === "session" ? SESSION_IDLE_FLUSH_MS_DEFAULT : IDLE_FLUSH_MS_DEFAULT);
  if (!Number.isInteger(idle) || idle < 0) throw new TypeError("idleFlushMs must be a non-negative integer");
  if (options.eventTime !== undefined && typeof options.eventTime !== "function") {
    throw new TypeError("eventTime must be a function");
  }
  const tags = {
    tumbling: `tumb:${secondsText(sizeMs)}`,
    sliding: `slide:${secondsText(sizeMs)}:${secondsText(slideMs)}`,
    session: `sess:${secondsText(sizeMs)}`,
    cron: `cron:${every ?? ""}`,
  };
  return {
    type,
    sizeMs,
    slideMs,
    every,
    graceMs: secondsToMs(options.gracePeriod ?? 0, "gracePeriod", true),
    idleFlushMs: idle,
    eventTime: options.eventTime as Fn | undefined,
    latenessMs: secondsToMs(options.allowedLateness ?? 0, "allowedLateness", true),
    onLate,
    tag: tags[type],
  };
}

/**
 * Checks a chain and splits it. Rules: at most one sink (`to` / `foreach`), and it comes last; at
 * most one stateful stage — a window directly followed by `reduce` or `aggregate`, or a `gate`;
 * `keyBy` only before the stateful stage; `flatMap` not before a gate (a gate judges whole
 * messages).
 *
 * @throws {TypeError} naming the rule the chain breaks.
 */
export function compileChain(stages: readonly Stage[]): CompiledChain {
  const compiled: CompiledChain = {
    pre: [],
    window: undefined,
    reducer: undefined,
    gate: undefined,
    post: [],
    sink: undefined,
    shape: shapeOf(stages),
  };
  stages.forEach((stage, position) => {
    const stateful = compiled.window !== undefined || compiled.gate !== undefined;
    if (compiled.sink) throw new TypeError(`${compiled.sink.kind}() must be the last operator of a stream`);
    switch (stage.kind) {
      case "to":
      case "foreach":
        if (compiled.window && !compiled.reducer)
          throw new TypeError("a window must be followed by reduce or aggregate");
        compiled.sink = stage;
        break;
      case "window":
        if (stateful) throw new TypeError("a stream has at most one window or gate");
        compiled.window = stage.window;
        break;
      case "reduce":
      case "aggregate":
        if (!compiled.window || compiled.reducer || stages[position - 1]?.kind !== "window") {
          throw new TypeError(`${stage.kind}() must directly follow a window`);
        }
        compiled.reducer = stage;
        break;
      case "gate":
        if (stateful) throw new TypeError("a stream has at most one window or gate");
        if (compiled.pre.some((earlier) => earlier.kind === "flatMap")) {
          throw new TypeError("flatMap() cannot come before gate(): a gate judges whole messages");
        }
        compiled.gate = stage;
        break;
      default:
        if (compiled.window && !compiled.reducer)
          throw new TypeError("a window must be followed by reduce or aggregate");
        if (stage.kind === "keyBy" && stateful) throw new TypeError("keyBy() must come before the window or gate");
        (stateful ? compiled.post : compiled.pre).push(stage);
    }
  });
  if (compiled.window && !compiled.reducer) throw new TypeError("a window must be followed by reduce or aggregate");
  return compiled;
}

/**
 * The chain's shape as text: one line per operator, the kind and then its structural settings.
 * Texts are written `<UTF-8 byte length>:<text>` so that no name can be mistaken for syntax.
 */
export function shapeOf(stages: readonly Stage[]): string {
  const lines = ["regina.streams.v1"];
  for (const stage of stages) {
    switch (stage.kind) {
      case "window":
        lines.push(windowShape(stage.window));
        break;
      case "aggregate": {
        const names = stage.fields.map(([name]) => name).sort(compareBytes);
        lines.push(`aggregate fields=${names.map(lengthPrefixed).join(",")}`);
        break;
      }
      case "to":
        lines.push(`to queue=${lengthPrefixed(stage.queue)}`);
        break;
      default:
        lines.push(stage.kind);
    }
  }
  return lines.join("\n");
}

function windowShape(window: WindowSpec): string {
  switch (window.type) {
    case "tumbling":
      return `windowTumbling seconds=${secondsText(window.sizeMs)}`;
    case "sliding":
      return `windowSliding size=${secondsText(window.sizeMs)} slide=${secondsText(window.slideMs)}`;
    case "session":
      return `windowSession gap=${secondsText(window.sizeMs)}`;
    case "cron":
      return `windowCron every=${window.every ?? ""}`;
  }
}

/** UTF-8 bytes of a text (the encoder is made on first use: importing has no side effects). */
let encoder: TextEncoder | undefined;
function utf8(text: string): Uint8Array<ArrayBuffer> {
  encoder ??= new TextEncoder();
  return encoder.encode(text);
}

function lengthPrefixed(text: string): string {
  return `${utf8(text).length}:${text}`;
}

/** Orders texts by their UTF-8 bytes (as the broker orders state keys). */
export function compareBytes(left: string, right: string): number {
  const a = utf8(left);
  const b = utf8(right);
  for (let index = 0; index < Math.min(a.length, b.length); index += 1) {
    if (a[index] !== b[index]) return (a[index] as number) - (b[index] as number);
  }
  return a.length - b.length;
}

/** SHA-256 of the shape, lower-case hex (Web Crypto: Node ≥ 20 and browsers). */
export async function configHash(shape: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", utf8(shape));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
