"""Beyond-v1 area (queen-mq 1.x and 2.x): calls whose routes are not part of HTTP API v1 — the
key/value store, timers and the queue depth report. This checks the documented outcome
(docs/compatibility.md): each call fails loudly with the broker's ``404 route_not_found``, and
nothing answers as if it had worked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from queen import Queen
from support import name, needs, run


def _status(error: BaseException) -> Any:
    """The HTTP status an exception of the client carries, whatever its class."""
    if getattr(error, "status", None) is not None:
        return error.status
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


async def _refused(call: Callable[[], Awaitable[Any]]) -> None:
    # The error classes vary by release: the status they carry is what is checked.
    with pytest.raises(Exception) as caught:
        await call()
    assert _status(caught.value) == 404, repr(caught.value)


def test_key_value_timers_and_depth_answer_route_not_found() -> None:
    queue = name("beyond")

    async def scenario(queen: Queen) -> None:
        calls: list[Callable[[], Awaitable[Any]]] = []
        if hasattr(Queen, "kv"):
            calls.append(lambda: queen.kv.get("ns", "key"))
        if hasattr(Queen, "timers"):
            calls.append(lambda: queen.timers.peek(queue, "key"))
        if hasattr(queen, "admin") and hasattr(queen.admin, "get_queue_depth"):
            calls.append(lambda: queen.admin.get_queue_depth(queue))
        needs(calls, "key/value, timers and depth calls")
        await queen.queue(queue).push([{"data": 1}])
        for call in calls:
            await _refused(call)

    run(scenario)
