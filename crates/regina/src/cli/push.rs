//! `regina push`: one message from an argument, a file or stdin, or one message per input line.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use clap::Args;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, BufReader};

use super::client::{Client, Reply};
use super::error::CliError;
use super::output;
use super::{Connection, Outcome};

/// Items per push request with `--lines`, by default.
const LINES_PER_REQUEST_DEFAULT: u32 = 1_000;
/// Read buffer of `--lines` input; a request is sent at the latest when it has been consumed.
const LINES_BUFFER_BYTES: usize = 64 * 1024;

/// Arguments of `regina push`.
#[derive(Debug, Args)]
#[command(after_help = "\
Payloads are JSON (objects, arrays, strings, numbers, …), sent exactly as written; with --raw \
the text itself is sent as a JSON string (one trailing newline of a file or stdin dropped). \
Without PAYLOAD or --file, stdin is read (it must not be a terminal). With --lines every \
non-empty line is one message, sent in requests of up to --batch items; a request also goes as \
soon as stdin has nothing more to read, so `producer | regina push q --lines` pushes as lines \
arrive.

--json prints each request's result array verbatim, one array per line.")]
pub struct PushArgs {
    /// Queue to push to (created with default options if it does not exist).
    pub queue: String,
    /// The payload, as JSON (as a string with --raw).
    #[arg(conflicts_with_all = ["file", "lines"])]
    pub payload: Option<String>,
    /// Partition (created if missing) [default: Default].
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    /// Idempotency key of the message within its partition [default: a new UUIDv7].
    #[arg(long, value_name = "ID", conflicts_with = "lines")]
    pub transaction_id: Option<String>,
    /// Correlation id stored with every message pushed.
    #[arg(long, value_name = "ID")]
    pub trace_id: Option<String>,
    /// Read the payload (or the lines) from this file; `-` is stdin.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// One message per non-empty input line.
    #[arg(long)]
    pub lines: bool,
    /// Send each payload as a JSON string of its text instead of parsing it as JSON.
    #[arg(long)]
    pub raw: bool,
    /// Most messages per push request with --lines.
    #[arg(long, value_name = "N", default_value_t = LINES_PER_REQUEST_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    #[command(flatten)]
    pub connection: Connection,
}

/// A push body (http-api.md §3.3). Serialised straight to text: a detour through
/// `serde_json::Value` would re-write the payloads.
#[derive(Serialize)]
struct PushBody<'a> {
    items: Vec<Item<'a>>,
}

/// One item of a push body; the payload goes out as the text it was given.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Item<'a> {
    queue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<&'a str>,
    payload: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
}

/// Runs `regina push`.
///
/// # Errors
/// Usage (no input, a payload that is not JSON), transport, or the broker's error; a request
/// with an item rejected for capacity prints its results, then fails with that item's error.
pub async fn run(args: PushArgs) -> Result<Outcome, CliError> {
    let client = Client::new(&args.connection)?;
    if let Some(text) = &args.payload {
        let payload = payload(text, args.raw, "PAYLOAD")?;
        send(&client, &args, &[payload]).await?;
        return Ok(Outcome::Done);
    }
    let input = open_input(args.file.as_ref()).await?;
    if args.lines {
        // Only a pipe may pause: a file is read to its end before anything is sent.
        let send_when_idle = !matches!(&args.file, Some(f) if f.as_os_str() != "-");
        push_lines(&client, &args, input, send_when_idle).await?;
    } else {
        let mut text = String::new();
        BufReader::new(input).read_to_string(&mut text).await?;
        let text = if args.raw {
            text.strip_suffix('\n')
                .map(|t| t.strip_suffix('\r').unwrap_or(t))
                .unwrap_or(&text)
        } else {
            &text
        };
        let payload = payload(text, args.raw, "input")?;
        send(&client, &args, &[payload]).await?;
    }
    Ok(Outcome::Done)
}

