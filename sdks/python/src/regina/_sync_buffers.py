"""The blocking client's push buffers: :class:`PushBuffer` flushed by a timer thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from . import _calls
from ._buffer import BufferOptions, Key, PushBuffer
from ._errors import ApiError, ReginaError
from ._http import RETRIED_STATUSES
from ._models import PushResult
from ._transport import SyncTransport


class SyncBuffers:
    """Client-side push buffers with a timer thread for time-based flushes."""

    def __init__(self, transport: SyncTransport, retry_pause_s: float) -> None:
        self._t = transport
        self._retry_pause_s = retry_pause_s
        self._buffer = PushBuffer()
        self._state = threading.Condition()
        self._flushing = threading.Lock()
        self._timer: threading.Thread | None = None
        self._closed = False
        self._background_error: ReginaError | None = None

    def add(self, key: Key, items: list[dict[str, Any]], options: BufferOptions) -> list[PushResult]:
        with self._state:
            full = self._buffer.add(key, items, options, time.monotonic())
            if self._timer is None:
                self._timer = threading.Thread(target=self._run, name="regina-buffer", daemon=True)
                self._timer.start()
            self._state.notify_all()
        return self.flush_key(key) if full else []

    def flush_key(self, key: Key) -> list[PushResult]:
        with self._flushing:
            with self._state:
                items = self._buffer.take(key)
            if not items:
                return []
            try:
                return self._t.send(_calls.push(items))
            except ReginaError as error:
                if not isinstance(error, ApiError) or error.status in RETRIED_STATUSES:
                    with self._state:
                        self._buffer.put_back(key, items, time.monotonic() + self._retry_pause_s)
                raise

    def flush(self) -> list[PushResult]:
        with self._state:
            keys = self._buffer.keys()
            pending, self._background_error = self._background_error, None
        results: list[PushResult] = []
        for key in keys:
            results.extend(self.flush_key(key))
        if pending is not None:
            raise pending
        return results

    def _run(self) -> None:
        while True:
            with self._state:
                if self._closed:
                    return
                deadline = self._buffer.next_deadline()
                now = time.monotonic()
                if deadline is None or deadline > now:
                    self._state.wait(None if deadline is None else deadline - now)
                    continue
                due = self._buffer.due(now)
            for key in due:
                try:
                    self.flush_key(key)
                except ReginaError as error:
                    with self._state:
                        self._background_error = error

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.notify_all()
