/**
 * What a stream does with one partition's batch, without any I/O: the stateless operators, the
 * windows with their reducers, the gate, and the idle flush. The runner feeds it messages and
 * state rows and sends what it returns (state operations, results and the ack) as one cycle.
 *
 * State keys (shared by every Regina SDK): windows `<tag>\u001f<windowStart ISO>\u001f<key>` with
 * value `{acc, windowStart, windowEnd}`; sessions `sess:<gap>\u001fopen\u001f<key>` with value
 * `{acc, sessionStart, lastEventTime, windowStart, windowEnd}`; the watermark `__wm__` with value
 * `{eventTimeMs}`; gate state under the record's key.
 */

import type { CompiledChain, GateContext, Stage, StreamContext, WindowSpec } from "./stream-chain.js";
import { compareBytes } from "./stream-chain.js";
import type { Message } from "./types.js";

/** Separator inside state keys. */
export const KEY_SEPARATOR = "\u001f";
/** State key of a partition's event-time watermark. */
export const WATERMARK_KEY = "__wm__";
/** Monday 1970-01-05T00:00:00Z, the origin of weekly cron windows. */
const WEEK_ORIGIN_MS = 4 * 86_400_000;

/** A state change sent with a cycle. */
export type StateOp = { type: "upsert"; key: string; value: unknown } | { type: "delete"; key: string };

/** A stored state row, as `state/get` returns it. */
export interface StateRow {
  key: string;
  value: unknown;
}

/** One partition's share of a pop, in delivery order. */
export interface PartitionBatch {
  partition: string;
  partitionId: string;
  messages: Message[];
}

/** A value flowing through the chain, with its context and the message it came from. */
export interface StreamRecord {
  value: unknown;
  context: StreamContext;
  /** Position of the source message in the batch; -1 for window results. */
  index: number;
}

/** What one batch turns into. */
export interface BatchPlan {
  stateOps: StateOp[];
  /** Records that reach the sink, after the operators that follow the stateful stage. */
  results: StreamRecord[];
  /** How many leading messages the cycle settles; 0 means no cycle at all. */
  settled: number;
  /** False when a gate parked the rest of the batch (the lease is kept). */
  releaseLease: boolean;
  /** The partition's watermark after the batch (event-time windows). */
  watermark: number | undefined;
  late: number;
  allowed: number;
  denied: number;
}

type Fn = (...args: unknown[]) => unknown;

/** The partition a batch or a flush belongs to. */
interface Where {
  partition: string;
  partitionId: string;
}

interface Reducer {
  initial(): unknown;
  add(acc: unknown, value: unknown, context: StreamContext): unknown;
  result(acc: unknown): unknown;
}

/** Runs one batch through the chain. `nowMs` is the gate's clock. */
export function processBatch(chain: CompiledChain, batch: PartitionBatch, rows: StateRow[], nowMs: number): BatchPlan {
  const records = batch.messages.map((message, index) => ({
    value: message.data,
    context: { partition: batch.partition, partitionId: batch.partitionId, key: batch.partitionId, message },
    index,
  }));
  const input = applyStateless(chain.pre, records);
  const plan: BatchPlan = {
    stateOps: [],
    results: input,
    settled: batch.messages.length,
    releaseLease: true,
    watermark: undefined,
    late: 0,
    allowed: 0,
    denied: 0,
  };
  if (chain.gate) gatePlan(chain.gate.fn as Fn, input, rows, nowMs, plan);
  else if (chain.window) windowPlan(chain, input, rows, latestCreatedAt(batch.messages), batch, plan);
  if (chain.gate || chain.window) plan.results = applyStateless(chain.post, plan.results);
  return plan;
}

/** Applies map / filter / flatMap / keyBy in order. */
export function applyStateless(stages: readonly Stage[], records: StreamRecord[]): StreamRecord[] {
  let current = records;
  for (const stage of stages) {
    const next: StreamRecord[] = [];
    for (const record of current) {
      const fn = (stage as unknown as { fn: Fn }).fn;
      const out = fn(record.value, record.context);
      if (stage.kind === "map") next.push({ ...record, value: out });
      else if (stage.kind === "filter") {
        if (out) next.push(record);
      } else if (stage.kind === "flatMap") {
        if (!Array.isArray(out)) throw new TypeError("flatMap() must return an array");
        for (const value of out) next.push({ ...record, value });
      } else if (stage.kind === "keyBy") {
        next.push({ ...record, context: { ...record.context, key: String(out) } });
      }
    }
    current = next;
  }
  return current;
}

