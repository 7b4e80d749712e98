"""The stream runners' requests, against a local stand-in of the broker: what each operator sends
in its cycles, how state is seeded and written, retries, and the registration errors. The
blocking runner is driven here; ``test_streams_async`` drives the asyncio one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fake_streams import FakeStreams, fake_streams, message
from regina import ApiError, Regina, StreamRunner, token_bucket_gate

SEP = "\x1f"
QUERY_ID = "00000000-0000-4000-8000-000000000001"


@pytest.fixture
def fake() -> Iterator[FakeStreams]:
    with fake_streams() as server:
        yield server


@pytest.fixture
def client(fake: FakeStreams) -> Iterator[Regina]:
    with Regina(fake.url, retry_base_ms=1, retry_max_ms=5) as c:
        yield c


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def cycles_after(fake: FakeStreams, runner: StreamRunner, count: int) -> list[Any]:
    until(lambda: len(fake.requests("/streams/v1/cycle")) >= count)
    runner.stop()
    return [seen.body for seen in fake.requests("/streams/v1/cycle")]


def test_filter_map_to_sends_one_cycle_per_partition(fake: FakeStreams, client: Regina) -> None:
    a1, a2, b1, a3 = (
        message("a", {"n": 1}),
        message("a", {"n": 2}),
        message("b", {"n": 3}),
        message("a", {"n": 4}),
    )
    fake.pops.append([a1, a2, b1, a3])
    runner = (
        client.stream("source")
        .filter(lambda v: v["n"] != 2)
        .map(lambda v, ctx: {"doubled": v["n"] * 2, "from": ctx.partition})
        .to("sink")
        .run("q")
    )
    first, second = cycles_after(fake, runner, 2)
    registration = fake.requests("/streams/v1/queries")[0].body
    assert (
        registration["name"] == "q"
        and registration["sink_queue"] == "sink"
        and registration["reset"] is False
    )
    assert len(registration["config_hash"]) == 64
    assert fake.requests("/streams/v1/state/get") == []
    assert first["partition_id"] == "pid-a" and second["partition_id"] == "pid-b"
    assert first["consumer_group"] == "streams.q" and first["state_ops"] == []
    assert first["ack"] == {
        "transactionId": a3["transactionId"],
        "leaseId": "lease-1",
        "status": "completed",
        "count": 3,
    }
    assert "release_lease" not in first
    assert [(i["queue"], i["partition"], i["payload"]) for i in first["push_items"]] == [
        ("sink", "a", {"doubled": 2, "from": "a"}),
        ("sink", "a", {"doubled": 8, "from": "a"}),
    ]
    assert all(i["transactionId"] for i in first["push_items"])
    assert second["ack"]["transactionId"] == b1["transactionId"] and second["ack"]["count"] == 1
    metrics = runner.metrics()
    assert (metrics.cycles_total, metrics.messages_total, metrics.push_items_total) == (2, 4, 3)
    assert metrics.errors_total == 0


def test_flat_map_key_by_and_computed_partition(fake: FakeStreams, client: Regina) -> None:
    fake.pops.append([message("a", "x y")])
    runner = (
        client.stream("source")
        .flat_map(str.split)
        .key_by(lambda word: word)
        .to("sink", partition=lambda word, ctx: f"{ctx.key}-{word}")
        .run("q")
    )
    (cycle,) = cycles_after(fake, runner, 1)
    assert [(i["partition"], i["payload"]) for i in cycle["push_items"]] == [("x-x", "x"), ("y-y", "y")]


def test_failing_operator_acks_failed_and_reports(fake: FakeStreams, client: Regina) -> None:
    first = message("a", 1)
    fake.pops.append([first, message("a", 2)])
    errors: list[str] = []

    def check(value: int) -> int:
        if value == 2:
            raise ValueError("bad value")
        return value

    runner = (
        client.stream("source")
        .map(check)
        .to("sink")
        .run("q", on_error=lambda error, ctx: errors.append(f"{ctx.phase}:{error}"))
    )
    until(lambda: len(fake.requests("/api/v1/ack")) == 1)
    runner.stop()
    assert fake.requests("/streams/v1/cycle") == []
    ack = fake.requests("/api/v1/ack")[0].body
    assert ack["transactionId"] == first["transactionId"] and ack["status"] == "failed"
    assert ack["leaseId"] == "lease-1" and ack["error"] == "bad value"
    assert errors == ["process:bad value"]
    assert runner.metrics().errors_total == 1 and runner.metrics().last_error == "bad value"


def test_cycle_retried_on_503_429_408_with_the_same_body(fake: FakeStreams, client: Regina) -> None:
    fake.pops.append([message("a", 1)])
    busy = {"success": False, "error": "busy", "code": "overloaded"}
    fake.fail("/streams/v1/cycle", (503, busy), (429, busy), (408, busy))
    runner = client.stream("source").to("sink").run("q")
    cycles = cycles_after(fake, runner, 4)
    assert len(cycles) == 4 and all(c == cycles[0] for c in cycles)
    assert runner.metrics().cycles_total == 1 and runner.metrics().errors_total == 0


def test_other_4xx_and_success_false_are_failures(fake: FakeStreams, client: Regina) -> None:
    fake.pops.extend([[message("a", 1)], [message("a", 2)]])
    fake.fail(
        "/streams/v1/cycle",
        (400, {"success": False, "error": "Unknown state_op type: x", "code": "validation_failed"}),
        (200, {"success": False, "error": "refused", "code": "internal"}),
    )
    codes: list[str] = []
    runner = client.stream("source").to("sink").run("q", on_error=lambda e, _: codes.append(e.code))
    until(lambda: len(fake.requests("/api/v1/ack")) == 2)
    runner.stop()
    assert len(fake.requests("/streams/v1/cycle")) == 2
    assert codes == ["validation_failed", "internal"]


def test_changed_chain_needs_reset(fake: FakeStreams, client: Regina) -> None:
    client.stream("source").map(lambda v: v).to("sink").run("q").stop()
    changed = client.stream("source").filter(lambda v: True).to("sink")
    with pytest.raises(ApiError) as caught:
        changed.run("q")
    assert caught.value.code == "config_hash_mismatch" and caught.value.status == 409
    assert "config_hash mismatch" in caught.value.message and "reset=True" in caught.value.message
    runner = changed.run("q", reset=True)
    assert (runner.registration.fresh, runner.registration.reset) == (False, True)
    runner.stop()


def test_window_seeds_emits_and_deletes(fake: FakeStreams, client: Regina) -> None:
    old = f"tumb:10{SEP}2026-01-01T00:00:00.000Z{SEP}pid-a"
    start = 1767225600000  # 2026-01-01T00:00:00Z
    fake.shard(QUERY_ID, "pid-a")[old] = {"acc": 5, "windowStart": start, "windowEnd": start + 10_000}
    fake.pops.append([message("a", 1, "2026-01-01T00:00:04Z"), message("a", 2, "2026-01-01T00:00:12Z")])
    runner = (
        client.stream("source")
        .window_tumbling(10, idle_flush_ms=0)
        .reduce(lambda acc, v: acc + v, 0)
        .to("sink")
        .run("q")
    )
    (cycle,) = cycles_after(fake, runner, 1)
    assert fake.requests("/streams/v1/state/get")[0].body == {
        "query_id": QUERY_ID,
        "partition_id": "pid-a",
        "keys": [],
    }
    assert cycle["state_ops"] == [
        {"type": "delete", "key": old},
        {
            "type": "upsert",
            "key": f"tumb:10{SEP}2026-01-01T00:00:10.000Z{SEP}pid-a",
            "value": {"acc": 2, "windowStart": start + 10_000, "windowEnd": start + 20_000},
        },
    ]
    assert [i["payload"] for i in cycle["push_items"]] == [6]


def test_watermark_is_kept_and_late_events_dropped(fake: FakeStreams, client: Regina) -> None:
    fake.shard(QUERY_ID, "pid-a")["__wm__"] = {"eventTimeMs": 5_000}
    fake.pops.append([message("a", {"t": 4_000}), message("a", {"t": 6_000}), message("a", {"t": 21_000})])
    runner = (
        client.stream("source")
        .window_tumbling(10, event_time=lambda v: v["t"], allowed_lateness=1, idle_flush_ms=0)
        .aggregate({"count": lambda v: 1, "max": lambda v: v["t"]})
        .to("sink")
        .run("q")
    )
    (cycle,) = cycles_after(fake, runner, 1)
    assert {"type": "upsert", "key": "__wm__", "value": {"eventTimeMs": 20_000}} in cycle["state_ops"]
    assert [i["payload"] for i in cycle["push_items"]] == [{"count": 1, "max": 6_000}]
    assert runner.metrics().late_events_total == 1


def test_idle_flush_reads_ripe_rows_and_commits_without_ack(fake: FakeStreams, client: Regina) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    fake.pops.append([message("a", 3, now)])
    runner = (
        client.stream("source")
        .window_tumbling(1, idle_flush_ms=50)
        .reduce(lambda acc, v: acc + v, 0)
        .to("sink")
        .run("q")
    )
    until(lambda: any(c.body["ack"] is None for c in fake.requests("/streams/v1/cycle")))
    runner.stop()
    read = next(s.body for s in fake.requests("/streams/v1/state/get") if "key_prefix" in s.body)
    assert read["key_prefix"] == f"tumb:1{SEP}" and isinstance(read["ripe_at_or_before"], int)
    flush = next(c.body for c in fake.requests("/streams/v1/cycle") if c.body["ack"] is None)
    assert [op["type"] for op in flush["state_ops"]] == ["delete"]
    assert [i["payload"] for i in flush["push_items"]] == [3]
    assert runner.metrics().flush_cycles_total == 1


def test_gate_commits_the_allowed_prefix_and_keeps_the_lease(fake: FakeStreams, client: Regina) -> None:
    batch = [message("a", n) for n in (1, 2, 3, 4)]
    fake.pops.append(batch)
    runner = client.stream("source").gate(token_bucket_gate(2, 0.001)).to("sink").run("q")
    (cycle,) = cycles_after(fake, runner, 1)
    assert cycle["release_lease"] is False
    assert cycle["ack"] == {
        "transactionId": batch[1]["transactionId"],
        "leaseId": "lease-1",
        "status": "completed",
        "count": 2,
    }
    assert [i["payload"] for i in cycle["push_items"]] == [1, 2]
    assert [(op["type"], op["key"]) for op in cycle["state_ops"]] == [("upsert", "pid-a")]
    assert (runner.metrics().gate_allows_total, runner.metrics().gate_denials_total) == (2, 1)


def test_gate_allowing_nothing_sends_no_cycle(fake: FakeStreams, client: Regina) -> None:
    fake.pops.extend([[message("a", 1)], [message("a", 2)]])
    runner = client.stream("source").gate(lambda v, ctx: False).to("sink").run("q")
    until(lambda: runner.metrics().gate_denials_total == 2)
    runner.stop()
    assert fake.requests("/streams/v1/cycle") == []


def test_stop_event_ends_the_run_and_a_refused_pop_raises_from_wait(
    fake: FakeStreams, client: Regina
) -> None:
    stop = threading.Event()
    runner = client.stream("source").to("sink").run("q", stop=stop)
    assert runner.wait(timeout=0.05) is False
    stop.set()
    assert runner.wait(timeout=10) is True
    fake.fail(
        "/api/v1/pop/queue/source", (400, {"error": "batch must be at least 1", "code": "invalid_parameter"})
    )
    refused = client.stream("source").to("sink").run("q")
    with pytest.raises(ApiError) as caught:
        refused.wait(timeout=10)
    assert caught.value.code == "invalid_parameter"
