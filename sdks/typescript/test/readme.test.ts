/**
 * The README's three samples, extracted from the README itself: they must type-check as strict
 * TypeScript and run as written (with the broker URL and queue names swapped for the test's).
 */

import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { brokerUrl, client, delay, uniqueName } from "./helpers.js";

const root = fileURLToPath(new URL("../", import.meta.url));
// Inside the package, so that `import "regina-client"` resolves to this package's build.
const directory = `${root}.samples/`;
const NAMES = ["produce", "consume", "pipeline", "stream"] as const;

function extract(): Map<string, string> {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const found = new Map<string, string>();
  for (const match of readme.matchAll(/<!-- sample: (\w+) -->\n```ts\n([\s\S]*?)```/g)) {
    found.set(match[1] as string, match[2] as string);
  }
  return found;
}

const samples = extract();

beforeAll(() => {
  if (!existsSync(`${root}dist/index.d.ts`))
    throw new Error("run `npm run build` first: the samples import the built package");
  mkdirSync(directory, { recursive: true });
});

describe("README samples", () => {
  it("has the four samples", () => {
    expect([...samples.keys()]).toEqual([...NAMES]);
  });

  it("type-check as strict TypeScript", () => {
    const files = NAMES.map((name) => {
      const file = `${directory}${name}.ts`;
      writeFileSync(file, samples.get(name) ?? "");
      return file;
    });
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
      types: ["node"],
      skipLibCheck: true,
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  }, 60_000);

  it("run as written: produce, consume with a group, transactional pipeline, stream", async () => {
    const orders = uniqueName("orders");
    const shipments = uniqueName("shipments");
    const revenue = uniqueName("revenue");
    const write = (name: (typeof NAMES)[number]): string => {
      const code = (samples.get(name) ?? "")
        .replaceAll("http://localhost:6632", brokerUrl())
        .replaceAll('"orders"', JSON.stringify(orders))
        .replaceAll('"shipments"', JSON.stringify(shipments))
        .replaceAll('"customer-revenue"', JSON.stringify(revenue))
        .replaceAll('"revenue-per-second"', JSON.stringify(`${revenue}-query`));
      const file = `${directory}${name}.mjs`;
      // The stream sample names its payload type: strip the types as a TypeScript runner would.
      const javascript =
        name === "stream"
          ? ts.transpileModule(code, {
              compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
            }).outputText
          : code;
      writeFileSync(file, javascript);
      return file;
    };
    const run = async (name: (typeof NAMES)[number]): Promise<string> => {
      const file = write(name);
      const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 30_000 });
      return stdout;
    };

    expect(await run("produce")).toContain("[ 'queued', 'queued' ]");

    const consumed = await run("consume");
    expect(consumed).toContain("billing customer-42 { orderId: 1, amount: 25 }");
    expect(consumed).toContain("billing customer-42 { orderId: 2, amount: 40 }");
    expect(consumed).toContain("handled 2 messages");

    const shipped = await run("pipeline");
    expect(shipped.match(/shipped/g)).toHaveLength(2);
    const messages = await client().queue(shipments).partition("customer-42").batch(10).autoAck().pop();
    expect(messages.map((message) => message.data)).toEqual([
      { order: { orderId: 1, amount: 25 }, status: "ready" },
      { order: { orderId: 2, amount: 40 }, status: "ready" },
    ]);
    expect(messages[1]?.transactionId).toBe("ship-order-2");
    expect(await client().queue(orders).group("fulfilment").pop()).toEqual([]);

    // The stream runs until Ctrl-C: wait for its window total in the sink, then interrupt it.
    const child = spawn(process.execPath, [write("stream")], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    let totals: unknown[] = [];
    for (let waited = 0; totals.length === 0 && waited < 60_000; waited += 200) {
      totals = (await client().queue(revenue).partition("customer-42").batch(10).autoAck().pop()).map((m) => m.data);
      if (totals.length === 0) await delay(200);
    }
    child.kill("SIGINT");
    expect(await exited, output).toBe(0);
    expect(totals).toEqual([{ customer: "customer-42", windowStart: expect.any(Number), count: 2, revenue: 65 }]);
    expect(output).toContain("settled 2 orders");
  }, 120_000);
});
