//! A small client of the Regina HTTP API for tests: every answer comes back as status, headers,
//! text and JSON, with shorthands for the messaging calls and assertions on error bodies. Both
//! integration kits (the broker's and the command line's) use it.

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::{eventually, TestBroker};

/// One HTTP answer: status, headers, raw text and the body parsed as JSON (`Null` when empty).
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body as received.
    pub text: String,
    /// The body parsed as JSON; `Null` when it is empty or not JSON.
    pub body: Value,
}

impl Reply {
    /// The value of header `name`, when present and text.
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

    /// Asserts an error answer with the given status and code (and an `error` text).
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
    /// The broker's base URL, no trailing slash.
    pub base: String,
    /// The HTTP client (its own connection pool).
    pub http: reqwest::Client,
}

impl Api {
    /// A client of `broker` with a connection pool of its own.
    pub fn new(broker: &TestBroker) -> Api {
        Api {
            base: broker.base_url.trim_end_matches('/').to_string(),
            http: crate::http(),
        }
    }

    /// A client of the same broker with a connection pool of its own (one per simulated
    /// producer or consumer, so that their requests run at once).
    pub fn with_own_pool(&self) -> Api {
        Api {
            base: self.base.clone(),
            http: crate::http(),
        }
    }

    /// `base` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends any request; `body` is sent verbatim.
    ///
    /// # Panics
    /// When the request fails below HTTP (no connection, timeout) or the body cannot be read.
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

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, &[]).await
    }

    /// `POST path` with a JSON body.
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

    /// `POST path` with `body` sent as is, labelled JSON.
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

    /// `POST /api/v1/push` with these items.
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

    /// The same pop sent from a task of its own (a long-poll to park while the test goes on).
    pub fn pop_in_background(&self, queue: &str, query: &str) -> tokio::task::JoinHandle<Reply> {
        let (api, queue, query) = (self.clone(), queue.to_owned(), query.to_owned());
        tokio::spawn(async move { api.pop(&queue, &query).await })
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

    /// `POST /api/v1/ack` with this body.
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

    /// `POST /api/v1/ack/batch` with this body.
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

    /// `POST /api/v1/lease/:leaseId/extend` with this body.
    pub async fn extend(&self, lease_id: &str, body: Value) -> Reply {
        self.post(&format!("/api/v1/lease/{}/extend", enc(lease_id)), &body)
            .await
    }

    /// `GET /api/v1/dlq?query`.
    pub async fn dlq(&self, query: &str) -> Reply {
        self.get(&format!("/api/v1/dlq?{query}")).await
    }

    /// `POST /api/v1/stats/refresh` until a pass runs here (the leader's own pass may hold the
    /// stats lock for a moment, and then ours is skipped); returns its answer. The listings count
    /// messages as of the last refresh.
    pub async fn refresh_stats(&self) -> Value {
        eventually("a stats refresh runs", || async {
            let r = self.post("/api/v1/stats/refresh", &json!({})).await;
            assert_eq!(r.status, 200, "stats refresh failed: {r:?}");
            if r.body["refreshed"] == true {
                return Ok(r.body);
            }
            assert_eq!(
                r.body,
                json!({"skipped": true, "reason": "another_instance_running"})
            );
            Err(r)
        })
        .await
    }

    /// Waits until this instance reports at least `n` parked long-polls (`GET /metrics`,
    /// `longPoll.parked`), so a test acts only after a pop is known to wait: past its first
    /// attempt, which a database outage would still answer with `503`.
    pub async fn wait_for_waiters(&self, n: u64) {
        eventually(&format!("{n} parked pops"), || async {
            let m = self.get("/metrics").await;
            match m.body["longPoll"]["parked"].as_u64() {
                Some(waiters) if m.status == 200 && waiters >= n => Ok(()),
                _ => Err(m),
            }
        })
        .await;
    }

    /// Waits until `GET /health` answers 200 with the database connected (after an outage the
    /// broker reconnects by itself).
    pub async fn wait_healthy(&self) {
        eventually("the broker is healthy", || async {
            let r = self.get("/health").await;
            if r.status != 200 {
                return Err(r);
            }
            assert_eq!(r.body["database"], "connected", "healthy: {r:?}");
            Ok(())
        })
        .await;
    }

    /// Waits until this instance's failover buffer has nothing pending
    /// (`GET /api/v1/status/buffers`); returns that status.
    pub async fn wait_replayed(&self) -> Reply {
        eventually("the failover buffer is replayed", || async {
            let r = self.get("/api/v1/status/buffers").await;
            assert_eq!(r.status, 200, "{r:?}");
            if r.body["pending"] == 0 {
                Ok(r)
            } else {
                Err(r)
            }
        })
        .await
    }
}
