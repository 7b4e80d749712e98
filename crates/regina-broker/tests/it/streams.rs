//! streams-api.md §3.1, §3.2, §3.4: query registration (the outcome table, serialised first
//! registrations), state reads and their filters, bad input, methods, scopes and the dashboard's
//! listing of queries.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::jwt::{start_auth, token, As};
use crate::support::{assert_iso, assert_uuid, start, start_with, Api, Reply};

/// `POST /streams/v1/queries`.
pub async fn register(api: &Api, name: &str, hash: &str, reset: bool) -> Reply {
    api.post(
        "/streams/v1/queries",
        &json!({"name": name, "source_queue": "src", "sink_queue": "sink",
                "config_hash": hash, "reset": reset}),
    )
    .await
}

/// Registers a new query and returns its id.
pub async fn new_query(api: &Api, name: &str) -> String {
    let r = register(api, name, "h1", false).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["fresh"], true, "{r:?}");
    r.body["query_id"].as_str().unwrap().to_owned()
}

/// `POST /streams/v1/cycle`.
pub async fn cycle(api: &Api, body: Value) -> Reply {
    api.post("/streams/v1/cycle", &body).await
}

/// `POST /streams/v1/state/get`; the rows of a successful read.
pub async fn state(api: &Api, body: Value) -> Vec<Value> {
    let r = api.post("/streams/v1/state/get", &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["success"], true, "{r:?}");
    r.body["rows"].as_array().unwrap().clone()
}

/// The keys of `rows`, in order.
pub fn keys(rows: &[Value]) -> Vec<&str> {
    rows.iter().map(|r| r["key"].as_str().unwrap()).collect()
}

