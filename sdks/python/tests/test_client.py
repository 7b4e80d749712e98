"""Producer, pop, ack, lease and error behaviour of the blocking client against the live broker."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from regina import ApiError, ErrorCode, QueueFullError, Regina


def test_push_assigns_ids_and_repeating_a_key_is_a_duplicate(client: Regina, queue_name: str) -> None:
    q = client.queue(queue_name).partition("p1")
    first = q.push([{"payload": {"n": 1}}, {"payload": {"n": 2}, "transactionId": "k", "traceId": "order-7"}])
    assert [r.status for r in first] == ["queued", "queued"]
    assert first[0].transaction_id and first[0].message_id and first[1].trace_id == "order-7"
    again = q.push([{"payload": "ignored", "transactionId": "k"}])
    assert again[0].status == "duplicate" and again[0].message_id == first[1].message_id
    messages = client.queue(queue_name).batch(10).pop()
    assert [m.data for m in messages] == [{"n": 1}, {"n": 2}]
    assert messages[1].trace_id == "order-7" and messages[0].partition == "p1"


def test_validation_errors_are_typed_with_field_and_index(client: Regina, queue_name: str) -> None:
    with pytest.raises(ApiError) as caught:
        client.queue(queue_name).push([{"payload": 1, "traceId": "x" * 129}])
    error = caught.value
    assert (error.code, error.status, error.index) == (ErrorCode.VALIDATION_FAILED, 400, 0)
    assert error.field == "items[0].traceId"


def test_a_full_queue_rejects_the_overflow_and_reports_what_was_stored(
    client: Regina, queue_name: str
) -> None:
    client.queue(queue_name).config({"maxSize": 2}).create()
    with pytest.raises(QueueFullError) as caught:
        client.queue(queue_name).push([{"payload": 1}, {"payload": 2}, {"payload": 3}])
    assert caught.value.status == 429 and caught.value.code == ErrorCode.QUEUE_FULL
    assert [r.status for r in caught.value.results] == ["queued", "queued", "failed"]


def test_ack_refusals_are_in_band(client: Regina, queue_name: str) -> None:
    client.queue(queue_name).push([{"payload": "once"}])
    [message] = client.queue(queue_name).pop()
    assert client.ack(message).success
    refused = client.ack(message, "failed", error="too late")
    assert not refused.success and refused.code == ErrorCode.ALREADY_SETTLED


def test_a_failed_ack_redelivers_with_a_retry_count_and_exhaustion_dead_letters(
    client: Regina, queue_name: str
) -> None:
    client.queue(queue_name).config({"retryLimit": 1}).create()
    client.queue(queue_name).push([{"payload": "poison", "transactionId": "p1"}])
    first = client.queue(queue_name).group("g").pop()
    assert client.ack(first[0], "failed", error="cannot parse").success
    second = client.queue(queue_name).group("g").pop()
    assert second[0].retry_count == 1
    result = client.ack(second[0], "failed", error="still cannot parse")
    assert result.success and result.dlq
    page = client.queue(queue_name).group("g").dlq()
    assert page.total == 1 and page.entries[0].error_message == "still cannot parse"
    assert page.entries[0].data == "poison" and page.entries[0].consumer_group == "g"


def test_renewing_keeps_a_short_lease_alive(client: Regina, queue_name: str) -> None:
    client.queue(queue_name).config({"leaseTime": 1}).create()
    # The renewal must reach the broker within the one-second lease: an attempt whose renewal came
    # later (a busy machine) tells nothing and is made again with a new message.
    give_up = time.monotonic() + 60
    while True:
        client.queue(queue_name).push([{"payload": "slow"}])
        popping = time.monotonic()
        [message] = client.queue(queue_name).pop()
        renewed = client.renew(message, seconds=60)
        if renewed.success or time.monotonic() - popping < 1:
            break
        assert time.monotonic() < give_up, "no renewal came within the lease in a minute"
    assert renewed.success and renewed.expires_at is not None
    assert renewed.expires_at > message.created_at
    time.sleep(1.5)  # past the lease as it was before the renewal
    assert client.ack(message).success


def test_renewing_an_unknown_lease_is_refused_in_band(client: Regina) -> None:
    result = client.renew("01890000-0000-7000-8000-000000000000")
    assert not result.success and result.code in (ErrorCode.LEASE_NOT_FOUND, ErrorCode.LEASE_EXPIRED)


def test_multi_partition_pop_shares_one_lease(client: Regina, queue_name: str) -> None:
    for partition in ("a", "b", "c"):
        client.queue(queue_name).partition(partition).push([{"payload": partition}])
    messages = client.queue(queue_name).group("g").batch(10).partitions(3).pop()
    assert sorted(m.data for m in messages) == ["a", "b", "c"]
    assert len({m.lease_id for m in messages}) == 1
    assert all(r.success for r in client.ack(messages))


def test_a_long_poll_is_answered_by_a_later_push(client: Regina, regina_url: str, queue_name: str) -> None:
    import threading

    def push_later() -> None:
        time.sleep(0.3)
        with Regina(regina_url) as producer:
            producer.queue(queue_name).push([{"payload": "late"}])

    threading.Thread(target=push_later).start()
    # The suite's broker re-checks parked pops only on events (LONGPOLL_RECHECK_MS=0) and the
    # timeout is far away: only the push can answer this pop with the message.
    messages = client.queue(queue_name).group("g").wait().timeout_millis(50_000).auto_ack().pop()
    assert [m.data for m in messages] == ["late"]


def test_buffered_pushes_are_sent_after_their_time(client: Regina, queue_name: str) -> None:
    q = client.queue(queue_name).buffer(message_count=100, time_millis=200)
    first_push = time.monotonic()
    assert q.push([{"payload": 1}]) == [] and q.push([{"payload": 2}]) == []
    # Nothing is sent before its time; then the timer sends both, with no flush.
    received: list[object] = []
    first_seen = None
    give_up = first_push + 60
    while received != [1, 2]:
        assert time.monotonic() < give_up, f"the timed buffer sent only {received}"
        got = [m.data for m in client.queue(queue_name).batch(10).auto_ack().pop()]
        if got and first_seen is None:
            first_seen = time.monotonic()
        received += got
        time.sleep(0.02)
    assert first_seen is not None and first_seen - first_push >= 0.19, "sent before its time"


def test_buffered_pushes_are_sent_at_their_count_in_order(client: Regina, queue_name: str) -> None:
    q = client.queue(queue_name).partition("b").buffer(message_count=2, time_millis=60_000)
    assert q.push([{"payload": 1}]) == []
    assert [r.status for r in q.push([{"payload": 2}])] == ["queued", "queued"]
    q.push([{"payload": 3}])
    assert [r.status for r in q.flush()] == ["queued"]
    assert [m.data for m in client.queue(queue_name).batch(10).auto_ack().pop()] == [1, 2, 3]


def test_configure_merges_options_and_health_answers(client: Regina, queue_name: str) -> None:
    created = client.queue(queue_name).config({"leaseTime": 30}).create()
    assert created.created and created.options["leaseTime"] == 30
    changed = client.queue(queue_name).config({"retryLimit": 7}).create()
    assert not changed.created and changed.options["leaseTime"] == 30 and changed.options["retryLimit"] == 7
    assert client.admin.health().healthy


def test_seek_replays_after_an_instant_on_the_queue_or_one_partition(client: Regina, queue_name: str) -> None:
    for partition in ("a", "b"):
        client.queue(queue_name).partition(partition).push([{"payload": f"{partition}-old"}])
    time.sleep(0.05)
    between = datetime.now(timezone.utc)
    time.sleep(0.05)
    for partition in ("a", "b"):
        client.queue(queue_name).partition(partition).push([{"payload": f"{partition}-new"}])
    group = client.queue(queue_name).group("g").batch(10).partitions(2).auto_ack()
    assert sorted(m.data for m in group.pop()) == ["a-new", "a-old", "b-new", "b-old"]
    assert client.queue(queue_name).group("g").partition("a").seek(timestamp=between).partitions_updated == 1
    assert [m.data for m in group.pop()] == ["a-new"]
    assert client.queue(queue_name).group("g").seek(timestamp=between).partitions_updated == 2
    assert sorted(m.data for m in group.pop()) == ["a-new", "b-new"]
    client.queue(queue_name).group("g").seek(to_end=True)
    assert group.pop() == []
