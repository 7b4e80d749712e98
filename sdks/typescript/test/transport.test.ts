/**
 * Retries, backoff, failover, timeouts, tokens and error mapping, against scripted local servers.
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Regina, ReginaError, ReginaNetworkError, ReginaTimeoutError } from "../src/index.js";
import { FakeServer } from "./fake-server.js";

const DEAD_URL = "http://127.0.0.1:9";
const QUEUED = (index: number, transactionId: string) => ({
  index,
  transaction_id: transactionId,
  status: "queued",
  message_id: "m",
  partition_id: "p",
  trace_id: null,
  queueName: "q",
});
const FAST = { retryBaseMillis: 5, retryMaxMillis: 20 };

let first: FakeServer;
let second: FakeServer;
let firstUrl: string;
let secondUrl: string;

beforeEach(async () => {
  first = new FakeServer();
  second = new FakeServer();
  firstUrl = await first.start();
  secondUrl = await second.start();
});

afterEach(async () => {
  await first.stop();
  await second.stop();
});

describe("retries", () => {
  it("retries a 503 and succeeds on a later attempt", async () => {
    first.script(
      { status: 503, body: { error: "Database unavailable", code: "database_unavailable" } },
      { status: 503, body: { error: "Database unavailable", code: "database_unavailable" } },
      { status: 200, body: { configured: true, created: false } },
    );
    const client = new Regina({ url: firstUrl, retries: 3, ...FAST });
    const result = await client.queue("q").create();
    expect(result.created).toBe(false);
    expect(first.requests).toHaveLength(3);
  });

  it("never retries a 4xx and maps the error body to a typed error", async () => {
    first.script({
      status: 400,
      body: { error: "Queue must be a string", code: "validation_failed", field: "items[2].queue", index: 2 },
      headers: { "X-Request-Id": "req-1" },
    });
    const client = new Regina({ url: firstUrl, retries: 3, ...FAST });
    const error = await client
      .queue("q")
      .push([{ payload: 1 }])
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaError);
    expect(error).toMatchObject({
      code: "validation_failed",
      status: 400,
      message: "Queue must be a string",
      field: "items[2].queue",
      index: 2,
      requestId: "req-1",
    });
    expect(first.requests).toHaveLength(1);
  });

  it("gives up after the configured retries with the last error", async () => {
    first.script({ status: 503, body: { error: "Broker is shutting down", code: "shutting_down" } });
    const client = new Regina({ url: firstUrl, retries: 2, ...FAST });
    const error = await client
      .queue("q")
      .pop()
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "ReginaError", code: "shutting_down", status: 503 });
    expect(first.requests).toHaveLength(3);
  });

  it("does not retry 501 (a reserved route stays reserved)", async () => {
    first.script({ status: 501, body: { error: "Streams API is not available", code: "not_implemented" } });
    const client = new Regina({ url: firstUrl, retries: 3, ...FAST });
    await expect(client.admin.overview()).rejects.toMatchObject({ code: "not_implemented", status: 501 });
    expect(first.requests).toHaveLength(1);
  });

  it("backs off exponentially between attempts on one server", async () => {
    first.script({ status: 503, body: { error: "x", code: "overloaded" } });
    const client = new Regina({ url: firstUrl, retries: 3, retryBaseMillis: 40, retryMaxMillis: 1_000 });
    const started = Date.now();
    await client
      .queue("q")
      .pop()
      .catch(() => undefined);
    // Equal jitter: at least half of 40 + 80 + 160 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(first.requests).toHaveLength(4);
  });

  it("waits at least Retry-After before retrying a 503", async () => {
    first.script(
      { status: 503, body: { error: "x", code: "overloaded" }, headers: { "Retry-After": "1" } },
      { status: 204 },
    );
    const client = new Regina({ url: firstUrl, retries: 1, retryBaseMillis: 1, retryMaxMillis: 5_000 });
    const started = Date.now();
    expect(await client.queue("q").pop()).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("a push retried after a dropped connection sends the same transactionIds", async () => {
    first.script({ drop: true }, { status: 201, body: [QUEUED(0, "from-server")] });
    const client = new Regina({ url: firstUrl, retries: 2, ...FAST });
    await client.queue("q").push([{ payload: { n: 1 } }, { payload: { n: 2 }, transactionId: "mine" }]);
    expect(first.requests).toHaveLength(2);
    const [attempt1, attempt2] = first.requests.map(
      (request) => JSON.parse(request.body) as { items: { transactionId: string }[] },
    );
    const ids = attempt1?.items.map((item) => item.transactionId);
    expect(ids?.[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ids?.[1]).toBe("mine");
    expect(attempt2?.items.map((item) => item.transactionId)).toEqual(ids);
  });
});

describe("failover", () => {
  it("moves to the next server on a network error and stays there", async () => {
    second.script({ status: 204 });
    const client = new Regina({ servers: [DEAD_URL, secondUrl], retries: 1, ...FAST });
    expect(await client.queue("q").pop()).toEqual([]);
    expect(await client.queue("q").pop()).toEqual([]);
    expect(second.requests).toHaveLength(2);
  });

  it("moves to the next server on a 5xx without waiting, and prefers the one that answered", async () => {
    first.script({ status: 503, body: { error: "x", code: "shutting_down" } });
    second.script({ status: 204 });
    // A backoff would last at least 30 s (half of 60 s, equal jitter): returning sooner shows none.
    const client = new Regina({
      servers: [firstUrl, secondUrl],
      retries: 3,
      retryBaseMillis: 60_000,
      retryMaxMillis: 60_000,
    });
    const started = Date.now();
    await client.queue("q").pop();
    await client.queue("q").pop();
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(2);
  });

  it("reports a network error when no server answers", async () => {
    const client = new Regina({ servers: [DEAD_URL], retries: 1, ...FAST });
    const error = await client
      .queue("q")
      .pop()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaNetworkError);
    expect(error).not.toBeInstanceOf(ReginaTimeoutError);
    expect((error as ReginaNetworkError).url).toContain(DEAD_URL);
  });
});

describe("timeouts", () => {
  it("a slow answer is a timeout error, retried", async () => {
    first.script({ status: 204, delayMillis: 500 });
    const client = new Regina({ url: firstUrl, retries: 1, timeoutMillis: 100, ...FAST });
    const error = await client
      .queue("q")
      .pop()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReginaTimeoutError);
    expect((error as ReginaTimeoutError).timeoutMillis).toBe(100);
    expect(first.requests).toHaveLength(2);
  });

  it("a long-poll's request timeout is its pop timeout plus the margin", async () => {
    first.script({ status: 204, delayMillis: 400 });
    const client = new Regina({ url: firstUrl, retries: 0, timeoutMillis: 100, longPollMarginMillis: 300 });
    expect(await client.queue("q").wait().timeoutMillis(300).pop()).toEqual([]);
    expect(first.requests[0]?.url).toContain("wait=true");
    expect(first.requests[0]?.url).toContain("timeout=300");
  });

  it("the caller's signal cancels a request and its backoff", async () => {
    first.script({ status: 503, body: { error: "x", code: "overloaded" } });
    // The backoff would last at least 30 s (half of 60 s, equal jitter): ending sooner shows the
    // abort cancelled it.
    const client = new Regina({ url: firstUrl, retries: 5, retryBaseMillis: 60_000, retryMaxMillis: 60_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const error = await client
      .queue("q")
      .pop({ signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect((error as Error).name).toBe("AbortError");
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe("requests and answers", () => {
  it("sends the bearer token, from a string or a function", async () => {
    first.script({ status: 204 });
    await new Regina({ url: firstUrl, token: "secret" }).queue("q").pop();
    let calls = 0;
    await new Regina({ url: firstUrl, token: async () => `fresh-${++calls}` }).queue("q").pop();
    expect(first.requests.map((request) => request.headers.authorization)).toEqual(["Bearer secret", "Bearer fresh-1"]);
  });

  it("treats 204 and 200 with no messages alike", async () => {
    first.script(
      { status: 204 },
      {
        status: 200,
        body: { success: true, queue: "q", partitionId: null, leaseId: null, messages: [], reason: "empty" },
      },
    );
    const client = new Regina({ url: firstUrl });
    expect(await client.queue("q").pop()).toEqual([]);
    expect(await client.queue("q").pop()).toEqual([]);
  });

  it("encodes names in paths and pop settings in the query", async () => {
    first.script({ status: 204 });
    const client = new Regina({ url: `${firstUrl}/` });
    await client
      .queue("a/b c")
      .partition("p?1")
      .group("g&h")
      .batch(5)
      .autoAck()
      .subscriptionFrom(new Date("2026-05-10T09:00:00Z"))
      .pop();
    const url = first.requests[0]?.url ?? "";
    expect(url.startsWith("/api/v1/pop/queue/a%2Fb%20c/partition/p%3F1?")).toBe(true);
    const query = new URLSearchParams(url.split("?")[1]);
    expect(Object.fromEntries(query)).toEqual({
      batch: "5",
      wait: "false",
      consumerGroup: "g&h",
      autoAck: "true",
      subscriptionFrom: "2026-05-10T09:00:00.000Z",
    });
  });

  it("an error answer without a JSON body has the code http_error", async () => {
    first.script({ status: 502, body: "<html>bad gateway</html>" });
    const client = new Regina({ url: firstUrl, retries: 0 });
    await expect(client.queue("q").pop()).rejects.toMatchObject({ code: "http_error", status: 502 });
  });

  it("a push answered 429 is a queue_full error carrying every item's result", async () => {
    first.script({
      status: 429,
      headers: { "Retry-After": "1" },
      body: [
        QUEUED(0, "a"),
        {
          index: 1,
          transaction_id: "b",
          status: "failed",
          queueName: "q",
          error: "Queue is full (maxSize 1)",
          code: "queue_full",
        },
      ],
    });
    const client = new Regina({ url: firstUrl, retries: 3 });
    const error = (await client
      .queue("q")
      .push([{ payload: 1 }, { payload: 2 }])
      .catch((caught: unknown) => caught)) as ReginaError;
    expect(error).toMatchObject({ code: "queue_full", status: 429, message: "Queue is full (maxSize 1)" });
    expect(error.results).toEqual([
      {
        index: 0,
        transactionId: "a",
        status: "queued",
        messageId: "m",
        partitionId: "p",
        traceId: null,
        queueName: "q",
      },
      {
        index: 1,
        transactionId: "b",
        status: "failed",
        queueName: "q",
        error: "Queue is full (maxSize 1)",
        code: "queue_full",
      },
    ]);
    expect(first.requests).toHaveLength(1);
  });

  it("an unhealthy broker's health answer is a value, not an error", async () => {
    first.script({ status: 503, body: { status: "unhealthy", database: "disconnected" } });
    const client = new Regina({ url: firstUrl, retries: 0 });
    expect(await client.admin.health()).toMatchObject({ status: "unhealthy" });
  });

  it("bare-array listings report X-Total-Count as the total", async () => {
    first.script({ status: 200, body: [{ name: "g" }], headers: { "X-Total-Count": "42" } });
    const client = new Regina({ url: firstUrl });
    const page = await client.admin.consumerGroups({ limit: 1 });
    expect(page).toEqual({ items: [{ name: "g" }], total: 42 });
    expect(first.requests[0]?.url).toBe("/api/v1/consumer-groups?limit=1");
  });
});
