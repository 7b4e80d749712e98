//! `regina pop`: one pop request (http-api.md §3.4), optionally a long-poll.

use clap::Args;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::client::{long_poll_timeout, Client, Reply};
use super::error::CliError;
use super::output;
use super::{Connection, Outcome};

/// The longest long-poll the spec allows (`POP_TIMEOUT_MS_MAX` default), used as the request
/// deadline when `--wait` leaves the timeout to the broker.
const BROKER_WAIT_MS_MAX: u64 = 300_000;

/// Arguments of `regina pop`.
#[derive(Debug, Args)]
#[command(after_help = "\
Messages come leased to this pop: ack each one (`regina ack PARTITION_ID TRANSACTION_ID --lease \
LEASE_ID`) before the queue's leaseTime runs out, or it is delivered again and the attempt counts \
as failed. --auto-ack settles them on delivery instead (at-most-once).

Exit status 3 when nothing was delivered, with the reason on stderr (with --json nothing is \
printed at all). --json prints the broker's answer verbatim.")]
pub struct PopArgs {
    /// Queue to pop from.
    pub queue: String,
    /// Pop from this partition only [default: any partition with work].
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    /// Consumer group [default: queue mode, __QUEUE_MODE__].
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    /// Most messages to take, across all claimed partitions [default: the broker's, 1].
    #[arg(long, short = 'b', value_name = "N")]
    pub batch: Option<u32>,
    /// Most partitions to claim [default: 1].
    #[arg(long, value_name = "N")]
    pub partitions: Option<u32>,
    /// Long-poll: when nothing is there, wait for a message until --timeout.
    #[arg(long)]
    pub wait: bool,
    /// Long-poll deadline, milliseconds [default: the broker's, 30000].
    #[arg(long, value_name = "MS", requires = "wait")]
    pub timeout: Option<u64>,
    /// Settle the messages on delivery: no lease, nothing to ack, never delivered again.
    #[arg(long)]
    pub auto_ack: bool,
    /// Where a new group starts: all, new (new-only is an alias).
    #[arg(long, value_name = "MODE")]
    pub subscription_mode: Option<String>,
    /// Where a new group starts: `now` or a timestamp (wins over --subscription-mode).
    #[arg(long, value_name = "now|TIMESTAMP")]
    pub subscription_from: Option<String>,
    #[command(flatten)]
    pub connection: Connection,
}

/// One pop request, as `regina pop` and `regina tail` send it.
#[derive(Debug, Default, Clone)]
pub struct PopQuery {
    /// Queue name.
    pub queue: String,
    /// The single-partition route when set.
    pub partition: Option<String>,
    /// `consumerGroup` (absent: queue mode).
    pub group: Option<String>,
    /// `batch` (absent: the broker's default).
    pub batch: Option<u32>,
    /// `partitions` (absent: 1).
    pub partitions: Option<u32>,
    /// Long-poll deadline in milliseconds; `Some` turns `wait` on.
    pub wait_ms: Option<u64>,
    /// `autoAck`.
    pub auto_ack: bool,
    /// `subscriptionMode` of a new group.
    pub subscription_mode: Option<String>,
    /// `subscriptionFrom` of a new group.
    pub subscription_from: Option<String>,
}

/// What a pop got.
pub enum Popped {
    /// Messages: the answer verbatim, and parsed.
    Messages(Reply, Value),
    /// Nothing, with the broker's reason (`empty`, `timeout`, `queue_not_found`, …).
    Empty(String),
}

