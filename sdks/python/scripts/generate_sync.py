"""Writes the blocking client, ``src/regina/_sync.py``, from the asyncio one, ``src/regina/_async.py``.

unasync drops ``async`` and ``await`` and renames the asyncio names (:data:`NAMES`); the few
sentences of documentation that differ between the two clients are replaced (:data:`PROSE`, each
expected exactly once); ruff sorts the imports and formats the result. Whatever truly differs
between the two clients (the buffers' timer, the consumer loop, the transport) lives in modules of
its own, written by hand.

Usage: ``python scripts/generate_sync.py [--check]``. With ``--check`` nothing is written: the
exit status is 1 when the committed ``_sync.py`` differs from what would be generated.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "regina" / "_async.py"
TARGET = ROOT / "src" / "regina" / "_sync.py"

NAMES = {
    "AsyncRegina": "Regina",
    "AsyncQueue": "Queue",
    "AsyncTransaction": "Transaction",
    "AsyncAdmin": "Admin",
    "AsyncStream": "Stream",
    "_async_buffers": "_sync_buffers",
    "_async_consume": "_sync_consume",
    # Only the consumer's stop event is asyncio's in _async.py; the blocking one is threading's.
    "asyncio": "threading",
}
"""Names renamed beyond unasync's own (``AsyncX`` becomes ``SyncX``, ``__aenter__`` ``__enter__``…)."""

PROSE = [
    (
        '"""The asyncio client: :class:`AsyncRegina`."""',
        '"""The blocking client: :class:`Regina`."""',
    ),
    (
        "Asyncio Regina client. Close it (or use ``async with``) to flush and free sockets.",
        "Blocking Regina client. Thread-safe; close it (or use ``with``) to flush and free sockets.",
    ),
    (
        "nothing new is popped. Cancelling the task stops it the same way.\n"
        "        ``handler`` may be a coroutine function.",
        "nothing new is popped (noticed within about a second).",
    ),
]
"""Documentation that says something else of the blocking client: (asyncio text, blocking text)."""

HEADER = "# Generated from _async.py by scripts/generate_sync.py: edit that file, then run the script.\n"


def generate() -> str:
    """The text ``_sync.py`` should have."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "_async.py"
        source.write_text(SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
        unasync.unasync_files([str(source)], [unasync.Rule("_async.py", "_sync.py", NAMES)])
        text = (Path(scratch) / "_sync.py").read_text(encoding="utf-8")
    for asyncio_text, blocking_text in PROSE:
        found = text.count(asyncio_text)
        if found != 1:
            sys.exit(f"generate_sync: _async.py holds {found} copies of {asyncio_text!r}, not 1")
        text = text.replace(asyncio_text, blocking_text)
    text = ruff(["check", "--fix-only", "--select", "I", "--quiet"], HEADER + text)
    return ruff(["format", "--quiet"], text)


def ruff(args: list[str], text: str) -> str:
    """``text`` after ``ruff ARGS`` with the SDK's settings (pyproject.toml)."""
    command = [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"]
    return subprocess.run(command, input=text, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when _sync.py is not up to date")
    check = parser.parse_args().check
    wanted = generate()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if not check:
        if current != wanted:
            TARGET.write_text(wanted, encoding="utf-8")
        return 0
    if current == wanted:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(keepends=True), wanted.splitlines(keepends=True), "_sync.py", "generated"
    )
    sys.stderr.writelines(diff)
    print("generate_sync: _sync.py is stale; run python scripts/generate_sync.py", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
