//! The system a fault run breaks: a private PostgreSQL cluster of its own (so stopping it harms
//! nobody else) and broker processes that can be killed, restarted and stopped gracefully.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};
use regina_devdb::{DevDb, DevDbOptions};
use tokio::process::{Child, Command};

use crate::target::wait_healthy;

/// Database the brokers use.
const DATABASE: &str = "regina_faults";
/// How long a (re)started broker may take to answer `/health`.
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

/// A private cluster in a directory of its own, deleted when the run is over.
pub struct Database {
    options: DevDbOptions,
    db: DevDb,
}

impl Database {
    /// Initialises and starts a cluster under `dir` on a free port, with the `regina_faults`
    /// database migrated.
    ///
    /// # Errors
    /// PostgreSQL cannot be started or migrated.
    pub async fn start(dir: &Path) -> anyhow::Result<Database> {
        let options = DevDbOptions {
            data_dir: dir.join("pg"),
            port: free_port()?,
            fast_unsafe: false,
            memory: false,
        };
        let db = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || DevDb::start(options)).await??
        };
        db.database_create_if_missing(DATABASE).await?;
        let database = Database { options, db };
        let config = regina_broker::Config {
            database_url: Some(database.url()),
            ..regina_broker::Config::default()
        };
        regina_broker::migrate(&config)
            .await
            .context("migrate the fault database")?;
        Ok(database)
    }

    /// The brokers' database URL.
    pub fn url(&self) -> String {
        self.db.database_url(DATABASE)
    }

    /// Stops PostgreSQL (`pg_ctl stop -m fast`: every session is cut).
    ///
    /// # Errors
    /// `pg_ctl` fails.
    pub async fn stop(&self) -> anyhow::Result<()> {
        // `pg_ctl` blocks; keep the other tasks of this runtime going meanwhile.
        tokio::task::block_in_place(|| self.db.stop())?;
        Ok(())
    }

    /// Starts PostgreSQL again on the same directory and port.
    ///
    /// # Errors
    /// PostgreSQL does not start.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        let options = self.options.clone();
        self.db = tokio::task::spawn_blocking(move || DevDb::start(options)).await??;
        Ok(())
    }

    /// Stops the cluster and deletes its directory.
    pub fn remove(self) {
        if let Err(error) = self.db.stop() {
            eprintln!("regina-bench: stopping the fault cluster: {error}");
        }
        let _ = std::fs::remove_dir_all(self.db.data_dir());
        let _ = std::fs::remove_dir_all(&self.options.data_dir);
    }
}

/// One `regina serve` process on a fixed port, restartable.
pub struct Broker {
    bin: PathBuf,
    port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
    /// Times it was killed.
    pub kills: u32,
}

impl Broker {
    /// Spawns a broker on a free port with its own failover-buffer directory under `dir`, and
    /// waits until it is healthy.
    ///
    /// # Errors
    /// The binary cannot be spawned or the broker does not become healthy.
    pub async fn start(
        bin: &Path,
        database_url: &str,
        dir: &Path,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<Broker> {
        let port = free_port()?;
        let buffer = dir.join(format!("buffer-{port}"));
        std::fs::create_dir_all(&buffer)?;
        let mut env: Vec<(String, String)> = vec![
            ("DATABASE_URL".into(), database_url.into()),
            ("HOST".into(), "127.0.0.1".into()),
            ("PORT".into(), port.to_string()),
            ("FILE_BUFFER_DIR".into(), buffer.display().to_string()),
            ("LOG_LEVEL".into(), "warn".into()),
        ];
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let mut broker = Broker {
            bin: bin.to_owned(),
            port,
            env,
            child: None,
            kills: 0,
        };
        broker.spawn().await?;
        Ok(broker)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let mut command = Command::new(&self.bin);
        command
            .arg("serve")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        self.child = Some(command.spawn().context("spawn regina serve")?);
        wait_healthy(&self.url(), HEALTHY_WITHIN).await
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// `kill -9`, then waits for the process to be gone.
    ///
    /// # Errors
    /// The signal cannot be sent.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.context("kill -9 the broker")?;
            self.kills += 1;
        }
        Ok(())
    }

    /// Starts it again on the same port and buffer directory; waits until healthy.
    ///
    /// # Errors
    /// As [`Broker::start`].
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.spawn().await
    }

    /// SIGTERM, then waits up to `within` for the exit; returns whether it exited in time
    /// (with status success).
    ///
    /// # Errors
    /// The signal cannot be sent.
    pub async fn terminate(&mut self, within: Duration) -> anyhow::Result<bool> {
        let Some(mut child) = self.child.take() else {
            return Ok(true);
        };
        let Some(pid) = child.id() else {
            return Ok(true);
        };
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        if !status.success() {
            bail!("kill -TERM {pid} failed");
        }
        match tokio::time::timeout(within, child.wait()).await {
            Ok(exit) => Ok(exit?.success()),
            Err(_) => {
                let _ = child.kill().await;
                Ok(false)
            }
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
