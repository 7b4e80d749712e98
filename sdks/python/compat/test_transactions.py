"""Transactions area: acks and pushes committed together, and a refused commit changing nothing."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from queen import Queen
from support import immediate, name, run, settled_for


def _group(queen: Queen, group: str) -> str | None:
    """The consumer group these tests ack for in a transaction: ``group``, or queue mode (None)
    before 0.12.2, whose ``transaction().ack`` takes no group and sends none, so its acks apply to
    queue mode (http-api.md §4.5; docs/compatibility.md)."""
    takes_group = "context" in inspect.signature(queen.transaction().ack).parameters
    return group if takes_group else None


def _ack(transaction: Any, messages: Any, status: str, group: str | None) -> Any:
    if group is None:
        return transaction.ack(messages, status)
    return transaction.ack(messages, status, {"consumer_group": group})


def _from(queen: Queen, queue: str, group: str | None) -> Any:
    builder = queen.queue(queue)
    return builder if group is None else builder.group(group)


@pytest.mark.smoke
def test_transaction_acks_and_pushes_together() -> None:
    source, target = name("in"), name("out")

    async def scenario(queen: Queen) -> None:
        group = _group(queen, "stage1")
        await queen.queue(source).push([{"data": {"stage": 1}}])
        [message] = await immediate(_from(queen, source, group).batch(1)).pop()
        committed = await (
            _ack(queen.transaction(), message, "completed", group)
            .queue(target)
            .partition("p")
            .push([{"data": {"stage": 2}}])
            .commit()
        )
        assert committed["success"], committed
        assert await immediate(_from(queen, source, group).batch(1)).pop() == []
        assert settled_for(group, message)
        [forwarded] = await immediate(queen.queue(target).group("stage2").batch(1)).pop()
        assert forwarded["data"] == {"stage": 2} and forwarded["partition"] == "p"

    run(scenario)


def test_a_transaction_with_a_stale_lease_changes_nothing() -> None:
    source, target = name("in"), name("out")

    async def scenario(queen: Queen) -> None:
        group = _group(queen, "g")
        await queen.queue(source).push([{"data": "a"}, {"data": "b"}])
        messages = await immediate(_from(queen, source, group).batch(2)).pop()
        # The first ack releases nothing yet; a `retry` ends the lease, so the stored leaseId is stale.
        await queen.ack(messages, "retry", {"group": group} if group else {})
        with pytest.raises(Exception, match="ACK operation failed"):
            await (
                _ack(queen.transaction(), messages, "completed", group)
                .queue(target)
                .push([{"data": "never"}])
                .commit()
            )
        assert await immediate(queen.queue(target).group("g").batch(10)).pop() == []
        again = await immediate(_from(queen, source, group).batch(10)).pop()
        assert [m["data"] for m in again] == ["a", "b"]

    run(scenario)
