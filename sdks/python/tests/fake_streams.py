"""A local stand-in for the broker's pop, ack and streams routes, for wire-shape tests of the
stream runners: pops answer from a script, registrations, state and cycles live in memory, and
every request is recorded. Failures can be scripted per route."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_sequence = itertools.count(1)


@dataclass
class Seen:
    """One recorded request."""

    method: str
    path: str
    body: Any


def message(partition: str, data: Any, created_at: str = "2026-01-01T00:00:00.000Z") -> dict[str, Any]:
    """A delivered message of ``partition`` (id ``pid-<partition>``) under lease ``lease-1``."""
    n = next(_sequence)
    return {
        "id": f"m-{n}",
        "transactionId": f"tx-{n}",
        "traceId": None,
        "data": data,
        "producerSub": None,
        "createdAt": created_at,
        "partitionId": f"pid-{partition}",
        "partition": partition,
        "queue": "source",
        "leaseId": "lease-1",
        "consumerGroup": "streams.q",
        "retryCount": 0,
    }


class FakeStreams:
    """The fake broker; ``pops`` are handed out in order, then pops are empty."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.pops: list[list[dict[str, Any]]] = []
        self.queries: dict[str, dict[str, str]] = {}
        self.state: dict[tuple[str, str], dict[str, Any]] = {}
        self.failures: dict[str, list[tuple[int, Any]]] = {}
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body = fake._answer(self.command, self.path, json.loads(raw) if raw else {})
                payload = b"" if body is None else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _serve

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def requests(self, path: str) -> list[Seen]:
        """Recorded requests to ``path`` (query strings ignored)."""
        with self._lock:
            return [s for s in self.seen if s.path == path or s.path.startswith(path + "/")]

    def shard(self, query_id: str, partition_id: str) -> dict[str, Any]:
        with self._lock:
            return self.state.setdefault((query_id, partition_id), {})

    def fail(self, path: str, *failures: tuple[int, Any]) -> None:
        self.failures[path] = list(failures)

    def _answer(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        path = target.split("?")[0]
        with self._lock:
            self.seen.append(Seen(method, path, body))
            pending = self.failures.get(path)
            if pending:
                return pending.pop(0)
            if path.startswith("/api/v1/pop/"):
                if self.pops:
                    return 200, {"messages": self.pops.pop(0)}
        if path.startswith("/api/v1/pop/"):
            time.sleep(0.02)
            return 204, None
        with self._lock:
            if path == "/api/v1/ack":
                return 200, [{"index": 0, "success": True, "code": None}]
            if path == "/streams/v1/queries":
                return self._register(body)
            if path == "/streams/v1/state/get":
                return 200, {"success": True, "rows": self._rows(body)}
            if path == "/streams/v1/cycle":
                return 200, self._cycle(body)
        return 404, {"error": "no route", "code": "route_not_found"}

    def _register(self, body: dict[str, Any]) -> tuple[int, Any]:
        name, hash_ = body["name"], body["config_hash"]
        stored = self.queries.get(name)
        answer = {"success": True, "name": name, "config_hash": hash_, "fresh": False, "reset": False}
        if stored is None:
            query_id = f"00000000-0000-4000-8000-{len(self.queries) + 1:012d}"
            self.queries[name] = {"id": query_id, "hash": hash_}
            return 200, {**answer, "query_id": query_id, "fresh": True}
        if stored["hash"] == hash_:
            return 200, {**answer, "query_id": stored["id"]}
        if body.get("reset") is not True:
            text = f"config_hash mismatch: operator chain changed for queryId '{name}'."
            return 409, {"success": False, "error": text, "code": "config_hash_mismatch"}
        for key in [k for k in self.state if k[0] == stored["id"]]:
            del self.state[key]
        stored["hash"] = hash_
        return 200, {**answer, "query_id": stored["id"], "reset": True}

    def _rows(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        rows = self.state.setdefault((body["query_id"], body["partition_id"]), {})
        prefix = body.get("key_prefix") or ""
        ripe = body.get("ripe_at_or_before")
        out = []
        for key in sorted(rows, key=str.encode):
            value = rows[key]
            if not key.startswith(prefix):
                continue
            end = value.get("windowEnd") if isinstance(value, dict) else None
            if ripe is not None and not (isinstance(end, (int, float)) and end <= ripe):
                continue
            out.append({"key": key, "value": value})
        return out

    def _cycle(self, body: dict[str, Any]) -> dict[str, Any]:
        rows = self.state.setdefault((body["query_id"], body["partition_id"]), {})
        for op in body.get("state_ops") or []:
            if op["type"] == "upsert":
                rows[op["key"]] = op.get("value", {})
            else:
                rows.pop(op["key"], None)
        return {"success": True, "state_ops_applied": len(body.get("state_ops") or []), "push_results": []}


@contextmanager
def fake_streams() -> Iterator[FakeStreams]:
    """Run a :class:`FakeStreams` for the duration of the block."""
    fake = FakeStreams()
    thread = threading.Thread(target=fake._http.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake._http.shutdown()
        fake._http.server_close()
