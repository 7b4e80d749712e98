# Generated from _async.py by scripts/generate_sync.py: edit that file, then run the script.
"""The blocking client: :class:`Regina`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, overload

from . import _calls
from ._admin_models import (
    ConsumerGroupInfo,
    DeleteGroupResult,
    DlqPage,
    Health,
    MessageDetail,
    QueuePage,
    RequeueResult,
    SeekResult,
)
from ._builders import QueueSpec, TransactionSpec
from ._calls import MessageRef
from ._consume import ConsumePlan
from ._models import (
    AckResult,
    AckStatus,
    ConfigureResult,
    DeleteQueueResult,
    Message,
    PushItem,
    PushResult,
    RenewResult,
    TransactionResult,
)
from ._settings import ClientSettings
from ._stream import Stream
from ._sync_buffers import SyncBuffers
from ._sync_consume import SyncConsumer
from ._transport import SyncTransport, TokenSource


class Queue(QueueSpec):
    """Fluent calls on one queue: ``client.queue("orders").partition("p1").push([...])``."""

    def __init__(self, client: Regina, name: str) -> None:
        super().__init__(name, client._settings.long_poll_margin_ms)
        self._client = client

    def create(self) -> ConfigureResult:
        """Create the queue or merge the :meth:`config` options into it."""
        return self._client._t.send(self._configure_call())

    def delete(self) -> DeleteQueueResult:
        """Delete the queue with everything in it (idempotent)."""
        return self._client._t.send(_calls.delete_queue(self._name))

    def push(self, items: Sequence[PushItem | Mapping[str, Any]]) -> list[PushResult]:
        """Push items (``{"payload": …, "transactionId"?: …, "traceId"?: …}``), in order.

        Items without a transactionId get a UUIDv7 before the first attempt, so a retried push is
        deduplicated, never doubled. With :meth:`buffer` set, the items are held client-side and
        the results of whatever this call flushed are returned (often none).

        Raises:
            QueueFullError: a queue is at its ``maxSize``; ``results`` says what was stored.
            ApiError: the push was refused (nothing was stored).
            NetworkError: no server answered.
        """
        wire = self._wire_items(items)
        if self._buffer is not None:
            return self._client._buffers.add(self._push_key(), wire, self._buffer)
        return self._client._t.send(_calls.push(wire))

    def flush(self) -> list[PushResult]:
        """Send what the client-side buffer holds for this queue and partition."""
        return self._client._buffers.flush_key(self._push_key())

    def pop(self) -> list[Message]:
        """Pop up to ``batch`` messages (empty when there are none)."""
        return self._client._t.send(self._pop_call())

    def consume(self, handler: Callable[[Any], object], *, stop: threading.Event | None = None) -> int:
        """Run a consumer loop; return how many messages were handed to ``handler``.

        ``handler`` gets one :class:`Message` with :meth:`each`, else the list of a delivery.
        When it returns the messages are acked ``completed``; when it raises they are acked
        ``failed`` with the exception's text. The loop ends at :meth:`limit`, after
        :meth:`idle_millis` without messages, or when ``stop`` is set: handlers in flight
        finish and are acked, nothing new is popped (noticed within about a second).

        Raises:
            ApiError: a pop was refused (a bad parameter, say).
        """
        plan = ConsumePlan(self._consume_settings())
        return SyncConsumer(self._client._t, plan, handler, stop).run()

    def dlq(self, *, limit: int | None = None, offset: int | None = None) -> DlqPage:
        """Dead-lettered messages of this queue (of the :meth:`group`, if set), newest first."""
        return self._client._t.send(self._dlq_call(limit, offset))

    def seek(self, *, to_end: bool = False, timestamp: str | datetime | None = None) -> SeekResult:
        """Move the :meth:`group` on every partition (or the :meth:`partition`): to the end, or to
        just after ``timestamp``."""
        return self._client._t.send(self._seek_call(to_end, timestamp))


class Transaction(TransactionSpec):
    """Acks and pushes committed atomically: ``client.transaction().ack(m).queue(q).push([...]).commit()``."""

    def __init__(self, client: Regina) -> None:
        super().__init__()
        self._client = client

    def commit(self) -> TransactionResult:
        """Apply every operation, or none.

        Raises:
            ApiError: the transaction was refused and nothing was applied (``lease_expired``…).
        """
        return self._client._t.send(self._commit_call())


class Admin:
    """Inspection and administration: queues, consumer groups, DLQ, message lookup, health."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def queues(
        self,
        *,
        namespace: str | None = None,
        task: str | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> QueuePage:
        """One page of the queue listing, ordered by name."""
        return self._t.send(
            _calls.queues(namespace=namespace, task=task, search=search, limit=limit, offset=offset)
        )

    def delete_queue(self, name: str) -> DeleteQueueResult:
        """Delete a queue with everything in it (idempotent)."""
        return self._t.send(_calls.delete_queue(name))

    def consumer_groups(
        self, *, limit: int | None = None, offset: int | None = None
    ) -> list[ConsumerGroupInfo]:
        """Every (group, queue) pair with a cursor or a subscription."""
        return self._t.send(_calls.consumer_groups(limit=limit, offset=offset))

    def delete_consumer_group(
        self, group: str, *, queue: str | None = None, delete_metadata: bool = True
    ) -> DeleteGroupResult:
        """Forget a group (on one queue, or everywhere); with ``delete_metadata`` its subscription too."""
        return self._t.send(_calls.delete_consumer_group(group, queue, delete_metadata))

    def seek(
        self, group: str, queue: str, *, to_end: bool = False, timestamp: str | datetime | None = None
    ) -> SeekResult:
        """Move a group on every partition of a queue: to the end, or to just after ``timestamp``."""
        return self._t.send(_calls.seek(group, queue, to_end=to_end, timestamp=timestamp))

    def dlq(
        self,
        queue: str | None = None,
        *,
        group: str | None = None,
        partition: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
    ) -> DlqPage:
        """Dead-lettered messages, newest failure first."""
        return self._t.send(
            _calls.dlq(
                queue, group=group, partition=partition, limit=limit, offset=offset, since=since, until=until
            )
        )

    def requeue(self, entry: MessageRef, *, group: str | None = None) -> RequeueResult:
        """Deliver a dead-lettered message again to ``group`` (default: every group it failed for)."""
        return self._t.send(_calls.requeue(entry, group if group is not None else _calls.group_of(entry)))

    def message(self, ref: MessageRef) -> MessageDetail:
        """Look a stored message up by its partition id and transaction id."""
        return self._t.send(_calls.message(ref))

    def health(self) -> Health:
        """The broker's health (raises when it is unhealthy: ``503``)."""
        return self._t.send(_calls.health())


