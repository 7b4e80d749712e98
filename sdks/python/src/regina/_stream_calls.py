"""The three streams routes as :class:`Call` values: register a query, read state, commit a cycle.

They are retried on network errors, timeouts, ``408``, ``429`` and 5xx (not ``501``) with the
client's retry count and backoff; other 4xx are final. A ``2xx`` answer with ``success: false`` is
a failure too. A cycle is safe to retry: the broker recognises a cycle that already committed (by
its ack's lease), and sink items keep the transaction ids given to them before the first attempt,
so a repeated ack-less cycle pushes nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import ApiError, ErrorCode
from ._http import Call, Response, make_request
from ._models import Json

STREAM_RETRY_STATUSES = frozenset({408, 429})
"""Statuses below 500 that the streams routes retry."""


@dataclass(frozen=True)
class Registration:
    """Answer of a query registration.

    Attributes:
        query_id: the broker's id of the query (a UUID, unchanged by a reset).
        name: the query's name (``query_id`` of ``run``).
        fresh: this registration created the query.
        reset: this registration wiped the query's state for a new chain.
    """

    query_id: str
    name: str
    fresh: bool
    reset: bool


def _answer(response: Response, path: str) -> Mapping[str, Any]:
    body = response.body
    if not isinstance(body, Mapping) or body.get("success") is False:
        text = body.get("error") if isinstance(body, Mapping) else None
        code = body.get("code") if isinstance(body, Mapping) else None
        raise ApiError(
            code if isinstance(code, str) else f"http_{response.status}",
            response.status,
            text if isinstance(text, str) else f"{path} answered without success",
            body=body,
        )
    return body


def _post(path: str, body: Mapping[str, Any]) -> Any:
    return make_request("POST", path, body=dict(body), retry_statuses=STREAM_RETRY_STATUSES)


def register(name: str, source: str, sink: str | None, hash_: str, reset: bool) -> Call[Registration]:
    """``POST /streams/v1/queries``."""
    path = "/streams/v1/queries"
    body = {"name": name, "source_queue": source, "sink_queue": sink, "config_hash": hash_, "reset": reset}

    def decode(response: Response) -> Registration:
        answer = _answer(response, path)
        return Registration(
            query_id=str(answer.get("query_id") or ""),
            name=str(answer.get("name") or name),
            fresh=answer.get("fresh") is True,
            reset=answer.get("reset") is True,
        )

    return Call(_post(path, body), decode)


def mismatch_with_hint(error: ApiError, name: str) -> ApiError:
    """A ``409`` of the registration, with a hint appended to the broker's text."""
    if error.status != 409:
        return error
    code = error.code if not error.code.startswith("http_") else ErrorCode.CONFIG_HASH_MISMATCH
    hint = (
        f" The operator chain of query '{name}' differs from the registered one: "
        "run with reset=True to drop its state, or use a new query_id."
    )
    return ApiError(code, 409, error.message + hint, body=error.body)


def state(
    query_id: str, partition_id: str, key_prefix: str | None = None, ripe_at_or_before: float | None = None
) -> Call[dict[str, Json]]:
    """``POST /streams/v1/state/get``: the shard's rows (or the ripe rows under a prefix), by key."""
    path = "/streams/v1/state/get"
    body: dict[str, Any] = {"query_id": query_id, "partition_id": partition_id, "keys": []}
    if key_prefix is not None:
        body["key_prefix"] = key_prefix
    if ripe_at_or_before is not None:
        body["ripe_at_or_before"] = ripe_at_or_before

    def decode(response: Response) -> dict[str, Json]:
        rows = _answer(response, path).get("rows")
        if not isinstance(rows, list):
            return {}
        return {
            row["key"]: row.get("value")
            for row in rows
            if isinstance(row, Mapping) and isinstance(row.get("key"), str)
        }

    return Call(_post(path, body), decode)


def cycle(
    query_id: str,
    partition_id: str,
    group: str,
    state_ops: Sequence[Mapping[str, Any]],
    push_items: Sequence[Mapping[str, Any]],
    ack: Mapping[str, Any] | None,
    release_lease: bool | None = None,
) -> Call[None]:
    """``POST /streams/v1/cycle``: state changes, sink items and the ack, all or nothing."""
    path = "/streams/v1/cycle"
    body: dict[str, Any] = {
        "query_id": query_id,
        "partition_id": partition_id,
        "consumer_group": group,
        "state_ops": list(state_ops),
        "push_items": list(push_items),
        "ack": None if ack is None else dict(ack),
    }
    if release_lease is not None:
        body["release_lease"] = release_lease

    def decode(response: Response) -> None:
        _answer(response, path)

    return Call(_post(path, body), decode)
