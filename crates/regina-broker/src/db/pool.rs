//! A small pool of pipelined PostgreSQL connections that repairs itself.
//!
//! tokio-postgres pipelines concurrent statements on one `Client`, so a handful of connections
//! serve many concurrent batches; callers share connections instead of checking them out. A call
//! takes the first idle connection in slot order (else the least busy one), so the connections
//! beyond what the load needs stay idle and keep small buffers: the driver keeps each
//! connection's buffers at the largest size they ever had.
//!
//! The first `DB_POOL_MIN` slots are opened at start. A slot without a connection (never opened,
//! or broken) is opened in the background when a call finds every connection before it busy,
//! one slot per such call, while the call goes on with the least busy connection: a quiet broker
//! keeps one or two sessions on PostgreSQL, and a burst opens as many as it needs, up to
//! `DB_POOL_SIZE`. Opened connections stay open. Connect attempts of one slot never overlap.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::error::{classify, DbError};
use super::Stmt;
use crate::config::Config;
use crate::error::Error;

/// `regina-<role>-<worker>`, cut to PostgreSQL's 63 bytes.
fn session_name(role: &str, worker: &str) -> String {
    format!("regina-{role}-{worker}").chars().take(63).collect()
}

/// How to open one session: target, timeouts and the session settings applied on connect.
#[derive(Clone)]
pub(crate) struct ConnectSettings {
    pg: tokio_postgres::Config,
    connect_timeout: Duration,
    statement_timeout_ms: u64,
    lock_timeout_ms: u64,
    /// `DB_PLANS_REFRESH_MS`: how long a session keeps its cached plans (None: for its life).
    plans_refresh: Option<Duration>,
    /// The instance part of the sessions' `application_name` (`regina-<role>-<worker>`).
    worker: String,
}

impl ConnectSettings {
    /// Settings for sessions named `regina-<role>-<worker>` with the configured timeouts.
    ///
    /// # Errors
    /// [`Error::Config`] when the database URL cannot be parsed.
    pub(crate) fn new(config: &Config, role: &str) -> Result<Self, Error> {
        let mut pg: tokio_postgres::Config = config
            .database_url()
            .parse()
            .map_err(|e| Error::Config(format!("DATABASE_URL / PG_*: {e}")))?;
        let worker = config.worker_id();
        pg.application_name(session_name(role, &worker));
        pg.connect_timeout(config.db_connection_timeout());
        // A database that vanishes without closing its connections (a partition, a dead host)
        // must still be noticed, or calls would hang instead of failing over.
        pg.keepalives(true)
            .keepalives_idle(Duration::from_secs(config.db_keepalives_idle_s))
            .keepalives_interval(Duration::from_secs(config.db_keepalives_interval_s))
            .keepalives_retries(config.db_keepalives_count);
        if config.db_tcp_user_timeout_ms > 0 {
            pg.tcp_user_timeout(Duration::from_millis(config.db_tcp_user_timeout_ms));
        }
        Ok(ConnectSettings {
            pg,
            connect_timeout: config.db_connection_timeout(),
            statement_timeout_ms: config.db_statement_timeout_ms,
            lock_timeout_ms: config.db_lock_timeout_ms,
            plans_refresh: (config.db_plans_refresh_ms > 0)
                .then(|| Duration::from_millis(config.db_plans_refresh_ms)),
            worker,
        })
    }

    /// The same settings for sessions of another role (their `application_name`).
    pub(crate) fn with_role(mut self, role: &str) -> Self {
        self.pg.application_name(session_name(role, &self.worker));
        self
    }

    /// The same target and timeouts with another `statement_timeout` (background jobs).
    pub(crate) fn with_statement_timeout_ms(mut self, statement_timeout_ms: u64) -> Self {
        self.statement_timeout_ms = statement_timeout_ms;
        self
    }

    /// Opens one session and applies the session settings.
    ///
    /// # Errors
    /// [`DbError::Unavailable`] when PostgreSQL does not answer within the connect timeout.
    pub(crate) async fn connect(&self) -> Result<Client, DbError> {
        let connecting = async {
            let (client, connection) = self.pg.connect(NoTls).await.map_err(|e| classify(&e))?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "database connection ended");
                }
            });
            let session_sql = format!(
                "set statement_timeout = {}; set lock_timeout = {}",
                self.statement_timeout_ms, self.lock_timeout_ms
            );
            client
                .batch_execute(&session_sql)
                .await
                .map_err(|e| classify(&e))?;
            Ok::<_, DbError>(client)
        };
        match tokio::time::timeout(self.connect_timeout, connecting).await {
            Ok(Ok(client)) => Ok(client),
            // Whatever failed while connecting, the database is not usable right now.
            Ok(Err(error)) => Err(DbError::Unavailable(error.to_string())),
            Err(_) => Err(DbError::Unavailable("connect timed out".to_owned())),
        }
    }

    /// The connection target.
    pub(super) fn pg(&self) -> &tokio_postgres::Config {
        &self.pg
    }

    /// The connect / acquire timeout (`DB_CONNECTION_TIMEOUT`).
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }
}

