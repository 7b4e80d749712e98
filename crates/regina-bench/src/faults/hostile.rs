//! Hostile input: a fixed corpus of malformed, oversized, mistyped and forged requests, then a
//! seeded random run of generated and mutated ones. Every answer must be a `2xx` (a generated
//! request may happen to be valid) or a `4xx` whose body is a JSON `{error, code}`; never a `5xx`,
//! never a dropped connection (except after an oversized body, which the broker may cut short).

use rand::rngs::StdRng;
use rand::seq::SliceRandom as _;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::target::HttpConn;

/// Bytes of the oversized body probe (the fault broker runs with a 1 MiB `BODY_BYTES_MAX`).
pub const OVERSIZED_BODY_BYTES: usize = 2 * 1024 * 1024;
/// The fault broker's `BODY_BYTES_MAX`.
pub const BODY_BYTES_MAX: usize = 1024 * 1024;

/// One request.
#[derive(Clone, Debug)]
pub struct Probe {
    method: &'static str,
    path: String,
    body: Option<Vec<u8>>,
}

impl Probe {
    fn new(method: &'static str, path: impl Into<String>, body: Option<Vec<u8>>) -> Probe {
        Probe {
            method,
            path: path.into(),
            body,
        }
    }

    fn post(path: &str, body: impl Into<Vec<u8>>) -> Probe {
        Probe::new("POST", path, Some(body.into()))
    }

    fn get(path: impl Into<String>) -> Probe {
        Probe::new("GET", path, None)
    }

    fn oversized(&self) -> bool {
        self.body.as_ref().is_some_and(|b| b.len() > BODY_BYTES_MAX)
    }
}

/// What the probes got back.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Requests sent.
    pub probes: u64,
    /// Answers by class: 2xx, 4xx.
    pub ok: u64,
    /// `4xx` answers with a proper error body.
    pub rejected: u64,
    /// Everything that broke the rules, described.
    pub violations: Vec<String>,
}

/// Sends every probe and judges each answer.
pub async fn send_all(url: &str, probes: &[Probe], outcome: &mut Outcome) {
    let mut conn = HttpConn::new(url);
    for probe in probes {
        outcome.probes += 1;
        let answer = conn
            .send(probe.method, &probe.path, probe.body.clone())
            .await;
        match answer {
            Ok((status, _)) if (200..300).contains(&status) => outcome.ok += 1,
            Ok((status, body)) if (400..500).contains(&status) => match error_body(&body) {
                Ok(()) => outcome.rejected += 1,
                Err(why) => outcome.violations.push(format!(
                    "{} {} → {status} without a proper error body ({why}): {}",
                    probe.method,
                    shorten(&probe.path),
                    shorten(&String::from_utf8_lossy(&body))
                )),
            },
            Ok((status, body)) => outcome.violations.push(format!(
                "{} {} → {status}: {}",
                probe.method,
                shorten(&probe.path),
                shorten(&String::from_utf8_lossy(&body))
            )),
            Err(_) if probe.oversized() => outcome.rejected += 1,
            Err(error) => outcome.violations.push(format!(
                "{} {} → transport error: {error:#}",
                probe.method,
                shorten(&probe.path)
            )),
        }
    }
}

fn error_body(body: &[u8]) -> Result<(), &'static str> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "not JSON")?;
    if !value["error"].is_string() {
        return Err("no error text");
    }
    match value["code"].as_str() {
        Some(code) if !code.is_empty() => Ok(()),
        _ => Err("no code"),
    }
}

