//! `regina groups [NAME]` and `regina seek`: the consumer-group views and seeks of http-api.md
//! §3.10.

use clap::{ArgGroup, Args};
use comfy_table::Table;
use reqwest::Method;
use serde_json::{json, Value};

use super::client::Client;
use super::error::CliError;
use super::output;
use super::queues::{present, print_listing};
use super::{Connection, Outcome};

/// Arguments of `regina groups`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without NAME: one row per (group, queue), queue mode (__QUEUE_MODE__) included. With NAME: \
that group's position in every partition it has read. --json prints the broker's answer \
verbatim.")]
pub struct GroupsArgs {
    /// Show this group's partitions instead of the list.
    pub name: Option<String>,
    /// Most rows to list [default: the broker's, 1000].
    #[arg(long, value_name = "N", conflicts_with = "name")]
    pub limit: Option<u32>,
    /// Rows to skip (paging).
    #[arg(long, value_name = "N", conflicts_with = "name")]
    pub offset: Option<u32>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Arguments of `regina seek`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["to_end", "timestamp"])))]
#[command(after_help = "\
--to-end: the group next receives only messages pushed after the seek. --timestamp: the group \
next receives, in each partition, the first message created after TS (RFC 3339, or a date). \
Either way the group's active leases on the queue end and failed-attempt counts reset. \
--json prints the broker's answer verbatim.")]
pub struct SeekArgs {
    /// Consumer group to move (`__QUEUE_MODE__` for queue mode).
    pub group: String,
    /// Queue whose partitions it moves on.
    pub queue: String,
    /// Skip everything pushed so far.
    #[arg(long)]
    pub to_end: bool,
    /// Go to this instant.
    #[arg(long, value_name = "TS")]
    pub timestamp: Option<String>,
    /// Seek in this partition only [default: every partition of the queue].
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Runs `regina groups`.
///
/// # Errors
/// Transport or the broker's error answer.
pub async fn run(args: GroupsArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let mut path = vec!["api", "v1", "consumer-groups"];
    if let Some(name) = &args.name {
        path.push(name);
    }
    let params = present(&[
        ("limit", args.limit.map(|n| n.to_string())),
        ("offset", args.offset.map(|n| n.to_string())),
    ]);
    let request = client.request(Method::GET, &path)?.query(&params);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let body = reply.json()?;
    match &args.name {
        None => {
            let rows = body.as_array().map_or(&[][..], Vec::as_slice);
            let total = reply
                .header("x-total-count")
                .and_then(|t| t.parse::<u64>().ok())
                .map_or(Value::Null, Value::from);
            print_listing(&list_table(rows), rows.len(), &total, "consumer group")?;
        }
        Some(name) => print_detail(name, &body)?,
    }
    Ok(Outcome::Done)
}

fn list_table(rows: &[Value]) -> Table {
    let mut table = output::table(&[
        "GROUP",
        "QUEUE",
        "MEMBERS",
        "PARTITIONS LAGGING",
        "LAG",
        "MAX TIME LAG (S)",
        "STATE",
        "SUBSCRIPTION",
    ]);
    for row in rows {
        let subscription = match row["subscriptionTimestamp"].as_str() {
            Some(at) => format!("{} {at}", output::cell(&row["subscriptionMode"])),
            None => output::cell(&row["subscriptionMode"]),
        };
        table.add_row(vec![
            output::cell(&row["name"]),
            output::cell(&row["queueName"]),
            output::cell(&row["members"]),
            output::cell(&row["partitionsWithLag"]),
            output::cell(&row["totalLag"]),
            output::cell(&row["maxTimeLag"]),
            output::cell(&row["state"]),
            subscription,
        ]);
    }
    output::align_right(&mut table, &[2, 3, 4, 5]);
    table
}

/// One row per (queue, partition) of the group, queues in name order.
fn print_detail(name: &str, body: &Value) -> Result<(), CliError> {
    let Some(queues) = body.as_object().filter(|q| !q.is_empty()) else {
        output::note(&format!("group {name} has read no partition"));
        return Ok(());
    };
    let mut table = output::table(&[
        "QUEUE",
        "PARTITION",
        "LAG",
        "TIME LAG (S)",
        "CONSUMED",
        "LEASED",
        "WORKER",
        "LAST CONSUMED AT",
    ]);
    for (queue, detail) in queues {
        for partition in output::array(detail, "partitions") {
            table.add_row(vec![
                queue.clone(),
                output::cell(&partition["partition"]),
                output::cell(&partition["offsetLag"]),
                output::cell(&partition["timeLagSeconds"]),
                output::cell(&partition["totalConsumed"]),
                output::cell(&partition["leaseActive"]),
                output::cell(&partition["workerId"]),
                output::cell(&partition["lastConsumedAt"]),
            ]);
        }
    }
    output::align_right(&mut table, &[2, 3, 4]);
    output::print_table(&table)
}

/// Runs `regina seek`.
///
/// # Errors
/// Transport or the broker's error answer (`queue_not_found`, `partition_not_found`, …).
pub async fn seek(args: SeekArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let mut path = vec![
        "api",
        "v1",
        "consumer-groups",
        &args.group,
        "queues",
        &args.queue,
    ];
    if let Some(partition) = &args.partition {
        path.extend(["partitions", partition]);
    }
    path.push("seek");
    let body = match &args.timestamp {
        Some(timestamp) => json!({ "timestamp": timestamp }),
        None => json!({ "toEnd": true }),
    };
    let request = client.request(Method::POST, &path)?.json(&body);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let answer = reply.json()?;
    let target = match &args.timestamp {
        Some(timestamp) => format!("to {timestamp}"),
        None => "to the end".to_owned(),
    };
    let scope = match &args.partition {
        Some(partition) => format!("partition {partition}"),
        None => output::count(
            usize::try_from(answer["partitionsUpdated"].as_u64().unwrap_or(0)).unwrap_or(0),
            "partition",
        ),
    };
    output::line(&format!(
        "group {} on queue {}: moved {target} ({scope})",
        args.group, args.queue
    ))?;
    Ok(Outcome::Done)
}
