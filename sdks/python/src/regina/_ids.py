"""Client-side identifiers: UUIDv7 transaction ids assigned before the first attempt."""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_last_seq = 0


def uuid7() -> str:
    """Return a new UUIDv7 in canonical text form.

    Ids made in one process are strictly increasing: within one millisecond a 12-bit counter
    (``rand_a``) orders them, and the clock is never allowed to step back.
    """
    global _last_ms, _last_seq
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            _last_ms = now_ms
            _last_seq = int.from_bytes(os.urandom(2), "big") & 0x7FF
        else:
            _last_seq += 1
            if _last_seq > 0xFFF:
                _last_ms += 1
                _last_seq = 0
        ms, seq = _last_ms, _last_seq
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))
