//! Log output: `LOG_LEVEL` (a level or a full filter directive) and `LOG_FORMAT` (`text`, `json`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use regina_broker::{Config, LogFormat};

/// Installs the global subscriber.
pub fn init(config: &Config) -> anyhow::Result<()> {
    // The parse error repeats its message as its source: keep it out of the cause chain.
    let filter = EnvFilter::try_new(&config.log_level)
        .map_err(|e| anyhow::anyhow!("invalid LOG_LEVEL {:?}: {e}", config.log_level))?;
    // Colour codes only help a terminal; they litter files and log collectors.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal());
    let installed = match config.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("install the log subscriber: {e}"))
}
