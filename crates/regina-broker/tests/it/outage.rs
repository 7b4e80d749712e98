//! §4.14, invariant 1: PostgreSQL stops under load and starts again. Each test runs its own
//! private cluster (the shared test cluster is never stopped: other tests use it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regina_devdb::{DevDb, DevDbOptions};
use regina_testkit::{eventually, wait_until, TestBroker, DEADLINE, PARKED_POP_TIMEOUT_MS};
use serde_json::{json, Value};

use crate::support::{assert_uuid_v7, Api};

/// A PostgreSQL cluster of one test, in a temp directory, deleted when dropped.
struct PrivateCluster {
    handle: Arc<DevDb>,
    options: DevDbOptions,
}

impl PrivateCluster {
    async fn start() -> PrivateCluster {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let options = DevDbOptions {
            data_dir: std::env::temp_dir()
                .join(format!("regina-outage-{}", uuid::Uuid::new_v4().simple())),
            port,
            fast_unsafe: true,
            memory: false,
        };
        let handle = Arc::new(Self::run(options.clone()).await);
        handle
            .database_create_if_missing("regina")
            .await
            .expect("create the database");
        PrivateCluster { handle, options }
    }

    async fn run(options: DevDbOptions) -> DevDb {
        tokio::task::spawn_blocking(move || DevDb::start(options))
            .await
            .expect("start task")
            .unwrap_or_else(|e| panic!("private cluster: {e}"))
    }

    fn url(&self) -> String {
        self.handle.database_url("regina")
    }

    /// `pg_ctl stop -m fast`: every session is cut, in-flight transactions roll back.
    async fn stop(&self) {
        let handle = self.handle.clone();
        tokio::task::spawn_blocking(move || handle.stop())
            .await
            .expect("stop task")
            .unwrap_or_else(|e| panic!("stop the private cluster: {e}"));
    }

    /// Starts the stopped cluster again, on the same port.
    async fn restart(&self) {
        Self::run(self.options.clone()).await;
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self.handle.stop();
        let _ = std::fs::remove_dir_all(self.handle.data_dir());
    }
}

async fn broker_on(
    cluster: &PrivateCluster,
    f: impl FnOnce(&mut regina_broker::Config),
) -> (TestBroker, Api) {
    let broker = TestBroker::start_on(&cluster.url(), f).await;
    let api = Api::new(&broker);
    (broker, api)
}

/// Every stored message of `queue` as (partition, seq) in offset order, read from the database.
async fn stored(broker: &TestBroker, queue: &str) -> BTreeMap<String, Vec<i64>> {
    let db = broker.db().await;
    let rows = db
        .query(
            "select p.name, (m.payload::jsonb ->> 'seq')::bigint from regina.messages m \
             join regina.partitions p on p.id = m.partition_id \
             join regina.queues q on q.id = p.queue_id \
             where q.name = $1 order by p.name, m.seq",
            &[&queue],
        )
        .await
        .expect("read messages");
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in rows {
        out.entry(row.get(0)).or_default().push(row.get(1));
    }
    out
}

/// Acknowledged sequence numbers per partition, written by producers.
type Acked = Arc<Mutex<BTreeMap<String, Vec<i64>>>>;

/// How many pushes each partition has had acknowledged so far.
fn ack_counts(acked: &Acked) -> BTreeMap<String, usize> {
    acked
        .lock()
        .unwrap()
        .iter()
        .map(|(p, seqs)| (p.clone(), seqs.len()))
        .collect()
}

/// Waits until every one of the `partitions` producer partitions has more acknowledged pushes
/// than in `before`: the producers got work through, whatever the machine's speed.
async fn acks_advance(
    acked: &Acked,
    partitions: usize,
    before: &BTreeMap<String, usize>,
    what: &str,
) {
    wait_until(what, || {
        let now = ack_counts(acked);
        let advanced = now.len() == partitions
            && now
                .iter()
                .all(|(p, n)| *n > before.get(p).copied().unwrap_or(0));
        async move { advanced }
    })
    .await;
}

