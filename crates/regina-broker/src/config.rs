//! Every setting of the broker (http-api.md §6 limits, §7 configuration), with its default and
//! unit.
//!
//! Each field is an environment variable and a `regina serve` flag of the same name in kebab case;
//! flags win over variables. Each default is written once, in [`defaults`] (or in the setting's
//! `#[arg]` for enumerations), and given to the command line; [`Config::default`] reads the command
//! line's defaults back, `regina serve --help` shows them, and the README's settings table is
//! generated from the same command line (`regina settings`).

use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::args::{command_line_defaults, parse_flag};
use crate::secret::Secret;

/// The default of every setting with one, as the command line takes it ([`Config::default`]
/// reads it back from there).
pub mod defaults {
    /// `HOST`.
    pub const HOST: &str = "0.0.0.0";
    /// `PORT`.
    pub const PORT: u16 = 6632;
    /// `LOG_LEVEL`.
    pub const LOG_LEVEL: &str = "info";
    /// `CORS_ALLOW_ORIGIN`.
    pub const CORS_ALLOW_ORIGIN: &str = "*";
    /// `WEBAPP_ROOT`: the dashboard built into the binary.
    pub const WEBAPP_ROOT: &str = "builtin";
    /// `SHUTDOWN_GRACE_MS`, milliseconds.
    pub const SHUTDOWN_GRACE_MS: u64 = 10_000;
    /// `POP_EMPTY_STATUS`.
    pub const POP_EMPTY_STATUS: u16 = 204;
    /// `FILE_BUFFER_DIR`.
    pub const FILE_BUFFER_DIR: &str = "/var/lib/regina/buffer";
    /// `FILE_BUFFER_FLUSH_MS`, milliseconds.
    pub const FILE_BUFFER_FLUSH_MS: u64 = 100;
    /// `FILE_BUFFER_MAX_BATCH`, records per replay transaction.
    pub const FILE_BUFFER_MAX_BATCH: usize = 1_000;
    /// `FILE_BUFFER_EVENTS_PER_FILE`, records per segment.
    pub const FILE_BUFFER_EVENTS_PER_FILE: u64 = 10_000;
    /// `FILE_BUFFER_BYTES_MAX`, bytes (1 GiB).
    pub const FILE_BUFFER_BYTES_MAX: u64 = 1024 * 1024 * 1024;
    /// `PG_HOST`.
    pub const PG_HOST: &str = "localhost";
    /// `PG_PORT`.
    pub const PG_PORT: u16 = 5432;
    /// `PG_DB`.
    pub const PG_DB: &str = "postgres";
    /// `PG_USER`.
    pub const PG_USER: &str = "postgres";
    /// `DB_POOL_SIZE`, connections.
    pub const DB_POOL_SIZE: usize = 16;
    /// `DB_POOL_MIN`, connections opened at start; the others open when every open one is busy.
    pub const DB_POOL_MIN: usize = 2;
    /// `DB_CONNECTION_TIMEOUT`, milliseconds.
    pub const DB_CONNECTION_TIMEOUT_MS: u64 = 2_000;
    /// `DB_STATEMENT_TIMEOUT`, milliseconds.
    pub const DB_STATEMENT_TIMEOUT_MS: u64 = 30_000;
    /// `DB_LOCK_TIMEOUT`, milliseconds.
    pub const DB_LOCK_TIMEOUT_MS: u64 = 10_000;
    /// `DB_TCP_USER_TIMEOUT_MS`, milliseconds.
    pub const DB_TCP_USER_TIMEOUT_MS: u64 = 30_000;
    /// `DB_KEEPALIVES_IDLE`, seconds.
    pub const DB_KEEPALIVES_IDLE_S: u64 = 60;
    /// `DB_KEEPALIVES_INTERVAL`, seconds.
    pub const DB_KEEPALIVES_INTERVAL_S: u64 = 10;
    /// `DB_KEEPALIVES_COUNT`, probes.
    pub const DB_KEEPALIVES_COUNT: u32 = 3;
    /// `BODY_BYTES_MAX`, bytes (16 MiB).
    pub const BODY_BYTES_MAX: usize = 16 * 1024 * 1024;
    /// `HTTP_READ_BUFFER_BYTES_MAX`, bytes (16 KiB).
    pub const HTTP_READ_BUFFER_BYTES_MAX: usize = 16 * 1024;
    /// `BODY_BYTES_HELD_MAX`, bytes (2 MiB).
    pub const BODY_BYTES_HELD_MAX: usize = 2 * 1024 * 1024;
    /// `JSON_DEPTH_MAX`, nesting levels.
    pub const JSON_DEPTH_MAX: usize = 64;
    /// `PUSH_ITEMS_MAX`, items.
    pub const PUSH_ITEMS_MAX: usize = 10_000;
    /// `ACK_ITEMS_MAX`, acknowledgments.
    pub const ACK_ITEMS_MAX: usize = 10_000;
    /// `TRANSACTION_OPERATIONS_MAX`, ack operations plus pushed items per transaction.
    pub const TRANSACTION_OPERATIONS_MAX: usize = 10_000;
    /// `STREAMS_STATE_KEYS_MAX`, keys per streams `state/get`.
    pub const STREAMS_STATE_KEYS_MAX: usize = 10_000;
    /// `POP_BATCH_MAX`, messages.
    pub const POP_BATCH_MAX: u32 = 10_000;
    /// `POP_PARTITIONS_MAX`, partitions.
    pub const POP_PARTITIONS_MAX: u32 = 1_000;
    /// `POP_TIMEOUT_MS_MAX`, milliseconds.
    pub const POP_TIMEOUT_MS_MAX: u64 = 300_000;
    /// `LONGPOLL_WAITERS_MAX`, parked pops.
    pub const LONGPOLL_WAITERS_MAX: usize = 10_000;
    /// `HTTP_INFLIGHT_MAX`, requests.
    pub const HTTP_INFLIGHT_MAX: usize = 20_000;
    /// `NAME_CHARS_MAX`, characters.
    pub const NAME_CHARS_MAX: usize = 255;
    /// `TRACE_DATA_BYTES_MAX`, bytes (64 KiB).
    pub const TRACE_DATA_BYTES_MAX: usize = 64 * 1024;
    /// `DEFAULT_TIMEOUT`, milliseconds.
    pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
    /// `DEFAULT_BATCH_SIZE`, messages.
    pub const DEFAULT_BATCH_SIZE: u32 = 1;
    /// `LONGPOLL_RECHECK_MS`, milliseconds (0 disables).
    pub const LONGPOLL_RECHECK_MS: u64 = 5_000;
    /// `LONGPOLL_QUIET_MS`, milliseconds (0 disables).
    pub const LONGPOLL_QUIET_MS: u64 = 1_000;
    /// `BATCH_HOLD_US`, microseconds: single-message pushes fused this way at 1 000 a second cost
    /// PostgreSQL about a tenth less per message than with 500 µs (end-to-end p50 +0.6 ms;
    /// docs/tuning.md); a light load and a client that waits for each answer do not wait
    /// (`BATCH_HOLD_GAP_US`).
    pub const BATCH_HOLD_US: u64 = 1_000;
    /// `BATCH_HOLD_GAP_US`, microseconds: a push lane holds while it gets more than about 330
    /// requests a second.
    pub const BATCH_HOLD_GAP_US: u64 = 3_000;
    /// `POP_HOLD_US`, microseconds: single-message consumers' pops fused this way cost
    /// PostgreSQL 13-23 % less per message, end-to-end p50 -0.2 to +0.6 ms (docs/benchmarks.md,
    /// "Pop calls that wait for company").
    pub const POP_HOLD_US: u64 = 500;
    /// `BATCH_REQUESTS_MAX`, requests per database call.
    pub const BATCH_REQUESTS_MAX: usize = 1_000;
    /// `DB_CALLS_PUSH`: push lanes, each with one fused call in flight (measured best on a 2-core
    /// PostgreSQL; docs/tuning.md).
    pub const DB_CALLS_PUSH: usize = 2;
    /// `PUSH_SPLIT_ITEMS_MIN`, items of one push request.
    pub const PUSH_SPLIT_ITEMS_MIN: usize = 32;
    /// `PUSH_PARALLEL_ITEMS_MIN`, items waiting in a push lane.
    pub const PUSH_PARALLEL_ITEMS_MIN: usize = 8;
    /// `DB_CALLS_POP`: fused pop calls in flight. Pops of one group that run at once start at the
    /// head of the same ready line and skip each other's cursors; two calls keep both cores of a
    /// 2-core PostgreSQL busy with fewer such collisions than four (docs/tuning.md).
    pub const DB_CALLS_POP: usize = 2;
    /// `DB_CALLS_ACK`: fused ack calls in flight.
    pub const DB_CALLS_ACK: usize = 4;
    /// `ACK_PARALLEL_ITEMS_MIN`, acknowledgements waiting.
    pub const ACK_PARALLEL_ITEMS_MIN: usize = 8;
    /// `DB_PLANS_REFRESH_MS`, milliseconds.
    pub const DB_PLANS_REFRESH_MS: u64 = 10_000;
    /// `BATCH_ITEMS_MAX`, push items, acks or requested pop messages per database call.
    pub const BATCH_ITEMS_MAX: usize = 2_000;
    /// `BATCH_BYTES_MAX`, bytes of pushed items per database call (1 MiB).
    pub const BATCH_BYTES_MAX: usize = 1024 * 1024;
    /// `LEASE_SWEEP_INTERVAL_MS`, milliseconds.
    pub const LEASE_SWEEP_INTERVAL_MS: u64 = 1_000;
    /// `RETENTION_INTERVAL`, milliseconds.
    pub const RETENTION_INTERVAL_MS: u64 = 300_000;
    /// `RETENTION_BATCH_SIZE`, messages (or partitions, for cleanup) per transaction.
    pub const RETENTION_BATCH_SIZE: u32 = 1_000;
    /// `EVICTION_INTERVAL`, milliseconds.
    pub const EVICTION_INTERVAL_MS: u64 = 60_000;
    /// `EVICTION_BATCH_SIZE`, messages per transaction.
    pub const EVICTION_BATCH_SIZE: u32 = 1_000;
    /// `PARTITION_CLEANUP_DAYS`, days (0 disables).
    pub const PARTITION_CLEANUP_DAYS: u32 = 30;
    /// `STATS_INTERVAL_MS`, milliseconds.
    pub const STATS_INTERVAL_MS: u64 = 10_000;
    /// `METRICS_RETENTION_DAYS`, days.
    pub const METRICS_RETENTION_DAYS: u32 = 90;
    /// `METRICS_QUEUE_LABELS_MAX`, distinct queue names.
    pub const METRICS_QUEUE_LABELS_MAX: usize = 1_000;
    /// `STATS_BATCH_SIZE`, partitions recounted per stats transaction.
    pub const STATS_BATCH_SIZE: u32 = 1_000;
    /// `STATS_BATCH_ROWS`, message rows counted per stats transaction, about.
    pub const STATS_BATCH_ROWS: u64 = 2_000_000;
}

