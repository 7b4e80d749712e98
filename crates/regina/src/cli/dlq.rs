//! `regina dlq` (list dead letters) and `regina dlq requeue` (http-api.md §3.9).

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;

use super::client::Client;
use super::error::CliError;
use super::output;
use super::queues::{present, print_listing};
use super::{Connection, Outcome};

/// Arguments of `regina dlq`: a listing, or the `requeue` action.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_help = "\
Lists dead letters, newest failure first. --json prints the broker's answer verbatim.")]
pub struct DlqArgs {
    #[command(subcommand)]
    pub action: Option<DlqAction>,
    #[command(flatten)]
    pub list: DlqListArgs,
}

/// What `regina dlq` can do besides listing.
#[derive(Debug, Subcommand)]
pub enum DlqAction {
    /// Requeue a dead letter: delivered again, at the tail of its partition, to its group only.
    Requeue(RequeueArgs),
}

/// Filters of the dead-letter listing.
#[derive(Debug, Args)]
pub struct DlqListArgs {
    /// Only dead letters of this queue.
    #[arg(long, short = 'q')]
    pub queue: Option<String>,
    /// Only dead letters of this consumer group (`__QUEUE_MODE__` for queue mode).
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    /// Only dead letters of this partition (name).
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    /// Most entries to list [default: the broker's, 100].
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Entries to skip (paging).
    #[arg(long, value_name = "N")]
    pub offset: Option<u32>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Arguments of `regina dlq requeue`.
#[derive(Debug, Args)]
#[command(after_help = "--json prints the broker's answer verbatim.")]
pub struct RequeueArgs {
    /// Partition id of the message.
    pub partition_id: String,
    /// Transaction id of the message.
    pub transaction_id: String,
    /// Requeue for this group only [default: every group that dead-lettered it].
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    #[command(flatten)]
    pub connection: Connection,
}

impl DlqArgs {
    /// The connection settings of whichever form was used.
    pub fn connection(&self) -> &Connection {
        match &self.action {
            Some(DlqAction::Requeue(args)) => &args.connection,
            None => &self.list.connection,
        }
    }
}

/// Runs `regina dlq` or `regina dlq requeue`.
///
/// # Errors
/// Transport or the broker's error answer.
pub async fn run(args: DlqArgs) -> Result<Outcome, CliError> {
    match args.action {
        Some(DlqAction::Requeue(requeue_args)) => requeue(requeue_args).await,
        None => list(args.list).await,
    }
}

async fn list(args: DlqListArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let params = present(&[
        ("queue", args.queue),
        ("consumerGroup", args.group),
        ("partition", args.partition),
        ("limit", args.limit.map(|n| n.to_string())),
        ("offset", args.offset.map(|n| n.to_string())),
    ]);
    let request = client
        .request(Method::GET, &["api", "v1", "dlq"])?
        .query(&params);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let body = reply.json()?;
    let entries = output::array(&body, "messages");
    let mut table = output::table(&[
        "FAILED AT",
        "QUEUE",
        "PARTITION",
        "GROUP",
        "PARTITION ID",
        "TRANSACTION ID",
        "RETRIES",
        "ERROR",
        "DATA",
    ]);
    for entry in entries {
        table.add_row(vec![
            output::cell(&entry["failedAt"]),
            output::cell(&entry["queue"]),
            output::cell(&entry["partition"]),
            output::cell(&entry["consumerGroup"]),
            output::cell(&entry["partitionId"]),
            output::cell(&entry["transactionId"]),
            output::cell(&entry["retryCount"]),
            output::cell(&entry["errorMessage"]),
            output::preview(&entry["data"]),
        ]);
    }
    output::align_right(&mut table, &[6]);
    print_listing(&table, entries.len(), &body["total"], "dead letter")?;
    Ok(Outcome::Done)
}

async fn requeue(args: RequeueArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let body = match &args.group {
        Some(group) => json!({ "consumerGroup": group }),
        None => json!({}),
    };
    let path = [
        "api",
        "v1",
        "messages",
        &args.partition_id,
        &args.transaction_id,
        "retry",
    ];
    let request = client.request(Method::POST, &path)?.json(&body);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let answer = reply.json()?;
    let groups: Vec<String> = output::array(&answer, "consumerGroups")
        .iter()
        .map(output::cell)
        .collect::<Vec<_>>();
    output::line(&format!(
        "requeued {} for {}",
        args.transaction_id,
        match groups.len() {
            0 => "no group".to_owned(),
            _ => format!("group {}", groups.join(", ")),
        }
    ))?;
    Ok(Outcome::Done)
}
