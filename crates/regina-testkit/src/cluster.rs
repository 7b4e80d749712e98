//! The shared test cluster and the template database every test database is copied from.
//!
//! One cluster per machine (per target directory) serves every test process: the first process to
//! need it starts it under a file lock, the others reuse it, and nobody here stops it (`make test`
//! does, at the end). Each test gets its own database, copied from a template that holds the
//! migrated schema; the template's name is a hash of `sql/`, so editing the SQL builds a new one.
//! A new cluster keeps its data in memory when it can (see [`memory_requested`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regina_devdb::{DevDb, DevDbOptions};
use tokio::sync::OnceCell;
use tokio_postgres::error::SqlState;

/// Ports a new test cluster may take: the first free one from an offset derived from the target
/// directory, so two checkouts on one machine get different clusters (a running one keeps its
/// port). The range ends below Linux's ephemeral ports (from 32768), which outgoing connections
/// take: a cluster there can fail to bind a port a client connection has just used. The
/// development cluster of `regina serve` uses 55432, outside this range.
const TEST_PORT_BASE: u16 = 20_000;
const TEST_PORT_SPAN: u16 = 12_000;
/// The environment variable that keeps a new test cluster on disk (value `0`).
const MEMORY_VAR: &str = "REGINA_TEST_PG_MEMORY";
/// Advisory-lock key serialising template creation across test processes.
const TEMPLATE_LOCK_KEY: i64 = 0x7265_6769_6e61; // "regina"
/// `create database … template` fails while a session lingers on the template; retry this often.
const CREATE_ATTEMPTS_MAX: u32 = 100;
const CREATE_RETRY_DELAY: Duration = Duration::from_millis(50);

static CLUSTER: OnceCell<Cluster> = OnceCell::const_new();
static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// How to reach the shared test cluster.
#[derive(Debug)]
pub(crate) struct Cluster {
    port: u16,
}

impl Cluster {
    /// URL of database `db` on the cluster, as the `postgres` superuser.
    pub(crate) fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }
}

/// Creates a fresh database from the migrated template and returns its URL. Its name is
/// `t_<pid>_<uuid>`, so that a later process can tell it from the databases of live ones and drop
/// it if this process ends without doing so; with `keep` it is `t_keep_<uuid>` instead, and stays
/// until the cluster is started again.
pub(crate) async fn database_create(keep: bool) -> String {
    let cluster = cluster().await;
    let template = TEMPLATE.get_or_init(|| template_ensure(cluster)).await;
    let id = uuid::Uuid::new_v4().simple();
    let name = if keep {
        format!("t_keep_{id}")
    } else {
        format!("t_{}_{id}", std::process::id())
    };
    let admin = connect(&cluster.url("postgres")).await;
    let sql = format!("create database {name} template {template}");
    for attempt in 1.. {
        match admin.batch_execute(&sql).await {
            Ok(()) => break,
            Err(e)
                if e.code() == Some(&SqlState::OBJECT_IN_USE) && attempt < CREATE_ATTEMPTS_MAX =>
            {
                tokio::time::sleep(CREATE_RETRY_DELAY).await;
            }
            Err(e) => panic!("regina-testkit: {sql}: {}", describe(&e)),
        }
    }
    cluster.url(&name)
}

/// Drops the database at `database_url`, ending any session still on it.
///
/// # Errors
/// PostgreSQL's message when the cluster cannot be reached or the database not dropped.
pub(crate) async fn database_drop(database_url: &str) -> Result<(), String> {
    let name = database_name(database_url);
    let (admin, connection) =
        tokio_postgres::connect(&admin_url(database_url), tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("drop {name}: connect: {}", describe(&e)))?;
    let connection = tokio::spawn(connection);
    let sql = format!("drop database if exists \"{name}\" with (force)");
    let outcome = admin
        .batch_execute(&sql)
        .await
        .map_err(|e| format!("{sql}: {}", describe(&e)));
    drop(admin);
    let _ = connection.await;
    outcome
}

