//! `regina queues` and `regina queue NAME`: the queue listing and detail of http-api.md §3.8.

use clap::Args;
use comfy_table::Table;
use reqwest::Method;
use serde_json::Value;

use super::client::Client;
use super::error::CliError;
use super::output;
use super::{Connection, Outcome};

/// The six message counts of a partition or queue (http-api.md §4.16), in table order.
const COUNTS: [(&str, &str); 6] = [
    ("TOTAL", "total"),
    ("PENDING", "pending"),
    ("PROCESSING", "processing"),
    ("COMPLETED", "completed"),
    ("FAILED", "failed"),
    ("DLQ", "deadLetter"),
];

/// Arguments of `regina queues`.
#[derive(Debug, Args)]
#[command(after_help = "--json prints the broker's answer verbatim.")]
pub struct QueuesArgs {
    /// Only queues of this namespace.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Only queues of this task.
    #[arg(long, short = 't')]
    pub task: Option<String>,
    /// Only queues whose name contains this text.
    #[arg(long, short = 's', value_name = "TEXT")]
    pub search: Option<String>,
    /// Most queues to list [default: the broker's, 1000].
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Queues to skip (paging).
    #[arg(long, value_name = "N")]
    pub offset: Option<u32>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Arguments of `regina queue`.
#[derive(Debug, Args)]
#[command(after_help = "--json prints the broker's answer verbatim.")]
pub struct QueueArgs {
    /// Queue name.
    pub name: String,
    /// Most partitions to list [default: the broker's, 1000].
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Partitions to skip (paging).
    #[arg(long, value_name = "N")]
    pub offset: Option<u32>,
    #[command(flatten)]
    pub connection: Connection,
}

/// Runs `regina queues`.
///
/// # Errors
/// Transport or the broker's error answer.
pub async fn list(args: QueuesArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let params = present(&[
        ("namespace", args.namespace),
        ("task", args.task),
        ("search", args.search),
        ("limit", args.limit.map(|n| n.to_string())),
        ("offset", args.offset.map(|n| n.to_string())),
    ]);
    let request = client
        .request(Method::GET, &["api", "v1", "resources", "queues"])?
        .query(&params);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let body = reply.json()?;
    let queues = output::array(&body, "queues");
    let mut table = output::table(&[
        "NAME",
        "NAMESPACE",
        "TASK",
        "PRIORITY",
        "PARTITIONS",
        "TOTAL",
        "PENDING",
        "PROCESSING",
        "CREATED AT",
    ]);
    for queue in queues {
        let messages = &queue["messages"];
        table.add_row(vec![
            output::cell(&queue["name"]),
            output::cell(&queue["namespace"]),
            output::cell(&queue["task"]),
            output::cell(&queue["priority"]),
            output::cell(&queue["partitions"]),
            output::cell(&messages["total"]),
            output::cell(&messages["pending"]),
            output::cell(&messages["processing"]),
            output::cell(&queue["createdAt"]),
        ]);
    }
    output::align_right(&mut table, &[3, 4, 5, 6, 7]);
    print_listing(&table, queues.len(), &body["pagination"]["total"], "queue")?;
    Ok(Outcome::Done)
}

/// Runs `regina queue`.
///
/// # Errors
/// Transport or the broker's error answer (`queue_not_found` for an unknown queue).
pub async fn show(args: QueueArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    let params = present(&[
        ("limit", args.limit.map(|n| n.to_string())),
        ("offset", args.offset.map(|n| n.to_string())),
    ]);
    let request = client
        .request(
            Method::GET,
            &["api", "v1", "resources", "queues", &args.name],
        )?
        .query(&params);
    let reply = client.send_ok(request).await?;
    if args.connection.json {
        output::raw_json(&reply.text)?;
        return Ok(Outcome::Done);
    }
    let queue = reply.json()?;
    let totals = &queue["totals"];
    let totals_text: Vec<String> = COUNTS
        .iter()
        .map(|(_, key)| format!("{key} {}", output::cell(&totals[key])))
        .collect();
    output::print_table(&output::fields(&[
        ("queue", output::cell(&queue["name"])),
        ("id", output::cell(&queue["id"])),
        ("namespace", output::cell(&queue["namespace"])),
        ("task", output::cell(&queue["task"])),
        ("created at", output::cell(&queue["createdAt"])),
        ("options", options_text(&queue["options"])),
        ("partitions", output::cell(&queue["partitionCount"])),
        ("messages", totals_text.join(", ")),
    ]))?;
    output::line("")?;
    let mut header = vec!["PARTITION", "ID"];
    header.extend(COUNTS.iter().map(|(title, _)| *title));
    header.extend(["LAST ACTIVITY", "OLDEST MESSAGE"]);
    let mut table = output::table(&header);
    let partitions = output::array(&queue, "partitions");
    for partition in partitions {
        let mut row = vec![
            output::cell(&partition["name"]),
            output::cell(&partition["id"]),
        ];
        row.extend(
            COUNTS
                .iter()
                .map(|(_, key)| output::cell(&partition["stats"][key])),
        );
        row.push(output::cell(&partition["lastActivity"]));
        row.push(output::cell(&partition["oldestMessage"]));
        table.add_row(row);
    }
    output::align_right(&mut table, &[2, 3, 4, 5, 6, 7]);
    print_listing(
        &table,
        partitions.len(),
        &queue["partitionCount"],
        "partition",
    )?;
    Ok(Outcome::Done)
}

/// The query parameters that were given.
pub fn present<'a>(params: &[(&'a str, Option<String>)]) -> Vec<(&'a str, String)> {
    params
        .iter()
        .filter_map(|(key, value)| value.clone().map(|v| (*key, v)))
        .collect()
}

/// `key=value` pairs of the queue options, sorted by key.
fn options_text(options: &Value) -> String {
    match options.as_object() {
        Some(map) if !map.is_empty() => map
            .iter()
            .map(|(key, value)| format!("{key}={}", output::cell(value)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => "-".to_owned(),
    }
}

/// Prints a listing's table, then a note when it is a page of a longer listing; for an empty
/// listing only a note (on stderr), so stdout stays empty.
///
/// # Errors
/// When stdout cannot be written.
pub fn print_listing(
    table: &Table,
    shown: usize,
    total: &Value,
    thing: &str,
) -> Result<(), CliError> {
    if shown == 0 {
        output::note(&format!("no {thing}s"));
        return Ok(());
    }
    output::print_table(table)?;
    let total = total.as_u64().and_then(|t| usize::try_from(t).ok());
    if let Some(total) = total.filter(|&total| total > shown) {
        output::note(&format!(
            "shown {shown} of {}; use --limit/--offset for more",
            output::count(total, thing)
        ));
    }
    Ok(())
}
