"""The stream engine without I/O: windows, sessions, aggregates, lateness and the chain rules,
computed from messages and state rows (the same cases as the other SDKs' engine tests)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from fake_streams import message
from regina import Message, Regina
from regina._stream_chain import compile_chain
from regina._stream_engine import PartitionBatch, process_batch, window_starts

client = Regina("http://127.0.0.1:9")


def t_of(value: dict[str, Any]) -> int:
    return int(value["t"])


def chain_of(stream: Any) -> Any:
    return compile_chain(stream._stages)


def batch(*data: Any) -> PartitionBatch:
    return PartitionBatch("a", "pid-a", [Message.from_wire(message("a", d)) for d in data])


def apply(rows: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    rows = dict(rows)
    for op in ops:
        if op["type"] == "upsert":
            rows[op["key"]] = op["value"]
        else:
            rows.pop(op["key"], None)
    return dict(sorted(rows.items()))


def test_sliding_windows_cover_each_event_twice() -> None:
    chain = chain_of(
        client.stream("s")
        .window_sliding(10, 5, event_time=t_of)
        .aggregate({"count": lambda v: 1})
        .map(lambda v, ctx: {"start": ctx.window_start, **v})
    )
    plan = process_batch(chain, batch(*({"t": t} for t in (101_000, 106_000, 112_000, 140_000))), {}, 0)
    assert [r.value for r in plan.results] == [
        {"start": 95_000, "count": 1},
        {"start": 100_000, "count": 2},
        {"start": 105_000, "count": 2},
        {"start": 110_000, "count": 1},
    ]
    assert [op["key"] for op in plan.state_ops] == [
        "__wm__",
        "slide:10:5\x1f1970-01-01T00:02:15.000Z\x1fpid-a",
        "slide:10:5\x1f1970-01-01T00:02:20.000Z\x1fpid-a",
    ]


def test_sessions_close_on_gap_and_watermark() -> None:
    chain = chain_of(
        client.stream("s")
        .key_by(lambda v: v["u"])
        .window_session(2, event_time=t_of)
        .reduce(lambda total, v: total + v["v"], 0)
    )
    first = process_batch(
        chain,
        batch(
            {"u": "a", "t": 1000, "v": 1},
            {"u": "b", "t": 1200, "v": 10},
            {"u": "a", "t": 1500, "v": 2},
            {"u": "a", "t": 5000, "v": 4},
        ),
        {},
        0,
    )
    got = [(r.context.key, r.value, r.context.window_start, r.context.window_end) for r in first.results]
    assert got == [("a", 3, 1000, 3500), ("b", 10, 1200, 3200)]
    rows = apply({}, first.state_ops)
    assert list(rows) == ["__wm__", "sess:2\x1fopen\x1fa"]
    second = process_batch(chain, batch({"u": "c", "t": 9000, "v": 100}), rows, 0)
    assert [(r.context.key, r.value) for r in second.results] == [("a", 4)]
    assert list(apply(rows, second.state_ops)) == ["__wm__", "sess:2\x1fopen\x1fc"]


def test_cron_weeks_start_on_monday() -> None:
    week = chain_of(client.stream("s").window_cron("week").reduce(lambda a, v: 0, 0)).window
    wednesday = int(datetime(2026, 1, 7, 15, tzinfo=timezone.utc).timestamp() * 1000)
    monday = int(datetime(2026, 1, 5, tzinfo=timezone.utc).timestamp() * 1000)
    assert window_starts(week, wednesday) == [monday]


def test_aggregate_across_batches() -> None:
    chain = chain_of(
        client.stream("s")
        .window_tumbling(10, event_time=t_of)
        .aggregate(
            {name: (lambda v: v["v"]) for name in ("sum", "min", "max", "avg")} | {"count": lambda v: 1}
        )
    )
    first = process_batch(chain, batch({"t": 1, "v": 4}, {"t": 2, "v": 1}), {}, 0)
    assert first.results == []
    second = process_batch(
        chain, batch({"t": 3, "v": 7}, {"t": 20_000, "v": 0}), apply({}, first.state_ops), 0
    )
    assert [r.value for r in second.results] == [{"sum": 12, "min": 1, "max": 7, "avg": 4, "count": 3}]


@pytest.mark.parametrize(("on_late", "expected"), [("drop", []), ("include", [1])])
def test_late_events(on_late: str, expected: list[int]) -> None:
    chain = chain_of(
        client.stream("s")
        .window_tumbling(10, event_time=t_of, on_late=on_late)
        .reduce(lambda s, v: s + v["v"], 0)
    )
    rows = {"__wm__": {"eventTimeMs": 50_000}}
    plan = process_batch(chain, batch({"t": 1000, "v": 1}, {"t": 60_000, "v": 2}), rows, 0)
    assert plan.late == 1 and [r.value for r in plan.results] == expected


def test_chain_rules() -> None:
    s = client.stream("s")
    bad = [
        s.window_tumbling(1).reduce(lambda a, v: a, 0).window_tumbling(1).reduce(lambda a, v: a, 0),
        s.to("x").map(lambda v: v),
        s.flat_map(lambda v: [v]).gate(lambda v, c: True),
        s.gate(lambda v, c: True).key_by(str),
    ]
    for stream in bad:
        with pytest.raises(ValueError):
            stream.config_hash()
    with pytest.raises(ValueError, match="multiple"):
        s.window_sliding(10, 3)
    with pytest.raises(ValueError, match="milliseconds"):
        s.window_tumbling(0.0005)
