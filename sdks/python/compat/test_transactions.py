"""Transactions area: acks and pushes committed together, and a refused commit changing nothing."""

from __future__ import annotations

import pytest
from queen import Queen
from support import immediate, name, run, settled_for


@pytest.mark.smoke
def test_transaction_acks_and_pushes_together() -> None:
    source, target = name("in"), name("out")

    async def scenario(queen: Queen) -> None:
        await queen.queue(source).push([{"data": {"stage": 1}}])
        [message] = await immediate(queen.queue(source).group("stage1").batch(1)).pop()
        committed = await (
            queen.transaction()
            .ack(message, "completed", {"consumer_group": "stage1"})
            .queue(target)
            .partition("p")
            .push([{"data": {"stage": 2}}])
            .commit()
        )
        assert committed["success"], committed
        assert await immediate(queen.queue(source).group("stage1").batch(1)).pop() == []
        assert settled_for("stage1", message)
        [forwarded] = await immediate(queen.queue(target).group("stage2").batch(1)).pop()
        assert forwarded["data"] == {"stage": 2} and forwarded["partition"] == "p"

    run(scenario)


def test_a_transaction_with_a_stale_lease_changes_nothing() -> None:
    source, target = name("in"), name("out")

    async def scenario(queen: Queen) -> None:
        await queen.queue(source).push([{"data": "a"}, {"data": "b"}])
        messages = await immediate(queen.queue(source).group("g").batch(2)).pop()
        # The first ack releases nothing yet; a `retry` ends the lease, so the stored leaseId is stale.
        await queen.ack(messages, "retry", {"group": "g"})
        with pytest.raises(Exception, match="ACK operation failed"):
            await (
                queen.transaction()
                .ack(messages, "completed", {"consumer_group": "g"})
                .queue(target)
                .push([{"data": "never"}])
                .commit()
            )
        assert await immediate(queen.queue(target).group("g").batch(10)).pop() == []
        again = await immediate(queen.queue(source).group("g").batch(10)).pop()
        assert [m["data"] for m in again] == ["a", "b"]

    run(scenario)
