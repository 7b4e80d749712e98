"""The consumer loop's decisions (sans-IO), shared by the sync and async consumers.

:class:`ConsumePlan` says what to pop next (or to stop), splits what was delivered into handler
calls, and turns each handler outcome into the ack to send. The loops around it only do I/O,
timers and concurrency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _calls
from ._http import Call
from ._models import AckResult, Message

SLICE_MS_WITH_STOP = 1_000
"""Longest long-poll of a sync consumer that has a stop event: how soon it notices the event."""


@dataclass(frozen=True)
class ConsumeSettings:
    """What a consumer pops and how it handles it (set through the queue builder)."""

    queue: str
    partition: str | None = None
    group: str | None = None
    batch: int = 1
    partitions: int = 1
    concurrency: int = 1
    auto_ack: bool = False
    each: bool = False
    limit: int | None = None
    idle_ms: int | None = None
    renew_every_ms: int | None = None
    subscription_mode: str | None = None
    subscription_from: Any = None
    timeout_ms: int = 30_000
    long_poll_margin_ms: int = 5_000

    def __post_init__(self) -> None:
        if self.batch < 1 or self.partitions < 1 or self.concurrency < 1:
            raise ValueError("batch, partitions and concurrency must be at least 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")


@dataclass(frozen=True)
class Stop:
    """The consumer is done: its limit was reached or it was idle for ``idle_ms``."""


@dataclass(frozen=True)
class Pause:
    """Nothing to pop now (other workers hold the rest of the limit); check again soon."""

    seconds: float = 0.05


@dataclass(frozen=True)
class PopStep:
    """Pop with this call; report the outcome with :meth:`ConsumePlan.received`."""

    call: Call[list[Message]]
    reserved: int


Next = Stop | Pause | PopStep


class ConsumePlan:
    """Counters and decisions of one ``consume()`` call, shared by its workers (thread-safe)."""

    def __init__(self, settings: ConsumeSettings, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._handled = 0
        self._reserved = 0
        self._last_delivery = clock()

    @property
    def handled(self) -> int:
        """Messages handed to the handler so far."""
        with self._lock:
            return self._handled

    def next(self, slice_ms: int | None = None) -> Next:
        """Decide the next pop. ``slice_ms`` caps the long-poll (to notice a stop event)."""
        s = self.settings
        with self._lock:
            wait_ms = s.timeout_ms
            if s.idle_ms is not None:
                idle_left_ms = s.idle_ms - int((self._clock() - self._last_delivery) * 1000)
                if idle_left_ms <= 0:
                    return Stop()
                wait_ms = min(wait_ms, max(1, idle_left_ms))
            batch = s.batch
            if s.limit is not None:
                left = s.limit - self._handled - self._reserved
                if left <= 0:
                    return Stop() if self._reserved == 0 else Pause()
                batch = min(batch, left)
            self._reserved += batch
        if slice_ms is not None:
            wait_ms = min(wait_ms, slice_ms)
        call = _calls.pop(
            s.queue,
            partition=s.partition,
            group=s.group,
            batch=batch,
            partitions=s.partitions,
            wait=True,
            timeout_ms=wait_ms,
            auto_ack=s.auto_ack,
            subscription_mode=s.subscription_mode,
            subscription_from=s.subscription_from,
            long_poll_margin_ms=s.long_poll_margin_ms,
        )
        return PopStep(call, batch)

    def received(self, step: PopStep, messages: Sequence[Message]) -> None:
        """Record a pop's outcome (an empty list after an error) and release unused budget."""
        with self._lock:
            self._reserved -= step.reserved - len(messages)
            if messages:
                self._last_delivery = self._clock()

    def units(self, messages: Sequence[Message]) -> list[list[Message]]:
        """Split a delivery into handler calls: one per message with ``each()``, else one."""
        if not messages:
            return []
        return [[m] for m in messages] if self.settings.each else [list(messages)]

    def handled_unit(self, unit: Sequence[Message]) -> None:
        """Count a finished handler call."""
        with self._lock:
            self._handled += len(unit)
            self._reserved -= len(unit)
            self._last_delivery = self._clock()

    def released(self, unit: Sequence[Message]) -> None:
        """Count messages given back unhandled (released for redelivery)."""
        with self._lock:
            self._reserved -= len(unit)

    def settle_call(self, unit: Sequence[Message], error: BaseException | None) -> Call[Any] | None:
        """The ack for a finished handler call: ``completed``, or ``failed`` with the error text.

        None with server-side autoAck (the messages were settled on delivery).
        """
        if self.settings.auto_ack or not unit:
            return None
        status = "completed" if error is None else "failed"
        text = None if error is None else (str(error) or type(error).__name__)
        return ack_call(unit, status, text, self.settings.group)

    def release_call(self, unit: Sequence[Message]) -> Call[Any] | None:
        """The ack giving popped but unhandled messages back at once (``retry``: nothing charged)."""
        if self.settings.auto_ack or not unit:
            return None
        return ack_call(unit, "retry", None, self.settings.group)


def ack_call(
    messages: Sequence[Any], status: str, error: str | None, group: str | None
) -> Call[AckResult] | Call[list[AckResult]]:
    """One ack for a single message, a batch ack for several."""
    items = [_calls.ack_item_wire(m, status, error, group) for m in messages]
    return _calls.ack(items[0]) if len(items) == 1 else _calls.ack_batch(items)
