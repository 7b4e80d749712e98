"""Every endpoint the client uses, as a :class:`Call`: the request and its answer's decoder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote

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
from ._http import Call, Response, make_request
from ._ids import uuid7
from ._models import (
    AckResult,
    ConfigureResult,
    DeleteQueueResult,
    Message,
    PushItem,
    PushResult,
    QueueOptions,
    RenewResult,
    TransactionResult,
)
from ._time import format_instant

QUEUE_MODE = "__QUEUE_MODE__"
"""Name of the consumer group used when a call names none."""

DEFAULT_PARTITION = "Default"


class MessageRef(Protocol):
    """Anything naming a stored message: a :class:`Message`, a :class:`DlqEntry`, …"""

    @property
    def partition_id(self) -> str: ...

    @property
    def transaction_id(self) -> str: ...


def _segment(value: str) -> str:
    return quote(value, safe="")


def _object(response: Response) -> Mapping[str, Any]:
    return response.body if isinstance(response.body, Mapping) else {}


def _list(response: Response) -> list[Mapping[str, Any]]:
    body = response.body
    return [item for item in body if isinstance(item, Mapping)] if isinstance(body, list) else []


def configure(
    queue: str, options: QueueOptions, namespace: str | None, task: str | None
) -> Call[ConfigureResult]:
    """``POST /api/v1/configure``: create a queue or merge options into it."""
    body: dict[str, Any] = {"queue": queue, "options": dict(options)}
    if namespace is not None:
        body["namespace"] = namespace
    if task is not None:
        body["task"] = task
    request = make_request("POST", "/api/v1/configure", body=body)
    return Call(request, lambda r: ConfigureResult.from_wire(_object(r)))


def delete_queue(queue: str) -> Call[DeleteQueueResult]:
    """``DELETE /api/v1/resources/queues/:queue``; idempotent."""
    request = make_request("DELETE", f"/api/v1/resources/queues/{_segment(queue)}")
    return Call(request, lambda r: DeleteQueueResult.from_wire(_object(r)))


def push_item_wire(queue: str, partition: str, item: PushItem | Mapping[str, Any]) -> dict[str, Any]:
    """One push item on the wire, with a transactionId assigned now when it has none."""
    wire: dict[str, Any] = {
        "queue": queue,
        "partition": partition,
        "payload": item.get("payload"),
        "transactionId": item.get("transactionId") or uuid7(),
    }
    trace_id = item.get("traceId")
    if trace_id:
        wire["traceId"] = trace_id
    return wire


def push(items: Sequence[Mapping[str, Any]]) -> Call[list[PushResult]]:
    """``POST /api/v1/push`` of wire items (see :func:`push_item_wire`)."""
    request = make_request("POST", "/api/v1/push", body={"items": list(items)})
    return Call(request, lambda r: [PushResult.from_wire(e) for e in _list(r)])


def pop(
    queue: str,
    *,
    partition: str | None = None,
    group: str | None = None,
    batch: int = 1,
    partitions: int = 1,
    wait: bool = False,
    timeout_ms: int = 30_000,
    auto_ack: bool = False,
    subscription_mode: str | None = None,
    subscription_from: str | datetime | None = None,
    long_poll_margin_ms: int = 5_000,
) -> Call[list[Message]]:
    """``GET /api/v1/pop/queue/:queue[/partition/:partition]``; ``204`` decodes to ``[]``.

    A long-poll's attempt timeout is the pop timeout plus ``long_poll_margin_ms``.
    """
    path = f"/api/v1/pop/queue/{_segment(queue)}"
    if partition is not None:
        path += f"/partition/{_segment(partition)}"
    query: dict[str, str | int | bool | None] = {
        "batch": batch,
        "partitions": partitions if partitions != 1 else None,
        "wait": wait,
        "timeout": timeout_ms,
        "consumerGroup": group,
        "autoAck": True if auto_ack else None,
        "subscriptionMode": subscription_mode,
        "subscriptionFrom": format_instant(subscription_from) if subscription_from else None,
    }
    timeout_s = (timeout_ms + long_poll_margin_ms) / 1000 if wait else None
    request = make_request("GET", path, query=query, timeout_s=timeout_s)
    return Call(request, _decode_pop)


def _decode_pop(response: Response) -> list[Message]:
    if response.status == 204:
        return []
    return [Message.from_wire(m) for m in _objects_of(_object(response).get("messages"))]


def _objects_of(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def ack_item_wire(message: MessageRef, status: str, error: str | None, group: str | None) -> dict[str, Any]:
    """One ack on the wire; the lease and the group come from the message unless overridden."""
    item: dict[str, Any] = {
        "transactionId": message.transaction_id,
        "partitionId": message.partition_id,
        "status": status,
    }
    lease_id = getattr(message, "lease_id", None)
    if isinstance(lease_id, str) and lease_id:
        item["leaseId"] = lease_id
    consumer_group = group or getattr(message, "consumer_group", None)
    if isinstance(consumer_group, str) and consumer_group:
        item["consumerGroup"] = consumer_group
    if error is not None:
        item["error"] = error
    return item


def ack(item: Mapping[str, Any]) -> Call[AckResult]:
    """``POST /api/v1/ack`` of one wire ack item."""
    request = make_request("POST", "/api/v1/ack", body=dict(item))

    def decode(response: Response) -> AckResult:
        results = _list(response)
        return AckResult.from_wire(results[0] if results else _object(response))

    return Call(request, decode)


def ack_batch(items: Sequence[Mapping[str, Any]]) -> Call[list[AckResult]]:
    """``POST /api/v1/ack/batch``; results in input order."""
    request = make_request("POST", "/api/v1/ack/batch", body={"acknowledgments": list(items)})
    return Call(request, lambda r: [AckResult.from_wire(e) for e in _list(r)])


def renew(lease_id: str, seconds: int | None) -> Call[RenewResult]:
    """``POST /api/v1/lease/:leaseId/extend`` (default: the queue's ``leaseTime``)."""
    body: dict[str, Any] = {} if seconds is None else {"seconds": seconds}
    request = make_request("POST", f"/api/v1/lease/{_segment(lease_id)}/extend", body=body, has_body=True)

    def decode(response: Response) -> RenewResult:
        results = _list(response)
        return RenewResult.from_wire(results[0] if results else _object(response))

    return Call(request, decode)


def transaction(operations: Sequence[Mapping[str, Any]]) -> Call[TransactionResult]:
    """``POST /api/v1/transaction``; a refused transaction raises ``ApiError``."""
    request = make_request("POST", "/api/v1/transaction", body={"operations": list(operations)})
    return Call(request, lambda r: TransactionResult.from_wire(_object(r)))


def dlq(
    queue: str | None,
    *,
    group: str | None = None,
    partition: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
) -> Call[DlqPage]:
    """``GET /api/v1/dlq``, newest failure first."""
    query: dict[str, str | int | bool | None] = {
        "queue": queue,
        "consumerGroup": group,
        "partition": partition,
        "limit": limit,
        "offset": offset,
        "from": format_instant(since) if since else None,
        "to": format_instant(until) if until else None,
    }
    request = make_request("GET", "/api/v1/dlq", query=query)
    return Call(request, lambda r: DlqPage.from_wire(_object(r)))


def _message_path(ref: MessageRef) -> str:
    return f"/api/v1/messages/{_segment(ref.partition_id)}/{_segment(ref.transaction_id)}"


def group_of(entry: MessageRef) -> str | None:
    """The consumer group an entry names (a DLQ entry's group), if any."""
    group = getattr(entry, "consumer_group", None)
    return group if isinstance(group, str) and group else None


def requeue(ref: MessageRef, group: str | None) -> Call[RequeueResult]:
    """``POST /api/v1/messages/:partitionId/:transactionId/retry`` (every group when none)."""
    body: dict[str, Any] = {} if group is None else {"consumerGroup": group}
    request = make_request("POST", _message_path(ref) + "/retry", body=body, has_body=True)
    return Call(request, lambda r: RequeueResult.from_wire(_object(r)))


def message(ref: MessageRef) -> Call[MessageDetail]:
    """``GET /api/v1/messages/:partitionId/:transactionId``."""
    request = make_request("GET", _message_path(ref))
    return Call(request, lambda r: MessageDetail.from_wire(_object(r)))


def queues(
    *,
    namespace: str | None = None,
    task: str | None = None,
    search: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[QueuePage]:
    """``GET /api/v1/resources/queues``, ordered by name."""
    query: dict[str, str | int | bool | None] = {
        "namespace": namespace,
        "task": task,
        "search": search,
        "limit": limit,
        "offset": offset,
    }
    request = make_request("GET", "/api/v1/resources/queues", query=query)
    return Call(request, lambda r: QueuePage.from_wire(_object(r)))


def consumer_groups(*, limit: int | None = None, offset: int | None = None) -> Call[list[ConsumerGroupInfo]]:
    """``GET /api/v1/consumer-groups``: one row per (group, queue)."""
    request = make_request("GET", "/api/v1/consumer-groups", query={"limit": limit, "offset": offset})
    return Call(request, lambda r: [ConsumerGroupInfo.from_wire(e) for e in _list(r)])


def delete_consumer_group(group: str, queue: str | None, delete_metadata: bool) -> Call[DeleteGroupResult]:
    """``DELETE /api/v1/consumer-groups/:group[/queues/:queue]``."""
    path = f"/api/v1/consumer-groups/{_segment(group)}"
    if queue is not None:
        path += f"/queues/{_segment(queue)}"
    request = make_request("DELETE", path, query={"deleteMetadata": delete_metadata})
    return Call(request, lambda r: DeleteGroupResult.from_wire(_object(r)))


def seek(
    group: str,
    queue: str,
    *,
    partition: str | None = None,
    to_end: bool = False,
    timestamp: str | datetime | None = None,
) -> Call[SeekResult]:
    """Move a group on every partition of a queue (or on one): to the end, or to just after an
    instant (``POST /api/v1/consumer-groups/:group/queues/:queue[/partitions/:partition]/seek``)."""
    if to_end == (timestamp is not None):
        raise ValueError("seek needs exactly one of to_end=True or timestamp")
    body: dict[str, Any] = {"toEnd": True} if to_end else {"timestamp": format_instant(timestamp or "")}
    path = f"/api/v1/consumer-groups/{_segment(group)}/queues/{_segment(queue)}"
    if partition is not None:
        path += f"/partitions/{_segment(partition)}"
    request = make_request("POST", path + "/seek", body=body)
    return Call(request, lambda r: SeekResult.from_wire(_object(r)))


def health() -> Call[Health]:
    """``GET /health``."""
    return Call(make_request("GET", "/health"), lambda r: Health.from_wire(_object(r)))
