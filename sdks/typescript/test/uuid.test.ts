/** Client-assigned transaction ids: canonical UUIDv7, ordered by creation. */

import { describe, expect, it } from "vitest";
import { uuidv7 } from "../src/index.js";

describe("uuidv7", () => {
  it("is a canonical version 7, RFC 9562 variant UUID carrying the current time", () => {
    const before = Date.now();
    const id = uuidv7();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const millis = parseInt(id.replace(/-/g, "").slice(0, 12), 16);
    expect(millis).toBeGreaterThanOrEqual(before);
    expect(millis).toBeLessThanOrEqual(Date.now());
  });

  it("ids made in a burst are distinct and sort in creation order", () => {
    const ids = Array.from({ length: 5_000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
