/**
 * What every browser test needs: the broker under test (REGINA_URL, started by
 * sdks/run-tests.sh), a small HTTP client for seeding and checking state, and headless Chromium
 * from the system (never a downloaded browser) with screenshots as test artifacts.
 */

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const BROKER = (process.env.REGINA_URL ?? "http://127.0.0.1:6632").replace(/\/+$/, "");

/** Where screenshots go (git-ignored): `target/dashboard-screenshots/<name>.png`. */
export const SCREENSHOTS = resolve(
  process.env.SCREENSHOT_DIR ?? join(import.meta.dirname, "../../target/dashboard-screenshots"),
);

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * How long any wait of a page (an element, a navigation, a load state) may last before the test
 * fails: a guard against a broken page, never a claim about speed, so it is generous (test machines
 * are busy) and the same for every wait. Matches the Rust test kit's `DEADLINE`.
 */
export const WAIT_MILLIS = 60_000;

/** One HTTP answer: status, headers and the parsed JSON body (null when empty). */
export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** Sends one request to the broker. */
export async function call(method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(BROKER + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** Sends one request and fails unless it succeeded (2xx). */
export async function ok(method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  const reply = await call(method, path, body, token);
  if (reply.status < 200 || reply.status > 299)
    throw new Error(`${method} ${path} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply;
}

/** Whether the broker serves a route (anything but a `route_not_found` 404). */
export async function served(path: string, token?: string): Promise<boolean> {
  const reply = await call("GET", path, undefined, token);
  return !(reply.status === 404 && reply.body?.code === "route_not_found");
}

/**
 * A headless Chromium with a fresh, throw-away profile (`--user-data-dir`) and a laptop's
 * viewport; `close()` removes the profile too.
 */
export async function launch(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "regina-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
    viewport: { width: 1366, height: 768 },
    baseURL: BROKER,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A new tab (its own sessionStorage) that records uncaught page errors. */
export async function newPage(context: BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MILLIS);
  page.setDefaultNavigationTimeout(WAIT_MILLIS);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  return { page, errors };
}

/** Writes a full-page screenshot of the page as it is now. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  // Let pending fetches land and charts draw, so the picture shows the settled page.
  await page.waitForLoadState("networkidle").catch(() => undefined);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Pushes items in one request; fails unless every item was queued. */
export async function push(items: unknown[]): Promise<any[]> {
  const reply = await ok("POST", "/api/v1/push", { items });
  const failed = reply.body.filter((r: { status: string }) => r.status !== "queued");
  if (failed.length) throw new Error(`push: ${JSON.stringify(failed.slice(0, 3))}`);
  return reply.body;
}

/** One pop of a group (204 → no messages). */
export async function pop(queue: string, query: string): Promise<any[]> {
  const reply = await call("GET", `/api/v1/pop/queue/${encodeURIComponent(queue)}?${query}`);
  if (reply.status === 204) return [];
  if (reply.status !== 200) throw new Error(`pop ${queue}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.messages;
}

/** Acks messages with one status. */
export async function ack(messages: any[], status: "completed" | "failed", error?: string): Promise<void> {
  if (messages.length === 0) return;
  const acknowledgments = messages.map((m) => ({
    transactionId: m.transactionId,
    partitionId: m.partitionId,
    leaseId: m.leaseId,
    status,
    error,
  }));
  const reply = await ok("POST", "/api/v1/ack/batch", { acknowledgments });
  const failed = reply.body.filter((r: { success: boolean }) => !r.success);
  if (failed.length) throw new Error(`ack: ${JSON.stringify(failed.slice(0, 3))}`);
}
