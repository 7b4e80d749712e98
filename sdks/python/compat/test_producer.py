"""Producer area: push with every item option, callbacks, capacity refusals and buffered push."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from queen import Queen
from support import name, run, take


@pytest.mark.smoke
def test_push_with_every_item_option() -> None:
    queue = name("push")
    trace = str(uuid.uuid4())

    async def scenario(queen: Queen) -> None:
        pushed = (
            await queen.queue(queue)
            .partition("p")
            .push(
                [
                    {"data": {"n": 1}, "transactionId": "t1", "traceId": trace},
                    {"payload": "as payload", "transactionId": "t2"},
                    {"plain": "the item itself"},
                    {"data": None, "traceId": "not-a-uuid"},
                ]
            )
        )
        assert [r["status"] for r in pushed] == ["queued"] * 4, pushed
        assert pushed[0]["transaction_id"] == "t1" and pushed[0]["trace_id"] == trace
        again = await queen.queue(queue).partition("p").push({"data": "ignored", "transactionId": "t1"})
        assert again[0]["status"] == "duplicate" and again[0]["message_id"] == pushed[0]["message_id"]

        got = await take(queen, queen.queue(queue).partition("p").batch(10))
        assert [m["data"] for m in got] == [{"n": 1}, "as payload", {"plain": "the item itself"}, None]
        assert [m["transactionId"] for m in got[:2]] == ["t1", "t2"]
        assert got[0]["traceId"] == trace and got[3]["traceId"] is None
        assert all(m["partition"] == "p" for m in got)

    run(scenario)


def test_push_callbacks_report_queued_duplicate_and_refused_items() -> None:
    queue = name("callbacks")
    seen: dict[str, Any] = {}

    async def on_success(items: Any) -> None:
        seen.setdefault("success", []).extend(items)

    async def on_duplicate(items: Any, error: Exception) -> None:
        seen.setdefault("duplicate", []).extend(items)

    async def on_error(items: Any, error: Exception) -> None:
        seen.setdefault("error", []).append(str(error))

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"max_size": 2}).create()
        await (
            queen.queue(queue)
            .push([{"data": 1, "transactionId": "a"}, {"data": 2, "transactionId": "a"}])
            .on_success(on_success)
            .on_duplicate(on_duplicate)
        )
        assert [i["transactionId"] for i in seen["success"]] == ["a"]
        assert [i["transactionId"] for i in seen["duplicate"]] == ["a"]
        # The queue holds one message; of two more, the second does not fit (429, queue_full).
        await queen.queue(queue).push([{"data": 3}, {"data": 4}]).on_error(on_error)
        assert seen["error"], seen
        got = await take(queen, queen.queue(queue).batch(10))
        assert [m["data"] for m in got] == [1, 3], "the admitted prefix is stored"

    run(scenario)


def test_buffered_push_flushes_by_count_and_on_demand() -> None:
    queue = name("buffered")

    async def scenario(queen: Queen) -> None:
        options = {"message_count": 3, "time_millis": 600_000}
        builder = queen.queue(queue).partition("p").buffer(options)
        for n in range(3):
            answer = await builder.push({"data": n})
            assert answer["buffered"] is True, answer
        for n in range(3, 5):
            await queen.queue(queue).partition("p").buffer(options).push({"data": n})
        stats = queen.get_buffer_stats()
        assert isinstance(stats, dict), stats
        await queen.queue(queue).partition("p").flush_buffer()
        await queen.flush_all_buffers()
        got = await take(queen, queen.queue(queue).partition("p").batch(10))
        # Which flush reaches the broker first is the client's affair: compare as a set.
        assert sorted(m["data"] for m in got) == [0, 1, 2, 3, 4]

    run(scenario)


def test_pushes_to_several_partitions_keep_order_per_partition() -> None:
    queue = name("partitions")

    async def scenario(queen: Queen) -> None:
        for partition in ("a", "b"):
            await (
                queen.queue(queue).partition(partition).push([{"data": f"{partition}{n}"} for n in range(3)])
            )
        for partition in ("a", "b"):
            got = await take(queen, queen.queue(queue).partition(partition).batch(10))
            assert [m["data"] for m in got] == [f"{partition}{n}" for n in range(3)]

    run(scenario)
