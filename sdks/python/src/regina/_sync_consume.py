"""The blocking consumer loop: worker threads around :class:`ConsumePlan`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import _calls
from ._consume import SLICE_MS_WITH_STOP, ConsumePlan, Pause, Stop
from ._errors import ApiError, ReginaError
from ._http import RETRIED_STATUSES, Call
from ._models import Message
from ._transport import SyncTransport

log = logging.getLogger("regina")

NETWORK_PAUSE_S = 1.0
"""Pause of a worker after a pop failed on every server, before it tries again."""


class SyncConsumer:
    """One ``consume()`` run: ``concurrency`` worker threads sharing one plan."""

    def __init__(
        self,
        transport: SyncTransport,
        plan: ConsumePlan,
        handler: Callable[[Any], object],
        stop: threading.Event | None,
    ) -> None:
        self._t = transport
        self._plan = plan
        self._handler = handler
        self._stop = stop
        self._halt = threading.Event()

    def run(self) -> int:
        """Consume until the limit, the idle time, the stop event or an error; return the count.

        Raises:
            ApiError: a pop was refused (a bad parameter, say); other workers stop first.
        """
        workers = self._plan.settings.concurrency
        if workers == 1:
            self._work()
            return self._plan.handled
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="regina-consumer") as pool:
            futures = [pool.submit(self._work) for _ in range(workers)]
            try:
                for future in futures:
                    future.result()
            finally:
                self._halt.set()
        return self._plan.handled

    def _stopped(self) -> bool:
        return self._halt.is_set() or (self._stop is not None and self._stop.is_set())

    def _pause(self, seconds: float) -> None:
        (self._stop or self._halt).wait(seconds)

    def _work(self) -> None:
        slice_ms = SLICE_MS_WITH_STOP if self._stop is not None else None
        try:
            while not self._stopped():
                step = self._plan.next(slice_ms)
                if isinstance(step, Stop):
                    return
                if isinstance(step, Pause):
                    self._pause(step.seconds)
                    continue
                try:
                    messages = self._t.send(step.call)
                except ReginaError as error:
                    self._plan.received(step, [])
                    if isinstance(error, ApiError) and error.status not in RETRIED_STATUSES:
                        raise
                    log.warning("regina consumer: pop failed, retrying: %s", error)
                    self._pause(NETWORK_PAUSE_S)
                    continue
                self._plan.received(step, messages)
                self._handle(messages)
        except BaseException:
            self._halt.set()
            raise

    def _handle(self, messages: Sequence[Message]) -> None:
        units = self._plan.units(messages)
        for position, unit in enumerate(units):
            if position and self._stopped():
                rest = [m for u in units[position:] for m in u]
                self._plan.released(rest)
                self._send_quietly(self._plan.release_call(rest))
                return
            error = self._call_handler(unit)
            self._send_quietly(self._plan.settle_call(unit, error))
            self._plan.handled_unit(unit)
            if error is not None and position + 1 < len(units):
                # The failed ack ended the lease: the rest comes again from the head.
                self._plan.released([m for u in units[position + 1 :] for m in u])
                return

    def _call_handler(self, unit: list[Message]) -> Exception | None:
        renewer = self._start_renewal(unit)
        try:
            self._handler(unit[0] if self._plan.settings.each else unit)
        except Exception as error:  # the handler's failure is the message's failure
            return error
        finally:
            if renewer is not None:
                renewer.set()
        return None

    def _start_renewal(self, unit: Sequence[Message]) -> threading.Event | None:
        every_ms = self._plan.settings.renew_every_ms
        lease_id = unit[0].lease_id if unit else ""
        if not every_ms or not lease_id or self._plan.settings.auto_ack:
            return None
        done = threading.Event()

        def renew() -> None:
            while not done.wait(every_ms / 1000):
                self._send_quietly(_calls.renew(lease_id, None))

        threading.Thread(target=renew, name="regina-lease-renewal", daemon=True).start()
        return done

    def _send_quietly(self, call: Call[Any] | None) -> None:
        """Send an ack or renewal; a failure only means the lease runs out and redelivers."""
        if call is None:
            return
        try:
            self._t.send(call)
        except ReginaError as error:
            log.warning("regina consumer: %s %s failed: %s", call.request.method, call.request.path, error)
