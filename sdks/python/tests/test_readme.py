"""The README's three samples run as written, in order, against the live broker.

The only changes made before running them: the broker URL (the suite's broker listens on a free
port) and the queue names (suffixed, so runs never share state).
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from regina import Regina

README = Path(__file__).resolve().parents[1] / "README.md"
SAMPLE = re.compile(r"<!-- sample: (?P<name>[a-z-]+) -->\s*```python\n(?P<code>.*?)```", re.DOTALL)


def samples() -> dict[str, str]:
    found = {m.group("name"): m.group("code") for m in SAMPLE.finditer(README.read_text())}
    assert list(found) == ["produce", "consume", "pipeline"], f"README samples changed: {list(found)}"
    return found


def run_sample(code: str, url: str, suffix: str) -> str:
    assert "http://localhost:6632" in code
    code = code.replace("http://localhost:6632", url)
    code = code.replace('"orders"', f'"orders-{suffix}"').replace('"invoices"', f'"invoices-{suffix}"')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"sample failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def suffix() -> str:
    return secrets.token_hex(4)


def test_produce_sample(regina_url: str, suffix: str) -> None:
    assert run_sample(samples()["produce"], regina_url, suffix).strip().endswith("['queued', 'queued']")


def test_consume_sample(regina_url: str, suffix: str) -> None:
    output = run_sample(samples()["consume"], regina_url, suffix)
    assert "billing customer-42 {'orderId': 1, 'total': 9.5}" in output
    assert output.strip().endswith("billed 2 orders")


def test_pipeline_sample(regina_url: str, suffix: str) -> None:
    assert run_sample(samples()["pipeline"], regina_url, suffix).strip() == "invoiced 2 orders"
    with Regina(regina_url) as client:
        invoices = client.queue(f"invoices-{suffix}").batch(10).auto_ack().pop()
    assert [m.data for m in invoices] == [{"orderId": 1, "amount": 9.5}, {"orderId": 2, "amount": 12.0}]
    assert {m.partition for m in invoices} == {"customer-42"}
