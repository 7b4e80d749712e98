"""Runs every shared conformance scenario (sdks/conformance/scenarios) against the live broker,
once with the blocking client and once with the asyncio client, through the public API only.

The runner is written once: with the blocking client every call already returns its result, with
the asyncio client ``run`` drives the returned coroutine on the scenario's event loop.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conformance_streams import check_stream, run_stream, stream_hash
from regina import ApiError, AsyncRegina, Message, Regina

SCENARIOS = Path(__file__).resolve().parents[2] / "conformance" / "scenarios"
DEAD_URL = "http://127.0.0.1:9"
PLACEHOLDER = re.compile(r"\$\{([a-z0-9]+)(?::([^}]+))?\}")


def _scenario_files() -> list[Path]:
    files = sorted(SCENARIOS.glob("*.json"))
    assert files, f"no conformance scenarios in {SCENARIOS}"
    return files


class Scenario:
    """State of one scenario run: substitutions, saved results, the client and its runner."""

    def __init__(self, spec: dict[str, Any], url: str, flavour: str) -> None:
        self.spec = spec
        suffix = secrets.token_hex(4)
        base = f"conf-{spec['name']}-{suffix}"
        self.values = {"url": url, "dead": DEAD_URL, "q": base, "q2": f"{base}-2", "q3": f"{base}-3"}
        self.marks: dict[str, str] = {}
        self.saved: dict[str, list[Any]] = {}
        self.stream_totals: dict[str, dict[str, int]] = {}
        client_spec = self.subst(spec.get("client") or {})
        servers = client_spec.get("servers") or [url]
        options: dict[str, Any] = {"retry_base_ms": 20}
        if "retries" in client_spec:
            options["retries"] = client_spec["retries"]
        self.loop: asyncio.AbstractEventLoop | None = None
        if flavour == "async":
            self.loop = asyncio.new_event_loop()
            self.client: Any = AsyncRegina(servers, **options)
        else:
            self.client = Regina(servers, **options)

    def run(self, value: Any) -> Any:
        """The result of a client call: as is (sync), or the coroutine run to completion (async)."""
        return self.loop.run_until_complete(value) if self.loop is not None else value

    def sleep(self, seconds: float) -> None:
        if self.loop is not None:
            self.loop.run_until_complete(asyncio.sleep(seconds))
        else:
            time.sleep(seconds)

    def close(self) -> None:
        self.run(self.client.close())
        if self.loop is not None:
            self.loop.close()

    def subst(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.subst(v) for v in value]
        if not isinstance(value, str):
            return value

        def replace(match: re.Match[str]) -> str:
            kind, arg = match.group(1), match.group(2)
            if kind == "mark":
                return self.marks[arg]
            return self.values[kind]

        return PLACEHOLDER.sub(replace, value)

    def refs(self, step: dict[str, Any]) -> list[Any]:
        saved = self.saved[step["ref"]]
        return list(saved) if step.get("all") else [saved[step.get("index", 0)]]


def _queue(sc: Scenario, step: dict[str, Any]) -> Any:
    q = sc.client.queue(step["queue"])
    if step.get("partition") is not None:
        q = q.partition(step["partition"])
    if step.get("group") is not None:
        q = q.group(step["group"])
    if step.get("subscriptionMode") is not None:
        q = q.subscription_mode(step["subscriptionMode"])
    if step.get("subscriptionFrom") is not None:
        q = q.subscription_from(step["subscriptionFrom"])
    return q


def op_configure(sc: Scenario, step: dict[str, Any]) -> Any:
    q = sc.client.queue(step["queue"]).config(step.get("options") or {})
    if step.get("namespace") is not None:
        q = q.namespace(step["namespace"])
    if step.get("task") is not None:
        q = q.task(step["task"])
    return {"created": sc.run(q.create()).created}


def op_delete_queue(sc: Scenario, step: dict[str, Any]) -> Any:
    return {"existed": sc.run(sc.client.queue(step["queue"]).delete()).existed}


def op_push(sc: Scenario, step: dict[str, Any]) -> Any:
    q = sc.client.queue(step["queue"]).partition(step.get("partition", "Default"))
    return {"statuses": [r.status for r in sc.run(q.push(step["items"]))]}


def op_buffered_push(sc: Scenario, step: dict[str, Any]) -> Any:
    q = sc.client.queue(step["queue"]).partition(step.get("partition", "Default"))
    q = q.buffer(message_count=step["messageCount"], time_millis=step["timeMillis"])
    for item in step["items"]:
        sc.run(q.push([item]))
    sc.run(sc.client.flush())
    return {}


def op_pop(sc: Scenario, step: dict[str, Any]) -> Any:
    q = _queue(sc, step).batch(step.get("batch", 1)).partitions(step.get("partitions", 1))
    if step.get("wait"):
        q = q.wait(True)
    if step.get("timeoutMs") is not None:
        q = q.timeout_millis(step["timeoutMs"])
    if step.get("autoAck"):
        q = q.auto_ack(True)
    return sc.run(q.pop())


def op_ack(sc: Scenario, step: dict[str, Any]) -> Any:
    messages = sc.refs(step)
    status = step.get("status", "completed")
    kwargs = {"error": step.get("error"), "group": step.get("group")}
    if step.get("all"):
        results = sc.run(sc.client.ack(messages, status, **kwargs))
    else:
        results = [sc.run(sc.client.ack(messages[0], status, **kwargs))]
    return {"success": [r.success for r in results], "code": [r.code for r in results]}


def op_renew(sc: Scenario, step: dict[str, Any]) -> Any:
    return {"success": sc.run(sc.client.renew(sc.refs(step)[0], seconds=step.get("seconds"))).success}


def op_transaction(sc: Scenario, step: dict[str, Any]) -> Any:
    tx = sc.client.transaction()
    for ack in step.get("acks", []):
        tx = tx.ack(sc.refs(ack)[0], ack.get("status", "completed"))
    for push in step.get("pushes", []):
        target = tx.queue(push["queue"])
        if push.get("partition") is not None:
            target = target.partition(push["partition"])
        tx = target.push(push["items"])
    return {"success": sc.run(tx.commit()).success}


def op_consume(sc: Scenario, step: dict[str, Any]) -> Any:
    received: list[Message] = []
    poison = step.get("failPayloads") or []

    def handler(message: Message) -> None:
        received.append(message)
        if message.data in poison:
            raise RuntimeError(f"refusing {message.data!r}")

    q = _queue(sc, step).batch(step.get("batch", 1)).each().limit(step["limit"])
    q = q.idle_millis(step.get("idleMillis", 2000)).auto_ack(bool(step.get("autoAck", False)))
    sc.run(q.consume(handler))
    return received


def op_dlq(sc: Scenario, step: dict[str, Any]) -> Any:
    return list(sc.run(sc.client.admin.dlq(step["queue"], group=step.get("group"))).entries)


def op_requeue(sc: Scenario, step: dict[str, Any]) -> Any:
    sc.run(sc.client.admin.requeue(sc.refs(step)[0], group=step.get("group")))
    return {}


def op_seek(sc: Scenario, step: dict[str, Any]) -> Any:
    q = sc.client.queue(step["queue"]).group(step["group"])
    sc.run(q.seek(to_end=bool(step.get("toEnd")), timestamp=step.get("timestamp")))
    return {}


def op_groups(sc: Scenario, step: dict[str, Any]) -> Any:
    return {"groups": [(g.name, g.queue_name) for g in sc.run(sc.client.admin.consumer_groups())]}


def op_delete_group(sc: Scenario, step: dict[str, Any]) -> Any:
    sc.run(sc.client.admin.delete_consumer_group(step["group"], queue=step.get("queue")))
    return {}


def op_queues(sc: Scenario, step: dict[str, Any]) -> Any:
    return {"names": [q.name for q in sc.run(sc.client.admin.queues()).queues]}


def op_message(sc: Scenario, step: dict[str, Any]) -> Any:
    detail = sc.run(sc.client.admin.message(sc.refs(step)[0]))
    return {"payload": detail.payload, "status": detail.status}


def op_mark(sc: Scenario, step: dict[str, Any]) -> Any:
    now = datetime.now(timezone.utc)
    sc.marks[step["name"]] = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    return {}


def op_sleep(sc: Scenario, step: dict[str, Any]) -> Any:
    sc.sleep(step["ms"] / 1000)
    return {}


OPS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "configure": op_configure,
    "deleteQueue": op_delete_queue,
    "push": op_push,
    "bufferedPush": op_buffered_push,
    "pop": op_pop,
    "ack": op_ack,
    "renew": op_renew,
    "transaction": op_transaction,
    "consume": op_consume,
    "dlq": op_dlq,
    "requeue": op_requeue,
    "seek": op_seek,
    "groups": op_groups,
    "deleteGroup": op_delete_group,
    "queues": op_queues,
    "message": op_message,
    "mark": op_mark,
    "sleep": op_sleep,
    "stream": run_stream,
    "streamHash": stream_hash,
}


def check_messages(messages: list[Message], expect: dict[str, Any], where: str) -> None:
    got = {
        "count": len(messages),
        "payloads": [m.data for m in messages],
        "transactionIds": [m.transaction_id for m in messages],
        "partitions": [m.partition for m in messages],
        "retryCounts": [m.retry_count for m in messages],
        "empty": not messages,
    }
    for key, want in expect.items():
        assert key in got, f"{where}: unknown message check {key!r}"
        assert got[key] == want, f"{where}: {key} is {got[key]!r}, expected {want!r}"


def check(op: str, result: Any, expect: dict[str, Any], where: str) -> None:
    if op == "stream":
        check_stream(result, expect, where)
        return
    if op in ("pop", "consume"):
        check_messages(result, expect, where)
        return
    if op == "dlq":
        for key, want in expect.items():
            if key == "count":
                assert len(result) == want, f"{where}: {len(result)} DLQ entries, expected {want}"
            elif key == "transactionIds":
                assert sorted(e.transaction_id for e in result) == sorted(want), where
            else:
                raise AssertionError(f"{where}: unknown dlq check {key!r}")
        return
    if op == "ack":
        for key, want in expect.items():
            assert all(v == want for v in result[key]), (
                f"{where}: {key} is {result[key]!r}, expected {want!r}"
            )
        return
    if op == "groups":
        want = expect["contains"]
        assert (want["name"], want["queue"]) in result["groups"], f"{where}: {want} not in {result['groups']}"
        return
    if op == "queues":
        if "contains" in expect:
            assert expect["contains"] in result["names"], f"{where}: {expect['contains']} not listed"
        if "excludes" in expect:
            assert expect["excludes"] not in result["names"], f"{where}: {expect['excludes']} still listed"
        return
    for key, want in expect.items():
        assert result.get(key) == want, f"{where}: {key} is {result.get(key)!r}, expected {want!r}"


def run_step(sc: Scenario, number: int, raw: dict[str, Any]) -> None:
    step = sc.subst(raw)
    op = step["op"]
    where = f"{sc.spec['name']} step {number} ({op})"
    assert op in OPS, f"{where}: unknown op"
    if "expectError" in step:
        with pytest.raises(ApiError) as caught:
            OPS[op](sc, step)
        want = step["expectError"]
        assert caught.value.code == want["code"], f"{where}: code {caught.value.code!r}, expected {want}"
        if "status" in want:
            assert caught.value.status == want["status"], f"{where}: status {caught.value.status}"
        return
    result = OPS[op](sc, step)
    if "save" in step:
        sc.saved[step["save"]] = result
    if "expect" in step:
        check(op, result, step["expect"], where)


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("path", _scenario_files(), ids=lambda p: p.stem)
def test_scenario(path: Path, flavour: str, regina_url: str) -> None:
    spec = json.loads(path.read_text())
    sc = Scenario(spec, regina_url, flavour)
    try:
        for number, step in enumerate(spec["steps"], start=1):
            run_step(sc, number, step)
    finally:
        sc.close()
