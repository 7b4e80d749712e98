"""Shared functions of the compatibility matrix: the published ``queen-mq`` client, unchanged, against a
live Regina (``REGINA_URL``, set by ``sdks/run-tests.sh``).

Every test uses queue names of its own, so the versions of the matrix can share one broker. A test
that needs a client feature a version lacks is skipped with the reason "not in queen-mq X".
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Awaitable, Callable
from importlib.metadata import version as _installed_version
from typing import Any

import httpx
import pytest
from queen import Queen

URL = os.environ.get("REGINA_URL", "")
VERSION = _installed_version("queen-mq")


def version_tuple(text: str = VERSION) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def name(kind: str) -> str:
    """A queue (or group) name no other test or version uses."""
    return f"compat-{VERSION.replace('.', '_')}-{kind}-{secrets.token_hex(4)}"


#: queen-mq 0.7.4 reads the answer of an ack as one object (``result.get("error")``), where every
#: later release reads the array of per-item results that Regina sends (http-api.md §3.5). Both
#: send the same request, so no answer serves both (docs/compatibility.md): the ack is applied, and
#: such a client reports it with this result.
OBJECT_ACK_READER = version_tuple() < (0, 12)
OBJECT_ACK_MISREAD = {"success": False, "error": "'list' object has no attribute 'get'"}


def needs(feature: Any, what: str) -> None:
    """Skips the test when this client version lacks ``feature`` (a falsy value)."""
    if not feature:
        pytest.skip(f"{what}: not in queen-mq {VERSION}")


def run(scenario: Callable[[Queen], Awaitable[None]]) -> None:
    """Runs ``scenario`` with a fresh client, closed afterwards whatever happens."""

    async def main() -> None:
        queen = Queen(URL)
        try:
            await scenario(queen)
        finally:
            await queen.close()

    asyncio.run(main())


def immediate(builder: Any) -> Any:
    """A pop builder that answers at once (2.x clients long-poll by default)."""
    return builder.wait(False)


async def take(queen: Queen, builder: Any, group: str | None = None) -> list[dict[str, Any]]:
    """Pops at once and acks what came (``group``: the builder's consumer group). The 0.x clients
    cannot ask for server-side ``autoAck`` on ``pop()`` (``auto_ack(True)`` equals their consume
    default and is then not sent), so this acks explicitly."""
    messages = list(await immediate(builder).pop())
    if messages:
        await ack_settles(queen, messages, group)
    return messages


def ack_reported(acked: dict[str, Any]) -> bool:
    """Whether the client reports an ack as this release reports an applied one."""
    if OBJECT_ACK_READER:
        return acked == OBJECT_ACK_MISREAD
    return acked.get("success", True) is not False


async def ack_settles(queen: Queen, messages: Any, group: str | None) -> Any:
    """Acks ``messages`` (one or a list) as completed through the client, checks what the client
    reports and that the broker settled each one for ``group`` (queue mode when None); returns the
    client's result."""
    acked = await queen.ack(messages, True, {"group": group} if group else {})
    assert ack_reported(acked), acked
    for message in messages if isinstance(messages, list) else [messages]:
        assert settled_for(group, message), message
    return acked


def settled_for(group: str | None, message: dict[str, Any]) -> bool:
    """Whether ``group`` (queue mode when None) has passed the message: a lease-less ``failed`` ack
    is then refused."""
    body = {
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "status": "failed",
        "consumerGroup": group,
    }
    [result] = httpx.post(f"{URL}/api/v1/ack", json=body).json()
    return bool(result["code"] == "already_settled")


def has_admin(queen: Queen) -> bool:
    """Whether this client has ``queen.admin`` (0.12 and later)."""
    return hasattr(queen, "admin")


def http(method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A direct call to the broker, for checks the client cannot make."""
    return httpx.request(method, f"{URL}{path}", **kwargs)
