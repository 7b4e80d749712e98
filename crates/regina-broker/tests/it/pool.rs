//! The shared pool's sessions on PostgreSQL (`DB_POOL_MIN`, `DB_POOL_SIZE`): a quiet broker holds
//! few, a burst of calls opens more, never beyond the size, and what opened stays open.

use regina_testkit::{eventually, TestBroker};
use serde_json::json;

use crate::support::start_with;

/// The pool sessions of worker `worker` on the broker's database (`regina-pool-<worker>`).
async fn pool_sessions(broker: &TestBroker, worker: &str) -> i64 {
    let db = broker.db().await;
    db.query_one(
        "select count(*) from pg_stat_activity \
         where datname = current_database() and application_name = $1",
        &[&format!("regina-pool-{worker}")],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_open_on_demand_up_to_the_pool_size_and_stay_open() {
    const SIZE: usize = 8;
    let worker = format!("pool-{}", uuid::Uuid::new_v4().simple());
    let (b, api) = start_with(|c| {
        c.worker_id = Some(worker.clone());
        c.db_pool_size = SIZE;
        c.db_pool_min = 1;
        // The burst below waits on a lock for as long as the test holds it.
        c.db_lock_timeout_ms = 0;
        c.db_statement_timeout_ms = 0;
    })
    .await;

    // One request at a time: the first session serves them. (The broker's own background calls
    // may overlap one now and then and open one more; the other slots stay closed.)
    for i in 0..5 {
        api.push_one("pooled", "Default", json!(i)).await;
        assert_eq!(api.pop("pooled", "autoAck=true").await.status, 200);
        assert_eq!(api.get("/api/v1/resources/queues").await.status, 200);
    }
    let quiet = pool_sessions(&b, &worker).await;
    assert!(
        (1..=3).contains(&quiet),
        "a broker serving one request at a time holds 1 to 3 of its {SIZE} sessions: {quiet}"
    );
    let metrics = api.get("/metrics").await;
    assert_eq!(metrics.body["database"]["poolSize"], SIZE, "{metrics:?}");

    // A burst of calls that all wait on a lock: each call that finds every open session busy
    // opens one more, so 2 × SIZE calls open every slot, and no more than that.
    let mut holder = b.db().await;
    let lock = holder.transaction().await.unwrap();
    lock.batch_execute("lock table regina.queue_stats in access exclusive mode")
        .await
        .unwrap();
    let burst: Vec<_> = (0..2 * SIZE)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move { api.get("/api/v1/resources/queues").await })
        })
        .collect();
    eventually("every pool slot is opened by the burst", || async {
        let open = pool_sessions(&b, &worker).await;
        if open == SIZE as i64 {
            Ok(())
        } else {
            Err(open)
        }
    })
    .await;
    lock.rollback().await.unwrap();
    for call in burst {
        let reply = call.await.unwrap();
        assert_eq!(reply.status, 200, "{reply:?}");
    }
    assert_eq!(
        pool_sessions(&b, &worker).await,
        SIZE as i64,
        "opened sessions stay open, and there are never more than DB_POOL_SIZE"
    );
    let metrics = api.get("/metrics").await;
    assert!(
        metrics.body["database"]["idleConnections"]
            .as_u64()
            .is_some_and(|idle| idle <= SIZE as u64),
        "{metrics:?}"
    );
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimum_above_the_pool_size_stops_the_broker_at_startup() {
    let (b, _api) = crate::support::start().await;
    let config = regina_broker::Config {
        database_url: Some(b.database_url.clone()),
        db_pool_size: 2,
        db_pool_min: 3,
        ..regina_broker::Config::default()
    };
    match regina_broker::AppState::start(config).await {
        Err(regina_broker::Error::Config(message)) => {
            for name in ["DB_POOL_MIN", "DB_POOL_SIZE"] {
                assert!(message.contains(name), "{message} names {name}");
            }
        }
        Err(other) => panic!("expected a configuration error, got {other}"),
        Ok(_) => panic!("the broker started with DB_POOL_MIN above DB_POOL_SIZE"),
    }
    b.shutdown().await;
}
