"""The operator chain of a stream: its stages as data, the rules a chain must follow, and the
``config_hash`` that identifies its shape on the broker.

The hash covers what decides the meaning of stored state — the operator kinds in order, window
sizes, aggregate field names and the sink queue — and never the user's functions, so a new
version of a ``map`` function keeps the query's state while a new window size does not. The shape
text is the same in every Regina SDK, so every SDK computes the same hash for the same chain.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ._models import Json, Message

LatePolicy = Literal["drop", "include"]
"""What an event-time window does with events older than the watermark."""

CronEvery = Literal["second", "minute", "hour", "day", "week"]
"""Periods of cron windows, aligned to UTC (weeks start on Monday)."""

CRON_PERIOD_MS: Mapping[str, int] = {
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}

IDLE_FLUSH_MS_DEFAULT = 5_000
"""Default idle-flush period of tumbling, sliding and cron windows."""
SESSION_IDLE_FLUSH_MS_DEFAULT = 1_000
"""Default idle-flush period of session windows."""


@dataclass(frozen=True)
class StreamContext:
    """What operator functions receive besides the value.

    Attributes:
        partition: name of the source partition.
        partition_id: id of the source partition (the state shard).
        key: the record's key: the source partition id unless ``key_by`` chose another.
        message: the source message; ``None`` for window results.
        window_start: start of the window in epoch milliseconds (window results only).
        window_end: end of the window (exclusive) in epoch milliseconds (window results only).
    """

    partition: str
    partition_id: str
    key: str
    message: Message | None = None
    window_start: int | None = None
    window_end: int | None = None


@dataclass(frozen=True)
class GateContext(StreamContext):
    """Context of a gate function.

    Attributes:
        state: the key's persistent state; the function may change it, and the change is stored
            when the gate allows a record of that key.
        stream_time_ms: the instant the batch is judged at (one value for the whole batch).
    """

    state: dict[str, Any] = field(default_factory=dict)
    stream_time_ms: int = 0


EventTime = Callable[[Any, StreamContext], "int | float | datetime | str"]


@dataclass(frozen=True)
class WindowSpec:
    """A window; durations in milliseconds. ``size_ms`` is the length, size or session gap."""

    type: Literal["tumbling", "sliding", "session", "cron"]
    size_ms: int
    slide_ms: int
    every: str | None
    grace_ms: int
    idle_flush_ms: int
    event_time: EventTime | None
    lateness_ms: int
    on_late: LatePolicy

    @property
    def tag(self) -> str:
        """State-key tag: ``tumb:<s>``, ``slide:<size>:<slide>``, ``cron:<every>`` or ``sess:<gap>``."""
        if self.type == "tumbling":
            return f"tumb:{seconds_text(self.size_ms)}"
        if self.type == "sliding":
            return f"slide:{seconds_text(self.size_ms)}:{seconds_text(self.slide_ms)}"
        if self.type == "session":
            return f"sess:{seconds_text(self.size_ms)}"
        return f"cron:{self.every}"


@dataclass(frozen=True)
class Stage:
    """One operator. ``kind`` is the operator's name in the shape (``map``, ``window``, ``to``…)."""

    kind: str
    fn: Callable[..., Any] | None = None
    window: WindowSpec | None = None
    initial: Json = None
    fields: tuple[tuple[str, Callable[..., Any]], ...] = ()
    queue: str = ""
    partition: str | Callable[..., Any] | None = None


@dataclass
class CompiledChain:
    """A checked chain, split into the parts the runner executes in order."""

    pre: list[Stage] = field(default_factory=list)
    """Stateless operators before the stateful stage (all of them when there is none)."""
    window: WindowSpec | None = None
    reducer: Stage | None = None
    gate: Stage | None = None
    post: list[Stage] = field(default_factory=list)
    """Stateless operators after the stateful stage, applied to its results."""
    sink: Stage | None = None
    shape: str = ""

    @property
    def stateful(self) -> bool:
        """True when batches need the shard's state."""
        return self.window is not None or self.gate is not None


