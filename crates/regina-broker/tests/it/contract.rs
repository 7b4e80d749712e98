//! The request schemas of the OpenAPI document say what the handlers accept: every route's
//! path, query and body schemas accept exactly the requests its handler accepts and refuse the
//! ones it refuses with a validation error (`validation_failed`, `invalid_parameter`,
//! `too_many_items`). The samples are the requests of the SDK conformance scenarios and the
//! hostile input of the fault runs (its fixed corpus and a seeded generated run), each sent to a
//! live broker and checked with a JSON Schema validator against the document the broker serves.
//!
//! Not judged: bodies that are not JSON or nest deeper than `JSON_DEPTH_MAX` (the parser refuses
//! them before any schema applies), bodies over `BODY_BYTES_MAX`, numbers beyond `f64` (the
//! validator cannot read them; the broker stores them as sent), unknown routes and methods.

use std::collections::BTreeMap;

use percent_encoding::percent_decode_str;
use reqwest::Method;
use serde_json::{json, Map, Value};

use crate::support::*;

#[path = "../../../regina-bench/src/faults/hostile.rs"]
#[allow(dead_code)]
mod hostile;

/// The codes of a refused request's shape.
const VALIDATION_CODES: [&str; 3] = ["validation_failed", "invalid_parameter", "too_many_items"];

/// Requests the generated hostile run sends (on top of its fixed corpus).
const GENERATED_PROBES: usize = 400;

/// One request with the handler's answer.
struct Sample {
    method: String,
    path: String,
    body: Option<Vec<u8>>,
    status: u16,
    answer: Vec<u8>,
}

/// The schemas of the served OpenAPI document.
struct Schemas {
    document: Value,
}

impl Schemas {
    /// The operation of `method` on `path` (a raw path, without query): the template with the
    /// most literal segments that matches, as the router picks it.
    fn operation(&self, method: &str, path: &str) -> Option<(&str, &Value)> {
        let segments: Vec<&str> = path.split('/').collect();
        let paths = self.document["paths"].as_object()?;
        paths
            .iter()
            .filter_map(|(template, item)| {
                let parts: Vec<&str> = template.split('/').collect();
                if parts.len() != segments.len() {
                    return None;
                }
                let mut literal = 0;
                for (part, segment) in parts.iter().zip(&segments) {
                    if part.starts_with('{') {
                        continue;
                    }
                    if part != segment {
                        return None;
                    }
                    literal += 1;
                }
                let operation = item.get(method.to_ascii_lowercase())?;
                Some((literal, template.as_str(), operation))
            })
            .max_by_key(|(literal, ..)| *literal)
            .map(|(_, template, operation)| (template, operation))
    }

    /// Whether `instance` is valid against `schema`, its `$ref`s resolved in this document.
    fn valid(&self, schema: &Value, instance: &Value) -> bool {
        let root = json!({"allOf": [schema], "components": self.document["components"]});
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&root)
            .unwrap_or_else(|e| panic!("schema {schema} does not compile: {e}"));
        validator.is_valid(instance)
    }

    /// The schema's verdict on a sample: `Ok(())` accepted, `Err(why)` refused.
    fn verdict(&self, template: &str, operation: &Value, sample: &Sample) -> Result<(), String> {
        let (path, query) = sample
            .path
            .split_once('?')
            .unwrap_or((sample.path.as_str(), ""));
        let parameters = operation["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let path_values = path_parameters(template, path)?;
        let path_schema = parameter_object(&parameters, "path", &[]);
        if !self.valid(&path_schema, &path_values) {
            return Err(format!("path {path_values} against {path_schema}"));
        }
        let constraints = operation["x-regina-query-constraints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let query_schema = parameter_object(&parameters, "query", &constraints);
        let query_values = query_parameters(&parameters, query)?;
        if !self.valid(&query_schema, &query_values) {
            return Err(format!("query {query_values} against {query_schema}"));
        }
        if let Some(schema) = operation["requestBody"]["content"]["application/json"].get("schema")
        {
            let body = match sample.body.as_deref() {
                None | Some(b"") => json!({}),
                Some(bytes) => serde_json::from_slice(bytes).map_err(|e| e.to_string())?,
            };
            if !self.valid(schema, &body) {
                return Err(format!("body against {schema}"));
            }
        }
        Ok(())
    }
}

/// The object schema of the parameters `location` (`path` or `query`), with the constraints
/// between them.
fn parameter_object(parameters: &[Value], location: &str, constraints: &[Value]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in parameters.iter().filter(|p| p["in"] == location) {
        let name = parameter["name"].as_str().unwrap_or_default().to_owned();
        if parameter["required"] == true {
            required.push(Value::String(name.clone()));
        }
        properties.insert(name, parameter["schema"].clone());
    }
    let mut schema = json!({"type": "object", "properties": properties, "required": required});
    if !constraints.is_empty() {
        schema["allOf"] = Value::Array(constraints.to_vec());
    }
    schema
}

/// The path parameters of `path` by the names of `template`, percent-decoded.
fn path_parameters(template: &str, path: &str) -> Result<Value, String> {
    let mut out = Map::new();
    for (part, segment) in template.split('/').zip(path.split('/')) {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            let value = percent_decode_str(segment)
                .decode_utf8()
                .map_err(|_| format!("{name} is not UTF-8"))?;
            out.insert(name.to_owned(), Value::String(value.into_owned()));
        }
    }
    Ok(Value::Object(out))
}

