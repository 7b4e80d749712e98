//! Shared helpers: a small HTTP client for the Regina API that returns status, headers and JSON.

use std::time::{Duration, Instant};

use regina_testkit::TestBroker;
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

/// One HTTP answer: status, headers, raw text and the body parsed as JSON (`Null` when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `code` member of an error body.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }

    /// Messages of a pop answer (empty for a 204).
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Payloads (`data`) of a pop answer, in delivery order.
    pub fn data(&self) -> Vec<Value> {
        self.messages().iter().map(|m| m["data"].clone()).collect()
    }

    /// The empty-pop reason header (§2.2).
    pub fn empty_reason(&self) -> Option<&str> {
        self.header("x-regina-empty-reason")
    }

    /// Asserts a `204` empty pop with the given reason.
    #[track_caller]
    pub fn assert_empty(&self, reason: &str) {
        assert_eq!(
            self.status, 204,
            "expected an empty pop ({reason}), got {self:?}"
        );
        assert_eq!(
            self.empty_reason(),
            Some(reason),
            "wrong empty reason: {self:?}"
        );
        assert!(
            self.text.is_empty(),
            "204 must have no body: {:?}",
            self.text
        );
    }

    /// Asserts an error answer with the given status and code.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            self.status, status,
            "expected {status} {code}, got {self:?}"
        );
        assert_eq!(self.code(), code, "expected code {code}, got {self:?}");
        assert!(
            self.body["error"].is_string(),
            "error text missing: {self:?}"
        );
    }
}

/// Percent-encodes one path segment or query value (everything but unreserved characters).
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A cheap, cloneable API client bound to one broker.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub http: reqwest::Client,
}

impl Api {
    pub fn new(broker: &TestBroker) -> Api {
        Api {
            base: broker.base_url.trim_end_matches('/').to_string(),
            http: regina_testkit::http(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends any request; `body` is sent verbatim.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = self.http.request(method, self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("request {path} failed: {e}"));
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("read body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        Reply {
            status,
            headers,
            text,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, &[]).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        let bytes = serde_json::to_vec(body).expect("serialise");
        self.send(
            Method::POST,
            path,
            Some(bytes),
            &[("content-type", "application/json")],
        )
        .await
    }

    pub async fn post_raw(&self, path: &str, body: &[u8]) -> Reply {
        self.send(
            Method::POST,
            path,
            Some(body.to_vec()),
            &[("content-type", "application/json")],
        )
        .await
    }

    /// `POST /api/v1/configure` with the given options; asserts success.
    pub async fn configure(&self, queue: &str, options: Value) -> Reply {
        let r = self
            .post(
                "/api/v1/configure",
                &json!({"queue": queue, "options": options}),
            )
            .await;
        assert!(
            r.status == 200 || r.status == 201,
            "configure {queue} failed: {r:?}"
        );
        r
    }

    pub async fn push(&self, items: Value) -> Reply {
        self.post("/api/v1/push", &json!({ "items": items })).await
    }

    /// Pushes payloads to one partition in one request; asserts every item `queued`.
    pub async fn push_to(&self, queue: &str, partition: &str, payloads: &[Value]) -> Vec<Value> {
        let items: Vec<Value> = payloads
            .iter()
            .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
            .collect();
        let r = self.push(Value::Array(items)).await;
        assert_eq!(r.status, 201, "push failed: {r:?}");
        let entries = r.body.as_array().expect("push answers an array").clone();
        for e in &entries {
            assert_eq!(e["status"], "queued", "push item not queued: {e}");
        }
        entries
    }

    /// Pushes one payload to one partition; returns its push entry.
    pub async fn push_one(&self, queue: &str, partition: &str, payload: Value) -> Value {
        self.push_to(queue, partition, &[payload]).await.remove(0)
    }

    /// `GET /api/v1/pop/queue/:queue?query`.
    pub async fn pop(&self, queue: &str, query: &str) -> Reply {
        self.get(&format!("/api/v1/pop/queue/{}?{query}", enc(queue)))
            .await
    }

    /// `GET /api/v1/pop/queue/:queue/partition/:partition?query`.
    pub async fn pop_partition(&self, queue: &str, partition: &str, query: &str) -> Reply {
        self.get(&format!(
            "/api/v1/pop/queue/{}/partition/{}?{query}",
            enc(queue),
            enc(partition)
        ))
        .await
    }

    /// `GET /api/v1/pop?query` (namespace/task).
    pub async fn pop_selector(&self, query: &str) -> Reply {
        self.get(&format!("/api/v1/pop?{query}")).await
    }

    pub async fn ack(&self, body: Value) -> Reply {
        self.post("/api/v1/ack", &body).await
    }

    /// Acks one delivered message under its own lease; returns the single result entry.
    pub async fn ack_msg(&self, msg: &Value, status: &str) -> Value {
        let r = self
            .ack(json!({
                "transactionId": msg["transactionId"],
                "partitionId": msg["partitionId"],
                "leaseId": msg["leaseId"],
                "status": status,
            }))
            .await;
        assert_eq!(r.status, 200, "ack failed: {r:?}");
        r.body[0].clone()
    }

    pub async fn ack_batch(&self, body: Value) -> Reply {
        self.post("/api/v1/ack/batch", &body).await
    }

    /// Acks every message of a pop answer `completed` in one `/ack/batch`; asserts success.
    pub async fn ack_all(&self, pop: &Reply) {
        let acks: Vec<Value> = pop
            .messages()
            .iter()
            .map(|m| {
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                       "leaseId": m["leaseId"], "status": "completed"})
            })
            .collect();
        let r = self.ack_batch(json!({ "acknowledgments": acks })).await;
        assert_eq!(r.status, 200, "ack/batch failed: {r:?}");
        for item in r.body.as_array().expect("array") {
            assert_eq!(item["success"], true, "ack item failed: {item}");
        }
    }