def seconds_to_ms(seconds: object, what: str, *, allow_zero: bool = False) -> int:
    """A duration in seconds as whole milliseconds.

    Raises:
        ValueError: not a positive (or, with ``allow_zero``, non-negative) whole number of ms.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise ValueError(f"{what} must be a number of seconds")
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{what} must be a {'non-negative' if allow_zero else 'positive'} number of seconds")
    ms = round(seconds * 1000)
    if abs(ms - seconds * 1000) > 1e-6:
        raise ValueError(f"{what} must be a whole number of milliseconds")
    return int(ms)


def seconds_text(ms: int) -> str:
    """Seconds as text from whole milliseconds, the same in every SDK: 5000 → ``5``, 1500 → ``1.5``."""
    whole, rest = divmod(ms, 1000)
    return str(whole) if rest == 0 else f"{whole}.{rest:03d}".rstrip("0")


def window_spec(
    type_: Literal["tumbling", "sliding", "session", "cron"],
    size_ms: int,
    slide_ms: int,
    every: str | None,
    *,
    grace_period: float,
    idle_flush_ms: int | None,
    event_time: EventTime | None,
    allowed_lateness: float,
    on_late: str,
) -> WindowSpec:
    """Build a window from its options (see ``Stream.window_tumbling``)."""
    if on_late not in ("drop", "include"):
        raise ValueError("on_late must be 'drop' or 'include'")
    default = SESSION_IDLE_FLUSH_MS_DEFAULT if type_ == "session" else IDLE_FLUSH_MS_DEFAULT
    idle = default if idle_flush_ms is None else idle_flush_ms
    if isinstance(idle, bool) or not isinstance(idle, int) or idle < 0:
        raise ValueError("idle_flush_ms must be a non-negative integer")
    if event_time is not None and not callable(event_time):
        raise ValueError("event_time must be a function")
    return WindowSpec(
        type=type_,
        size_ms=size_ms,
        slide_ms=slide_ms,
        every=every,
        grace_ms=seconds_to_ms(grace_period, "grace_period", allow_zero=True),
        idle_flush_ms=idle,
        event_time=event_time,
        lateness_ms=seconds_to_ms(allowed_lateness, "allowed_lateness", allow_zero=True),
        on_late=on_late,  # type: ignore[arg-type]
    )


def compile_chain(stages: tuple[Stage, ...]) -> CompiledChain:
    """Check a chain and split it.

    Rules: at most one sink (``to`` / ``foreach``), and it comes last; at most one stateful stage —
    a window directly followed by ``reduce`` or ``aggregate``, or a ``gate``; ``key_by`` only
    before the stateful stage; no ``flat_map`` before a gate (a gate judges whole messages).

    Raises:
        ValueError: naming the rule the chain breaks.
    """
    chain = CompiledChain(shape=shape_of(stages))
    for position, stage in enumerate(stages):
        if chain.sink is not None:
            raise ValueError(f"{chain.sink.kind}() must be the last operator of a stream")
        if stage.kind == "window":
            if chain.stateful:
                raise ValueError("a stream has at most one window or gate")
            chain.window = stage.window
        elif stage.kind in ("reduce", "aggregate"):
            if chain.window is None or chain.reducer is not None or stages[position - 1].kind != "window":
                raise ValueError(f"{stage.kind}() must directly follow a window")
            chain.reducer = stage
        elif stage.kind == "gate":
            if chain.stateful:
                raise ValueError("a stream has at most one window or gate")
            if any(earlier.kind == "flatMap" for earlier in chain.pre):
                raise ValueError("flat_map() cannot come before gate(): a gate judges whole messages")
            chain.gate = stage
        else:
            if chain.window is not None and chain.reducer is None:
                raise ValueError("a window must be followed by reduce or aggregate")
            if stage.kind in ("to", "foreach"):
                chain.sink = stage
            elif stage.kind == "keyBy" and chain.stateful:
                raise ValueError("key_by() must come before the window or gate")
            else:
                (chain.post if chain.stateful else chain.pre).append(stage)
    if chain.window is not None and chain.reducer is None:
        raise ValueError("a window must be followed by reduce or aggregate")
    return chain


def shape_of(stages: tuple[Stage, ...]) -> str:
    """The chain's shape: one line per operator, its kind and then its structural settings.

    Texts are written ``<UTF-8 byte length>:<text>`` so that no name can be mistaken for syntax.
    """
    lines = ["regina.streams.v1"]
    for stage in stages:
        if stage.kind == "window" and stage.window is not None:
            lines.append(_window_shape(stage.window))
        elif stage.kind == "aggregate":
            names = sorted((name for name, _ in stage.fields), key=lambda n: n.encode())
            lines.append("aggregate fields=" + ",".join(_length_prefixed(n) for n in names))
        elif stage.kind == "to":
            lines.append("to queue=" + _length_prefixed(stage.queue))
        else:
            lines.append(stage.kind)
    return "\n".join(lines)


def _window_shape(window: WindowSpec) -> str:
    if window.type == "tumbling":
        return f"windowTumbling seconds={seconds_text(window.size_ms)}"
    if window.type == "sliding":
        return f"windowSliding size={seconds_text(window.size_ms)} slide={seconds_text(window.slide_ms)}"
    if window.type == "session":
        return f"windowSession gap={seconds_text(window.size_ms)}"
    return f"windowCron every={window.every}"


def _length_prefixed(text: str) -> str:
    return f"{len(text.encode())}:{text}"


def config_hash(shape: str) -> str:
    """SHA-256 of the shape text, lower-case hex."""
    return hashlib.sha256(shape.encode()).hexdigest()
