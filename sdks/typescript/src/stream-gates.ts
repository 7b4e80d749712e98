/**
 * Ready-made gate functions for `stream.gate(fn)`: rate limiters whose counters live in the
 * key's gate state, so they survive restarts and are shared by every run of the query.
 *
 * A denied record parks the rest of its partition's batch: the allowed prefix is committed and
 * the lease is kept, so the tail comes back, in order, when the lease ends. Sizing: a partition
 * passes at most about `min(refill rate, capacity / leaseTime)` records per second.
 */

import type { GateContext } from "./stream-chain.js";

/** Settings of {@link tokenBucketGate}. */
export interface TokenBucketOptions<T> {
  /** Most tokens the bucket holds (and holds at first). */
  capacity: number;
  /** Tokens added per second, up to `capacity`. */
  refillPerSec: number;
  /** Tokens a record costs (default 1). A cost of 0 always passes. */
  cost?: (value: T) => number;
}

/** Settings of {@link slidingWindowGate}. */
export interface SlidingWindowOptions<T> {
  /** Most cost allowed within any `windowSeconds`. */
  limit: number;
  /** Length of the window in seconds. */
  windowSeconds: number;
  /** Cost of a record (default 1). */
  cost?: (value: T) => number;
}

/**
 * A token bucket per key: a record passes when the bucket holds at least its cost, which is then
 * taken out. State: `{tokens, refilledAt}`.
 */
export function tokenBucketGate<T = unknown>(
  options: TokenBucketOptions<T>,
): (value: T, context: GateContext) => boolean {
  const capacity = positive(options.capacity, "capacity");
  const rate = positive(options.refillPerSec, "refillPerSec");
  const costOf = options.cost ?? (() => 1);
  return (value, { state, streamTimeMs }) => {
    const tokens = typeof state.tokens === "number" ? state.tokens : capacity;
    const since = typeof state.refilledAt === "number" ? state.refilledAt : streamTimeMs;
    const elapsedSeconds = Math.max(0, streamTimeMs - since) / 1000;
    let available = Math.min(capacity, tokens + elapsedSeconds * rate);
    state.refilledAt = Math.max(since, streamTimeMs);
    const cost = validCost(costOf(value));
    const allowed = available >= cost;
    if (allowed) available -= cost;
    state.tokens = available;
    return allowed;
  };
}

/**
 * At most `limit` per `windowSeconds` and key, estimated from the current and the previous fixed
 * window (the previous one weighted by how much of it still overlaps): cheap, and close to a
 * true sliding window. State: `{window, current, previous}`.
 */
export function slidingWindowGate<T = unknown>(
  options: SlidingWindowOptions<T>,
): (value: T, context: GateContext) => boolean {
  const limit = positive(options.limit, "limit");
  const windowMs = positive(options.windowSeconds, "windowSeconds") * 1000;
  const costOf = options.cost ?? (() => 1);
  return (value, { state, streamTimeMs }) => {
    const window = Math.floor(streamTimeMs / windowMs);
    if (state.window !== window) {
      state.previous = state.window === window - 1 && typeof state.current === "number" ? state.current : 0;
      state.current = 0;
      state.window = window;
    }
    const overlap = 1 - (streamTimeMs - window * windowMs) / windowMs;
    const estimate = (state.previous as number) * overlap + (state.current as number);
    const cost = validCost(costOf(value));
    if (estimate + cost > limit) return false;
    state.current = (state.current as number) + cost;
    return true;
  };
}

function positive(value: number, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`${what} must be a positive number`);
  }
  return value;
}

function validCost(cost: unknown): number {
  if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) {
    throw new TypeError(`a gate's cost must be a non-negative number, got ${String(cost)}`);
  }
  return cost;
}