/// The query as an object of the route's parameters (http-api.md §2.4: the first occurrence wins,
/// an empty value is absent, `+` is a space), each value read as its parameter's type says.
fn query_parameters(parameters: &[Value], query: &str) -> Result<Value, String> {
    let types: BTreeMap<&str, &str> = parameters
        .iter()
        .filter(|p| p["in"] == "query")
        .map(|p| {
            let kind = p["schema"]["type"].as_str().unwrap_or("string");
            (p["name"].as_str().unwrap_or_default(), kind)
        })
        .collect();
    let mut out = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |text: &str| {
            percent_decode_str(&text.replace('+', " "))
                .decode_utf8()
                .map(|v| v.into_owned())
        };
        let Ok(key) = decode(key) else { continue };
        let Some(kind) = types.get(key.as_str()) else {
            continue;
        };
        if out.contains_key(&key) {
            continue;
        }
        let value = decode(value).map_err(|_| format!("{key} is not UTF-8"))?;
        if value.is_empty() {
            // Absent, and every later occurrence too: the first one counts.
            out.insert(key, Value::Null);
            continue;
        }
        out.insert(key, typed(kind, value));
    }
    out.retain(|_, v| !v.is_null());
    Ok(Value::Object(out))
}

/// A query value as a value of its parameter's JSON type, when it reads as one.
fn typed(kind: &str, value: String) -> Value {
    match kind {
        "integer" => {
            let digits = value.strip_prefix(['+', '-']).unwrap_or(&value);
            let integral = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            match value.parse::<i64>() {
                Ok(number) if integral => json!(number),
                _ => Value::String(value),
            }
        }
        "boolean" => match value.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Value::Bool(true),
            "false" | "0" | "no" | "off" => Value::Bool(false),
            _ => Value::String(value),
        },
        _ => Value::String(value),
    }
}

/// The handler's verdict: `Some(true)` accepted, `Some(false)` refused as malformed, `None` not
/// a verdict on the request's shape.
fn handler_verdict(sample: &Sample) -> Option<bool> {
    if (200..300).contains(&sample.status) {
        return Some(true);
    }
    let code = serde_json::from_slice::<Value>(&sample.answer)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default();
    match code.as_str() {
        _ if !(400..500).contains(&sample.status) => None,
        "invalid_json" | "body_too_large" | "route_not_found" | "method_not_allowed" => None,
        code if VALIDATION_CODES.contains(&code) => Some(false),
        // The request was well formed: the answer is about state (not found, conflict, ...).
        _ => Some(true),
    }
}

/// Whether a body can be judged: JSON within the broker's nesting limit that a JSON Schema
/// validator can read (numbers beyond `f64`, which the broker stores as sent, cannot be).
fn judgeable(body: Option<&[u8]>) -> bool {
    let Some(bytes) = body.filter(|b| !b.is_empty()) else {
        return true;
    };
    let depth_max = regina_broker::Config::default().json_depth_max;
    depth(bytes) <= depth_max && serde_json::from_slice::<Value>(bytes).is_ok()
}

