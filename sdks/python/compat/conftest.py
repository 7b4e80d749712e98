"""pytest hooks of the compatibility matrix (the shared functions are in ``support.py``)."""

from __future__ import annotations

import pytest
from support import URL, VERSION


def pytest_report_header() -> str:
    return f"queen-mq {VERSION} against {URL or '(no broker)'}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "smoke: the short run of every version in make test")


@pytest.fixture(autouse=True)
def _needs_broker() -> None:
    if not URL:
        pytest.fail("REGINA_URL is not set: run through sdks/run-tests.sh (see matrix.sh)")
