//! A session that times statements and captures the plans of the statements they run inside
//! functions, with `auto_explain` (ANALYZE, BUFFERS, nested statements) sending its log lines to
//! this client as notices.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use tokio_postgres::{AsyncMessage, Client, NoTls};

/// One statement's plan as `auto_explain` logged it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Its duration, milliseconds.
    pub duration_ms: f64,
    /// The statement and its plan (the log text after `duration: … ms  plan:`).
    pub text: String,
}

/// A connection whose notices are collected.
pub struct Session {
    pub client: Client,
    notices: Arc<Mutex<Vec<String>>>,
}

impl Session {
    /// Connects to `url`.
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn connect(url: &str) -> anyhow::Result<Session> {
        let (client, mut connection) = tokio_postgres::connect(url, NoTls)
            .await
            .with_context(|| format!("connect {url}"))?;
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sink = notices.clone();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notice(notice)) => sink
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(notice.message().to_owned()),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        Ok(Session { client, notices })
    }

    /// Runs `sql` (one or more statements, simple protocol) and returns its wall time.
    ///
    /// # Errors
    /// The statement fails.
    pub async fn timed(&self, sql: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.client
            .batch_execute(sql)
            .await
            .with_context(|| format!("run {sql}"))?;
        Ok(started.elapsed())
    }

    /// Runs `sql` once with `auto_explain` on and returns the plans of the statements that took
    /// at least `min_ms` (nested ones included), slowest first.
    ///
    /// # Errors
    /// `auto_explain` cannot be loaded, or the statement fails.
    pub async fn plans(&self, sql: &str, min_ms: u32) -> anyhow::Result<Vec<Plan>> {
        self.record_plans(min_ms).await?;
        let outcome = self.client.batch_execute(sql).await;
        let plans = self.recorded_plans().await?;
        outcome.with_context(|| format!("run {sql}"))?;
        Ok(plans)
    }

    /// Turns `auto_explain` on for this session: statements of at least `min_ms`.
    ///
    /// # Errors
    /// `auto_explain` cannot be loaded.
    pub async fn record_plans(&self, min_ms: u32) -> anyhow::Result<()> {
        self.client
            .batch_execute(&format!(
                "load 'auto_explain';
                 set auto_explain.log_min_duration = '{min_ms}ms';
                 set auto_explain.log_analyze = on;
                 set auto_explain.log_buffers = on;
                 set auto_explain.log_nested_statements = on;
                 set auto_explain.log_format = text;
                 set client_min_messages = log"
            ))
            .await
            .context("load auto_explain")?;
        self.drain();
        Ok(())
    }

    /// Turns `auto_explain` off and returns the plans recorded since [`Session::record_plans`],
    /// slowest first.
    ///
    /// # Errors
    /// The session failed.
    pub async fn recorded_plans(&self) -> anyhow::Result<Vec<Plan>> {
        self.client
            .batch_execute("reset client_min_messages; set auto_explain.log_min_duration = -1")
            .await?;
        let mut plans: Vec<Plan> = self.drain().iter().filter_map(|n| parse(n)).collect();
        plans.sort_by(|a, b| b.duration_ms.total_cmp(&a.duration_ms));
        Ok(plans)
    }

    fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// `duration: 12.345 ms  plan:\n…` → the plan.
fn parse(notice: &str) -> Option<Plan> {
    let rest = notice.strip_prefix("duration: ")?;
    let (ms, text) = rest.split_once(" ms")?;
    let text = text.trim_start().strip_prefix("plan:").unwrap_or(text);
    Some(Plan {
        duration_ms: ms.trim().parse().ok()?,
        text: text.trim_matches('\n').to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_explain_lines_are_parsed() {
        let plan = parse("duration: 12.5 ms  plan:\nQuery Text: select 1\nResult").expect("a plan");
        assert_eq!(plan.duration_ms, 12.5);
        assert_eq!(plan.text, "Query Text: select 1\nResult");
        assert!(parse("statement: select 1").is_none());
    }
}
