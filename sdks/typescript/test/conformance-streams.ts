/**
 * The `stream` and `streamHash` steps of the conformance language (sdks/conformance/README.md):
 * chains described in JSON, with expressions standing for the user's functions, built and run
 * through the client's public stream API.
 */

import { isDeepStrictEqual } from "node:util";
import {
  slidingWindowGate,
  tokenBucketGate,
  type Regina,
  type RunnableStream,
  type Stream,
  type StreamContext,
  type StreamRun,
  type WindowedStream,
} from "../src/index.js";

type Json = unknown;
type Entry = Record<string, Json> & { op: string };
/** Variables an expression can read. */
interface Scope {
  value: Json;
  acc?: Json;
  ctx?: StreamContext | undefined;
}

/** Evaluates an expression of the conformance language. */
export function evaluate(expression: Json, scope: Scope): Json {
  if (expression === null || typeof expression !== "object" || Array.isArray(expression)) return expression;
  const [[op, arg]] = Object.entries(expression as Record<string, Json>) as [[string, Json]];
  const all = () => (arg as Json[]).map((item) => evaluate(item, scope));
  const num = (item: Json) => evaluate(item, scope) as number;
  switch (op) {
    case "value":
      return path(scope.value, arg as string);
    case "acc":
      return path(scope.acc, arg as string);
    case "ctx":
      return (scope.ctx as unknown as Record<string, Json> | undefined)?.[arg as string] ?? null;
    case "literal":
      return arg;
    case "add":
      return (all() as number[]).reduce((sum, item) => sum + item, 0);
    case "mul":
      return (all() as number[]).reduce((product, item) => product * item, 1);
    case "sub":
      return num((arg as Json[])[0]) - num((arg as Json[])[1]);
    case "mod":
      return num((arg as Json[])[0]) % num((arg as Json[])[1]);
    case "eq":
      return isDeepStrictEqual(...(all() as [Json, Json]));
    case "lt":
      return num((arg as Json[])[0]) < num((arg as Json[])[1]);
    case "gt":
      return num((arg as Json[])[0]) > num((arg as Json[])[1]);
    case "not":
      return !evaluate(arg, scope);
    case "object":
      return Object.fromEntries(
        Object.entries(arg as Record<string, Json>).map(([key, item]) => [key, evaluate(item, scope)]),
      );
    case "list":
      return all();
    case "concat":
      return all()
        .map((item) => String(item))
        .join("");
    default:
      throw new Error(`unknown expression ${op}`);
  }
}

function path(value: Json, dotted: string): Json {
  if (dotted === "") return value;
  let current = value;
  for (const part of dotted.split(".")) {
    current = current !== null && typeof current === "object" ? (current as Record<string, Json>)[part] : undefined;
  }
  return current ?? null;
}

/** What the `foreach` sink of a described chain recorded. */
export type Recorded = Json[];

/** Builds the stream a step describes; `recorded` receives what `foreach` records. */
export function buildStream(client: Regina, step: Entry, recorded: Recorded): RunnableStream {
  let stream: Stream<Json> | WindowedStream<Json> | RunnableStream = client.stream(step.source as string);
  for (const entry of step.chain as Entry[]) stream = addEntry(stream, entry, recorded);
  if (!("run" in stream)) throw new Error("a chain cannot end with a window");
  return stream;
}

function fn1(expression: Json) {
  return (value: Json, ctx: StreamContext) => evaluate(expression, { value, ctx });
}

