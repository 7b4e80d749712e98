"""What both stream runners share (sans-IO): run settings, metrics, the calls each step sends and
the bookkeeping of partitions and watermarks. The sync runner drives it from threads, the async
runner from tasks; neither decides anything itself.

A failed batch is acked ``failed`` on its first message: the lease ends, an attempt is charged,
and the broker delivers the batch again (after ``retryLimit`` failures the head is dead-lettered,
as with the consumer). A partition's batch and its flushes never overlap within one run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from . import _calls, _stream_calls
from ._errors import ApiError
from ._http import RETRIED_STATUSES, Call
from ._ids import uuid7
from ._models import Json, Message
from ._stream_calls import STREAM_RETRY_STATUSES, Registration
from ._stream_chain import CompiledChain
from ._stream_engine import BatchPlan, PartitionBatch, Record, flush_plan, flush_prefix, process_batch

RECENT_PARTITION_S = 300.0
"""Partitions touched within this long are flushed when idle."""
POP_ERROR_PAUSE_S = 1.0
"""Pause after a pop failed on every server, before the next one."""

Phase = Literal["pop", "state", "process", "foreach", "cycle", "flush"]
ErrorHandler = Callable[[BaseException, "StreamErrorContext"], object]


@dataclass(frozen=True)
class StreamErrorContext:
    """Where a reported failure happened."""

    phase: Phase
    partition: str | None = None
    partition_id: str | None = None


@dataclass(frozen=True)
class RunSettings:
    """Settings of ``stream.run(...)`` (see there)."""

    query_id: str
    batch_size: int = 200
    max_partitions: int = 4
    max_wait_millis: int = 1_000
    reset: bool = False
    consumer_group: str | None = None
    subscription_mode: str | None = None
    subscription_from: str | datetime | None = None
    on_error: ErrorHandler | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query_id, str) or not self.query_id:
            raise ValueError("run() needs a query_id")
        if self.batch_size < 1 or self.max_partitions < 1 or self.max_wait_millis < 0:
            raise ValueError("batch_size and max_partitions must be at least 1, max_wait_millis >= 0")

    @property
    def group(self) -> str:
        """The source's consumer group: ``streams.<query_id>`` unless set."""
        return self.consumer_group or f"streams.{self.query_id}"


@dataclass(frozen=True)
class StreamMetrics:
    """Counters of a run (a snapshot)."""

    query_id: str
    """The broker's id of the query."""
    name: str
    pops_total: int = 0
    """Pops answered (empty ones included)."""
    cycles_total: int = 0
    """Cycles that settled source messages."""
    flush_cycles_total: int = 0
    """Ack-less cycles of the idle flush."""
    messages_total: int = 0
    """Source messages settled by cycles."""
    results_total: int = 0
    """Records that reached the sink (pushed or given to ``foreach``) in committed cycles."""
    push_items_total: int = 0
    state_ops_total: int = 0
    late_events_total: int = 0
    """Event-time events older than the watermark (dropped or included, per ``on_late``)."""
    gate_allows_total: int = 0
    gate_denials_total: int = 0
    """Times a gate denied a record (each parks the rest of a batch)."""
    errors_total: int = 0
    last_error: str | None = None
    last_cycle_at: str | None = None
    last_flush_at: str | None = None


def by_partition(messages: Sequence[Message]) -> list[PartitionBatch]:
    """Split a pop into per-partition batches, each in delivery order."""
    groups: dict[str, list[Message]] = {}
    for message in messages:
        groups.setdefault(message.partition_id, []).append(message)
    return [PartitionBatch(ms[0].partition, pid, ms) for pid, ms in groups.items()]


def fatal_pop_error(error: BaseException) -> bool:
    """A pop refusal that retrying cannot cure (a 4xx other than 408/429): it ends the run."""
    return (
        isinstance(error, ApiError)
        and error.status not in RETRIED_STATUSES
        and error.status not in STREAM_RETRY_STATUSES
        and error.status < 500
    )


