"""Typed results of the inspection and administration calls: DLQ, queue listing, consumer
groups, seek, requeue, message lookup, health (HTTP API §3.8 to §3.10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._models import Json, _bool, _int, _num, _objects, _opt_str, _str
from ._time import parse_optional_instant


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
