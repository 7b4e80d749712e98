/**
 * Runs every scenario of sdks/conformance/scenarios against the live broker, through the client's
 * public API.
 */

import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "vitest";
import { Regina } from "../src/index.js";
import { runStep, type Run, type Step } from "./conformance-steps.js";
import { brokerUrl } from "./helpers.js";

interface Scenario {
  name: string;
  description: string;
  client?: { servers?: string[]; retries?: number };
  steps: Step[];
}

const DEAD_URL = "http://127.0.0.1:9";
const directory = fileURLToPath(new URL("../../conformance/scenarios/", import.meta.url));
const files = readdirSync(directory)
  .filter((file) => file.endsWith(".json"))
  .sort();

describe("conformance", () => {
  it("finds the scenarios", ({ expect }) => {
    expect(files.length).toBeGreaterThanOrEqual(12);
  });

  for (const file of files) {
    const scenario = JSON.parse(readFileSync(directory + file, "utf8")) as Scenario;
    it(`${file}: ${scenario.description}`, async () => {
      await runScenario(scenario, file);
    });
  }
});

async function runScenario(scenario: Scenario, file: string): Promise<void> {
  const bytes = new Uint8Array(4);
  crypto.getRandomValues(bytes);
  const base = `conf-${scenario.name}-${[...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
  const marks = new Map<string, string>();
  const values = (name: string): string | undefined => {
    if (name.startsWith("mark:")) return marks.get(name.slice(5));
    return { url: brokerUrl(), dead: DEAD_URL, q: base, q2: `${base}-2`, q3: `${base}-3` }[name];
  };
  const servers = (scenario.client?.servers ?? ["${url}"]).map((server) => substitute(server, values) as string);
  const retries = scenario.client?.retries;
  const client = new Regina(retries === undefined ? { servers } : { servers, retries });
  const run: Run = { client, saved: new Map(), marks, streamTotals: new Map() };
  for (const [position, raw] of scenario.steps.entries()) {
    const step = substitute(raw, values) as Step;
    await runStep(run, step, `${file} step ${position + 1} (${step.op})`);
  }
  await client.close();
}

/** Replaces placeholders in every string of `value` (a lone placeholder by its value). */
function substitute(value: unknown, values: (name: string) => string | undefined): unknown {
  if (typeof value === "string") {
    const lookup = (name: string): string => {
      const found = values(name);
      if (found === undefined) throw new Error(`unknown placeholder \${${name}}`);
      return found;
    };
    const whole = /^\$\{([^}]+)\}$/.exec(value);
    if (whole) return lookup(whole[1] as string);
    return value.replace(/\$\{([^}]+)\}/g, (_match, name: string) => lookup(name));
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, values));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, values)]));
  }
  return value;
}
