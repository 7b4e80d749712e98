"""Typed results of the messaging calls, decoded from the wire shapes of HTTP API v1.

Decoders ignore unknown fields (the server may add some) and keep the undecoded object in
``raw`` where a result has more than the fields named here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from ._time import parse_instant, parse_optional_instant

Json = Any
"""Any JSON value: dict, list, str, int, float, bool or None."""

AckStatus = Literal["completed", "success", "failed", "retry", "dlq"]
"""Status an ack gives a message; ``success`` is an alias of ``completed``."""

SubscriptionMode = Literal["all", "new", "new-only"]
"""Where a new consumer group starts: every retained message, or only messages pushed from now."""


class QueueOptions(TypedDict, total=False):
    """Options of a queue, named as ``POST /api/v1/configure`` names them (HTTP API §3.2).

    Absent options keep their stored value (or take the default on a new queue).
    """

    leaseTime: int
    """Seconds a pop's lease lasts (0 is stored as 60). Default 300."""
    retryLimit: int
    """Failed attempts after which the head message is dead-lettered. Default 3."""
    retryDelay: int
    """Milliseconds a failed partition waits before it is delivered again. Default 0."""
    maxSize: int
    """Maximum queue depth in messages; 0 means unlimited."""
    ttl: int
    """Seconds after which a message expires; 0 means never."""
    priority: int
    """Order of queues in multi-queue pops, highest first."""
    delayedProcessing: int
    """Seconds a message stays invisible after it is pushed."""
    windowBuffer: int
    """Seconds a partition must be quiet before it is delivered."""
    deadLetterQueue: bool
    """Keep dead-lettered messages in the DLQ (otherwise they are discarded). Default true."""
    dlqAfterMaxRetries: bool
    """Accepted for compatibility; no effect."""
    retentionEnabled: bool
    """Master switch of the two retention options. Default true."""
    retentionSeconds: int
    """Delete messages older than this many seconds; 0 means off."""
    completedRetentionSeconds: int
    """Delete settled messages older than this many seconds; 0 means off."""
    maxWaitTimeSeconds: int
    """Evict unsettled messages older than this many seconds; 0 means off."""
    encryptionEnabled: bool
    """Store payloads encrypted (the broker needs a key)."""


class PushItem(TypedDict, total=False):
    """One message to push. ``payload`` is any JSON value.

    ``transactionId`` is the idempotency key within the partition; when it is absent the client
    assigns a UUIDv7 before the first attempt, so a retried push cannot store the message twice.
    ``traceId`` is a correlation id of up to 128 characters.
    """

    payload: Json
    transactionId: str
    traceId: str | None


def _str(d: Mapping[str, Any], key: str, default: str = "") -> str:
    value = d.get(key)
    return value if isinstance(value, str) else default


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    value = d.get(key)
    return value if isinstance(value, str) else None


