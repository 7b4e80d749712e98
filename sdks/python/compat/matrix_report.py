"""The compatibility matrix table from the JUnit XML files of ``matrix.sh`` (standard library only).

Usage: python3 matrix_report.py DIR — reads DIR/modes.txt (``RELEASE full|smoke`` per line) and
DIR/RELEASE.xml, prints the table and writes it to DIR/matrix.md. Exits 1 when a test failed.

A cell tells what happened to the tests of one area (one ``test_<area>.py`` file):
``pass``; ``pass (n skipped)`` when n tests need a feature this release lacks; ``FAIL n/m``;
``xfail`` when the broker does not serve the area yet (streams answering 501); ``n/a`` when the
release has none of the area's features; ``not run`` for areas without smoke tests in a smoke run.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

AREAS = [
    "producer",
    "consumer",
    "transactions",
    "lease",
    "admin",
    "streams",
    "legacy_stream",
    "beyond_v1",
]


def outcomes(xml: Path) -> dict[str, Counter[str]]:
    """Per area, how many tests passed, failed, were skipped or xfailed."""
    by_area: dict[str, Counter[str]] = {area: Counter() for area in AREAS}
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        area = module.removeprefix("test_")
        if area not in by_area:
            continue
        by_area[area][kind(case)] += 1
    return by_area


def kind(case: ET.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    skipped = case.find("skipped")
    if skipped is not None:
        return "xfail" if skipped.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def cell(counts: Counter[str], mode: str) -> str:
    total = sum(counts.values())
    if total == 0:
        return "not run" if mode == "smoke" else "n/a"
    if counts["failed"]:
        return f"FAIL {counts['failed']}/{total}"
    if counts["xfail"]:
        return "xfail (501)" if not counts["passed"] else f"pass, {counts['xfail']} xfail"
    if not counts["passed"]:
        return "n/a"
    return f"pass ({counts['skipped']} skipped)" if counts["skipped"] else "pass"


def main(directory: Path) -> int:
    modes = [line.split() for line in (directory / "modes.txt").read_text().splitlines() if line.strip()]
    header = ["queen-mq", "run", *AREAS]
    rows = [header, ["---"] * len(header)]
    failed = False
    for release, mode in modes:
        xml = directory / f"{release}.xml"
        if not xml.exists():
            rows.append([release, mode, *(["no result"] * len(AREAS))])
            failed = True
            continue
        by_area = outcomes(xml)
        cells = [cell(by_area[area], mode) for area in AREAS]
        failed = failed or any(c.startswith("FAIL") for c in cells)
        rows.append([release, mode, *cells])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(text.ljust(widths[i]) for i, text in enumerate(row)) + " |" for row in rows]
    table = "\n".join(lines) + "\n"
    (directory / "matrix.md").write_text(table)
    print(f"\nCompatibility matrix ({directory / 'matrix.md'}):\n{table}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
