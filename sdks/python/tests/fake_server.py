"""A scripted HTTP server on a loopback port, for what a real broker cannot provoke on demand:
5xx answers, slow answers, missing JSON bodies. It records every request it receives."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    """One recorded request."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Answers requests with the scripted replies in order (the last one repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                content = self.rfile.read(length) if length else b""
                reply = server._record(self, content)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (
                    reply.raw
                    if reply.raw is not None
                    else (b"" if reply.body is None else json.dumps(reply.body).encode())
                )
                try:
                    self.send_response(reply.status)
                    if reply.raw is None and reply.body is not None:
                        self.send_header("content-type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = _serve

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def _record(self, handler: BaseHTTPRequestHandler, content: bytes) -> Reply:
        body = json.loads(content) if content else None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.received.append(Received(handler.command, handler.path, headers, body))
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def start(self) -> None:
        threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@contextmanager
def fake_server(*replies: Reply) -> Iterator[FakeServer]:
    """Run a :class:`FakeServer` for the duration of the block."""
    server = FakeServer(list(replies))
    server.start()
    try:
        yield server
    finally:
        server.stop()
