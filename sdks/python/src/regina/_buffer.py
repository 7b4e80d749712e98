"""Client-side push buffer (sans-IO): items held per (queue, partition) until a flush.

A buffer is flushed when it holds ``message_count`` items, when its oldest item has waited
``time_ms``, or on an explicit flush. Items keep their order: a flush takes a prefix, and items
whose send failed are put back in front of anything added since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str]
"""(queue, partition)."""


@dataclass(frozen=True)
class BufferOptions:
    """When a client-side buffer is flushed.

    Attributes:
        message_count: flush once this many items are held (at least 1).
        time_ms: flush once the oldest held item has waited this long, in milliseconds.
    """

    message_count: int = 100
    time_ms: int = 1_000

    def __post_init__(self) -> None:
        if self.message_count < 1 or self.time_ms < 0:
            raise ValueError("buffer needs message_count >= 1 and time_ms >= 0")


@dataclass
class _Lane:
    items: list[dict[str, Any]] = field(default_factory=list)
    deadline: float | None = None


class PushBuffer:
    """Held push items by (queue, partition). Not thread-safe: the transports lock around it."""

    def __init__(self) -> None:
        self._lanes: dict[Key, _Lane] = {}

    def add(self, key: Key, items: list[dict[str, Any]], options: BufferOptions, now: float) -> bool:
        """Hold wire items; return True when the lane reached its message count."""
        lane = self._lanes.setdefault(key, _Lane())
        if not lane.items:
            lane.deadline = now + options.time_ms / 1000
        lane.items.extend(items)
        return len(lane.items) >= options.message_count

    def take(self, key: Key) -> list[dict[str, Any]]:
        """Remove and return every item held for ``key``."""
        lane = self._lanes.pop(key, None)
        return lane.items if lane else []

    def put_back(self, key: Key, items: list[dict[str, Any]], due_at: float) -> None:
        """Return items whose send failed, ahead of anything held since; due again at ``due_at``."""
        if not items:
            return
        lane = self._lanes.setdefault(key, _Lane())
        lane.items[:0] = items
        lane.deadline = due_at

    def keys(self) -> list[Key]:
        """Every lane holding items."""
        return [key for key, lane in self._lanes.items() if lane.items]

    def due(self, now: float) -> list[Key]:
        """Lanes whose oldest item has waited long enough."""
        return [k for k, lane in self._lanes.items() if lane.items and (lane.deadline or 0) <= now]

    def next_deadline(self) -> float | None:
        """The earliest deadline of any lane, or None when nothing is held."""
        deadlines = [
            lane.deadline for lane in self._lanes.values() if lane.items and lane.deadline is not None
        ]
        return min(deadlines) if deadlines else None

    def size(self) -> int:
        """Number of items held."""
        return sum(len(lane.items) for lane in self._lanes.values())
