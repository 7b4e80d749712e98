//! The broker's shared state: configuration, pool, engine, waiters, metrics and background
//! services.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

use crate::auth::Authenticator;
use crate::config::Config;
use crate::db::{ConnectSettings, Db};
use crate::encryption::Encryption;
use crate::engine::Engine;
use crate::error::Error;
use crate::failover::Failover;
use crate::maintenance::Maintenance;
use crate::metrics::history::{HistoryWriter, Identity, Sources};
use crate::metrics::Metrics;
use crate::services::{JobSettings, Services};
use crate::site::Site;
use crate::waiters::Waiters;

/// Everything a request handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

/// The state behind [`AppState`].
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) worker_id: String,
    pub(crate) cors_origin: HeaderValue,
    pub(crate) db: Db,
    pub(crate) engine: Engine,
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) failover: Arc<Failover>,
    /// The maintenance switches in force on this instance.
    pub(crate) maintenance: Arc<Maintenance>,
    pub(crate) inflight: Arc<Semaphore>,
    /// Room for request bodies (`BODY_BYTES_HELD_MAX`), one permit per byte.
    pub(crate) bodies: BodyBudget,
    pub(crate) started: Instant,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) encryption: Encryption,
    /// Token verification; `None` when authentication is off (`JWT_ENABLED`).
    pub(crate) auth: Option<Authenticator>,
    /// The dashboard served at `/` (`WEBAPP_ROOT`).
    pub(crate) site: Site,
    /// How to open a session for `POST /api/v1/stats/refresh` (its own statement timeout).
    pub(crate) stats_session: ConnectSettings,
    services: Mutex<Option<Services>>,
    history: Mutex<Option<HistoryWriter>>,
}

impl AppState {
    /// Opens the connection pool and starts the engine and the background services. Does not
    /// migrate: call [`crate::migrate`] first.
    ///
    /// # Errors
    /// [`Error::Config`] for an unusable database URL, CORS origin, encryption key or
    /// authentication setting, or `DB_POOL_MIN` above `DB_POOL_SIZE`,
    /// [`Error::Connect`] when PostgreSQL is unreachable.
    pub async fn start(config: Config) -> Result<AppState, Error> {
        let encryption = Encryption::from_config(&config)?;
        let auth = Authenticator::start(&config.auth).await?;
        let site = Site::open(&config.webapp_root)?;
        let cors_origin = HeaderValue::from_str(&config.cors_allow_origin).map_err(|_| {
            Error::Config("CORS_ALLOW_ORIGIN is not a valid header value".to_owned())
        })?;
        if config.db_pool_min > config.db_pool_size {
            return Err(Error::Config(format!(
                "DB_POOL_MIN ({}) must not exceed DB_POOL_SIZE ({})",
                config.db_pool_min, config.db_pool_size
            )));
        }
        let db = Db::open(
            ConnectSettings::new(&config, "pool")?,
            config.db_pool_size,
            config.db_pool_min,
        )
        .await?;
        let started = Instant::now();
        let metrics = Arc::new(Metrics::new(started, config.metrics_queue_labels_max));
        let waiters = Arc::new(Waiters::new(config.longpoll_waiters_max));
        // The switches in force before serving; later changes arrive through the listener.
        let maintenance = Arc::new(
            Maintenance::load(&db, &waiters)
                .await
                .map_err(|e| Error::Connect(e.to_string()))?,
        );
        let engine = Engine::start(&db, &waiters, &metrics, &maintenance, &config);
        let failover = Failover::start(&config, &db, &waiters, &metrics, &maintenance);
        let services = Services::start(
            ConnectSettings::new(&config, "jobs")?,
            JobSettings::new(&config),
            db.clone(),
            waiters.clone(),
            maintenance.clone(),
            metrics.clone(),
        );
        if !services.listening(config.db_connection_timeout()).await {
            tracing::warn!("serving before the LISTEN session is up: wake-ups from other instances may wait for the safety re-check");
        }
        let inflight = Arc::new(Semaphore::new(
            config.http_inflight_max.min(Semaphore::MAX_PERMITS),
        ));
        let history = history_start(&config, &db, &waiters, &metrics, &inflight, started);
        let stats_session = ConnectSettings::new(&config, "stats")?
            .with_statement_timeout_ms(crate::services::STATS_STATEMENT_TIMEOUT_MS);
        let bodies = BodyBudget::new(config.body_bytes_held_max);
        let shared = Shared {
            stats_session,
            worker_id: config.worker_id(),
            inflight,
            bodies,
            config,
            cors_origin,
            db,
            engine,
            waiters,
            failover,
            maintenance,
            started,
            metrics,
            encryption,
            auth,
            site,
            services: Mutex::new(Some(services)),
            history: Mutex::new(Some(history)),
        };
        Ok(AppState {
            shared: Arc::new(shared),
        })
    }

