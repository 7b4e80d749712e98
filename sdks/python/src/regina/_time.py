"""Instants on the wire: ISO-8601 UTC text in both directions."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_FRACTION = re.compile(r"\.(\d+)")


def parse_instant(text: str) -> datetime:
    """Parse the server's ISO-8601 text (``Z`` or an offset, any fractional precision)."""
    normalized = text.strip().replace("Z", "+00:00").replace("z", "+00:00")
    normalized = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], normalized, count=1)
    parsed = datetime.fromisoformat(normalized)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def parse_optional_instant(value: object) -> datetime | None:
    """Parse an instant that may be absent or null."""
    return parse_instant(value) if isinstance(value, str) and value else None


def format_instant(value: datetime | str) -> str:
    """Render an instant for the server: text passes through, a naive datetime counts as UTC."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    utc = value.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
