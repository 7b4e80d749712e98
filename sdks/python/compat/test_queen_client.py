"""The published Queen MQ Python client (queen-mq 0.15), unchanged, against Regina.

Regina serves Queen's HTTP API v1 so that Queen's clients keep working (HTTP API §1.1). This
scenario drives Queen's own API — configure, push, duplicate push, consume with a group (its
client-side acks), pop and batch ack, lease renewal, a transaction, the DLQ and its requeue — and checks the
outcome on the broker. Where it fails, the broker deviates from what Queen's client sends or
reads: that is a broker bug, not something to bend here.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from typing import Any

import httpx
import pytest
from queen import Queen

URL = os.environ.get("REGINA_URL", "")


@pytest.fixture(autouse=True)
def _needs_broker() -> None:
    if not URL:
        pytest.fail("REGINA_URL is not set: run through sdks/run-tests.sh (see test.sh)")


def _name(kind: str) -> str:
    return f"queen-compat-{kind}-{secrets.token_hex(4)}"


def _settled_for(group: str, message: dict[str, Any]) -> bool:
    """Whether ``group`` has settled the message: a lease-less ``failed`` ack is then refused."""
    body = {
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "status": "failed",
        "consumerGroup": group,
    }
    [result] = httpx.post(f"{URL}/api/v1/ack", json=body).json()
    return result["code"] == "already_settled"


def _run(scenario: Any) -> None:
    async def main() -> None:
        queen = Queen(URL)
        try:
            await scenario(queen)
        finally:
            await queen.close()

    asyncio.run(main())


def test_push_consume_with_a_group_and_dead_letter() -> None:
    queue = _name("orders")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"lease_time": 30, "retry_limit": 0}).create()
        pushed = (
            await queen.queue(queue)
            .partition("p")
            .push(
                [
                    {"data": {"n": 1}, "transactionId": "t1"},
                    {"data": "poison", "transactionId": "t2"},
                    {"data": {"n": 3}, "transactionId": "t3"},
                ]
            )
        )
        assert [r["status"] for r in pushed] == ["queued", "queued", "queued"]
        again = await queen.queue(queue).partition("p").push([{"data": "ignored", "transactionId": "t1"}])
        assert again[0]["status"] == "duplicate"

        seen: list[Any] = []

        async def handler(message: dict[str, Any]) -> None:
            seen.append(message["data"])
            if message["data"] == "poison":
                raise RuntimeError("cannot handle poison")

        await (
            queen.queue(queue)
            .group("workers")
            .batch(1)
            .limit(3)
            .timeout_millis(1000)
            .idle_millis(3000)
            .consume(handler)
        )
        assert seen == [{"n": 1}, "poison", {"n": 3}]

        dlq = await queen.queue(queue).dlq("workers").limit(10).get()
        assert dlq["total"] == 1
        assert [m["transactionId"] for m in dlq["messages"]] == ["t2"]
        assert dlq["messages"][0]["data"] == "poison"

        rest = await queen.queue(queue).group("workers").batch(10).wait(False).pop()
        assert rest == []

        entry = dlq["messages"][0]
        requeued = await queen.admin.retry_message(entry["partitionId"], entry["transactionId"])
        assert requeued["success"] and requeued["consumerGroups"] == ["workers"]
        [again] = await queen.queue(queue).group("workers").batch(10).wait(False).pop()
        assert again["data"] == "poison" and again["transactionId"] == "t2"

    _run(scenario)


def test_pop_batch_ack_and_renew() -> None:
    queue = _name("pop")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": n} for n in range(3)])
        messages = await queen.queue(queue).group("manual").batch(10).wait(False).pop()
        assert [m["data"] for m in messages] == [0, 1, 2]
        acked = await queen.ack(messages, True, {"group": "manual"})
        assert acked.get("success", True) is not False, acked
        assert all(_settled_for("manual", m) for m in messages)

        await queen.queue(queue).push([{"data": "single"}])
        [single] = await queen.queue(queue).group("manual").pop()
        result = await queen.ack(single, True, {"group": "manual"})
        assert result["success"], result
        assert await queen.queue(queue).group("manual").batch(10).wait(False).pop() == []

    _run(scenario)


def test_transaction_acks_and_pushes_together() -> None:
    source, target = _name("in"), _name("out")

    async def scenario(queen: Queen) -> None:
        await queen.queue(source).push([{"data": {"stage": 1}}])
        [message] = await queen.queue(source).group("stage1").pop()
        committed = await (
            queen.transaction()
            .ack(message, "completed", {"consumer_group": "stage1"})
            .queue(target)
            .partition("p")
            .push([{"data": {"stage": 2}}])
            .commit()
        )
        assert committed["success"]
        assert await queen.queue(source).group("stage1").wait(False).pop() == []
        assert _settled_for("stage1", message)
        [forwarded] = await queen.queue(target).group("stage2").pop()
        assert forwarded["data"] == {"stage": 2} and forwarded["partition"] == "p"

    _run(scenario)


@pytest.mark.xfail(
    strict=True,
    reason="Queen 0.15's renew() reads the extend answer as an object (result.get('newExpiresAt')); "
    "Regina answers the array of HTTP API §3.6, so renew() reports success: False",
)
def test_renew_reports_the_new_expiry() -> None:
    queue = _name("renew")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"lease_time": 30}).create()
        await queen.queue(queue).push([{"data": "slow"}])
        [message] = await queen.queue(queue).pop()
        lease = f"{URL}/api/v1/lease/{message['leaseId']}/extend"
        before = httpx.post(lease, json={"seconds": 1}).json()[0]["expiresAt"]
        renewed = await queen.renew(message)
        after = httpx.post(lease, json={"seconds": 1}).json()[0]["expiresAt"]
        assert after > before, "the broker extended the lease to the queue's leaseTime"
        assert renewed["success"] and renewed["newExpiresAt"], renewed

    _run(scenario)
