"""The asyncio client's push buffers: :class:`PushBuffer` flushed by a timer task."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from . import _calls
from ._buffer import BufferOptions, Key, PushBuffer
from ._errors import ApiError, ReginaError
from ._http import RETRIED_STATUSES
from ._models import PushResult
from ._transport import AsyncTransport


class AsyncBuffers:
    """Client-side push buffers with a timer task for time-based flushes."""

    def __init__(self, transport: AsyncTransport, retry_pause_s: float) -> None:
        self._t = transport
        self._retry_pause_s = retry_pause_s
        self._buffer = PushBuffer()
        self._changed: asyncio.Event | None = None
        self._flushing: asyncio.Lock | None = None
        self._timer: asyncio.Task[None] | None = None
        self._background_error: ReginaError | None = None

    def _lock(self) -> asyncio.Lock:
        if self._flushing is None:
            self._flushing = asyncio.Lock()
        return self._flushing

    async def add(self, key: Key, items: list[dict[str, Any]], options: BufferOptions) -> list[PushResult]:
        full = self._buffer.add(key, items, options, time.monotonic())
        if self._timer is None or self._timer.done():
            self._changed = asyncio.Event()
            self._timer = asyncio.ensure_future(self._run(self._changed))
        elif self._changed is not None:
            self._changed.set()
        return await self.flush_key(key) if full else []

    async def flush_key(self, key: Key) -> list[PushResult]:
        async with self._lock():
            items = self._buffer.take(key)
            if not items:
                return []
            try:
                return await self._t.send(_calls.push(items))
            except ReginaError as error:
                if not isinstance(error, ApiError) or error.status in RETRIED_STATUSES:
                    self._buffer.put_back(key, items, time.monotonic() + self._retry_pause_s)
                raise

    async def flush(self) -> list[PushResult]:
        keys = self._buffer.keys()
        pending, self._background_error = self._background_error, None
        results: list[PushResult] = []
        for key in keys:
            results.extend(await self.flush_key(key))
        if pending is not None:
            raise pending
        return results

    async def _run(self, changed: asyncio.Event) -> None:
        while True:
            deadline = self._buffer.next_deadline()
            now = time.monotonic()
            if deadline is None or deadline > now:
                changed.clear()
                try:
                    await asyncio.wait_for(changed.wait(), None if deadline is None else deadline - now)
                except asyncio.TimeoutError:
                    pass
                continue
            for key in self._buffer.due(now):
                try:
                    await self.flush_key(key)
                except ReginaError as error:
                    self._background_error = error

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
