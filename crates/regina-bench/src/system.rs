//! The system under test: a private PostgreSQL cluster with the settings in
//! `bench/postgresql.conf`, a fresh database per run, and (for the broker target) a `regina serve`
//! process; or an existing system given by URLs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use regina_devdb::{DevDb, DevDbOptions};
use tokio::process::{Child, Command};
use tokio_postgres::NoTls;

use crate::target::wait_healthy;

/// Where the harness keeps its cluster (relative to the working directory).
pub const CLUSTER_DIR: &str = ".regina/bench-pg";
/// The cluster's port, unless `BENCH_PG_PORT` names another (two checkouts benchmarking on one
/// machine need two ports). Above Linux's ephemeral ports (32768–60999): a port in that range may
/// be held by an outgoing connection, and the cluster would not start.
pub const CLUSTER_PORT: u16 = 61_442;

fn cluster_port() -> anyhow::Result<u16> {
    match std::env::var("BENCH_PG_PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("BENCH_PG_PORT `{port}` is not a port")),
        Err(_) => Ok(CLUSTER_PORT),
    }
}
/// The database each run gets fresh.
const DATABASE: &str = "regina_bench";

/// How to reach or build the system.
#[derive(Clone, Debug)]
pub struct SystemOptions {
    /// An existing broker (skips spawning one).
    pub url: Option<String>,
    /// An existing database (skips the private cluster).
    pub database_url: Option<String>,
    /// The broker's pid when `url` is given.
    pub broker_pid: Option<u32>,
    /// The `regina` binary to spawn.
    pub regina_bin: Option<PathBuf>,
    /// Extra environment for the spawned broker (`KEY=VALUE`).
    pub broker_env: Vec<(String, String)>,
}

/// A running system for one run.
pub struct System {
    /// Broker base URL (broker target).
    pub url: Option<String>,
    /// The benchmark database.
    pub database_url: String,
    /// The broker's pid, when known.
    pub broker_pid: Option<u32>,
    /// The postmaster's pid, when the cluster is ours.
    pub postmaster_pid: Option<u32>,
    /// Broker settings passed through the environment.
    pub broker_settings: Vec<(String, String)>,
    child: Option<Child>,
    /// The spawned broker's failover buffer directory, removed when the run stops.
    buffer_dir: Option<PathBuf>,
}

/// The private cluster, started once per harness invocation.
pub struct Cluster {
    db: DevDb,
}

impl Cluster {
    /// Starts (or reuses) the cluster and applies `pg_conf` (and nothing else set with `alter
    /// system`), restarting when a setting needs it.
    ///
    /// # Errors
    /// PostgreSQL cannot be started or configured.
    pub async fn start(pg_conf: Option<&Path>) -> anyhow::Result<Cluster> {
        let options = DevDbOptions {
            data_dir: PathBuf::from(CLUSTER_DIR),
            port: cluster_port()?,
            fast_unsafe: false,
            memory: false,
        };
        let start = {
            let options = options.clone();
            move || DevDb::start(options)
        };
        let db = tokio::task::spawn_blocking(start).await??;
        let cluster = Cluster { db };
        if let Some(conf) = pg_conf {
            let settings = read_conf(conf)?;
            let admin = connect(&cluster.db.database_url("postgres")).await?;
            // Exactly these settings: one set by hand earlier (`alter system`, e.g. a profiling
            // run's `track_functions`) would otherwise stay, and change what every later run costs.
            admin
                .batch_execute("alter system reset all")
                .await
                .context("alter system reset all")?;
            for (key, value) in &settings {
                admin
                    .batch_execute(&format!(
                        "alter system set {key} = '{}'",
                        value.replace('\'', "''")
                    ))
                    .await
                    .with_context(|| format!("alter system set {key}"))?;
            }
            admin.batch_execute("select pg_reload_conf()").await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let pending: i64 = admin
                .query_one(
                    "select count(*) from pg_settings where pending_restart",
                    &[],
                )
                .await?
                .get(0);
            drop(admin);
            if pending > 0 {
                eprintln!(
                    "regina-bench: restarting the benchmark cluster to apply {}",
                    conf.display()
                );
                cluster.db.stop()?;
                let db = tokio::task::spawn_blocking(move || DevDb::start(options)).await??;
                return Ok(Cluster { db });
            }
        }
        Ok(cluster)
    }

    /// URL of database `name`.
    pub fn database_url(&self, name: &str) -> String {
        self.db.database_url(name)
    }

