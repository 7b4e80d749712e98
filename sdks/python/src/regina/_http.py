"""Sans-IO HTTP layer: requests and answers as values, and the mapping of error answers.

Nothing here touches a socket; the sync and async transports only move these values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._errors import ApiError, QueueFullError

T = TypeVar("T")

RETRIED_STATUSES = frozenset({500, 502, 503, 504})
"""Answers retried (and failed over) like network errors. ``501`` is final: the route is absent."""


@dataclass(frozen=True)
class Request:
    """One HTTP request below a server's base URL."""

    method: str
    path: str
    """Starts with ``/``; path parameters already percent-encoded."""
    query: tuple[tuple[str, str], ...] = ()
    body: Any = None
    has_body: bool = False
    timeout_s: float | None = None
    """Timeout of each attempt; ``None`` means the client's default."""
    retry_statuses: frozenset[int] = frozenset()
    """Statuses below 500 retried like 5xx for this request (the streams routes: 408, 429)."""

    def encoded_body(self) -> bytes | None:
        """The JSON body as UTF-8 bytes, or ``None`` when the request has none."""
        if not self.has_body:
            return None
        return json.dumps(self.body, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Response:
    """A successful (2xx) answer with its decoded JSON body (``None`` when empty)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call(Generic[T]):
    """A request and the decoder of its successful answer."""

    request: Request
    decode: Callable[[Response], T]


def make_request(
    method: str,
    path: str,
    *,
    query: Mapping[str, str | int | bool | None] | None = None,
    body: Any = None,
    has_body: bool | None = None,
    timeout_s: float | None = None,
    retry_statuses: frozenset[int] = frozenset(),
) -> Request:
    """Build a request; query values that are ``None`` are left out, booleans become text."""
    pairs: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if value is None:
            continue
        pairs.append((key, ("true" if value else "false") if isinstance(value, bool) else str(value)))
    return Request(
        method=method,
        path=path,
        query=tuple(pairs),
        body=body,
        has_body=body is not None if has_body is None else has_body,
        timeout_s=timeout_s,
        retry_statuses=retry_statuses,
    )


def _decode_json(content: bytes) -> Any:
    if not content.strip():
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def read_answer(status: int, headers: Mapping[str, str], content: bytes) -> Response:
    """Turn a raw answer into a :class:`Response`, or raise :class:`ApiError` for 4xx/5xx.

    ``headers`` must have lower-case names.

    Raises:
        ApiError: the status is 400 or above; ``code`` comes from the JSON error body (or is
            ``http_<status>`` when there is none). A ``429`` push answer raises
            :class:`QueueFullError` carrying every item's result.
    """
    body = _decode_json(content)
    if status < 400:
        return Response(status=status, body=body, headers=headers)
    raise error_from_answer(status, headers, body)


def error_from_answer(status: int, headers: Mapping[str, str], body: Any) -> ApiError:
    """Build the typed error of an error answer."""
    retry_after = _retry_after_s(headers)
    if status == 429 and isinstance(body, list):
        from ._models import PushResult

        results = [PushResult.from_wire(item) for item in body if isinstance(item, Mapping)]
        rejected = next((r for r in results if r.status == "failed"), None)
        return QueueFullError(
            rejected.code if rejected and rejected.code else "queue_full",
            status,
            rejected.error if rejected and rejected.error else "Queue is full",
            results=results,
            retry_after_s=retry_after,
            body=body,
        )
    if isinstance(body, Mapping) and isinstance(body.get("code"), str):
        index = body.get("index")
        limit = body.get("limit")
        field_name = body.get("field")
        return ApiError(
            body["code"],
            status,
            str(body.get("error") or body["code"]),
            field=field_name if isinstance(field_name, str) else None,
            index=index if isinstance(index, int) and not isinstance(index, bool) else None,
            limit=limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            retry_after_s=retry_after,
            body=body,
        )
    text = body.get("error") if isinstance(body, Mapping) else None
    return ApiError(
        f"http_{status}",
        status,
        text if isinstance(text, str) else f"HTTP {status}",
        retry_after_s=retry_after,
        body=body,
    )