/// One live session with its prepared statements.
pub(crate) struct Conn {
    client: Client,
    backend_pid: i32,
    prepared: Mutex<[Option<Statement>; Stmt::COUNT]>,
    /// When the session last dropped its cached plans, and how often it does.
    plans_made_at: Mutex<Instant>,
    plans_refresh: Option<Duration>,
    /// Statements pipelined on this session right now; `0` means idle.
    in_flight: AtomicUsize,
}

/// A session's share of the plans refresh period, spread over the period by its backend pid
/// (consecutive pids land far apart).
fn refresh_offset(backend_pid: i32, period: Duration) -> Duration {
    // Fibonacci hashing: the top 10 bits of the product, a fraction in 1/1024ths.
    let fraction = u64::from(backend_pid.unsigned_abs()).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
    period.mul_f64(fraction as f64 / 1024.0)
}

/// Counts one unit in an `AtomicUsize` for as long as it lives, cancellation included.
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Counted(counter)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A snapshot of the pool for `/metrics` (http-api.md §3.1).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolStats {
    /// Configured sessions (`DB_POOL_SIZE`).
    pub(crate) size: usize,
    /// Open sessions (at most `size`).
    pub(crate) open: usize,
    /// Open sessions with no statement in flight.
    pub(crate) idle: usize,
    /// Callers waiting for a session because none was healthy.
    pub(crate) waiting: usize,
}

impl PoolStats {
    /// Open sessions with statements in flight.
    pub(crate) fn busy(&self) -> usize {
        self.open.saturating_sub(self.idle)
    }
}

impl Conn {
    async fn open(settings: &ConnectSettings) -> Result<Conn, DbError> {
        let client = settings.connect().await?;
        // The backend pid tells this instance's own push notifications from other instances'.
        let row = client
            .query_one("select pg_backend_pid()", &[])
            .await
            .map_err(|e| classify(&e))?;
        let backend_pid = row
            .try_get(0)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        // Sessions opened together would drop their plans together, and PostgreSQL would make
        // every session's plans again in the same instant, a burst of CPU that every call in it
        // waits behind. Each session's first refresh comes earlier by its own share of the
        // period, so the sessions take turns.
        let now = Instant::now();
        let plans_made_at = settings
            .plans_refresh
            .and_then(|period| now.checked_sub(refresh_offset(backend_pid, period)))
            .unwrap_or(now);
        Ok(Conn {
            client,
            backend_pid,
            prepared: Mutex::new(Default::default()),
            plans_made_at: Mutex::new(plans_made_at),
            plans_refresh: settings.plans_refresh,
            in_flight: AtomicUsize::new(0),
        })
    }

    /// Prepares `stmt` once per session; later calls reuse it.
    async fn statement(&self, stmt: Stmt) -> Result<Statement, DbError> {
        let cached =
            self.prepared.lock().unwrap_or_else(PoisonError::into_inner)[stmt as usize].clone();
        if let Some(statement) = cached {
            return Ok(statement);
        }
        let statement = self
            .client
            .prepare(stmt.sql())
            .await
            .map_err(|e| classify(&e))?;
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)[stmt as usize] =
            Some(statement.clone());
        Ok(statement)
    }

    /// Runs a prepared hot statement.
    pub(crate) async fn query(
        &self,
        stmt: Stmt,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DbError> {
        let _busy = Counted::new(&self.in_flight);
        self.plans_refresh_when_due().await?;
        let statement = self.statement(stmt).await?;
        self.client
            .query(&statement, params)
            .await
            .map_err(|e| classify(&e))
    }
}

