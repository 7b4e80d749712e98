"""Typed results of the messaging calls, decoded from the wire shapes of HTTP API v1.

Decoders ignore unknown fields (the server may add some) and keep the undecoded object in
``raw`` where a result has more than the fields named here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class DlqEntry:
    """A dead-lettered message of one group, with its last error (HTTP API §3.9)."""

    id: str
    transaction_id: str
    partition_id: str
    queue: str
    partition: str
    consumer_group: str
    error_message: str | None
    retry_count: int
    data: Json
    trace_id: str | None
    producer_sub: str | None
    created_at: datetime | None
    failed_at: datetime | None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DlqEntry:
        """Decode one entry of a DLQ listing."""
        return cls(
            id=_str(d, "id"),
            transaction_id=_str(d, "transactionId"),
            partition_id=_str(d, "partitionId"),
            queue=_str(d, "queue"),
            partition=_str(d, "partition"),
            consumer_group=_str(d, "consumerGroup"),
            error_message=_opt_str(d, "errorMessage"),
            retry_count=_int(d, "retryCount"),
            data=d.get("data"),
            trace_id=_opt_str(d, "traceId"),
            producer_sub=_opt_str(d, "producerSub"),
            created_at=parse_optional_instant(d.get("createdAt")),
            failed_at=parse_optional_instant(d.get("failedAt")),
        )


@dataclass(frozen=True)
class DlqPage:
    """One page of a DLQ listing, newest failure first; ``total`` counts every match."""

    entries: Sequence[DlqEntry]
    total: int
    limit: int
    offset: int

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DlqPage:
        """Decode a DLQ listing."""
        page = d.get("pagination")
        page = page if isinstance(page, Mapping) else {}
        entries = [DlqEntry.from_wire(m) for m in _objects(d.get("messages"))]
        return cls(
            entries=entries,
            total=_int(d, "total", len(entries)),
            limit=_int(page, "limit"),
            offset=_int(page, "offset"),
        )


@dataclass(frozen=True)
class QueueSummary:
    """One row of the queue listing (HTTP API §3.8)."""

    id: str
    name: str
    namespace: str
    task: str
    priority: int
    partitions: int
    messages_total: int
    messages_pending: int
    messages_processing: int

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> QueueSummary:
        """Decode one queue row."""
        counts = d.get("messages")
        counts = counts if isinstance(counts, Mapping) else {}
        return cls(
            id=_str(d, "id"),
            name=_str(d, "name"),
            namespace=_str(d, "namespace"),
            task=_str(d, "task"),
            priority=_int(d, "priority"),
            partitions=_int(d, "partitions"),
            messages_total=_int(counts, "total"),
            messages_pending=_int(counts, "pending"),
            messages_processing=_int(counts, "processing"),
        )


@dataclass(frozen=True)
class QueuePage:
    """One page of the queue listing, ordered by name; ``total`` counts every match."""

    queues: Sequence[QueueSummary]
    total: int
    limit: int
    offset: int

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> QueuePage:
        """Decode a queue listing."""
        page = d.get("pagination")
        page = page if isinstance(page, Mapping) else {}
        queues = [QueueSummary.from_wire(q) for q in _objects(d.get("queues"))]
        return cls(
            queues=queues,
            total=_int(page, "total", len(queues)),
            limit=_int(page, "limit"),
            offset=_int(page, "offset"),
        )


@dataclass(frozen=True)
class ConsumerGroupInfo:
    """One (group, queue) row of the consumer-group listing (HTTP API §3.10)."""

    name: str
    queue_name: str
    members: int
    partitions_with_lag: int
    total_lag: int
    max_time_lag_s: float
    state: str
    """``Stable``, ``Lagging`` or ``Dead``."""
    subscription_mode: str | None
    subscription_timestamp: datetime | None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> ConsumerGroupInfo:
        """Decode one consumer-group row."""
        topics = d.get("topics")
        queue = _str(d, "queueName")
        if not queue and isinstance(topics, list) and topics and isinstance(topics[0], str):
            queue = topics[0]
        return cls(
            name=_str(d, "name"),
            queue_name=queue,
            members=_int(d, "members"),
            partitions_with_lag=_int(d, "partitionsWithLag"),
            total_lag=_int(d, "totalLag"),
            max_time_lag_s=_num(d, "maxTimeLag"),
            state=_str(d, "state"),
            subscription_mode=_opt_str(d, "subscriptionMode"),
            subscription_timestamp=parse_optional_instant(d.get("subscriptionTimestamp")),
        )


@dataclass(frozen=True)
class DeleteGroupResult:
    """Answer of a consumer-group delete."""

    consumer_group: str
    deleted_partitions: int
    metadata_deleted: bool

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DeleteGroupResult:
        """Decode a consumer-group delete answer."""
        return cls(
            consumer_group=_str(d, "consumerGroup"),
            deleted_partitions=_int(d, "deletedPartitions"),
            metadata_deleted=_bool(d, "metadataDeleted"),
        )


@dataclass(frozen=True)
class SeekResult:
    """Answer of a consumer-group seek on a queue (or on one partition: ``partitions_updated`` 1)."""

    consumer_group: str
    queue_name: str
    seek_to_end: bool
    target_timestamp: datetime | None
    partitions_updated: int

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> SeekResult:
        """Decode a seek answer."""
        return cls(
            consumer_group=_str(d, "consumerGroup"),
            queue_name=_str(d, "queueName"),
            seek_to_end=_bool(d, "seekToEnd"),
            target_timestamp=parse_optional_instant(d.get("targetTimestamp")),
            partitions_updated=_int(d, "partitionsUpdated", 1 if _bool(d, "updated") else 0),
        )


@dataclass(frozen=True)
class RequeueResult:
    """Answer of a DLQ requeue: the groups the message was delivered to again."""

    partition_id: str
    transaction_id: str
    consumer_groups: Sequence[str]

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RequeueResult:
        """Decode a requeue answer."""
        groups = d.get("consumerGroups")
        return cls(
            partition_id=_str(d, "partitionId"),
            transaction_id=_str(d, "transactionId"),
            consumer_groups=[g for g in groups if isinstance(g, str)] if isinstance(groups, list) else [],
        )


@dataclass(frozen=True)
class MessageDetail:
    """A stored message looked up by its partition and transaction id (HTTP API §3.9).

    ``raw`` holds the whole answer (per-group states, queue configuration, mode).
    """

    id: str
    transaction_id: str
    partition_id: str
    queue: str
    partition: str
    status: str
    """``pending``, ``processing``, ``completed`` or ``dead_letter``."""
    payload: Json
    trace_id: str | None
    created_at: datetime | None
    error_message: str | None
    retry_count: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> MessageDetail:
        """Decode a message lookup answer."""
        return cls(
            id=_str(d, "id"),
            transaction_id=_str(d, "transactionId"),
            partition_id=_str(d, "partitionId"),
            queue=_str(d, "queue"),
            partition=_str(d, "partition"),
            status=_str(d, "status"),
            payload=d.get("payload"),
            trace_id=_opt_str(d, "traceId"),
            created_at=parse_optional_instant(d.get("createdAt")),
            error_message=_opt_str(d, "errorMessage"),
            retry_count=_int(d, "retryCount"),
            raw=dict(d),
        )


@dataclass(frozen=True)
class Health:
    """Answer of ``GET /health`` (``healthy`` is false when the database is unreachable)."""

    healthy: bool
    database: str
    version: str
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Health:
        """Decode a health answer."""
        return cls(
            healthy=_str(d, "status") == "healthy",
            database=_str(d, "database"),
            version=_str(d, "version"),
            raw=dict(d),
        )
