/**
 * Administrative calls against the live broker: queues, message lookup, DLQ and requeue, consumer
 * groups and seeks, health and metrics.
 */

import { describe, expect, it } from "vitest";
import type { Message } from "../src/index.js";
import { client, delay, uniqueName } from "./helpers.js";

describe("health and metrics", () => {
  it("health and metrics describe the instance", async () => {
    const regina = client();
    expect(await regina.admin.health()).toMatchObject({ status: "healthy", database: "connected", server: "Regina" });
    const metrics = await regina.admin.metrics();
    expect(metrics.requests.total).toBeGreaterThan(0);
  });
});

describe("queues", () => {
  it("lists, describes and deletes a queue", async () => {
    const regina = client();
    const name = uniqueName("admin-queue");
    await regina.queue(name).config({ retryLimit: 7 }).create();
    await regina.queue(name).partition("p").push({ payload: 1 });

    const list = await regina.admin.queues({ search: name });
    expect(list.queues.map((queue) => queue.name)).toEqual([name]);
    expect(list.pagination.total).toBe(1);

    const detail = await regina.admin.queue(name);
    expect(detail.options.retryLimit).toBe(7);
    expect(detail.partitions.map((partition) => partition.name).sort()).toEqual(["Default", "p"]);

    expect(await regina.queue(name).delete()).toMatchObject({ deleted: true, existed: true });
    expect(await regina.queue(name).delete()).toMatchObject({ existed: false });
    await expect(regina.admin.queue(name)).rejects.toMatchObject({ code: "queue_not_found", status: 404 });
  });
});

describe("messages and DLQ", () => {
  it("looks a message up by partition and transaction id", async () => {
    const regina = client();
    const queue = regina.queue(uniqueName("admin-message"));
    await queue.push({ payload: { look: "me up" }, transactionId: "m1" });
    const [message] = (await queue.pop()) as [Message];
    const detail = await regina.admin.message(message);
    expect(detail).toMatchObject({ transactionId: "m1", payload: { look: "me up" }, status: "processing" });
    await expect(
      regina.admin.message({ partitionId: message.partitionId, transactionId: "nope" }),
    ).rejects.toMatchObject({
      code: "message_not_found",
    });
  });

  it("lists a dead-lettered message and requeues it for its group", async () => {
    const regina = client();
    const name = uniqueName("admin-dlq");
    const queue = regina.queue(name);
    await queue.config({ retryLimit: 0 }).create();
    await queue.push({ payload: "poison", transactionId: "p1" });
    const [message] = (await queue.group("g").pop()) as [Message];
    await regina.ack(message, "failed", { error: "bad input" });

    const dlq = await regina.admin.dlq({ queue: name });
    expect(dlq.total).toBe(1);
    expect(dlq.messages[0]).toMatchObject({
      transactionId: "p1",
      consumerGroup: "g",
      errorMessage: "bad input",
      data: "poison",
    });

    const requeued = await regina.admin.requeue(dlq.messages[0] as (typeof dlq.messages)[0]);
    expect(requeued.consumerGroups).toEqual(["g"]);
    expect((await regina.admin.dlq({ queue: name })).total).toBe(0);
    const again = await queue.group("g").pop();
    expect(again.map((entry) => [entry.transactionId, entry.retryCount])).toEqual([["p1", 0]]);
    await expect(regina.admin.requeue(message)).rejects.toMatchObject({ code: "not_in_dlq", status: 404 });
  });
});

describe("consumer groups", () => {
  it("seeks a group on one partition only", async () => {
    const regina = client();
    const name = uniqueName("admin-partition-seek");
    const queue = regina.queue(name);
    await queue.partition("a").push([{ payload: "a1" }]);
    await queue.partition("b").push([{ payload: "b1" }]);
    const seek = await regina.admin.seekPartition("g", name, "a");
    expect(seek).toMatchObject({ success: true, consumerGroup: "g", queueName: name, partitionName: "a" });
    const messages = await queue.group("g").batch(10).partitions(2).autoAck().pop();
    expect(messages.map((message) => message.data)).toEqual(["b1"]);
  });

  it("lists a group, seeks it and deletes it", async () => {
    const regina = client();
    const name = uniqueName("admin-groups");
    const queue = regina.queue(name);
    await queue.push([{ payload: "old" }]);
    await delay(30);
    const between = new Date();
    await delay(30);
    await queue.push([{ payload: "new" }]);
    expect((await queue.group("g").batch(10).autoAck().pop()).map((entry) => entry.data)).toEqual(["old", "new"]);

    const groups = await regina.admin.consumerGroups();
    expect(groups.items.some((row) => row.name === "g" && row.queueName === name)).toBe(true);
    expect(Object.keys(await regina.admin.consumerGroup("g"))).toContain(name);
    const page = await regina.admin.consumerGroup("g", { queue: name, limit: 1, sort: "lag" });
    expect(Object.keys(page)).toEqual([name]);
    expect(page[name]).toMatchObject({ total: 1, totalLag: 0, leased: 0 });
    expect(page[name]?.partitions).toHaveLength(1);

    const seek = await regina.admin.seek("g", name, { timestamp: between });
    expect(seek).toMatchObject({ success: true, seekToEnd: false });
    expect((await queue.group("g").batch(10).autoAck().pop()).map((entry) => entry.data)).toEqual(["new"]);

    await regina.admin.seek("g", name, { toEnd: true });
    await queue.push([{ payload: "after the end" }]);
    expect((await queue.group("g").batch(10).autoAck().pop()).map((entry) => entry.data)).toEqual(["after the end"]);

    const deleted = await regina.admin.deleteConsumerGroup("g", { queue: name });
    expect(deleted).toMatchObject({ success: true, consumerGroup: "g" });
    const replay = await queue.group("g").batch(10).autoAck().pop();
    expect(replay.map((entry) => entry.data)).toEqual(["old", "new", "after the end"]);
  });
});
