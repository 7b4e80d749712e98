"""The asyncio consumer loop: worker tasks around :class:`ConsumePlan`.

Cancelling the task running ``consume()`` stops it gracefully: a pop in flight is abandoned
(the broker ends a lease whose answer was not delivered), handlers in flight finish and are
acked, the rest of a delivery is released, and then the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from . import _calls
from ._consume import ConsumePlan, Pause, PopStep, Stop
from ._errors import ApiError, ReginaError
from ._http import RETRIED_STATUSES, Call
from ._models import Message
from ._transport import AsyncTransport

log = logging.getLogger("regina")

NETWORK_PAUSE_S = 1.0
"""Pause of a worker after a pop failed on every server, before it tries again."""


class AsyncConsumer:
    """One ``consume()`` run: ``concurrency`` worker tasks sharing one plan."""

    def __init__(
        self,
        transport: AsyncTransport,
        plan: ConsumePlan,
        handler: Callable[[Any], object],
        stop: asyncio.Event | None,
    ) -> None:
        self._t = transport
        self._plan = plan
        self._handler = handler
        self._stop = stop or asyncio.Event()
        self._stopping = False

    async def run(self) -> int:
        """Consume until the limit, the idle time, the stop event, cancellation or an error.

        Raises:
            ApiError: a pop was refused (a bad parameter, say); other workers stop first.
            asyncio.CancelledError: the task was cancelled (after in-flight handlers finished).
        """
        workers = [asyncio.ensure_future(self._work()) for _ in range(self._plan.settings.concurrency)]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            self._stopping = True
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        return self._plan.handled

    def _stopped(self) -> bool:
        return self._stopping or self._stop.is_set()

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _work(self) -> None:
        while not self._stopped():
            step = self._plan.next()
            if isinstance(step, Stop):
                return
            if isinstance(step, Pause):
                await self._pause(step.seconds)
                continue
            messages = await self._pop(step)
            if messages is None:
                continue
            handling = asyncio.ensure_future(self._handle(messages))
            try:
                await asyncio.shield(handling)
            except asyncio.CancelledError:
                self._stopping = True
                await _finish(handling)
                raise

    async def _pop(self, step: PopStep) -> list[Message] | None:
        """Pop, racing the stop event; None when nothing was delivered and the loop goes on."""
        popping = asyncio.ensure_future(self._t.send(step.call))
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({popping, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not popping.done():
                popping.cancel()
        try:
            messages = popping.result() if not popping.cancelled() else []
        except ReginaError as error:
            self._plan.received(step, [])
            if isinstance(error, ApiError) and error.status not in RETRIED_STATUSES:
                raise
            log.warning("regina consumer: pop failed, retrying: %s", error)
            await self._pause(NETWORK_PAUSE_S)
            return None
        self._plan.received(step, messages)
        return messages

    async def _handle(self, messages: Sequence[Message]) -> None:
        units = self._plan.units(messages)
        for position, unit in enumerate(units):
            if position and self._stopped():
                rest = [m for u in units[position:] for m in u]
                self._plan.released(rest)
                await self._send_quietly(self._plan.release_call(rest))
                return
            error = await self._call_handler(unit)
            await self._send_quietly(self._plan.settle_call(unit, error))
            self._plan.handled_unit(unit)
            if error is not None and position + 1 < len(units):
                # The failed ack ended the lease: the rest comes again from the head.
                self._plan.released([m for u in units[position + 1 :] for m in u])
                return

    async def _call_handler(self, unit: list[Message]) -> Exception | None:
        renewal = self._start_renewal(unit)
        try:
            result = self._handler(unit[0] if self._plan.settings.each else unit)
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # the handler's failure is the message's failure
            return error
        finally:
            if renewal is not None:
                renewal.cancel()
        return None

    def _start_renewal(self, unit: Sequence[Message]) -> asyncio.Task[None] | None:
        every_ms = self._plan.settings.renew_every_ms
        lease_id = unit[0].lease_id if unit else ""
        if not every_ms or not lease_id or self._plan.settings.auto_ack:
            return None

        async def renew() -> None:
            while True:
                await asyncio.sleep(every_ms / 1000)
                await self._send_quietly(_calls.renew(lease_id, None))

        return asyncio.ensure_future(renew())

    async def _send_quietly(self, call: Call[Any] | None) -> None:
        """Send an ack or renewal; a failure only means the lease runs out and redelivers."""
        if call is None:
            return
        try:
            await self._t.send(call)
        except ReginaError as error:
            log.warning("regina consumer: %s %s failed: %s", call.request.method, call.request.path, error)


async def _finish(task: asyncio.Future[None]) -> None:
    """Wait for ``task`` to end even if the waiter is cancelled again meanwhile."""
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            continue
    task.result()
