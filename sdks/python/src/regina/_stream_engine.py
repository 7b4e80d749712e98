"""What a stream does with one partition's batch, without any I/O: the stateless operators, the
windows with their reducers, the gate and the idle flush. The runners feed it messages and state
rows and send what it returns (state operations, results and the ack) as one cycle.

State keys are shared by every Regina SDK: windows ``<tag>\\x1f<windowStart ISO>\\x1f<key>`` with
value ``{acc, windowStart, windowEnd}``; sessions ``sess:<gap>\\x1fopen\\x1f<key>`` with value
``{acc, sessionStart, lastEventTime, windowStart, windowEnd}``; the watermark ``__wm__`` with value
``{eventTimeMs}``; gate state under the record's key.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, TypeGuard

from ._models import Json, Message
from ._stream_chain import CompiledChain, GateContext, Stage, StreamContext, WindowSpec
from ._time import parse_instant

KEY_SEPARATOR = "\x1f"
WATERMARK_KEY = "__wm__"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_WEEK_ORIGIN_MS = 4 * 86_400_000  # Monday 1970-01-05T00:00:00Z


@dataclass(frozen=True)
class PartitionBatch:
    """One partition's share of a pop, in delivery order."""

    partition: str
    partition_id: str
    messages: Sequence[Message]


@dataclass(frozen=True)
class Record:
    """A value flowing through the chain; ``index`` is its source message's position (-1: none)."""

    value: Json
    context: StreamContext
    index: int


@dataclass
class BatchPlan:
    """What a batch (or a flush) turns into."""

    state_ops: list[dict[str, Any]] = field(default_factory=list)
    results: list[Record] = field(default_factory=list)
    settled: int = 0
    """How many leading messages the cycle settles; 0 means no cycle at all."""
    release_lease: bool = True
    """False when a gate parked the rest of the batch (the lease is kept)."""
    watermark: float | None = None
    late: int = 0
    allowed: int = 0
    denied: int = 0


@dataclass
class _Window:
    key: str
    start: float
    end: float
    acc: Json
    seeded: bool = False
    touched: bool = False


@dataclass(frozen=True)
class _Reducer:
    initial: Callable[[], Json]
    add: Callable[[Json, Json, StreamContext], Json]
    result: Callable[[Json], Json]


