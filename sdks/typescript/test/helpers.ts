/** Shared helpers of the test suite. */

import { Regina, type ReginaOptions } from "../src/index.js";

/** URL of the live broker the suite runs against (`sdks/run-tests.sh` sets it). */
export function brokerUrl(): string {
  const url = process.env.REGINA_URL;
  if (!url) throw new Error("REGINA_URL is not set: run the suite through ./test.sh (or sdks/run-tests.sh)");
  return url;
}

/** A client of the live broker. */
export function client(options: ReginaOptions = {}): Regina {
  return new Regina({ url: brokerUrl(), ...options });
}

/** A queue name no other test uses. */
export function uniqueName(prefix: string): string {
  const bytes = new Uint8Array(4);
  crypto.getRandomValues(bytes);
  const suffix = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `ts-${prefix}-${suffix}`;
}

/** Waits `millis` milliseconds. */
export function delay(millis: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, millis));
}