impl Conn {
    /// Drops the session's cached plans (the SQL functions' included) once they are
    /// `DB_PLANS_REFRESH_MS` old. The functions keep generic plans, made once per session with
    /// the sizes the tables had then: a plan made while a table was nearly empty (a new
    /// database, a drained ready set) may scan it or join it in the wrong order once it has
    /// grown. Plans made again see the tables as they are.
    async fn plans_refresh_when_due(&self) -> Result<(), DbError> {
        let Some(refresh) = self.plans_refresh else {
            return Ok(());
        };
        {
            let mut made_at = self
                .plans_made_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if made_at.elapsed() < refresh {
                return Ok(());
            }
            *made_at = Instant::now();
        }
        self.client
            .batch_execute("discard plans")
            .await
            .map_err(|e| classify(&e))
    }

    /// Runs a statement that is not prepared ahead: for rare calls (administration), which are
    /// not worth a place in every session's statement cache.
    pub(crate) async fn query_unprepared(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DbError> {
        let _busy = Counted::new(&self.in_flight);
        self.client
            .query(sql, params)
            .await
            .map_err(|e| classify(&e))
    }
}

struct Slot {
    conn: Mutex<Option<Arc<Conn>>>,
    /// Serialises connect attempts of this slot, so a failure is not retried by every caller.
    connecting: tokio::sync::Mutex<()>,
    repairing: AtomicBool,
}

impl Slot {
    fn healthy(&self) -> Option<Arc<Conn>> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        conn.as_ref().filter(|c| !c.client.is_closed()).cloned()
    }

    fn set(&self, conn: Option<Arc<Conn>>) {
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = conn;
    }
}

/// The shared connection pool (`DB_POOL_SIZE` sessions).
#[derive(Clone)]
pub(crate) struct Db {
    inner: Arc<Pool>,
}

struct Pool {
    settings: ConnectSettings,
    slots: Box<[Slot]>,
    next: AtomicUsize,
    /// Callers inside [`Db::conn`] waiting for a reconnect.
    waiting: AtomicUsize,
    /// Whether committed pushes are announced: another instance may be listening (see
    /// `services::listener`). True until the listener learns that this instance is alone.
    announcing: AtomicBool,
    /// Announcements not sent because no other instance listened.
    announcements_skipped: AtomicU64,
}

impl Db {
    /// Opens the pool with `size` slots, of which the first `min` (at least one, at most `size`)
    /// are connected now; fails when not even the first connection can be made.
    ///
    /// # Errors
    /// [`Error::Connect`] when PostgreSQL is unreachable.
    pub(crate) async fn open(
        settings: ConnectSettings,
        size: usize,
        min: usize,
    ) -> Result<Db, Error> {
        let slots = (0..size.max(1))
            .map(|_| Slot {
                conn: Mutex::new(None),
                connecting: tokio::sync::Mutex::new(()),
                repairing: AtomicBool::new(false),
            })
            .collect();
        let db = Db {
            inner: Arc::new(Pool {
                settings,
                slots,
                next: AtomicUsize::new(0),
                waiting: AtomicUsize::new(0),
                announcing: AtomicBool::new(true),
                announcements_skipped: AtomicU64::new(0),
            }),
        };
        // Sessions open in parallel: startup costs one connect, not `min` of them.
        let opened = futures::future::join_all(
            (0..min.clamp(1, db.inner.slots.len())).map(|i| db.reconnect(i)),
        )
        .await;
        for (index, result) in opened.into_iter().enumerate() {
            if let Err(error) = result {
                if index == 0 {
                    return Err(Error::Connect(error.to_string()));
                }
                tracing::warn!(%error, "pool connection not opened; it will be retried on use");
            }
        }
        Ok(db)
    }

