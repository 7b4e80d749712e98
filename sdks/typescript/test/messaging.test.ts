/**
 * Push, pop, ack, lease renewal, the client-side buffer and typed errors against the live broker.
 */

import { describe, expect, it } from "vitest";
import { ReginaError, type Message, type PushResult } from "../src/index.js";
import { client, delay, uniqueName } from "./helpers.js";

describe("push", () => {
  it("assigns a transactionId to items without one and reports duplicates", async () => {
    const queue = client().queue(uniqueName("push")).partition("p");
    const results = await queue.push([
      { payload: { n: 1 } },
      { payload: { n: 2 }, transactionId: "fixed", traceId: "trace-7" },
    ]);
    expect(results.map((result) => result.status)).toEqual(["queued", "queued"]);
    expect(results[0]?.transactionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(results[1]).toMatchObject({ index: 1, transactionId: "fixed", traceId: "trace-7" });
    expect(results[1]?.messageId).toBeTruthy();
    expect(results[1]?.partitionId).toBeTruthy();

    const again = await queue.push({ payload: "ignored", transactionId: "fixed" });
    expect(again).toMatchObject([{ status: "duplicate", transactionId: "fixed", messageId: results[1]?.messageId }]);
  });

  it("a push over maxSize is a queue_full error that tells what was stored", async () => {
    const queue = client().queue(uniqueName("full"));
    await queue.config({ maxSize: 1 }).create();
    const error = await queue.push([{ payload: 1 }, { payload: 2 }]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaError);
    expect(error).toMatchObject({ code: "queue_full", status: 429 });
    const results = (error as ReginaError).results as PushResult[];
    expect(results.map((result) => [result.status, result.code])).toEqual([
      ["queued", undefined],
      ["failed", "queue_full"],
    ]);
    expect((await queue.batch(10).pop()).map((message) => message.data)).toEqual([1]);
  });

  it("an invalid item is a validation_failed error naming the field and index", async () => {
    const queue = client().queue(uniqueName("invalid"));
    const error = await queue
      .push([{ payload: 1 }, { payload: 2, traceId: "x".repeat(200) }])
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "validation_failed", status: 400, index: 1, field: "items[1].traceId" });
  });
});

describe("pop and ack", () => {
  it("pops in partition order with every message field, and acks them", async () => {
    const regina = client();
    const name = uniqueName("pop");
    const queue = regina.queue<{ n: number }>(name);
    await queue.partition("a").push([{ payload: { n: 1 }, traceId: "t-1" }, { payload: { n: 2 } }]);
    const messages = await queue.group("g").batch(10).pop();
    expect(messages.map((message) => message.data)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(messages[0]).toMatchObject({
      queue: name,
      partition: "a",
      consumerGroup: "g",
      traceId: "t-1",
      retryCount: 0,
    });
    expect(messages[0]?.leaseId).toBeTruthy();
    expect(messages[0]?.createdAt).toMatch(/Z$/);

    const results = await regina.ack(messages);
    expect(results.map((result) => result.success)).toEqual([true, true]);
    expect(results[1]?.leaseReleased).toBe(true);
    expect(await queue.group("g").pop()).toEqual([]);
  });

  it("a single ack goes through /ack and reports in-band failures", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("ack"));
    await queue.push([{ payload: "x" }]);
    const [message] = await queue.pop();
    const first = await regina.ack(message as Message);
    expect(first).toMatchObject({ success: true, leaseReleased: true });
    const again = await regina.ack(message as Message, "failed", { error: "too late" });
    expect(again).toMatchObject({ success: false, code: "already_settled" });
  });

  it("an ack under a forged lease is rejected in-band with lease_expired", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("forged"));
    await queue.push([{ payload: "x" }]);
    const [message] = await queue.pop();
    const forged = { ...(message as Message), leaseId: "01900000-0000-7000-8000-000000000000" };
    expect(await regina.ack(forged)).toMatchObject({ success: false, code: "lease_expired" });
  });

  it("ackBatch applies a status per message: completed, then failed redelivers the rest", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("ackbatch"));
    await queue.config({ retryLimit: 5 }).create();
    await queue.push([{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const [m1, m2, m3] = (await queue.batch(3).pop()) as [Message, Message, Message];
    const results = await regina.ackBatch([
      { message: m1, status: "completed" },
      { message: m2, status: "failed", error: "boom" },
      { message: m3, status: "completed" },
    ]);
    expect(results.map((result) => [result.success, result.code])).toEqual([
      [true, null],
      [true, null],
      [false, "lease_expired"],
    ]);
    const redelivered = await queue.batch(3).pop();
    expect(redelivered.map((message) => [message.data, message.retryCount])).toEqual([
      [2, 1],
      [3, 0],
    ]);
  });

  it("autoAck settles on delivery: the message is not delivered again", async () => {
    const queue = client().queue(uniqueName("autoack"));
    await queue.push([{ payload: "once" }]);
    const [message] = await queue.autoAck().pop();
    expect(message?.leaseId).toBe("");
    expect(await queue.pop()).toEqual([]);
  });

  it("a group with subscriptionMode new sees only later messages", async () => {
    const queue = client().queue(uniqueName("subscription"));
    await queue.push([{ payload: "before" }]);
    expect(await queue.group("late").subscriptionMode("new").pop()).toEqual([]);
    await queue.push([{ payload: "after" }]);
    const messages = await queue.group("late").subscriptionMode("new").batch(10).pop();
    expect(messages.map((message) => message.data)).toEqual(["after"]);
  });

  it("a long-poll returns as soon as a message arrives", async () => {
    const queue = client().queue(uniqueName("longpoll"));
    // The broker of the suite re-checks parked pops only on events (LONGPOLL_RECHECK_MS=0), and the
    // timeout is beyond the test's: only the push can answer this pop with the message.
    const popping = queue.wait().timeoutMillis(60_000).pop();
    await delay(200);
    await queue.push([{ payload: "now" }]);
    const messages = await popping;
    expect(messages.map((message) => message.data)).toEqual(["now"]);
  });

  it("an out-of-range batch is an invalid_parameter error", async () => {
    await expect(client().queue(uniqueName("batch")).batch(0).pop()).rejects.toMatchObject({
      name: "ReginaError",
      code: "invalid_parameter",
      status: 400,
      field: "batch",
    });
  });
});