/// Runs `regina pop`.
///
/// # Errors
/// Transport or the broker's error answer.
pub async fn run(args: PopArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let wait_ms = args
        .wait
        .then_some(args.timeout.unwrap_or(BROKER_WAIT_MS_MAX));
    let query = PopQuery {
        queue: args.queue,
        partition: args.partition,
        group: args.group,
        batch: args.batch,
        partitions: args.partitions,
        wait_ms,
        auto_ack: args.auto_ack,
        subscription_mode: args.subscription_mode,
        subscription_from: args.subscription_from,
    };
    // Without --timeout the broker applies its own default: send only what was asked for.
    let explicit_timeout = args.timeout.is_some();
    match pop_once(&client, &query, explicit_timeout).await? {
        Popped::Empty(reason) => {
            if !args.connection.json {
                output::note(&format!("nothing to pop ({reason})"));
            }
            Ok(Outcome::Empty)
        }
        Popped::Messages(reply, body) => {
            if args.connection.json {
                output::raw_json(&reply.text)?;
            } else {
                print_messages(&body)?;
            }
            Ok(Outcome::Done)
        }
    }
}

/// Sends one pop; `send_timeout` says whether `wait_ms` goes to the broker as `timeout` (it
/// always bounds the request).
///
/// # Errors
/// Transport or the broker's error answer.
pub async fn pop_once(
    client: &Client,
    query: &PopQuery,
    send_timeout: bool,
) -> Result<Popped, CliError> {
    let mut path = vec!["api", "v1", "pop", "queue", query.queue.as_str()];
    if let Some(partition) = &query.partition {
        path.extend(["partition", partition.as_str()]);
    }
    let mut params: Vec<(&str, String)> = Vec::new();
    let mut param = |key, value: Option<String>| {
        if let Some(value) = value {
            params.push((key, value));
        }
    };
    param("consumerGroup", query.group.clone());
    param("batch", query.batch.map(|n| n.to_string()));
    param("partitions", query.partitions.map(|n| n.to_string()));
    param("wait", query.wait_ms.map(|_| "true".to_owned()));
    param(
        "timeout",
        query
            .wait_ms
            .filter(|_| send_timeout)
            .map(|ms| ms.to_string()),
    );
    param("autoAck", query.auto_ack.then(|| "true".to_owned()));
    param("subscriptionMode", query.subscription_mode.clone());
    param("subscriptionFrom", query.subscription_from.clone());
    let mut request = client.request(Method::GET, &path)?.query(&params);
    if let Some(wait_ms) = query.wait_ms {
        request = request.timeout(long_poll_timeout(wait_ms));
    }
    let reply = client.send_ok(request).await?;
    if reply.status == StatusCode::NO_CONTENT {
        let reason = reply.header("x-regina-empty-reason").unwrap_or("empty");
        return Ok(Popped::Empty(reason.to_owned()));
    }
    let body = reply.json()?;
    // With POP_EMPTY_STATUS=200 the broker says "nothing" as a 200 with no messages (http-api.md
    // §2.2).
    if output::array(&body, "messages").is_empty() {
        let reason = body["reason"].as_str().unwrap_or("empty").to_owned();
        return Ok(Popped::Empty(reason));
    }
    Ok(Popped::Messages(reply, body))
}

/// A summary line (lease, group, counts), then one row per message.
fn print_messages(body: &Value) -> Result<(), CliError> {
    let messages = output::array(body, "messages");
    let lease = match body["leaseId"].as_str() {
        Some("") | None => "none (auto-acked)".to_owned(),
        Some(lease) => lease.to_owned(),
    };
    output::line(&format!(
        "lease {lease}  group {}  {} from {}",
        output::cell(&body["consumerGroup"]),
        output::count(messages.len(), "message"),
        output::count(
            usize::try_from(body["partitionsClaimed"].as_u64().unwrap_or(1)).unwrap_or(1),
            "partition"
        ),
    ))?;
    let mut table = output::table(&[
        "PARTITION",
        "PARTITION ID",
        "TRANSACTION ID",
        "RETRIES",
        "CREATED AT",
        "DATA",
    ]);
    for message in messages {
        table.add_row(vec![
            output::cell(&message["partition"]),
            output::cell(&message["partitionId"]),
            output::cell(&message["transactionId"]),
            output::cell(&message["retryCount"]),
            output::cell(&message["createdAt"]),
            output::preview(&message["data"]),
        ]);
    }
    output::align_right(&mut table, &[3]);
    output::print_table(&table)
}
