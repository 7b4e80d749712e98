/**
 * Sign-in against a broker started with JWT_ENABLED=true and JWT_SECRET (HS256): the dashboard
 * asks for a token on 401, keeps it in sessionStorage and sends it as a bearer token; a token
 * whose role is too weak sees "Insufficient permissions" and its actions disabled. Skipped when
 * the broker under test does not enforce authentication.
 */

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, describe, it, type TestContext } from "node:test";
import type { BrowserContext } from "playwright-core";
import { call, launch, newPage, screenshot } from "./support.js";

const SECRET = process.env.JWT_SECRET ?? "";
const QUEUE = "auth.orders";

/** An HS256 JWT for `role`, valid for ten minutes. */
function token(role: string, secret = SECRET): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${encode({ alg: "HS256", typ: "JWT" })}.${encode({ sub: `dashboard-test-${role}`, role, iat: now, exp: now + 600 })}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

let context: BrowserContext;
let close: () => Promise<void>;
let enforced = false;
/** A message of QUEUE, pushed with an admin token. */
let message: { partitionId: string; transactionId: string };

before(async () => {
  const anonymous = await call("GET", "/api/v1/resources/queues");
  enforced = anonymous.status === 401;
  if (enforced) {
    const configured = await call("POST", "/api/v1/configure", { queue: QUEUE, options: {} }, token("admin"));
    assert.ok(configured.status === 200 || configured.status === 201, JSON.stringify(configured.body));
    const pushed = await call(
      "POST",
      "/api/v1/push",
      { items: [{ queue: QUEUE, payload: { n: 1 } }] },
      token("admin"),
    );
    assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
    message = { partitionId: pushed.body[0].partition_id, transactionId: pushed.body[0].transaction_id };
  }
  ({ context, close } = await launch());
});

after(async () => {
  await close?.();
});

function skipUnlessEnforced(t: TestContext): boolean {
  if (enforced) return false;
  t.skip("this broker does not enforce authentication (JWT_ENABLED has no effect on it)");
  return true;
}

describe("sign-in", () => {
  it("asks for a token on 401, refuses a bad one, and signs in with a good one", async (t) => {
    if (skipUnlessEnforced(t)) return;
    const { page, errors } = await newPage(context);
    await page.goto("/queues");
    const form = page.getByTestId("login");
    await form.getByText("This broker requires authentication").waitFor();
    await screenshot(page, "login");

    await form.getByLabel("Token").fill(token("admin", "not-the-secret"));
    await form.getByRole("button", { name: "Sign in" }).click();
    await form.getByText("unauthorized").waitFor();

    await form.getByLabel("Token").fill(token("admin"));
    await form.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("queues-table").getByRole("link", { name: QUEUE }).waitFor();
    assert.match((await page.evaluate(() => sessionStorage.getItem("regina.token"))) ?? "", /^ey/);
    await page.getByRole("link", { name: "Maintenance" }).click();
    await page.getByTestId("push-switch").waitFor();
    await screenshot(page, "signed-in");

    await page.getByRole("button", { name: "Sign out" }).click();
    await form.waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem("regina.token")), null);
    assert.deepEqual(errors, []);
  });

  it("a read-only token sees insufficient permissions and its actions disabled", async (t) => {
    if (skipUnlessEnforced(t)) return;
    const { page, errors } = await newPage(context);
    await page.goto("/maintenance");
    await page.getByTestId("login").getByLabel("Token").fill(token("read-only"));
    await page.getByTestId("login").getByRole("button", { name: "Sign in" }).click();
    // The switches are for admins only: their refusal disables every admin action.
    await page.getByTestId("switches").getByText("Insufficient permissions").first().waitFor();
    await page.getByTestId("permissions-banner").getByText("administrative actions").waitFor();
    assert.equal(await page.getByTestId("refresh-stats").isDisabled(), true);

    // The token stays for this tab across reloads; admin actions stay disabled in the session.
    await page.getByRole("link", { name: "Queues" }).click();
    await page.getByTestId("queues-table").getByRole("link", { name: QUEUE }).click();
    await page.getByTestId("queue-options").getByText("Retry limit").waitFor();
    assert.equal(await page.getByTestId("clear-queue").isDisabled(), true);
    assert.equal(await page.getByTestId("delete-queue").isDisabled(), true);

    // A read-write action refused with 403 disables every action.
    await page.goto(`/messages/${message.partitionId}/${message.transactionId}`);
    await page.getByTestId("payload-json").waitFor();
    await page.getByTestId("move-to-dlq").click();
    await page.getByTestId("confirm-dialog").getByRole("button", { name: "Move to DLQ" }).click();
    await page.getByTestId("error").getByText("forbidden").waitFor();
    await page.getByTestId("permissions-banner").getByText("may not change anything").waitFor();
    assert.equal(await page.getByTestId("move-to-dlq").isDisabled(), true);
    assert.equal(await page.getByTestId("delete-message").isDisabled(), true);
    await screenshot(page, "insufficient-permissions");
    assert.deepEqual(errors, []);
  });
});
