/**
 * The dashboard in headless Chromium against a real broker and PostgreSQL (started by
 * sdks/run-tests.sh), on data seeded over the API: every page loads and shows that data, and its
 * actions change the broker's state. Pages whose endpoints this broker does not serve (yet) must
 * show the broker's error instead; each test checks which case it is in.
 */

import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import type { Locator, Page } from "playwright-core";
import {
  AUDIT,
  DLQ_ERROR,
  EMAILS,
  FLEET,
  INVOICES,
  LARGE_PARTITIONS,
  ORDER_PARTITIONS,
  ORDERS,
  PAYMENTS,
  TO_CLEAR,
  TO_DELETE,
  TRACE_NAME,
  seed,
  type Seeded,
} from "./seed.js";
import { ack, call, launch, newPage, ok, pop, push, screenshot, served } from "./support.js";

let seeded: Seeded;
let page: Page;
let pageErrors: string[];
let closeBrowser: () => Promise<void>;

before(async () => {
  seeded = await seed();
  const browser = await launch();
  closeBrowser = browser.close;
  ({ page, errors: pageErrors } = await newPage(browser.context));
});

after(async () => {
  await closeBrowser?.();
});

/** The number of queues, as the broker counts them. */
async function queueCount(): Promise<number> {
  return (await ok("GET", "/api/v1/resources/queues?limit=1")).body.pagination.total;
}

/** The big number of a stat box. */
function stat(scope: Page | Locator, label: string): Locator {
  return scope.getByTestId(`stat-${label.toLowerCase().replace(/\W+/g, "-")}`).locator(".stat-value");
}

/** Rows of a table body (without the empty-state row). */
function rows(table: Locator): Locator {
  return table.locator("tbody tr:not(:has(td.empty-cell))");
}

/** Waits until no panel shows data of a previous call (dimmed) while a newer one runs. */
async function settled(): Promise<void> {
  await page.waitForFunction(() => document.querySelector(".stale") === null);
}

/** Opens a path and waits until no request is in flight. */
async function open(path: string): Promise<void> {
  await page.goto(path);
  await page.waitForLoadState("networkidle");
}

/** The `datetime-local` value (browser local time) of an instant. */
function localInput(iso: string): string {
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
}

/** Confirms the open confirmation dialog. */
async function confirm(label: string | RegExp): Promise<void> {
  await page.getByTestId("confirm-dialog").getByRole("button", { name: label }).click();
}

