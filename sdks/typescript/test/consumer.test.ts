/**
 * The consumer loop against the live broker: acking, failures, limits, idling, graceful stop,
 * lease renewal and concurrency.
 */

import { describe, expect, it } from "vitest";
import type { Message } from "../src/index.js";
import { client, delay, uniqueName } from "./helpers.js";

describe("consume", () => {
  it("acks completed after a batch handler returns", async () => {
    const queue = client().queue(uniqueName("batch-ok"));
    await queue.push([{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const batches: unknown[][] = [];
    const summary = await queue
      .batch(10)
      .idleMillis(300)
      .consume((messages) => {
        batches.push(messages.map((message) => message.data));
      });
    expect(batches).toEqual([[1, 2, 3]]);
    expect(summary).toEqual({ messages: 3, failures: 0, stoppedBy: "idle" });
    expect(await queue.batch(10).pop()).toEqual([]);
  });

  it("acks failed with the handler's error text; the DLQ keeps the text", async () => {
    const regina = client();
    const name = uniqueName("each-fail");
    const queue = regina.queue(name);
    await queue.config({ retryLimit: 0 }).create();
    await queue.push([
      { payload: "good", transactionId: "g" },
      { payload: "bad", transactionId: "b" },
    ]);
    const errors: unknown[] = [];
    const summary = await queue
      .group("workers")
      .batch(10)
      .each()
      .idleMillis(500)
      .consume(
        (message) => {
          if (message.data === "bad") throw new Error("cannot handle bad");
        },
        { onError: (error) => errors.push(error) },
      );
    expect(summary).toEqual({ messages: 2, failures: 1, stoppedBy: "idle" });
    expect(errors).toHaveLength(1);
    const dlq = await regina.admin.dlq({ queue: name, consumerGroup: "workers" });
    expect(dlq.messages.map((entry) => [entry.transactionId, entry.errorMessage, entry.data])).toEqual([
      ["b", "cannot handle bad", "bad"],
    ]);
  });

  it("each() stops a partition at its first failure and the rest is redelivered in order", async () => {
    const queue = client().queue(uniqueName("each-order"));
    await queue.config({ retryLimit: 3 }).create();
    await queue.push([{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const seen: [unknown, number][] = [];
    let failed = false;
    await queue
      .batch(10)
      .each()
      .idleMillis(500)
      .consume((message) => {
        seen.push([message.data, message.retryCount]);
        if (message.data === 2 && !failed) {
          failed = true;
          throw new Error("once");
        }
      });
    expect(seen).toEqual([
      [1, 0],
      [2, 0],
      [2, 1],
      [3, 0],
    ]);
  });

  it("each() keeps going in the other partitions of a batch after a failure in one", async () => {
    const queue = client().queue(uniqueName("each-partitions"));
    await queue.config({ retryLimit: 3 }).create();
    await queue.partition("p1").push([{ payload: "a1" }, { payload: "a2" }]);
    await queue.partition("p2").push([{ payload: "b1" }, { payload: "b2" }]);
    const seen: unknown[] = [];
    const errors: unknown[] = [];
    await queue
      .batch(10)
      .partitions(2)
      .each()
      .idleMillis(500)
      .consume(
        (message) => {
          seen.push(message.data);
          if (message.data === "a1" && seen.length === 1) throw new Error("first try fails");
        },
        { onError: (error) => errors.push(error) },
      );
    expect(seen).toEqual(["a1", "b1", "b2", "a1", "a2"]);
    expect(errors).toHaveLength(1);
  });

  it("a batch handler that throws charges the first message of the batch", async () => {
    const queue = client().queue(uniqueName("batch-fail"));
    await queue.config({ retryLimit: 3 }).create();
    await queue.push([{ payload: "a" }, { payload: "b" }]);
    const calls: [unknown, number][][] = [];
    await queue
      .batch(10)
      .limit(4)
      .idleMillis(1_000)
      .consume((messages) => {
        calls.push(messages.map((message) => [message.data, message.retryCount]));
        if (calls.length === 1) throw new Error("whole batch fails");
      });
    expect(calls).toEqual([
      [
        ["a", 0],
        ["b", 0],
      ],
      [
        ["a", 1],
        ["b", 0],
      ],
    ]);
  });

  it("limit stops after exactly that many messages, leaving the rest queued", async () => {
    const queue = client().queue(uniqueName("limit"));
    await queue.push([1, 2, 3, 4, 5].map((n) => ({ payload: n })));
    const seen: unknown[] = [];
    const summary = await queue
      .batch(2)
      .each()
      .limit(3)
      .consume((message) => {
        seen.push(message.data);
      });
    expect(seen).toEqual([1, 2, 3]);
    expect(summary.stoppedBy).toBe("limit");
    expect((await queue.batch(10).pop()).map((message) => message.data)).toEqual([4, 5]);
  });

  it("idleMillis stops a consumer of an empty queue on time", async () => {
    const started = Date.now();
    // Its long-polls would last two minutes: only idleMillis can end the consumer sooner.
    const summary = await client()
      .queue(uniqueName("idle"))
      .timeoutMillis(120_000)
      .idleMillis(400)
      .consume(() => undefined);
    expect(summary).toEqual({ messages: 0, failures: 0, stoppedBy: "idle" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(Date.now() - started).toBeLessThan(120_000);
  });

  it("autoAck consumes without acks, at most once", async () => {
    const queue = client().queue(uniqueName("consume-autoack"));
    await queue.push([{ payload: 1 }, { payload: 2 }]);
    const seen: unknown[] = [];
    await queue
      .autoAck()
      .batch(10)
      .each()
      .idleMillis(300)
      .consume((message) => {
        seen.push(message.data);
        throw new Error("ignored: already settled");
      });
    expect(seen).toEqual([1, 2]);
    expect(await queue.batch(10).pop()).toEqual([]);
  });

  it("messages the handler settled itself are not acked again", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("self-ack"));
    await queue.config({ retryLimit: 3 }).create();
    await queue.push([{ payload: "x" }]);
    const errors: unknown[] = [];
    await queue
      .each()
      .limit(1)
      .consume(
        async (message) => {
          const result = await regina.ack(message, "retry");
          expect(result.success).toBe(true);
        },
        { onError: (error) => errors.push(error) },
      );
    // The handler's `retry` released the message; an automatic `completed` would have settled it.
    expect(errors).toEqual([]);
    expect((await queue.pop()).map((message) => [message.data, message.retryCount])).toEqual([["x", 0]]);
  });
});

describe("graceful stop", () => {
  it("aborting finishes and acks the running handler and gives back what was not started", async () => {
    const queue = client().queue(uniqueName("stop"));
    await queue.config({ leaseTime: 300 }).create();
    await queue.push([{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const controller = new AbortController();
    const seen: unknown[] = [];
    const summary = await queue
      .batch(3)
      .each()
      .consume(
        async (message) => {
          seen.push(message.data);
          controller.abort();
          await delay(200);
        },
        { signal: controller.signal },
      );
    expect(seen).toEqual([1]);
    expect(summary).toEqual({ messages: 1, failures: 0, stoppedBy: "signal" });
    // Message 1 was acked; 2 and 3 were released at once (not after the 300 s lease).
    expect((await queue.batch(10).pop()).map((message) => message.data)).toEqual([2, 3]);
  });

  it("aborting a consumer parked in a long-poll returns promptly", async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 200);
    // The long-poll would last two minutes: returning sooner means the abort ended it.
    const summary = await client()
      .queue(uniqueName("stop-idle"))
      .timeoutMillis(120_000)
      .consume(() => undefined, { signal: controller.signal });
    expect(summary.stoppedBy).toBe("signal");
    expect(Date.now() - started).toBeLessThan(120_000);
  });

  it("an already aborted signal pops nothing", async () => {
    const queue = client().queue(uniqueName("stop-before"));
    await queue.push([{ payload: 1 }]);
    const seen: Message[] = [];
    const summary = await queue.consume((messages) => void seen.push(...messages), { signal: AbortSignal.abort() });
    expect(summary).toEqual({ messages: 0, failures: 0, stoppedBy: "signal" });
    expect(seen).toEqual([]);
    expect(await queue.pop()).toHaveLength(1);
  });
});

describe("lease renewal and concurrency", () => {
  it("renewLease keeps a long handler's lease alive", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("renew-loop"));
    await queue.config({ leaseTime: 1 }).create();
    await queue.push([{ payload: "long" }]);
    const errors: unknown[] = [];
    const summary = await queue
      .group("g")
      .renewLease(true, 300)
      .limit(1)
      .consume(() => delay(2_500), { onError: (error) => errors.push(error) });
    expect(summary.messages).toBe(1);
    expect(errors).toEqual([]);
    // Acked under a live lease: nothing comes back.
    expect(await queue.group("g").wait().timeoutMillis(1_500).pop()).toEqual([]);
  });

  it("concurrency runs handlers in parallel, each message once", async () => {
    const queue = client().queue(uniqueName("parallel"));
    const partitions = ["p0", "p1", "p2", "p3"];
    for (const partition of partitions) {
      await queue.partition(partition).push([{ payload: `${partition}-a` }, { payload: `${partition}-b` }]);
    }
    let running = 0;
    let peak = 0;
    const seen: unknown[] = [];
    const summary = await queue
      .concurrency(3)
      .batch(2)
      .limit(8)
      .consume(async (messages) => {
        running += 1;
        peak = Math.max(peak, running);
        seen.push(...messages.map((message) => message.data));
        await delay(150);
        running -= 1;
      });
    expect(summary.messages).toBe(8);
    expect(peak).toBeGreaterThan(1);
    expect([...seen].sort()).toEqual(partitions.flatMap((partition) => [`${partition}-a`, `${partition}-b`]));
  });
});
