"""Retries, backoff, failover, timeouts and error mapping, against a scripted local server."""

from __future__ import annotations

import random
import time

import pytest

from fake_server import Reply, fake_server
from regina import (
    ApiError,
    AsyncRegina,
    NetworkError,
    QueueFullError,
    Regina,
    RequestTimeoutError,
)
from regina._exchange import Answer, Attempt, Failure, RetryPolicy, Servers, Sleep, exchange
from regina._http import Call, make_request

DEAD = "http://127.0.0.1:9"
QUEUED = [{"index": 0, "transaction_id": "t", "status": "queued", "message_id": "m", "queueName": "q"}]
UNAVAILABLE = Reply(503, {"error": "Database unavailable", "code": "database_unavailable"})


def test_push_is_retried_after_5xx_with_the_same_transaction_id() -> None:
    with fake_server(UNAVAILABLE, UNAVAILABLE, Reply(201, QUEUED)) as server:
        with Regina(server.url, retry_base_ms=1) as client:
            results = client.queue("q").push([{"payload": 1}])
    assert [r.status for r in results] == ["queued"]
    assert len(server.received) == 3
    ids = {r.body["items"][0]["transactionId"] for r in server.received}
    assert len(ids) == 1 and next(iter(ids)), "every attempt must carry the id assigned before the first"


def test_4xx_is_never_retried_and_maps_to_the_code() -> None:
    error_body = {
        "error": "Queue must be a string",
        "code": "validation_failed",
        "field": "items[1].queue",
        "index": 1,
    }
    with fake_server(Reply(400, error_body)) as server:
        with Regina(server.url, retry_base_ms=1) as client, pytest.raises(ApiError) as caught:
            client.queue("q").push([{"payload": 1}])
    assert len(server.received) == 1
    error = caught.value
    assert (error.code, error.status, error.field, error.index) == (
        "validation_failed",
        400,
        "items[1].queue",
        1,
    )
    assert error.message == "Queue must be a string"


def test_501_is_final() -> None:
    with fake_server(Reply(501, {"error": "not here", "code": "not_implemented"})) as server:
        with Regina(server.url, retry_base_ms=1) as client, pytest.raises(ApiError) as caught:
            client.admin.health()
    assert caught.value.code == "not_implemented"
    assert len(server.received) == 1


def test_5xx_on_every_attempt_raises_the_last_answer() -> None:
    with fake_server(UNAVAILABLE) as server:
        with Regina(server.url, retries=2, retry_base_ms=1) as client, pytest.raises(ApiError) as caught:
            client.queue("q").pop()
    assert caught.value.code == "database_unavailable"
    assert len(server.received) == 3


def test_an_answer_without_json_error_body_gets_an_http_code() -> None:
    with fake_server(Reply(418, raw=b"<html>teapot</html>")) as server:
        with Regina(server.url) as client, pytest.raises(ApiError) as caught:
            client.queue("q").pop()
    assert (caught.value.code, caught.value.status) == ("http_418", 418)


def test_failover_moves_to_the_next_server_and_keeps_it() -> None:
    with fake_server(Reply(201, QUEUED)) as server:
        with Regina([DEAD, server.url], retries=1, retry_base_ms=1) as client:
            client.queue("q").push([{"payload": 1}])
            client.queue("q").push([{"payload": 2}])
    assert len(server.received) == 2


def test_no_server_answering_is_a_network_error_naming_the_last_url() -> None:
    with Regina([DEAD, "http://127.0.0.1:7"], retries=3, retry_base_ms=1) as client:
        with pytest.raises(NetworkError) as caught:
            client.queue("q").pop()
    assert not isinstance(caught.value, RequestTimeoutError)
    assert caught.value.url in (DEAD, "http://127.0.0.1:7")


def test_a_slow_answer_is_a_timeout_after_the_retries() -> None:
    # The answer would take a minute: a quicker end is the client's own timeout.
    with fake_server(Reply(200, {"messages": []}, delay_s=60.0)) as server:
        with Regina(server.url, timeout_ms=150, retries=1, retry_base_ms=1) as client:
            started = time.monotonic()
            with pytest.raises(RequestTimeoutError) as caught:
                client.queue("q").pop()
            elapsed = time.monotonic() - started
    assert isinstance(caught.value, NetworkError) and isinstance(caught.value, TimeoutError)
    assert len(server.received) == 2
    assert elapsed < 60


def test_a_long_poll_waits_its_timeout_plus_the_margin() -> None:
    reply = Reply(200, {"messages": [], "success": True}, delay_s=0.5)
    with fake_server(reply) as server:
        with Regina(server.url, timeout_ms=100, retries=0, long_poll_margin_ms=600) as client:
            assert client.queue("q").wait().timeout_millis(200).pop() == []
    query = server.received[0].path.split("?", 1)[1]
    assert "wait=true" in query and "timeout=200" in query


