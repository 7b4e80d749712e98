/**
 * The client's list of error codes matches the registry of the repository's HTTP API reference
 * (docs/http-api.md §2.3).
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, ReginaError, isReginaError } from "../src/index.js";

const reference = fileURLToPath(new URL("../../../docs/http-api.md", import.meta.url));

/** The codes in the first column of the §2.3 registry table. */
function registryCodes(text: string): string[] {
  const section = text.split("### 2.3 Error code registry")[1]?.split("\n### ")[0] ?? "";
  const codes: string[] = [];
  for (const line of section.split("\n")) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1] ?? "";
    for (const match of cell.matchAll(/`([a-z_]+)`/g)) codes.push(match[1] as string);
  }
  return codes;
}

describe("error codes", () => {
  it("match the reference's registry", () => {
    const codes = registryCodes(readFileSync(reference, "utf8"));
    expect(codes.length).toBeGreaterThan(20);
    expect([...ERROR_CODES].sort()).toEqual([...new Set(codes)].sort());
  });

  it("isReginaError narrows by code", () => {
    const error = new ReginaError({ code: "lease_expired", status: 409, message: "Invalid or expired lease" });
    expect(isReginaError(error)).toBe(true);
    expect(isReginaError(error, "lease_expired")).toBe(true);
    expect(isReginaError(error, "not_leased")).toBe(false);
    expect(isReginaError(new Error("x"))).toBe(false);
    expect(error).toMatchObject({ name: "ReginaError", code: "lease_expired", status: 409 });
  });
});
