//! The SQL-level tests of `sql/tests/` (each on a fresh database), idempotent installation, and the
//! storage settings of hot tables, checked by what a vacuum does to them.

use std::path::PathBuf;

use regina_testkit::TestBroker;

fn sql_tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sql/tests")
}

/// The helpers of `sql/tests/helpers/` (session-local `pg_temp` functions), run before each file.
fn sql_helpers() -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sql_tests_dir().join("helpers"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|file| std::fs::read_to_string(file).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_level_tests_pass_each_on_a_fresh_database() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sql_tests_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "expected the SQL tests, found {files:?}");
    let helpers = sql_helpers();
    let mut failures = Vec::new();
    for file in &files {
        // A database the broker migrated, with the broker stopped: its leader's jobs (partition
        // cleanup, retention, stats) would take locks the file's one transaction also takes,
        // and a deadlock could pick the file's transaction to fail.
        let broker = TestBroker::start().await;
        let database = broker.database().expect("a database of the test kit");
        broker.shutdown().await;
        let script = format!("{helpers}\n{}", std::fs::read_to_string(file).unwrap());
        if let Err(error) = database.connect().await.batch_execute(&script).await {
            let detail = error
                .as_db_error()
                .map_or(error.to_string(), |e| e.message().to_owned());
            failures.push(format!("{}: {detail}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "SQL tests failed:\n{}",
        failures.join("\n")
    );
}

/// A vacuum leaves the ready set its empty pages: truncating them takes an ACCESS EXCLUSIVE lock,
/// which stalls every push and pop for as long as the vacuum holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vacuum_leaves_the_ready_set_its_pages() {
    let broker = TestBroker::start().await;
    let database = broker.database().expect("a database of the test kit");
    broker.shutdown().await;
    let db = database.connect().await;
    db.batch_execute(
        "insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
         select g, 'g', 1, now() from generate_series(1, 5000) g;
         delete from regina.ready;",
    )
    .await
    .unwrap();
    let pages = || async {
        let row = db
            .query_one("select pg_relation_size('regina.ready')", &[])
            .await
            .unwrap();
        row.get::<_, i64>(0)
    };
    let before = pages().await;
    assert!(before > 0, "the ready set was filled");
    db.batch_execute("vacuum regina.ready").await.unwrap();
    assert_eq!(pages().await, before, "the vacuum truncated the ready set");
}

/// Every function definition, column and index of the schema, and the applied migrations.
async fn schema_fingerprint(db: &tokio_postgres::Client) -> Vec<String> {
    let rows = db
        .query(
            "select 'f ' || pg_get_functiondef(p.oid) from pg_proc p
               join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'regina'
             union all
             select 'c ' || table_name || '.' || column_name || ' ' || data_type
               from information_schema.columns where table_schema = 'regina'
             union all
             select 'i ' || indexdef from pg_indexes where schemaname = 'regina'
             union all
             select 'm ' || version::text || ' ' || applied_at::text from regina.schema_migrations
             order by 1",
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|row| row.get::<_, String>(0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installing_twice_changes_nothing() {
    let first = TestBroker::start().await;
    let before = schema_fingerprint(&first.db().await).await;
    assert!(before
        .iter()
        .any(|l| l.starts_with("f ") && l.contains("regina.push")));
    let second = TestBroker::start_on(&first.database_url, |_| {}).await;
    let after = schema_fingerprint(&second.db().await).await;
    assert_eq!(before, after, "a second start must not change the schema");
    second.shutdown().await;
    first.shutdown().await;
}

/// The text of migration `name` of `sql/migrations/`.
fn migration(name: &str) -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../sql/migrations")
            .join(name),
    )
    .unwrap()
}

/// The rows of `sql`, each a name and a number.
async fn named_numbers(db: &tokio_postgres::Client, sql: &str) -> Vec<(String, i64)> {
    db.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1)))
        .collect()
}

/// Migration 0018 records the holes of the messages stored before it: run again on a database
/// whose holes were forgotten, it finds the ones the delete trigger had recorded (in the middle of
/// a partition, at its top, none for a deleted prefix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holes_migration_finds_the_holes_deletes_left() {
    let broker = TestBroker::start().await;
    let db = broker.db().await;
    db.batch_execute(
        "select regina.push((select jsonb_agg(jsonb_build_object(
                 'queue', 'mh', 'partition', 'p' || (i % 3), 'transactionId', 't' || i,
                 'messageId', gen_random_uuid(), 'payload', i) order by i)
             from generate_series(0, 89) i));
         delete from regina.messages m using regina.partitions p
         where p.id = m.partition_id and p.name = 'p0' and m.seq in (3, 4, 10, 29);
         delete from regina.messages m using regina.partitions p
         where p.id = m.partition_id and p.name = 'p1' and m.seq < 5;
         delete from regina.messages m using regina.partitions p
         where p.id = m.partition_id and p.name = 'p1' and m.seq = 20;",
    )
    .await
    .unwrap();
    let holes = || {
        named_numbers(
            &db,
            "select p.name, h.seq from regina.partition_holes h
             join regina.partitions p on p.id = h.partition_id order by 1, 2",
        )
    };
    let recorded = holes().await;
    let expected: Vec<(String, i64)> = [("p0", 3), ("p0", 4), ("p0", 10), ("p0", 29), ("p1", 20)]
        .iter()
        .map(|&(p, s)| (p.to_owned(), s))
        .collect();
    assert_eq!(recorded, expected, "what the trigger recorded");

    db.batch_execute("truncate regina.partition_holes")
        .await
        .unwrap();
    db.batch_execute(&migration("0018_partition_holes.sql"))
        .await
        .unwrap();
    assert_eq!(holes().await, expected, "what the migration finds");
}

/// Migration 0019 tallies the dead letters stored before it: run again on a database whose tallies
/// are wrong, it leaves one row per partition holding its entries, as many as the entries are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tallies_migration_counts_the_stored_dead_letters() {
    let broker = TestBroker::start().await;
    let db = broker.db().await;
    db.batch_execute(
        "select regina.push((select jsonb_agg(jsonb_build_object(
                 'queue', 'mt', 'partition', 'p' || (i % 3), 'transactionId', 't' || i,
                 'messageId', gen_random_uuid(), 'payload', i) order by i)
             from generate_series(0, 29) i));
         select regina.message_dead_letter(p.uuid::text, 't' || i, g, 'by hand')
         from generate_series(0, 29) i
         cross join unnest(array['g1', 'g2']) g
         join regina.partitions p on p.name = 'p' || (i % 3)
         where i % 3 = 0 or (i % 3 = 1 and i < 10 and g = 'g1')
         order by i, g;
         insert into regina.dead_letter_tallies (partition_id, n)
         select p.id, 7 from regina.partitions p;",
    )
    .await
    .unwrap();
    let tallies = || {
        named_numbers(
            &db,
            "select p.name, t.n from regina.dead_letter_tallies t
             join regina.partitions p on p.id = t.partition_id order by 1, 2",
        )
    };
    assert_eq!(
        tallies().await.len(),
        20 + 3 + 3,
        "a row per entry, and the wrong ones"
    );

    db.batch_execute(&migration("0019_dead_letter_tallies.sql"))
        .await
        .unwrap();
    // p0: 10 messages for two groups; p1: t1, t4 and t7 for g1; p2: none.
    assert_eq!(
        tallies().await,
        vec![("p0".to_owned(), 20), ("p1".to_owned(), 3)],
        "what the migration counts"
    );
}
