//! The client verbs of `regina`: operators and scripts talk to a running broker over its HTTP API
//! (`--server`, `REGINA_URL`; `--token`, `REGINA_TOKEN`). People get tables, programs get the
//! broker's JSON with `--json`.
//!
//! Exit status: [`EXIT_OK`], [`EXIT_ERROR`] (usage, unreachable broker, or an error answer, whose
//! `{error, code}` goes to stderr) and [`EXIT_EMPTY`] (a pop that found nothing).

mod ack;
mod client;
mod dlq;
mod error;
mod groups;
mod output;
mod pop;
mod push;
mod queues;
mod tail;

use std::process::ExitCode;

use clap::{Args, Subcommand};

use self::error::CliError;

/// Success.
pub const EXIT_OK: u8 = 0;
/// Usage error, unreachable broker, or an error answer.
pub const EXIT_ERROR: u8 = 1;
/// `pop` found nothing to deliver (also after a long-poll that timed out).
pub const EXIT_EMPTY: u8 = 3;

/// Help shown after the verbs' list of `regina --help`.
pub const HELP_AFTER: &str = "\
Client verbs talk to a running broker: --server URL (env REGINA_URL, default \
http://127.0.0.1:6632), --token TOKEN (env REGINA_TOKEN, sent as `Authorization: Bearer`). \
They print tables, or with --json the broker's JSON (errors as one JSON line {error, code} on \
stderr).

Exit status: 0 success; 1 usage error, unreachable broker or an error answer; 3 nothing to pop.";

/// The client verbs.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Push messages: a PAYLOAD argument, a file, or stdin (whole, or one message per line with
    /// --lines).
    Push(push::PushArgs),
    /// Pop messages (leased until acked, unless --auto-ack); exit status 3 when there are none.
    Pop(pop::PopArgs),
    /// Acknowledge one delivered message.
    Ack(ack::AckArgs),
    /// List queues with their message counts.
    Queues(queues::QueuesArgs),
    /// Show one queue: options, totals and partitions.
    Queue(queues::QueueArgs),
    /// List consumer groups with their lag, or show one group's partitions.
    Groups(groups::GroupsArgs),
    /// Move a consumer group's position on a queue: to the end, or to a timestamp.
    Seek(groups::SeekArgs),
    /// List dead letters, or requeue one (`dlq requeue`).
    Dlq(dlq::DlqArgs),
    /// Follow a queue and print each message as it arrives, until Ctrl-C.
    Tail(tail::TailArgs),
}

/// Where the broker is, and how to print.
#[derive(Debug, Clone, Args)]
pub struct Connection {
    /// Base URL of the broker.
    #[arg(
        long,
        env = "REGINA_URL",
        value_name = "URL",
        default_value = "http://127.0.0.1:6632",
        help_heading = "Connection"
    )]
    pub server: String,
    /// Token sent as `Authorization: Bearer TOKEN` (when the broker has auth on).
    #[arg(
        long,
        env = "REGINA_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true,
        help_heading = "Connection"
    )]
    pub token: Option<String>,
    /// Print the broker's JSON instead of a table; errors go to stderr as one JSON line.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// What a verb that did not fail found.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It did its work.
    Done,
    /// A pop found nothing to deliver.
    Empty,
}

impl Verb {
    fn connection(&self) -> &Connection {
        match self {
            Verb::Push(a) => &a.connection,
            Verb::Pop(a) => &a.connection,
            Verb::Ack(a) => &a.connection,
            Verb::Queues(a) => &a.connection,
            Verb::Queue(a) => &a.connection,
            Verb::Groups(a) => &a.connection,
            Verb::Seek(a) => &a.connection,
            Verb::Dlq(a) => a.connection(),
            Verb::Tail(a) => &a.connection,
        }
    }
}

/// Runs one client verb to its end and says how the process should exit.
pub fn run(verb: Verb) -> ExitCode {
    let json = verb.connection().json;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(dispatch(verb)),
        Err(e) => Err(CliError::Io(e)),
    };
    match outcome {
        Ok(Outcome::Done) => ExitCode::from(EXIT_OK),
        Ok(Outcome::Empty) => ExitCode::from(EXIT_EMPTY),
        // The reader of our output left (`regina tail | head`): nothing more to say.
        Err(e) if e.is_broken_pipe() => ExitCode::from(EXIT_OK),
        Err(e) => {
            output::error(&e, json);
            ExitCode::from(EXIT_ERROR)
        }
    }
}

async fn dispatch(verb: Verb) -> Result<Outcome, CliError> {
    match verb {
        Verb::Push(args) => push::run(args).await,
        Verb::Pop(args) => pop::run(args).await,
        Verb::Ack(args) => ack::run(args).await,
        Verb::Queues(args) => queues::list(args).await,
        Verb::Queue(args) => queues::show(args).await,
        Verb::Groups(args) => groups::run(args).await,
        Verb::Seek(args) => groups::seek(args).await,
        Verb::Dlq(args) => dlq::run(args).await,
        Verb::Tail(args) => tail::run(args).await,
    }
}

/// Exits for a command line clap rejected: help and version on stdout with status 0, errors
/// on stderr with [`EXIT_ERROR`] (clap's own status 2 would read as something else here).
pub fn usage_exit(error: &clap::Error) -> ExitCode {
    // Nothing better can be done when the terminal is gone.
    let _ = error.print();
    if error.use_stderr() {
        ExitCode::from(EXIT_ERROR)
    } else {
        ExitCode::from(EXIT_OK)
    }
}
