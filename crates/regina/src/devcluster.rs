//! The development database of `regina serve` and `regina migrate` when no database is configured:
//! a private cluster under `<project>/.regina/pgdata` on port 55432, database `regina`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::parser::ValueSource;
use clap::ArgMatches;
use regina_devdb::{DevDb, DevDbOptions};

use regina_broker::Config;

/// Port of the development cluster (the test kit picks its own, from 20000–39999).
const DEV_PORT: u16 = 55432;
/// Database the broker uses on the development cluster.
const DEV_DATABASE: &str = "regina";

/// Whether the user chose a database: `DATABASE_URL` or any `PG_*` variable set (non-empty), or a
/// `--database-url` / `--pg-*` flag given.
pub fn database_configured(matches: &ArgMatches) -> bool {
    let from_env = std::env::vars_os().any(|(name, value)| {
        let name = name.to_string_lossy();
        (name == "DATABASE_URL" || name.starts_with("PG_")) && !value.is_empty()
    });
    let from_flag = matches.ids().any(|id| {
        let id = id.as_str();
        (id == "database_url" || id.starts_with("pg_"))
            && matches.value_source(id) == Some(ValueSource::CommandLine)
    });
    from_env || from_flag
}

/// A started (or reused) development cluster.
pub struct DevCluster {
    db: DevDb,
}

impl DevCluster {
    /// Starts the cluster, creates the database if missing and points `config` at it.
    pub async fn start(config: &mut Config) -> anyhow::Result<DevCluster> {
        let data_dir = dev_dir()?.join("pgdata");
        let options = DevDbOptions {
            data_dir,
            port: DEV_PORT,
            fast_unsafe: false,
            memory: false,
        };
        let db = tokio::task::spawn_blocking(move || DevDb::start(options))
            .await
            .context("dev database start task")??;
        let action = if db.started() {
            "started"
        } else {
            "reusing running"
        };
        tracing::info!(data_dir = %db.data_dir().display(), port = db.port(), "{action} dev database cluster");
        let cluster = DevCluster { db };
        if let Err(e) = cluster.db.database_create_if_missing(DEV_DATABASE).await {
            // Leave no server behind that nothing will use.
            if cluster.started() {
                if let Err(stop) = cluster.stop().await {
                    tracing::warn!("{stop:#}");
                }
            }
            return Err(e.into());
        }
        config.database_url = Some(cluster.database_url());
        Ok(cluster)
    }

    /// Whether this process started the server (rather than reusing a running one).
    pub fn started(&self) -> bool {
        self.db.started()
    }

    /// URL of the development database.
    pub fn database_url(&self) -> String {
        self.db.database_url(DEV_DATABASE)
    }

    /// Stops the cluster.
    pub async fn stop(self) -> anyhow::Result<()> {
        let db = self.db;
        tokio::task::spawn_blocking(move || db.stop())
            .await
            .context("dev database stop task")??;
        tracing::info!("dev database cluster stopped");
        Ok(())
    }
}

/// The development directory `<project>/.regina` (git-ignored): the cluster and the development
/// encryption key live there.
pub fn dev_dir() -> anyhow::Result<PathBuf> {
    Ok(project_dir()?.join(".regina"))
}

/// The nearest ancestor of the current directory holding a Cargo workspace, else the current one.
fn project_dir() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("read the current directory")?;
    let project = cwd
        .ancestors()
        .find(|dir| is_workspace_root(dir))
        .unwrap_or(&cwd);
    Ok(project.to_owned())
}

fn is_workspace_root(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|text| text.lines().any(|line| line.trim() == "[workspace]"))
}
