"""Lease area: ``Queen.renew`` with a message, a list of messages and a lease id.

Queen's clients up to 1.x send the extension without a body and read the answer as an object;
Regina answers such a request with the entry itself (docs/compatibility.md)."""

from __future__ import annotations

import pytest
from queen import Queen
from support import http, immediate, name, run


@pytest.mark.smoke
def test_renew_reports_the_new_expiry() -> None:
    queue = name("renew")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).config({"lease_time": 30}).create()
        await queen.queue(queue).push([{"data": "slow"}])
        [message] = await immediate(queen.queue(queue).batch(1)).pop()
        lease = f"/api/v1/lease/{message['leaseId']}/extend"
        before = http("POST", lease, json={"seconds": 1}).json()[0]["expiresAt"]
        renewed = await queen.renew(message)
        after = http("POST", lease, json={"seconds": 1}).json()[0]["expiresAt"]
        assert after > before, "the broker extended the lease to the queue's leaseTime"
        assert renewed["success"] and renewed["newExpiresAt"] == after, renewed

    run(scenario)


def test_renew_a_list_and_a_lease_id() -> None:
    queue = name("renew-many")

    async def scenario(queen: Queen) -> None:
        await queen.queue(queue).push([{"data": n} for n in range(2)])
        messages = await immediate(queen.queue(queue).batch(2)).pop()
        results = await queen.renew(messages)
        # One lease covers the batch (0.12 and 0.13 renew it once per message).
        assert isinstance(results, list) and results, results
        assert {r["leaseId"] for r in results} == {messages[0]["leaseId"]}, results
        assert all(r["success"] and r["newExpiresAt"] for r in results), results
        by_id = await queen.renew(messages[0]["leaseId"])
        assert by_id["success"] and by_id["newExpiresAt"], by_id

    run(scenario)