function addEntry(stream: Stream<Json> | WindowedStream<Json> | RunnableStream, entry: Entry, recorded: Recorded) {
  const s = stream as Stream<Json>;
  const windowed = stream as WindowedStream<Json>;
  const options = windowOptions(entry);
  switch (entry.op) {
    case "map":
      return s.map(fn1(entry.fn));
    case "filter":
      return s.filter(fn1(entry.fn));
    case "flatMap":
      return s.flatMap(fn1(entry.fn) as (value: Json, ctx: StreamContext) => Json[]);
    case "keyBy":
      return s.keyBy(fn1(entry.fn) as (value: Json, ctx: StreamContext) => string);
    case "windowTumbling":
      return s.windowTumbling({ seconds: entry.seconds as number, ...options });
    case "windowSliding":
      return s.windowSliding({ size: entry.size as number, slide: entry.slide as number, ...options });
    case "windowSession":
      return s.windowSession({ gap: entry.gap as number, ...options });
    case "windowCron":
      return s.windowCron({ every: entry.every as "second", ...options });
    case "reduce":
      return windowed.reduce((acc: Json, value: Json, ctx) => evaluate(entry.fn, { value, acc, ctx }), entry.initial);
    case "aggregate": {
      const fields = Object.entries(entry.fields as Record<string, Json>).map(([name, e]) => [name, fn1(e)]);
      return windowed.aggregate(Object.fromEntries(fields) as Record<string, (value: Json) => Json>);
    }
    case "gate":
      return s.gate(gateOf(entry));
    case "to": {
      const partition = entry.partition;
      if (partition === undefined) return s.to(entry.queue as string);
      const chosen = typeof partition === "string" ? partition : (fn1(partition) as (value: Json) => string);
      return s.to(entry.queue as string, { partition: chosen });
    }
    case "foreach":
      return s.foreach((value, ctx) => {
        recorded.push(entry.record === undefined ? value : evaluate(entry.record, { value, ctx }));
      });
    default:
      throw new Error(`unknown stream operator ${entry.op}`);
  }
}

function windowOptions(entry: Entry) {
  const options: Record<string, unknown> = {};
  if (entry.eventTime !== undefined) options.eventTime = fn1(entry.eventTime);
  for (const key of ["gracePeriod", "allowedLateness", "onLate", "idleFlushMs"]) {
    if (entry[key] !== undefined) options[key] = entry[key];
  }
  return options;
}

function gateOf(entry: Entry) {
  const bucket = entry.tokenBucket as { capacity: number; refillPerSec: number } | undefined;
  if (bucket) return tokenBucketGate(bucket);
  const sliding = entry.slidingWindow as { limit: number; windowSeconds: number } | undefined;
  if (sliding) return slidingWindowGate(sliding);
  throw new Error("gate needs tokenBucket or slidingWindow");
}

/** Metrics summed over the earlier stream steps, by `queryId`. */
export type StreamTotals = Map<string, Record<string, number>>;

/** Numeric metrics of `a` and `b` added up. */
function added(a: Record<string, number>, b: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [name, value] of Object.entries(b)) if (typeof value === "number") out[name] = (out[name] ?? 0) + value;
  return out;
}

/** Runs the step's stream until its `until` / `untilAcrossRuns` conditions hold, then stops it. */
export async function runStream(client: Regina, step: Entry, totals: StreamTotals): Promise<Record<string, Json>> {
  const recorded: Recorded = [];
  const stream = buildStream(client, step, recorded);
  const options = step.run as { queryId: string };
  const run: StreamRun = await stream.run(step.run as never);
  const metrics = () => run.metrics() as unknown as Record<string, number>;
  const across = () => added(totals.get(options.queryId) ?? {}, metrics());
  const holds = (wanted: unknown, values: Record<string, number>) =>
    Object.entries((wanted ?? {}) as Record<string, number>).every(([name, least]) => (values[name] ?? 0) >= least);
  const reached = () => holds(step.until, metrics()) && holds(step.untilAcrossRuns, across());
  const deadline = Date.now() + ((step.timeoutMs as number | undefined) ?? 60_000);
  while (!reached() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  await run.stop();
  const done = reached();
  const sums = across();
  totals.set(options.queryId, sums);
  if (!done) throw new Error(`stream did not reach its conditions: ${JSON.stringify(run.metrics())}`);
  return {
    registration: { fresh: run.registration.fresh, reset: run.registration.reset },
    metrics: run.metrics() as unknown as Json,
    acrossRuns: sums,
    results: recorded,
  };
}

/** The `config_hash` of the step's chain. */
export async function streamHash(client: Regina, step: Entry): Promise<Record<string, Json>> {
  return { hash: await buildStream(client, step, []).configHash() };
}