/// Log output format (`LOG_FORMAT`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where a new named group starts when a pop names no subscription (`DEFAULT_SUBSCRIPTION_MODE`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionMode {
    /// From the oldest retained message.
    All,
    /// From the instant of the group's first pop.
    New,
    /// Alias of `new` (http-api.md §5.14).
    #[value(name = "new-only")]
    NewOnly,
}

/// Where the dashboard served at `/` comes from (`WEBAPP_ROOT`, http-api.md §1.2, §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebappRoot {
    /// The files of `dashboard/dist` embedded at build time (`builtin`).
    BuiltIn,
    /// The files of this directory, read at each request; it must hold `index.html`.
    Directory(std::path::PathBuf),
    /// No dashboard (`off`): `/` is a JSON 404 like any unknown route.
    Off,
}

impl LogFormat {
    /// `text` or `json`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

impl SubscriptionMode {
    /// The value handed to SQL: `all` or `new` (`new-only` is an alias of `new`).
    pub fn sql_name(self) -> &'static str {
        match self {
            SubscriptionMode::All => "all",
            SubscriptionMode::New | SubscriptionMode::NewOnly => "new",
        }
    }
}

/// Every setting of the broker. See http-api.md §6 (limits) and §7 (configuration).
#[derive(clap::Args, Clone, Debug)]
pub struct Config {
    /// Listen address.
    #[arg(long, env = "HOST", default_value = defaults::HOST)]
    pub host: String,
    /// Listen port.
    #[arg(long, env = "PORT", default_value_t = defaults::PORT)]
    pub port: u16,
    /// Async runtime worker threads (read by the binary). Default: the CPU count.
    #[arg(long, env = "NUM_WORKERS", value_parser = parse_positive_usize)]
    pub num_workers: Option<usize>,
    /// Instance name in health, logs and metrics. Default `<hostname>-<pid>`.
    #[arg(long, env = "WORKER_ID")]
    pub worker_id: Option<String>,
    /// Log filter: `trace`, `debug`, `info`, `warn`, `error` or a full directive.
    #[arg(long, env = "LOG_LEVEL", default_value = defaults::LOG_LEVEL)]
    pub log_level: String,
    /// Log format: `text` or `json`.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Value of `Access-Control-Allow-Origin` on every response.
    #[arg(long, env = "CORS_ALLOW_ORIGIN", default_value = defaults::CORS_ALLOW_ORIGIN)]
    pub cors_allow_origin: String,
    /// The dashboard served at `/`: `builtin` (the one built into this binary), a directory to
    /// serve it from instead (it must hold `index.html`), or `off`.
    #[arg(long, env = "WEBAPP_ROOT", default_value = defaults::WEBAPP_ROOT,
          value_parser = parse_webapp_root)]
    pub webapp_root: WebappRoot,
    /// Time to finish in-flight work after the shutdown signal, milliseconds.
    #[arg(long, env = "SHUTDOWN_GRACE_MS", default_value_t = defaults::SHUTDOWN_GRACE_MS)]
    pub shutdown_grace_ms: u64,
    /// Status of an empty pop: `204`, or `200` for the body form of http-api.md §2.2.
    #[arg(long, env = "POP_EMPTY_STATUS", default_value_t = defaults::POP_EMPTY_STATUS,
          value_parser = parse_pop_empty_status)]
    pub pop_empty_status: u16,
    /// Failover-buffer directory of this instance; must not be shared between instances (a lock
    /// file keeps a second instance out). Not writable: failover is disabled with a startup
    /// warning.
    #[arg(long, env = "FILE_BUFFER_DIR", default_value = defaults::FILE_BUFFER_DIR)]
    pub file_buffer_dir: String,
    /// Period at which the failover drainer checks for records to replay, milliseconds.
    #[arg(long, env = "FILE_BUFFER_FLUSH_MS", default_value_t = defaults::FILE_BUFFER_FLUSH_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub file_buffer_flush_ms: u64,
    /// Buffered records replayed per transaction.
    #[arg(long, env = "FILE_BUFFER_MAX_BATCH", default_value_t = defaults::FILE_BUFFER_MAX_BATCH,
          value_parser = parse_positive_usize)]
    pub file_buffer_max_batch: usize,
    /// Records per failover segment file before a new one is started.
    #[arg(long, env = "FILE_BUFFER_EVENTS_PER_FILE",
          default_value_t = defaults::FILE_BUFFER_EVENTS_PER_FILE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub file_buffer_events_per_file: u64,
    /// Disk space of the failover buffer, bytes; beyond it pushes that need the buffer answer `503
    /// buffer_unavailable`.
    #[arg(long, env = "FILE_BUFFER_BYTES_MAX", default_value_t = defaults::FILE_BUFFER_BYTES_MAX,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub file_buffer_bytes_max: u64,

    /// Database URL (`postgres://user:pass@host:port/db`); wins over the `PG_*` settings.
    /// Default: none.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// Database host (or Unix socket directory).
    #[arg(long, env = "PG_HOST", default_value = defaults::PG_HOST)]
    pub pg_host: String,
    /// Database port.
    #[arg(long, env = "PG_PORT", default_value_t = defaults::PG_PORT)]
    pub pg_port: u16,
    /// Database name.
    #[arg(long, env = "PG_DB", default_value = defaults::PG_DB)]
    pub pg_db: String,
    /// Database user.
    #[arg(long, env = "PG_USER", default_value = defaults::PG_USER)]
    pub pg_user: String,
    /// Database password. Default: none.
    #[arg(long, env = "PG_PASSWORD")]
    pub pg_password: Option<String>,
    /// Connections of the shared pool (plus one for leadership).
    #[arg(long, env = "DB_POOL_SIZE", default_value_t = defaults::DB_POOL_SIZE,
          value_parser = parse_positive_usize)]
    pub db_pool_size: usize,
    /// Pool connections opened at start (at most `DB_POOL_SIZE`); the others open one at a time
    /// when a call finds every open one busy, and then stay open.
    #[arg(long, env = "DB_POOL_MIN", default_value_t = defaults::DB_POOL_MIN,
          value_parser = parse_positive_usize)]
    pub db_pool_min: usize,
    /// Connect and pool-acquire timeout, milliseconds.
    #[arg(long = "db-connection-timeout", env = "DB_CONNECTION_TIMEOUT",
          default_value_t = defaults::DB_CONNECTION_TIMEOUT_MS)]
    pub db_connection_timeout_ms: u64,
    /// `statement_timeout` of request work, milliseconds (0: none).
    #[arg(long = "db-statement-timeout", env = "DB_STATEMENT_TIMEOUT",
          default_value_t = defaults::DB_STATEMENT_TIMEOUT_MS)]
    pub db_statement_timeout_ms: u64,
    /// `lock_timeout`, milliseconds (0: none).
    #[arg(long = "db-lock-timeout", env = "DB_LOCK_TIMEOUT",
          default_value_t = defaults::DB_LOCK_TIMEOUT_MS)]
    pub db_lock_timeout_ms: u64,
    /// Time unacknowledged data may stay on a database connection before it counts as lost (Linux
    /// `TCP_USER_TIMEOUT`), milliseconds (0: the system's).
    #[arg(long = "db-tcp-user-timeout-ms", env = "DB_TCP_USER_TIMEOUT_MS",
          default_value_t = defaults::DB_TCP_USER_TIMEOUT_MS)]
    pub db_tcp_user_timeout_ms: u64,
    /// Idle time before TCP keepalive probes start on a database connection, seconds.
    #[arg(long = "db-keepalives-idle", env = "DB_KEEPALIVES_IDLE",
          default_value_t = defaults::DB_KEEPALIVES_IDLE_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub db_keepalives_idle_s: u64,
    /// Time between TCP keepalive probes, seconds.
    #[arg(long = "db-keepalives-interval", env = "DB_KEEPALIVES_INTERVAL",
          default_value_t = defaults::DB_KEEPALIVES_INTERVAL_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub db_keepalives_interval_s: u64,
    /// Unanswered keepalive probes before a database connection counts as lost.
    #[arg(long = "db-keepalives-count", env = "DB_KEEPALIVES_COUNT",
          default_value_t = defaults::DB_KEEPALIVES_COUNT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub db_keepalives_count: u32,

    /// Largest request body, bytes.
    #[arg(long, env = "BODY_BYTES_MAX", default_value_t = defaults::BODY_BYTES_MAX,
          value_parser = parse_positive_usize)]
    pub body_bytes_max: usize,
    /// Largest read buffer of one connection, bytes (at least 8192). A request's line and
    /// headers must fit in it; bodies are read through it in as many reads as they need.
    #[arg(long, env = "HTTP_READ_BUFFER_BYTES_MAX",
          default_value_t = defaults::HTTP_READ_BUFFER_BYTES_MAX,
          value_parser = parse_read_buffer)]
    pub http_read_buffer_bytes_max: usize,
    /// Bytes of request bodies decoded and worked on at once, from the end of their reading to
    /// the answer. A read body that would go beyond waits, as bytes, before it is decoded (one
    /// larger than the whole budget waits for all of it), so what bodies expand into (parsed
    /// items, their copies for the database) stays bounded under any number of producers.
    #[arg(long, env = "BODY_BYTES_HELD_MAX", default_value_t = defaults::BODY_BYTES_HELD_MAX,
          value_parser = parse_positive_usize)]
    pub body_bytes_held_max: usize,
    /// Deepest JSON nesting of a request body, levels.
    #[arg(long, env = "JSON_DEPTH_MAX", default_value_t = defaults::JSON_DEPTH_MAX,
          value_parser = parse_positive_usize)]
    pub json_depth_max: usize,
    /// Items per push request.
    #[arg(long, env = "PUSH_ITEMS_MAX", default_value_t = defaults::PUSH_ITEMS_MAX,
          value_parser = parse_positive_usize)]
    pub push_items_max: usize,
    /// Acknowledgments per `/ack/batch` request.
    #[arg(long, env = "ACK_ITEMS_MAX", default_value_t = defaults::ACK_ITEMS_MAX,
          value_parser = parse_positive_usize)]
    pub ack_items_max: usize,
    /// Ack operations plus pushed items per `/transaction` request (also its number of operations).
    #[arg(long, env = "TRANSACTION_OPERATIONS_MAX",
          default_value_t = defaults::TRANSACTION_OPERATIONS_MAX,
          value_parser = parse_positive_usize)]
    pub transaction_operations_max: usize,
    /// Keys named by one streams `state/get` request (`keys`).
    #[arg(long, env = "STREAMS_STATE_KEYS_MAX",
          default_value_t = defaults::STREAMS_STATE_KEYS_MAX,
          value_parser = parse_positive_usize)]
    pub streams_state_keys_max: usize,
    /// Messages per pop (`batch`).
    #[arg(long, env = "POP_BATCH_MAX", default_value_t = defaults::POP_BATCH_MAX,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub pop_batch_max: u32,
    /// Partitions claimed per pop (`partitions`).
    #[arg(long, env = "POP_PARTITIONS_MAX", default_value_t = defaults::POP_PARTITIONS_MAX,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub pop_partitions_max: u32,
    /// Longest long-poll `timeout`, milliseconds.
    #[arg(long, env = "POP_TIMEOUT_MS_MAX", default_value_t = defaults::POP_TIMEOUT_MS_MAX)]
    pub pop_timeout_ms_max: u64,
    /// Parked long-polls per instance.
    #[arg(long, env = "LONGPOLL_WAITERS_MAX", default_value_t = defaults::LONGPOLL_WAITERS_MAX)]
    pub longpoll_waiters_max: usize,
    /// Requests in flight per instance. `GET /metrics` is not counted: it never touches the
    /// database, and operators need it most when the instance is full.
    #[arg(long, env = "HTTP_INFLIGHT_MAX", default_value_t = defaults::HTTP_INFLIGHT_MAX,
          value_parser = parse_positive_usize)]
    pub http_inflight_max: usize,
    /// Longest queue, partition or consumer-group name, characters.
    #[arg(long, env = "NAME_CHARS_MAX", default_value_t = defaults::NAME_CHARS_MAX,
          value_parser = parse_positive_usize)]
    pub name_chars_max: usize,
    /// Largest `data` of a trace event, bytes of JSON without insignificant whitespace.
    #[arg(long, env = "TRACE_DATA_BYTES_MAX", default_value_t = defaults::TRACE_DATA_BYTES_MAX,
          value_parser = parse_positive_usize)]
    pub trace_data_bytes_max: usize,

    /// Pop `timeout` default, milliseconds.
    #[arg(long = "default-timeout", env = "DEFAULT_TIMEOUT",
          default_value_t = defaults::DEFAULT_TIMEOUT_MS)]
    pub default_timeout_ms: u64,
    /// Pop `batch` default, messages.
    #[arg(long, env = "DEFAULT_BATCH_SIZE", default_value_t = defaults::DEFAULT_BATCH_SIZE,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub default_batch_size: u32,
    /// Subscription of new named groups when a pop names none: `all`, `new`, `new-only`.
    #[arg(long, env = "DEFAULT_SUBSCRIPTION_MODE", value_enum,
          default_value_t = SubscriptionMode::All)]
    pub default_subscription_mode: SubscriptionMode,
    /// Safety re-check period of parked pops, milliseconds (0 disables).
    #[arg(long, env = "LONGPOLL_RECHECK_MS", default_value_t = defaults::LONGPOLL_RECHECK_MS)]
    pub longpoll_recheck_ms: u64,
    /// How long this instance trusts that a consumer group had nothing due on a queue, letting
    /// its long-polls there park without asking the database again, milliseconds (0 disables).
    /// Pushes (on any instance), lease ends that leave work on their partition and seeks heard
    /// here end it at once; a lease ended on another instance is seen after at most this long.
    #[arg(long, env = "LONGPOLL_QUIET_MS", default_value_t = defaults::LONGPOLL_QUIET_MS)]
    pub longpoll_quiet_ms: u64,
    /// A push runs the pops of the long-polls of one queue that it would wake in its own
    /// transaction, so they get its messages at its commit without a transaction of their own
    /// (http-api.md §4.9). `false`: the push wakes them and each pops on its own.
    #[arg(long, env = "LONGPOLL_PUSH_POPS", default_value = "true",
          value_parser = parse_flag, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub longpoll_push_pops: bool,
    /// Time a push, ack or lease-extension request may wait to be fused with others,
    /// microseconds (0: fuse only what is already waiting); pops have `POP_HOLD_US`. Only a
    /// request that finds nothing else waiting waits, only while requests of its kind come
    /// busily (`BATCH_HOLD_GAP_US`), and only while such waits find company: where fewer than
    /// one in eight of the recent ones did (a client that waits for each answer before it sends
    /// again), only one lone request in sixteen waits, to try, and after each try that found no
    /// company half as many (down to one in 1 024). The runtime's timer ticks every millisecond,
    /// so a wait lasts until the first tick after it.
    #[arg(long, env = "BATCH_HOLD_US", default_value_t = defaults::BATCH_HOLD_US)]
    pub batch_hold_us: u64,
    /// The average time between the requests of one push lane, the ack calls or the lease
    /// extensions (over about the last eight) below which their requests wait `BATCH_HOLD_US`,
    /// microseconds; a slower pace sends each at once (0: never wait).
    #[arg(long, env = "BATCH_HOLD_GAP_US", default_value_t = defaults::BATCH_HOLD_GAP_US)]
    pub batch_hold_gap_us: u64,
    /// Time a pop call waits, once it may start, for more pop requests to fuse with,
    /// microseconds (0: fuse only what is already waiting). A call whose first request has
    /// others waiting with it always waits; a lone request waits while such waits find company,
    /// at any pace, and otherwise only as a probe, as `BATCH_HOLD_US` says: one consumer that
    /// pops again only after each answer does not wait. The runtime's timer ticks every
    /// millisecond, so a wait lasts until the first tick after it.
    #[arg(long, env = "POP_HOLD_US", default_value_t = defaults::POP_HOLD_US)]
    pub pop_hold_us: u64,
    /// Requests fused into one database call.
    #[arg(long, env = "BATCH_REQUESTS_MAX", default_value_t = defaults::BATCH_REQUESTS_MAX,
          value_parser = parse_positive_usize)]
    pub batch_requests_max: usize,
    /// Push lanes: partitions are spread over this many lanes by a hash of their names, and each
    /// lane has one fused push call in flight, so calls that run at once never wait for each
    /// other's partition locks. Enough to overlap round trips, few enough that waiting requests
    /// fuse into large calls under load (about one per PostgreSQL core).
    #[arg(long, env = "DB_CALLS_PUSH", default_value_t = defaults::DB_CALLS_PUSH,
          value_parser = parse_positive_usize)]
    pub db_calls_push: usize,
    /// A push request with items in several lanes is split by lane from this many items on;
    /// a smaller one goes whole to the lane of its first item (splitting it would cost one more
    /// transaction for a few items; its call may then wait for another lane's partition locks).
    #[arg(long, env = "PUSH_SPLIT_ITEMS_MIN", default_value_t = defaults::PUSH_SPLIT_ITEMS_MIN,
          value_parser = parse_positive_usize)]
    pub push_split_items_min: usize,
    /// A push lane starts a call while another lane's call runs only with at least this many
    /// items waiting; fewer wait for that call to end and fuse with what comes meanwhile (two
    /// transactions committing at once wait for each other's flushes). 1: lanes never wait.
    #[arg(long, env = "PUSH_PARALLEL_ITEMS_MIN",
          default_value_t = defaults::PUSH_PARALLEL_ITEMS_MIN, value_parser = parse_positive_usize)]
    pub push_parallel_items_min: usize,
    /// Fused pop calls in flight at once. Pops of one group that run at once start at the head of
    /// the same ready line and skip the partitions another holds: fewer, larger calls waste less
    /// (about one per PostgreSQL core).
    #[arg(long, env = "DB_CALLS_POP", default_value_t = defaults::DB_CALLS_POP,
          value_parser = parse_positive_usize)]
    pub db_calls_pop: usize,
    /// Fused ack calls in flight at once.
    #[arg(long, env = "DB_CALLS_ACK", default_value_t = defaults::DB_CALLS_ACK,
          value_parser = parse_positive_usize)]
    pub db_calls_ack: usize,
    /// An ack call starts while another runs only with at least this many acknowledgements
    /// waiting; fewer wait for the calls running to end and fuse with what comes meanwhile (two
    /// transactions committing at once wait for each other's flushes). 1: calls never wait.
    #[arg(long, env = "ACK_PARALLEL_ITEMS_MIN",
          default_value_t = defaults::ACK_PARALLEL_ITEMS_MIN, value_parser = parse_positive_usize)]
    pub ack_parallel_items_min: usize,
    /// Acknowledgements commit without waiting for their WAL to reach the disk
    /// (`synchronous_commit = off` for `/ack` and `/ack/batch` calls). Opt-in: an ack answered
    /// just before a database crash may be lost, and its messages are then delivered again
    /// (at-least-once holds; nothing is skipped). Pushes, autoAck pops (see
    /// `AUTO_ACK_COMMIT_ASYNC`), transactions and streams cycles always wait for the disk.
    #[arg(long, env = "ACK_COMMIT_ASYNC", default_value = "false",
          value_parser = parse_flag, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub ack_commit_async: bool,
    /// autoAck pops commit without waiting for their WAL to reach the disk (`synchronous_commit =
    /// off` for pop calls that settle on delivery). Opt-in, and it weakens autoAck's
    /// at-most-once: messages delivered just before a database crash may be delivered again
    /// after it (a broker or consumer crash changes nothing).
    #[arg(long, env = "AUTO_ACK_COMMIT_ASYNC", default_value = "false",
          value_parser = parse_flag, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub auto_ack_commit_async: bool,
    /// How long a pool session keeps its cached query plans before making them again with the
    /// tables' current sizes, milliseconds (0: for the session's life).
    #[arg(long, env = "DB_PLANS_REFRESH_MS", default_value_t = defaults::DB_PLANS_REFRESH_MS)]
    pub db_plans_refresh_ms: u64,
    /// Push items, acknowledgements or requested pop messages (`batch`) fused into one database
    /// call; a single larger request still goes alone. Bounds the buffers each pooled connection
    /// keeps.
    #[arg(long, env = "BATCH_ITEMS_MAX", default_value_t = defaults::BATCH_ITEMS_MAX,
          value_parser = parse_positive_usize)]
    pub batch_items_max: usize,
    /// Bytes of pushed items (their rendered arguments, payloads included) fused into one
    /// database call, and of buffered records per failover replay call; a single larger request
    /// or record still goes alone. Bounds the buffers each pooled connection keeps when payloads
    /// are large.
    #[arg(long, env = "BATCH_BYTES_MAX", default_value_t = defaults::BATCH_BYTES_MAX,
          value_parser = parse_positive_usize)]
    pub batch_bytes_max: usize,
    /// Period of the leader's expired-lease sweep, milliseconds.
    #[arg(long, env = "LEASE_SWEEP_INTERVAL_MS", default_value_t = defaults::LEASE_SWEEP_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_sweep_interval_ms: u64,
    /// Period of the leader's retention pass (`retentionSeconds`, `completedRetentionSeconds`,
    /// partition cleanup), milliseconds.
    #[arg(long = "retention-interval", env = "RETENTION_INTERVAL",
          default_value_t = defaults::RETENTION_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_interval_ms: u64,
    /// Messages deleted per retention transaction (partitions, for cleanup).
    #[arg(long, env = "RETENTION_BATCH_SIZE", default_value_t = defaults::RETENTION_BATCH_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub retention_batch_size: u32,
    /// Period of the leader's eviction pass (`maxWaitTimeSeconds`), milliseconds.
    #[arg(long = "eviction-interval", env = "EVICTION_INTERVAL",
          default_value_t = defaults::EVICTION_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub eviction_interval_ms: u64,
    /// Messages deleted per eviction transaction.
    #[arg(long, env = "EVICTION_BATCH_SIZE", default_value_t = defaults::EVICTION_BATCH_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub eviction_batch_size: u32,
    /// Partitions without messages, active lease or push for this many days are deleted, days (0
    /// disables).
    #[arg(long, env = "PARTITION_CLEANUP_DAYS", default_value_t = defaults::PARTITION_CLEANUP_DAYS,
          value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub partition_cleanup_days: u32,
    /// Period of the leader's refresh of the dashboard stats, and of each instance's write of its
    /// metrics history, milliseconds.
    #[arg(long, env = "STATS_INTERVAL_MS", default_value_t = defaults::STATS_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(100..))]
    pub stats_interval_ms: u64,
    /// Stats and metrics history older than this is deleted by the leader, days.
    #[arg(long, env = "METRICS_RETENTION_DAYS", default_value_t = defaults::METRICS_RETENTION_DAYS,
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub metrics_retention_days: u32,
    /// Distinct `queue` label values of this instance's metrics (Prometheus output and metrics
    /// history); later queues are counted under `_other`.
    #[arg(long, env = "METRICS_QUEUE_LABELS_MAX",
          default_value_t = defaults::METRICS_QUEUE_LABELS_MAX,
          value_parser = parse_positive_usize)]
    pub metrics_queue_labels_max: usize,
    /// Partitions the stats refresh recounts per transaction; a pass runs as many transactions as
    /// it has changed partitions to recount.
    #[arg(long, env = "STATS_BATCH_SIZE", default_value_t = defaults::STATS_BATCH_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub stats_batch_size: u32,
    /// Stored messages whose partitions one stats transaction recounts, about: a batch of deep
    /// partitions takes fewer of them (at least one). A recount costs a few index probes per
    /// partition whatever it stores, so this only spreads deep partitions over more transactions.
    #[arg(long, env = "STATS_BATCH_ROWS", default_value_t = defaults::STATS_BATCH_ROWS,
          value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    pub stats_batch_rows: u64,
    /// AES-256 key of encrypted payloads: 64 hex characters. Default: none (queues cannot
    /// encrypt; encrypted payloads cannot be read).
    #[arg(long, env = "REGINA_ENCRYPTION_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub regina_encryption_key: Option<Secret>,
    /// The key under its Queen name, used when `REGINA_ENCRYPTION_KEY` is unset; both set with
    /// different values is a startup error. Default: none.
    #[arg(long, env = "QUEEN_ENCRYPTION_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub queen_encryption_key: Option<Secret>,
    /// Authentication: the `JWT_*` settings (http-api.md §1.6), in their own group.
    #[command(flatten)]
    pub auth: crate::auth::settings::AuthConfig,
}

