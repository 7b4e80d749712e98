//! The test kit itself: a healthy broker per test, each on its own database.

use regina_testkit::{http, TestBroker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_broker_answers_health() {
    let broker = TestBroker::start().await;
    let response = http()
        .get(broker.url("/health"))
        .send()
        .await
        .expect("GET /health");
    assert_eq!(response.status(), 200);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_broker_gets_its_own_database() {
    let first = TestBroker::start().await;
    let second = TestBroker::start().await;
    assert_ne!(first.database_url, second.database_url);
    let db = first.db().await;
    let name: String = db
        .query_one("select current_database()", &[])
        .await
        .expect("query")
        .get(0);
    assert!(first.database_url.ends_with(&format!("/{name}")));
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_broker_shares_the_database() {
    let first = TestBroker::start().await;
    let second = TestBroker::start_on(&first.database_url, |_| {}).await;
    assert_eq!(first.database_url, second.database_url);
    assert_ne!(first.base_url, second.base_url);
    second.shutdown().await;
    first.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_connection_can_close_the_test_database() {
    let broker = TestBroker::start().await;
    let name = broker
        .database_url
        .rsplit('/')
        .next()
        .expect("database name");
    let admin = broker.db_admin().await;
    for allowed in ["false", "true"] {
        admin
            .batch_execute(&format!(
                "alter database {name} with allow_connections {allowed}"
            ))
            .await
            .expect("alter database from the admin connection");
    }
    broker.shutdown().await;
}

/// Whether the cluster holding `database_url` still has that database.
async fn exists(admin: &tokio_postgres::Client, database_url: &str) -> bool {
    let name = database_url.rsplit('/').next().expect("database name");
    admin
        .query_opt("select 1 from pg_database where datname = $1", &[&name])
        .await
        .expect("look up the database")
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drops_the_database_once_its_last_broker_is_gone() {
    if std::env::var_os(regina_testkit::KEEP_DB_VAR).is_some() {
        return;
    }
    let first = TestBroker::start().await;
    let admin = first.db_admin().await;
    let url = first.database_url.clone();
    let second = TestBroker::start_on(&url, |_| {}).await;
    first.shutdown().await;
    assert!(
        exists(&admin, &url).await,
        "the second broker still uses it"
    );
    assert_eq!(
        second.api().get("/health").await.status,
        200,
        "the second broker still works"
    );
    second.shutdown().await;
    assert!(!exists(&admin, &url).await, "dropped with its last broker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_handle_outlives_the_broker_and_a_dropped_broker_is_cleaned_up_too() {
    if std::env::var_os(regina_testkit::KEEP_DB_VAR).is_some() {
        return;
    }
    let broker = TestBroker::start().await;
    let admin = broker.db_admin().await;
    let database = broker.database().expect("a database of the test kit");
    broker.shutdown().await;
    let db = database.connect().await;
    let tables: i64 = db
        .query_one(
            "select count(*) from pg_tables where schemaname = 'regina'",
            &[],
        )
        .await
        .expect("read the kept database")
        .get(0);
    assert!(tables > 0, "the migrated schema is there");
    drop(db);
    let url = database.url().to_owned();
    database.release().await;
    assert!(!exists(&admin, &url).await, "dropped with its last handle");

    // A broker that is only dropped (most tests) is cleaned up in the background.
    let dropped = TestBroker::start().await;
    let url = dropped.database_url.clone();
    drop(dropped);
    regina_testkit::wait_until("the dropped broker's database is dropped", || async {
        !exists(&admin, &url).await
    })
    .await;
}
