"""Legacy stream area (queen-mq 0.12 to 0.14): ``queen.stream(...)`` used ``/api/v1/stream/*``, routes
that are not part of the HTTP API v1 that Regina serves (docs/compatibility.md). This checks the
documented outcome: a clear JSON ``404 route_not_found`` that the client raises, nothing else."""

from __future__ import annotations

import httpx
import pytest
from queen import Queen
from support import name, needs, run


def test_the_legacy_stream_api_is_refused_with_a_clear_404() -> None:
    async def scenario(queen: Queen) -> None:
        needs(hasattr(queen, "stream"), "the legacy stream API")
        builder = queen.stream(name("legacy"), "ns").sources([name("src")]).tumbling_time(5)
        with pytest.raises(httpx.HTTPStatusError, match="Not found: POST /api/v1/stream/define") as caught:
            await builder.define()
        assert caught.value.response.status_code == 404
        assert caught.value.response.json()["code"] == "route_not_found"

    run(scenario)
