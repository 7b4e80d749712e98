"""The README's three samples run as written, in order, against the live broker.

The only changes made before running them: the broker URL (the suite's broker listens on a free
port) and the queue names (suffixed, so runs never share state).
"""

from __future__ import annotations

import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from regina import Regina

README = Path(__file__).resolve().parents[1] / "README.md"
SAMPLE = re.compile(r"<!-- sample: (?P<name>[a-z-]+) -->\s*```python\n(?P<code>.*?)```", re.DOTALL)


def samples() -> dict[str, str]:
    found = {m.group("name"): m.group("code") for m in SAMPLE.finditer(README.read_text())}
    assert list(found) == ["produce", "consume", "pipeline", "stream"], (
        f"README samples changed: {list(found)}"
    )
    return found


def prepare(code: str, url: str, suffix: str) -> str:
    assert "http://localhost:6632" in code
    code = code.replace("http://localhost:6632", url)
    for name in ("orders", "invoices", "customer-revenue", "revenue-per-second"):
        code = code.replace(f'"{name}"', f'"{name}-{suffix}"')
    return code


def run_sample(code: str, url: str, suffix: str) -> str:
    code = prepare(code, url, suffix)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"sample failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_samples_run_in_order(regina_url: str) -> None:
    """One test, not four: the samples share their queues and each needs the one before it, so
    they must run in order in one process even when the suite runs on parallel workers."""
    suffix = secrets.token_hex(4)
    produce_sample(regina_url, suffix)
    consume_sample(regina_url, suffix)
    pipeline_sample(regina_url, suffix)
    stream_sample(regina_url, suffix)


def produce_sample(regina_url: str, suffix: str) -> None:
    assert run_sample(samples()["produce"], regina_url, suffix).strip().endswith("['queued', 'queued']")


def consume_sample(regina_url: str, suffix: str) -> None:
    output = run_sample(samples()["consume"], regina_url, suffix)
    assert "billing customer-42 {'orderId': 1, 'total': 9.5}" in output
    assert output.strip().endswith("billed 2 orders")


def pipeline_sample(regina_url: str, suffix: str) -> None:
    assert run_sample(samples()["pipeline"], regina_url, suffix).strip() == "invoiced 2 orders"
    with Regina(regina_url) as client:
        invoices = client.queue(f"invoices-{suffix}").batch(10).auto_ack().pop()
    assert [m.data for m in invoices] == [{"orderId": 1, "amount": 9.5}, {"orderId": 2, "amount": 12.0}]
    assert {m.partition for m in invoices} == {"customer-42"}


def stream_sample(regina_url: str, suffix: str) -> None:
    """The stream runs until Ctrl-C: wait for its window total in the sink, then interrupt it."""
    code = prepare(samples()["stream"], regina_url, suffix)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        totals: list[object] = []
        deadline = time.monotonic() + 60
        with Regina(regina_url) as client:
            sink = client.queue(f"customer-revenue-{suffix}").partition("customer-42").batch(10).auto_ack()
            while not totals and time.monotonic() < deadline and child.poll() is None:
                totals = [m.data for m in sink.pop()]
                time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, output
    assert len(totals) == 1, output
    total = totals[0]
    assert isinstance(total, dict) and isinstance(total.pop("window_start"), int)
    assert total == {"customer": "customer-42", "count": 2, "revenue": 21.5}
    assert output.strip().endswith("settled 2 orders")
