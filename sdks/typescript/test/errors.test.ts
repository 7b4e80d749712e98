/**
 * The client's list of error codes matches the registry of the HTTP API specification (§2.3),
 * when the specification is checked out beside the repository (or named by REGINA_SPEC).
 */

import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, ReginaError, isReginaError } from "../src/index.js";

const spec = process.env.REGINA_SPEC ?? fileURLToPath(new URL("../../../../shared/spec/http-api.md", import.meta.url));

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
  it.skipIf(!existsSync(spec))("match the specification's registry", () => {
    const codes = registryCodes(readFileSync(spec, "utf8"));
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