    /// Begins shutdown: parked long-polls answer `204 shutdown` and new ones do not park.
    pub fn begin_shutdown(&self) {
        tracing::info!(
            waiters = self.shared.waiters.len(),
            "answering parked long-polls"
        );
        self.shared.waiters.shutdown();
    }

    /// Stops the background services (leadership ends) and the failover drainer, fsyncs what
    /// the failover buffer still has to write, writes the last metrics history, and closes the
    /// pool's connections.
    pub async fn close(&self) {
        self.shared.failover.close().await;
        let services = self
            .shared
            .services
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(services) = services {
            services.stop().await;
        }
        let history = self
            .shared
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(history) = history {
            history.stop().await;
        }
        self.shared.db.close();
    }

    pub(crate) fn get(&self) -> &Shared {
        &self.shared
    }
}

impl Shared {
    /// Requests holding an in-flight permit now.
    pub(crate) fn inflight_in_use(&self) -> usize {
        inflight_in_use(&self.inflight, self.config.http_inflight_max)
    }
}

fn inflight_in_use(inflight: &Semaphore, max: usize) -> usize {
    max.min(Semaphore::MAX_PERMITS)
        .saturating_sub(inflight.available_permits())
}

/// Starts this instance's metrics history writer (every `STATS_INTERVAL_MS`).
fn history_start(
    config: &Config,
    db: &Db,
    waiters: &Arc<Waiters>,
    metrics: &Arc<Metrics>,
    inflight: &Arc<Semaphore>,
    started: Instant,
) -> HistoryWriter {
    let (semaphore, max) = (inflight.clone(), config.http_inflight_max);
    let sources = Sources {
        metrics: metrics.clone(),
        db: db.clone(),
        waiters: waiters.clone(),
        inflight: Box::new(move || inflight_in_use(&semaphore, max)),
        started,
    };
    let identity = Identity {
        worker_id: config.worker_id(),
        hostname: crate::config::hostname(),
    };
    HistoryWriter::start(
        sources,
        identity,
        Duration::from_millis(config.stats_interval_ms.max(1)),
    )
}

/// Room for the request bodies an instance holds at once (`BODY_BYTES_HELD_MAX`), one permit
/// per byte. Waiters are served in arrival order, so a large body is never starved by small ones.
pub(crate) struct BodyBudget {
    room: Arc<Semaphore>,
    size: u32,
}

impl BodyBudget {
    pub(crate) fn new(bytes: usize) -> BodyBudget {
        let size = u32::try_from(bytes).unwrap_or(u32::MAX).max(1);
        BodyBudget {
            room: Arc::new(Semaphore::new(size as usize)),
            size,
        }
    }

    /// Waits for room for `bytes` (all of the budget when they are more).
    ///
    /// # Errors
    /// Only if the budget were closed, which it never is.
    pub(crate) async fn take(&self, bytes: usize) -> Result<OwnedSemaphorePermit, AcquireError> {
        let permits = u32::try_from(bytes).unwrap_or(u32::MAX).min(self.size);
        self.room.clone().acquire_many_owned(permits).await
    }

    /// Bytes of bodies held now.
    pub(crate) fn held(&self) -> usize {
        (self.size as usize).saturating_sub(self.room.available_permits())
    }
}
