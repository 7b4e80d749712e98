"""The ``stream`` and ``streamHash`` steps of the conformance language (sdks/conformance/README.md):
chains described in JSON, with expressions standing for the user's functions, built and run
through the public stream API of either client."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from regina import sliding_window_gate, token_bucket_gate


def _path(value: Any, dotted: str) -> Any:
    if dotted == "":
        return value
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_CTX = {"partition": "partition", "partitionId": "partition_id", "key": "key"}
_CTX.update(windowStart="window_start", windowEnd="window_end")


def evaluate(expr: Any, value: Any, acc: Any = None, ctx: Any = None) -> Any:
    """Evaluate an expression of the conformance language."""
    if not isinstance(expr, dict):
        return expr
    ((op, arg),) = expr.items()

    def ev(e: Any) -> Any:
        return evaluate(e, value, acc, ctx)

    if op == "value":
        return _path(value, arg)
    if op == "acc":
        return _path(acc, arg)
    if op == "ctx":
        return getattr(ctx, _CTX[arg], None)
    if op == "literal":
        return arg
    if op == "add":
        return sum(ev(e) for e in arg)
    if op == "mul":
        product = 1
        for e in arg:
            product *= ev(e)
        return product
    binary: dict[str, Callable[[Any, Any], Any]] = {
        "sub": lambda a, b: a - b,
        "mod": lambda a, b: a % b,
        "eq": lambda a, b: a == b,
        "lt": lambda a, b: a < b,
        "gt": lambda a, b: a > b,
    }
    if op in binary:
        return binary[op](ev(arg[0]), ev(arg[1]))
    if op == "not":
        return not ev(arg)
    if op == "object":
        return {k: ev(e) for k, e in arg.items()}
    if op == "list":
        return [ev(e) for e in arg]
    if op == "concat":
        return "".join(_text(ev(e)) for e in arg)
    raise AssertionError(f"unknown expression {op}")


def _one(expr: Any) -> Callable[..., Any]:
    return lambda value, ctx: evaluate(expr, value, None, ctx)


def build(client: Any, step: dict[str, Any], recorded: list[Any]) -> Any:
    """The stream a step describes; ``recorded`` receives what ``foreach`` records."""
    stream: Any = client.stream(step["source"])
    for entry in step["chain"]:
        stream = _add(stream, entry, recorded)
    return stream


def _window_options(entry: dict[str, Any]) -> dict[str, Any]:
    names = {
        "gracePeriod": "grace_period",
        "allowedLateness": "allowed_lateness",
        "onLate": "on_late",
        "idleFlushMs": "idle_flush_ms",
    }
    options = {snake: entry[camel] for camel, snake in names.items() if camel in entry}
    if "eventTime" in entry:
        options["event_time"] = _one(entry["eventTime"])
    return options


def _add(stream: Any, entry: dict[str, Any], recorded: list[Any]) -> Any:
    op = entry["op"]
    simple = {"map": "map", "filter": "filter", "flatMap": "flat_map", "keyBy": "key_by"}
    if op in simple:
        return getattr(stream, simple[op])(_one(entry["fn"]))
    options = _window_options(entry)
    if op == "windowTumbling":
        return stream.window_tumbling(entry["seconds"], **options)
    if op == "windowSliding":
        return stream.window_sliding(entry["size"], entry["slide"], **options)
    if op == "windowSession":
        return stream.window_session(entry["gap"], **options)
    if op == "windowCron":
        return stream.window_cron(entry["every"], **options)
    if op == "reduce":
        return stream.reduce(lambda acc, value, ctx: evaluate(entry["fn"], value, acc, ctx), entry["initial"])
    if op == "aggregate":
        return stream.aggregate({name: _one(e) for name, e in entry["fields"].items()})
    if op == "gate":
        if "tokenBucket" in entry:
            bucket = entry["tokenBucket"]
            return stream.gate(token_bucket_gate(bucket["capacity"], bucket["refillPerSec"]))
        window = entry["slidingWindow"]
        return stream.gate(sliding_window_gate(window["limit"], window["windowSeconds"]))
    if op == "to":
        partition = entry.get("partition")
        return stream.to(
            entry["queue"], partition=partition if not isinstance(partition, dict) else _one(partition)
        )
    if op == "foreach":
        record = entry.get("record")
        return stream.foreach(
            lambda value, ctx: recorded.append(
                value if record is None else evaluate(record, value, None, ctx)
            )
        )
    raise AssertionError(f"unknown stream operator {op}")


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


_RUN_OPTIONS = ("batchSize", "maxPartitions", "maxWaitMillis", "reset", "consumerGroup", "subscriptionMode")


def run_stream(sc: Any, step: dict[str, Any]) -> dict[str, Any]:
    """Run the step's stream until its ``until`` / ``untilAcrossRuns`` conditions hold, then stop
    it. ``sc.stream_totals`` keeps the metrics summed over earlier stream steps, by query id."""
    recorded: list[Any] = []
    stream = build(sc.client, step, recorded)
    query_id = step["run"]["queryId"]
    options = {_snake(k): v for k, v in step["run"].items() if k in _RUN_OPTIONS}
    runner = sc.run(stream.run(query_id, **options))
    before = sc.stream_totals.get(query_id, {})
    deadline = time.monotonic() + step.get("timeoutMs", 60_000) / 1000

    def across() -> dict[str, int]:
        metrics = asdict(runner.metrics())
        names = {**before, **{k: 0 for k, v in metrics.items() if isinstance(v, int)}}
        return {name: before.get(name, 0) + (metrics.get(name) or 0) for name in names}

    def holds(wanted: dict[str, Any] | None, values: dict[str, Any]) -> bool:
        return all(values.get(_snake(name), 0) >= least for name, least in (wanted or {}).items())

    def reached() -> bool:
        return holds(step.get("until"), asdict(runner.metrics())) and holds(
            step.get("untilAcrossRuns"), across()
        )

    while not reached() and time.monotonic() < deadline:
        sc.sleep(0.02)
    sc.run(runner.stop())
    done, sums = reached(), across()
    sc.stream_totals[query_id] = sums
    metrics = asdict(runner.metrics())
    assert done, f"stream did not reach its conditions: {metrics}"
    registration = {"fresh": runner.registration.fresh, "reset": runner.registration.reset}
    return {"registration": registration, "metrics": metrics, "acrossRuns": sums, "results": recorded}


def stream_hash(sc: Any, step: dict[str, Any]) -> dict[str, Any]:
    """The ``config_hash`` of the step's chain."""
    return {"hash": build(sc.client, step, []).config_hash()}


def _whole(value: Any) -> Any:
    """Floats without a fraction as ints, so that equal JSON values print alike."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def check_stream(result: dict[str, Any], expect: dict[str, Any], where: str) -> None:
    """Checks of a ``stream`` step (see the README's *stream checks*)."""
    for key, want in expect.items():
        if key in ("metrics", "acrossRuns"):
            for name, value in want.items():
                got = result[key][_snake(name)]
                if isinstance(value, dict):
                    assert got >= value["atLeast"], f"{where}: metric {name} is {got}, expected ≥ {value}"
                else:
                    assert got == value, f"{where}: metric {name} is {got!r}, expected {value!r}"
        elif key == "resultsAnyOrder":
            got = sorted(json.dumps(_whole(r), sort_keys=True) for r in result["results"])
            assert got == sorted(json.dumps(_whole(r), sort_keys=True) for r in want), f"{where}: results"
        else:
            assert result[key] == want, f"{where}: {key} is {result[key]!r}, expected {want!r}"
