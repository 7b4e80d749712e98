/**
 * Real data for the browser tests, made over the HTTP API: queues in several namespaces, many
 * partitions, consumer groups with lag, dead letters, traces, an encrypted queue and one queue
 * with 100 000 partitions. Run alone (`REGINA_URL=… npx tsx e2e/seed.ts`) to fill a broker for a
 * look at the dashboard.
 */

import { ack, call, ok, pop, push } from "./support.js";

/**
 * Partitions of the large queue, and items per push request: each request creates that many
 * partitions in one transaction, so it stays well inside the statement timeout of a busy machine.
 */
export const LARGE_PARTITIONS = 100_000;
const PUSH_CHUNK = 5_000;

export const ORDERS = "billing.orders";
export const INVOICES = "billing.invoices";
export const AUDIT = "audit.events";
export const EMAILS = "emails";
export const PAYMENTS = "secure.payments";
export const FLEET = "fleet.telemetry";
export const TO_CLEAR = "scratch.clear-me";
export const TO_DELETE = "scratch.delete-me";
export const ORDER_PARTITIONS = 40;
export const ORDERS_PER_PARTITION = 5;
export const DLQ_ERROR = "SMTP 550 mailbox unavailable";
export const TRACE_NAME = "invoice-flow";

/** What the seed made, for the tests to look for. */
export interface Seeded {
  startedAt: string;
  /** Transaction ids of the dead letters of `emails` (group `mailer`). */
  deadLetters: string[];
  /** An order message: its partition id and transaction id, and its payload's marker. */
  order: { partitionId: string; transactionId: string; marker: string };
  /** A message of the encrypted queue, when the broker has an encryption key. */
  payment: { partitionId: string; transactionId: string } | null;
  /** An invoice message with trace events, when the broker serves traces. */
  traced: { partitionId: string; transactionId: string } | null;
  /** Seconds the 100 000-partition push took. */
  largeSeedSeconds: number;
}

export async function seed(): Promise<Seeded> {
  const startedAt = new Date().toISOString();
  await configure(ORDERS, { leaseTime: 60, retryLimit: 3 });
  await configure(INVOICES, { retryLimit: 5 });
  await configure(AUDIT, { priority: 5 });
  await configure(EMAILS, { retryLimit: 0 });
  await configure(TO_CLEAR, {});
  await configure(TO_DELETE, {});

  const orders = await push(
    Array.from({ length: ORDER_PARTITIONS * ORDERS_PER_PARTITION }, (_, i) => {
      const customer = `customer-${String((i % ORDER_PARTITIONS) + 1).padStart(2, "0")}`;
      return {
        queue: ORDERS,
        partition: customer,
        transactionId: `order-${i + 1}`,
        payload: { orderId: i + 1, customer, amount: 10 + (i % 7) * 5, marker: `order-marker-${i + 1}` },
      };
    }),
  );
  const first = orders[0];
  await push(
    Array.from({ length: 30 }, (_, i) => ({ queue: AUDIT, payload: { event: "login", user: `user-${i}` } })),
  );
  await push(
    Array.from({ length: 12 }, (_, i) => ({ queue: TO_CLEAR, partition: `p-${i % 3}`, payload: { i } })),
  );
  await push([{ queue: TO_DELETE, payload: { doomed: true } }]);

  // Group `invoicing` consumes part of the orders; `analytics` only starts: both lag.
  await ack(await pop(ORDERS, "consumerGroup=invoicing&batch=60&partitions=20"), "completed");
  await ack(await pop(ORDERS, "consumerGroup=analytics&batch=1"), "completed");

  // `mailer` fails three emails; with retryLimit 0 each goes to the dead-letter queue at once.
  await push(
    Array.from({ length: 4 }, (_, i) => ({
      queue: EMAILS,
      partition: "smtp",
      transactionId: `email-${i + 1}`,
      payload: { to: `user${i + 1}@example.com`, subject: `Welcome ${i + 1}` },
    })),
  );
  const deadLetters: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    const messages = await pop(EMAILS, "consumerGroup=mailer&batch=1");
    await ack(messages, "failed", DLQ_ERROR);
    deadLetters.push(messages[0].transactionId);
  }

  const payment = await seedEncrypted();
  const traced = await seedInvoices();

  const largeStarted = performance.now();
  await seedLarge();
  const largeSeedSeconds = (performance.now() - largeStarted) / 1000;

  // The status feeds come from stats the leader refreshes; refresh them now where served.
  await call("POST", "/api/v1/stats/refresh", {});
  return {
    startedAt,
    deadLetters,
    order: { partitionId: first.partition_id, transactionId: first.transaction_id, marker: "order-marker-1" },
    payment,
    traced,
    largeSeedSeconds,
  };
}

async function configure(queue: string, options: Record<string, unknown>): Promise<void> {
  await ok("POST", "/api/v1/configure", { queue, options });
}

async function seedEncrypted(): Promise<Seeded["payment"]> {
  const reply = await call("POST", "/api/v1/configure", {
    queue: PAYMENTS,
    options: { encryptionEnabled: true },
  });
  if (reply.status === 400 && reply.body?.code === "encryption_unavailable") return null;
  if (reply.status > 201) throw new Error(`configure ${PAYMENTS}: ${JSON.stringify(reply.body)}`);
  const [result] = await push([
    {
      queue: PAYMENTS,
      partition: "merchant-7",
      transactionId: "payment-1",
      payload: { card: "4111-XXXX-XXXX-1111", amount: 99.5, currency: "EUR" },
    },
  ]);
  return { partitionId: result.partition_id, transactionId: result.transaction_id };
}

/** Invoices with trace events along their way; null when the broker has no traces API. */
async function seedInvoices(): Promise<Seeded["traced"]> {
  const results = await push(
    Array.from({ length: 6 }, (_, i) => ({
      queue: INVOICES,
      partition: `region-${(i % 3) + 1}`,
      transactionId: `invoice-${i + 1}`,
      traceId: `trace-invoice-${i + 1}`,
      payload: { invoice: i + 1, total: 100 + i },
    })),
  );
  const first = results[0];
  const ref = { partitionId: first.partition_id, transactionId: first.transaction_id };
  for (const [eventType, data] of [
    ["received", { step: "received by billing" }],
    ["validated", { step: "totals checked", ok: true }],
    ["sent", { step: "sent to customer", channel: "email" }],
  ] as const) {
    const reply = await call("POST", "/api/v1/traces", {
      ...ref,
      data,
      eventType,
      traceNames: [TRACE_NAME],
      consumerGroup: "invoicing",
    });
    if (reply.status === 404 && reply.body?.code === "route_not_found") return null;
    if (reply.status !== 201) throw new Error(`trace: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return ref;
}

/** One message in each of 100 000 partitions, one push request after the other. */
async function seedLarge(): Promise<void> {
  await configure(FLEET, {});
  const chunks = Array.from({ length: LARGE_PARTITIONS / PUSH_CHUNK }, (_, c) => c);
  const pushChunk = (c: number) =>
    push(
      Array.from({ length: PUSH_CHUNK }, (_, i) => {
        const n = c * PUSH_CHUNK + i;
        return {
          queue: FLEET,
          partition: `device-${String(n).padStart(6, "0")}`,
          payload: { reading: n % 100 },
        };
      }),
    );
  for (const c of chunks) await pushChunk(c);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seeded = await seed();
  console.log(JSON.stringify(seeded, null, 2));
}
