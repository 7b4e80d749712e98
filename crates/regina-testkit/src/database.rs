//! Test databases: each test's own copy of the migrated template, dropped when the test is done
//! with it, so that a full run does not leave hundreds of databases on the shared cluster.
//!
//! A [`TestDatabase`] is shared by every broker started on it ([`crate::TestBroker::start_on`]
//! finds it by URL) and dropped when its last handle goes: at once when that happens in an awaited
//! [`crate::TestBroker::shutdown`] or [`TestDatabase::release`], otherwise by a background thread
//! (a `Drop` cannot wait, and most tests simply let their broker go out of scope). A process that
//! exits before that thread is done leaves a database behind; its name carries the creator's pid,
//! so the next test process that joins the cluster drops it (see `cluster`).
//!
//! `REGINA_TEST_KEEP_DB=1` keeps every database for inspection; each is named on stderr, and they
//! last until the cluster is started again.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};

use crate::cluster;

/// The environment variable that keeps test databases (value `1`).
pub const KEEP_DB_VAR: &str = "REGINA_TEST_KEEP_DB";

/// Live test databases of this process by URL, so that a second broker shares the first's.
static LIVE: LazyLock<Mutex<HashMap<String, Weak<Owned>>>> = LazyLock::new(Mutex::default);

/// The background thread dropping databases whose last handle went in a `Drop`.
static REAPER: OnceLock<Option<mpsc::Sender<String>>> = OnceLock::new();

/// A database of one test, copied from the migrated template. Clones share it; it is dropped when
/// the last clone and the last broker on it are gone, unless `REGINA_TEST_KEEP_DB=1`.
#[derive(Clone, Debug)]
pub struct TestDatabase {
    owned: Arc<Owned>,
}

#[derive(Debug)]
struct Owned {
    url: String,
    /// Dropped already (by [`TestDatabase::release`]): nothing left to do when this goes.
    dropped: bool,
}

impl TestDatabase {
    /// A fresh database copied from the migrated template, with no broker on it.
    ///
    /// # Panics
    /// When the cluster cannot be started or the copy cannot be made.
    pub async fn create() -> TestDatabase {
        let keep = keep_requested();
        let url = cluster::database_create(keep).await;
        if keep {
            eprintln!("regina-testkit: {KEEP_DB_VAR}=1 keeps the database {url}");
        }
        let owned = Arc::new(Owned {
            url: url.clone(),
            dropped: false,
        });
        live().insert(url, Arc::downgrade(&owned));
        TestDatabase { owned }
    }

    /// The live test database at `url`, if this process created it and still uses it.
    pub(crate) fn find(url: &str) -> Option<TestDatabase> {
        let owned = live().get(url).and_then(Weak::upgrade)?;
        Some(TestDatabase { owned })
    }

    /// The database's URL (superuser, trust authentication).
    pub fn url(&self) -> &str {
        &self.owned.url
    }

    /// A direct connection; its connection task runs on the caller's runtime.
    ///
    /// # Panics
    /// When the database cannot be reached.
    pub async fn connect(&self) -> tokio_postgres::Client {
        cluster::connect(&self.owned.url).await
    }

    /// Gives this handle up; when it was the last one, drops the database before returning.
    pub async fn release(self) {
        let Some(mut owned) = Arc::into_inner(self.owned) else {
            return;
        };
        forget(&owned.url);
        owned.dropped = true;
        if keep_requested() {
            return;
        }
        if let Err(e) = cluster::database_drop(&owned.url).await {
            eprintln!("regina-testkit: {e}");
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        forget(&self.url);
        if keep_requested() {
            return;
        }
        // Sending never blocks; the thread does the waiting.
        if let Some(reaper) = reaper() {
            let _ = reaper.send(self.url.clone());
        }
    }
}

/// Whether `REGINA_TEST_KEEP_DB=1` asks to keep the test databases.
pub(crate) fn keep_requested() -> bool {
    std::env::var_os(KEEP_DB_VAR).is_some_and(|v| v == "1")
}

fn live() -> std::sync::MutexGuard<'static, HashMap<String, Weak<Owned>>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn forget(url: &str) {
    let mut live = live();
    // Another handle may have registered the same URL since (it cannot: names are unique), but
    // only a dead entry is removed.
    if live.get(url).is_some_and(|w| w.strong_count() == 0) {
        live.remove(url);
    }
}

/// The reaper's queue, starting its thread on first use; `None` if the thread cannot start.
fn reaper() -> Option<&'static mpsc::Sender<String>> {
    REAPER
        .get_or_init(|| {
            let (send, receive) = mpsc::channel::<String>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| eprintln!("regina-testkit: no runtime to drop databases: {e}"))
                .ok()?;
            std::thread::Builder::new()
                .name("regina-testkit-reaper".to_owned())
                .spawn(move || {
                    for url in receive {
                        if let Err(e) = runtime.block_on(cluster::database_drop(&url)) {
                            eprintln!("regina-testkit: {e}");
                        }
                    }
                })
                .map_err(|e| eprintln!("regina-testkit: no thread to drop databases: {e}"))
                .ok()?;
            Some(send)
        })
        .as_ref()
}