/// Upserts `ops` (key, value) into a shard with an ack-less cycle.
async fn upsert(api: &Api, query_id: &str, partition_id: &str, ops: &[(&str, Value)]) {
    let ops: Vec<Value> = ops
        .iter()
        .map(|(k, v)| json!({"type": "upsert", "key": k, "value": v}))
        .collect();
    let r = cycle(
        api,
        json!({"query_id": query_id, "partition_id": partition_id, "state_ops": ops}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
}

const SHARD: &str = "0196a000-0000-7000-8000-00000000a001";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_outcomes_follow_the_table() {
    let (_b, api) = start().await;
    let id = new_query(&api, "orders-agg").await;
    assert_uuid(&json!(id));
    let r = register(&api, "orders-agg", "h1", false).await;
    assert_eq!(
        (
            r.status,
            &r.body["fresh"],
            &r.body["reset"],
            &r.body["query_id"]
        ),
        (200, &json!(false), &json!(false), &json!(id)),
        "same hash: {r:?}"
    );
    assert_eq!(r.body["name"], "orders-agg");
    assert_eq!(r.body["config_hash"], "h1");
    upsert(&api, &id, SHARD, &[("k", json!({"n": 1}))]).await;
    let shard = json!({"query_id": id, "partition_id": SHARD});

    // reset with an equal hash keeps the state (§6.11)
    let r = register(&api, "orders-agg", "h1", true).await;
    assert_eq!(
        (r.body["fresh"].clone(), r.body["reset"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(state(&api, shard.clone()).await.len(), 1);

    // a changed hash without reset: 409, nothing changes
    let r = register(&api, "orders-agg", "h2", false).await;
    r.assert_error(409, "config_hash_mismatch");
    assert_eq!(r.body["success"], false);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("config_hash mismatch"),
        "{r:?}"
    );
    assert!(r.body["error"].as_str().unwrap().contains("'orders-agg'"));
    assert_eq!(
        (r.body["query_id"].clone(), r.body["name"].clone()),
        (json!(id), json!("orders-agg"))
    );
    assert_eq!(state(&api, shard.clone()).await.len(), 1);
    assert_eq!(
        register(&api, "orders-agg", "h1", false).await.status,
        200,
        "hash unchanged"
    );

    // a changed hash with reset: state wiped, same id, new hash stored
    let r = register(&api, "orders-agg", "h2", true).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (&r.body["fresh"], &r.body["reset"], &r.body["query_id"]),
        (&json!(false), &json!(true), &json!(id))
    );
    assert!(state(&api, shard).await.is_empty(), "reset wipes the state");
    assert_eq!(register(&api, "orders-agg", "h2", false).await.status, 200);

    // reset on a new name is a plain creation
    let r = register(&api, "other", "h1", true).await;
    assert_eq!(
        (r.body["fresh"].clone(), r.body["reset"].clone()),
        (json!(true), json!(false))
    );
    assert_ne!(r.body["query_id"], json!(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_registrations_yield_exactly_one_fresh() {
    let (_b, api) = start().await;
    const CALLERS: usize = 12;
    let barrier = Arc::new(Barrier::new(CALLERS));
    let mut tasks = Vec::new();
    for i in 0..CALLERS {
        let (api, barrier) = (api.clone(), barrier.clone());
        // Two shapes race: whichever registers first decides, the other shape is refused.
        let hash = if i % 2 == 0 { "even" } else { "odd" };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            (hash, register(&api, "race", hash, false).await)
        }));
    }
    let mut replies = Vec::new();
    for task in tasks {
        replies.push(task.await.unwrap());
    }
    let fresh: Vec<_> = replies
        .iter()
        .filter(|(_, r)| r.body["fresh"] == true)
        .collect();
    assert_eq!(fresh.len(), 1, "{replies:?}");
    let (winner, first) = fresh[0];
    for (hash, r) in &replies {
        assert_eq!(r.body["query_id"], first.body["query_id"], "{r:?}");
        if hash == winner {
            assert_eq!(r.status, 200, "{r:?}");
        } else {
            r.assert_error(409, "config_hash_mismatch");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_reads_filter_by_keys_literal_prefix_and_numeric_window_end() {
    let (_b, api) = start().await;
    let id = new_query(&api, "windows").await;
    upsert(
        &api,
        &id,
        SHARD,
        &[
            ("a%_1", json!({"windowEnd": 1000})),
            ("aXY2", json!({"windowEnd": 500})),
            ("a%_3", json!({"windowEnd": 1000.5})),
            ("a%_4", json!({"windowEnd": "900"})),
            ("a%_5", json!([1, 2])),
            ("é", json!(null)),
            ("B", json!("text")),
            ("", json!(0)),
        ],
    )
    .await;
    let shard = |extra: Value| {
        let mut body = json!({"query_id": id, "partition_id": SHARD});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    // everything, in UTF-8 byte order, with values as stored and updated_at
    let all = state(&api, shard(json!({}))).await;
    assert_eq!(
        keys(&all),
        ["", "B", "a%_1", "a%_3", "a%_4", "a%_5", "aXY2", "é"]
    );
    assert_eq!(all[7]["value"], Value::Null);
    assert_eq!(all[1]["value"], "text");
    assert_iso(&all[0]["updated_at"], 3);
    for empty in [
        json!({"keys": []}),
        json!({"keys": null, "key_prefix": null}),
    ] {
        assert_eq!(state(&api, shard(empty)).await.len(), 8);
    }

    // `%` and `_` are literal: aXY2 does not match the prefix a%_
    let rows = state(&api, shard(json!({"key_prefix": "a%_"}))).await;
    assert_eq!(keys(&rows), ["a%_1", "a%_3", "a%_4", "a%_5"]);
    assert_eq!(state(&api, shard(json!({"key_prefix": ""}))).await.len(), 8);

    // numeric windowEnd ≤ bound; strings, arrays and scalars never match
    let rows = state(&api, shard(json!({"ripe_at_or_before": 1000}))).await;
    assert_eq!(keys(&rows), ["a%_1", "aXY2"]);
    let rows = state(&api, shard(json!({"ripe_at_or_before": 1000.5}))).await;
    assert_eq!(keys(&rows), ["a%_1", "a%_3", "aXY2"]);
    let rows = state(&api, shard(json!({"ripe_at_or_before": 999.999}))).await;
    assert_eq!(keys(&rows), ["aXY2"]);

    // filters combine with AND
    let rows = state(
        &api,
        shard(json!({"keys": ["a%_1", "aXY2", "missing"], "key_prefix": "a%", "ripe_at_or_before": 2e3})),
    )
    .await;
    assert_eq!(keys(&rows), ["a%_1"]);
    let rows = state(&api, shard(json!({"keys": ["", "é", "nope"]}))).await;
    assert_eq!(keys(&rows), ["", "é"]);

    // unknown query or partition: no rows
    let unknown = "0196a000-0000-7000-8000-00000000dead";
    assert!(
        state(&api, json!({"query_id": unknown, "partition_id": SHARD}))
            .await
            .is_empty()
    );
    assert!(
        state(&api, json!({"query_id": id, "partition_id": unknown}))
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_4xx_with_a_code_and_success_false() {
    let (_b, api) = start_with(|c| c.streams_state_keys_max = 2).await;
    let id = new_query(&api, "strict").await;
    let get = |body: Value| {
        let api = api.clone();
        async move { api.post("/streams/v1/state/get", &body).await }
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"partition_id": SHARD}),
            "validation_failed",
            "query_id is required",
        ),
        (
            json!({"query_id": 5, "partition_id": SHARD}),
            "validation_failed",
            "query_id is required",
        ),
        (
            json!({"query_id": "nope", "partition_id": SHARD}),
            "validation_failed",
            "query_id must be a UUID",
        ),
        (
            json!({"query_id": id}),
            "validation_failed",
            "partition_id is required",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "keys": "a"}),
            "validation_failed",
            "keys must be an array",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "keys": ["a", 1]}),
            "validation_failed",
            "keys[1]",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "keys": ["a", "b", "c"]}),
            "too_many_items",
            "keys",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "keys": ["x".repeat(1025)]}),
            "validation_failed",
            "1024 bytes",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "key_prefix": "a\u{0}"}),
            "validation_failed",
            "NUL",
        ),
        (
            json!({"query_id": id, "partition_id": SHARD, "ripe_at_or_before": "5"}),
            "validation_failed",
            "must be a number",
        ),
    ];
    for (body, code, text) in cases {
        let r = get(body.clone()).await;
        r.assert_error(400, code);
        assert_eq!(r.body["success"], false, "{r:?}");
        assert!(
            r.body["error"].as_str().unwrap().contains(text),
            "{body}: {r:?}"
        );
    }
    let r = api.post_raw("/streams/v1/state/get", b"[1]").await;
    r.assert_error(400, "validation_failed");
    assert_eq!(r.body["success"], false);
    let r = api.post_raw("/streams/v1/queries", b"{").await;
    r.assert_error(400, "invalid_json");
    assert_eq!(r.body["success"], false);

    let register_cases: Vec<(Value, &str)> = vec![
        (
            json!({"source_queue": "s", "config_hash": "h"}),
            "name is required",
        ),
        (
            json!({"name": "n", "config_hash": "h"}),
            "source_queue is required",
        ),
        (
            json!({"name": "n", "source_queue": "s"}),
            "config_hash is required",
        ),
        (
            json!({"name": "n", "source_queue": "s", "config_hash": "h".repeat(256)}),
            "at most 255",
        ),
        (
            json!({"name": "n\u{1}", "source_queue": "s", "config_hash": "h"}),
            "control characters",
        ),
        (
            json!({"name": "n", "source_queue": "s", "config_hash": "h", "reset": "true"}),
            "reset must be a boolean",
        ),
        (
            json!({"name": "n", "source_queue": "s", "sink_queue": 3, "config_hash": "h"}),
            "sink_queue must be a string",
        ),
    ];
    for (body, text) in register_cases {
        let r = api.post("/streams/v1/queries", &body).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["success"], false, "{r:?}");
        assert!(
            r.body["error"].as_str().unwrap().contains(text),
            "{body}: {r:?}"
        );
    }
    // nothing was registered by the refused requests
    assert_eq!(api.get("/api/v1/resources/streams").await.body["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_methods_answer_405_and_other_paths_404() {
    let (_b, api) = start().await;
    for path in [
        "/streams/v1/queries",
        "/streams/v1/cycle",
        "/streams/v1/state/get",
    ] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let r = api.send(method.clone(), path, None, &[]).await;
            r.assert_error(405, "method_not_allowed");
            assert_eq!(r.header("allow"), Some("POST, OPTIONS"), "{method} {path}");
            assert_eq!(r.body["success"], false);
        }
    }
    api.post("/streams/v1/queries/list", &json!({}))
        .await
        .assert_error(404, "route_not_found");
    api.post("/streams/v2/cycle", &json!({}))
        .await
        .assert_error(404, "route_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_scopes_cover_source_sink_and_every_pushed_queue() {
    let (_b, api) = start_auth(|_| {}).await;
    let root = As {
        api: api.clone(),
        token: token(Some("root"), "admin", None),
    };
    let scoped = As {
        api,
        token: token(Some("team"), "read-write", Some(json!(["team.*"]))),
    };
    let body = |name: &str, source: &str, sink: &str| json!({"name": name, "source_queue": source, "sink_queue": sink, "config_hash": "h"});
    let r = scoped
        .post("/streams/v1/queries", body("a", "other", "team.out"))
        .await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["success"], false);
    scoped
        .post("/streams/v1/queries", body("b", "team.in", "other"))
        .await
        .assert_error(403, "forbidden");
    let r = scoped
        .post("/streams/v1/queries", body("c", "team.in", "team.out"))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let mine = r.body["query_id"].clone();
    let r = root
        .post("/streams/v1/queries", body("d", "other", "other"))
        .await;
    let theirs = r.body["query_id"].clone();

    let shard = |id: &Value| json!({"query_id": id, "partition_id": SHARD});
    assert_eq!(
        scoped
            .post("/streams/v1/state/get", shard(&mine))
            .await
            .status,
        200
    );
    scoped
        .post("/streams/v1/state/get", shard(&theirs))
        .await
        .assert_error(403, "forbidden");
    scoped
        .post("/streams/v1/cycle", shard(&theirs))
        .await
        .assert_error(403, "forbidden");
    let mut pushing = shard(&mine);
    pushing["push_items"] = json!([{"queue": "team.out"}, {"queue": "other"}]);
    let r = scoped.post("/streams/v1/cycle", pushing.clone()).await;
    r.assert_error(403, "forbidden");
    assert_eq!(
        (r.body["success"].clone(), r.body["ack_result"].clone()),
        (json!(false), Value::Null)
    );
    pushing["push_items"] = json!([{"queue": "team.out"}]);
    assert_eq!(scoped.post("/streams/v1/cycle", pushing).await.status, 200);
    let unknown =
        json!({"query_id": "0196a000-0000-7000-8000-00000000dead", "partition_id": SHARD});
    scoped
        .post("/streams/v1/cycle", unknown)
        .await
        .assert_error(404, "query_not_found");

    // the listing leaves out queries on other source queues
    let listed = scoped.get("/api/v1/resources/streams").await;
    let names: Vec<&str> = listed.body["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c"], "{listed:?}");
    assert_eq!(root.get("/api/v1/resources/streams").await.body["total"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_shows_state_size_and_the_last_cycle() {
    let (_b, api) = start().await;
    let id = new_query(&api, "b-listed").await;
    new_query(&api, "a-idle").await;
    upsert(
        &api,
        &id,
        SHARD,
        &[("k1", json!({"acc": 1})), ("k2", json!({"acc": 2}))],
    )
    .await;
    let r = api.get("/api/v1/resources/streams?limit=1&offset=1").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (
            r.body["total"].clone(),
            r.body["limit"].clone(),
            r.body["offset"].clone()
        ),
        (json!(2), json!(1), json!(1))
    );
    let q = &r.body["queries"][0];
    assert_eq!(q["name"], "b-listed");
    assert_eq!(q["queryId"], json!(id));
    assert_eq!(
        (q["sourceQueue"].clone(), q["sinkQueue"].clone()),
        (json!("src"), json!("sink"))
    );
    assert_eq!(
        (
            q["stateRows"].clone(),
            q["shards"].clone(),
            q["cycles"].clone()
        ),
        (json!(2), json!(1), json!(1))
    );
    assert!(q["stateBytes"].as_i64().unwrap() > 4, "{q}");
    assert_iso(&q["lastCycleAt"], 3);
    let idle = &api.get("/api/v1/resources/streams").await.body["queries"][0];
    assert_eq!(
        (
            idle["name"].clone(),
            idle["lastCycleAt"].clone(),
            idle["stateRows"].clone()
        ),
        (json!("a-idle"), Value::Null, json!(0))
    );
    api.get("/api/v1/resources/streams?limit=0")
        .await
        .assert_error(400, "invalid_parameter");
    api.get("/api/v1/resources/streams?limit=1001")
        .await
        .assert_error(400, "invalid_parameter");
}
