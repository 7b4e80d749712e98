"""Python client for Regina, the partitioned message queue on PostgreSQL (HTTP API v1).

Two clients with one grammar: :class:`Regina` (blocking, thread-safe) and :class:`AsyncRegina`
(asyncio). Both share the request model, retries, failover and error mapping::

    from regina import Regina

    with Regina("http://localhost:6632") as client:
        client.queue("orders").partition("c7").push([{"payload": {"n": 1}}])
        for message in client.queue("orders").group("billing").batch(10).pop():
            client.ack(message)
"""

from ._admin_models import (
    ConsumerGroupInfo,
    DeleteGroupResult,
    DlqEntry,
    DlqPage,
    Health,
    MessageDetail,
    QueuePage,
    QueueSummary,
    RequeueResult,
    SeekResult,
)
from ._async import AsyncAdmin, AsyncQueue, AsyncRegina, AsyncTransaction
from ._buffer import BufferOptions
from ._builders import TransactionQueue
from ._calls import QUEUE_MODE, MessageRef
from ._errors import (
    ApiError,
    ErrorCode,
    NetworkError,
    QueueFullError,
    ReginaError,
    RequestTimeoutError,
)
from ._ids import uuid7
from ._models import (
    AckResult,
    AckStatus,
    ConfigureResult,
    DeleteQueueResult,
    Json,
    Message,
    PushItem,
    PushResult,
    QueueOptions,
    RenewResult,
    SubscriptionMode,
    TransactionItemResult,
    TransactionResult,
)
from ._sync import Admin, Queue, Regina, Transaction

__version__ = "0.1.0"

__all__ = [
    "QUEUE_MODE",
    "AckResult",
    "AckStatus",
    "Admin",
    "ApiError",
    "AsyncAdmin",
    "AsyncQueue",
    "AsyncRegina",
    "AsyncTransaction",
    "BufferOptions",
    "ConfigureResult",
    "ConsumerGroupInfo",
    "DeleteGroupResult",
    "DeleteQueueResult",
    "DlqEntry",
    "DlqPage",
    "ErrorCode",
    "Health",
    "Json",
    "Message",
    "MessageDetail",
    "MessageRef",
    "NetworkError",
    "PushItem",
    "PushResult",
    "Queue",
    "QueueFullError",
    "QueueOptions",
    "QueuePage",
    "QueueSummary",
    "Regina",
    "ReginaError",
    "RenewResult",
    "RequestTimeoutError",
    "RequeueResult",
    "SeekResult",
    "SubscriptionMode",
    "Transaction",
    "TransactionItemResult",
    "TransactionQueue",
    "TransactionResult",
    "uuid7",
]
