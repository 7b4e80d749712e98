"""The blocking stream runner: a pop thread and, for windows, an idle-flush thread around
:class:`RunCore`."""

from __future__ import annotations

import threading
from typing import Any

from ._errors import ReginaError
from ._stream_calls import Registration
from ._stream_engine import PartitionBatch
from ._stream_run import POP_ERROR_PAUSE_S, Phase, RunCore, StreamErrorContext, StreamMetrics, fatal_pop_error
from ._transport import SyncTransport


class StreamRunner:
    """A running stream (blocking client). Stop it with :meth:`stop` (or use it in ``with``)."""

    def __init__(self, transport: SyncTransport, core: RunCore, stop: threading.Event | None) -> None:
        self._t = transport
        self._core = core
        self._external = stop
        self._stopping = threading.Event()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._error: BaseException | None = None
        self._threads = [threading.Thread(target=self._guarded_pop_loop, name="regina-stream", daemon=True)]
        window = core.chain.window
        if window is not None and window.idle_flush_ms > 0:
            flush = threading.Thread(
                target=self._flush_loop,
                args=(window.idle_flush_ms / 1000,),
                name="regina-stream-flush",
                daemon=True,
            )
            self._threads.append(flush)
        for thread in self._threads:
            thread.start()

    @property
    def registration(self) -> Registration:
        """The registration answer: the broker's query id, and whether it was created or reset."""
        return self._core.registration

    def metrics(self) -> StreamMetrics:
        """A snapshot of the counters."""
        return self._core.metrics()

    def stop(self, timeout: float | None = None) -> None:
        """Stop gracefully: the pop in flight ends (within ``max_wait_millis``) and its batches are
        committed; returns when both threads have ended (or after ``timeout`` seconds)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends (``stop``, the ``stop`` event, or a refused pop), or for at most
        ``timeout`` seconds; True when it has ended.

        Raises:
            ApiError: the broker refused a pop (a 4xx): the run ended because of it.
        """
        for thread in self._threads:
            thread.join(timeout)
        if self._error is not None:
            raise self._error
        return not any(thread.is_alive() for thread in self._threads)

    def __enter__(self) -> StreamRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _stopped(self) -> bool:
        if self._external is not None and self._external.is_set():
            self._stopping.set()
        return self._stopping.is_set()

    def _lock(self, partition_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(partition_id, threading.Lock())

    def _guarded_pop_loop(self) -> None:
        try:
            self._pop_loop()
        except BaseException as error:  # kept for wait(); the run is over
            self._error = error
            self._stopping.set()

    def _pop_loop(self) -> None:
        core = self._core
        while not self._stopped():
            try:
                messages = self._t.send(core.pop_call())
            except ReginaError as error:
                if fatal_pop_error(error):
                    raise
                core.report(error, StreamErrorContext("pop"))
                self._stopping.wait(POP_ERROR_PAUSE_S)
                continue
            if not messages and core.settings.max_wait_millis < 100:
                self._stopping.wait(0.1)  # a pop that does not wait must not spin
            for batch in core.popped(messages):
                with self._lock(batch.partition_id):
                    self._process(batch)

    def _process(self, batch: PartitionBatch) -> None:
        core = self._core
        phase: Phase = "state"
        try:
            call = core.state_call(batch)
            rows = self._t.send(call) if call is not None else {}
            phase = "process"
            plan = core.plan(batch, rows)
            if plan.settled == 0:
                return  # a gate allowed nothing: the lease runs out and the batch comes again
            phase = "foreach"
            self._run_effects(plan.results)
            items = core.sink_items(plan.results)
            phase = "cycle"
            self._t.send(core.cycle_call(batch, plan, items))
            core.committed(plan, items, batch.partition_id, flush=False)
        except Exception as error:
            core.report(error, StreamErrorContext(phase, batch.partition, batch.partition_id))
            try:
                self._t.send(core.release_call(batch, error))
            except ReginaError:
                pass  # the lease runs out instead; the batch comes again either way

    def _run_effects(self, results: list[Any]) -> None:
        effect = self._core.effect()
        if effect is not None:
            for result in results:
                effect(result.value, result.context)

    def _flush_loop(self, every_s: float) -> None:
        while not self._stopping.wait(every_s):
            for partition_id, partition in self._core.flush_targets():
                if self._stopped():
                    return
                with self._lock(partition_id):
                    self._flush(partition_id, partition)

    def _flush(self, partition_id: str, partition: str) -> None:
        core = self._core
        try:
            call = core.flush_state_call(partition_id)
            if call is None:
                return
            plan = core.flush_plan(partition_id, partition, self._t.send(call))
            if not plan.state_ops:
                return
            self._run_effects(plan.results)
            items = core.sink_items(plan.results)
            self._t.send(core.flush_cycle_call(partition_id, plan, items))
            core.committed(plan, items, partition_id, flush=True)
        except Exception as error:
            core.report(error, StreamErrorContext("flush", partition, partition_id))
