//! Test support for Regina: a real broker on a real PostgreSQL, isolated per test.
//!
//! [`TestBroker::start`] copies a fresh database from a migrated template on a shared private
//! cluster (see `cluster`), runs `regina_broker::serve` on `127.0.0.1:0` and returns once
//! `GET /health` answers 200. The database is dropped when the test is done with it (see
//! [`TestDatabase`]; `REGINA_TEST_KEEP_DB=1` keeps it). Nothing here ever stops the cluster;
//! `make test` does at the end.
//! [`Api`] is the kits' HTTP client of the broker, and [`eventually`] (bounded by [`DEADLINE`])
//! every wait for something that happens by itself.
//!
//! ```no_run
//! # async fn example() {
//! let broker = regina_testkit::TestBroker::start().await;
//! let health = regina_testkit::http().get(broker.url("/health")).send().await.unwrap();
//! assert_eq!(health.status(), 200);
//! broker.shutdown().await;
//! # }
//! ```

mod api;
mod cluster;
mod database;
mod wait;

use std::time::{Duration, Instant};

pub use api::{enc, Api, Reply};
pub use database::{TestDatabase, KEEP_DB_VAR};
pub use wait::{conclusive, eventually, wait_until, DEADLINE, PARKED_POP_TIMEOUT_MS};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Timeout of every request made by [`http()`].
const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// A broker serving one test, on its own database.
#[derive(Debug)]
pub struct TestBroker {
    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub base_url: String,
    /// URL of this broker's database (superuser, trust authentication).
    pub database_url: String,
    /// The test kit's database this broker runs on (none for a database from elsewhere).
    database: Option<TestDatabase>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<Result<(), regina_broker::Error>>>,
}

impl TestBroker {
    /// A broker with the default configuration on a fresh database.
    ///
    /// # Panics
    /// When PostgreSQL or the broker cannot be started (tests have no better recourse).
    pub async fn start() -> TestBroker {
        TestBroker::start_with(|_| {}).await
    }

    /// A broker on a fresh database, with `f` applied to the default configuration.
    ///
    /// # Panics
    /// As [`TestBroker::start`].
    pub async fn start_with(f: impl FnOnce(&mut regina_broker::Config)) -> TestBroker {
        let database = TestDatabase::create().await;
        TestBroker::start_on(database.url(), f).await
    }

    /// Another broker on an existing test database (usually another broker's `database_url`),
    /// with `f` applied to the default configuration. On a [`TestDatabase`] of this process, the
    /// broker shares it: the database is dropped only once every broker and handle on it is gone.
    ///
    /// # Panics
    /// As [`TestBroker::start`].
    pub async fn start_on(
        database_url: &str,
        f: impl FnOnce(&mut regina_broker::Config),
    ) -> TestBroker {
        let mut config = config_for(database_url);
        f(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("regina-testkit: bind 127.0.0.1:0");
        let address = listener
            .local_addr()
            .expect("regina-testkit: local address");
        let (shutdown, stop) = oneshot::channel::<()>();
        // A dropped sender also stops the broker: a test that forgets `shutdown` still ends it.
        let server = tokio::spawn(regina_broker::serve(config, listener, async move {
            let _ = stop.await;
        }));
        let mut broker = TestBroker {
            base_url: format!("http://{address}"),
            database_url: database_url.to_owned(),
            database: TestDatabase::find(database_url),
            shutdown: Some(shutdown),
            server: Some(server),
        };
        broker.healthy_wait().await;
        broker
    }

    /// `base_url` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// A new [`Api`] client of this broker.
    pub fn api(&self) -> Api {
        Api::new(self)
    }

    /// A direct connection to this broker's database; its connection task runs on the caller's
    /// runtime.
    ///
    /// # Panics
    /// When the database cannot be reached.
    pub async fn db(&self) -> tokio_postgres::Client {
        cluster::connect(&self.database_url).await
    }

    /// A connection to the cluster's `postgres` database, for statements that cannot run inside
    /// the test database itself (`alter database … allow_connections false`, `drop database`).
    ///
    /// # Panics
    /// When the cluster cannot be reached.
    pub async fn db_admin(&self) -> tokio_postgres::Client {
        cluster::connect(&cluster::admin_url(&self.database_url)).await
    }

    /// A handle on this broker's test database that keeps it after the broker is gone (to read
    /// what the broker left behind); `None` for a database the test kit did not create.
    pub fn database(&self) -> Option<TestDatabase> {
        self.database.clone()
    }

    /// Stops the broker gracefully, waits for its server task, and then drops its database
    /// unless another broker or a [`TestDatabase`] handle still uses it (or
    /// `REGINA_TEST_KEEP_DB=1`).
    ///
    /// # Panics
    /// When the server task panicked or `serve` returned an error.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let outcome = match self.server.take() {
            Some(server) => server.await,
            None => Ok(Ok(())),
        };
        // The database goes even when the broker failed: the panic below fails the test anyway.
        if let Some(database) = self.database.take() {
            database.release().await;
        }
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("regina-testkit: the broker failed: {e}"),
            Err(e) => panic!("regina-testkit: the broker task failed: {e}"),
        }
    }

    /// Polls `/health` until 200; panics with the server's own error if it stops first.
    async fn healthy_wait(&mut self) {
        let client = http();
        let url = self.url("/health");
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(server) = self.server.take_if(|s| s.is_finished()) {
                let outcome = server.await;
                panic!("regina-testkit: the broker stopped before it was healthy: {outcome:?}");
            }
            let last = match client.get(&url).send().await {
                Ok(response) if response.status() == 200 => return,
                Ok(response) => format!("status {}", response.status()),
                Err(e) => e.to_string(),
            };
            assert!(
                Instant::now() < deadline,
                "regina-testkit: {url} not healthy after {DEADLINE:?}: {last}"
            );
            tokio::time::sleep(wait::POLL_INTERVAL).await;
        }
    }
}

impl Drop for TestBroker {
    /// Stops the broker without waiting; its database, if this was its last user, is dropped by
    /// the test kit's background thread (force-ending the sessions of a broker still stopping).
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// A keep-alive HTTP client with a 60 s request timeout, ignoring proxy settings (tests talk to
/// 127.0.0.1).
///
/// # Panics
/// When the client cannot be built (no TLS or resolver problem applies to plain HTTP).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .no_proxy()
        .build()
        .expect("regina-testkit: build the HTTP client")
}

/// The default configuration pointed at `database_url`, with a failover-buffer directory of its
/// own (the directory must never be shared between broker instances).
fn config_for(database_url: &str) -> regina_broker::Config {
    let buffer_dir = cluster::target_dir()
        .join("regina-test-buffers")
        .join(uuid::Uuid::new_v4().simple().to_string());
    regina_broker::Config {
        database_url: Some(database_url.to_owned()),
        file_buffer_dir: buffer_dir.to_string_lossy().into_owned(),
        ..regina_broker::Config::default()
    }
}
