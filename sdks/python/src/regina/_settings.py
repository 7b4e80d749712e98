"""Client settings shared by :class:`Regina` and :class:`AsyncRegina`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._exchange import RetryPolicy, Servers
from ._transport import TokenSource, TransportSettings


@dataclass(frozen=True)
class ClientSettings:
    """Validated constructor arguments."""

    transport: TransportSettings
    long_poll_margin_ms: int
    buffer_retry_pause_s: float
    """Wait before a timed flush retries items whose send failed."""

    @classmethod
    def build(
        cls,
        servers: str | Sequence[str],
        token: TokenSource,
        timeout_ms: int,
        retries: int,
        retry_base_ms: int,
        retry_max_ms: int,
        long_poll_margin_ms: int,
        headers: Mapping[str, str] | None,
    ) -> ClientSettings:
        """Check the arguments and build the transport settings.

        Raises:
            ValueError: no server, or a negative number.
        """
        urls = [servers] if isinstance(servers, str) else list(servers)
        if min(timeout_ms, retries, retry_base_ms, retry_max_ms, long_poll_margin_ms) < 0:
            raise ValueError("timeouts, retries and delays must not be negative")
        policy = RetryPolicy(retries=retries, base_ms=retry_base_ms, max_ms=retry_max_ms)
        transport = TransportSettings(
            servers=Servers(urls),
            policy=policy,
            timeout_s=timeout_ms / 1000,
            token=token,
            headers=dict(headers or {}),
        )
        return cls(transport, long_poll_margin_ms, max(0.1, retry_max_ms / 1000))