    /// Runs a hot statement on the next healthy connection.
    ///
    /// # Errors
    /// [`DbError`] as classified from the failure.
    pub(crate) async fn query(
        &self,
        stmt: Stmt,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DbError> {
        let conn = self.conn().await?;
        conn.query(stmt, params).await
    }

    /// Runs a rare statement (not prepared ahead) on the next healthy connection.
    ///
    /// # Errors
    /// [`DbError`] as classified from the failure.
    pub(crate) async fn query_unprepared(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DbError> {
        let conn = self.conn().await?;
        conn.query_unprepared(sql, params).await
    }

    /// A healthy connection, reconnecting one if none is, within `DB_CONNECTION_TIMEOUT`: the
    /// first idle one in slot order, else the one with the fewest statements in flight. Passing
    /// a slot without a connection before finding an idle one opens that slot in the background
    /// (the first such slot not already connecting: one more session per call that found the
    /// ones before it busy).
    pub(crate) async fn conn(&self) -> Result<Arc<Conn>, DbError> {
        let slots = &self.inner.slots;
        let mut least_busy: Option<(usize, Arc<Conn>)> = None;
        let mut opening = false;
        for (index, slot) in slots.iter().enumerate() {
            let Some(conn) = slot.healthy() else {
                opening = opening || self.repair_in_background(index);
                continue;
            };
            let busy = conn.in_flight.load(Ordering::Relaxed);
            if busy == 0 {
                return Ok(conn);
            }
            if least_busy.as_ref().is_none_or(|(fewest, _)| busy < *fewest) {
                least_busy = Some((busy, conn));
            }
        }
        if let Some((_, conn)) = least_busy {
            return Ok(conn);
        }
        let start = self.inner.next.fetch_add(1, Ordering::Relaxed) % slots.len();
        let _waiting = Counted::new(&self.inner.waiting);
        match tokio::time::timeout(self.inner.settings.connect_timeout(), self.reconnect(start))
            .await
        {
            Ok(result) => result,
            Err(_) => Err(DbError::Unavailable(
                "no database connection within the timeout".into(),
            )),
        }
    }

    /// Whether `pid` is the backend of one of this pool's sessions.
    pub(crate) fn owns_backend(&self, pid: i32) -> bool {
        self.inner.slots.iter().any(|slot| {
            let conn = slot.conn.lock().unwrap_or_else(PoisonError::into_inner);
            conn.as_ref().is_some_and(|c| c.backend_pid == pid)
        })
    }

    /// Sets whether committed pushes are announced (the listener knows whether another instance
    /// listens).
    pub(crate) fn set_announcing(&self, announcing: bool) {
        self.inner.announcing.store(announcing, Ordering::Relaxed);
    }

    /// Whether committed pushes are announced, and how many announcements were skipped.
    pub(crate) fn announcing(&self) -> (bool, u64) {
        (
            self.inner.announcing.load(Ordering::Relaxed),
            self.inner.announcements_skipped.load(Ordering::Relaxed),
        )
    }

    /// Counts an announcement not sent; false when it must be sent.
    pub(crate) fn skip_announcement(&self) -> bool {
        let skip = !self.inner.announcing.load(Ordering::Relaxed);
        if skip {
            self.inner
                .announcements_skipped
                .fetch_add(1, Ordering::Relaxed);
        }
        skip
    }

    /// Size, open and idle sessions and waiting callers, read without blocking the pool.
    pub(crate) fn stats(&self) -> PoolStats {
        let open: Vec<Arc<Conn>> = self.inner.slots.iter().filter_map(Slot::healthy).collect();
        let idle = open
            .iter()
            .filter(|conn| conn.in_flight.load(Ordering::Relaxed) == 0)
            .count();
        PoolStats {
            size: self.inner.slots.len(),
            open: open.len(),
            idle,
            waiting: self.inner.waiting.load(Ordering::Relaxed),
        }
    }

    /// Drops every connection (shutdown).
    pub(crate) fn close(&self) {
        for slot in self.inner.slots.iter() {
            slot.set(None);
        }
    }

    async fn reconnect(&self, index: usize) -> Result<Arc<Conn>, DbError> {
        let slot = &self.inner.slots[index];
        let _connecting = slot.connecting.lock().await;
        if let Some(conn) = slot.healthy() {
            return Ok(conn);
        }
        let conn = Arc::new(Conn::open(&self.inner.settings).await?);
        slot.set(Some(conn.clone()));
        Ok(conn)
    }

    /// Connects slot `index` in a task of its own; false when one is connecting it already.
    fn repair_in_background(&self, index: usize) -> bool {
        let slot = &self.inner.slots[index];
        if slot.repairing.swap(true, Ordering::AcqRel) {
            return false;
        }
        let db = self.clone();
        tokio::spawn(async move {
            if let Err(error) = db.reconnect(index).await {
                tracing::debug!(%error, index, "pool connection repair failed");
            }
            db.inner.slots[index]
                .repairing
                .store(false, Ordering::Release);
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::refresh_offset;

    #[test]
    fn sessions_opened_together_refresh_their_plans_apart() {
        let period = Duration::from_secs(10);
        // Sixteen sessions opened together get consecutive pids.
        let mut tenths: Vec<u128> = (4_000..4_016)
            .map(|pid| {
                let offset = refresh_offset(pid, period);
                assert!(offset < period, "{offset:?}");
                offset.as_millis() / 1_000
            })
            .collect();
        tenths.sort_unstable();
        tenths.dedup();
        assert!(
            tenths.len() >= 8,
            "spread over the period, not bunched: {tenths:?}"
        );
    }
}
