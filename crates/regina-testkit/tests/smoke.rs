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