/// The nesting depth of JSON text (outside strings).
fn depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Judges every sample; returns the disagreements and the counts of accepted and refused.
fn judge(schemas: &Schemas, samples: &[Sample]) -> (Vec<String>, usize, usize) {
    let (mut disagreements, mut accepted, mut refused) = (Vec::new(), 0, 0);
    for sample in samples {
        let path = sample.path.split('?').next().unwrap_or_default();
        let Some((template, operation)) = schemas.operation(&sample.method, path) else {
            continue;
        };
        if !judgeable(sample.body.as_deref()) {
            continue;
        }
        let Some(handler) = handler_verdict(sample) else {
            continue;
        };
        let schema = schemas.verdict(template, operation, sample);
        if handler {
            accepted += 1;
        } else {
            refused += 1;
        }
        if schema.is_ok() != handler {
            disagreements.push(format!(
                "{} {} body {} → {} {}; schema: {}",
                sample.method,
                short(&sample.path),
                short(&String::from_utf8_lossy(
                    sample.body.as_deref().unwrap_or_default()
                )),
                sample.status,
                short(&String::from_utf8_lossy(&sample.answer)),
                match schema {
                    Ok(()) => "accepted".to_owned(),
                    Err(why) => format!("refused ({})", short(&why)),
                }
            ));
        }
    }
    (disagreements, accepted, refused)
}

/// The successful answers that the schema their route declares for that status refuses, and how
/// many answers were checked.
fn answer_mismatches(schemas: &Schemas, samples: &[Sample]) -> (Vec<String>, usize) {
    let (mut mismatches, mut checked) = (Vec::new(), 0);
    for sample in samples.iter().filter(|s| (200..300).contains(&s.status)) {
        let path = sample.path.split('?').next().unwrap_or_default();
        let Some((template, operation)) = schemas.operation(&sample.method, path) else {
            continue;
        };
        let declared = &operation["responses"][sample.status.to_string()];
        let Some(schema) = declared["content"]["application/json"].get("schema") else {
            continue;
        };
        let Ok(answer) = serde_json::from_slice::<Value>(&sample.answer) else {
            mismatches.push(format!(
                "{} {template}: the answer is not JSON",
                sample.method
            ));
            continue;
        };
        checked += 1;
        if !schemas.valid(schema, &answer) {
            mismatches.push(format!(
                "{} {template} → {}: {}",
                sample.method,
                sample.status,
                short(&answer.to_string())
            ));
        }
    }
    (mismatches, checked)
}

fn short(text: &str) -> String {
    let out: String = text.chars().take(300).collect();
    if out.len() < text.len() {
        out + "…"
    } else {
        out
    }
}

async fn served_schemas(api: &Api) -> Schemas {
    let document = api.get("/api/openapi.json").await;
    assert_eq!(document.status, 200);
    Schemas {
        document: document.body,
    }
}

