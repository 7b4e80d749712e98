"""The two I/O drivers of :func:`regina._exchange.exchange`: one over ``httpx.Client``, one over
``httpx.AsyncClient``. They only send attempts and sleep; every decision is in the exchange."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

from ._exchange import Answer, Attempt, Failure, Outcome, RetryPolicy, Servers, Sleep, Step, exchange
from ._http import Call

T = TypeVar("T")

TokenSource = str | Callable[[], str] | None
"""A bearer token, or a function returning the current one (called before every attempt)."""

USER_AGENT = "regina-client-python"


@dataclass(frozen=True)
class TransportSettings:
    """Where and how requests are sent."""

    servers: Servers
    policy: RetryPolicy
    timeout_s: float
    """Default timeout of one attempt."""
    token: TokenSource = None
    headers: Mapping[str, str] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)


class _Base:
    def __init__(self, settings: TransportSettings) -> None:
        self.servers = settings.servers
        self.policy = settings.policy
        self.timeout_s = settings.timeout_s
        self._token = settings.token
        self._headers = {"user-agent": USER_AGENT, **settings.headers}
        self._rng = settings.rng

    def _steps(self, call: Call[T]) -> Generator[Step, Outcome, T]:
        return exchange(call, self.servers, self.policy, self.timeout_s, self._rng)

    def _request_headers(self, attempt: Attempt) -> dict[str, str]:
        headers = dict(self._headers)
        token = self._token() if callable(self._token) else self._token
        if token:
            headers["authorization"] = f"Bearer {token}"
        if attempt.request.has_body:
            headers["content-type"] = "application/json"
        return headers

    @staticmethod
    def _answer(response: httpx.Response) -> Answer:
        headers = {name.lower(): value for name, value in response.headers.items()}
        return Answer(response.status_code, headers, response.content)

    @staticmethod
    def _failure(error: httpx.TransportError) -> Failure:
        detail = str(error) or type(error).__name__
        return Failure(timeout=isinstance(error, httpx.TimeoutException), detail=detail)


class SyncTransport(_Base):
    """Blocking transport; thread-safe (``httpx.Client`` pools connections across threads)."""

    def __init__(self, settings: TransportSettings) -> None:
        super().__init__(settings)
        self._http = httpx.Client(follow_redirects=False)

    def send(self, call: Call[T]) -> T:
        """Run one call with retries and failover.

        Raises:
            ApiError: the server refused the call.
            NetworkError: no server answered (``RequestTimeoutError`` on timeouts).
        """
        steps = self._steps(call)
        try:
            step = next(steps)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = steps.send(None)
                else:
                    step = steps.send(self._attempt(step))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _attempt(self, attempt: Attempt) -> Answer | Failure:
        request = attempt.request
        try:
            response = self._http.request(
                request.method,
                attempt.base_url + request.path,
                params=list(request.query),
                content=request.encoded_body(),
                headers=self._request_headers(attempt),
                timeout=attempt.timeout_s,
            )
        except httpx.TransportError as error:
            return self._failure(error)
        return self._answer(response)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()


class AsyncTransport(_Base):
    """Asyncio transport. Cancelling the awaiting task cancels the attempt or the backoff."""

    def __init__(self, settings: TransportSettings) -> None:
        super().__init__(settings)
        self._http = httpx.AsyncClient(follow_redirects=False)

    async def send(self, call: Call[T]) -> T:
        """Run one call with retries and failover.

        Raises:
            ApiError: the server refused the call.
            NetworkError: no server answered (``RequestTimeoutError`` on timeouts).
        """
        steps = self._steps(call)
        try:
            step = next(steps)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = steps.send(None)
                else:
                    step = steps.send(await self._attempt(step))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def _attempt(self, attempt: Attempt) -> Answer | Failure:
        request = attempt.request
        try:
            response = await self._http.request(
                request.method,
                attempt.base_url + request.path,
                params=list(request.query),
                content=request.encoded_body(),
                headers=self._request_headers(attempt),
                timeout=attempt.timeout_s,
            )
        except httpx.TransportError as error:
            return self._failure(error)
        return self._answer(response)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()