/// Pushes `{p, seq}` to its own partitions, one item per partition per request, until stopped;
/// records what was acknowledged (`201`). Returns how many requests were refused (`503`).
async fn produce(api: Api, partitions: Vec<String>, acked: Acked, stop: Arc<AtomicBool>) -> usize {
    let mut refused = 0;
    for seq in 0..5_000_i64 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let items: Vec<Value> = partitions
            .iter()
            .map(|p| json!({"queue": "load", "partition": p, "payload": {"p": p, "seq": seq}}))
            .collect();
        let r = api.push(Value::Array(items)).await;
        match r.status {
            201 => {
                let mut acked = acked.lock().unwrap();
                for (p, entry) in partitions.iter().zip(r.body.as_array().unwrap()) {
                    let status = entry["status"].as_str().unwrap_or("");
                    assert!(
                        ["queued", "buffered", "duplicate"].contains(&status),
                        "{entry}"
                    );
                    acked.entry(p.clone()).or_default().push(seq);
                }
            }
            503 => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("unexpected push answer {other}: {r:?}"),
        }
    }
    refused
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_pushes_survive_an_outage_in_partition_order() {
    let cluster = PrivateCluster::start().await;
    let (broker, api) = broker_on(&cluster, |c| c.file_buffer_flush_ms = 50).await;
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    // A consumer parked before the outage, on a partition nobody else writes.
    let parked = {
        let api = api.clone();
        tokio::spawn(async move {
            let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true");
            api.pop_partition("load", "late", &query).await
        })
    };
    api.wait_for_waiters(1).await;
    let producers: Vec<_> = (0..2)
        .map(|n| {
            let partitions = vec![format!("p{n}a"), format!("p{n}b")];
            tokio::spawn(produce(
                api.clone(),
                partitions,
                acked.clone(),
                stop.clone(),
            ))
        })
        .collect();
    acks_advance(
        &acked,
        4,
        &BTreeMap::new(),
        "every producer's pushes are stored",
    )
    .await;

    cluster.stop().await;
    let down_at = ack_counts(&acked);
    let started = Instant::now();
    let health = api.get("/health").await;
    println!(
        "health answered after {:?} with the database down",
        started.elapsed()
    );
    assert_eq!(health.status, 503, "{health:?}");
    assert_eq!(health.body["database"], "disconnected");
    assert!(
        health.body["failoverBuffer"]["healthy"] == true,
        "{health:?}"
    );
    for r in [
        api.pop("load", "").await,
        api.ack(
            json!({"transactionId": "t", "partitionId": "0196a1b2-0000-7000-8000-000000000001"}),
        )
        .await,
        api.extend("0196a1b2-0000-7000-8000-000000000001", json!({}))
            .await,
        api.post("/api/v1/configure", &json!({"queue": "other"}))
            .await,
    ] {
        r.assert_error(503, "database_unavailable");
        assert_eq!(r.header("retry-after"), Some("1"), "{r:?}");
    }
    let pushed_late = api
        .push(json!([{"queue": "load", "partition": "late", "payload": {"p": "late", "seq": 0}}]))
        .await;
    assert_eq!(pushed_late.status, 201, "{pushed_late:?}");
    assert_eq!(pushed_late.body[0]["status"], "buffered");
    acks_advance(&acked, 4, &down_at, "every producer's pushes are buffered").await;
    let during = api.get("/api/v1/status/buffers").await;
    assert!(
        during.body["pending"].as_u64().unwrap_or(0) > 0,
        "{during:?}"
    );
    assert_eq!(during.body["dbHealthy"], false);
    if parked.is_finished() {
        let answer = parked.await.unwrap();
        panic!("a parked pop keeps waiting through the outage; it answered {answer:?}");
    }

    cluster.restart().await;
    let up_at = ack_counts(&acked);
    acks_advance(&acked, 4, &up_at, "every producer pushes after the restart").await;
    stop.store(true, Ordering::Relaxed);
    let mut refused = 0;
    for producer in producers {
        refused += producer.await.unwrap();
    }
    api.wait_healthy().await;
    api.wait_replayed().await;

    let resumed = parked.await.unwrap();
    assert_eq!(
        resumed.status, 200,
        "the parked consumer resumed: {resumed:?}"
    );
    assert_eq!(resumed.data(), vec![json!({"p": "late", "seq": 0})]);

    let stored = stored(&broker, "load").await;
    let acked = acked.lock().unwrap().clone();
    let replayed = during.body["pending"].clone();
    println!(
        "acknowledged per partition: {:?}; buffered at mid-outage: {replayed}; refused requests: {refused}",
        acked.values().map(Vec::len).collect::<Vec<_>>()
    );
    assert_eq!(
        acked.len(),
        4,
        "every producer partition acknowledged pushes"
    );
    for (partition, seqs) in &acked {
        let kept = stored.get(partition).cloned().unwrap_or_default();
        assert!(
            kept.windows(2).all(|w| w[0] < w[1]),
            "{partition}: stored out of order or doubled: {kept:?}"
        );
        let missing: Vec<_> = seqs.iter().filter(|s| !kept.contains(s)).collect();
        assert!(
            missing.is_empty(),
            "{partition}: acknowledged pushes lost: {missing:?}"
        );
    }
    let buffers = api.get("/api/v1/status/buffers").await;
    assert_eq!(buffers.body["failed"], 0, "{buffers:?}");
    assert_eq!(buffers.body["corrupt"], 0, "{buffers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_pushes_queue_behind_buffered_records_of_their_partition() {
    let cluster = PrivateCluster::start().await;
    // Replay only when told (startup, maintenance off): the test decides when it happens.
    let (_broker, api) = broker_on(&cluster, |c| c.file_buffer_flush_ms = 3_600_000).await;
    api.push_one("o", "p", json!("a1")).await;

    cluster.stop().await;
    let r = api
        .push(json!([{"queue": "o", "partition": "p", "payload": "a2", "transactionId": "k-2"}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let entry = &r.body[0];
    assert_eq!(entry["status"], "buffered");
    assert_eq!(entry["index"], 0);
    assert_eq!(entry["transaction_id"], "k-2");
    assert_eq!(entry["queue"], "o");
    assert_eq!(entry["queueName"], "o");
    assert_eq!(entry["partition"], "p");
    assert_uuid_v7(&entry["message_id"]);

    cluster.restart().await;
    api.wait_healthy().await;
    // PostgreSQL answers again, but p has a buffered record: its new push queues behind it,
    // while the same request's item for q is stored at once.
    let split = api
        .push(json!([{"queue": "o", "partition": "p", "payload": "a3"},
                     {"queue": "o", "partition": "q", "payload": "b1"}]))
        .await;
    assert_eq!(split.status, 201, "{split:?}");
    assert_eq!(split.body[0]["status"], "buffered", "{split:?}");
    assert_eq!(split.body[1]["status"], "queued", "{split:?}");
    let buffers = api.get("/api/v1/status/buffers").await;
    assert_eq!(buffers.body["pending"], 2, "{buffers:?}");
    assert_eq!(buffers.body["partitionsBlocked"], 1, "{buffers:?}");

    let first = api.pop_partition("o", "p", "batch=10&autoAck=true").await;
    assert_eq!(
        first.data(),
        vec![json!("a1")],
        "buffered records are not visible yet"
    );
    assert_eq!(
        api.pop_partition("o", "q", "autoAck=true").await.data(),
        vec![json!("b1")]
    );
    let waiting = {
        let api = api.clone();
        tokio::spawn(async move {
            let query = format!("batch=10&wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true");
            api.pop_partition("o", "p", &query).await
        })
    };
    api.wait_for_waiters(1).await;
    // Switching push maintenance off wakes the drainer.
    for enabled in [true, false] {
        let r = api
            .post("/api/v1/system/maintenance", &json!({"enabled": enabled}))
            .await;
        assert_eq!(r.status, 200, "{r:?}");
    }
    let replayed = waiting.await.unwrap();
    let mut data = replayed.data();
    if data.len() < 2 {
        let more = api.pop_partition("o", "p", "batch=10&autoAck=true").await;
        data.extend(more.data());
    }
    assert_eq!(data, vec![json!("a2"), json!("a3")], "{replayed:?}");
    let ids: Vec<_> = replayed
        .messages()
        .iter()
        .map(|m| m["transactionId"].clone())
        .collect();
    assert_eq!(ids[0], "k-2", "replay keeps the transaction id");
    api.wait_replayed().await;
    // The writer deletes a replayed segment right after the replay is recorded.
    eventually("replayed segments are deleted", || async {
        let buffers = api.get("/api/v1/status/buffers").await;
        if buffers.body["segments"] == 0 {
            Ok(())
        } else {
            Err(buffers)
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_broker_replays_what_it_buffered_before_it_stopped() {
    let cluster = PrivateCluster::start().await;
    let buffer_dir: PathBuf = std::env::temp_dir().join(format!(
        "regina-outage-buffer-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let dir = buffer_dir.to_string_lossy().into_owned();
    let (first, api) = broker_on(&cluster, |c| c.file_buffer_dir = dir.clone()).await;
    cluster.stop().await;
    let r = api
        .push(json!([{"queue": "r", "partition": "p", "payload": 1},
                     {"queue": "r", "partition": "p", "payload": 2},
                     {"queue": "r", "partition": "p", "payload": 3}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    assert!(r
        .body
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "buffered"));
    let health = api.get("/health").await;
    assert_eq!(health.body["failoverBuffer"]["pending"], 3, "{health:?}");
    // Shutdown ends with the database down (its grace period bounds it): no hang.
    let stopping = Instant::now();
    tokio::time::timeout(DEADLINE, first.shutdown())
        .await
        .expect("shutdown with the database down ended");
    println!(
        "shutdown with the database down took {:?}",
        stopping.elapsed()
    );

    cluster.restart().await;
    let (_second, api) = broker_on(&cluster, |c| c.file_buffer_dir = dir.clone()).await;
    api.wait_replayed().await;
    let popped = api.pop("r", "batch=10&autoAck=true").await;
    assert_eq!(popped.data(), vec![json!(1), json!(2), json!(3)]);
    let _ = std::fs::remove_dir_all(&buffer_dir);
}

/// streams-api.md §3.3: a cycle is never diverted to the failover buffer. With PostgreSQL down it
/// answers `503 database_unavailable` (the SDKs retry it), while a plain push is buffered; none
/// of the cycle's sink items ever reaches the sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_is_never_buffered_and_answers_503_while_the_database_is_down() {
    let cluster = PrivateCluster::start().await;
    let (_broker, api) = broker_on(&cluster, |_| {}).await;
    let registered = api
        .post(
            "/streams/v1/queries",
            &json!({"name": "q", "source_queue": "src", "config_hash": "h"}),
        )
        .await;
    assert_eq!(registered.status, 200, "{registered:?}");
    let cycle = json!({"query_id": registered.body["query_id"],
                       "partition_id": "0196a1b2-0000-7000-8000-000000000001",
                       "state_ops": [{"type": "upsert", "key": "k", "value": 1}],
                       "push_items": [{"queue": "sink", "payload": "from-cycle"}]});

    cluster.stop().await;
    let r = api.post("/streams/v1/cycle", &cycle).await;
    r.assert_error(503, "database_unavailable");
    assert_eq!(r.header("retry-after"), Some("1"), "{r:?}");
    assert_eq!(r.body["success"], false);
    let pushed = api
        .push(json!([{"queue": "sink", "payload": "from-push"}]))
        .await;
    assert_eq!(pushed.body[0]["status"], "buffered", "{pushed:?}");

    cluster.restart().await;
    api.wait_healthy().await;
    api.wait_replayed().await;
    let r = api
        .pop("sink", "consumerGroup=reader&batch=10&autoAck=true")
        .await;
    assert_eq!(r.data(), vec![json!("from-push")], "{r:?}");
}
