//! A private PostgreSQL cluster for development, tests and benchmarks; never part of the broker
//! that runs in production.
//!
//! `regina serve` without any database setting, the test kit and the benchmark harness run
//! PostgreSQL from the system's binaries (`/usr/lib/postgresql/<version>/bin`, else
//! `pg_config --bindir`) under a directory they own, listening on 127.0.0.1 only. PostgreSQL
//! refuses to run as root, so when this process is root every server command runs as the
//! `postgres` OS user through `runuser`.
//!
//! When the `postgres` user cannot reach the requested data directory (a checkout under a `0700`
//! home, say), the cluster lives under the system temp directory instead, in a directory named
//! after a hash of the requested path; that path is then recorded in `<data_dir>.location` so that
//! scripts (`make clean-db`, `make test`) find it. A throw-away cluster may ask for memory
//! ([`DevDbOptions::memory`]): it then lives in `/dev/shm`, named and recorded the same way.

mod data_dir;
mod tools;

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use self::data_dir::data_dir_prepare;
use self::tools::{postgres_user, process_is_root, run, Tools};

/// Where to put a private cluster and how to run it.
#[derive(Clone, Debug)]
pub struct DevDbOptions {
    /// Data directory; created and initialised with `initdb` when it holds no cluster yet.
    pub data_dir: PathBuf,
    /// TCP port on 127.0.0.1 (used when this call starts the server; a running server keeps its own).
    pub port: u16,
    /// Turn off `fsync`, `synchronous_commit` and `full_page_writes`: a crash may corrupt the
    /// cluster. For throw-away test clusters only.
    pub fast_unsafe: bool,
    /// Place a new cluster on the memory file system (`/dev/shm`, when it is a tmpfs with 2 GiB
    /// free) rather than in `data_dir`, which then names it in `<data_dir>.location`. For
    /// throw-away clusters whose work is mostly creating and dropping databases: on a journaling
    /// file system each copy of a template costs kernel time in file creation, on tmpfs a tenth
    /// of it. A cluster already in `data_dir` stays there.
    pub memory: bool,
}

/// A running private cluster. Dropping it leaves the server running; call [`DevDb::stop`].
#[derive(Debug)]
pub struct DevDb {
    data_dir: PathBuf,
    port: u16,
    tools: Tools,
    started: bool,
}

/// Why a private cluster could not be started, stopped or used.
#[derive(Debug, thiserror::Error)]
pub enum DevDbError {
    /// A PostgreSQL program is missing.
    #[error(
        "PostgreSQL program `{binary}` not found (looked in {searched}); \
         install the `postgresql` package (apt-get install -y postgresql)"
    )]
    BinaryMissing {
        /// Program name, e.g. `initdb`.
        binary: String,
        /// Where it was looked for.
        searched: String,
    },
    /// Running as root needs `runuser` and the `postgres` OS user.
    #[error(
        "running as root, PostgreSQL must run as the `postgres` OS user: {0} \
         (install the `postgresql` package, which creates that user)"
    )]
    PostgresUserUnavailable(String),
    /// A file-system operation failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done, with the path.
        action: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A PostgreSQL program exited with an error.
    #[error("`{command}` failed ({status}):\n{output}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard output and error.
        output: String,
    },
    /// The server did not come up.
    #[error("PostgreSQL did not start on port {port} with data directory {data_dir}: {reason}\nlast lines of {log}:\n{log_tail}")]
    StartFailed {
        /// Data directory.
        data_dir: PathBuf,
        /// Requested port.
        port: u16,
        /// What `pg_ctl` said.
        reason: String,
        /// Server log file.
        log: PathBuf,
        /// Its last lines.
        log_tail: String,
    },
    /// The data directory was made by another major version than the binaries found.
    #[error(
        "data directory {data_dir} belongs to PostgreSQL {data_version} but the binaries found are \
         PostgreSQL {binary_version}; delete the directory (make clean-db) or install PostgreSQL {data_version}"
    )]
    VersionMismatch {
        /// Data directory.
        data_dir: PathBuf,
        /// Major version recorded in `PG_VERSION`.
        data_version: String,
        /// Major version of the binaries.
        binary_version: String,
    },
    /// A SQL statement on the cluster failed.
    #[error("database `{database}` on the private cluster: {}", pg_message(.source))]
    Database {
        /// Database concerned.
        database: String,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
}

/// Lines of the server log shown when the server fails to start.
const LOG_TAIL_LINES: usize = 30;
/// Seconds `pg_ctl` waits for start and stop.
const PG_CTL_WAIT_SECONDS: &str = "60";
/// `sun_path` holds 108 bytes; beyond that PostgreSQL cannot create its socket.
const SOCKET_PATH_BYTES_MAX: usize = 100;

impl DevDb {
    /// Starts the cluster in `opts.data_dir`, creating it with `initdb` first when needed, or
    /// reuses the server already running on that directory. Blocks while PostgreSQL starts (call
    /// it through `spawn_blocking` from async code).
    ///
    /// # Errors
    /// A missing PostgreSQL program, an unusable data directory, a failing `initdb`, or a server
    /// that does not start (the error shows the end of the server log).
    pub fn start(opts: DevDbOptions) -> Result<DevDb, DevDbError> {
        let owner = if process_is_root() {
            Some(postgres_user()?)
        } else {
            None
        };
        let data_dir = data_dir_prepare(&opts.data_dir, owner.as_ref(), opts.memory)?;
        let data_version = fs::read_to_string(data_dir.join("PG_VERSION"))
            .ok()
            .map(|v| v.trim().to_owned());
        let tools = Tools::find(data_version.as_deref(), owner)?;
        if let Some(data_version) = data_version {
            tools.version_check(&data_dir, &data_version)?;
        } else {
            tools.initdb(&data_dir, opts.fast_unsafe)?;
        }
        let mut db = DevDb {
            data_dir,
            port: opts.port,
            tools,
            started: false,
        };
        match db.running_port() {
            Some(port) => db.port = port,
            None => {
                db.server_start(opts.fast_unsafe)?;
                db.started = true;
            }
        }
        Ok(db)
    }