def test_204_and_200_with_no_messages_are_both_empty() -> None:
    empty_200 = {"success": True, "queue": "q", "partitionId": None, "leaseId": None, "messages": []}
    with fake_server(Reply(204), Reply(200, empty_200)) as server:
        with Regina(server.url) as client:
            assert client.queue("q").pop() == []
            assert client.queue("q").pop() == []


def test_the_bearer_token_is_sent_and_may_come_from_a_function() -> None:
    tokens = iter(["first", "second"])
    with fake_server(Reply(204)) as server:
        with Regina(server.url, token="static") as client:
            client.queue("q").pop()
        with Regina(server.url, token=lambda: next(tokens)) as client:
            client.queue("q").pop()
            client.queue("q").pop()
    assert [r.headers.get("authorization") for r in server.received] == [
        "Bearer static",
        "Bearer first",
        "Bearer second",
    ]


def test_429_push_raises_queue_full_with_every_item_result() -> None:
    body = [
        {"index": 0, "transaction_id": "a", "status": "queued", "message_id": "m", "queueName": "q"},
        {
            "index": 1,
            "transaction_id": "b",
            "status": "failed",
            "queueName": "q",
            "error": "Queue is full (maxSize 1)",
            "code": "queue_full",
        },
    ]
    with fake_server(Reply(429, body, headers={"Retry-After": "1"})) as server:
        with Regina(server.url) as client, pytest.raises(QueueFullError) as caught:
            client.queue("q").push([{"payload": 1}, {"payload": 2}])
    assert len(server.received) == 1
    assert caught.value.code == "queue_full" and caught.value.retry_after_s == 1.0
    assert [r.status for r in caught.value.results] == ["queued", "failed"]


async def test_async_client_retries_then_times_out() -> None:
    with fake_server(UNAVAILABLE, Reply(201, QUEUED)) as server:
        async with AsyncRegina(server.url, retry_base_ms=1) as client:
            results = await client.queue("q").push([{"payload": 1}])
    assert [r.status for r in results] == ["queued"] and len(server.received) == 2
    with fake_server(Reply(200, {"messages": []}, delay_s=1.0)) as server:
        async with AsyncRegina(server.url, timeout_ms=150, retries=0) as client:
            with pytest.raises(RequestTimeoutError):
                await client.queue("q").pop()


def _drive(call: Call[str], servers: Servers, outcomes: list[Answer | Failure]) -> list[object]:
    """Run the exchange generator with canned outcomes; return the steps it took."""
    steps: list[object] = []
    generator = exchange(
        call, servers, RetryPolicy(retries=5, base_ms=100, max_ms=400), 1.0, random.Random(7)
    )
    try:
        step = next(generator)
        while True:
            steps.append(step)
            step = generator.send(None if isinstance(step, Sleep) else outcomes.pop(0))
    except StopIteration as done:
        steps.append(done.value)
    return steps


def test_backoff_comes_after_each_round_over_the_servers_and_grows() -> None:
    call = Call(make_request("GET", "/x"), lambda r: "ok")
    fail = Failure(timeout=False, detail="refused")
    steps = _drive(call, Servers(["http://a", "http://b"]), [fail, fail, fail, fail, Answer(200, {}, b"")])
    kinds = [type(s).__name__ if not isinstance(s, Attempt) else s.base_url for s in steps]
    assert kinds == ["http://a", "http://b", "Sleep", "http://a", "http://b", "Sleep", "http://a", "str"]
    first, second = (s.seconds for s in steps if isinstance(s, Sleep))
    assert 0.05 <= first <= 0.1 and 0.1 <= second <= 0.2


def test_retry_after_lengthens_the_backoff() -> None:
    call = Call(make_request("GET", "/x"), lambda r: "ok")
    busy = Answer(503, {"retry-after": "2"}, b'{"error":"busy","code":"overloaded"}')
    steps = _drive(call, Servers(["http://a"]), [busy, Answer(200, {}, b"")])
    sleeps = [s.seconds for s in steps if isinstance(s, Sleep)]
    assert sleeps == [2.0]


def test_backoff_stays_within_its_bounds() -> None:
    policy = RetryPolicy(base_ms=100, max_ms=1000)
    rng = random.Random(1)
    for round_number in range(1, 10):
        ceiling = min(1000, 100 * 2 ** (round_number - 1)) / 1000
        delay = policy.backoff_s(round_number, rng)
        assert ceiling / 2 <= delay <= ceiling
