"""Admin area: every ``queen.admin`` call and the client's consumer-group management calls."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from queen import Queen
from support import ack_settles, has_admin, immediate, name, needs, run, take


async def _with_traffic(queen: Queen, queue: str) -> dict[str, Any]:
    """Configures `queue`, pushes three messages, and consumes one with group `g`."""
    await queen.queue(queue).config({"lease_time": 30, "retry_limit": 0}).create()
    await queen.queue(queue).partition("p").push([{"data": n, "transactionId": f"t{n}"} for n in range(3)])
    [message] = await immediate(queen.queue(queue).group("g").batch(1)).pop()
    await ack_settles(queen, message, "g")
    return message


@pytest.mark.smoke
def test_admin_reads() -> None:
    queue = name("admin")

    async def scenario(queen: Queen) -> None:
        needs(has_admin(queen), "queen.admin")
        admin = queen.admin
        message = await _with_traffic(queen, queue)
        await admin.refresh_consumer_stats()
        assert (await admin.health())["status"] == "healthy"
        assert "uptime" in await admin.metrics()
        assert (await admin.get_overview())["queues"] >= 1
        assert any(n["namespace"] == queue for n in (await admin.get_namespaces())["namespaces"])
        assert "tasks" in await admin.get_tasks()
        listed = await admin.list_queues(search=queue, limit=10)
        assert [q["name"] for q in listed["queues"]] == [queue]
        assert (await admin.get_queue(queue))["options"]["retryLimit"] == 0
        partitions = await admin.get_partitions(queue=queue)
        assert {p["name"] for p in partitions["partitions"]} == {"Default", "p"}
        messages = await admin.list_messages(queue=queue, limit=10)
        assert len(messages["messages"]) == 3
        detail = await admin.get_message(message["partitionId"], message["transactionId"])
        assert detail["payload"] == 0
        assert "traces" in await admin.get_traces_for_message(
            message["partitionId"], message["transactionId"]
        )
        assert "trace_names" in await admin.get_trace_names(limit=5)
        assert "throughput" in await admin.get_status()
        assert "queues" in await admin.get_queue_stats(limit=5)
        assert (await admin.get_queue_detail(queue))["queue"]["name"] == queue
        assert "dataPoints" in await admin.get_analytics(interval="hour")
        groups = await admin.list_consumer_groups()
        assert any(g["name"] == "g" and g["queueName"] == queue for g in groups)
        assert queue in await admin.get_consumer_group("g")
        assert isinstance(await admin.get_lagging_consumers(3600), list)
        assert "series" in await admin.get_system_metrics()
        assert "series" in await admin.get_worker_metrics()
        if hasattr(admin, "get_postgres_stats"):
            assert "series" in await admin.get_postgres_stats()

    run(scenario)


def test_admin_message_actions_and_queue_lifecycle() -> None:
    queue = name("actions")

    async def scenario(queen: Queen) -> None:
        needs(has_admin(queen), "queen.admin")
        admin = queen.admin
        await _with_traffic(queen, queue)
        [second] = await immediate(queen.queue(queue).group("g").batch(1)).pop()
        await queen.ack(second, False, {"group": "g"})
        [entry] = (await queen.queue(queue).dlq("g").get())["messages"]
        assert entry["transactionId"] == "t1"
        requeued = await admin.retry_message(entry["partitionId"], entry["transactionId"])
        assert requeued["consumerGroups"] == ["g"]
        pending = await take(queen, queen.queue(queue).partition("p").batch(10))
        assert [m["transactionId"] for m in pending] == ["t0", "t1", "t2"], "queue mode sees every message"
        if _served(admin, "move_message_to_dlq"):
            await queen.queue(queue).partition("p").push([{"data": "manual", "transactionId": "m"}])
            moved = await admin.move_message_to_dlq(pending[0]["partitionId"], "m")
            assert moved["success"] and moved["consumerGroup"] == "__QUEUE_MODE__", moved
        deleted = await admin.delete_message(pending[0]["partitionId"], "t2")
        assert deleted["success"], deleted
        if _served(admin, "clear_queue"):
            await queen.queue(queue).partition("other").push([{"data": "kept", "transactionId": "k"}])
            cleared = await admin.clear_queue(queue, "p")
            assert cleared["cleared"] and cleared["partition"] == "p", cleared
            kept = await take(queen, queen.queue(queue).group("after").batch(10), "after")
            assert [m["transactionId"] for m in kept] == ["k"], "only partition p was emptied"
            cleared = await admin.clear_queue(queue)
            assert cleared["cleared"], cleared
        await queen.queue(queue).delete()
        assert (await admin.list_queues(search=queue))["queues"] == []

    run(scenario)


def _served(admin: Any, method: str) -> bool:
    """Whether this client has ``method`` and sends it: 2.x clients keep some calls only to raise
    ``NotImplementedError`` before any request (their own broker has no such route)."""
    call = getattr(admin, method, None)
    return call is not None and "NotImplementedError" not in (call.__doc__ or "")


def test_seek_subscription_and_group_deletion() -> None:
    queue = name("groups")

    async def scenario(queen: Queen) -> None:
        needs(has_admin(queen), "queen.admin")
        admin = queen.admin
        await _with_traffic(queen, queue)
        sought = await admin.seek_consumer_group("g", queue, {"toEnd": True})
        assert sought["success"] and sought["seekToEnd"], sought
        assert await immediate(queen.queue(queue).group("g").batch(10)).pop() == []
        back = await admin.seek_consumer_group("g", queue, {"timestamp": "2000-01-01T00:00:00Z"})
        assert back["success"], back
        again = await immediate(queen.queue(queue).group("g").batch(10)).pop()
        assert [m["data"] for m in again] == [0, 1, 2]
        now = datetime.now(timezone.utc).isoformat()
        updated = await queen.update_consumer_group_timestamp("g", now)
        assert updated["success"], updated
        dropped = await admin.delete_consumer_group_for_queue("g", queue, False)
        assert dropped["success"] and dropped["metadataDeleted"] is False, dropped
        gone = await queen.delete_consumer_group("g")
        assert gone["success"], gone

    run(scenario)


def test_the_clients_own_group_calls() -> None:
    """The consumer-group calls on the client itself, which every release has (0.7.4 no others)."""
    queue, group = name("own-groups"), name("group")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": "kept"}])
        got = await take(queen, queen.queue(queue).group(group).batch(10), group)
        assert [m["data"] for m in got] == ["kept"]
        now = datetime.now(timezone.utc).isoformat()
        updated = await queen.update_consumer_group_timestamp(group, now)
        assert updated["success"], updated
        gone = await queen.delete_consumer_group(group)
        assert gone["success"], gone
        # Deleted with its metadata: the group subscribes again, from the oldest message.
        again = await immediate(queen.queue(queue).group(group).batch(10).subscription_mode("all")).pop()
        assert [m["data"] for m in again] == ["kept"]

    run(scenario)


def test_maintenance_switches() -> None:
    async def scenario(queen: Queen) -> None:
        needs(has_admin(queen), "queen.admin")
        admin = queen.admin
        needs(hasattr(admin, "set_maintenance_mode"), "maintenance calls")
        assert (await admin.get_maintenance_mode())["maintenanceMode"] is False
        assert (await admin.get_pop_maintenance_mode())["popMaintenanceMode"] is False
        try:
            assert (await admin.set_pop_maintenance_mode(True))["popMaintenanceMode"] is True
        finally:
            await admin.set_pop_maintenance_mode(False)
        try:
            assert (await admin.set_maintenance_mode(True))["maintenanceMode"] is True
        finally:
            await admin.set_maintenance_mode(False)
        assert (await admin.get_maintenance_mode())["maintenanceMode"] is False

    run(scenario)