    pub async fn extend(&self, lease_id: &str, body: Value) -> Reply {
        self.post(&format!("/api/v1/lease/{}/extend", enc(lease_id)), &body)
            .await
    }

    pub async fn dlq(&self, query: &str) -> Reply {
        self.get(&format!("/api/v1/dlq?{query}")).await
    }

    /// Waits until this instance reports at least `n` parked long-polls (`/metrics`), so a test
    /// can act after a pop parked without guessing with a sleep.
    pub async fn wait_for_waiters(&self, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let m = self.get("/metrics").await;
            if m.status != 200 {
                // /metrics unavailable: fall back to a generous pause.
                tokio::time::sleep(Duration::from_millis(300)).await;
                return;
            }
            if m.body["longPoll"]["waiters"].as_u64().unwrap_or(0) >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "fewer than {n} waiters parked: {:?}",
                m.body
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Starts a broker with default configuration and a client for it.
pub async fn start() -> (TestBroker, Api) {
    let b = TestBroker::start().await;
    let api = Api::new(&b);
    (b, api)
}

/// Starts a broker with a tweaked configuration.
pub async fn start_with(f: impl FnOnce(&mut regina_broker::Config)) -> (TestBroker, Api) {
    let b = TestBroker::start_with(f).await;
    let api = Api::new(&b);
    (b, api)
}

/// Asserts `s` is a canonical UUIDv7 and returns it parsed.
#[track_caller]
pub fn assert_uuid_v7(v: &Value) -> uuid::Uuid {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|_| panic!("not a UUID: {s}"));
    assert_eq!(u.get_version_num(), 7, "not a UUIDv7: {s}");
    assert_eq!(u.hyphenated().to_string(), s, "not canonical: {s}");
    u
}

/// Asserts `v` is a canonical UUID of any version.
#[track_caller]
pub fn assert_uuid(v: &Value) -> uuid::Uuid {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|_| panic!("not a UUID: {s}"));
    assert_eq!(u.hyphenated().to_string(), s, "not canonical: {s}");
    u
}

/// Parses an RFC 3339 timestamp from the broker.
#[track_caller]
pub fn ts(v: &Value) -> time::OffsetDateTime {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp string: {v}"));
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("bad timestamp {s}: {e}"))
}

/// Asserts an ISO-8601 UTC timestamp with exactly `digits` fractional digits and a literal `Z`.
#[track_caller]
pub fn assert_iso(v: &Value, digits: usize) {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let ok = s.len() == 20 + digits + 1
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && s[20..20 + digits].bytes().all(|b| b.is_ascii_digit());
    assert!(
        ok,
        "timestamp {s} is not ISO-8601 UTC with {digits} fractional digits"
    );
    ts(v);
}

/// The database's current time (the clock every lease and visibility rule uses, §1.5).
pub async fn db_now(b: &TestBroker) -> time::OffsetDateTime {
    let c = b.db().await;
    let row = c
        .query_one("select clock_timestamp()", &[])
        .await
        .expect("db clock");
    row.get::<_, time::OffsetDateTime>(0)
}
