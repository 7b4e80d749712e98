/**
 * How the consumer loop treats broker failures, against a scripted local server: transient ones
 * (5xx, network) are reported and the loop goes on; a refused pop (4xx) ends `consume` with it.
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Regina, ReginaError } from "../src/index.js";
import { FakeServer } from "./fake-server.js";

const MESSAGE = {
  id: "m1",
  transactionId: "t1",
  traceId: null,
  data: "hello",
  producerSub: null,
  createdAt: "2026-05-10T09:00:01.123456Z",
  partitionId: "p-id",
  partition: "Default",
  queue: "q",
  leaseId: "lease-1",
  consumerGroup: "g",
  retryCount: 0,
};
const POPPED = {
  success: true,
  queue: "q",
  partition: "Default",
  partitionId: "p-id",
  leaseId: "lease-1",
  messages: [MESSAGE],
};
const ACKED = [
  { index: 0, transactionId: "t1", success: true, error: null, code: null, leaseReleased: true, dlq: false },
];

let server: FakeServer;
let url: string;

beforeEach(async () => {
  server = new FakeServer();
  url = await server.start();
});

afterEach(async () => {
  await server.stop();
});

describe("consumer and broker failures", () => {
  it("reports a failing pop and keeps consuming", async () => {
    server.script(
      { status: 503, body: { error: "Database unavailable", code: "database_unavailable" } },
      { status: 200, body: POPPED },
      { status: 200, body: ACKED },
      { status: 204 },
    );
    const client = new Regina({ url, retries: 0 });
    const errors: unknown[] = [];
    const seen: unknown[] = [];
    const summary = await client
      .queue("q")
      .group("g")
      .each()
      .idleMillis(300)
      .consume((message) => void seen.push(message.data), { onError: (error) => errors.push(error) });
    expect(seen).toEqual(["hello"]);
    expect(summary).toMatchObject({ messages: 1, stoppedBy: "idle" });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: "database_unavailable", status: 503 });
    const ack = server.requests.find((request) => request.url === "/api/v1/ack");
    expect(JSON.parse(ack?.body ?? "{}")).toEqual({
      transactionId: "t1",
      partitionId: "p-id",
      leaseId: "lease-1",
      consumerGroup: "g",
      status: "completed",
    });
  });

  it("reports an ack the broker rejected in-band", async () => {
    server.script(
      { status: 200, body: POPPED },
      {
        status: 200,
        body: [{ ...ACKED[0], success: false, error: "Invalid or expired lease", code: "lease_expired" }],
      },
      { status: 204 },
    );
    const errors: unknown[] = [];
    await new Regina({ url, retries: 0 })
      .queue("q")
      .idleMillis(200)
      .consume(() => undefined, { onError: (error) => errors.push(error) });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ReginaError);
    expect(errors[0]).toMatchObject({ code: "lease_expired" });
  });

  it("a refused pop ends consume with the typed error", async () => {
    server.script({ status: 403, body: { error: "Insufficient permissions", code: "forbidden" } });
    const consuming = new Regina({ url, retries: 3 }).queue("q").consume(() => undefined);
    await expect(consuming).rejects.toMatchObject({ code: "forbidden", status: 403 });
    expect(server.requests).toHaveLength(1);
  });
});