    /// The effective data directory: the requested one, its memory directory, or its fallback under
    /// the temp directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The TCP port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether [`DevDb::start`] started the server (false: it was already running and is reused).
    pub fn started(&self) -> bool {
        self.started
    }

    /// Connection URL of database `db` as the `postgres` superuser (trust authentication).
    pub fn database_url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates database `name` unless it exists; safe against concurrent callers.
    ///
    /// # Errors
    /// The server cannot be reached or refuses the statement.
    pub async fn database_create_if_missing(&self, name: &str) -> Result<(), DevDbError> {
        let db_error = |source| DevDbError::Database {
            database: name.to_owned(),
            source,
        };
        let (client, connection) =
            tokio_postgres::connect(&self.database_url("postgres"), tokio_postgres::NoTls)
                .await
                .map_err(db_error)?;
        let connection = tokio::spawn(connection);
        let exists = client
            .query_opt("select 1 from pg_database where datname = $1", &[&name])
            .await
            .map_err(db_error)?
            .is_some();
        if !exists {
            let created = client
                .batch_execute(&format!("create database {}", identifier_quote(name)))
                .await;
            match created {
                Err(e)
                    if e.code() != Some(&tokio_postgres::error::SqlState::DUPLICATE_DATABASE) =>
                {
                    return Err(db_error(e))
                }
                _ => {}
            }
        }
        drop(client);
        // The connection task ends once the client is gone; its result carries nothing new.
        let _ = connection.await;
        Ok(())
    }

    /// Stops the server (`pg_ctl stop -m fast`: open sessions are disconnected). Stopping a server
    /// that is not running succeeds.
    ///
    /// # Errors
    /// `pg_ctl` fails to stop the server.
    pub fn stop(&self) -> Result<(), DevDbError> {
        if self.running_port().is_none() {
            return Ok(());
        }
        let mut command = self.tools.command("pg_ctl");
        command.arg("-D").arg(&self.data_dir).args([
            "-m",
            "fast",
            "-w",
            "-s",
            "-t",
            PG_CTL_WAIT_SECONDS,
            "stop",
        ]);
        run(command).map(drop)
    }

    /// The port of the server running on this data directory, if one runs.
    fn running_port(&self) -> Option<u16> {
        let mut command = self.tools.command("pg_ctl");
        command.arg("-D").arg(&self.data_dir).arg("status");
        let running = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !running {
            return None;
        }
        // postmaster.pid, line 4: the port the server listens on.
        fs::read_to_string(self.data_dir.join("postmaster.pid"))
            .ok()?
            .lines()
            .nth(3)?
            .trim()
            .parse()
            .ok()
    }

    fn server_start(&self, fast_unsafe: bool) -> Result<(), DevDbError> {
        self.conf_write(fast_unsafe)?;
        let log = self.data_dir.join("server.log");
        let mut command = self.tools.command("pg_ctl");
        command
            .arg("-D")
            .arg(&self.data_dir)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-s", "-t", PG_CTL_WAIT_SECONDS, "start"]);
        run(command).map(drop).map_err(|e| DevDbError::StartFailed {
            data_dir: self.data_dir.clone(),
            port: self.port,
            reason: e.to_string(),
            log_tail: file_tail(&log, LOG_TAIL_LINES),
            log,
        })
    }

    /// Writes `regina.conf`, which `postgresql.conf` includes; rewritten at each start so that the
    /// options given to this start apply.
    fn conf_write(&self, fast_unsafe: bool) -> Result<(), DevDbError> {
        let data_dir = self.data_dir.to_string_lossy();
        let socket_dir = if data_dir.len() + ".s.PGSQL.65535".len() < SOCKET_PATH_BYTES_MAX {
            conf_quote(&data_dir)
        } else {
            // Too long for a socket path: TCP only (the default socket directory may not exist).
            conf_quote("")
        };
        let mut conf =
            String::from("# Written by Regina's devdb at every start; edits are lost.\n");
        let _ = write!(
            conf,
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = {socket_dir}\n\
             max_connections = 200\nshared_buffers = '256MB'\n",
            self.port
        );
        if fast_unsafe {
            conf.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        let path = self.data_dir.join("regina.conf");
        fs::write(&path, conf).map_err(|e| io_error(e, "write", &path))?;
        self.tools.chown(&path)
    }
}

fn file_tail(path: &Path, lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read: {e})"),
    }
}

fn io_error(source: io::Error, verb: &str, path: &Path) -> DevDbError {
    DevDbError::Io {
        action: format!("{verb} {}", path.display()),
        source,
    }
}

/// The server's message and SQLSTATE when there is one (the driver's `Display` says "db error").
fn pg_message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// A value for `postgresql.conf`: single-quoted, quotes doubled.
fn conf_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// A SQL identifier: double-quoted, quotes doubled.
fn identifier_quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_doubles_quotes() {
        assert_eq!(conf_quote("a'b"), "'a''b'");
        assert_eq!(identifier_quote("t\"x"), "\"t\"\"x\"");
    }
}
