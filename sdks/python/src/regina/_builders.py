"""Fluent state shared by the sync and async builders; terminal calls live in their modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from . import _calls
from ._admin_models import (
    DlqPage,
    SeekResult,
)
from ._buffer import BufferOptions
from ._calls import DEFAULT_PARTITION, MessageRef
from ._consume import ConsumeSettings
from ._http import Call
from ._models import (
    ConfigureResult,
    Message,
    PushItem,
    QueueOptions,
    TransactionResult,
)

B = TypeVar("B", bound="QueueSpec")
TX = TypeVar("TX", bound="TransactionSpec")


class QueueSpec:
    """What ``client.queue(name)`` accumulates: a partition, a group, pop and consume settings."""

    def __init__(self, name: str, long_poll_margin_ms: int) -> None:
        self._name = name
        self._long_poll_margin_ms = long_poll_margin_ms
        self._partition: str | None = None
        self._group: str | None = None
        self._options: QueueOptions = {}
        self._namespace: str | None = None
        self._task: str | None = None
        self._batch = 1
        self._partitions = 1
        self._concurrency = 1
        self._auto_ack = False
        self._each = False
        self._limit: int | None = None
        self._idle_ms: int | None = None
        self._renew_every_ms: int | None = None
        self._subscription_mode: str | None = None
        self._subscription_from: str | datetime | None = None
        self._wait = False
        self._timeout_ms = 30_000
        self._buffer: BufferOptions | None = None

    @property
    def name(self) -> str:
        """The queue's name."""
        return self._name

    def config(self: B, options: QueueOptions | Mapping[str, Any]) -> B:
        """Queue options for :meth:`create`, named as the HTTP API names them (``leaseTime``…)."""
        self._options = {**self._options, **options}  # type: ignore[typeddict-item]
        return self

    def namespace(self: B, namespace: str) -> B:
        """Namespace for :meth:`create` (default: the name's part before the first ``.``)."""
        self._namespace = namespace
        return self

    def task(self: B, task: str) -> B:
        """Task for :meth:`create` (default: the name's part between the first two ``.``)."""
        self._task = task
        return self

    def partition(self: B, name: str) -> B:
        """Push to this partition (default ``Default``); pop and consume only this partition."""
        self._partition = name
        return self

    def group(self: B, name: str) -> B:
        """Consumer group for pop, consume, DLQ and seek (default: queue mode)."""
        self._group = name
        return self

    def batch(self: B, size: int) -> B:
        """Messages per pop, across all claimed partitions (default 1)."""
        self._batch = size
        return self

    def partitions(self: B, count: int) -> B:
        """Partitions one pop may claim (default 1); they share one lease."""
        self._partitions = count
        return self

    def concurrency(self: B, workers: int) -> B:
        """Consumer workers popping in parallel (default 1)."""
        self._concurrency = workers
        return self

    def auto_ack(self: B, enabled: bool = True) -> B:
        """Let the server settle messages on delivery (at-most-once); the client then never acks."""
        self._auto_ack = enabled
        return self

    def each(self: B) -> B:
        """Call the consume handler once per message instead of once per delivered batch."""
        self._each = True
        return self

    def limit(self: B, count: int) -> B:
        """Stop consuming after this many messages were handed to the handler."""
        self._limit = count
        return self

    def idle_millis(self: B, ms: int) -> B:
        """Stop consuming when nothing arrived for this many milliseconds."""
        self._idle_ms = ms
        return self

    def renew_lease(self: B, enabled: bool = True, every_ms: int = 10_000) -> B:
        """Extend the lease every ``every_ms`` milliseconds while the handler runs."""
        self._renew_every_ms = every_ms if enabled else None
        return self

    def subscription_mode(self: B, mode: str) -> B:
        """Where a new group starts: ``all`` (every retained message) or ``new`` (from now)."""
        self._subscription_mode = mode
        return self

    def subscription_from(self: B, instant: str | datetime) -> B:
        """A new group starts at this instant (``now`` or a timestamp)."""
        self._subscription_from = instant
        return self

    def wait(self: B, enabled: bool = True) -> B:
        """Make :meth:`pop` a long-poll (consume always long-polls)."""
        self._wait = enabled
        return self

    def timeout_millis(self: B, ms: int) -> B:
        """Long-poll deadline of one pop, in milliseconds (default 30 000)."""
        self._timeout_ms = ms
        return self

    def buffer(self: B, message_count: int = 100, time_millis: int = 1_000) -> B:
        """Hold pushes client-side and send them in batches (see ``flush()``)."""
        self._buffer = BufferOptions(message_count=message_count, time_ms=time_millis)
        return self

    def _push_key(self) -> tuple[str, str]:
        return (self._name, self._partition or DEFAULT_PARTITION)

    def _wire_items(self, items: Sequence[PushItem | Mapping[str, Any]]) -> list[dict[str, Any]]:
        queue, partition = self._push_key()
        return [_calls.push_item_wire(queue, partition, item) for item in items]

    def _configure_call(self) -> Call[ConfigureResult]:
        return _calls.configure(self._name, self._options, self._namespace, self._task)

    def _pop_call(self) -> Call[list[Message]]:
        return _calls.pop(
            self._name,
            partition=self._partition,
            group=self._group,
            batch=self._batch,
            partitions=self._partitions,
            wait=self._wait,
            timeout_ms=self._timeout_ms,
            auto_ack=self._auto_ack,
            subscription_mode=self._subscription_mode,
            subscription_from=self._subscription_from,
            long_poll_margin_ms=self._long_poll_margin_ms,
        )

    def _consume_settings(self) -> ConsumeSettings:
        return ConsumeSettings(
            queue=self._name,
            partition=self._partition,
            group=self._group,
            batch=self._batch,
            partitions=self._partitions,
            concurrency=self._concurrency,
            auto_ack=self._auto_ack,
            each=self._each,
            limit=self._limit,
            idle_ms=self._idle_ms,
            renew_every_ms=self._renew_every_ms,
            subscription_mode=self._subscription_mode,
            subscription_from=self._subscription_from,
            timeout_ms=self._timeout_ms,
            long_poll_margin_ms=self._long_poll_margin_ms,
        )

    def _dlq_call(self, limit: int | None, offset: int | None) -> Call[DlqPage]:
        return _calls.dlq(
            self._name, group=self._group, partition=self._partition, limit=limit, offset=offset
        )

    def _seek_call(self, to_end: bool, timestamp: str | datetime | None) -> Call[SeekResult]:
        group = self._group or _calls.QUEUE_MODE
        return _calls.seek(group, self._name, partition=self._partition, to_end=to_end, timestamp=timestamp)


