"""The asyncio stream runner against the local stand-in of the broker: the same wire shapes as
the blocking runner (``test_streams_wire``), coroutine ``foreach`` functions, and stopping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from fake_streams import FakeStreams, fake_streams, message
from regina import ApiError, AsyncRegina, sliding_window_gate


@pytest.fixture
def fake() -> Iterator[FakeStreams]:
    with fake_streams() as server:
        yield server


@pytest.fixture
async def client(fake: FakeStreams) -> AsyncIterator[AsyncRegina]:
    async with AsyncRegina(fake.url, retry_base_ms=1, retry_max_ms=5) as c:
        yield c


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_map_to_sink_and_async_foreach(fake: FakeStreams, client: AsyncRegina) -> None:
    first, last = message("a", 1), message("a", 2)
    fake.pops.append([first, last])
    runner = await client.stream("source").map(lambda v: v * 10).to("sink").run("q")
    await until(lambda: len(fake.requests("/streams/v1/cycle")) == 1)
    await runner.stop()
    cycle = fake.requests("/streams/v1/cycle")[0].body
    assert [i["payload"] for i in cycle["push_items"]] == [10, 20]
    assert cycle["ack"]["transactionId"] == last["transactionId"] and cycle["ack"]["count"] == 2

    seen: list[tuple[int, str]] = []

    async def record(value: int, ctx: object) -> None:
        await asyncio.sleep(0)
        seen.append((value, ctx.partition))

    fake.pops.append([message("b", 5)])
    runner = await client.stream("source").foreach(record).run("other")
    await until(lambda: runner.metrics().cycles_total == 1)
    await runner.stop()
    assert seen == [(5, "b")]
    assert fake.requests("/streams/v1/cycle")[-1].body["push_items"] == []


async def test_sliding_window_gate_parks_the_tail(fake: FakeStreams, client: AsyncRegina) -> None:
    batch = [message("a", n) for n in range(5)]
    fake.pops.append(batch)
    runner = await client.stream("source").gate(sliding_window_gate(3, 3600)).to("sink").run("q")
    await until(lambda: len(fake.requests("/streams/v1/cycle")) == 1)
    await runner.stop()
    cycle = fake.requests("/streams/v1/cycle")[0].body
    assert cycle["release_lease"] is False and cycle["ack"]["count"] == 3
    assert [i["payload"] for i in cycle["push_items"]] == [0, 1, 2]


async def test_mismatch_and_stop_event(fake: FakeStreams, client: AsyncRegina) -> None:
    stop = asyncio.Event()
    runner = await client.stream("source").to("sink").run("q", stop=stop)
    stop.set()
    await asyncio.wait_for(runner.wait(), 10)
    with pytest.raises(ApiError) as caught:
        await client.stream("source").map(lambda v: v).to("sink").run("q")
    assert caught.value.code == "config_hash_mismatch"