describe("dashboard", () => {
  it("opens on a deep link and survives a reload", async () => {
    await open("/consumer-groups");
    await page.getByRole("heading", { name: "Consumer groups", level: 1 }).waitFor();
    await page.reload();
    await page.getByRole("heading", { name: "Consumer groups", level: 1 }).waitFor();
  });

  it("overview shows health, dead letters, lagging groups and cluster counts", async () => {
    await open("/");
    const health = page.getByTestId("health-panel");
    await health.getByText("healthy", { exact: true }).waitFor();
    await health.getByText("connected", { exact: true }).waitFor();
    await page.getByTestId("dlq-summary").getByText(DLQ_ERROR).first().waitFor();
    assert.equal(await stat(page.getByTestId("dlq-summary"), "Entries").textContent(), "3");
    const groups = page.getByTestId("groups-summary");
    await groups.getByRole("link", { name: "analytics" }).waitFor();
    await groups.getByRole("link", { name: "invoicing" }).waitFor();

    if (await served("/api/v1/resources/overview")) {
      await page.getByTestId("cluster").locator(".stat").first().waitFor();
      assert.equal(await stat(page, "Queues").textContent(), String(await queueCount()));
    } else {
      await page.getByTestId("cluster").getByText("route_not_found").waitFor();
    }
    if (await served("/api/v1/status")) {
      await page.getByTestId("throughput").locator("canvas").first().waitFor();
      // Each instance reports itself every STATS_INTERVAL_MS (1 s here).
      await rows(page.getByTestId("workers").locator("table")).first().waitFor();
    } else {
      await page.getByTestId("throughput").getByText("route_not_found").waitFor();
      await page.getByTestId("workers").getByText("route_not_found").waitFor();
    }
    await screenshot(page, "overview");
  });

  it("queues list filters by name and namespace and pages on the server", async () => {
    const total = await queueCount();
    assert.equal(total, seeded.payment ? 8 : 7);
    await open("/queues");
    const table = page.getByTestId("queues-table");
    for (const name of [ORDERS, INVOICES, AUDIT, EMAILS, FLEET])
      await table.getByRole("link", { name, exact: true }).waitFor();
    await page.getByText(`${total} queues match`).waitFor();
    await screenshot(page, "queues");

    await page.getByLabel("Search").fill("orders");
    await page.waitForURL(/search=orders/);
    await page.getByText("1 queue matches").waitFor();
    assert.deepEqual(await rows(table).locator("td:first-child").allTextContents(), [ORDERS]);

    await page.getByLabel("Search").fill("");
    await page.waitForURL((url) => !url.search.includes("search"));
    await page.getByLabel("Namespace").selectOption("billing");
    await page.getByText("2 queues match").waitFor();
    assert.deepEqual(await rows(table).locator("td:first-child").allTextContents(), [INVOICES, ORDERS]);

    await open("/queues?limit=3");
    await page.getByTestId("pager").getByText(`1–3 of ${total}`).waitFor();
    const firstPage = await rows(table).locator("td:first-child").allTextContents();
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByTestId("pager").getByText(`4–6 of ${total}`).waitFor();
    await settled();
    const secondPage = await rows(table).locator("td:first-child").allTextContents();
    assert.equal(secondPage.length, 3);
    assert.ok(
      secondPage.every((name) => !firstPage.includes(name)),
      `${firstPage} / ${secondPage}`,
    );
  });

  it("queue page shows totals, options, groups and partitions filtered on the server", async () => {
    await open(`/queues/${ORDERS}`);
    const totals = page.getByTestId("queue-totals");
    await totals.locator(".stat").first().waitFor();
    assert.equal(await stat(totals, "Messages").textContent(), "200");
    assert.equal(await stat(totals, "Partitions").textContent(), String(ORDER_PARTITIONS + 1));
    const options = page.getByTestId("queue-options");
    await options.getByText("Retry limit").waitFor();
    assert.equal(await options.locator(".fact", { hasText: "Retry limit" }).locator("dd").textContent(), "3");
    assert.equal(
      await options.locator(".fact", { hasText: "Lease time" }).locator("dd").textContent(),
      "1 min",
    );
    const groups = page.getByTestId("queue-groups");
    await groups.getByRole("link", { name: "invoicing" }).waitFor();
    await groups.getByRole("link", { name: "analytics" }).waitFor();
    const partitions = page.getByTestId("partitions-table");
    await page
      .getByTestId("pager")
      .getByText(`1–25 of ${ORDER_PARTITIONS + 1}`)
      .waitFor();
    assert.equal(await rows(partitions).count(), 25);
    await screenshot(page, "queue");

    await page.getByLabel("Find partition").fill("customer-07");
    await page.getByTestId("pager").getByText("1–1 of 1").waitFor();
    assert.deepEqual(await rows(partitions).locator("td:first-child").allTextContents(), ["customer-07"]);
    assert.equal(await rows(partitions).locator("td").nth(1).textContent(), "5");
  });

  it("a queue with 100 000 partitions opens at once and finds any partition", async (t: TestContext) => {
    t.diagnostic(`seeding ${LARGE_PARTITIONS} partitions took ${seeded.largeSeedSeconds.toFixed(1)} s`);
    const started = performance.now();
    await page.goto(`/queues/${FLEET}`);
    const pager = page.getByTestId("pager");
    await pager.getByText(`1–25 of ${(LARGE_PARTITIONS + 1).toLocaleString("en-US")}`).waitFor();
    const partitionsMillis = performance.now() - started;
    await stat(page.getByTestId("queue-totals"), "Partitions").waitFor();
    const totalsMillis = performance.now() - started;
    await screenshot(page, "queue-100k-partitions");

    const searchStarted = performance.now();
    await page.getByLabel("Find partition").fill("device-099999");
    await pager.getByText("1–1 of 1").waitFor();
    const searchMillis = performance.now() - searchStarted;
    assert.deepEqual(
      await rows(page.getByTestId("partitions-table")).locator("td:first-child").allTextContents(),
      ["device-099999"],
    );

    const lastStarted = performance.now();
    await page.goto(`/queues/${FLEET}?offset=99976`);
    await pager.getByText("99,977–100,001 of 100,001").waitFor();
    const lastPageMillis = performance.now() - lastStarted;
    t.diagnostic(
      `100k-partition queue page: partitions listed in ${Math.round(partitionsMillis)} ms, totals in ${Math.round(totalsMillis)} ms; ` +
        `search ${Math.round(searchMillis)} ms (incl. 300 ms typing pause); last page ${Math.round(lastPageMillis)} ms`,
    );
  });

  it("clearing a queue asks first, then empties it", async () => {
    await open(`/queues/${TO_CLEAR}`);
    await stat(page.getByTestId("queue-totals"), "Messages").getByText("12").waitFor();
    await page.getByTestId("clear-queue").click();
    await page.getByTestId("confirm-dialog").getByText(`Clear queue ${TO_CLEAR}?`).waitFor();
    await screenshot(page, "queue-clear-confirmation");
    await page.getByTestId("confirm-dialog").getByRole("button", { name: "Cancel" }).click();
    assert.equal((await ok("GET", `/api/v1/resources/queues/${TO_CLEAR}`)).body.totals.total, 12);

    // The totals are counted by the stats refresh: the page asks for a pass once the clear is
    // done, so they show the emptied queue without waiting for the page's next reload.
    const recount = page.waitForResponse(
      (r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/api/v1/stats/refresh",
    );
    await page.getByTestId("clear-queue").click();
    await confirm("Clear queue");
    assert.equal((await recount).status(), 200);
    await page.getByTestId("action-done").getByText(`Cleared ${TO_CLEAR}: 12 messages`).waitFor();
    await stat(page.getByTestId("queue-totals"), "Messages").getByText("0", { exact: true }).waitFor();
    assert.equal((await ok("GET", `/api/v1/resources/queues/${TO_CLEAR}`)).body.totals.total, 0);
  });

  it("deleting a queue needs its name typed, then removes it", async () => {
    await open(`/queues/${TO_DELETE}`);
    await page.getByTestId("delete-queue").click();
    const dialog = page.getByTestId("confirm-dialog");
    const button = dialog.getByRole("button", { name: "Delete queue" });
    assert.equal(await button.isDisabled(), true);
    await dialog.getByLabel("Confirmation").fill(TO_DELETE);
    await button.click();
    await page.waitForURL(/\/queues$/);
    await page.getByTestId("queues-table").getByRole("link", { name: ORDERS }).waitFor();
    assert.equal(await page.getByTestId("queues-table").getByRole("link", { name: TO_DELETE }).count(), 0);
    assert.equal((await call("GET", `/api/v1/resources/queues/${TO_DELETE}`)).status, 404);
  });

  it("consumer groups list their lag, and the lagging view lists partitions", async () => {
    await open("/consumer-groups");
    const table = page.getByTestId("groups-table");
    const row = (group: string) =>
      rows(table).filter({ has: page.getByRole("link", { name: group, exact: true }) });
    await row("invoicing").waitFor();
    const expected = (await ok("GET", "/api/v1/consumer-groups")).body;
    for (const group of expected) {
      const cells = await row(group.name === "__QUEUE_MODE__" ? "queue mode" : group.name)
        .filter({ hasText: group.queueName })
        .locator("td")
        .allTextContents();
      assert.equal(cells[4], group.totalLag.toLocaleString("en-US"), `${group.name}: ${cells}`);
    }
    const analytics = expected.find((g: { name: string }) => g.name === "analytics");
    assert.ok(analytics.totalLag > 0);
    await page.getByTestId("pager").getByText(`of ${expected.length}`).waitFor();
    await screenshot(page, "consumer-groups");

    await page.getByRole("link", { name: "Lagging partitions" }).click();
    await page.getByLabel("Lagging more than").selectOption("0");
    const lagging = page.getByTestId("lagging-table");
    await rows(lagging).filter({ hasText: "analytics" }).first().waitFor();
    await screenshot(page, "consumer-groups-lagging");
  });

  it("seeks replay a queue from an instant, skip to the end, and move one partition", async () => {
    // Group `replay` reads every invoice, so it has nothing left.
    const delivered = await pop(INVOICES, "consumerGroup=replay&batch=100&partitions=10");
    assert.equal(delivered.length, 6);
    await ack(delivered, "completed");
    await open("/consumer-groups/replay");
    const panel = page.getByTestId(`group-queue-${INVOICES}`);
    await stat(panel, "Lag").getByText("0", { exact: true }).waitFor();

    await panel
      .getByLabel("Seek to instant")
      .fill(localInput(new Date(Date.parse(seeded.startedAt) - 60_000).toISOString()));
    await panel.getByTestId("seek-time").click();
    await screenshot(page, "consumer-group-seek-confirmation");
    await confirm("Seek");
    await page
      .getByTestId("action-done")
      .getByText(/\d+ partitions updated/)
      .waitFor();
    await stat(panel, "Lag").getByText("6", { exact: true }).waitFor();
    await screenshot(page, "consumer-group");
    const again = await pop(INVOICES, "consumerGroup=replay&batch=100&partitions=10");
    assert.deepEqual(again.map((m) => m.transactionId).sort(), delivered.map((m) => m.transactionId).sort());
    // Hold the lease back: the seek to the end ends it.
    await panel.getByTestId("seek-end").click();
    await confirm("Seek to end");
    await stat(panel, "Lag").getByText("0", { exact: true }).waitFor();
    assert.equal((await pop(INVOICES, "consumerGroup=replay&batch=100")).length, 0);

    const regionRow = rows(panel.locator("table")).filter({ hasText: "region-2" });
    await panel
      .getByLabel("Seek to instant")
      .fill(localInput(new Date(Date.parse(seeded.startedAt) - 60_000).toISOString()));
    await regionRow.getByRole("button", { name: "To instant" }).click();
    await confirm("Seek");
    await regionRow.locator("td").nth(1).getByText("2", { exact: true }).waitFor();
    const region = await pop(INVOICES, "consumerGroup=replay&batch=100&partitions=10");
    assert.deepEqual(
      region.map((m) => m.partition),
      ["region-2", "region-2"],
    );
    await ack(region, "completed");
  });

  it("a group over many partitions lists its most lagging page and counts every partition", async () => {
    const queue = "fleet.lanes";
    const lanes = Array.from({ length: 250 }, (_, i) => `lane-${String(i).padStart(3, "0")}`);
    await push(lanes.flatMap((partition) => [0, 1].map((n) => ({ queue, partition, payload: { n } }))));
    const consumed = await pop(queue, "consumerGroup=wide&batch=500&partitions=250&autoAck=true");
    assert.equal(consumed.length, 500);
    // One new message on the last 50 lanes: they lag, the other 200 do not.
    await push(lanes.slice(200).map((partition) => ({ queue, partition, payload: { n: 2 } })));
    const figures = (await ok("GET", `/api/v1/consumer-groups/wide?queue=${queue}&limit=1`)).body[queue];
    assert.deepEqual([figures.total, figures.totalLag], [250, 50]);

    await open("/consumer-groups/wide");
    const panel = page.getByTestId(`group-queue-${queue}`);
    await stat(panel, "Partitions").getByText("250", { exact: true }).waitFor();
    await stat(panel, "Lag").getByText("50", { exact: true }).waitFor();
    await panel.getByText("The 200 most lagging of 250 partitions are listed.").waitFor();
    const listed = rows(panel.locator("table"));
    assert.equal(await listed.count(), 200);
    // Most lagging first: the 50 lanes with a message left, then the caught-up ones.
    assert.equal(await listed.nth(0).locator("td").nth(1).textContent(), "1");
    assert.equal(await listed.nth(49).locator("td").nth(1).textContent(), "1");
    assert.equal(await listed.nth(50).locator("td").nth(1).textContent(), "0");
    await screenshot(page, "consumer-group-many-partitions");
  });

  it("messages browser filters by queue, partition and status, and opens the payload", async () => {
    await open(`/messages?queue=${ORDERS}`);
    const table = page.getByTestId("messages-table");
    await rows(table).first().waitFor();
    assert.equal(await rows(table).count(), 50);
    await screenshot(page, "messages");

    await page.getByLabel("Partition").fill("customer-01");
    await page.waitForURL(/partition=customer-01/);
    await page.getByTestId("pager").getByText("1–5", { exact: true }).waitFor();
    const partitions = await rows(table).locator("td:nth-child(4)").allTextContents();
    assert.deepEqual(partitions, Array(5).fill("customer-01"));
    for (const status of ["completed", "pending"]) {
      const query = `queue=${ORDERS}&partition=customer-01&status=${status}`;
      const expected = (await ok("GET", `/api/v1/messages?${query}&from=${seeded.startedAt}`)).body.messages
        .length;
      await page.getByLabel("Status").selectOption(status);
      await page.waitForURL(new RegExp(`status=${status}`));
      await page
        .getByTestId("pager")
        .getByText(expected ? `1–${expected}` : "0", { exact: true })
        .waitFor();
      assert.equal(await rows(table).count(), expected);
    }
    assert.equal(
      (await ok("GET", `/api/v1/messages?queue=${ORDERS}&partition=customer-01&from=${seeded.startedAt}`))
        .body.messages.length,
      5,
    );

    await open(`/messages?queue=${ORDERS}&partition=customer-01`);
    await rows(table).filter({ hasText: "order-1" }).first().waitFor();
    await page.getByRole("link", { name: /^order-1$/ }).click();
    await page.waitForURL(/\/messages\/[^/]+\/order-1$/);
    const payload = page.getByTestId("payload-json");
    await payload.getByText(`"${seeded.order.marker}"`).waitFor();
    assert.match((await payload.textContent()) ?? "", /"customer": "customer-01"/);
    const groups = page.getByTestId("message-groups");
    await groups.getByRole("link", { name: "invoicing" }).waitFor();
    await screenshot(page, "message");
  });

  it("an encrypted queue's payload is shown decrypted", async (t: TestContext) => {
    if (!seeded.payment) return t.skip("the broker has no encryption key");
    await open(`/messages/${seeded.payment.partitionId}/${seeded.payment.transactionId}`);
    await page.getByTestId("payload-json").getByText('"4111-XXXX-XXXX-1111"').waitFor();
    await page.getByTestId("payload").getByText("encrypted at rest").waitFor();
    await screenshot(page, "message-encrypted");
    assert.equal(PAYMENTS, "secure.payments");
  });

  it("a message moves to a group's dead-letter queue, and is deleted", async () => {
    const listed = (await ok("GET", `/api/v1/messages?queue=${ORDERS}&partition=customer-40`)).body.messages;
    const [first, second] = listed;
    await open(`/messages/${first.partitionId}/${first.transactionId}`);
    await page.getByTestId("move-to-dlq").click();
    const dialog = page.getByTestId("confirm-dialog");
    await dialog.getByLabel("Consumer group").selectOption("analytics");
    await dialog.getByLabel("Reason").fill("bad customer record");
    await confirm("Move to DLQ");
    await page.getByTestId("action-done").getByText("Moved to the dead-letter queue of analytics").waitFor();
    const dlq = (await ok("GET", `/api/v1/dlq?queue=${ORDERS}&consumerGroup=analytics`)).body;
    assert.equal(dlq.total, 1);
    assert.equal(dlq.messages[0].errorMessage, "bad customer record");

    await open(`/messages/${second.partitionId}/${second.transactionId}`);
    await page.getByTestId("delete-message").click();
    await confirm("Delete message");
    await page.waitForURL(/\/messages\?queue=/);
    assert.equal(
      (await call("GET", `/api/v1/messages/${second.partitionId}/${second.transactionId}`)).status,
      404,
    );
  });

  it("dead letters list with a total, show the payload, and requeue to a consumer", async () => {
    await open("/dlq");
    await page.getByText("4 entries match").waitFor();
    const table = page.getByTestId("dlq-table");
    assert.equal(await rows(table).filter({ hasText: DLQ_ERROR }).count(), 3);
    await screenshot(page, "dlq");

    await page.getByLabel("Queue").fill(EMAILS);
    await page.getByText("3 entries match").waitFor();
    const entry = rows(table).filter({ hasText: seeded.deadLetters[0] });
    await entry.getByRole("button", { name: "View" }).click();
    const dialog = page.getByTestId("dlq-entry");
    await dialog.getByTestId("dlq-payload").getByText('"user1@example.com"').waitFor();
    await screenshot(page, "dlq-entry");
    await dialog.getByRole("button", { name: "Requeue for mailer" }).click();
    await page.getByTestId("action-done").getByText(`Requeued ${seeded.deadLetters[0]} for mailer`).waitFor();
    await page.getByText("2 entries match").waitFor();
    assert.equal(await rows(table).filter({ hasText: seeded.deadLetters[0] }).count(), 0);

    // The requeued message is delivered to its group again.
    const redelivered = await pop(EMAILS, "consumerGroup=mailer&batch=10");
    assert.ok(
      redelivered.some((m) => m.transactionId === seeded.deadLetters[0]),
      JSON.stringify(redelivered.map((m) => m.transactionId)),
    );
    await ack(redelivered, "completed");
  });

  it("traces list names, events of a name, and a message's timeline", async () => {
    await open("/traces");
    if (!seeded.traced) {
      await page.getByTestId("trace-names").getByText("route_not_found").waitFor();
      await screenshot(page, "traces");
      return;
    }
    const names = page.getByTestId("trace-names-table");
    const row = rows(names).filter({ hasText: TRACE_NAME });
    await row.waitFor();
    assert.equal(await row.locator("td").nth(1).textContent(), "3");
    await screenshot(page, "traces");
    await row.getByRole("link", { name: TRACE_NAME }).click();
    const events = page.getByTestId("trace-events-table");
    await rows(events).first().waitFor();
    assert.equal(await rows(events).count(), 3);
    await rows(events).first().getByRole("button", { name: "Timeline" }).click();
    const timeline = page.getByTestId("message-traces").locator(".timeline li .badge");
    await timeline.nth(2).waitFor();
    assert.deepEqual(await timeline.allTextContents(), ["received", "validated", "sent"]);
    await screenshot(page, "trace-timeline");
  });

  it("maintenance switches flip the cluster's state, and the buffer is shown", async () => {
    await open("/maintenance");
    const push = page.getByTestId("push-switch");
    const popSwitch = page.getByTestId("pop-switch");
    await push.getByText("off", { exact: true }).waitFor();
    await page.getByTestId("buffer").getByText("Pending records").waitFor();

    await push.getByRole("button", { name: "Turn on…" }).click();
    await confirm("Turn on");
    await push.getByText("on", { exact: true }).waitFor();
    assert.equal((await ok("GET", "/api/v1/system/maintenance")).body.maintenanceMode, true);
    await popSwitch.getByRole("button", { name: "Turn on…" }).click();
    await confirm("Turn on");
    await popSwitch.getByText("on", { exact: true }).waitFor();
    assert.equal((await ok("GET", "/api/v1/system/maintenance/pop")).body.popMaintenanceMode, true);
    await page.getByTestId("health").getByText("pop maintenance").waitFor();
    await screenshot(page, "maintenance");

    await push.getByRole("button", { name: "Turn off" }).click();
    await push.getByText("off", { exact: true }).waitFor();
    await popSwitch.getByRole("button", { name: "Turn off" }).click();
    await popSwitch.getByText("off", { exact: true }).waitFor();
    const state = (await ok("GET", "/api/v1/system/maintenance")).body;
    assert.deepEqual([state.maintenanceMode, state.popMaintenanceMode], [false, false]);

    await page.getByTestId("refresh-stats").click();
    if (await served("/api/v1/stats/refresh"))
      await page
        .getByTestId("action-done")
        .getByText(/Statistics refreshed|Skipped/)
        .waitFor();
    else await page.getByTestId("stats-refresh").getByText("route_not_found").waitFor();
  });

  it("streams page lists a registered query with its state size and last cycle", async () => {
    const name = `e2e-stream-${Date.now()}`;
    const registered = await ok("POST", "/streams/v1/queries", {
      name,
      source_queue: "e2e-stream-src",
      sink_queue: "e2e-stream-sink",
      config_hash: "shape-1",
    });
    assert.equal(registered.body.fresh, true);
    const queryId: string = registered.body.query_id;
    await ok("POST", "/streams/v1/cycle", {
      query_id: queryId,
      partition_id: "0196a000-0000-7000-8000-00000000e2e1",
      state_ops: [
        {
          type: "upsert",
          key: "tumb:60\u001f2026-01-01T00:00:00.000Z\u001fk",
          value: { acc: 3, windowEnd: 1 },
        },
        { type: "upsert", key: "__wm__", value: { eventTimeMs: 1 } },
      ],
      push_items: [{ queue: "e2e-stream-sink", payload: { sum: 3 } }],
    });
    // `/streams` itself is the streams API prefix, never a dashboard route.
    await open("/stream-queries");
    const table = page.getByTestId("stream-queries-table");
    const row = rows(table).filter({ hasText: name });
    await row.waitFor();
    const cells = row.locator("td");
    assert.equal(await cells.nth(2).textContent(), "e2e-stream-src");
    assert.equal(await cells.nth(3).textContent(), "e2e-stream-sink");
    assert.equal(await cells.nth(4).textContent(), "2", "state rows");
    assert.equal(await cells.nth(6).textContent(), "1", "shards");
    assert.equal(await cells.nth(7).textContent(), "1", "cycles");
    assert.notEqual(await cells.nth(8).textContent(), "—", "last cycle shown");
    await screenshot(page, "streams");
  });

  it("a failed call shows the broker's error and code", async () => {
    await open("/queues/no-such-queue");
    const error = page.getByTestId("error").first();
    await error.getByText("queue_not_found").waitFor();
    await error.getByText("Queue not found").waitFor();
    await screenshot(page, "error-state");
  });

  it("no page raised an uncaught error", () => {
    assert.deepEqual(pageErrors, []);
  });
});
