"""The consumer loops against the live broker: acks, failures, limits, idleness, concurrency,
lease renewal and graceful stop (a stop event for the blocking client, task cancellation and a
stop event for the asyncio client)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

from regina import AsyncRegina, ErrorCode, Message, Regina


def _without_lease(message: Message) -> Message:
    """The same message named without its lease: an ack then reports whether it is settled."""
    return dataclasses.replace(message, lease_id="")


def _push(client: Regina, queue: str, payloads: list[object], partition: str = "Default") -> None:
    client.queue(queue).partition(partition).push([{"payload": p} for p in payloads])


def test_batch_handler_gets_lists_and_the_limit_is_exact(client: Regina, queue_name: str) -> None:
    _push(client, queue_name, [1, 2, 3, 4, 5])
    batches: list[list[object]] = []
    handled = (
        client.queue(queue_name)
        .group("g")
        .batch(3)
        .limit(4)
        .consume(lambda messages: batches.append([m.data for m in messages]))
    )
    assert handled == 4 and batches == [[1, 2, 3], [4]]
    rest = client.queue(queue_name).group("g").batch(10).pop()
    assert [m.data for m in rest] == [5], "handled messages were acked completed, the fifth was never popped"


def test_a_failing_handler_acks_failed_with_its_text(client: Regina, queue_name: str) -> None:
    client.queue(queue_name).config({"retryLimit": 0}).create()
    _push(client, queue_name, ["bad"])

    def handler(message: Message) -> None:
        raise ValueError(f"cannot handle {message.data}")

    assert client.queue(queue_name).group("g").each().limit(1).consume(handler) == 1
    [entry] = client.queue(queue_name).group("g").dlq().entries
    assert entry.error_message == "cannot handle bad" and entry.data == "bad"


def test_idle_consumer_stops_on_its_own(client: Regina, queue_name: str) -> None:
    started = time.monotonic()
    # Its long-polls would last two minutes: only the idle time can end it sooner.
    consumer = client.queue(queue_name).group("g").timeout_millis(120_000).idle_millis(300)
    assert consumer.consume(lambda m: None) == 0
    assert 0.3 <= time.monotonic() - started < 120


def test_concurrent_workers_share_partitions_without_repeats(client: Regina, queue_name: str) -> None:
    for partition in ("a", "b", "c", "d"):
        _push(client, queue_name, [f"{partition}{n}" for n in range(5)], partition)
    seen: list[object] = []
    lock = threading.Lock()
    threads: set[str] = set()

    def handler(message: Message) -> None:
        time.sleep(0.01)
        with lock:
            seen.append(message.data)
            threads.add(threading.current_thread().name)

    handled = (
        client.queue(queue_name).group("g").batch(5).concurrency(3).each().idle_millis(800).consume(handler)
    )
    assert handled == 20 and sorted(seen) == sorted(f"{p}{n}" for p in "abcd" for n in range(5))
    assert len(threads) > 1


def test_lease_renewal_lets_slow_work_finish_under_its_lease(client: Regina, queue_name: str) -> None:
    # The handler outlasts the lease; renewals every 0.3 s keep it (a renewal has 3 s to arrive).
    client.queue(queue_name).config({"leaseTime": 3}).create()
    _push(client, queue_name, ["slow"])
    handled: list[Message] = []

    def handler(message: Message) -> None:
        time.sleep(4)
        handled.append(message)

    consumer = client.queue(queue_name).group("g").each().limit(1).renew_lease(True, every_ms=300)
    assert consumer.consume(handler) == 1
    check = client.ack(handled[0], "failed")
    assert check.code == ErrorCode.ALREADY_SETTLED, "the completion was accepted under the renewed lease"


def test_stop_event_lets_the_running_handler_finish_and_ack(client: Regina, queue_name: str) -> None:
    _push(client, queue_name, ["first", "second", "third"])
    stop = threading.Event()
    handled: list[Message] = []

    def handler(message: Message) -> None:
        stop.set()
        time.sleep(0.2)
        handled.append(message)

    assert client.queue(queue_name).group("g").batch(3).each().consume(handler, stop=stop) == 1
    assert client.ack(_without_lease(handled[0]), "failed").code == ErrorCode.ALREADY_SETTLED
    rest = client.queue(queue_name).group("g").batch(10).pop()
    assert [m.data for m in rest] == ["second", "third"], "unhandled messages were released at once"


def test_stop_event_ends_an_idle_long_poll_quickly(client: Regina, queue_name: str) -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    # The long-poll would last two minutes: ending sooner means the stop event ended it.
    consumer = client.queue(queue_name).group("g").timeout_millis(120_000)
    assert consumer.consume(lambda m: None, stop=stop) == 0
    assert time.monotonic() - started < 120


async def test_async_consume_with_a_coroutine_handler(regina_url: str, queue_name: str) -> None:
    async with AsyncRegina(regina_url) as client:
        await client.queue(queue_name).push([{"payload": n} for n in range(6)])
        seen: list[object] = []

        async def handler(message: Message) -> None:
            await asyncio.sleep(0)
            seen.append(message.data)

        handled = await client.queue(queue_name).group("g").batch(4).each().limit(6).consume(handler)
        assert handled == 6 and seen == list(range(6))
        assert await client.queue(queue_name).group("g").pop() == []


async def test_cancelling_the_consumer_finishes_and_acks_the_running_handler(
    regina_url: str, queue_name: str
) -> None:
    async with AsyncRegina(regina_url) as client:
        await client.queue(queue_name).push([{"payload": "a"}, {"payload": "b"}])
        started = asyncio.Event()
        handled: list[Message] = []

        async def handler(message: Message) -> None:
            started.set()
            await asyncio.sleep(0.3)
            handled.append(message)

        task = asyncio.ensure_future(client.queue(queue_name).group("g").batch(2).each().consume(handler))
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled()
        assert [m.data for m in handled] == ["a"], "the running handler finished; nothing new was handled"
        assert (await client.ack(_without_lease(handled[0]), "failed")).code == ErrorCode.ALREADY_SETTLED
        rest = await client.queue(queue_name).group("g").batch(10).pop()
        assert [m.data for m in rest] == ["b"]


async def test_cancelling_a_parked_consumer_is_prompt(regina_url: str, queue_name: str) -> None:
    async with AsyncRegina(regina_url) as client:
        # The long-poll would last two minutes: ending sooner means the cancellation ended it.
        consumer = client.queue(queue_name).group("g").timeout_millis(120_000)
        task = asyncio.ensure_future(consumer.consume(lambda m: None))
        await asyncio.sleep(0.3)
        started = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert time.monotonic() - started < 120


async def test_async_stop_event_and_failures(regina_url: str, queue_name: str) -> None:
    async with AsyncRegina(regina_url) as client:
        await client.queue(queue_name).config({"retryLimit": 0}).create()
        await client.queue(queue_name).push([{"payload": "ok"}, {"payload": "bad"}])
        stop = asyncio.Event()

        def handler(message: Message) -> None:
            if message.data == "bad":
                stop.set()
                raise RuntimeError("bad payload")

        assert await client.queue(queue_name).group("g").each().consume(handler, stop=stop) == 2
        page = await client.queue(queue_name).group("g").dlq()
        assert [(e.data, e.error_message) for e in page.entries] == [("bad", "bad payload")]
