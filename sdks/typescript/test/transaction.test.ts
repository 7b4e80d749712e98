/**
 * Transactions against the live broker: atomic ack + push, stale leases, idempotent retries.
 */

import { describe, expect, it } from "vitest";
import { ReginaError, type Message } from "../src/index.js";
import { client, uniqueName } from "./helpers.js";

describe("transaction", () => {
  it("acks and pushes together", async () => {
    const regina = client();
    const source = regina.queue(uniqueName("tx-source"));
    const target = regina.queue(uniqueName("tx-target"));
    await source.push([{ payload: { step: 1 } }]);
    const [message] = (await source.group("stage").pop()) as [Message];
    const result = await regina
      .transaction()
      .ack(message)
      .queue(target.name)
      .partition("p")
      .push([{ payload: { step: 2 }, transactionId: "next-1" }])
      .commit();
    expect(result.success).toBe(true);
    expect(result.results.map((entry) => [entry.type, entry.success])).toEqual([
      ["ack", true],
      ["push", true],
    ]);
    expect(await source.group("stage").pop()).toEqual([]);
    const moved = await target.partition("p").autoAck().pop();
    expect(moved.map((entry) => [entry.data, entry.transactionId])).toEqual([[{ step: 2 }, "next-1"]]);
  });

  it("with a stale lease nothing is applied and the error is typed", async () => {
    const regina = client();
    const source = regina.queue(uniqueName("tx-stale"));
    const target = regina.queue(uniqueName("tx-stale-target"));
    await source.push([{ payload: 1 }]);
    const [message] = (await source.pop()) as [Message];
    await regina.ack(message, "retry");
    const error = await regina
      .transaction()
      .ack(message)
      .queue(target.name)
      .push({ payload: "must not appear" })
      .commit()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaError);
    expect(error).toMatchObject({ code: "lease_expired", status: 409 });
    expect(Array.isArray((error as ReginaError).results)).toBe(true);
    expect(await target.pop()).toEqual([]);
  });

  it("committing the same transaction again is an idempotent success", async () => {
    const regina = client();
    const source = regina.queue(uniqueName("tx-retry"));
    const target = regina.queue(uniqueName("tx-retry-target"));
    await source.push([{ payload: 1 }]);
    const [message] = (await source.pop()) as [Message];
    const transaction = regina.transaction().ack(message).queue(target.name).push({ payload: "once" });
    const first = await transaction.commit();
    const second = await transaction.commit();
    expect(first.results.map((entry) => ("status" in entry ? entry.status : entry.success))).toEqual([true, "queued"]);
    expect(second.results.map((entry) => ("status" in entry ? entry.status : entry.success))).toEqual([
      true,
      "duplicate",
    ]);
    expect((await target.batch(10).autoAck().pop()).map((entry) => entry.data)).toEqual(["once"]);
  });

  it("a consumer does not ack again what its handler's transaction settled", async () => {
    const paths: string[] = [];
    const regina = client({
      fetch: (input, init) => {
        paths.push(new URL(String(input)).pathname);
        return fetch(input, init);
      },
    });
    const source = regina.queue(uniqueName("tx-consume"));
    const target = regina.queue(uniqueName("tx-consume-target"));
    await source.push([{ payload: "a" }, { payload: "b" }]);
    const errors: unknown[] = [];
    await source
      .batch(2)
      .each()
      .limit(2)
      .consume(
        (message) =>
          regina
            .transaction()
            .ack(message)
            .queue(target.name)
            .push({ payload: message.data, transactionId: `copy-${message.transactionId}` })
            .commit(),
        { onError: (error) => errors.push(error) },
      );
    expect(errors).toEqual([]);
    expect(paths.filter((path) => path.startsWith("/api/v1/ack"))).toEqual([]);
    expect(paths.filter((path) => path === "/api/v1/transaction")).toHaveLength(2);
    expect((await target.batch(10).autoAck().pop()).map((entry) => entry.data)).toEqual(["a", "b"]);
  });
});
