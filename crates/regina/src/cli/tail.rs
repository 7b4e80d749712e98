//! `regina tail`: follow a queue with long-polls and print each message as it arrives.

use std::time::{Duration, Instant};

use clap::Args;
use reqwest::Method;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::client::Client;
use super::error::CliError;
use super::output;
use super::pop::{pop_once, PopQuery, Popped};
use super::{Connection, Outcome};

/// Messages per pop, by default.
const BATCH_DEFAULT: u32 = 100;
/// Partitions claimed per pop, by default.
const PARTITIONS_DEFAULT: u32 = 10;
/// Long-poll deadline of each pop, by default (milliseconds); tail polls again after it.
const WAIT_MS_DEFAULT: u64 = 30_000;
/// An empty answer that came back sooner than this (pop maintenance, a broker shutting down)
/// is followed by a pause of this length, so tail never spins.
const EARLY_EMPTY_PAUSE: Duration = Duration::from_secs(1);
/// Pause before trying again after a `503` (database down, broker overloaded).
const UNAVAILABLE_PAUSE: Duration = Duration::from_secs(1);
/// How long removing the throw-away group may take when tail stops.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Prefix of the throw-away group's name.
const GROUP_PREFIX: &str = "regina-tail-";

/// Arguments of `regina tail`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without --group, tail reads through a throw-away consumer group of its own \
(regina-tail-<random>), so it takes nothing from anyone: every group, queue mode included, \
still gets every message. It shows the messages pushed from now on (--from-beginning: from the \
oldest retained one), takes them with autoAck, and removes its group when it stops (best \
effort: that needs the admin role when auth is on).

With --group G, tail is one of G's consumers: the messages it prints are taken away from G's \
other consumers, and it acks each batch `completed` right after printing it (at-least-once: a \
batch interrupted before its ack is delivered again). tail never leaves messages leased and \
unacked, since they would come back after the lease as failed attempts.

One line per message: createdAt, queue/partition, transactionId, payload as compact JSON. \
--json prints each message object as the broker sent it, one per line (NDJSON). Ctrl-C or \
SIGTERM stops tail cleanly, with exit status 0.")]
pub struct TailArgs {
    /// Queue to follow (it may not exist yet).
    pub queue: String,
    /// Consume as a member of this group, acking what is printed [default: a throw-away group].
    #[arg(long, short = 'g')]
    pub group: Option<String>,
    /// Follow this partition only.
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    /// Start at the oldest retained message instead of now (throw-away group only).
    #[arg(long, conflicts_with = "group")]
    pub from_beginning: bool,
    /// Most messages per pop.
    #[arg(long, short = 'b', value_name = "N", default_value_t = BATCH_DEFAULT)]
    pub batch: u32,
    /// Most partitions claimed per pop.
    #[arg(long, value_name = "N", default_value_t = PARTITIONS_DEFAULT)]
    pub partitions: u32,
    /// Long-poll deadline of each pop, milliseconds (tail then polls again).
    #[arg(long, value_name = "MS", default_value_t = WAIT_MS_DEFAULT)]
    pub timeout: u64,
    #[command(flatten)]
    pub connection: Connection,
}