    /// The postmaster's pid (first line of `postmaster.pid`).
    pub fn postmaster_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.db.data_dir().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }

    /// Stops the cluster.
    ///
    /// # Errors
    /// `pg_ctl stop` fails.
    pub fn stop(&self) -> anyhow::Result<()> {
        Ok(self.db.stop()?)
    }
}

fn read_conf(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| anyhow!("{}: `{line}` is not `key = value`", path.display()))?;
        let value = value.trim().trim_matches('\'').to_owned();
        out.push((key.trim().to_owned(), value));
    }
    Ok(out)
}

async fn connect(url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("connect {url}"))?;
    tokio::spawn(connection);
    Ok(client)
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `explicit`, else the `regina` binary next to this executable.
///
/// # Errors
/// Neither exists.
pub fn regina_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(bin) = explicit {
        return Ok(bin.to_owned());
    }
    let exe = std::env::current_exe()?;
    let bin = exe.with_file_name("regina");
    if !bin.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p regina` or pass --regina-bin",
            bin.display()
        );
    }
    Ok(bin)
}

impl System {
    /// A fresh database (and broker, for `broker`) for one run.
    ///
    /// # Errors
    /// The database or the broker cannot be prepared.
    pub async fn start(
        options: &SystemOptions,
        cluster: Option<&Cluster>,
        broker: bool,
    ) -> anyhow::Result<System> {
        let (database_url, postmaster_pid) = match (&options.database_url, cluster) {
            (Some(url), _) => (url.clone(), None),
            (None, Some(cluster)) => {
                let admin = connect(&cluster.database_url("postgres")).await?;
                admin
                    .batch_execute(&format!("drop database if exists {DATABASE} with (force)"))
                    .await?;
                admin
                    .batch_execute(&format!("create database {DATABASE}"))
                    .await?;
                (cluster.database_url(DATABASE), cluster.postmaster_pid())
            }
            (None, None) => {
                bail!("no database: pass --database-url or let the harness start its cluster")
            }
        };
        let config = regina_broker::Config {
            database_url: Some(database_url.clone()),
            ..regina_broker::Config::default()
        };
        // A broker this run spawns applies its own schema and functions when it starts, so any
        // build can be measured against this harness (`--regina-bin`); an existing broker or no
        // broker gets the harness's.
        let spawns_broker = broker && options.url.is_none();
        if !spawns_broker {
            regina_broker::migrate(&config)
                .await
                .context("migrate the benchmark database")?;
        }
        let db = connect(&database_url).await?;
        // pg_stat_statements is optional: the telemetry reads it when present.
        let _ = db
            .batch_execute("create extension if not exists pg_stat_statements")
            .await;
        drop(db);

        if !broker {
            return Ok(System {
                url: None,
                database_url,
                broker_pid: None,
                postmaster_pid,
                broker_settings: Vec::new(),
                child: None,
                buffer_dir: None,
            });
        }
        if let Some(url) = &options.url {
            wait_healthy(url, Duration::from_secs(10)).await?;
            return Ok(System {
                url: Some(url.clone()),
                database_url,
                broker_pid: options.broker_pid,
                postmaster_pid,
                broker_settings: Vec::new(),
                child: None,
                buffer_dir: None,
            });
        }
        let port = free_port()?;
        // A failover buffer of its own: an instance locks its directory.
        let buffer_dir = std::env::temp_dir().join(format!("regina-bench-buffer-{port}"));
        let mut command = Command::new(regina_bin(options.regina_bin.as_deref())?);
        command
            .arg("serve")
            .env("DATABASE_URL", &database_url)
            .env("PORT", port.to_string())
            .env("HOST", "127.0.0.1")
            .env("LOG_LEVEL", "warn")
            .env("FILE_BUFFER_DIR", &buffer_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (key, value) in &options.broker_env {
            command.env(key, value);
        }
        let child = command.spawn().context("spawn regina serve")?;
        let url = format!("http://127.0.0.1:{port}");
        wait_healthy(&url, Duration::from_secs(30)).await?;
        Ok(System {
            url: Some(url),
            database_url,
            broker_pid: child.id(),
            postmaster_pid,
            broker_settings: options.broker_env.clone(),
            child: Some(child),
            buffer_dir: Some(buffer_dir),
        })
    }

    /// Stops the broker this run spawned (SIGTERM via kill on drop is not graceful; the run is
    /// over, so the database state no longer matters).
    pub async fn stop(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
        if let Some(dir) = self.buffer_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
