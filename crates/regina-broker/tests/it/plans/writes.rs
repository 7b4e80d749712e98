//! What a statement writes, read back from the WAL by its transaction (`pg_walinspect`): counts
//! of records do not depend on the machine's speed, and other sessions' records are told apart
//! by their transaction ids.

use tokio_postgres::Client;

use super::fresh_database;

/// Partitions pushed to and recounted.
const PARTITIONS: i64 = 300;

/// One message in each partition of queue `w`, in one push.
async fn push_each(db: &Client, round: i64) {
    db.batch_execute(&format!(
        "select count(*) from regina.push((
             select jsonb_agg(jsonb_build_object(
                        'queue', 'w', 'partition', 'p' || i, 'payload', i,
                        'transactionId', '{round}-' || i, 'messageId', gen_random_uuid()))
             from generate_series(1, {PARTITIONS}) i))"
    ))
    .await
    .unwrap();
}

/// The WAL records of transaction `xid` on relation `table` since `from`, by record type.
async fn records_on(db: &Client, from: &str, xid: &str, table: &str) -> Vec<(String, i64)> {
    let rows = db
        .query(
            "select w.record_type, count(*)
             from pg_get_wal_records_info($1::text::pg_lsn, pg_current_wal_flush_lsn()) w
             where w.xid::text = $2
               and w.block_ref ~ ('rel [0-9]+/[0-9]+/'
                                  || pg_relation_filenode($3::text::regclass) || ' ')
             group by w.record_type order by w.record_type",
            &[&from, &xid, &table],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// A recount rewrites each partition's counts in place with one record, and locks none of them
/// first: an upsert (`on conflict do update`) wrote a lock record before each update, half of the
/// WAL a stats pass wrote at 100 000 partitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recount_rewrites_each_partitions_counts_with_one_record() {
    let database = fresh_database().await;
    let db = database.connect().await;
    db.batch_execute(
        "create extension if not exists pg_walinspect;
         select regina.configure('{\"queue\": \"w\"}');
         insert into regina.subscriptions (queue_id, consumer_group, mode)
         select q.id, 'g', 'all' from regina.queues q where q.name = 'w';",
    )
    .await
    .unwrap();
    let pass = "select regina.stats_refresh_begin(clock_timestamp());
                do $$ begin while regina.stats_refresh_batch(1000) = 1000 loop end loop; end $$;
                select regina.stats_refresh_end(0);";
    push_each(&db, 1).await;
    db.batch_execute(pass).await.unwrap();
    push_each(&db, 2).await;

    // The commit waits for its flush, so the flushed WAL holds every record of the batch.
    db.batch_execute(
        "set synchronous_commit = on; select regina.stats_refresh_begin(clock_timestamp())",
    )
    .await
    .unwrap();
    let from: String = db
        .query_one("select pg_current_wal_insert_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    db.batch_execute("begin").await.unwrap();
    let xid: String = db
        .query_one("select pg_current_xact_id()::xid::text", &[])
        .await
        .unwrap()
        .get(0);
    let taken: i32 = db
        .query_one("select regina.stats_refresh_batch(1000)", &[])
        .await
        .unwrap()
        .get(0);
    db.batch_execute("commit").await.unwrap();
    assert_eq!(
        i64::from(taken),
        PARTITIONS,
        "every pushed partition recounted"
    );

    let records = records_on(&db, &from, &xid, "regina.partition_stats").await;
    assert_eq!(
        records,
        vec![("HOT_UPDATE".to_owned(), PARTITIONS)],
        "one in-place rewrite per partition and nothing else"
    );
}