/// The database name at the end of `database_url` (without query parameters).
fn database_name(database_url: &str) -> &str {
    let last = database_url.rsplit('/').next().unwrap_or(database_url);
    last.split('?').next().unwrap_or(last)
}

/// The URL of the `postgres` database on the cluster holding `database_url`.
pub(crate) fn admin_url(database_url: &str) -> String {
    match database_url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/postgres"),
        None => database_url.to_owned(),
    }
}

/// A connected client; its connection task runs on the caller's runtime.
pub(crate) async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("regina-testkit: connect to {url}: {}", describe(&e)));
    tokio::spawn(connection);
    client
}

async fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(cluster_start).await
}

/// Starts (or joins) the shared cluster. The file lock spans start and cleanup so that no other
/// process creates a test database while stale ones are dropped.
async fn cluster_start() -> Cluster {
    let target = target_dir();
    let requested = target.join("regina-test-pg");
    let lock_path = target.join("regina-test-pg.lock");
    let (db, lock) = tokio::task::spawn_blocking(move || {
        fs::create_dir_all(&target).expect("regina-testkit: create the target directory");
        let lock = fs::File::create(&lock_path).expect("regina-testkit: create the cluster lock");
        lock.lock().expect("regina-testkit: take the cluster lock");
        let options = DevDbOptions {
            data_dir: requested.clone(),
            port: free_port(&requested),
            fast_unsafe: true,
            memory: memory_requested(),
        };
        let db = DevDb::start(options).unwrap_or_else(|e| panic!("regina-testkit: {e}"));
        if db.started() && db.data_dir() != requested {
            eprintln!(
                "regina-testkit: the test cluster lives in {}",
                db.data_dir().display()
            );
        }
        (db, lock)
    })
    .await
    .expect("regina-testkit: cluster start task");
    let cluster = Cluster { port: db.port() };
    if db.started() {
        // Nothing can be using a cluster that was stopped: its databases are leftovers.
        stale_databases_drop(&cluster).await;
    } else {
        orphaned_databases_drop(&cluster).await;
    }
    drop(lock);
    cluster
}

/// Whether a new test cluster may live in memory (`/dev/shm`): yes unless
/// `REGINA_TEST_PG_MEMORY=0`. Half of a full run's CPU time went to the kernel's file creation
/// and removal for the databases copied and dropped on a disk file system.
fn memory_requested() -> bool {
    std::env::var_os(MEMORY_VAR).is_none_or(|v| v != "0")
}

/// Drops the databases of test processes that have ended (`t_<pid>_<uuid>` with no such
/// process): a database is normally dropped when its test is done with it, but a process that
/// exits leaves the last few behind. Best effort: a failure only warns.
async fn orphaned_databases_drop(cluster: &Cluster) {
    // Without /proc, whether a process lives cannot be told: leave everything.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let admin = connect(&cluster.url("postgres")).await;
    let rows = match admin
        .query(
            r"select datname from pg_database where datname like 't\_%'",
            &[],
        )
        .await
    {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("regina-testkit: list test databases: {}", describe(&e));
            return;
        }
    };
    for row in rows {
        let name: String = row.get(0);
        let Some(pid) = creator_pid(&name) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Err(e) = database_drop(&cluster.url(&name)).await {
            eprintln!("regina-testkit: {e}");
        }
    }
}

/// The pid in a test database's name `t_<pid>_<uuid>`.
fn creator_pid(name: &str) -> Option<u32> {
    let (pid, id) = name.strip_prefix("t_")?.split_once('_')?;
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    pid.parse().ok()
}

async fn stale_databases_drop(cluster: &Cluster) {
    let admin = connect(&cluster.url("postgres")).await;
    let rows = admin
        .query(
            r"select datname from pg_database where datname like 't\_%' or datname like 'tpl\_%'",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("regina-testkit: list stale databases: {}", describe(&e)));
    for row in rows {
        let name: String = row.get(0);
        // Separate statements: `drop database` refuses to run in a multi-statement string.
        execute(&admin, &format!("alter database {name} is_template false")).await;
        execute(&admin, &format!("drop database {name} with (force)")).await;
    }
}