describe("lease renewal", () => {
  it("renew extends the lease of a message; an ended lease cannot be renewed", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("renew"));
    await queue.config({ leaseTime: 30 }).create();
    await queue.push([{ payload: "slow" }]);
    const [message] = (await queue.pop()) as [Message];
    const before = Date.now();
    const renewed = await regina.renew(message, { seconds: 120 });
    const after = Date.now();
    expect(renewed.success).toBe(true);
    // 120 s from the moment the broker renewed it, which lies between `before` and `after` (one
    // clock; a millisecond of rounding either way).
    const expiresAt = Date.parse(renewed.expiresAt ?? "");
    expect(expiresAt).toBeGreaterThanOrEqual(before + 120_000 - 1);
    expect(expiresAt).toBeLessThanOrEqual(after + 120_000 + 1);
    await regina.ack(message);
    expect(await regina.renew(message.leaseId)).toMatchObject({ success: false, code: "lease_expired" });
  });
});

describe("client-side buffer", () => {
  it("a timed buffer pushes by itself, in order", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("buffer-time")).partition("b");
    const buffered = queue.buffer({ messageCount: 100, timeMillis: 150 });
    for (const n of [1, 2, 3]) expect(await buffered.push({ payload: n })).toEqual([]);
    expect(await queue.batch(10).pop()).toEqual([]);
    await delay(600);
    const messages = await queue.batch(10).autoAck().pop();
    expect(messages.map((message) => message.data)).toEqual([1, 2, 3]);
    await regina.close();
  });

  it("keeps order over count-triggered pushes and flush, per partition", async () => {
    const regina = client();
    const name = uniqueName("buffer-count");
    const pushes: Promise<unknown>[] = [];
    for (let n = 0; n < 25; n += 1) {
      const partition = n % 2 === 0 ? "even" : "odd";
      pushes.push(
        regina.queue(name).partition(partition).buffer({ messageCount: 4, timeMillis: 60_000 }).push({ payload: n }),
      );
    }
    await Promise.all(pushes);
    await regina.queue(name).flush();
    const even = await regina.queue(name).partition("even").batch(100).autoAck().pop();
    const odd = await regina.queue(name).partition("odd").batch(100).autoAck().pop();
    expect(even.map((message) => message.data)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24]);
    expect(odd.map((message) => message.data)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]);
    await regina.close();
  });

  it("a failed flush keeps the items; the next flush stores each of them once", async () => {
    const name = uniqueName("buffer-retry");
    const live = client();
    let failing = true;
    const regina = client({
      retries: 0,
      fetch: (input, init) => (failing ? Promise.reject(new TypeError("network down")) : fetch(input, init)),
    });
    const buffered = regina.queue(name).buffer({ messageCount: 2, timeMillis: 60_000 });
    await buffered.push({ payload: "a" });
    await expect(buffered.push({ payload: "b" })).rejects.toMatchObject({ name: "ReginaNetworkError" });
    failing = false;
    await regina.flush();
    const messages = await live.queue(name).batch(10).autoAck().pop();
    expect(messages.map((message) => message.data)).toEqual(["a", "b"]);
    await regina.close();
  });
});
