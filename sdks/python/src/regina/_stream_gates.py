"""Ready-made gate functions for ``stream.gate(fn)``: rate limiters whose counters live in the
key's gate state, so they survive restarts and are shared by every run of the query.

A denied record parks the rest of its partition's batch: the allowed prefix is committed and the
lease is kept, so the tail comes back, in order, when the lease ends. Sizing: a partition passes
at most about ``min(refill rate, capacity / leaseTime)`` records per second.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard

from ._stream_chain import GateContext

GateFn = Callable[[Any, GateContext], bool]
"""A gate function: ``(value, context) -> allow``."""


def token_bucket_gate(
    capacity: float, refill_per_sec: float, cost: Callable[[Any], float] | None = None
) -> GateFn:
    """A token bucket per key: a record passes when the bucket holds at least its cost, which is
    then taken out. The bucket starts full. State: ``{tokens, refilledAt}``.

    Raises:
        ValueError: ``capacity`` or ``refill_per_sec`` is not a positive number.
    """
    capacity = _positive(capacity, "capacity")
    rate = _positive(refill_per_sec, "refill_per_sec")

    def token_bucket(value: Any, context: GateContext) -> bool:
        state, now = context.state, context.stream_time_ms
        tokens = state.get("tokens")
        since = state.get("refilledAt")
        tokens = tokens if _is_number(tokens) else capacity
        since = since if _is_number(since) else now
        available = min(capacity, tokens + max(0, now - since) / 1000 * rate)
        state["refilledAt"] = max(since, now)
        price = _cost(cost, value)
        allowed = available >= price
        state["tokens"] = available - price if allowed else available
        return allowed

    return token_bucket


def sliding_window_gate(
    limit: float, window_seconds: float, cost: Callable[[Any], float] | None = None
) -> GateFn:
    """At most ``limit`` per ``window_seconds`` and key, estimated from the current and the
    previous fixed window (the previous one weighted by how much of it still overlaps): cheap,
    and close to a true sliding window. State: ``{window, current, previous}``.

    Raises:
        ValueError: ``limit`` or ``window_seconds`` is not a positive number.
    """
    limit = _positive(limit, "limit")
    window_ms = _positive(window_seconds, "window_seconds") * 1000

    def sliding_window(value: Any, context: GateContext) -> bool:
        state, now = context.state, context.stream_time_ms
        window = math.floor(now / window_ms)
        if state.get("window") != window:
            current = state.get("current")
            kept = current if state.get("window") == window - 1 and _is_number(current) else 0
            state.update(previous=kept, current=0, window=window)
        overlap = 1 - (now - window * window_ms) / window_ms
        estimate = state["previous"] * overlap + state["current"]
        price = _cost(cost, value)
        if estimate + price > limit:
            return False
        state["current"] += price
        return True

    return sliding_window


def _positive(value: float, what: str) -> float:
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number")
    return value


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cost(cost: Callable[[Any], float] | None, value: Any) -> float:
    price = 1 if cost is None else cost(value)
    if not _is_number(price) or not math.isfinite(price) or price < 0:
        raise ValueError(f"a gate's cost must be a non-negative number, got {price!r}")
    return price