/// The payload source when none is on the command line: `--file` (or `-`), else stdin.
async fn open_input(file: Option<&PathBuf>) -> Result<Box<dyn AsyncRead + Unpin + Send>, CliError> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            let file = tokio::fs::File::open(path)
                .await
                .map_err(|e| CliError::Usage(format!("--file {}: {e}", path.display())))?;
            Ok(Box::new(file))
        }
        Some(_) => Ok(Box::new(tokio::io::stdin())),
        None if std::io::stdin().is_terminal() => Err(CliError::Usage(
            "no payload: give PAYLOAD or --file FILE, or pipe the input (--file - reads a terminal)"
                .to_owned(),
        )),
        None => Ok(Box::new(tokio::io::stdin())),
    }
}

/// Pushes every non-empty line, `batch` lines per request, and earlier when the input has
/// nothing more buffered and `send_when_idle` (so a slow producer's lines do not wait).
async fn push_lines(
    client: &Client,
    args: &PushArgs,
    input: Box<dyn AsyncRead + Unpin + Send>,
    send_when_idle: bool,
) -> Result<(), CliError> {
    let mut reader = BufReader::with_capacity(LINES_BUFFER_BYTES, input);
    let batch = usize::try_from(args.batch).unwrap_or(usize::MAX);
    let mut payloads: Vec<Box<RawValue>> = Vec::new();
    let mut line = String::new();
    let mut number = 0_u64;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).await?;
        if read == 0 {
            break;
        }
        number += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        let blank = if args.raw {
            text.is_empty()
        } else {
            text.trim().is_empty()
        };
        if !blank {
            payloads.push(payload(text, args.raw, &format!("line {number}"))?);
        }
        let idle = send_when_idle && reader.buffer().is_empty();
        if payloads.len() >= batch || (idle && !payloads.is_empty()) {
            send(client, args, &payloads).await?;
            payloads.clear();
        }
    }
    if !payloads.is_empty() {
        send(client, args, &payloads).await?;
    }
    Ok(())
}

/// `text` as the JSON payload to send: parsed (and kept verbatim) or, with `raw`, as a string.
fn payload(text: &str, raw: bool, what: &str) -> Result<Box<RawValue>, CliError> {
    let json = if raw {
        serde_json::to_string(text).map_err(|e| CliError::Usage(format!("{what}: {e}")))?
    } else {
        text.trim().to_owned()
    };
    RawValue::from_string(json).map_err(|e| {
        CliError::Usage(format!(
            "{what} is not JSON ({e}); --raw sends the text as a JSON string"
        ))
    })
}

/// One push request for `payloads`; prints its results.
async fn send(
    client: &Client,
    args: &PushArgs,
    payloads: &[Box<RawValue>],
) -> Result<(), CliError> {
    let items: Vec<Item<'_>> = payloads
        .iter()
        .map(|payload| Item {
            queue: &args.queue,
            partition: args.partition.as_deref(),
            payload,
            transaction_id: args.transaction_id.as_deref(),
            trace_id: args.trace_id.as_deref(),
        })
        .collect();
    let body = PushBody { items };
    let request = client
        .request(Method::POST, &["api", "v1", "push"])?
        .json(&body);
    let reply = client.send(request).await?;
    let capacity = reply.status == StatusCode::TOO_MANY_REQUESTS;
    if !reply.status.is_success() && !capacity {
        return Err(reply.error());
    }
    let results = reply.json()?;
    print_results(&reply, &results, args.connection.json)?;
    let failed = results
        .as_array()
        .and_then(|items| items.iter().find(|item| item["status"] == "failed"));
    match failed {
        Some(item) => Err(CliError::from_item(reply.status.as_u16(), item)),
        None if capacity => Err(reply.error()),
        None => Ok(()),
    }
}

fn print_results(reply: &Reply, results: &Value, json: bool) -> Result<(), CliError> {
    if json {
        return output::raw_json(&reply.text);
    }
    let items = results.as_array().ok_or_else(|| {
        CliError::InvalidResponse("a push answers with an array of results".to_owned())
    })?;
    let mut table = output::table(&["STATUS", "TRANSACTION ID", "MESSAGE ID", "PARTITION ID"]);
    for item in items {
        table.add_row(vec![
            output::cell(&item["status"]),
            output::cell(&item["transaction_id"]),
            output::cell(&item["message_id"]),
            output::cell(&item["partition_id"]),
        ]);
    }
    output::print_table(&table)
}
