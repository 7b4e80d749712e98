"""The asyncio stream runner: a pop task and, for windows, an idle-flush task around
:class:`RunCore`. ``foreach`` may be a coroutine function here."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ._errors import ReginaError
from ._stream_calls import Registration
from ._stream_engine import PartitionBatch
from ._stream_run import POP_ERROR_PAUSE_S, Phase, RunCore, StreamErrorContext, StreamMetrics, fatal_pop_error
from ._transport import AsyncTransport


class AsyncStreamRunner:
    """A running stream (asyncio client). Stop it with :meth:`stop` (or ``async with``)."""

    def __init__(self, transport: AsyncTransport, core: RunCore, stop: asyncio.Event | None) -> None:
        self._t = transport
        self._core = core
        self._external = stop
        self._stopping = asyncio.Event()
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks = [asyncio.ensure_future(self._pop_loop())]
        window = core.chain.window
        if window is not None and window.idle_flush_ms > 0:
            self._tasks.append(asyncio.ensure_future(self._flush_loop(window.idle_flush_ms / 1000)))
        if stop is not None:
            self._tasks.append(asyncio.ensure_future(self._watch(stop)))

    @property
    def registration(self) -> Registration:
        """The registration answer: the broker's query id, and whether it was created or reset."""
        return self._core.registration

    def metrics(self) -> StreamMetrics:
        """A snapshot of the counters."""
        return self._core.metrics()

    async def stop(self) -> None:
        """Stop gracefully: the pop in flight ends (within ``max_wait_millis``) and its batches are
        committed; returns when both tasks have ended."""
        self._stopping.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def wait(self) -> None:
        """Wait until the run ends (``stop``, the ``stop`` event, or a refused pop).

        Raises:
            ApiError: the broker refused a pop (a 4xx): the run ended because of it.
        """
        await asyncio.gather(*self._tasks)

    async def __aenter__(self) -> AsyncStreamRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _watch(self, stop: asyncio.Event) -> None:
        done = asyncio.ensure_future(self._stopping.wait())
        wanted = asyncio.ensure_future(stop.wait())
        await asyncio.wait({done, wanted}, return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        wanted.cancel()
        self._stopping.set()

    async def _pause(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when the run is stopping."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        return self._stopping.is_set()

    async def _pop_loop(self) -> None:
        core = self._core
        try:
            while not self._stopping.is_set():
                try:
                    messages = await self._t.send(core.pop_call())
                except ReginaError as error:
                    if fatal_pop_error(error):
                        raise
                    core.report(error, StreamErrorContext("pop"))
                    await self._pause(POP_ERROR_PAUSE_S)
                    continue
                if not messages and core.settings.max_wait_millis < 100:
                    await self._pause(0.1)  # a pop that does not wait must not spin
                for batch in core.popped(messages):
                    async with self._locks.setdefault(batch.partition_id, asyncio.Lock()):
                        await self._process(batch)
        finally:
            self._stopping.set()

    async def _process(self, batch: PartitionBatch) -> None:
        core = self._core
        phase: Phase = "state"
        try:
            call = core.state_call(batch)
            rows = await self._t.send(call) if call is not None else {}
            phase = "process"
            plan = core.plan(batch, rows)
            if plan.settled == 0:
                return  # a gate allowed nothing: the lease runs out and the batch comes again
            phase = "foreach"
            await self._run_effects(plan.results)
            items = core.sink_items(plan.results)
            phase = "cycle"
            await self._t.send(core.cycle_call(batch, plan, items))
            core.committed(plan, items, batch.partition_id, flush=False)
        except Exception as error:
            core.report(error, StreamErrorContext(phase, batch.partition, batch.partition_id))
            try:
                await self._t.send(core.release_call(batch, error))
            except ReginaError:
                pass  # the lease runs out instead; the batch comes again either way

    async def _run_effects(self, results: list[Any]) -> None:
        effect = self._core.effect()
        if effect is not None:
            for result in results:
                outcome = effect(result.value, result.context)
                if inspect.isawaitable(outcome):
                    await outcome

    async def _flush_loop(self, every_s: float) -> None:
        while not await self._pause(every_s):
            for partition_id, partition in self._core.flush_targets():
                if self._stopping.is_set():
                    return
                async with self._locks.setdefault(partition_id, asyncio.Lock()):
                    await self._flush(partition_id, partition)

    async def _flush(self, partition_id: str, partition: str) -> None:
        core = self._core
        try:
            call = core.flush_state_call(partition_id)
            if call is None:
                return
            plan = core.flush_plan(partition_id, partition, await self._t.send(call))
            if not plan.state_ops:
                return
            await self._run_effects(plan.results)
            items = core.sink_items(plan.results)
            await self._t.send(core.flush_cycle_call(partition_id, plan, items))
            core.committed(plan, items, partition_id, flush=True)
        except Exception as error:
            core.report(error, StreamErrorContext("flush", partition, partition_id))
