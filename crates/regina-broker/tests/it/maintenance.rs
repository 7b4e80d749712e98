//! §3.13, §4.14: push and pop maintenance, cluster-wide across instances; the buffer status.

use std::time::{Duration, Instant};

use regina_testkit::{eventually, TestBroker, DEADLINE, PARKED_POP_TIMEOUT_MS};
use serde_json::json;

use crate::support::{start, start_event_driven, Api};

async fn second(b: &TestBroker) -> (TestBroker, Api) {
    let other = TestBroker::start_on(&b.database_url, |_| {}).await;
    let api = Api::new(&other);
    (other, api)
}

/// Waits until `api`'s `/health` reports `field` as `value` (the switch reaches every instance;
/// how soon is printed, not judged).
async fn health_shows(api: &Api, field: &str, value: bool) {
    let started = Instant::now();
    eventually(&format!("/health shows {field} {value}"), || async {
        let h = api.get("/health").await;
        if h.body[field] == value {
            Ok(())
        } else {
            Err(h.body)
        }
    })
    .await;
    println!("{field} {value} seen after {:?}", started.elapsed());
}

async fn set(api: &Api, path: &str, enabled: bool) -> crate::support::Reply {
    let r = api.post(path, &json!({ "enabled": enabled })).await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_maintenance_buffers_pushes_on_every_instance_until_switched_off() {
    let (a, api_a) = start_event_driven().await;
    let (_b, api_b) = second(&a).await;
    let on = set(&api_a, "/api/v1/system/maintenance", true).await;
    assert_eq!(on.body["maintenanceMode"], true);
    assert_eq!(on.body["bufferHealthy"], true);
    assert!(on.body["message"].is_string());
    health_shows(&api_b, "maintenanceMode", true).await;

    let pushed = api_b
        .push(json!([{"queue": "m", "partition": "p", "payload": 1},
                     {"queue": "m", "partition": "p", "payload": 2}]))
        .await;
    assert_eq!(pushed.status, 201, "{pushed:?}");
    assert!(pushed
        .body
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "buffered"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Drainers pause: nothing becomes visible while maintenance is on.
    api_a
        .pop("m", "autoAck=true")
        .await
        .assert_empty("queue_not_found");
    let status = api_b.get("/api/v1/system/maintenance").await;
    assert_eq!(status.status, 200, "{status:?}");
    assert_eq!(status.body["maintenanceMode"], true);
    assert_eq!(status.body["popMaintenanceMode"], false);
    assert_eq!(status.body["bufferedMessages"], 2);
    assert_eq!(status.body["bufferHealthy"], true);
    assert_eq!(status.body["bufferStats"]["pending"], 2);
    assert!(status.body["bufferStats"]["note"].is_string());
    assert_eq!(
        api_b.get("/health").await.body["failoverBuffer"]["pending"],
        2
    );

    // Only the replay can answer this pop before its timeout (no periodic re-check on a).
    let waiting = api_a.pop_in_background(
        "m",
        &format!("batch=10&wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true"),
    );
    api_a.wait_for_waiters(1).await;
    let off = set(&api_a, "/api/v1/system/maintenance", false).await;
    assert_eq!(off.body["maintenanceMode"], false);
    health_shows(&api_b, "maintenanceMode", false).await;
    let delivered = waiting.await.unwrap();
    assert_eq!(
        delivered.status, 200,
        "woken by the replay, not timed out: {delivered:?}"
    );
    let mut data = delivered.data();
    if data.len() < 2 {
        data.extend(api_a.pop("m", "batch=10&autoAck=true").await.data());
    }
    assert_eq!(
        data,
        vec![json!(1), json!(2)],
        "replayed in order: {delivered:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_maintenance_pauses_pops_everywhere_and_answers_parked_ones() {
    let (a, api_a) = start().await;
    let (_b, api_b) = second(&a).await;
    api_a.push_one("pm", "Default", json!(1)).await;
    // Parked on the other instance, far from its timeout: the switch answers it.
    let parked = api_b.pop_in_background(
        "empty",
        &format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true"),
    );
    api_b.wait_for_waiters(1).await;
    let on = set(&api_a, "/api/v1/system/maintenance/pop", true).await;
    assert_eq!(on.body["popMaintenanceMode"], true);
    assert!(on.body["message"].is_string());
    parked.await.unwrap().assert_empty("paused");
    // New pops answer at once, with messages waiting, on both instances: a pop that parked
    // would not answer before its timeout, twice the request timeout of the test client.
    let never = 2 * DEADLINE.as_millis();
    for api in [&api_a, &api_b] {
        let started = Instant::now();
        api.pop("pm", &format!("wait=true&timeout={never}"))
            .await
            .assert_empty("paused");
        println!("paused pop answered after {:?}", started.elapsed());
    }
    let got = api_b.get("/api/v1/system/maintenance/pop").await;
    assert_eq!(got.body["popMaintenanceMode"], true, "{got:?}");
    assert_eq!(api_b.get("/health").await.body["popMaintenanceMode"], true);
    // Pushes go on meanwhile.
    api_a.push_one("pm", "Default", json!(2)).await;

    set(&api_b, "/api/v1/system/maintenance/pop", false).await;
    health_shows(&api_a, "popMaintenanceMode", false).await;
    let popped = api_a.pop("pm", "batch=10&autoAck=true").await;
    assert_eq!(popped.data(), vec![json!(1), json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_instance_reads_the_switches_in_force() {
    let (a, api_a) = start().await;
    set(&api_a, "/api/v1/system/maintenance", true).await;
    set(&api_a, "/api/v1/system/maintenance/pop", true).await;
    let (_b, api_b) = second(&a).await;
    let h = api_b.get("/health").await;
    assert_eq!(h.body["maintenanceMode"], true, "{h:?}");
    assert_eq!(h.body["popMaintenanceMode"], true, "{h:?}");
    let pushed = api_b.push(json!([{"queue": "s", "payload": 1}])).await;
    assert_eq!(pushed.body[0]["status"], "buffered", "{pushed:?}");
    set(&api_a, "/api/v1/system/maintenance", false).await;
    set(&api_a, "/api/v1/system/maintenance/pop", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_maintenance_requires_a_boolean() {
    let (_b, api) = start().await;
    for path in [
        "/api/v1/system/maintenance",
        "/api/v1/system/maintenance/pop",
    ] {
        for body in [json!({}), json!({"enabled": "yes"}), json!({"enabled": 1})] {
            let r = api.post(path, &body).await;
            r.assert_error(400, "validation_failed");
            assert_eq!(r.body["error"], "enabled (boolean) is required");
        }
        api.post_raw(path, b"{")
            .await
            .assert_error(400, "invalid_json");
    }
    let h = api.get("/health").await;
    assert_eq!(h.body["maintenanceMode"], false);
    assert_eq!(h.body["popMaintenanceMode"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_status_describes_this_instance() {
    let (_b, api) = start().await;
    let r = api.get("/api/v1/status/buffers").await;
    assert_eq!(r.status, 200, "{r:?}");
    let s = &r.body;
    for key in [
        "pending",
        "failed",
        "corrupt",
        "segments",
        "bytes",
        "partitionsBlocked",
    ] {
        assert_eq!(s[key], 0, "{key}: {s}");
    }
    assert!(s["oldestAt"].is_null(), "{s}");
    assert!(s["note"].is_null(), "{s}");
    assert_eq!(s["dbHealthy"], true);
    let health = api.get("/health").await;
    assert_eq!(s["worker"], health.body["worker_id"]);
    assert_eq!(
        health.body["failoverBuffer"],
        json!({"pending": 0, "healthy": true})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_buffer_directory_refuses_pushes_that_need_it() {
    let blocker = std::env::temp_dir().join(format!(
        "regina-not-a-dir-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&blocker, b"a file where the directory should be").unwrap();
    let dir = blocker.to_string_lossy().into_owned();
    let (_b, api) = crate::support::start_with(|c| c.file_buffer_dir = dir).await;
    let h = api.get("/health").await;
    assert_eq!(h.status, 200, "the broker serves without a buffer: {h:?}");
    assert_eq!(h.body["failoverBuffer"]["healthy"], false);
    api.push_one("u", "Default", json!(1)).await;
    set(&api, "/api/v1/system/maintenance", true).await;
    let r = api.push(json!([{"queue": "u", "payload": 2}])).await;
    r.assert_error(503, "buffer_unavailable");
    assert_eq!(r.header("retry-after"), Some("1"));
    let status = api.get("/api/v1/status/buffers").await;
    assert!(status.body["note"].is_string(), "{status:?}");
    set(&api, "/api/v1/system/maintenance", false).await;
    let _ = std::fs::remove_file(&blocker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_buffer_refuses_pushes_that_need_it_and_stores_nothing() {
    let (_b, api) = crate::support::start_with(|c| c.file_buffer_bytes_max = 400).await;
    set(&api, "/api/v1/system/maintenance", true).await;
    let fits = api.push(json!([{"queue": "f", "payload": 1}])).await;
    assert_eq!(fits.body[0]["status"], "buffered", "{fits:?}");
    let items: Vec<_> = (0..5)
        .map(|n| json!({"queue": "f", "payload": n}))
        .collect();
    let r = api.push(serde_json::Value::Array(items)).await;
    r.assert_error(503, "buffer_unavailable");
    assert_eq!(r.header("retry-after"), Some("1"));
    let status = api.get("/api/v1/status/buffers").await;
    assert_eq!(
        status.body["pending"], 1,
        "the refused request left nothing: {status:?}"
    );
    set(&api, "/api/v1/system/maintenance", false).await;
    api.wait_replayed().await;
    assert_eq!(
        api.pop("f", "batch=10&autoAck=true").await.data(),
        vec![json!(1)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_that_fails_its_replay_is_set_aside_and_unblocks_its_partition() {
    let dir = std::env::temp_dir().join(format!(
        "regina-failed-records-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let buffer_dir = dir.to_string_lossy().into_owned();
    let (b, api) = crate::support::start_with(|c| c.file_buffer_dir = buffer_dir).await;
    // A rule of this database refuses one payload, as a constraint added later might.
    b.db()
        .await
        .batch_execute(
            "create function public.refuse_poison() returns trigger language plpgsql as $$
             begin
                 if new.payload::text = '\"poison\"' then
                     raise exception 'poison refused' using errcode = 'P0001';
                 end if;
                 return new;
             end $$;
             create trigger refuse_poison before insert on regina.messages
             for each row execute function public.refuse_poison();",
        )
        .await
        .unwrap();
    set(&api, "/api/v1/system/maintenance", true).await;
    let r = api
        .push(
            json!([{"queue": "x", "partition": "p", "payload": "good-1"},
                     {"queue": "x", "partition": "p", "payload": "poison"},
                     {"queue": "x", "partition": "p", "payload": "good-2"}]),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    set(&api, "/api/v1/system/maintenance", false).await;
    let status = api.wait_replayed().await;
    assert_eq!(status.body["failed"], 1, "{status:?}");
    assert_eq!(status.body["partitionsBlocked"], 0, "{status:?}");
    let popped = api.pop_partition("x", "p", "batch=10&autoAck=true").await;
    assert_eq!(popped.data(), vec![json!("good-1"), json!("good-2")]);
    let failed: String = std::fs::read_dir(dir.join("failed"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let line: serde_json::Value = serde_json::from_str(failed.trim()).unwrap();
    assert!(
        line["reason"]
            .as_str()
            .unwrap_or("")
            .contains("poison refused"),
        "{line}"
    );
    assert_eq!(line["payload"], "poison");
    assert_eq!(line["item"]["partition"], "p");
    // Direct pushes to p are stored at once again.
    assert_eq!(
        api.push(json!([{"queue": "x", "partition": "p", "payload": "after"}]))
            .await
            .body[0]["status"],
        "queued"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