/// The name of the migrated template for the current `sql/`, building it when missing. A
/// PostgreSQL advisory lock serialises builders across processes; a template left half-built
/// by a crashed builder is not marked `is_template` and is rebuilt.
async fn template_ensure(cluster: &Cluster) -> String {
    let name = format!("tpl_{:016x}", sql_hash(&workspace_dir().join("sql")));
    let admin = connect(&cluster.url("postgres")).await;
    admin
        .execute("select pg_advisory_lock($1)", &[&TEMPLATE_LOCK_KEY])
        .await
        .unwrap_or_else(|e| panic!("regina-testkit: take the template lock: {}", describe(&e)));
    let ready: Option<bool> = admin
        .query_opt(
            "select datistemplate from pg_database where datname = $1",
            &[&name],
        )
        .await
        .unwrap_or_else(|e| panic!("regina-testkit: look up the template: {}", describe(&e)))
        .map(|row| row.get(0));
    if ready != Some(true) {
        template_build(&admin, cluster, &name, ready.is_some()).await;
    }
    // Ending the session releases the advisory lock.
    drop(admin);
    name
}

async fn template_build(
    admin: &tokio_postgres::Client,
    cluster: &Cluster,
    name: &str,
    exists: bool,
) {
    if exists {
        execute(admin, &format!("drop database {name} with (force)")).await;
    }
    execute(admin, &format!("create database {name}")).await;
    let config = regina_broker::Config {
        database_url: Some(cluster.url(name)),
        ..regina_broker::Config::default()
    };
    regina_broker::migrate(&config)
        .await
        .unwrap_or_else(|e| panic!("regina-testkit: migrate the template database {name}: {e}"));
    // Copies need the template free of sessions; the migration's pool may not be closed yet.
    admin
        .execute(
            "select pg_terminate_backend(pid) from pg_stat_activity \
             where datname = $1 and pid <> pg_backend_pid()",
            &[&name],
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "regina-testkit: end sessions on the template: {}",
                describe(&e)
            )
        });
    execute(admin, &format!("alter database {name} is_template true")).await;
}

/// Runs one statement, panicking with PostgreSQL's own message.
async fn execute(client: &tokio_postgres::Client, sql: &str) {
    if let Err(e) = client.batch_execute(sql).await {
        panic!("regina-testkit: {sql}: {}", describe(&e));
    }
}

/// The server's message and SQLSTATE when there is one (the driver's `Display` says "db error").
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// A port for a new cluster on `data_dir` (see `TEST_PORT_BASE`); used only if this process
/// starts the cluster.
fn free_port(data_dir: &Path) -> u16 {
    let offset = (fnv1a(FNV_OFFSET, data_dir.as_os_str().as_encoded_bytes())
        % u64::from(TEST_PORT_SPAN)) as u16;
    (0..TEST_PORT_SPAN)
        .map(|i| TEST_PORT_BASE + (offset + i) % TEST_PORT_SPAN)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("regina-testkit: no free port for the test cluster")
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a of `bytes`, continuing from `hash`.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &byte| {
        (h ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// 64-bit FNV-1a over every file under `dir` (relative path and content, in path order).
fn sql_hash(dir: &Path) -> u64 {
    let mut files = Vec::new();
    files_collect(dir, &mut files);
    files.sort();
    let mut hash = FNV_OFFSET;
    for file in files {
        let relative = file.strip_prefix(dir).unwrap_or(&file);
        let content = fs::read(&file)
            .unwrap_or_else(|e| panic!("regina-testkit: read {}: {e}", file.display()));
        hash = fnv1a(hash, relative.as_os_str().as_encoded_bytes());
        hash = fnv1a(hash, &[0]);
        hash = fnv1a(hash, &content);
    }
    hash
}

fn files_collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("regina-testkit: read {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The workspace root (this crate lives in `crates/regina-testkit`).
fn workspace_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fs::canonicalize(&dir).unwrap_or(dir)
}

/// `CARGO_TARGET_DIR` when set (relative to the workspace), else the workspace's `target/`.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_dir().join(dir),
        _ => workspace_dir().join("target"),
    }
}
