"""Errors raised by the client.

Every failure the server reports carries a stable ``code`` (see :class:`ErrorCode`); programs
branch on it, never on the message text. Failures of the connection itself are
:class:`NetworkError` (and :class:`RequestTimeoutError` for timeouts). Outcomes reported in-band
(one pushed item rejected, one ack refused) are values in the results, not exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ._models import PushResult


class ErrorCode:
    """The server's stable error codes (HTTP API §2.3). Codes never change meaning."""

    INVALID_JSON: Final = "invalid_json"
    VALIDATION_FAILED: Final = "validation_failed"
    INVALID_PARAMETER: Final = "invalid_parameter"
    TOO_MANY_ITEMS: Final = "too_many_items"
    UNAUTHORIZED: Final = "unauthorized"
    TOKEN_EXPIRED: Final = "token_expired"
    FORBIDDEN: Final = "forbidden"
    ROUTE_NOT_FOUND: Final = "route_not_found"
    QUEUE_NOT_FOUND: Final = "queue_not_found"
    PARTITION_NOT_FOUND: Final = "partition_not_found"
    MESSAGE_NOT_FOUND: Final = "message_not_found"
    NOT_IN_DLQ: Final = "not_in_dlq"
    METHOD_NOT_ALLOWED: Final = "method_not_allowed"
    LEASE_EXPIRED: Final = "lease_expired"
    LEASE_NOT_FOUND: Final = "lease_not_found"
    NOT_LEASED: Final = "not_leased"
    ALREADY_SETTLED: Final = "already_settled"
    GROUP_MISMATCH: Final = "group_mismatch"
    MESSAGE_LEASED: Final = "message_leased"
    QUERY_NOT_FOUND: Final = "query_not_found"
    CONFIG_HASH_MISMATCH: Final = "config_hash_mismatch"
    ENCRYPTION_UNAVAILABLE: Final = "encryption_unavailable"
    BODY_TOO_LARGE: Final = "body_too_large"
    QUEUE_FULL: Final = "queue_full"
    DATABASE_UNAVAILABLE: Final = "database_unavailable"
    DATABASE_TIMEOUT: Final = "database_timeout"
    BUFFER_UNAVAILABLE: Final = "buffer_unavailable"
    OVERLOADED: Final = "overloaded"
    SHUTTING_DOWN: Final = "shutting_down"
    NOT_IMPLEMENTED: Final = "not_implemented"
    DECRYPTION_FAILED: Final = "decryption_failed"
    INTERNAL: Final = "internal"


class ReginaError(Exception):
    """Base class of every error the client raises."""


class ApiError(ReginaError):
    """The server answered with an error status.

    Attributes:
        code: the server's stable error code (an :class:`ErrorCode` value); when the answer has
            no JSON error body (a proxy's page, say) it is ``"http_<status>"``.
        status: the HTTP status.
        message: the server's human-readable text (display it, never match it).
        field: the offending field, such as ``items[3].traceId``, when the server names one.
        index: the offending array index, when the server names one.
        limit: the limit that was exceeded, when the server names one.
        retry_after_s: the ``Retry-After`` header in seconds, when present.
        body: the decoded error body (``None`` when it was not JSON).
    """

    def __init__(
        self,
        code: str,
        status: int,
        message: str,
        *,
        field: str | None = None,
        index: int | None = None,
        limit: int | None = None,
        retry_after_s: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{message} ({code}, HTTP {status})")
        self.code = code
        self.status = status
        self.message = message
        self.field = field
        self.index = index
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.body = body


class QueueFullError(ApiError):
    """A push was refused in part because a queue reached its ``maxSize`` (HTTP ``429``).

    ``results`` tells, item by item, what was stored (``queued``/``duplicate``) and what was
    rejected (``failed``, code ``queue_full``). Pushing the same items again is safe: every item
    carries its transactionId, so the stored ones come back as duplicates.
    """

    def __init__(
        self, code: str, status: int, message: str, *, results: Sequence[PushResult], **extra: Any
    ) -> None:
        super().__init__(code, status, message, **extra)
        self.results = results


class NetworkError(ReginaError):
    """No answer came from any server: connection refused, reset or lost, after all retries.

    Attributes:
        url: the last server tried.
    """

    def __init__(self, message: str, url: str) -> None:
        super().__init__(f"{message} ({url})")
        self.message = message
        self.url = url


class RequestTimeoutError(NetworkError, TimeoutError):
    """A request got no answer within its timeout, after all retries."""