impl Default for Config {
    /// The command line's defaults; reads no environment.
    fn default() -> Self {
        command_line_defaults()
    }
}

/// Characters escaped in the user, password, host and database parts of a built URL.
const URL_PART: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl Config {
    /// The database to connect to: `DATABASE_URL` when set, else a URL built from `PG_*`.
    pub fn database_url(&self) -> String {
        if let Some(url) = self
            .database_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            return url.to_owned();
        }
        let user = utf8_percent_encode(&self.pg_user, URL_PART);
        let credentials = match self.pg_password.as_deref().filter(|p| !p.is_empty()) {
            Some(password) => format!("{user}:{}", utf8_percent_encode(password, URL_PART)),
            None => user.to_string(),
        };
        // An IPv6 literal needs brackets; a socket directory (contains '/') is percent-encoded.
        let host = if self.pg_host.contains(':') && !self.pg_host.starts_with('[') {
            format!("[{}]", self.pg_host)
        } else {
            utf8_percent_encode(&self.pg_host, URL_PART).to_string()
        };
        let db = utf8_percent_encode(&self.pg_db, URL_PART);
        format!("postgres://{credentials}@{host}:{}/{db}", self.pg_port)
    }

    /// `WORKER_ID`, or `<hostname>-<pid>` when unset.
    pub fn worker_id(&self) -> String {
        match self.worker_id.as_deref().filter(|w| !w.trim().is_empty()) {
            Some(id) => id.to_owned(),
            None => format!("{}-{}", hostname(), std::process::id()),
        }
    }

    /// `SHUTDOWN_GRACE_MS` as a duration.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    /// `DB_CONNECTION_TIMEOUT` as a duration (at least 1 ms).
    pub fn db_connection_timeout(&self) -> Duration {
        Duration::from_millis(self.db_connection_timeout_ms.max(1))
    }
}

