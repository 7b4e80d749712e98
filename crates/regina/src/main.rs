//! `regina`: the Regina message broker.
//!
//! `regina serve` runs the broker in the foreground; `regina migrate` applies the schema. Without
//! any database setting both use a private development cluster (see [`devcluster`]). The other
//! verbs are clients of a running broker (see [`cli`]).

mod cli;
mod devcluster;
mod devkey;
mod logging;
mod settings;

use std::future::Future;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use regina_broker::Config;
use tokio::signal::unix::{signal, SignalKind};

use crate::devcluster::DevCluster;

/// The Regina message broker (HTTP API compatible with Queen MQ v1, state in PostgreSQL).
#[derive(Debug, Parser)]
#[command(name = "regina", version, after_help = cli::HELP_AFTER)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// Run the broker in the foreground until Ctrl-C or SIGTERM. Without DATABASE_URL or any
    /// PG_* setting, first start a private PostgreSQL cluster under <project>/.regina/.
    Serve(Settings),
    /// Apply migrations and SQL functions, then exit (same database choice as `serve`).
    Migrate(Settings),
    /// Print the OpenAPI 3.1 document of the HTTP API (what `GET /api/openapi.json` serves).
    Openapi,
    /// Print every setting (environment variable, flag, default, meaning) as the Markdown table
    /// of the README.
    Settings,
    #[command(flatten)]
    Client(cli::Verb),
}

#[derive(Debug, clap::Args)]
struct Settings {
    #[command(flatten)]
    config: Config,
}

fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (args, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return cli::usage_exit(&e),
    };
    let database_configured = matches
        .subcommand()
        .is_some_and(|(_, sub)| devcluster::database_configured(sub));
    let outcome = match args.verb {
        Verb::Serve(Settings { config }) => {
            run(config, |config| serve(config, database_configured))
        }
        Verb::Migrate(Settings { config }) => {
            run(config, |config| migrate(config, database_configured))
        }
        Verb::Openapi => {
            print!("{}", regina_broker::openapi_document());
            return ExitCode::SUCCESS;
        }
        Verb::Settings => {
            print!("{}", settings::block());
            return ExitCode::SUCCESS;
        }
        Verb::Client(verb) => return cli::run(verb),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` keeps the cause chain on one line and, unlike `Debug`, no backtrace.
            eprintln!("regina: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `verb` (serve or migrate) on a multi-threaded runtime sized by the configuration.
fn run<F, Fut>(config: Config, verb: F) -> anyhow::Result<()>
where
    F: FnOnce(Config) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    logging::init(&config)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = config.num_workers {
        runtime.worker_threads(workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("start the async runtime")?;
    runtime.block_on(verb(config))
}

/// Binds, starts the dev cluster when needed, serves until a signal, then stops the cluster.
async fn serve(mut config: Config, database_configured: bool) -> anyhow::Result<()> {
    // Signals are caught from here on, so an early Ctrl-C still stops the dev cluster cleanly.
    let shutdown = shutdown_signal()?;
    // Bind before touching the dev cluster: a second instance fails here, not after starting it.
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), config.port))
        .await
        .with_context(|| format!("listen on {}:{}", config.host, config.port))?;
    let dev = if database_configured {
        None
    } else {
        Some(DevCluster::start(&mut config).await?)
    };
    // Only on the development path: a configured database without a key keeps refusing
    // encrypting queues.
    if dev.is_some() {
        if let Err(e) = devcluster::dev_dir().and_then(|dir| devkey::apply(&mut config, &dir)) {
            // Leave no server behind that nothing will use.
            if let Some(dev) = dev.filter(DevCluster::started) {
                if let Err(stop) = dev.stop().await {
                    tracing::warn!("{stop:#}");
                }
            }
            return Err(e);
        }
    }
    let address = listener
        .local_addr()
        .context("read the listening address")?;
    let database = dev.as_ref().map_or(String::new(), |d| {
        format!(" (dev database {})", d.database_url())
    });
    println!(
        "regina {} listening on http://{address}{database}",
        env!("CARGO_PKG_VERSION")
    );
    let served = regina_broker::serve(config, listener, shutdown).await;
    if let Some(dev) = dev {
        dev.stop().await?;
    }
    served.context("broker failed")
}

/// Applies migrations; stops the dev cluster afterwards only if this command started it.
async fn migrate(mut config: Config, database_configured: bool) -> anyhow::Result<()> {
    let dev = if database_configured {
        None
    } else {
        Some(DevCluster::start(&mut config).await?)
    };
    let migrated = regina_broker::migrate(&config).await;
    if let Some(dev) = dev.filter(DevCluster::started) {
        dev.stop().await?;
    }
    migrated.context("migration failed")?;
    tracing::info!("migrations applied");
    Ok(())
}

/// Resolves at the first SIGINT or SIGTERM.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    let mut interrupt = signal(SignalKind::interrupt()).context("catch SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("catch SIGTERM")?;
    Ok(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        tracing::info!(signal = name, "shutting down");
    })
}
