/**
 * The stream engine without I/O: windows, sessions, aggregates, lateness and the chain rules,
 * computed from messages and state rows.
 */

import { describe, expect, it } from "vitest";
import { Regina, type Message } from "../src/index.js";
import { compileChain, type Stage } from "../src/stream-chain.js";
import { processBatch, windowStarts, type StateRow } from "../src/stream-engine.js";
import { message } from "./fake-streams.js";

const client = new Regina("http://127.0.0.1:9");
/** The stages of a built stream (the engine's input). */
const stagesOf = (stream: unknown) => (stream as { stages: Stage[] }).stages;
const at = (value: { t: number }) => value.t;

function batch(messages: Message[]) {
  return { partition: "a", partitionId: "pid-a", messages };
}

/** Applies a plan's state operations to rows, as the broker would. */
function apply(rows: StateRow[], ops: { type: string; key: string; value?: unknown }[]): StateRow[] {
  const map = new Map(rows.map((row) => [row.key, row.value]));
  for (const op of ops) {
    if (op.type === "upsert") map.set(op.key, JSON.parse(JSON.stringify(op.value)));
    else map.delete(op.key);
  }
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => ({ key, value }));
}

describe("stream engine", () => {
  it("puts an event in every sliding window that covers it", () => {
    const chain = compileChain(
      stagesOf(
        client
          .stream<{ t: number }>("s")
          .windowSliding({ size: 10, slide: 5, eventTime: at })
          .aggregate({ count: () => 1 })
          .map((value, context) => ({ start: context.windowStart, ...value })),
      ),
    );
    const events = [101_000, 106_000, 112_000, 140_000].map((t) => message("a", { t }));
    const plan = processBatch(chain, batch(events), [], 0);
    expect(plan.results.map((result) => result.value)).toEqual([
      { start: 95_000, count: 1 },
      { start: 100_000, count: 2 },
      { start: 105_000, count: 2 },
      { start: 110_000, count: 1 },
    ]);
    expect(plan.stateOps.map((op) => op.key)).toEqual([
      "__wm__",
      "slide:10:5\u001f1970-01-01T00:02:15.000Z\u001fpid-a",
      "slide:10:5\u001f1970-01-01T00:02:20.000Z\u001fpid-a",
    ]);
  });

  it("closes sessions on a gap and on the watermark, and keeps state across batches", () => {
    const chain = compileChain(
      stagesOf(
        client
          .stream<{ u: string; t: number; v: number }>("s")
          .keyBy((value) => value.u)
          .windowSession({ gap: 2, eventTime: at })
          .reduce((sum, value) => sum + value.v, 0),
      ),
    );
    const first = processBatch(
      chain,
      batch([
        message("a", { u: "a", t: 1000, v: 1 }),
        message("a", { u: "b", t: 1200, v: 10 }),
        message("a", { u: "a", t: 1500, v: 2 }),
        message("a", { u: "a", t: 5000, v: 4 }),
      ]),
      [],
      0,
    );
    expect(first.results.map((r) => [r.context.key, r.value, r.context.windowStart, r.context.windowEnd])).toEqual([
      ["a", 3, 1000, 3500],
      ["b", 10, 1200, 3200],
    ]);
    const rows = apply([], first.stateOps);
    expect(rows.map((row) => row.key)).toEqual(["__wm__", "sess:2\u001fopen\u001fa"]);
    const second = processBatch(chain, batch([message("a", { u: "c", t: 9000, v: 100 })]), rows, 0);
    expect(second.results.map((r) => [r.context.key, r.value])).toEqual([["a", 4]]);
    expect(apply(rows, second.stateOps).map((row) => row.key)).toEqual(["__wm__", "sess:2\u001fopen\u001fc"]);
  });

  it("aligns weekly cron windows to Monday and daily ones to midnight UTC", () => {
    const week = compileChain(
      stagesOf(
        client
          .stream("s")
          .windowCron({ every: "week" })
          .reduce(() => 0, 0),
      ),
    ).window!;
    const wednesday = Date.parse("2026-01-07T15:00:00Z");
    expect(windowStarts(week, wednesday).map((start) => new Date(start).toISOString())).toEqual([
      "2026-01-05T00:00:00.000Z",
    ]);
    const day = compileChain(
      stagesOf(
        client
          .stream("s")
          .windowCron({ every: "day" })
          .reduce(() => 0, 0),
      ),
    ).window!;
    expect(windowStarts(day, wednesday)).toEqual([Date.parse("2026-01-07T00:00:00Z")]);
  });

  it("aggregates count, sum, min, max and avg across batches, without its bookkeeping in results", () => {
    const chain = compileChain(
      stagesOf(
        client
          .stream<{ t: number; v: number }>("s")
          .windowTumbling({ seconds: 10, eventTime: at })
          .aggregate({ count: () => 1, sum: (x) => x.v, min: (x) => x.v, max: (x) => x.v, avg: (x) => x.v }),
      ),
    );
    const first = processBatch(chain, batch([message("a", { t: 1, v: 4 }), message("a", { t: 2, v: 1 })]), [], 0);
    expect(first.results).toEqual([]);
    const rows = apply([], first.stateOps);
    const second = processBatch(
      chain,
      batch([message("a", { t: 3, v: 7 }), message("a", { t: 20_000, v: 0 })]),
      rows,
      0,
    );
    expect(second.results.map((r) => r.value)).toEqual([{ count: 3, sum: 12, min: 1, max: 7, avg: 4 }]);
  });

  it("drops or includes events older than the watermark", () => {
    const rows = [{ key: "__wm__", value: { eventTimeMs: 50_000 } }];
    const late = [message("a", { t: 1_000, v: 1 }), message("a", { t: 60_000, v: 2 })];
    for (const onLate of ["drop", "include"] as const) {
      const chain = compileChain(
        stagesOf(
          client
            .stream<{ t: number; v: number }>("s")
            .windowTumbling({ seconds: 10, eventTime: at, onLate })
            .reduce((sum, value) => sum + value.v, 0),
        ),
      );
      const plan = processBatch(chain, batch(late), rows, 0);
      expect(plan.late).toBe(1);
      expect(plan.results.map((r) => r.value)).toEqual(onLate === "drop" ? [] : [1]);
    }
  });

  it("refuses chains that break a rule", () => {
    const s = client.stream<number>("s");
    const id = (value: number) => value;
    const bad = [
      stagesOf(s.windowTumbling({ seconds: 1 }).reduce(id, 0).windowTumbling({ seconds: 1 }).reduce(id, 0)),
      [...stagesOf(s.windowTumbling({ seconds: 1 }).reduce(id, 0)).slice(0, 1), ...stagesOf(s.map(id).to("x"))],
      [...stagesOf(s.to("x")), ...stagesOf(s.map(id))],
      stagesOf(s.flatMap((v) => [v]).gate(() => true)),
      stagesOf(s.gate(() => true).keyBy(String)),
    ];
    for (const stages of bad) expect(() => compileChain(stages)).toThrow(TypeError);
    expect(() => s.windowSliding({ size: 10, slide: 3 })).toThrow(/multiple/);
    expect(() => s.windowTumbling({ seconds: 0.0005 })).toThrow(/milliseconds/);
  });
});
