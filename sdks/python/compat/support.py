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
        acked = await queen.ack(messages, True, {"group": group} if group else {})
        assert acked.get("success", True) is not False, acked
    return messages


def settled_for(group: str, message: dict[str, Any]) -> bool:
    """Whether ``group`` has passed the message: a lease-less ``failed`` ack is then refused."""
    body = {
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "status": "failed",
        "consumerGroup": group,
    }
    [result] = httpx.post(f"{URL}/api/v1/ack", json=body).json()
    return bool(result["code"] == "already_settled")


def http(method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A direct call to the broker, for checks the client cannot make."""
    return httpx.request(method, f"{URL}{path}", **kwargs)