#[tokio::test]
async fn schemas_agree_with_handlers_on_hostile_input() {
    let (_b, api) = start_with(|c| c.body_bytes_max = hostile::BODY_BYTES_MAX).await;
    let schemas = served_schemas(&api).await;
    // A stored message, so forged acks and transactions aim at data that exists.
    let pushed = api.push_one("fz", "Default", json!({"n": 1})).await;
    let popped = api.pop("fz", "").await;
    let message = popped.messages().into_iter().next().expect("a message");
    assert_eq!(pushed["status"], "queued");
    let known = (
        message["partitionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        message["transactionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    let mut probes = hostile::corpus((&known.0, &known.1));
    probes.extend(hostile::generated(16, GENERATED_PROBES));
    let mut outcome = hostile::Outcome::default();
    hostile::send_all(&api.base, &probes, &mut outcome).await;
    assert!(outcome.violations.is_empty(), "{:#?}", outcome.violations);
    let samples: Vec<Sample> = crate::target::take()
        .into_iter()
        .map(|e| Sample {
            method: e.method,
            path: e.path,
            body: e.body,
            status: e.status,
            answer: e.answer,
        })
        .collect();
    let (disagreements, accepted, refused) = judge(&schemas, &samples);
    assert!(
        disagreements.is_empty(),
        "{} of {} judged samples disagree:\n{}",
        disagreements.len(),
        accepted + refused,
        disagreements.join("\n")
    );
    assert!(
        accepted >= 20 && refused >= 100,
        "too few samples judged: {accepted} accepted, {refused} refused"
    );
}

#[tokio::test]
async fn schemas_agree_with_handlers_on_the_conformance_scenarios() {
    let (_b, api) = start().await;
    let schemas = served_schemas(&api).await;
    let mut samples = Vec::new();
    for (method, path, body) in conformance_requests() {
        let bytes = body.map(|b| serde_json::to_vec(&b).expect("JSON"));
        let reply = api
            .send(
                method.clone(),
                &path,
                bytes.clone(),
                &[("content-type", "application/json")],
            )
            .await;
        samples.push(Sample {
            method: method.to_string(),
            path,
            body: bytes,
            status: reply.status,
            answer: reply.text.into_bytes(),
        });
    }
    let (disagreements, accepted, refused) = judge(&schemas, &samples);
    assert!(
        disagreements.is_empty(),
        "{} of {} judged samples disagree:\n{}",
        disagreements.len(),
        accepted + refused,
        disagreements.join("\n")
    );
    assert!(
        accepted >= 100,
        "too few samples judged: {accepted} accepted, {refused} refused"
    );
    // What the handlers answered is what the document promises (the SDKs' wire types are
    // generated from it).
    let (mismatches, checked) = answer_mismatches(&schemas, &samples);
    assert!(
        mismatches.is_empty(),
        "{} of {checked} answers do not match their declared schema:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(checked >= 100, "too few answers checked: {checked}");
}

/// Every scenario step that maps to one request, as the SDKs send it (queues renamed, marks
/// fixed, saved messages replaced by made-up ids: the verdict is on the request's shape).
fn conformance_requests() -> Vec<(Method, String, Option<Value>)> {
    let directory = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sdks/conformance/scenarios"
    );
    let mut files: Vec<_> = std::fs::read_dir(directory)
        .expect("scenarios")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "scenarios missing in {directory}");
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("scenario");
        let text = substitute(&text);
        let scenario: Value = serde_json::from_str(&text).expect("scenario JSON");
        for step in scenario["steps"].as_array().into_iter().flatten() {
            out.extend(step_requests(step));
        }
    }
    out
}

/// The scenario text with its placeholders filled in.
fn substitute(text: &str) -> String {
    let mut out = text
        .replace("${q}", "conf-q")
        .replace("${q2}", "conf-q-2")
        .replace("${q3}", "conf-q-3");
    while let Some(start) = out.find("${mark:") {
        let end = out[start..].find('}').map_or(out.len(), |e| start + e + 1);
        out.replace_range(start..end, "2026-05-10T09:00:00.000Z");
    }
    out
}

const SOME_UUID: &str = "0196a000-0000-7000-8000-0000000000a1";