/// The machine's host name, from the kernel (no environment), or `regina` when unknown.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "regina".to_owned())
}

fn parse_pop_empty_status(text: &str) -> Result<u16, String> {
    match text.trim() {
        "204" => Ok(204),
        "200" => Ok(200),
        other => Err(format!("must be 204 or 200, not {other:?}")),
    }
}

fn parse_webapp_root(text: &str) -> Result<WebappRoot, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("must be builtin, off or a directory".to_owned());
    }
    Ok(match text.to_ascii_lowercase().as_str() {
        "builtin" => WebappRoot::BuiltIn,
        "off" => WebappRoot::Off,
        _ => WebappRoot::Directory(text.into()),
    })
}

fn parse_secret(text: &str) -> Result<Secret, String> {
    Ok(Secret(text.trim().to_owned()))
}

fn parse_positive_usize(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a positive integer: {e}")),
    }
}

/// The smallest `HTTP_READ_BUFFER_BYTES_MAX` the HTTP library accepts.
pub(crate) const HTTP_READ_BUFFER_BYTES_MIN: usize = 8 * 1024;

fn parse_read_buffer(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n < HTTP_READ_BUFFER_BYTES_MIN => {
            Err(format!("must be at least {}", HTTP_READ_BUFFER_BYTES_MIN))
        }
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a positive integer: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_url_wins_over_pg_settings() {
        let config = Config {
            database_url: Some("postgres://a@b:1/c".into()),
            pg_host: "elsewhere".into(),
            ..Config::default()
        };
        assert_eq!(config.database_url(), "postgres://a@b:1/c");
    }

    #[test]
    fn database_url_is_built_from_pg_settings_with_escaping() {
        let config = Config {
            pg_user: "us er".into(),
            pg_password: Some("p@ss:/".into()),
            pg_host: "/tmp/sock dir".into(),
            pg_port: 5433,
            pg_db: "db".into(),
            ..Config::default()
        };
        assert_eq!(
            config.database_url(),
            "postgres://us%20er:p%40ss%3A%2F@%2Ftmp%2Fsock%20dir:5433/db"
        );
        let ipv6 = Config {
            pg_host: "::1".into(),
            ..Config::default()
        };
        assert_eq!(
            ipv6.database_url(),
            "postgres://postgres@[::1]:5432/postgres"
        );
    }

    #[test]
    fn defaults_follow_the_spec() {
        let config = Config::default();
        assert_eq!(config.port, 6632);
        assert_eq!(config.db_pool_size, 16);
        assert_eq!(config.body_bytes_max, 16 * 1024 * 1024);
        assert_eq!(config.pop_empty_status, 204);
        assert_eq!(config.shutdown_grace_ms, 10_000);
        assert_eq!(config.db_connection_timeout_ms, 2_000);
        assert_eq!(config.db_tcp_user_timeout_ms, 30_000);
        assert_eq!(
            (config.db_keepalives_idle_s, config.db_keepalives_interval_s),
            (60, 10)
        );
        assert_eq!(config.db_keepalives_count, 3);
        assert_eq!(config.file_buffer_dir, "/var/lib/regina/buffer");
        assert_eq!(config.file_buffer_flush_ms, 100);
        assert_eq!(config.file_buffer_max_batch, 1_000);
        assert_eq!(config.file_buffer_events_per_file, 10_000);
        assert_eq!(config.file_buffer_bytes_max, 1 << 30);
        assert_eq!(config.stats_interval_ms, 10_000);
        assert_eq!(config.metrics_retention_days, 90);
        assert_eq!(config.metrics_queue_labels_max, 1_000);
        assert_eq!(config.trace_data_bytes_max, 65_536);
        assert_eq!(config.stats_batch_size, 1_000);
        assert_eq!(config.stats_batch_rows, 2_000_000);
        assert_eq!(
            config.database_url(),
            "postgres://postgres@localhost:5432/postgres"
        );
        assert!(!config.worker_id().is_empty());
    }

    #[test]
    fn webapp_root_is_builtin_off_or_a_directory() {
        assert_eq!(Config::default().webapp_root, WebappRoot::BuiltIn);
        assert_eq!(parse_webapp_root("builtin"), Ok(WebappRoot::BuiltIn));
        assert_eq!(parse_webapp_root(" OFF "), Ok(WebappRoot::Off));
        assert_eq!(
            parse_webapp_root("/srv/dashboard"),
            Ok(WebappRoot::Directory("/srv/dashboard".into()))
        );
        assert!(parse_webapp_root(" ").is_err());
    }

    #[test]
    fn pop_empty_status_accepts_only_204_and_200() {
        assert_eq!(parse_pop_empty_status("200"), Ok(200));
        assert!(parse_pop_empty_status("404").is_err());
    }
}