function gatePlan(gate: Fn, records: StreamRecord[], rows: StateRow[], nowMs: number, plan: BatchPlan): void {
  const stored = new Map(rows.map((row) => [row.key, row.value]));
  const live = new Map<string, Record<string, unknown>>();
  const touched = new Set<string>();
  const allowed: StreamRecord[] = [];
  for (const record of records) {
    const key = record.context.key;
    let state = live.get(key);
    if (!state) {
      const saved = stored.get(key);
      state = isObject(saved) ? (cloneJson(saved) as Record<string, unknown>) : {};
      live.set(key, state);
    }
    const context: GateContext = { ...record.context, state, streamTimeMs: nowMs };
    const decision = gate(record.value, context);
    if (typeof decision !== "boolean") throw new TypeError("gate() must return true or false");
    if (!decision) {
      plan.denied = 1;
      plan.settled = record.index;
      plan.releaseLease = false;
      break;
    }
    touched.add(key);
    allowed.push(record);
  }
  plan.allowed = allowed.length;
  plan.results = allowed;
  plan.stateOps = [...touched].map((key) => ({ type: "upsert", key, value: live.get(key) }));
}

interface Accumulator {
  key: string;
  start: number;
  end: number;
  acc: unknown;
  seeded: boolean;
  touched: boolean;
}

function windowPlan(
  chain: CompiledChain,
  records: StreamRecord[],
  rows: StateRow[],
  processingClock: number,
  where: Where,
  plan: BatchPlan,
): void {
  const window = chain.window as WindowSpec;
  const reducer = reducerOf(chain);
  const eventTime = window.eventTime !== undefined;
  const before = eventTime ? watermarkOf(rows) : undefined;
  const timed: [StreamRecord, number][] = [];
  let latest = -Infinity;
  for (const record of records) {
    const time = eventTimeOf(window, record);
    if (before !== undefined && time < before) {
      plan.late += 1;
      if (window.onLate === "drop") continue;
    }
    latest = Math.max(latest, time);
    timed.push([record, time]);
  }
  let clock = processingClock;
  if (eventTime) {
    clock = Math.max(before ?? -Infinity, latest - window.latenessMs);
    if (Number.isFinite(clock)) plan.watermark = clock;
    if (plan.watermark !== undefined && plan.watermark !== before) {
      plan.stateOps.push({ type: "upsert", key: WATERMARK_KEY, value: { eventTimeMs: plan.watermark } });
    }
  }
  const closed =
    window.type === "session"
      ? sessionPlan(window, reducer, timed, rows, clock, plan)
      : fixedWindowPlan(window, reducer, timed, rows, clock, plan);
  plan.results = sortedResults(closed, reducer, where);
}

function fixedWindowPlan(
  window: WindowSpec,
  reducer: Reducer,
  timed: [StreamRecord, number][],
  rows: StateRow[],
  clock: number,
  plan: BatchPlan,
): Accumulator[] {
  const prefix = window.tag + KEY_SEPARATOR;
  const windows = new Map<string, Accumulator>();
  for (const row of rows) {
    const seeded = seededWindow(row, prefix);
    if (seeded) windows.set(row.key, seeded);
  }
  for (const [record, time] of timed) {
    for (const start of windowStarts(window, time)) {
      const key = windowKey(window.tag, start, record.context.key);
      let entry = windows.get(key);
      if (!entry) {
        entry = {
          key: record.context.key,
          start,
          end: start + window.sizeMs,
          acc: reducer.initial(),
          seeded: false,
          touched: false,
        };
        windows.set(key, entry);
      }
      entry.acc = reducer.add(entry.acc, record.value, { ...record.context, windowStart: start, windowEnd: entry.end });
      entry.touched = true;
    }
  }
  const closed: Accumulator[] = [];
  for (const [stateKey, entry] of windows) {
    if (entry.end + window.graceMs <= clock) {
      closed.push(entry);
      if (entry.seeded) plan.stateOps.push({ type: "delete", key: stateKey });
    } else if (entry.touched) {
      plan.stateOps.push({
        type: "upsert",
        key: stateKey,
        value: { acc: entry.acc, windowStart: entry.start, windowEnd: entry.end },
      });
    }
  }
  return closed;
}

interface Session {
  start: number;
  last: number;
  acc: unknown;
  dirty: boolean;
}

