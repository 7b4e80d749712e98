"""The sans-IO pieces: ids, instants, wire shapes, the push buffer and the consumer's plan."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from regina import Message, uuid7
from regina._buffer import BufferOptions, PushBuffer
from regina._calls import ack_item_wire, pop, push_item_wire, seek
from regina._consume import ConsumePlan, ConsumeSettings, Pause, PopStep, Stop
from regina._time import format_instant, parse_instant


def _message(n: int, lease: str = "lease-1") -> Message:
    return Message(
        id=f"id-{n}",
        transaction_id=f"t{n}",
        trace_id=None,
        data=n,
        producer_sub=None,
        created_at=datetime.now(timezone.utc),
        partition_id="p-id",
        partition="p",
        queue="q",
        lease_id=lease,
        consumer_group="g",
        retry_count=0,
    )


def test_uuid7_is_version_7_and_strictly_increasing() -> None:
    ids = [uuid7() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    stamp_ms = int(ids[0].replace("-", "")[:12], 16)
    assert abs(stamp_ms / 1000 - datetime.now(timezone.utc).timestamp()) < 5


@pytest.mark.parametrize(
    "text",
    [
        "2026-05-10T09:00:01.123456Z",
        "2026-05-10T09:00:01.123Z",
        "2026-05-10T09:00:01.1234567Z",
        "2026-05-10T11:00:01.123+02:00",
        "2026-05-10T09:00:01.123",
    ],
)
def test_instants_of_any_precision_parse_to_utc(text: str) -> None:
    parsed = parse_instant(text)
    assert parsed.astimezone(timezone.utc).replace(microsecond=0) == datetime(
        2026, 5, 10, 9, 0, 1, tzinfo=timezone.utc
    )
    assert parsed.microsecond // 1000 == 123


def test_instants_are_sent_as_utc_with_milliseconds() -> None:
    local = datetime(2026, 5, 10, 11, 0, 1, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_instant(local) == "2026-05-10T09:00:01.123Z"
    assert format_instant(datetime(2026, 5, 10, 9, 0, 1)) == "2026-05-10T09:00:01.000Z"
    assert format_instant("now") == "now"


def test_push_items_get_a_transaction_id_unless_they_have_one() -> None:
    generated = push_item_wire("q", "p", {"payload": {"a": 1}})
    kept = push_item_wire("q", "p", {"payload": None, "transactionId": "mine", "traceId": "trace-7"})
    assert uuid.UUID(generated["transactionId"]).version == 7
    assert "traceId" not in generated
    assert kept == {
        "queue": "q",
        "partition": "p",
        "payload": None,
        "transactionId": "mine",
        "traceId": "trace-7",
    }


def test_acks_carry_the_lease_and_group_of_the_delivery() -> None:
    assert ack_item_wire(_message(1), "failed", "boom", None) == {
        "transactionId": "t1",
        "partitionId": "p-id",
        "status": "failed",
        "leaseId": "lease-1",
        "consumerGroup": "g",
        "error": "boom",
    }
    auto_acked = ack_item_wire(_message(2, lease=""), "completed", None, "other")
    assert "leaseId" not in auto_acked and auto_acked["consumerGroup"] == "other"


def test_pop_names_are_percent_encoded_and_defaults_left_out() -> None:
    request = pop("a b/c", partition="p?", batch=5).request
    assert request.path == "/api/v1/pop/queue/a%20b%2Fc/partition/p%3F"
    assert dict(request.query) == {"batch": "5", "wait": "false", "timeout": "30000"}
    assert request.timeout_s is None
    long_poll = pop("q", wait=True, timeout_ms=2000, long_poll_margin_ms=500, auto_ack=True).request
    assert long_poll.timeout_s == 2.5 and ("autoAck", "true") in long_poll.query


def test_seek_needs_exactly_one_target() -> None:
    with pytest.raises(ValueError):
        seek("g", "q")
    with pytest.raises(ValueError):
        seek("g", "q", to_end=True, timestamp="2026-01-01")
    assert seek("g", "q", to_end=True).request.body == {"toEnd": True}


def test_buffer_flushes_by_count_and_time_and_keeps_order_on_failure() -> None:
    buffer = PushBuffer()
    options = BufferOptions(message_count=3, time_ms=1000)
    key = ("q", "p")
    assert not buffer.add(key, [{"n": 1}], options, now=0.0)
    assert buffer.due(0.5) == [] and buffer.due(1.0) == [key]
    assert buffer.add(key, [{"n": 2}, {"n": 3}], options, now=0.2)
    taken = buffer.take(key)
    buffer.add(key, [{"n": 4}], options, now=2.0)
    buffer.put_back(key, taken, due_at=3.0)
    assert buffer.take(key) == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]
    assert buffer.size() == 0 and buffer.next_deadline() is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plan_never_pops_beyond_the_limit_across_workers() -> None:
    plan = ConsumePlan(ConsumeSettings(queue="q", batch=10, limit=12, concurrency=2))
    first, second = plan.next(), plan.next()
    assert isinstance(first, PopStep) and isinstance(second, PopStep)
    assert (first.reserved, second.reserved) == (10, 2)
    assert isinstance(plan.next(), Pause)
    plan.received(second, [])
    third = plan.next()
    assert isinstance(third, PopStep) and third.reserved == 2
    delivered = [_message(n) for n in range(10)]
    plan.received(first, delivered)
    plan.handled_unit(delivered)
    plan.received(third, delivered[:2])
    plan.handled_unit(delivered[:2])
    assert plan.handled == 12 and isinstance(plan.next(), Stop)


def test_plan_stops_after_idle_time_and_shortens_the_long_poll() -> None:
    clock = Clock()
    plan = ConsumePlan(ConsumeSettings(queue="q", idle_ms=1500, timeout_ms=30_000), clock)
    step = plan.next()
    assert isinstance(step, PopStep) and ("timeout", "1500") in step.call.request.query
    plan.received(step, [])
    clock.now += 1.0
    step = plan.next(slice_ms=200)
    assert isinstance(step, PopStep) and ("timeout", "200") in step.call.request.query
    plan.received(step, [])
    clock.now += 0.6
    assert isinstance(plan.next(), Stop)


def test_plan_acks_success_failure_and_release() -> None:
    plan = ConsumePlan(ConsumeSettings(queue="q", group="g", each=True))
    units = plan.units([_message(1), _message(2)])
    assert [[m.transaction_id for m in unit] for unit in units] == [["t1"], ["t2"]]
    done = plan.settle_call(units[0], None)
    failed = plan.settle_call(units[1], ValueError("bad input"))
    assert (
        done is not None and done.request.path == "/api/v1/ack" and done.request.body["status"] == "completed"
    )
    assert failed is not None and failed.request.body["error"] == "bad input"
    released = plan.release_call([_message(1), _message(2)])
    assert released is not None and released.request.path == "/api/v1/ack/batch"
    assert {a["status"] for a in released.request.body["acknowledgments"]} == {"retry"}
    auto = ConsumePlan(ConsumeSettings(queue="q", auto_ack=True))
    assert auto.settle_call([_message(1)], None) is None


def test_error_text_falls_back_to_the_exception_type() -> None:
    plan = ConsumePlan(ConsumeSettings(queue="q"))
    call = plan.settle_call([_message(1)], KeyError())
    assert call is not None and re.fullmatch(r"KeyError", call.request.body["error"])


def test_plan_stops_idle_workers_even_while_another_pop_is_in_flight() -> None:
    clock = Clock()
    plan = ConsumePlan(ConsumeSettings(queue="q", idle_ms=500, concurrency=2), clock)
    assert isinstance(plan.next(), PopStep) and isinstance(plan.next(), PopStep)
    clock.now += 0.6
    assert isinstance(plan.next(), Stop)
