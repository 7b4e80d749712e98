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
from ._stream import AsyncStream, Stream, WindowedStream
from ._stream_async import AsyncStreamRunner
from ._stream_calls import Registration
from ._stream_chain import GateContext, StreamContext
from ._stream_gates import sliding_window_gate, token_bucket_gate
from ._stream_run import StreamErrorContext, StreamMetrics
from ._stream_sync import StreamRunner
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
    "AsyncStream",
    "AsyncStreamRunner",
    "AsyncTransaction",
    "BufferOptions",
    "ConfigureResult",
    "ConsumerGroupInfo",
    "DeleteGroupResult",
    "DeleteQueueResult",
    "DlqEntry",
    "DlqPage",
    "ErrorCode",
    "GateContext",
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
    "Registration",
    "RenewResult",
    "RequestTimeoutError",
    "RequeueResult",
    "SeekResult",
    "Stream",
    "StreamContext",
    "StreamErrorContext",
    "StreamMetrics",
    "StreamRunner",
    "SubscriptionMode",
    "Transaction",
    "TransactionItemResult",
    "TransactionQueue",
    "TransactionResult",
    "WindowedStream",
    "sliding_window_gate",
    "token_bucket_gate",
    "uuid7",
]