fn shorten(text: &str) -> String {
    let mut out: String = text.chars().take(160).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The fixed corpus. `known` is a real (partitionId, transactionId) pair of a stored message,
/// so forged acks and transactions aim at data that must survive them.
pub fn corpus(known: (&str, &str)) -> Vec<Probe> {
    let (pid, tid) = known;
    let long = "q".repeat(300);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let many_items = json!({"items": vec![json!({"queue": "fz-many"}); 10_001]}).to_string();
    let many_acks =
        json!({"acknowledgments": vec![json!({"transactionId": "x", "partitionId": pid}); 10_001]})
            .to_string();
    let mut probes = vec![
        Probe::post("/api/v1/push", "{"),
        Probe::post("/api/v1/push", "not json"),
        Probe::post("/api/v1/push", "[]"),
        Probe::post("/api/v1/push", "null"),
        Probe::post("/api/v1/push", r#"{"items":"x"}"#),
        Probe::post("/api/v1/push", r#"{"items":[1]}"#),
        Probe::post("/api/v1/push", r#"{"items":[{"queue":1}]}"#),
        Probe::post("/api/v1/push", r#"{"items":[{"queue":""}]}"#),
        Probe::post("/api/v1/push", r#"{"items":[{"queue":"   "}]}"#),
        Probe::post("/api/v1/push", r#"{"items":[{"queue":"a\u0000b"}]}"#),
        Probe::post(
            "/api/v1/push",
            r#"{"items":[{"queue":"fz","partition":"p\u0001"}]}"#,
        ),
        Probe::post(
            "/api/v1/push",
            format!(r#"{{"items":[{{"queue":"{long}"}}]}}"#),
        ),
        Probe::post(
            "/api/v1/push",
            r#"{"items":[{"queue":"fz","partition":{"a":1}}]}"#,
        ),
        Probe::post(
            "/api/v1/push",
            format!(
                r#"{{"items":[{{"queue":"fz","transactionId":"{}"}}]}}"#,
                "t".repeat(256)
            ),
        ),
        Probe::post(
            "/api/v1/push",
            format!(
                r#"{{"items":[{{"queue":"fz","traceId":"{}"}}]}}"#,
                "x".repeat(129)
            ),
        ),
        Probe::post(
            "/api/v1/push",
            format!(r#"{{"items":[{{"queue":"fz","payload":{deep}}}]}}"#),
        ),
        Probe::post(
            "/api/v1/push",
            r#"{"items":[{"queue":"fz","payload":1e999}]}"#,
        ),
        Probe::post(
            "/api/v1/push",
            b"{\"items\":[{\"queue\":\"\xff\xfe\"}]}".to_vec(),
        ),
        Probe::post("/api/v1/push", many_items),
        Probe::post("/api/v1/push", vec![b' '; OVERSIZED_BODY_BYTES]),
        Probe::post("/api/v1/configure", "{}"),
        Probe::post(
            "/api/v1/configure",
            r#"{"queue":"fz","options":{"leaseTime":-1}}"#,
        ),
        Probe::post(
            "/api/v1/configure",
            r#"{"queue":"fz","options":{"leaseTime":1e20}}"#,
        ),
        Probe::post(
            "/api/v1/configure",
            r#"{"queue":"fz","options":{"retryLimit":"3"}}"#,
        ),
        Probe::post(
            "/api/v1/configure",
            r#"{"queue":"fz","options":{"leaseTime":1.5}}"#,
        ),
        Probe::post("/api/v1/configure", r#"{"queue":"fz","options":[]}"#),
        Probe::post("/api/v1/configure", r#"{"queue":"fz","namespace":123}"#),
        Probe::post(
            "/api/v1/configure",
            r#"{"queue":"fz","options":{"maxSize":-5}}"#,
        ),
        Probe::post("/api/v1/ack", "{}"),
        Probe::post("/api/v1/ack", r#"{"transactionId":"x"}"#),
        Probe::post(
            "/api/v1/ack",
            r#"{"transactionId":"x","partitionId":"not-a-uuid"}"#,
        ),
        Probe::post(
            "/api/v1/ack",
            format!(r#"{{"transactionId":"{tid}","partitionId":"{pid}","status":"bogus"}}"#),
        ),
        Probe::post(
            "/api/v1/ack",
            format!(
                r#"{{"transactionId":"{tid}","partitionId":"{pid}","leaseId":"forged","status":"completed"}}"#
            ),
        ),
        Probe::post(
            "/api/v1/ack",
            format!(r#"{{"transactionId":"{tid}","partitionId":"{pid}","status":"dlq"}}"#),
        ),
        Probe::post("/api/v1/ack/batch", r#"{"acknowledgments":{}}"#),
        Probe::post("/api/v1/ack/batch", r#"{"acknowledgments":[{}]}"#),
        Probe::post("/api/v1/ack/batch", many_acks),
        Probe::post("/api/v1/lease/not-a-uuid/extend", "{}"),
        Probe::post(
            "/api/v1/lease/00000000-0000-0000-0000-000000000000/extend",
            r#"{"seconds":-1}"#,
        ),
        Probe::post(
            "/api/v1/lease/00000000-0000-0000-0000-000000000000/extend",
            r#"{"seconds":"x"}"#,
        ),
        Probe::post("/api/v1/transaction", "{}"),
        Probe::post("/api/v1/transaction", r#"{"operations":[]}"#),
        Probe::post(
            "/api/v1/transaction",
            r#"{"operations":[{"type":"bogus"}]}"#,
        ),
        Probe::post(
            "/api/v1/transaction",
            r#"{"operations":[{"type":"push","items":[{"queue":""}]}]}"#,
        ),
        Probe::post(
            "/api/v1/transaction",
            format!(
                r#"{{"operations":[{{"type":"ack","transactionId":"{tid}","partitionId":"{pid}","leaseId":"{}"}},{{"type":"push","items":[{{"queue":"fz-forged","payload":1}}]}}]}}"#,
                uuid::Uuid::now_v7()
            ),
        ),
        Probe::post(
            "/api/v1/transaction",
            format!(
                r#"{{"operations":[{{"type":"ack","transactionId":"{tid}","partitionId":"{pid}","status":"dlq"}}]}}"#
            ),
        ),
        Probe::post(
            "/api/v1/transaction",
            format!(
                r#"{{"operations":[{{"type":"ack","transactionId":"nope","partitionId":"{}"}}]}}"#,
                uuid::Uuid::new_v4()
            ),
        ),
        Probe::post("/api/v1/system/maintenance", r#"{"enabled":"yes"}"#),
        Probe::post("/api/v1/system/maintenance/pop", "{}"),
        Probe::post("/api/v1/consumer-groups/g/queues/fz/seek", "{}"),
        Probe::post(
            "/api/v1/consumer-groups/g/queues/fz/seek",
            r#"{"timestamp":"yesterday"}"#,
        ),
        Probe::post(
            "/api/v1/consumer-groups/g/subscription",
            r#"{"subscriptionTimestamp":42}"#,
        ),
        Probe::new("DELETE", "/api/v1/push", None),
        Probe::new("PUT", "/health", Some(b"{}".to_vec())),
        Probe::get("/api/v1/messages/not-a-uuid/x"),
        Probe::get(format!("/api/v1/messages/{}/x", uuid::Uuid::new_v4())),
        Probe::get("/api/v1/nope"),
        Probe::get("/../../etc/passwd"),
        Probe::get("/streams/v1/queries"),
    ];
    for query in [
        "batch=-1",
        "batch=0",
        "batch=99999999999999999999",
        "batch=abc",
        "timeout=-5",
        "wait=maybe",
        "partitions=0",
        "autoAck=2",
        "subscriptionFrom=garbage",
        "subscriptionMode=bogus",
        "consumerGroup=%00",
        "consumerGroup=__QUEUE_MODE__%01",
    ] {
        probes.push(Probe::get(format!("/api/v1/pop/queue/fz?{query}")));
    }
    for path in [
        "/api/v1/pop/queue/%ZZ",
        "/api/v1/pop/queue/%FF%FE",
        "/api/v1/pop",
        "/api/v1/pop?namespace=",
        "/api/v1/dlq?limit=-1",
        "/api/v1/dlq?limit=abc",
        "/api/v1/dlq?offset=-5",
        "/api/v1/dlq?from=garbage",
    ] {
        probes.push(Probe::get(path));
    }
    probes.push(Probe::get(format!("/api/v1/pop/queue/{long}")));
    probes
}

/// Routes the generator aims at (never the maintenance or delete routes of real queues).
const TEMPLATES: &[(&str, &str)] = &[
    ("POST", "/api/v1/push"),
    ("POST", "/api/v1/configure"),
    ("POST", "/api/v1/ack"),
    ("POST", "/api/v1/ack/batch"),
    ("POST", "/api/v1/transaction"),
    ("POST", "/api/v1/lease/{id}/extend"),
    ("GET", "/api/v1/pop/queue/{name}"),
    ("GET", "/api/v1/pop/queue/{name}/partition/{name}"),
    ("GET", "/api/v1/dlq"),
    ("POST", "/api/v1/consumer-groups/{name}/queues/{name}/seek"),
    ("GET", "/api/v1/messages/{id}/{name}"),
];

/// `count` generated probes from `seed`: structured bodies with hostile values, then byte-level
/// mutations of some of them.
pub fn generated(seed: u64, count: usize) -> Vec<Probe> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count).map(|_| generate_one(&mut rng)).collect()
}

fn generate_one(rng: &mut StdRng) -> Probe {
    let &(method, template) = TEMPLATES.choose(rng).unwrap_or(&TEMPLATES[0]);
    let mut path = String::new();
    for (i, piece) in template.split('{').enumerate() {
        if i == 0 {
            path.push_str(piece);
            continue;
        }
        let (name, rest) = piece.split_once('}').unwrap_or((piece, ""));
        path.push_str(&path_segment(rng, name == "id"));
        path.push_str(rest);
    }
    if method == "GET" {
        // A long-poll that waits its default 30 s would only slow the run: the first key wins,
        // so generated timeouts are ignored here (the corpus covers bad ones).
        path.push_str("?timeout=50&");
        path.push_str(&query(rng));
        return Probe::get(path);
    }
    let mut body = json_body(rng, template).to_string().into_bytes();
    if rng.gen_bool(0.2) {
        mutate(rng, &mut body);
    }
    Probe::new(method, path, Some(body))
}

fn path_segment(rng: &mut StdRng, id: bool) -> String {
    match rng.gen_range(0..5) {
        0 if id => uuid::Uuid::new_v4().to_string(),
        0 => format!("fz{}", rng.gen_range(0..5)),
        1 => "%".to_owned() + &format!("{:02X}", rng.gen::<u8>()),
        2 => "fz".to_owned() + &"%41".repeat(rng.gen_range(1..200)),
        3 => "%00fz".to_owned(),
        _ => format!("fz{}", "é".repeat(rng.gen_range(1..300))),
    }
}

fn query(rng: &mut StdRng) -> String {
    const KEYS: &[&str] = &[
        "batch",
        "partitions",
        "wait",
        "timeout",
        "consumerGroup",
        "autoAck",
        "limit",
        "offset",
        "subscriptionFrom",
        "subscriptionMode",
        "queue",
        "from",
        "to",
    ];
    (0..rng.gen_range(0..6))
        .map(|_| {
            let key = KEYS.choose(rng).copied().unwrap_or("batch");
            let value = match rng.gen_range(0..6) {
                0 => rng.gen::<i64>().to_string(),
                1 => "-1".to_owned(),
                2 => "%FF".to_owned(),
                3 => "true".to_owned(),
                4 => String::new(),
                _ => format!("fz{}", rng.gen_range(0..3)),
            };
            format!("{key}={value}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn json_body(rng: &mut StdRng, template: &str) -> Value {
    let mut item = || {
        json!({"queue": hostile_value(rng, 2, true), "partition": hostile_value(rng, 1, true),
               "payload": hostile_value(rng, 4, false), "transactionId": hostile_value(rng, 1, true),
               "traceId": hostile_value(rng, 1, true), "zzz": hostile_value(rng, 1, false)})
    };
    match template {
        "/api/v1/push" => json!({"items": [item(), item()]}),
        "/api/v1/transaction" => {
            json!({"operations": [{"type": "push", "items": [item()]},
                                  {"type": hostile_value(rng, 1, true), "transactionId": hostile_value(rng, 1, true),
                                   "partitionId": hostile_value(rng, 1, true), "leaseId": hostile_value(rng, 1, true)}]})
        }
        "/api/v1/ack/batch" => {
            json!({"acknowledgments": [{"transactionId": hostile_value(rng, 1, true),
                   "partitionId": hostile_value(rng, 1, true), "status": hostile_value(rng, 1, true)}]})
        }
        "/api/v1/configure" => {
            json!({"queue": hostile_value(rng, 1, true), "options": {"leaseTime": hostile_value(rng, 1, false),
                   "retryLimit": hostile_value(rng, 1, false), "encryptionEnabled": hostile_value(rng, 1, false)}})
        }
        _ => hostile_value(rng, 3, false),
    }
}

/// A random JSON value; `name_like`: mostly strings, sometimes not.
fn hostile_value(rng: &mut StdRng, depth: u32, name_like: bool) -> Value {
    let pick = if name_like && rng.gen_bool(0.7) {
        0
    } else {
        rng.gen_range(0..8)
    };
    match pick {
        0 => Value::String(hostile_string(rng)),
        1 => json!(rng.gen::<i64>()),
        2 => json!(rng.gen::<f64>() * 1e300),
        3 => json!(-1),
        4 => Value::Null,
        5 => json!(rng.gen::<bool>()),
        6 if depth > 0 => Value::Array(
            (0..rng.gen_range(0..4))
                .map(|_| hostile_value(rng, depth - 1, false))
                .collect(),
        ),
        _ if depth > 0 => {
            json!({ hostile_string(rng): hostile_value(rng, depth - 1, false) })
        }
        _ => Value::String(String::new()),
    }
}

fn hostile_string(rng: &mut StdRng) -> String {
    const PIECES: &[&str] = &[
        "fz",
        "\u{0}",
        "\u{1}",
        "\u{7f}",
        "\u{85}",
        "\"",
        "\\",
        "é",
        "👍",
        " ",
        "%",
        "/",
        ".",
        "\n",
        "__QUEUE_MODE__",
        "\u{202e}",
        "\u{fffd}",
    ];
    let mut out = String::from("fz");
    let n = if rng.gen_bool(0.05) {
        rng.gen_range(200..2_000)
    } else {
        rng.gen_range(0..8)
    };
    for _ in 0..n {
        out.push_str(PIECES.choose(rng).copied().unwrap_or("fz"));
    }
    out
}

fn mutate(rng: &mut StdRng, body: &mut Vec<u8>) {
    if body.is_empty() {
        return;
    }
    let at = rng.gen_range(0..body.len());
    match rng.gen_range(0..4) {
        0 => body.truncate(at),
        1 => body[at] = rng.gen(),
        2 => body.insert(at, b'{'),
        _ => body
            .splice(at..at, b"\xff\xfe\x00".iter().copied())
            .for_each(drop),
    }
}