/// The messages of a pop answer, each kept as the broker wrote it.
#[derive(Deserialize)]
struct Batch<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// SIGINT or SIGTERM, caught from the moment tail starts.
struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    fn catch() -> Result<Stop, CliError> {
        Ok(Stop {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// Runs `regina tail` until a signal.
///
/// # Errors
/// Transport or the broker's error answer (a `503` is waited out instead).
pub async fn run(args: TailArgs) -> Result<Outcome, CliError> {
    let mut stop = Stop::catch()?;
    let client = Client::new(&args.connection)?;
    let throwaway = args.group.is_none().then(|| {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("{GROUP_PREFIX}{}", &id[..12])
    });
    let start = if args.from_beginning { "all" } else { "new" };
    let mut query = PopQuery {
        queue: args.queue.clone(),
        partition: args.partition.clone(),
        group: args.group.clone().or_else(|| throwaway.clone()),
        batch: Some(args.batch),
        partitions: Some(args.partitions),
        wait_ms: None,
        auto_ack: throwaway.is_some(),
        subscription_mode: throwaway.as_ref().map(|_| start.to_owned()),
        subscription_from: None,
    };
    let followed = follow(&client, &mut query, &args, &mut stop).await;
    if let Some(group) = &throwaway {
        forget_group(&client, group).await;
    }
    followed
}

/// Pops, prints and (in a named group) acks until `stop`. The first pop does not wait: it
/// fixes the throw-away group's start while the queue exists, or learns that it does not.
async fn follow(
    client: &Client,
    query: &mut PopQuery,
    args: &TailArgs,
    stop: &mut Stop,
) -> Result<Outcome, CliError> {
    let mut first = true;
    loop {
        let asked = Instant::now();
        let popped = tokio::select! {
            () = stop.recv() => return Ok(Outcome::Done),
            popped = pop_once(client, query, true) => popped,
        };
        let popped = match popped {
            Err(e @ CliError::Server { status: 503, .. }) => {
                output::note(&format!("{}; trying again", e.to_human_line()));
                if pause(stop, UNAVAILABLE_PAUSE).await {
                    return Ok(Outcome::Done);
                }
                continue;
            }
            other => other?,
        };
        let was_first = std::mem::replace(&mut first, false);
        query.wait_ms = Some(args.timeout);
        match popped {
            Popped::Empty(reason) if was_first && reason == "queue_not_found" => {
                // Every message of a queue created from now on is new to this tail.
                query.subscription_mode = query.subscription_mode.take().map(|_| "all".into());
            }
            Popped::Empty(_) => {
                let early = asked.elapsed() < EARLY_EMPTY_PAUSE;
                if !was_first && early && pause(stop, EARLY_EMPTY_PAUSE).await {
                    return Ok(Outcome::Done);
                }
            }
            Popped::Messages(reply, body) => {
                print_batch(&reply.text, &body, args.connection.json)?;
                if !query.auto_ack {
                    ack_batch(client, &body).await?;
                }
            }
        }
    }
}

/// Sleeps for `length`; true when a signal came first.
async fn pause(stop: &mut Stop, length: Duration) -> bool {
    tokio::select! {
        () = stop.recv() => true,
        () = tokio::time::sleep(length) => false,
    }
}

fn print_batch(text: &str, body: &Value, json: bool) -> Result<(), CliError> {
    let mut out = String::new();
    if json {
        let batch: Batch<'_> = serde_json::from_str(text)
            .map_err(|e| CliError::InvalidResponse(format!("pop answer: {e}")))?;
        for message in batch.messages {
            let raw = message.get();
            // The broker writes compact JSON; anything else is re-written onto one line.
            if raw.contains('\n') {
                let value: Value = serde_json::from_str(raw)
                    .map_err(|e| CliError::InvalidResponse(format!("pop answer: {e}")))?;
                out.push_str(&value.to_string());
            } else {
                out.push_str(raw);
            }
            out.push('\n');
        }
    } else {
        for message in output::array(body, "messages") {
            out.push_str(&format!(
                "{}  {}/{}  {}  {}\n",
                output::cell(&message["createdAt"]),
                output::cell(&message["queue"]),
                output::cell(&message["partition"]),
                output::cell(&message["transactionId"]),
                message["data"],
            ));
        }
    }
    output::print(&out)
}

/// Acks every message of a pop answer `completed`; a refused item is reported on stderr (it
/// will be delivered again) and tail goes on.
async fn ack_batch(client: &Client, body: &Value) -> Result<(), CliError> {
    let acknowledgments: Vec<Value> = output::array(body, "messages")
        .iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                   "leaseId": m["leaseId"], "consumerGroup": m["consumerGroup"],
                   "status": "completed"})
        })
        .collect();
    let request = client
        .request(Method::POST, &["api", "v1", "ack", "batch"])?
        .json(&json!({ "acknowledgments": acknowledgments }));
    let results = client.send_ok(request).await?.json()?;
    for item in results.as_array().map_or(&[][..], Vec::as_slice) {
        if item["success"] != Value::Bool(true) {
            let error = CliError::from_item(200, item);
            output::note(&format!(
                "ack of {} refused, it will come again: {}",
                output::cell(&item["transactionId"]),
                error.to_human_line()
            ));
        }
    }
    Ok(())
}

/// Deletes the throw-away group (cursors and subscription). Best effort: a failure leaves
/// only an idle group behind, so it is not reported.
async fn forget_group(client: &Client, group: &str) {
    let Ok(request) = client.request(Method::DELETE, &["api", "v1", "consumer-groups", group])
    else {
        return;
    };
    let _ = client.send(request.timeout(CLEANUP_TIMEOUT)).await;
}