class TransactionSpec:
    """Operations of a transaction, in order: acks and pushes (applied atomically on commit)."""

    def __init__(self) -> None:
        self._operations: list[dict[str, Any]] = []

    def ack(
        self: TX,
        message: MessageRef | Sequence[MessageRef],
        status: str = "completed",
        *,
        error: str | None = None,
        group: str | None = None,
    ) -> TX:
        """Settle one message (or several) as part of the transaction, under its lease."""
        messages = message if isinstance(message, Sequence) else [message]
        for m in messages:
            self._operations.append({"type": "ack", **_calls.ack_item_wire(m, status, error, group)})
        return self

    def queue(self: TX, name: str) -> TransactionQueue[TX]:
        """Push to this queue as part of the transaction: ``.queue(q).partition(p).push([...])``."""
        return TransactionQueue(self, name)

    def _push(self, queue: str, partition: str | None, items: Sequence[PushItem | Mapping[str, Any]]) -> None:
        wire = [_calls.push_item_wire(queue, partition or DEFAULT_PARTITION, item) for item in items]
        self._operations.append({"type": "push", "items": wire})

    def _commit_call(self) -> Call[TransactionResult]:
        if not self._operations:
            raise ValueError("a transaction needs at least one operation")
        return _calls.transaction(self._operations)


class TransactionQueue(Generic[TX]):
    """``transaction().queue(name)``: where the next pushed items go; ``push`` returns the transaction."""

    def __init__(self, parent: TX, queue: str) -> None:
        self._parent = parent
        self._queue = queue
        self._partition: str | None = None

    def partition(self, name: str) -> TransactionQueue[TX]:
        """Push to this partition (default ``Default``)."""
        self._partition = name
        return self

    def push(self, items: Sequence[PushItem | Mapping[str, Any]]) -> TX:
        """Add pushed items to the transaction (transactionIds are assigned now when absent)."""
        self._parent._push(self._queue, self._partition, items)
        return self._parent
