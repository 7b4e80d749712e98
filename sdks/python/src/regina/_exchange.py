"""Retries and failover as a sans-IO generator, driven by the sync and async transports.

The generator yields what to do next — :class:`Sleep` or :class:`Attempt` — and is sent what an
attempt produced — :class:`Answer` or :class:`Failure`. It returns the decoded result or raises.

Policy: the request goes to the preferred server (the last one that answered). A network
failure, a timeout or a retried 5xx status moves to the next server at once; a backoff delay
(exponential with jitter) comes only after every server failed in a round. A ``Retry-After`` from
the server lengthens that delay. 4xx answers and ``501`` are final, except the statuses a request
names in ``retry_statuses`` (the streams routes retry ``408`` and ``429``). Non-idempotent requests are
safe to retry because callers give them idempotency keys before the first attempt.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ._errors import ApiError, NetworkError, ReginaError, RequestTimeoutError
from ._http import RETRIED_STATUSES, Call, Request, read_answer

T = TypeVar("T")


@dataclass(frozen=True)
class Sleep:
    """Wait this long before the next attempt."""

    seconds: float


@dataclass(frozen=True)
class Attempt:
    """Send ``request`` to the server at ``base_url`` with this timeout."""

    base_url: str
    request: Request
    timeout_s: float


@dataclass(frozen=True)
class Answer:
    """The server answered (any status). ``headers`` have lower-case names."""

    status: int
    headers: Mapping[str, str]
    content: bytes


@dataclass(frozen=True)
class Failure:
    """No answer: ``timeout`` is true for a timeout, false for any other network failure."""

    timeout: bool
    detail: str


Step = Sleep | Attempt
Outcome = Answer | Failure | None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry.

    Attributes:
        retries: attempts after the first one (each server tried counts as one attempt).
        base_ms: backoff before the second round over the servers; doubles every round.
        max_ms: upper bound of one backoff delay.
        retry_after_max_ms: upper bound of a delay asked for by ``Retry-After``.
    """

    retries: int = 3
    base_ms: int = 100
    max_ms: int = 5_000
    retry_after_max_ms: int = 10_000

    def backoff_s(self, round_number: int, rng: random.Random) -> float:
        """Delay before round ``round_number`` (1 for the second round): half fixed, half random."""
        ceiling_ms = float(min(self.max_ms, self.base_ms * 2 ** max(0, round_number - 1)))
        return (ceiling_ms / 2 + rng.uniform(0, ceiling_ms / 2)) / 1000


class Servers:
    """The broker URLs in order, and which one is preferred now (thread-safe)."""

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("at least one server URL is required")
        self.urls = [url.rstrip("/") for url in urls]
        self._preferred = 0
        self._lock = threading.Lock()

    def preferred(self) -> int:
        """Index of the server tried first."""
        with self._lock:
            return self._preferred

    def answered(self, index: int) -> None:
        """Make the server that just answered the preferred one."""
        with self._lock:
            self._preferred = index


def exchange(
    call: Call[T],
    servers: Servers,
    policy: RetryPolicy,
    default_timeout_s: float,
    rng: random.Random,
) -> Generator[Step, Outcome, T]:
    """Run one call with retries and failover; see the module text for the policy.

    Raises:
        ApiError: a final error answer, or a retried status on the last attempt.
        NetworkError: the last attempt got no answer (``RequestTimeoutError`` for a timeout).
    """
    request = call.request
    timeout_s = request.timeout_s if request.timeout_s is not None else default_timeout_s
    count = len(servers.urls)
    start = servers.preferred()
    last_error: ReginaError | None = None
    retry_after_s = 0.0
    for attempt in range(policy.retries + 1):
        if attempt and attempt % count == 0:
            delay = policy.backoff_s(attempt // count, rng)
            cap_s = policy.retry_after_max_ms / 1000
            yield Sleep(max(delay, min(retry_after_s, cap_s)))
            retry_after_s = 0.0
        index = (start + attempt) % count
        base_url = servers.urls[index]
        outcome = yield Attempt(base_url, request, timeout_s)
        if isinstance(outcome, Failure):
            kind = RequestTimeoutError if outcome.timeout else NetworkError
            last_error = kind(outcome.detail, base_url)
            continue
        if outcome is None:
            raise RuntimeError("the transport sent no outcome for an attempt")
        try:
            response = read_answer(outcome.status, outcome.headers, outcome.content)
        except ApiError as error:
            if error.status not in RETRIED_STATUSES and error.status not in request.retry_statuses:
                servers.answered(index)
                raise
            last_error = error
            retry_after_s = max(retry_after_s, error.retry_after_s or 0.0)
            continue
        servers.answered(index)
        return call.decode(response)
    assert last_error is not None
    raise last_error
