"""Consumer area: pop and consume with every option, groups, partitions, namespaces, manual acks,
retries to the DLQ, automatic lease renewal, long-poll and traces.

Every consumer here stops by its ``limit``; ``idle_millis`` is only a guard against a consumer that
would otherwise wait forever. They pop with ``wait(False)``: a long-polling consumer notices its
``idle_millis`` only when a pop returns."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from queen import Queen
from support import (
    OBJECT_ACK_READER,
    ack_reported,
    ack_settles,
    has_admin,
    http,
    immediate,
    name,
    needs,
    run,
    settled_for,
    take,
)

#: Idle time after which a consumer gives up: a guard only, each consumer stops by its limit first.
IDLE_GUARD_MS = 10_000


@pytest.mark.smoke
def test_pop_with_a_group_and_batch_ack() -> None:
    queue = name("pop")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": n} for n in range(3)])
        messages = await immediate(queen.queue(queue).group("manual").batch(10)).pop()
        assert [m["data"] for m in messages] == [0, 1, 2]
        await ack_settles(queen, messages, "manual")
        await queen.queue(queue).push([{"data": "single"}])
        [single] = await immediate(queen.queue(queue).group("manual").batch(1)).pop()
        result = await ack_settles(queen, single, "manual")
        assert OBJECT_ACK_READER or result["success"], result
        assert await immediate(queen.queue(queue).group("manual").batch(10)).pop() == []

    run(scenario)


@pytest.mark.smoke
def test_subscription_mode_from_beginning_and_new() -> None:
    queue = name("subscription")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": "old"}])
        replay = await immediate(
            queen.queue(queue).group("replay").batch(10).subscription_mode("from_beginning")
        ).pop()
        assert [m["data"] for m in replay] == ["old"]
        live = await immediate(queen.queue(queue).group("live").batch(10).subscription_mode("new")).pop()
        assert live == []
        await queen.queue(queue).push([{"data": "fresh"}])
        live = await immediate(queen.queue(queue).group("live").batch(10)).pop()
        assert [m["data"] for m in live] == ["fresh"]

    run(scenario)


def test_subscription_from_now_and_from_a_timestamp() -> None:
    queue = name("from")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": "before"}])
        assert await immediate(queen.queue(queue).group("now").batch(10).subscription_from("now")).pop() == []
        past = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
        since = await immediate(queen.queue(queue).group("since").batch(10).subscription_from(past)).pop()
        assert [m["data"] for m in since] == ["before"]

    run(scenario)


def test_pop_routes_single_partition_multi_partition_and_namespace() -> None:
    namespace = name("ns")
    queue = f"{namespace}.jobs"

    async def scenario(queen: Queen) -> None:
        for partition in ("a", "b", "c"):
            await queen.queue(queue).partition(partition).push([{"data": partition}])
        [only_b] = await take(queen, queen.queue(queue).partition("b").batch(10))
        assert only_b["data"] == "b" and only_b["partition"] == "b"
        builder = queen.queue(queue).group("wide").batch(10)
        if hasattr(builder, "partitions"):
            wide = await immediate(builder.partitions(3)).pop()
            assert sorted(m["data"] for m in wide) == ["a", "b", "c"]
            assert len({m["leaseId"] for m in wide}) == 1, "one lease for every claimed partition"
        selected = await take(queen, queen.queue().namespace(namespace).batch(10))
        assert [m["data"] for m in selected] in (["a"], ["c"]), selected

    run(scenario)


def test_long_poll_returns_a_message_pushed_while_waiting() -> None:
    queue = name("longpoll")

    async def scenario(queen: Queen) -> None:
        builder = queen.queue(queue).group("waiter").batch(1).wait(True)
        if hasattr(builder, "timeout_millis"):
            builder = builder.timeout_millis(30_000)
        parked = http("GET", "/metrics").json()["longPoll"]["parked"]
        waiting = asyncio.ensure_future(builder.pop())
        deadline = time.monotonic() + 20
        while http("GET", "/metrics").json()["longPoll"]["parked"] <= parked:
            assert time.monotonic() < deadline, "the pop never parked"
            await asyncio.sleep(0.02)
        await queen.queue(queue).push([{"data": "wake"}])
        [message] = await waiting
        assert message["data"] == "wake"

    run(scenario)


def test_consume_with_group_batches_each_concurrency_limit_and_idle() -> None:
    queue = name("consume")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": n} for n in range(6)])
        seen: list[Any] = []

        async def each(message: dict[str, Any]) -> None:
            seen.append(message["data"])

        await (
            queen.queue(queue)
            .group("each")
            .batch(3)
            .wait(False)
            .each()
            .limit(6)
            .idle_millis(IDLE_GUARD_MS)
            .consume(each)
        )
        assert seen == [0, 1, 2, 3, 4, 5]

        batches: list[list[Any]] = []

        async def batch(messages: list[dict[str, Any]]) -> None:
            batches.append([m["data"] for m in messages])

        await (
            queen.queue(queue)
            .group("batch")
            .batch(3)
            .wait(False)
            .concurrency(2)
            .limit(3)
            .idle_millis(IDLE_GUARD_MS)
            .consume(batch)
        )
        # Each of the two workers stops after its limit of 3; the lease keeps them apart.
        assert sorted(n for b in batches for n in b) == [0, 1, 2, 3, 4, 5]
        assert all(0 < len(b) <= 3 for b in batches)

    run(scenario)


def test_manual_ack_and_consume_callbacks() -> None:
    queue = name("manual")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": n} for n in range(2)])
        acks: list[Any] = []
        handled: list[dict[str, Any]] = []

        async def handler(message: dict[str, Any]) -> None:
            handled.append(message)
            acks.append(await queen.ack(message, True, {"group": "m"}))

        await (
            queen.queue(queue)
            .group("m")
            .batch(1)
            .wait(False)
            .auto_ack(False)
            .limit(2)
            .idle_millis(IDLE_GUARD_MS)
            .consume(handler)
        )
        assert len(acks) == 2 and all(ack_reported(a) for a in acks), acks
        assert all(settled_for("m", m) for m in handled)

        calls: list[str] = []

        async def ok(message: dict[str, Any]) -> str:
            return "done"

        async def on_success(message: Any, result: Any) -> None:
            calls.append(result)
            await queen.ack(message, True, {"group": "cb"})

        await (
            queen.queue(queue)
            .group("cb")
            .batch(1)
            .wait(False)
            .limit(2)
            .idle_millis(IDLE_GUARD_MS)
            .consume(ok)
            .on_success(on_success)
        )
        assert calls == ["done", "done"]

    run(scenario)


def test_failures_are_retried_then_dead_lettered_and_requeued() -> None:
    queue = name("dlq")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"lease_time": 30, "retry_limit": 1}).create()
        await queen.queue(queue).partition("p").push([{"data": "poison", "transactionId": "bad"}])
        attempts: list[Any] = []

        async def handler(message: dict[str, Any]) -> None:
            attempts.append(message["data"])
            raise RuntimeError("cannot handle poison")

        await (
            queen.queue(queue)
            .group("workers")
            .batch(1)
            .wait(False)
            .limit(2)
            .idle_millis(IDLE_GUARD_MS)
            .consume(handler)
        )
        assert attempts == ["poison", "poison"], "retryLimit 1: two deliveries"
        dlq = await queen.queue(queue).dlq("workers").limit(10).get()
        assert dlq["total"] == 1 and dlq["messages"][0]["transactionId"] == "bad", dlq
        assert dlq["messages"][0]["errorMessage"], dlq
        assert await immediate(queen.queue(queue).group("workers").batch(10)).pop() == []
        entry = dlq["messages"][0]
        if has_admin(queen):
            requeued = await queen.admin.retry_message(entry["partitionId"], entry["transactionId"])
        else:  # (queen-mq 0.7.4 has no admin calls: the route itself)
            path = f"/api/v1/messages/{entry['partitionId']}/{entry['transactionId']}/retry"
            requeued = http("POST", path, json={}).json()
        assert requeued["success"] and requeued["consumerGroups"] == ["workers"]
        [again] = await immediate(queen.queue(queue).group("workers").batch(10)).pop()
        assert again["data"] == "poison"

    run(scenario)


def test_consume_renews_the_lease_while_the_handler_runs() -> None:
    queue = name("renew")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"lease_time": 60}).create()
        await queen.queue(queue).push([{"data": "slow"}])
        extended: list[bool] = []

        async def handler(message: dict[str, Any]) -> None:
            path = f"/api/v1/messages/{message['partitionId']}/{message['transactionId']}"
            first = http("GET", path).json()["leaseExpiresAt"]
            deadline = time.monotonic() + 30
            while http("GET", path).json()["leaseExpiresAt"] == first:
                assert time.monotonic() < deadline, "the consumer never renewed the lease"
                await asyncio.sleep(0.05)
            extended.append(True)

        await queen.queue(queue).group("r").batch(1).renew_lease(True, 200).limit(1).consume(handler)
        assert extended == [True]

    run(scenario)


def test_messages_carry_a_trace_method() -> None:
    queue = name("trace")
    trace_name = name("tn")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": "traced"}])
        recorded: list[Any] = []

        async def handler(message: dict[str, Any]) -> None:
            recorded.append(await message["trace"]({"data": {"step": "seen"}, "traceName": trace_name}))
            recorded.append(message)

        await queen.queue(queue).group("t").batch(1).limit(1).consume(handler)
        result, message = recorded
        assert result["success"], result
        partition_id, transaction_id = message["partitionId"], message["transactionId"]
        if has_admin(queen):
            traces = await queen.admin.get_traces_for_message(partition_id, transaction_id)
            named = await queen.admin.get_traces_by_name(trace_name, limit=10)
        else:  # (queen-mq 0.7.4 has no admin calls: the routes themselves)
            traces = http("GET", f"/api/v1/traces/{partition_id}/{transaction_id}").json()
            named = http("GET", f"/api/v1/traces/by-name/{trace_name}", params={"limit": 10}).json()
        assert [t["data"] for t in traces["traces"]] == [{"step": "seen"}]
        assert named["total"] == 1, named

    run(scenario)


def test_commit_on_delivery_settles_at_pop() -> None:
    queue = name("commit")

    async def scenario(queen: Queen) -> None:
        builder = queen.queue(queue).group("c").batch(10)
        needs(hasattr(builder, "commit_on_delivery"), "commit_on_delivery (server-side autoAck)")
        await queen.queue(queue).push([{"data": 1}, {"data": 2}])
        got = await immediate(builder.commit_on_delivery()).pop()
        assert [m["data"] for m in got] == [1, 2] and all(m["leaseId"] == "" for m in got), got
        assert all(settled_for("c", m) for m in got)

    run(scenario)