def to_ms(instant: datetime) -> int:
    """Epoch milliseconds of an aware datetime (truncated, as the other SDKs do)."""
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def iso_ms(ms: float) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2026-01-01T00:00:00.000Z``)."""
    instant = _EPOCH + timedelta(milliseconds=int(ms))
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


def process_batch(
    chain: CompiledChain, batch: PartitionBatch, rows: Mapping[str, Json], now_ms: int
) -> BatchPlan:
    """Run one batch through the chain; ``rows`` is the shard's state, ``now_ms`` the gate's clock."""
    records = [
        Record(m.data, StreamContext(batch.partition, batch.partition_id, batch.partition_id, m), i)
        for i, m in enumerate(batch.messages)
    ]
    plan = BatchPlan(results=apply_stateless(chain.pre, records), settled=len(batch.messages))
    if chain.gate is not None and chain.gate.fn is not None:
        _gate_plan(chain.gate.fn, rows, now_ms, plan)
    elif chain.window is not None:
        latest = max(to_ms(m.created_at) for m in batch.messages)
        _window_plan(chain, rows, latest, batch, plan)
    if chain.stateful:
        plan.results = apply_stateless(chain.post, plan.results)
    return plan


def apply_stateless(stages: Sequence[Stage], records: list[Record]) -> list[Record]:
    """Apply map / filter / flat_map / key_by in order."""
    for stage in stages:
        fn = stage.fn
        assert fn is not None
        following: list[Record] = []
        for record in records:
            out = fn(record.value, record.context)
            if stage.kind == "map":
                following.append(replace(record, value=out))
            elif stage.kind == "filter":
                if out:
                    following.append(record)
            elif stage.kind == "flatMap":
                if not isinstance(out, (list, tuple)):
                    raise TypeError("flat_map() must return a list")
                following.extend(replace(record, value=value) for value in out)
            elif stage.kind == "keyBy":
                following.append(replace(record, context=replace(record.context, key=_text(out))))
        records = following
    return records


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _gate_plan(gate: Callable[..., Any], rows: Mapping[str, Json], now_ms: int, plan: BatchPlan) -> None:
    live: dict[str, dict[str, Any]] = {}
    touched: list[str] = []
    allowed: list[Record] = []
    for record in plan.results:
        key = record.context.key
        if key not in live:
            saved = rows.get(key)
            live[key] = copy.deepcopy(saved) if isinstance(saved, dict) else {}
        c = record.context
        context = GateContext(
            c.partition, c.partition_id, key, c.message, state=live[key], stream_time_ms=now_ms
        )
        decision = gate(record.value, context)
        if not isinstance(decision, bool):
            raise TypeError("gate() must return True or False")
        if not decision:
            plan.denied = 1
            plan.settled = record.index
            plan.release_lease = False
            break
        if key not in touched:
            touched.append(key)
        allowed.append(record)
    plan.allowed = len(allowed)
    plan.results = allowed
    plan.state_ops = [{"type": "upsert", "key": key, "value": live[key]} for key in touched]


def _window_plan(
    chain: CompiledChain,
    rows: Mapping[str, Json],
    processing_clock: int,
    batch: PartitionBatch,
    plan: BatchPlan,
) -> None:
    window = chain.window
    assert window is not None
    reducer = _reducer_of(chain)
    before = _watermark_of(rows) if window.event_time is not None else None
    timed: list[tuple[Record, float]] = []
    latest = -math.inf
    for record in plan.results:
        time = _event_time_of(window, record)
        if before is not None and time < before:
            plan.late += 1
            if window.on_late == "drop":
                continue
        latest = max(latest, time)
        timed.append((record, time))
    clock: float = processing_clock
    if window.event_time is not None:
        clock = max(before if before is not None else -math.inf, latest - window.lateness_ms)
        if math.isfinite(clock):
            plan.watermark = clock
        if plan.watermark is not None and plan.watermark != before:
            plan.state_ops.append(
                {"type": "upsert", "key": WATERMARK_KEY, "value": {"eventTimeMs": _json_number(clock)}}
            )
    if window.type == "session":
        closed = _session_plan(window, reducer, timed, rows, clock, plan)
    else:
        closed = _fixed_plan(window, reducer, timed, rows, clock, plan)
    plan.results = _sorted_results(closed, reducer, batch.partition, batch.partition_id)


def _fixed_plan(
    window: WindowSpec,
    reducer: _Reducer,
    timed: list[tuple[Record, float]],
    rows: Mapping[str, Json],
    clock: float,
    plan: BatchPlan,
) -> list[_Window]:
    prefix = window.tag + KEY_SEPARATOR
    windows: dict[str, _Window] = {}
    for key, value in rows.items():
        seeded = _seeded_window(key, value, prefix)
        if seeded is not None:
            windows[key] = seeded
    for record, time in timed:
        for start in window_starts(window, time):
            state_key = window_key(window.tag, start, record.context.key)
            entry = windows.get(state_key)
            if entry is None:
                end = start + window.size_ms
                entry = windows[state_key] = _Window(record.context.key, start, end, reducer.initial())
            context = replace(record.context, window_start=int(entry.start), window_end=int(entry.end))
            entry.acc = reducer.add(entry.acc, record.value, context)
            entry.touched = True
    closed: list[_Window] = []
    for state_key, entry in windows.items():
        if entry.end + window.grace_ms <= clock:
            closed.append(entry)
            if entry.seeded:
                plan.state_ops.append({"type": "delete", "key": state_key})
        elif entry.touched:
            value = {
                "acc": entry.acc,
                "windowStart": _json_number(entry.start),
                "windowEnd": _json_number(entry.end),
            }
            plan.state_ops.append({"type": "upsert", "key": state_key, "value": value})
    return closed


@dataclass
class _Session:
    start: float
    last: float
    acc: Json
    dirty: bool = True


def _session_plan(
    window: WindowSpec,
    reducer: _Reducer,
    timed: list[tuple[Record, float]],
    rows: Mapping[str, Json],
    clock: float,
    plan: BatchPlan,
) -> list[_Window]:
    prefix = session_prefix(window)
    sessions: dict[str, _Session] = {}
    seeded: list[str] = []
    for key, value in rows.items():
        if not key.startswith(prefix) or not isinstance(value, dict):
            continue
        start, last = value.get("sessionStart"), value.get("lastEventTime")
        if _is_number(start) and _is_number(last):
            sessions[key[len(prefix) :]] = _Session(start, last, value.get("acc"), dirty=False)
            seeded.append(key[len(prefix) :])
    closed: list[_Window] = []
    gap = window.size_ms
    for record, time in timed:
        key = record.context.key
        session = sessions.get(key)
        if session is not None and time > session.last + gap:
            closed.append(_Window(key, session.start, session.last + gap, session.acc))
            session = None
        if session is None:
            session = sessions[key] = _Session(time, time, reducer.initial())
        session.start, session.last = min(session.start, time), max(session.last, time)
        context = replace(record.context, window_start=int(session.start), window_end=int(session.last + gap))
        session.acc = reducer.add(session.acc, record.value, context)
        session.dirty = True
    for key, session in list(sessions.items()):
        if session.last + gap + window.grace_ms <= clock:
            closed.append(_Window(key, session.start, session.last + gap, session.acc))
            del sessions[key]
    for key in dict.fromkeys([*seeded, *sessions]):
        session = sessions.get(key)
        if session is None:
            plan.state_ops.append({"type": "delete", "key": prefix + key})
        elif session.dirty:
            value = {
                "acc": session.acc,
                "sessionStart": _json_number(session.start),
                "lastEventTime": _json_number(session.last),
                "windowStart": _json_number(session.start),
                "windowEnd": _json_number(session.last + gap),
            }
            plan.state_ops.append({"type": "upsert", "key": prefix + key, "value": value})
    return closed


def flush_plan(
    chain: CompiledChain, partition: str, partition_id: str, rows: Mapping[str, Json]
) -> BatchPlan:
    """The idle flush of one partition: every ripe row ``state/get`` returned (already filtered by
    the window's key prefix and ``windowEnd``) becomes a result, and its row is deleted."""
    window = chain.window
    assert window is not None
    reducer = _reducer_of(chain)
    prefix = flush_prefix(window)
    closed: list[_Window] = []
    plan = BatchPlan()
    for key, value in rows.items():
        seed = _seeded_session if window.type == "session" else _seeded_window
        entry = seed(key, value, prefix)
        if entry is None:
            continue
        closed.append(entry)
        plan.state_ops.append({"type": "delete", "key": key})
    plan.results = apply_stateless(chain.post, _sorted_results(closed, reducer, partition, partition_id))
    return plan


def flush_prefix(window: WindowSpec) -> str:
    """The ``key_prefix`` of the window's rows for the idle flush."""
    return session_prefix(window) if window.type == "session" else window.tag + KEY_SEPARATOR


def session_prefix(window: WindowSpec) -> str:
    """Prefix of the open-session rows."""
    return f"{window.tag}{KEY_SEPARATOR}open{KEY_SEPARATOR}"


def _seeded_window(key: str, value: Json, prefix: str) -> _Window | None:
    if not key.startswith(prefix) or not isinstance(value, dict):
        return None
    start, end = value.get("windowStart"), value.get("windowEnd")
    separator = key.find(KEY_SEPARATOR, len(prefix))
    if not _is_number(start) or not _is_number(end) or separator < 0:
        return None
    return _Window(key[separator + 1 :], start, end, value.get("acc"), seeded=True)


def _seeded_session(key: str, value: Json, prefix: str) -> _Window | None:
    if not key.startswith(prefix) or not isinstance(value, dict):
        return None
    start, end = value.get("sessionStart"), value.get("windowEnd")
    if not _is_number(start) or not _is_number(end):
        return None
    return _Window(key[len(prefix) :], start, end, value.get("acc"), seeded=True)


def _sorted_results(
    closed: list[_Window], reducer: _Reducer, partition: str, partition_id: str
) -> list[Record]:
    """Closed windows as results, ordered by start, end, then key (as every SDK emits them)."""
    closed.sort(key=lambda w: (w.start, w.end, w.key.encode()))
    return [
        Record(
            reducer.result(w.acc),
            StreamContext(partition, partition_id, w.key, None, int(w.start), int(w.end)),
            -1,
        )
        for w in closed
    ]


def window_starts(window: WindowSpec, time: float) -> list[int]:
    """Starts of the windows an event at ``time`` belongs to, oldest first."""
    if window.type == "sliding":
        latest = math.floor(time / window.slide_ms) * window.slide_ms
        starts: list[int] = []
        start = latest
        while start > time - window.size_ms:
            starts.insert(0, start)
            start -= window.slide_ms
        return starts
    if window.type == "cron" and window.every == "week":
        return [math.floor((time - _WEEK_ORIGIN_MS) / window.size_ms) * window.size_ms + _WEEK_ORIGIN_MS]
    return [math.floor(time / window.size_ms) * window.size_ms]


def window_key(tag: str, start: float, key: str) -> str:
    """The state key of one window of one key."""
    return KEY_SEPARATOR.join((tag, iso_ms(start), key))


def _event_time_of(window: WindowSpec, record: Record) -> float:
    if window.event_time is None:
        message = record.context.message
        assert message is not None
        return to_ms(message.created_at)
    raw = window.event_time(record.value, record.context)
    if isinstance(raw, datetime):
        return to_ms(raw if raw.tzinfo else raw.replace(tzinfo=timezone.utc))
    if isinstance(raw, str):
        try:
            return to_ms(parse_instant(raw))
        except ValueError:
            pass
    elif _is_number(raw) and math.isfinite(raw):
        return raw
    raise ValueError(f"event_time returned no valid time: {raw!r}")


def _watermark_of(rows: Mapping[str, Json]) -> float | None:
    value = rows.get(WATERMARK_KEY)
    mark = value.get("eventTimeMs") if isinstance(value, dict) else None
    return mark if _is_number(mark) and math.isfinite(mark) else None


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_number(value: float) -> int | float:
    """Whole numbers as ints, so that the JSON text matches the other SDKs'."""
    return int(value) if float(value).is_integer() else value


def _reducer_of(chain: CompiledChain) -> _Reducer:
    stage = chain.reducer
    if stage is None:
        raise ValueError("a window must be followed by reduce or aggregate")
    if stage.kind == "reduce":
        fn = stage.fn
        assert fn is not None
        initial = json.dumps(stage.initial)
        return _Reducer(lambda: json.loads(initial), fn, lambda acc: acc)
    return _aggregate_reducer(stage.fields)


def _aggregate_reducer(fields: Sequence[tuple[str, Callable[..., Any]]]) -> _Reducer:
    """``aggregate({name: extractor})``: ``count`` adds the extractor's number (1 when it returns
    none), ``sum`` adds, ``min`` / ``max`` keep the extremes (``None`` before the first number),
    ``avg`` the mean, any other name sums. Non-numbers are ignored. Results carry the named fields."""
    names = [name for name, _ in fields]

    def initial() -> Json:
        acc: dict[str, Any] = {name: None if name in ("min", "max") else 0 for name in names}
        if "avg" in names:
            acc.update(__avgSum=0, __avgCount=0)
        return acc

    def add(current: Json, value: Json, context: StreamContext) -> Json:
        acc = dict(current) if isinstance(current, dict) else initial()
        for name, extract in fields:
            raw = extract(value, context)
            number = raw if _is_number(raw) and math.isfinite(raw) else None
            previous = acc.get(name)
            if name == "count":
                acc["count"] = _number(previous) + (1 if number is None else number)
            elif number is None:
                continue
            elif name == "min":
                acc["min"] = number if not _is_number(previous) else min(previous, number)
            elif name == "max":
                acc["max"] = number if not _is_number(previous) else max(previous, number)
            elif name == "avg":
                acc["__avgSum"] = _number(acc.get("__avgSum")) + number
                acc["__avgCount"] = _number(acc.get("__avgCount")) + 1
                acc["avg"] = acc["__avgSum"] / acc["__avgCount"]
            else:
                acc[name] = _number(previous) + number
        return acc

    def result(acc: Json) -> Json:
        return {name: acc.get(name) for name in names} if isinstance(acc, dict) else acc

    return _Reducer(initial, add, result)


def _number(value: object) -> Any:
    return value if _is_number(value) else 0
