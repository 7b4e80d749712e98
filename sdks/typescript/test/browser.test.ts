/**
 * The built package bundles for the browser and works with browser globals only: the bundle runs
 * in a sandbox that has `fetch`, `AbortController`, timers, `crypto`, `TextEncoder` and URL classes — no
 * `process`, `require` or `Buffer` — and talks to the live broker from there.
 */

import { build } from "esbuild";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { brokerUrl, uniqueName } from "./helpers.js";

const entry = fileURLToPath(new URL("../dist/index.js", import.meta.url));

async function browserSandbox(): Promise<vm.Context & { run?: (url: string, queue: string) => Promise<string> }> {
  if (!existsSync(entry)) throw new Error("run `npm run build` first: the bundle is made from dist/");
  const bundle = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "iife",
    globalName: "ReginaClient",
    write: false,
    logLevel: "silent",
  });
  const sandbox = vm.createContext({
    fetch,
    Headers,
    AbortController,
    AbortSignal,
    DOMException,
    URL,
    URLSearchParams,
    crypto,
    TextEncoder,
    console,
    setTimeout,
    clearTimeout,
    setInterval,
    clearInterval,
  });
  vm.runInContext(bundle.outputFiles[0]?.text ?? "", sandbox);
  return sandbox;
}

describe("in a browser-like sandbox", () => {
  it("pushes, pops and reports typed errors", async () => {
    const sandbox = await browserSandbox();
    vm.runInContext(
      `globalThis.run = async (url, queue) => {
        const nodeOnly = [typeof process, typeof require, typeof Buffer];
        const client = new ReginaClient.Regina(url);
        const pushed = await client.queue(queue).partition("b").push([{ payload: { from: "browser" } }]);
        const messages = await client.queue(queue).partition("b").autoAck().pop();
        const error = await client.queue(queue).batch(0).pop().catch((caught) => caught);
        const hash = await client.stream(queue).map((v) => v).filter(Boolean).to("sink-a").configHash();
        return JSON.stringify({
          hash,
          nodeOnly,
          statuses: pushed.map((result) => result.status),
          payloads: messages.map((message) => message.data),
          error: { typed: error instanceof ReginaClient.ReginaError, code: error.code, status: error.status },
        });
      };`,
      sandbox,
    );
    const outcome = JSON.parse(
      await (sandbox.run as NonNullable<typeof sandbox.run>)(brokerUrl(), uniqueName("browser")),
    );
    expect(outcome).toEqual({
      hash: "3e7a7ad0d6a5c72651575a7fe73ab85d64f8cac23b02e03f4337f27df1b3268c",
      nodeOnly: ["undefined", "undefined", "undefined"],
      statuses: ["queued"],
      payloads: [{ from: "browser" }],
      error: { typed: true, code: "invalid_parameter", status: 400 },
    });
  });
});