function sessionPlan(
  window: WindowSpec,
  reducer: Reducer,
  timed: [StreamRecord, number][],
  rows: StateRow[],
  clock: number,
  plan: BatchPlan,
): Accumulator[] {
  const prefix = sessionPrefix(window);
  const sessions = new Map<string, Session>();
  const seeded = new Set<string>();
  for (const row of rows) {
    if (!row.key.startsWith(prefix) || !isObject(row.value)) continue;
    const { sessionStart, lastEventTime, acc } = row.value;
    if (typeof sessionStart !== "number" || typeof lastEventTime !== "number") continue;
    const key = row.key.slice(prefix.length);
    sessions.set(key, { start: sessionStart, last: lastEventTime, acc, dirty: false });
    seeded.add(key);
  }
  const closed: Accumulator[] = [];
  const close = (key: string, session: Session) =>
    closed.push({
      key,
      start: session.start,
      end: session.last + window.sizeMs,
      acc: session.acc,
      seeded: false,
      touched: false,
    });
  for (const [record, time] of timed) {
    const key = record.context.key;
    let session = sessions.get(key);
    if (session && time > session.last + window.sizeMs) {
      close(key, session);
      session = undefined;
    }
    if (!session) session = { start: time, last: time, acc: reducer.initial(), dirty: true };
    session.start = Math.min(session.start, time);
    session.last = Math.max(session.last, time);
    session.acc = reducer.add(session.acc, record.value, {
      ...record.context,
      windowStart: session.start,
      windowEnd: session.last + window.sizeMs,
    });
    session.dirty = true;
    sessions.set(key, session);
  }
  for (const [key, session] of sessions) {
    if (session.last + window.sizeMs + window.graceMs <= clock) {
      close(key, session);
      sessions.delete(key);
    }
  }
  for (const key of new Set([...seeded, ...sessions.keys()])) {
    const session = sessions.get(key);
    if (!session) plan.stateOps.push({ type: "delete", key: prefix + key });
    else if (session.dirty) {
      const value = {
        acc: session.acc,
        sessionStart: session.start,
        lastEventTime: session.last,
        windowStart: session.start,
        windowEnd: session.last + window.sizeMs,
      };
      plan.stateOps.push({ type: "upsert", key: prefix + key, value });
    }
  }
  return closed;
}

/**
 * The idle flush of one partition: every ripe row `state/get` returned (already filtered by the
 * window's key prefix and `windowEnd`) becomes a result, and its row is deleted.
 */
export function flushPlan(chain: CompiledChain, partition: string, partitionId: string, rows: StateRow[]): BatchPlan {
  const window = chain.window as WindowSpec;
  const reducer = reducerOf(chain);
  const prefix = window.type === "session" ? sessionPrefix(window) : window.tag + KEY_SEPARATOR;
  const closed: Accumulator[] = [];
  const stateOps: StateOp[] = [];
  for (const row of rows) {
    const entry = window.type === "session" ? seededSession(row, prefix) : seededWindow(row, prefix);
    if (!entry) continue;
    closed.push(entry);
    stateOps.push({ type: "delete", key: row.key });
  }
  const results = applyStateless(chain.post, sortedResults(closed, reducer, { partition, partitionId }));
  return { stateOps, results, settled: 0, releaseLease: true, watermark: undefined, late: 0, allowed: 0, denied: 0 };
}

/** The `key_prefix` of the window's rows for the idle flush. */
export function flushPrefix(window: WindowSpec): string {
  return window.type === "session" ? sessionPrefix(window) : window.tag + KEY_SEPARATOR;
}

function sessionPrefix(window: WindowSpec): string {
  return `${window.tag}${KEY_SEPARATOR}open${KEY_SEPARATOR}`;
}

function seededWindow(row: StateRow, prefix: string): Accumulator | undefined {
  if (!row.key.startsWith(prefix) || !isObject(row.value)) return undefined;
  const { windowStart, windowEnd, acc } = row.value;
  if (typeof windowStart !== "number" || typeof windowEnd !== "number") return undefined;
  const separator = row.key.indexOf(KEY_SEPARATOR, prefix.length);
  if (separator < 0) return undefined;
  const key = row.key.slice(separator + 1);
  return { key, start: windowStart, end: windowEnd, acc, seeded: true, touched: false };
}

function seededSession(row: StateRow, prefix: string): Accumulator | undefined {
  if (!row.key.startsWith(prefix) || !isObject(row.value)) return undefined;
  const { sessionStart, windowEnd, acc } = row.value;
  if (typeof sessionStart !== "number" || typeof windowEnd !== "number") return undefined;
  return { key: row.key.slice(prefix.length), start: sessionStart, end: windowEnd, acc, seeded: true, touched: false };
}

/** Closed windows as results, ordered by start, end, then key (so every SDK emits alike). */
function sortedResults(closed: Accumulator[], reducer: Reducer, where: Where): StreamRecord[] {
  closed.sort((a, b) => a.start - b.start || a.end - b.end || compareBytes(a.key, b.key));
  return closed.map((entry) => ({
    value: reducer.result(entry.acc),
    context: {
      partition: where.partition,
      partitionId: where.partitionId,
      key: entry.key,
      message: null,
      windowStart: entry.start,
      windowEnd: entry.end,
    },
    index: -1,
  }));
}

