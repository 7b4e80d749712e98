"""Shared fixtures: the live broker's URL and unique queue names."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from regina import Regina


@pytest.fixture(scope="session")
def regina_url() -> str:
    """The broker under test; ``sdks/run-tests.sh`` starts one and sets ``REGINA_URL``."""
    url = os.environ.get("REGINA_URL")
    if not url:
        pytest.fail("REGINA_URL is not set: run the suite through sdks/run-tests.sh (see test.sh)")
    return url


@pytest.fixture
def queue_name(request: pytest.FixtureRequest) -> str:
    """A queue name no other test uses."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:40]
    return f"py-{base}-{secrets.token_hex(4)}"


@pytest.fixture
def client(regina_url: str) -> Iterator[Regina]:
    """A blocking client on the live broker."""
    with Regina(regina_url) as c:
        yield c