fn step_requests(step: &Value) -> Vec<(Method, String, Option<Value>)> {
    let text = |key: &str| step[key].as_str().unwrap_or_default().to_owned();
    let queue = enc(&text("queue"));
    let group = step["group"].as_str().map(enc);
    match step["op"].as_str().unwrap_or_default() {
        "configure" => {
            let mut body = json!({"queue": step["queue"], "options": step["options"]});
            for key in ["namespace", "task"] {
                if !step[key].is_null() {
                    body[key] = step[key].clone();
                }
            }
            vec![(Method::POST, "/api/v1/configure".into(), Some(body))]
        }
        "deleteQueue" => vec![(
            Method::DELETE,
            format!("/api/v1/resources/queues/{queue}"),
            None,
        )],
        "push" | "bufferedPush" => {
            let items: Vec<Value> = step["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|item| {
                    let mut out = item.clone();
                    out["queue"] = step["queue"].clone();
                    if !step["partition"].is_null() {
                        out["partition"] = step["partition"].clone();
                    }
                    out
                })
                .collect();
            vec![(
                Method::POST,
                "/api/v1/push".into(),
                Some(json!({"items": items})),
            )]
        }
        "pop" | "consume" => vec![(Method::GET, pop_path(step, &queue), None)],
        "ack" => {
            let mut ack = json!({"transactionId": "t", "partitionId": SOME_UUID,
                                 "leaseId": SOME_UUID});
            for key in ["status", "error"] {
                if !step[key].is_null() {
                    ack[key] = step[key].clone();
                }
            }
            let mut body = json!({"acknowledgments": [ack]});
            if !step["group"].is_null() {
                body["consumerGroup"] = step["group"].clone();
            }
            vec![(Method::POST, "/api/v1/ack/batch".into(), Some(body))]
        }
        "renew" => vec![(
            Method::POST,
            format!("/api/v1/lease/{SOME_UUID}/extend"),
            Some(json!({})),
        )],
        "transaction" => vec![(
            Method::POST,
            "/api/v1/transaction".into(),
            Some(transaction(step)),
        )],
        "dlq" => {
            let mut path = format!("/api/v1/dlq?queue={queue}");
            if let Some(group) = &group {
                path.push_str(&format!("&consumerGroup={group}"));
            }
            vec![(Method::GET, path, None)]
        }
        "requeue" => {
            let mut body = json!({});
            if !step["group"].is_null() {
                body["consumerGroup"] = step["group"].clone();
            }
            vec![(
                Method::POST,
                format!("/api/v1/messages/{SOME_UUID}/t/retry"),
                Some(body),
            )]
        }
        "message" => vec![(Method::GET, format!("/api/v1/messages/{SOME_UUID}/t"), None)],
        "seek" => {
            let mut body = json!({});
            for key in ["toEnd", "timestamp"] {
                if !step[key].is_null() {
                    body[key] = step[key].clone();
                }
            }
            let path = format!(
                "/api/v1/consumer-groups/{}/queues/{queue}/seek",
                group.unwrap_or_default()
            );
            vec![(Method::POST, path, Some(body))]
        }
        "groups" => vec![(Method::GET, "/api/v1/consumer-groups".into(), None)],
        "deleteGroup" => {
            let mut path = format!("/api/v1/consumer-groups/{}", group.unwrap_or_default());
            if !step["queue"].is_null() {
                path.push_str(&format!("/queues/{queue}"));
            }
            vec![(Method::DELETE, path, None)]
        }
        "queues" => vec![(Method::GET, "/api/v1/resources/queues".into(), None)],
        "stream" | "streamHash" => {
            let body = json!({"name": format!("conf-{}", text("source")),
                              "source_queue": step["source"], "config_hash": "h"});
            vec![(Method::POST, "/streams/v1/queries".into(), Some(body))]
        }
        _ => Vec::new(),
    }
}

/// The pop of a step, without waiting (the verdict is on the request).
fn pop_path(step: &Value, queue: &str) -> String {
    let mut path = format!("/api/v1/pop/queue/{queue}");
    if let Some(partition) = step["partition"].as_str() {
        path.push_str(&format!("/partition/{}", enc(partition)));
    }
    let mut query = vec!["wait=false".to_owned()];
    for (key, name) in [
        ("batch", "batch"),
        ("partitions", "partitions"),
        ("timeoutMs", "timeout"),
        ("autoAck", "autoAck"),
        ("group", "consumerGroup"),
        ("subscriptionMode", "subscriptionMode"),
        ("subscriptionFrom", "subscriptionFrom"),
    ] {
        match &step[key] {
            Value::Null => {}
            Value::String(text) => query.push(format!("{name}={}", enc(text))),
            other => query.push(format!("{name}={other}")),
        }
    }
    format!("{path}?{}", query.join("&"))
}

/// A transaction step's body: its acks (made-up message ids) and pushes.
fn transaction(step: &Value) -> Value {
    let mut operations = Vec::new();
    for ack in step["acks"].as_array().into_iter().flatten() {
        let mut operation = json!({"type": "ack", "transactionId": "t", "partitionId": SOME_UUID,
                                   "leaseId": SOME_UUID});
        if !ack["status"].is_null() {
            operation["status"] = ack["status"].clone();
        }
        operations.push(operation);
    }
    for push in step["pushes"].as_array().into_iter().flatten() {
        let items: Vec<Value> = push["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                let mut out = item.clone();
                out["queue"] = push["queue"].clone();
                if !push["partition"].is_null() {
                    out["partition"] = push["partition"].clone();
                }
                out
            })
            .collect();
        operations.push(json!({"type": "push", "items": items}));
    }
    json!({"operations": operations})
}
