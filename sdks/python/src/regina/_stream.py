"""The stream grammar: ``client.stream(queue)`` and its operators, for both clients.

Every operator returns a new stream, so a stream can be kept and extended without side effects.
Operator functions are plain (synchronous) functions and should be pure: a batch that fails is
processed again. Each takes the value, and gets the :class:`StreamContext` as well when it has a
second required positional parameter. Side effects belong in ``foreach`` (at least once; a
coroutine function with :class:`AsyncRegina`) or in the sink ``to`` (exactly once).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _stream_calls
from ._errors import ApiError
from ._models import Json
from ._stream_async import AsyncStreamRunner
from ._stream_chain import (
    CRON_PERIOD_MS,
    EventTime,
    Stage,
    compile_chain,
    config_hash,
    seconds_to_ms,
    window_spec,
)
from ._stream_run import ErrorHandler, RunCore, RunSettings
from ._stream_sync import StreamRunner

if TYPE_CHECKING:
    from ._async import AsyncRegina
    from ._sync import Regina

S = TypeVar("S", bound="StreamSpec")


def _adapt(fn: Callable[..., Any], what: str, arity: int) -> Callable[..., Any]:
    """``fn`` called with ``arity`` arguments, the last being the context. A function whose
    required positional parameters are fewer (``lambda value: ...``) gets no context."""
    if not callable(fn):
        raise TypeError(f"{what}() needs a function")
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature take the value only
        return lambda *args: fn(*args[: arity - 1])
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters) or len(required) >= arity:
        return fn
    return lambda *args: fn(*args[: arity - 1])


class StreamSpec:
    """The chain built so far; the sync and async streams add ``run``."""

    def __init__(self, client: Any, source: str, stages: tuple[Stage, ...] = ()) -> None:
        if not isinstance(source, str) or not source:
            raise ValueError("stream() needs a source queue name")
        self._client = client
        self._source = source
        self._stages = stages

    @property
    def source_queue(self) -> str:
        """The source queue."""
        return self._source

    def config_hash(self) -> str:
        """The ``config_hash`` this chain registers with (SHA-256 hex of its shape)."""
        return config_hash(compile_chain(self._stages).shape)

    def _then(self: S, stage: Stage) -> S:
        return type(self)(self._client, self._source, (*self._stages, stage))

    def map(self: S, fn: Callable[..., Any]) -> S:
        """Replace each value by ``fn(value[, context])``."""
        return self._then(Stage("map", _adapt(fn, "map", 2)))

    def filter(self: S, fn: Callable[..., Any]) -> S:
        """Keep the values for which ``fn(value[, context])`` is truthy."""
        return self._then(Stage("filter", _adapt(fn, "filter", 2)))

    def flat_map(self: S, fn: Callable[..., Any]) -> S:
        """Replace each value by the items of the list ``fn`` returns (none, one or several)."""
        return self._then(Stage("flatMap", _adapt(fn, "flat_map", 2)))

    def key_by(self: S, fn: Callable[..., Any]) -> S:
        """Key the values for the window or gate that follows (default: the source partition id)."""
        return self._then(Stage("keyBy", _adapt(fn, "key_by", 2)))

    def window_tumbling(self: S, seconds: float, **options: Any) -> WindowedStream[S]:
        """Fixed windows of ``seconds``, aligned to the epoch. Options: see :meth:`_window`."""
        size = seconds_to_ms(seconds, "window_tumbling seconds")
        return self._window("tumbling", size, size, None, **options)

    def window_sliding(self: S, size: float, slide: float, **options: Any) -> WindowedStream[S]:
        """Windows of ``size`` seconds starting every ``slide`` seconds (``size`` a multiple of ``slide``)."""
        size_ms = seconds_to_ms(size, "window_sliding size")
        slide_ms = seconds_to_ms(slide, "window_sliding slide")
        if size_ms % slide_ms:
            raise ValueError("window_sliding size must be a multiple of slide")
        return self._window("sliding", size_ms, slide_ms, None, **options)

    def window_session(self: S, gap: float, **options: Any) -> WindowedStream[S]:
        """Per-key sessions that close after ``gap`` seconds without events."""
        gap_ms = seconds_to_ms(gap, "window_session gap")
        return self._window("session", gap_ms, gap_ms, None, **options)

    def window_cron(self: S, every: str, **options: Any) -> WindowedStream[S]:
        """Calendar windows in UTC: every ``second``, ``minute``, ``hour``, ``day`` or ``week``
        (weeks start on Monday)."""
        if every not in CRON_PERIOD_MS:
            raise ValueError("window_cron every must be second, minute, hour, day or week")
        period = CRON_PERIOD_MS[every]
        return self._window("cron", period, period, every, **options)

    def _window(
        self: S,
        type_: Any,
        size_ms: int,
        slide_ms: int,
        every: str | None,
        *,
        grace_period: float = 0,
        idle_flush_ms: int | None = None,
        event_time: EventTime | None = None,
        allowed_lateness: float = 0,
        on_late: str = "drop",
    ) -> WindowedStream[S]:
        """Window options: ``grace_period`` (s, keeps a window open after its end),
        ``idle_flush_ms`` (period of the flush that closes quiet partitions' windows; 0 = off),
        ``event_time`` (the event's time: epoch ms, datetime or ISO text; default the message's
        ``created_at``), ``allowed_lateness`` (s of out-of-orderness the watermark tolerates) and
        ``on_late`` (``drop`` or ``include`` events older than the watermark)."""
        spec = window_spec(
            type_,
            size_ms,
            slide_ms,
            every,
            grace_period=grace_period,
            idle_flush_ms=idle_flush_ms,
            event_time=None if event_time is None else _adapt(event_time, "event_time", 2),
            allowed_lateness=allowed_lateness,
            on_late=on_late,
        )
        return WindowedStream(self, Stage("window", window=spec))

    def gate(self: S, fn: Callable[..., Any]) -> S:
        """Let values through while ``fn(value, context)`` returns True; the first False parks the
        rest of the partition's batch until the lease ends. ``context.state`` is the key's
        persistent state (see :func:`token_bucket_gate`)."""
        if not callable(fn):
            raise TypeError("gate() needs a function")
        return self._then(Stage("gate", fn))

    def to(self: S, queue: str, *, partition: str | Callable[..., Any] | None = None) -> S:
        """Push every value to ``queue`` in the cycle that acks the source (exactly once); the
        partition is the source's unless ``partition`` names or computes one."""
        if not isinstance(queue, str) or not queue:
            raise ValueError("to() needs a queue name")
        chosen = _adapt(partition, "to partition", 2) if callable(partition) else partition
        return self._then(Stage("to", queue=queue, partition=chosen))

    def foreach(self: S, fn: Callable[..., Any]) -> S:
        """Call ``fn(value[, context])`` for every value before the cycle commits (at least once)."""
        return self._then(Stage("foreach", _adapt(fn, "foreach", 2)))

    def _registration_call(self, settings: RunSettings) -> tuple[Any, Any]:
        chain = compile_chain(self._stages)
        sink = chain.sink.queue if chain.sink is not None and chain.sink.kind == "to" else None
        call = _stream_calls.register(
            settings.query_id, self._source, sink, config_hash(chain.shape), settings.reset
        )
        return chain, call


T = TypeVar("T", bound=StreamSpec)


class WindowedStream(Generic[T]):
    """A windowed stream: name how each window's values combine."""

    def __init__(self, stream: T, window: Stage) -> None:
        self._stream = stream
        self._window = window

    def reduce(self, fn: Callable[..., Any], initial: Json) -> T:
        """Fold each window's values with ``fn(acc, value[, context])``, from a copy of ``initial``."""
        json.dumps(initial)  # a JSON value, as it is stored
        stage = Stage("reduce", _adapt(fn, "reduce", 3), initial=initial)
        return self._stream._then(self._window)._then(stage)

    def aggregate(self, fields: Mapping[str, Callable[..., Any]]) -> T:
        """Named statistics per window: ``count``, ``sum``, ``min``, ``max``, ``avg`` of the numbers
        the extractors return; any other name sums. ``count`` counts 1 per value unless its
        extractor returns a number."""
        if not fields:
            raise ValueError("aggregate() needs at least one field")
        for name in fields:
            if name.startswith("__"):
                raise ValueError(f"aggregate field names cannot start with '__': {name}")
        adapted = tuple((name, _adapt(fn, f"aggregate {name}", 2)) for name, fn in fields.items())
        return self._stream._then(self._window)._then(Stage("aggregate", fields=adapted))


class Stream(StreamSpec):
    """A stream of the blocking client: ``client.stream("orders").map(...).to("out").run(query_id=...)``."""

    def run(
        self,
        query_id: str,
        *,
        batch_size: int = 200,
        max_partitions: int = 4,
        max_wait_millis: int = 1_000,
        reset: bool = False,
        consumer_group: str | None = None,
        subscription_mode: str | None = None,
        subscription_from: str | datetime | None = None,
        on_error: ErrorHandler | None = None,
        stop: threading.Event | None = None,
    ) -> StreamRunner:
        """Register the query and start processing in background threads; returns once registered.

        Raises:
            ValueError: the chain breaks a rule (say, a window without ``reduce``).
            ApiError: ``config_hash_mismatch`` (409) when the query exists with another chain and
                ``reset`` is not set; any other refusal of the registration.
        """
        settings = RunSettings(
            query_id,
            batch_size,
            max_partitions,
            max_wait_millis,
            reset,
            consumer_group,
            subscription_mode,
            subscription_from,
            on_error,
        )
        chain, call = self._registration_call(settings)
        client: Regina = self._client
        try:
            registration = client._t.send(call)
        except ApiError as error:
            raise _stream_calls.mismatch_with_hint(error, query_id) from error
        core = RunCore(chain, self._source, registration, settings, client._settings.long_poll_margin_ms)
        return StreamRunner(client._t, core, stop)


class AsyncStream(StreamSpec):
    """A stream of the asyncio client; ``await stream.run(query_id=...)`` starts it in tasks."""

    async def run(
        self,
        query_id: str,
        *,
        batch_size: int = 200,
        max_partitions: int = 4,
        max_wait_millis: int = 1_000,
        reset: bool = False,
        consumer_group: str | None = None,
        subscription_mode: str | None = None,
        subscription_from: str | datetime | None = None,
        on_error: ErrorHandler | None = None,
        stop: asyncio.Event | None = None,
    ) -> AsyncStreamRunner:
        """Register the query and start processing in tasks; returns once registered.

        Raises:
            ValueError: the chain breaks a rule (say, a window without ``reduce``).
            ApiError: ``config_hash_mismatch`` (409) when the query exists with another chain and
                ``reset`` is not set; any other refusal of the registration.
        """
        settings = RunSettings(
            query_id,
            batch_size,
            max_partitions,
            max_wait_millis,
            reset,
            consumer_group,
            subscription_mode,
            subscription_from,
            on_error,
        )
        chain, call = self._registration_call(settings)
        client: AsyncRegina = self._client
        try:
            registration = await client._t.send(call)
        except ApiError as error:
            raise _stream_calls.mismatch_with_hint(error, query_id) from error
        core = RunCore(chain, self._source, registration, settings, client._settings.long_poll_margin_ms)
        return AsyncStreamRunner(client._t, core, stop)