class RunCore:
    """The decisions and bookkeeping of one run; thread-safe."""

    def __init__(
        self,
        chain: CompiledChain,
        source: str,
        registration: Registration,
        settings: RunSettings,
        margin_ms: int,
    ) -> None:
        self.chain = chain
        self.source = source
        self.registration = registration
        self.settings = settings
        self._margin_ms = margin_ms
        self._lock = threading.Lock()
        self._metrics = StreamMetrics(query_id=registration.query_id, name=registration.name)
        self._recent: dict[str, tuple[str, float]] = {}
        self._watermarks: dict[str, float] = {}

    def metrics(self) -> StreamMetrics:
        with self._lock:
            return self._metrics

    def _count(self, **changes: Any) -> None:
        with self._lock:
            m = self._metrics
            values = {k: (getattr(m, k) + v if isinstance(v, int) else v) for k, v in changes.items()}
            self._metrics = replace(m, **values)

    def pop_call(self) -> Call[list[Message]]:
        s = self.settings
        return _calls.pop(
            self.source,
            group=s.group,
            batch=s.batch_size,
            partitions=s.max_partitions,
            wait=True,
            timeout_ms=s.max_wait_millis,
            subscription_mode=s.subscription_mode,
            subscription_from=s.subscription_from,
            long_poll_margin_ms=self._margin_ms,
        )

    def popped(self, messages: Sequence[Message]) -> list[PartitionBatch]:
        self._count(pops_total=1)
        batches = by_partition(messages)
        now = time.monotonic()
        with self._lock:
            for batch in batches:
                self._recent[batch.partition_id] = (batch.partition, now)
        return batches

    def state_call(self, batch: PartitionBatch) -> Call[dict[str, Json]] | None:
        """The state read a batch needs (``None`` for a stateless chain)."""
        if not self.chain.stateful:
            return None
        return _stream_calls.state(self.registration.query_id, batch.partition_id)

    def plan(self, batch: PartitionBatch, rows: dict[str, Json]) -> BatchPlan:
        plan = process_batch(self.chain, batch, rows, int(time.time() * 1000))
        self._count(gate_denials_total=plan.denied, late_events_total=plan.late)
        return plan

    def sink_items(self, results: Sequence[Record]) -> list[dict[str, Any]]:
        """Sink items of a ``to`` chain (ids fixed before any attempt); ``[]`` otherwise."""
        sink = self.chain.sink
        if sink is None or sink.kind != "to":
            return []
        items = []
        for result in results:
            chosen = (
                sink.partition(result.value, result.context) if callable(sink.partition) else sink.partition
            )
            item: dict[str, Any] = {
                "queue": sink.queue,
                "partition": result.context.partition if chosen is None else str(chosen),
                "payload": result.value,
                "transactionId": uuid7(),
            }
            message = result.context.message
            if message is not None and message.trace_id:
                item["traceId"] = message.trace_id
            items.append(item)
        return items

    def effect(self) -> Callable[..., Any] | None:
        """The ``foreach`` function, if the chain ends with one."""
        sink = self.chain.sink
        return sink.fn if sink is not None and sink.kind == "foreach" else None

    def cycle_call(self, batch: PartitionBatch, plan: BatchPlan, items: list[dict[str, Any]]) -> Call[None]:
        last = batch.messages[plan.settled - 1]
        ack = {"transactionId": last.transaction_id, "leaseId": last.lease_id, "status": "completed"}
        ack["count"] = plan.settled  # type: ignore[assignment]
        release = plan.release_lease if self.chain.gate is not None else None
        return _stream_calls.cycle(
            self.registration.query_id,
            batch.partition_id,
            self.settings.group,
            plan.state_ops,
            items,
            ack,
            release,
        )

    def committed(self, plan: BatchPlan, items: list[dict[str, Any]], partition_id: str, flush: bool) -> None:
        now = _now_iso()
        counts: dict[str, Any] = {
            "results_total": len(plan.results),
            "push_items_total": len(items),
            "state_ops_total": len(plan.state_ops),
            "gate_allows_total": plan.allowed,
        }
        if flush:
            counts.update(flush_cycles_total=1, last_flush_at=now)
        else:
            counts.update(cycles_total=1, messages_total=plan.settled, last_cycle_at=now)
        self._count(**counts)
        if plan.watermark is not None:
            with self._lock:
                self._watermarks[partition_id] = plan.watermark

    def release_call(self, batch: PartitionBatch, error: BaseException) -> Call[Any]:
        """Ends the lease of a failed batch (``failed``: one attempt charged, redelivered in order)."""
        text = str(error) or type(error).__name__
        return _calls.ack(_calls.ack_item_wire(batch.messages[0], "failed", text, None))

    def report(self, error: BaseException, context: StreamErrorContext) -> None:
        self._count(errors_total=1, last_error=str(error) or type(error).__name__)
        handler = self.settings.on_error
        if handler is not None:
            try:
                handler(error, context)
            except Exception:  # a failing error handler must not stop the stream
                pass

    def flush_targets(self) -> list[tuple[str, str]]:
        """Partitions touched recently (older ones are forgotten): ``(partition_id, name)``."""
        cutoff = time.monotonic() - RECENT_PARTITION_S
        with self._lock:
            for pid in [pid for pid, (_, at) in self._recent.items() if at < cutoff]:
                del self._recent[pid]
            return [(pid, name) for pid, (name, _) in self._recent.items()]

    def flush_state_call(self, partition_id: str) -> Call[dict[str, Json]] | None:
        """The ripe-rows read of a flush, or ``None`` when the partition has no clock yet."""
        window = self.chain.window
        assert window is not None
        with self._lock:
            clock = self._watermarks.get(partition_id) if window.event_time else time.time_ns() // 1_000_000
        if clock is None:
            return None
        ripe = clock - window.grace_ms
        ripe = int(ripe) if float(ripe).is_integer() else ripe
        return _stream_calls.state(self.registration.query_id, partition_id, flush_prefix(window), ripe)

    def flush_plan(self, partition_id: str, partition: str, rows: dict[str, Json]) -> BatchPlan:
        return flush_plan(self.chain, partition, partition_id, rows)

    def flush_cycle_call(self, partition_id: str, plan: BatchPlan, items: list[dict[str, Any]]) -> Call[None]:
        return _stream_calls.cycle(
            self.registration.query_id, partition_id, self.settings.group, plan.state_ops, items, None
        )


def _now_iso() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
