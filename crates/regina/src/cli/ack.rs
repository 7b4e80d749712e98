//! `regina ack`: acknowledge one delivered message (http-api.md §3.5).

use clap::{Args, ValueEnum};
use reqwest::Method;
use serde_json::{json, Value};

use super::client::Client;
use super::error::CliError;
use super::output;
use super::{Connection, Outcome};

/// Arguments of `regina ack`.
#[derive(Debug, Args)]
#[command(after_help = "\
completed settles the message; failed ends the lease and charges a failed attempt to the \
partition's head (dead-lettered after the queue's retryLimit); retry ends the lease without \
charging anything; dlq dead-letters the message for the group and moves on.

An ack the broker refuses (lease expired, message not found, …) exits with status 1 and its \
{error, code} on stderr. --json prints the broker's result array verbatim.")]
pub struct AckArgs {
    /// Partition id of the message (`partitionId` of the pop).
    pub partition_id: String,
    /// Transaction id of the message.
    pub transaction_id: String,
    /// The lease the message was delivered under (`leaseId` of the pop).
    #[arg(long, short = 'l', value_name = "LEASE_ID")]
    pub lease: String,
    /// Outcome to record.
    #[arg(long, short = 's', value_enum, default_value_t = AckStatus::Completed)]
    pub status: AckStatus,
    /// Failure reason, kept with a dead letter.
    #[arg(long, short = 'e', value_name = "TEXT")]
    pub error: Option<String>,
    /// Consumer group [default: the lease's group].
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Ack statuses (http-api.md §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AckStatus {
    /// Processed: the message is settled.
    #[value(alias = "success")]
    Completed,
    /// Processing failed: a failed attempt, redelivered after the retry delay.
    Failed,
    /// Give the lease back without charging an attempt.
    Retry,
    /// Dead-letter the message for this group.
    Dlq,
}

impl AckStatus {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            AckStatus::Completed => "completed",
            AckStatus::Failed => "failed",
            AckStatus::Retry => "retry",
            AckStatus::Dlq => "dlq",
        }
    }
}

/// Runs `regina ack`.
///
/// # Errors
/// Transport, the broker's error answer, or the in-band failure of the item.
pub async fn run(args: AckArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let mut body = json!({
        "partitionId": args.partition_id,
        "transactionId": args.transaction_id,
        "leaseId": args.lease,
        "status": args.status.as_str(),
    });
    if let Some(error) = &args.error {
        body["error"] = json!(error);
    }
    if let Some(group) = &args.group {
        body["consumerGroup"] = json!(group);
    }
    let request = client
        .request(Method::POST, &["api", "v1", "ack"])?
        .json(&body);
    let reply = client.send_ok(request).await?;
    let results = reply.json()?;
    let item = results
        .get(0)
        .ok_or_else(|| CliError::InvalidResponse("an ack answers with one result".to_owned()))?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
    }
    if item["success"] != Value::Bool(true) {
        return Err(CliError::from_item(reply.status.as_u16(), item));
    }
    if !args.connection.json {
        output::line(&describe(args.status, item))?;
    }
    Ok(Outcome::Done)
}

/// `acked <transactionId> <status> (<queue>/<partition>), lease released, dead-lettered`.
fn describe(status: AckStatus, item: &Value) -> String {
    let mut text = format!(
        "acked {} {} ({}/{})",
        output::cell(&item["transactionId"]),
        status.as_str(),
        output::cell(&item["queueName"]),
        output::cell(&item["partitionName"]),
    );
    if item["leaseReleased"] == Value::Bool(true) {
        text.push_str(", lease released");
    }
    if item["dlq"] == Value::Bool(true) {
        text.push_str(", dead-lettered");
    }
    text
}
