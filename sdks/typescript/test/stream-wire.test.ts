/**
 * The stream runner's requests, against a local stand-in of the broker: what each operator sends
 * in its cycles, how state is seeded and written, retries, and the registration errors.
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Regina, ReginaError, tokenBucketGate, type StreamRun } from "../src/index.js";
import { FakeStreams, message, type Seen } from "./fake-streams.js";

const FAST = { retryBaseMillis: 1, retryMaxMillis: 5 };
let fake: FakeStreams;
let client: Regina;

beforeEach(async () => {
  fake = new FakeStreams();
  client = new Regina({ url: await fake.start(), ...FAST });
});

afterEach(async () => {
  await fake.stop();
});

/** Waits until `done()` holds (checked every 10 ms, for at most 10 s). */
async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 10_000) throw new Error("condition not reached");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs until the fake saw `count` cycles, then stops. */
async function runUntilCycles(run: StreamRun, count: number): Promise<Seen[]> {
  await until(() => fake.requests("/streams/v1/cycle").length >= count);
  await run.stop();
  return fake.requests("/streams/v1/cycle");
}

describe("stateless streams", () => {
  it("routes filter + map + to(sink) through one cycle per partition of a pop", async () => {
    const a1 = message("a", { n: 1 });
    const a2 = message("a", { n: 2 });
    const b1 = message("b", { n: 3 });
    const a3 = message("a", { n: 4 });
    fake.pops.push([a1, a2, b1, a3]);
    const run = await client
      .stream<{ n: number }>("source")
      .filter((value) => value.n !== 2)
      .map((value, context) => ({ doubled: value.n * 2, from: context.partition }))
      .to("sink")
      .run({ queryId: "q" });
    const cycles = await runUntilCycles(run, 2);

    const registration = fake.requests("/streams/v1/queries")[0]?.body;
    expect(registration).toMatchObject({ name: "q", source_queue: "source", sink_queue: "sink", reset: false });
    expect(registration?.config_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(fake.requests("/streams/v1/state/get")).toHaveLength(0);
    expect(cycles.map((cycle) => cycle.body.partition_id)).toEqual(["pid-a", "pid-b"]);
    const [first, second] = cycles.map((cycle) => cycle.body);
    expect(first).toMatchObject({
      query_id: run.registration.queryId,
      consumer_group: "streams.q",
      state_ops: [],
      ack: { transactionId: a3.transactionId, leaseId: "lease-1", status: "completed", count: 3 },
    });
    expect(first?.release_lease).toBeUndefined();
    const items = first?.push_items as Record<string, unknown>[];
    expect(items.map((item) => [item.queue, item.partition, item.payload])).toEqual([
      ["sink", "a", { doubled: 2, from: "a" }],
      ["sink", "a", { doubled: 8, from: "a" }],
    ]);
    expect(items.every((item) => typeof item.transactionId === "string" && item.transactionId !== "")).toBe(true);
    expect(second?.ack).toMatchObject({ transactionId: b1.transactionId, count: 1 });
    expect(run.metrics()).toMatchObject({ cyclesTotal: 2, messagesTotal: 4, pushItemsTotal: 3, errorsTotal: 0 });
    const pop = fake.seen.find((request) => request.path.startsWith("/api/v1/pop/queue/source"));
    expect(pop).toBeDefined();
  });

  it("flatMap, keyBy and a computed sink partition", async () => {
    fake.pops.push([message("a", "x y")]);
    const run = await client
      .stream<string>("source")
      .flatMap((text) => text.split(" "))
      .keyBy((word) => word)
      .to("sink", { partition: (word, context) => `${context.key}-${word}` })
      .run({ queryId: "q" });
    const [cycle] = await runUntilCycles(run, 1);
    const items = cycle?.body.push_items as Record<string, unknown>[];
    expect(items.map((item) => [item.partition, item.payload])).toEqual([
      ["x-x", "x"],
      ["y-y", "y"],
    ]);
  });

  it("foreach runs before the cycle, which only acks", async () => {
    fake.pops.push([message("a", 1), message("a", 2)]);
    const seen: unknown[] = [];
    const run = await client
      .stream("source")
      .foreach(async (value) => {
        seen.push(value);
        expect(fake.requests("/streams/v1/cycle")).toHaveLength(0);
      })
      .run({ queryId: "q" });
    const [cycle] = await runUntilCycles(run, 1);
    expect(seen).toEqual([1, 2]);
    expect(cycle?.body).toMatchObject({ push_items: [], state_ops: [], ack: { count: 2 } });
  });

  it("a failing operator acks the batch failed on its first message and reports the error", async () => {
    const first = message("a", 1);
    fake.pops.push([first, message("a", 2)]);
    const errors: string[] = [];
    const run = await client
      .stream<number>("source")
      .map((value) => {
        if (value === 2) throw new Error("bad value");
        return value;
      })
      .to("sink")
      .run({ queryId: "q", onError: (error, context) => errors.push(`${context.phase}:${(error as Error).message}`) });
    await until(() => fake.requests("/api/v1/ack").length === 1);
    await run.stop();
    expect(fake.requests("/streams/v1/cycle")).toHaveLength(0);
    expect(fake.requests("/api/v1/ack")[0]?.body).toMatchObject({
      transactionId: first.transactionId,
      partitionId: "pid-a",
      leaseId: "lease-1",
      status: "failed",
      error: "bad value",
    });
    expect(errors).toEqual(["process:bad value"]);
    expect(run.metrics()).toMatchObject({ errorsTotal: 1, lastError: "bad value", cyclesTotal: 0 });
  });
});

describe("stopping", () => {
  it("an aborted signal stops the run, and a refused pop ends it with the error", async () => {
    const controller = new AbortController();
    const run = await client.stream("source").to("sink").run({ queryId: "q", signal: controller.signal });
    controller.abort();
    await expect(run.done).resolves.toBeUndefined();

    fake.fail("/api/v1/pop/queue/source", {
      status: 400,
      body: { error: "batch must be at least 1", code: "invalid_parameter" },
    });
    const refused = await client.stream("source").to("sink").run({ queryId: "q" });
    const error = await refused.done.catch((caught: unknown) => caught);
    expect((error as ReginaError).code).toBe("invalid_parameter");
  });
});

describe("retries and errors", () => {
  it("retries a cycle answered 503, 429 and 408 with the same body", async () => {
    fake.pops.push([message("a", 1)]);
    const busy = (status: number) => ({ status, body: { success: false, error: "busy", code: "overloaded" } });
    fake.fail("/streams/v1/cycle", busy(503), busy(429), busy(408));
    const run = await client.stream("source").to("sink").run({ queryId: "q" });
    const cycles = await runUntilCycles(run, 4);
    expect(cycles).toHaveLength(4);
    expect(new Set(cycles.map((cycle) => JSON.stringify(cycle.body))).size).toBe(1);
    expect(run.metrics()).toMatchObject({ cyclesTotal: 1, errorsTotal: 0 });
  });

  it("does not retry another 4xx, and a 2xx with success false is a failure", async () => {
    fake.pops.push([message("a", 1)], [message("a", 2)]);
    fake.fail(
      "/streams/v1/cycle",
      { status: 400, body: { success: false, error: "Unknown state_op type: x", code: "validation_failed" } },
      { status: 200, body: { success: false, error: "refused", code: "internal" } },
    );
    const errors: unknown[] = [];
    const run = await client
      .stream("source")
      .to("sink")
      .run({ queryId: "q", onError: (error) => errors.push(error) });
    await until(() => fake.requests("/api/v1/ack").length === 2);
    await run.stop();
    expect(fake.requests("/streams/v1/cycle")).toHaveLength(2);
    expect(errors.map((error) => (error as ReginaError).code)).toEqual(["validation_failed", "internal"]);
  });

  it("turns a 409 registration into config_hash_mismatch with a hint, and reset is accepted", async () => {
    await (
      await client
        .stream("source")
        .map((v) => v)
        .to("sink")
        .run({ queryId: "q" })
    ).stop();
    const changed = client
      .stream("source")
      .filter(() => true)
      .to("sink");
    const error = await changed.run({ queryId: "q" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaError);
    expect((error as ReginaError).code).toBe("config_hash_mismatch");
    expect((error as ReginaError).status).toBe(409);
    expect((error as ReginaError).message).toContain("config_hash mismatch");
    expect((error as ReginaError).message).toContain("reset: true");
    const run = await changed.run({ queryId: "q", reset: true });
    expect(run.registration).toMatchObject({ fresh: false, reset: true });
    await run.stop();
  });
});

describe("windows", () => {
  it("seeds from state, emits closed windows, upserts open ones and deletes seeded closed ones", async () => {
    const queryId = "00000000-0000-4000-8000-000000000001";
    const shard = fake.shard(queryId, "pid-a");
    const SEP = "\u001f";
    shard.set(`tumb:10${SEP}2026-01-01T00:00:00.000Z${SEP}pid-a`, {
      acc: 5,
      windowStart: Date.parse("2026-01-01T00:00:00Z"),
      windowEnd: Date.parse("2026-01-01T00:00:10Z"),
    });
    fake.pops.push([message("a", 1, "2026-01-01T00:00:04Z"), message("a", 2, "2026-01-01T00:00:12Z")]);
    const run = await client
      .stream<number>("source")
      .windowTumbling({ seconds: 10, idleFlushMs: 0 })
      .reduce((sum, value) => sum + value, 0)
      .to("sink")
      .run({ queryId: "q" });
    const [cycle] = await runUntilCycles(run, 1);
    expect(fake.requests("/streams/v1/state/get")[0]?.body).toEqual({
      query_id: queryId,
      partition_id: "pid-a",
      keys: [],
    });
    expect(cycle?.body.state_ops).toEqual([
      { type: "delete", key: `tumb:10${SEP}2026-01-01T00:00:00.000Z${SEP}pid-a` },
      {
        type: "upsert",
        key: `tumb:10${SEP}2026-01-01T00:00:10.000Z${SEP}pid-a`,
        value: {
          acc: 2,
          windowStart: Date.parse("2026-01-01T00:00:10Z"),
          windowEnd: Date.parse("2026-01-01T00:00:20Z"),
        },
      },
    ]);
    expect((cycle?.body.push_items as { payload: unknown }[]).map((item) => item.payload)).toEqual([6]);
  });

  it("keeps the watermark in __wm__ and drops events older than it", async () => {
    const queryId = "00000000-0000-4000-8000-000000000001";
    fake.shard(queryId, "pid-a").set("__wm__", { eventTimeMs: 5_000 });
    fake.pops.push([message("a", { t: 4_000 }), message("a", { t: 6_000 }), message("a", { t: 21_000 })]);
    const run = await client
      .stream<{ t: number }>("source")
      .windowTumbling({ seconds: 10, eventTime: (value) => value.t, allowedLateness: 1, idleFlushMs: 0 })
      .aggregate({ count: () => 1, max: (value) => value.t })
      .to("sink")
      .run({ queryId: "q" });
    const [cycle] = await runUntilCycles(run, 1);
    expect(cycle?.body.state_ops).toContainEqual({ type: "upsert", key: "__wm__", value: { eventTimeMs: 20_000 } });
    expect((cycle?.body.push_items as { payload: unknown }[]).map((item) => item.payload)).toEqual([
      { count: 1, max: 6_000 },
    ]);
    expect(run.metrics().lateEventsTotal).toBe(1);
  });

  it("the idle flush reads ripe rows by prefix and commits an ack-less cycle", async () => {
    const queryId = "00000000-0000-4000-8000-000000000001";
    fake.pops.push([message("a", 3, new Date().toISOString())]);
    const run = await client
      .stream<number>("source")
      .windowTumbling({ seconds: 1, idleFlushMs: 50 })
      .reduce((sum, value) => sum + value, 0)
      .to("sink")
      .run({ queryId: "q" });
    await until(() => fake.requests("/streams/v1/cycle").some((cycle) => cycle.body.ack === null));
    await run.stop();
    const flushRead = fake.requests("/streams/v1/state/get").find((request) => request.body.key_prefix !== undefined);
    expect(flushRead?.body).toMatchObject({ query_id: queryId, partition_id: "pid-a", key_prefix: "tumb:1\u001f" });
    expect(typeof flushRead?.body.ripe_at_or_before).toBe("number");
    const flush = fake.requests("/streams/v1/cycle").find((cycle) => cycle.body.ack === null);
    expect(flush?.body.state_ops).toEqual([{ type: "delete", key: expect.stringMatching(/^tumb:1\u001f/) }]);
    expect((flush?.body.push_items as { payload: unknown }[]).map((item) => item.payload)).toEqual([3]);
    expect(run.metrics().flushCyclesTotal).toBe(1);
  });
});

describe("gate", () => {
  it("commits the allowed prefix with release_lease false and parks the tail", async () => {
    const batch = [1, 2, 3, 4].map((n) => message("a", n));
    fake.pops.push(batch);
    const run = await client
      .stream("source")
      .gate(tokenBucketGate({ capacity: 2, refillPerSec: 0.001 }))
      .to("sink")
      .run({ queryId: "q" });
    const [cycle] = await runUntilCycles(run, 1);
    expect(cycle?.body).toMatchObject({
      release_lease: false,
      ack: { transactionId: batch[1]?.transactionId, count: 2, status: "completed" },
    });
    expect((cycle?.body.push_items as { payload: unknown }[]).map((item) => item.payload)).toEqual([1, 2]);
    expect(cycle?.body.state_ops).toEqual([
      { type: "upsert", key: "pid-a", value: expect.objectContaining({ tokens: expect.any(Number) }) },
    ]);
    expect(run.metrics()).toMatchObject({ gateAllowsTotal: 2, gateDenialsTotal: 1 });
  });

  it("sends no cycle when the gate allows nothing", async () => {
    fake.pops.push([message("a", 1)], [message("a", 2)]);
    const run = await client
      .stream("source")
      .gate(() => false)
      .to("sink")
      .run({ queryId: "q" });
    await until(() => run.metrics().gateDenialsTotal === 2);
    await run.stop();
    expect(fake.requests("/streams/v1/cycle")).toHaveLength(0);
  });
});