class Regina:
    """Blocking Regina client. Thread-safe; close it (or use ``with``) to flush and free sockets.

    Args:
        servers: one broker URL or several (failover in order; the last that answered is
            preferred).
        token: bearer token, or a function returning the current one.
        timeout_ms: timeout of one attempt (long-polls add their wait to it).
        retries: attempts after the first on network errors and 5xx answers (never on 4xx).
        retry_base_ms: backoff after a round over every server failed; doubles each round.
        retry_max_ms: upper bound of one backoff delay.
        long_poll_margin_ms: added to a long-poll's wait for its attempt timeout.
        headers: extra headers sent with every request.
    """

    def __init__(
        self,
        servers: str | Sequence[str] = "http://localhost:6632",
        *,
        token: TokenSource = None,
        timeout_ms: int = 30_000,
        retries: int = 3,
        retry_base_ms: int = 100,
        retry_max_ms: int = 5_000,
        long_poll_margin_ms: int = 5_000,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._settings = ClientSettings.build(
            servers, token, timeout_ms, retries, retry_base_ms, retry_max_ms, long_poll_margin_ms, headers
        )
        self._t = SyncTransport(self._settings.transport)
        self._buffers = SyncBuffers(self._t, self._settings.buffer_retry_pause_s)
        self.admin = Admin(self._t)
        """Inspection and administration calls."""

    def queue(self, name: str) -> Queue:
        """Start a fluent call on the queue ``name``."""
        return Queue(self, name)

    def stream(self, queue: str) -> Stream:
        """A stream sourced from ``queue``: chain operators (``map``, ``window_tumbling``, ``gate``…),
        a sink (``to`` or ``foreach``), then ``run(query_id=...)``."""
        return Stream(self, queue)

    def transaction(self) -> Transaction:
        """Start an atomic bundle of acks and pushes."""
        return Transaction(self)

    @overload
    def ack(
        self,
        message: MessageRef,
        status: AckStatus = ...,
        *,
        error: str | None = ...,
        group: str | None = ...,
    ) -> AckResult: ...

    @overload
    def ack(
        self,
        message: Sequence[MessageRef],
        status: AckStatus = ...,
        *,
        error: str | None = ...,
        group: str | None = ...,
    ) -> list[AckResult]: ...

    def ack(
        self,
        message: MessageRef | Sequence[MessageRef],
        status: AckStatus = "completed",
        *,
        error: str | None = None,
        group: str | None = None,
    ) -> AckResult | list[AckResult]:
        """Acknowledge one message (or a list, in one request) under the lease it was delivered with.

        Refusals are in-band: ``success`` false with a ``code`` such as ``lease_expired``.
        """
        if isinstance(message, Sequence):
            items = [_calls.ack_item_wire(m, status, error, group) for m in message]
            if not items:
                return []
            return self._t.send(_calls.ack_batch(items))
        return self._t.send(_calls.ack(_calls.ack_item_wire(message, status, error, group)))

    def renew(self, message: Message | str, seconds: int | None = None) -> RenewResult:
        """Extend the lease of a delivered message (or a lease id); default: the queue's leaseTime."""
        lease_id = message if isinstance(message, str) else message.lease_id
        return self._t.send(_calls.renew(lease_id, seconds))

    def flush(self) -> list[PushResult]:
        """Send everything the client-side buffers hold, in order per queue and partition.

        Raises:
            ReginaError: a send failed (the items stay buffered when a retry can help), or an
                earlier timed flush failed.
        """
        return self._buffers.flush()

    def close(self) -> None:
        """Flush the buffers, then close the connections."""
        try:
            self._buffers.flush()
        finally:
            self._buffers.close()
            self._t.close()

    def __enter__(self) -> Regina:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
