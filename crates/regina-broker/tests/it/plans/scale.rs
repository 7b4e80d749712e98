//! At 100 000 partitions, every leader pass works in statements of bounded size and converges,
//! and a pop asking for 1 000 partitions stays bounded. Bounds are rows handled by plan nodes
//! (read through `auto_explain`), never durations; convergence is counted in calls.

use tokio_postgres::Client;

use super::probe::{CallWork, PlanProbe};
use super::{fresh_database, ANALYZE_FILLED};

/// Partitions in all: half under retention, half under eviction.
const PARTITIONS: i64 = 100_000;
/// Messages a deletion job deletes per call (the default `RETENTION_BATCH_SIZE`).
const JOB_LIMIT: i64 = 1_000;
/// Partitions a stats pass compares with their counts.
const STATS_WINDOW: i64 = 10_000;
/// Partitions the overload pop asks for (`POP_PARTITIONS_MAX`).
const POP_PARTITIONS: i64 = 1_000;

/// Two queues of 50 000 partitions, one two-day-old message each, a subscribed group with
/// work everywhere: `kept` deletes by retention (1 day), `evicted` by eviction (1 day).
const SEED: &str = "
    select regina.configure('{\"queue\": \"kept\", \"options\": {\"retentionSeconds\": 86400}}');
    select regina.configure('{\"queue\": \"evicted\", \"options\": {\"maxWaitTimeSeconds\": 86400}}');
    insert into regina.subscriptions (queue_id, consumer_group, mode)
    select q.id, 'g', 'all' from regina.queues q;
    insert into regina.partitions (queue_id, name, next_seq, last_created_at, last_push_at,
                                   created_at)
    select q.id, 'device-' || i, 1, now() - interval '2 days', now() - interval '2 days',
           now() - interval '2 days'
    from regina.queues q, generate_series(1, 50000) i;
    insert into regina.messages (partition_id, seq, id, transaction_id, created_at, payload)
    select p.id, 0, gen_random_uuid(), 'm-' || p.id, now() - interval '2 days', '{}'
    from regina.partitions p where p.next_seq = 1;
    insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
    select p.id, 'g', p.queue_id, now() - interval '2 days'
    from regina.partitions p where p.next_seq = 1";

#[track_caller]
fn assert_rows_within(what: &str, work: &CallWork, bound: f64) {
    let busiest = work.busiest();
    assert!(
        busiest.rows <= bound,
        "{what}: a node handled {} rows (bound {bound}): {}",
        busiest.rows,
        busiest.label
    );
}

async fn count(db: &Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).await.unwrap().get(0)
}

/// Calls `sql` (a deletion job) until its scan reports no more; the number of calls.
async fn until_done(db: &Client, sql: &str, calls_max: i64) -> i64 {
    for call in 1..=calls_max {
        let rows = db.query(sql, &[]).await.unwrap();
        if !rows.iter().any(|row| row.get::<_, bool>("more")) {
            return call;
        }
    }
    panic!("`{sql}` still had more after {calls_max} calls");
}

async fn stats_pass(db: &Client) {
    db.batch_execute(&format!(
        "select regina.stats_refresh_begin(clock_timestamp(), {STATS_WINDOW});
         do $$ begin while regina.stats_refresh_batch(1000) = 1000 loop end loop; end $$;
         select regina.stats_refresh_end(0);"
    ))
    .await
    .unwrap();
}

async fn queue_total(db: &Client, queue: &str) -> i64 {
    count(
        db,
        &format!(
            "select coalesce((select s.total from regina.queue_stats s
                              join regina.queues q on q.id = s.queue_id
                              where q.name = '{queue}'), 0)"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_passes_and_a_wide_pop_stay_bounded_at_100_000_partitions() {
    let database = fresh_database().await;
    let mut probe = PlanProbe::connect(database.url()).await;
    probe.setup(SEED).await;
    probe.setup(ANALYZE_FILLED).await;
    let db = database.connect().await;

    // Stats: the first pass recounts every partition with work (their ready rows all moved since
    // a pass that never ran), in batches; a later pass compares one window of partitions.
    let passes_max = PARTITIONS / STATS_WINDOW + 2;
    let mut passes = 0;
    while queue_total(&db, "kept").await + queue_total(&db, "evicted").await < PARTITIONS {
        passes += 1;
        assert!(
            passes <= passes_max,
            "stats did not converge in {passes_max} passes"
        );
        stats_pass(&db).await;
    }
    let work = probe
        .measure(&format!(
            "select regina.stats_refresh_begin(clock_timestamp(), {STATS_WINDOW})"
        ))
        .await;
    assert_rows_within("stats begin", &work, 4.0 * STATS_WINDOW as f64 + 1_000.0);
    db.batch_execute("select regina.stats_refresh_end(0)")
        .await
        .unwrap();

    // A pop of the group over every partition, asking for 1 000 of them at once.
    let pop = format!(
        "select count(*) from regina.pop('[{{\"queue\": \"kept\", \"consumerGroup\": \"g\",
             \"batch\": 10000, \"partitions\": {POP_PARTITIONS},
             \"leaseId\": \"00000000-0000-4000-8000-000000000001\"}}]')"
    );
    let work = probe.measure(&pop).await;
    assert_rows_within("wide pop", &work, 8.0 * POP_PARTITIONS as f64 + 200.0);
    let leased = count(
        &db,
        "select count(*) from regina.cursors where lease_active",
    )
    .await;
    assert_eq!(
        leased, POP_PARTITIONS,
        "the pop claims {POP_PARTITIONS} partitions"
    );

    // Retention and eviction: bounded calls until their scans went round; leased messages stay.
    let retention = format!(
        "select * from regina.retention_run({JOB_LIMIT}, clock_timestamp() + interval '1 hour')"
    );
    let work = probe.measure(&retention).await;
    assert_rows_within("retention", &work, 10.0 * JOB_LIMIT as f64 + 1_000.0);
    until_done(&db, &retention, PARTITIONS).await;
    let eviction = format!(
        "select * from regina.eviction_run({JOB_LIMIT}, clock_timestamp() + interval '1 hour')"
    );
    let work = probe.measure(&eviction).await;
    assert_rows_within("eviction", &work, 10.0 * JOB_LIMIT as f64 + 1_000.0);
    until_done(&db, &eviction, PARTITIONS).await;
    let messages = count(&db, "select count(*) from regina.messages").await;
    assert_eq!(
        messages, POP_PARTITIONS,
        "only the leased messages are left"
    );

    // Partition cleanup: every empty partition goes, in bounded calls.
    let cleanup = format!(
        "select * from regina.partition_cleanup(1, {JOB_LIMIT}, clock_timestamp() + interval '2 days')"
    );
    let work = probe.measure(&cleanup).await;
    assert_rows_within(
        "partition cleanup",
        &work,
        10.0 * JOB_LIMIT as f64 + 1_000.0,
    );
    until_done(&db, &cleanup, PARTITIONS).await;
    let partitions = count(&db, "select count(*) from regina.partitions").await;
    // The leased partitions keep their message; the rest, `Default` ones included, are empty.
    assert_eq!(partitions, POP_PARTITIONS);

    // The stats follow: deleted partitions are recounted from the trigger's records.
    stats_pass(&db).await;
    assert_eq!(queue_total(&db, "kept").await, POP_PARTITIONS);
    assert_eq!(queue_total(&db, "evicted").await, 0);
}