def _int(d: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _num(d: Mapping[str, Any], key: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)


def _bool(d: Mapping[str, Any], key: str) -> bool:
    return d.get(key) is True


def _objects(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


@dataclass(frozen=True)
class Message:
    """A delivered message (HTTP API §3.4)."""

    id: str
    transaction_id: str
    trace_id: str | None
    data: Json
    """The payload."""
    producer_sub: str | None
    created_at: datetime
    partition_id: str
    partition: str
    queue: str
    lease_id: str
    """Lease of the pop that delivered it; empty for autoAck deliveries."""
    consumer_group: str
    """The group it was delivered to; ``__QUEUE_MODE__`` in queue mode."""
    retry_count: int
    """Failed attempts already recorded for this message."""

    @property
    def payload(self) -> Json:
        """The payload (same as ``data``)."""
        return self.data

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Message:
        """Decode one message object of a pop answer."""
        return cls(
            id=_str(d, "id"),
            transaction_id=_str(d, "transactionId"),
            trace_id=_opt_str(d, "traceId") or None,
            data=d.get("data"),
            producer_sub=_opt_str(d, "producerSub"),
            created_at=parse_instant(_str(d, "createdAt", "1970-01-01T00:00:00Z")),
            partition_id=_str(d, "partitionId"),
            partition=_str(d, "partition"),
            queue=_str(d, "queue"),
            lease_id=_str(d, "leaseId"),
            consumer_group=_str(d, "consumerGroup", "__QUEUE_MODE__"),
            retry_count=_int(d, "retryCount"),
        )


PushStatus = Literal["queued", "duplicate", "buffered", "failed"]


@dataclass(frozen=True)
class PushResult:
    """Outcome of one pushed item, in item order (HTTP API §3.3).

    ``status`` is ``queued`` (stored), ``duplicate`` (the key was already stored; ``message_id``
    names that message), ``buffered`` (held in the broker's failover buffer) or ``failed``
    (rejected, with ``code``, for example ``queue_full``).
    """

    index: int
    transaction_id: str
    status: str
    message_id: str | None
    partition_id: str | None
    trace_id: str | None
    queue_name: str
    error: str | None = None
    code: str | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> PushResult:
        """Decode one entry of a push answer (snake_case ids, as the API keeps them)."""
        return cls(
            index=_int(d, "index"),
            transaction_id=_str(d, "transaction_id"),
            status=_str(d, "status"),
            message_id=_opt_str(d, "message_id"),
            partition_id=_opt_str(d, "partition_id"),
            trace_id=_opt_str(d, "trace_id"),
            queue_name=_str(d, "queueName"),
            error=_opt_str(d, "error"),
            code=_opt_str(d, "code"),
        )


@dataclass(frozen=True)
class AckResult:
    """Outcome of one ack item (HTTP API §3.5). Failures are in-band: ``success`` false, ``code``."""

    index: int
    transaction_id: str
    success: bool
    error: str | None
    code: str | None
    queue_name: str | None
    partition_name: str | None
    lease_released: bool
    """This ack ended the lease."""
    dlq: bool
    """This ack moved the message to the DLQ."""

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> AckResult:
        """Decode one entry of an ack answer."""
        return cls(
            index=_int(d, "index"),
            transaction_id=_str(d, "transactionId"),
            success=_bool(d, "success"),
            error=_opt_str(d, "error"),
            code=_opt_str(d, "code"),
            queue_name=_opt_str(d, "queueName"),
            partition_name=_opt_str(d, "partitionName"),
            lease_released=_bool(d, "leaseReleased"),
            dlq=_bool(d, "dlq"),
        )


@dataclass(frozen=True)
class RenewResult:
    """Outcome of a lease extension (HTTP API §3.6); failures are in-band (``lease_expired``)."""

    lease_id: str
    success: bool
    error: str | None
    code: str | None
    expires_at: datetime | None
    """Earliest new expiry among the lease's partitions."""

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RenewResult:
        """Decode the entry of a lease extension answer."""
        return cls(
            lease_id=_str(d, "leaseId"),
            success=_bool(d, "success"),
            error=_opt_str(d, "error"),
            code=_opt_str(d, "code"),
            expires_at=parse_optional_instant(d.get("expiresAt") or d.get("newExpiresAt")),
        )


@dataclass(frozen=True)
class ConfigureResult:
    """Answer of ``POST /api/v1/configure``."""

    created: bool
    """True when this call created the queue."""
    queue: str
    queue_id: str
    partition_id: str
    """Id of the queue's ``Default`` partition."""
    namespace: str
    task: str
    options: Mapping[str, Any]
    """Every option with its effective value."""

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> ConfigureResult:
        """Decode a configure answer."""
        options = d.get("options")
        return cls(
            created=_bool(d, "created"),
            queue=_str(d, "queue"),
            queue_id=_str(d, "queueId"),
            partition_id=_str(d, "partitionId"),
            namespace=_str(d, "namespace"),
            task=_str(d, "task"),
            options=dict(options) if isinstance(options, Mapping) else {},
        )


@dataclass(frozen=True)
class DeleteQueueResult:
    """Answer of a queue delete; deleting is idempotent (``existed`` false when absent)."""

    queue: str
    existed: bool

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DeleteQueueResult:
        """Decode a queue delete answer."""
        return cls(queue=_str(d, "queue"), existed=_bool(d, "existed"))


@dataclass(frozen=True)
class TransactionItemResult:
    """Outcome of one ack operation or pushed item of a transaction, in operation order."""

    index: int
    type: str
    """``ack`` or ``push``."""
    success: bool
    transaction_id: str
    status: str | None
    """For pushes: ``queued`` or ``duplicate``."""
    message_id: str | None
    partition_id: str | None
    queue_name: str | None
    error: str | None
    code: str | None
    dlq: bool
    lease_released: bool

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TransactionItemResult:
        """Decode one result of a transaction answer."""
        return cls(
            index=_int(d, "index"),
            type=_str(d, "type"),
            success=_bool(d, "success"),
            transaction_id=_str(d, "transactionId"),
            status=_opt_str(d, "status"),
            message_id=_opt_str(d, "messageId"),
            partition_id=_opt_str(d, "partitionId"),
            queue_name=_opt_str(d, "queueName"),
            error=_opt_str(d, "error"),
            code=_opt_str(d, "code"),
            dlq=_bool(d, "dlq"),
            lease_released=_bool(d, "leaseReleased"),
        )


@dataclass(frozen=True)
class TransactionResult:
    """Answer of a committed transaction (HTTP API §3.7). A failed one raises ``ApiError``."""

    transaction_id: str
    """Id naming this transaction."""
    success: bool
    results: Sequence[TransactionItemResult]

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TransactionResult:
        """Decode a transaction answer."""
        return cls(
            transaction_id=_str(d, "transactionId"),
            success=_bool(d, "success"),
            results=[TransactionItemResult.from_wire(r) for r in _objects(d.get("results"))],
        )