/** Starts of the windows an event at `time` belongs to, oldest first. */
export function windowStarts(window: WindowSpec, time: number): number[] {
  if (window.type === "sliding") {
    const starts: number[] = [];
    const latest = Math.floor(time / window.slideMs) * window.slideMs;
    for (let start = latest; start > time - window.sizeMs; start -= window.slideMs) starts.unshift(start);
    return starts;
  }
  if (window.type === "cron" && window.every === "week") {
    return [Math.floor((time - WEEK_ORIGIN_MS) / window.sizeMs) * window.sizeMs + WEEK_ORIGIN_MS];
  }
  return [Math.floor(time / window.sizeMs) * window.sizeMs];
}

/** The state key of a window of a key. */
export function windowKey(tag: string, start: number, key: string): string {
  return [tag, new Date(start).toISOString(), key].join(KEY_SEPARATOR);
}

function eventTimeOf(window: WindowSpec, record: StreamRecord): number {
  if (!window.eventTime) return Date.parse(record.context.message?.createdAt ?? "");
  const raw = window.eventTime(record.value as never, record.context as never);
  const time = raw instanceof Date ? raw.getTime() : typeof raw === "string" ? Date.parse(raw) : raw;
  if (typeof time !== "number" || !Number.isFinite(time)) {
    throw new TypeError(`eventTime returned no valid time: ${String(raw)}`);
  }
  return time;
}

function watermarkOf(rows: StateRow[]): number | undefined {
  const row = rows.find((candidate) => candidate.key === WATERMARK_KEY);
  const value = isObject(row?.value) ? row.value.eventTimeMs : undefined;
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function latestCreatedAt(messages: Message[]): number {
  return messages.reduce((latest, message) => Math.max(latest, Date.parse(message.createdAt)), -Infinity);
}

function reducerOf(chain: CompiledChain): Reducer {
  const stage = chain.reducer;
  if (!stage) throw new TypeError("a window must be followed by reduce or aggregate");
  if (stage.kind === "reduce") {
    const fn = stage.fn as Fn;
    return {
      initial: () => cloneJson(stage.initial),
      add: (acc, value, context) => fn(acc, value, context),
      result: (acc) => acc,
    };
  }
  return aggregateReducer(stage.fields as [string, Fn][]);
}

/**
 * `aggregate({name: extractor})`: `count` adds the extractor's number (1 when it returns none),
 * `sum` adds, `min` / `max` keep the extremes (null before the first number), `avg` the mean, and
 * any other name sums. Non-numbers are ignored. Results carry exactly the named fields.
 */
function aggregateReducer(fields: [string, Fn][]): Reducer {
  const initial = (): Record<string, unknown> => {
    const acc: Record<string, unknown> = {};
    for (const [name] of fields) acc[name] = name === "min" || name === "max" ? null : 0;
    if (fields.some(([name]) => name === "avg")) Object.assign(acc, { __avgSum: 0, __avgCount: 0 });
    return acc;
  };
  const add = (current: unknown, value: unknown, context: StreamContext): unknown => {
    const acc = { ...(isObject(current) ? current : initial()) };
    for (const [name, extract] of fields) {
      const raw = extract(value, context);
      const number = typeof raw === "number" && Number.isFinite(raw) ? raw : undefined;
      const previous = acc[name];
      if (name === "count") acc.count = asNumber(previous) + (number ?? 1);
      else if (number === undefined) continue;
      else if (name === "min") acc.min = typeof previous === "number" ? Math.min(previous, number) : number;
      else if (name === "max") acc.max = typeof previous === "number" ? Math.max(previous, number) : number;
      else if (name === "avg") {
        acc.__avgSum = asNumber(acc.__avgSum) + number;
        acc.__avgCount = asNumber(acc.__avgCount) + 1;
        acc.avg = (acc.__avgSum as number) / (acc.__avgCount as number);
      } else acc[name] = asNumber(previous) + number;
    }
    return acc;
  };
  const result = (acc: unknown): unknown => {
    if (!isObject(acc)) return acc;
    return Object.fromEntries(fields.map(([name]) => [name, acc[name] ?? null]));
  };
  return { initial, add, result };
}

function asNumber(value: unknown): number {
  return typeof value === "number" ? value : 0;
}

/** True for a plain JSON object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A deep copy through JSON, as the value would come back from the broker. */
export function cloneJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
