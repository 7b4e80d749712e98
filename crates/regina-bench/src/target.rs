//! The three systems a scenario can drive with the same work: the broker over HTTP/1.1 keep-alive
//! connections, the broker's own SQL functions called directly (`raw`), and plain inserts of the
//! same rows into copies of Regina's tables (`ceiling`, see [`crate::ceiling`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_postgres::{Client, NoTls};
use uuid::Uuid;

pub use crate::http::{wait_healthy, HttpConn};

use crate::ceiling;
use crate::plan::Item;

/// One delivered message, read from a pop's answer (its other members are skipped unread).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Partition name.
    #[serde(default, deserialize_with = "text_or_empty")]
    pub partition: String,
    /// Partition UUID (for acks).
    #[serde(default, deserialize_with = "text_or_empty")]
    pub partition_id: String,
    /// Transaction id (for acks).
    #[serde(default, deserialize_with = "text_or_empty")]
    pub transaction_id: String,
    /// Lease id ("" with autoAck).
    #[serde(default, deserialize_with = "text_or_empty")]
    pub lease_id: String,
    /// The payload.
    #[serde(default)]
    pub data: Value,
}

/// A pop's answer: its messages only. Read into these types rather than a `Value` tree, the
/// answer costs the load generator far fewer allocations (it shares the machine with the system
/// it measures).
#[derive(Deserialize)]
struct PopAnswer {
    #[serde(default)]
    messages: Vec<Delivery>,
}

/// A push result entry: its status only.
#[derive(Deserialize)]
struct PushEntry<'a> {
    #[serde(borrow, default)]
    status: std::borrow::Cow<'a, str>,
}

impl PushEntry<'_> {
    fn is_queued(&self) -> bool {
        self.status == "queued"
    }
}

/// How many entries of a push's answer are `queued`.
fn queued(answer: &[u8]) -> anyhow::Result<usize> {
    let entries: Vec<PushEntry<'_>> = serde_json::from_slice(answer)?;
    Ok(entries.iter().filter(|e| e.is_queued()).count())
}

/// A string member that may be `null` or missing: empty then (as the answers' readers expect).
fn text_or_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// One acknowledgement.
#[derive(Clone, Debug)]
pub struct Ack {
    /// From the delivery.
    pub transaction_id: String,
    /// From the delivery.
    pub partition_id: String,
    /// From the delivery.
    pub lease_id: String,
    /// `completed`, `failed`, `dlq`, `retry`.
    pub status: &'static str,
}

/// A pop request.
#[derive(Clone, Debug)]
pub struct Pop {
    /// Queue name.
    pub queue: String,
    /// Consumer group (None: queue mode).
    pub group: Option<String>,
    /// Messages at most.
    pub batch: u32,
    /// Partitions claimed at most.
    pub partitions: u32,
    /// Long-poll deadline (broker only; 0: answer at once).
    pub wait_ms: u64,
    /// autoAck.
    pub auto_ack: bool,
}

/// Which system to drive.
#[derive(Clone, Debug)]
pub enum TargetKind {
    /// HTTP base URL of a broker.
    Broker(String),
    /// The database URL; the number of connections to share among virtual users.
    Raw(String, usize),
    /// The database URL; the number of connections (as for `Raw`).
    Ceiling(String, usize),
}

impl TargetKind {
    /// `broker`, `raw` or `ceiling`.
    pub fn name(&self) -> &'static str {
        match self {
            TargetKind::Broker(_) => "broker",
            TargetKind::Raw(..) => "raw",
            TargetKind::Ceiling(..) => "ceiling",
        }
    }

    /// Whether the virtual users speak SQL (no long-poll: consumers poll).
    pub fn is_sql(&self) -> bool {
        !matches!(self, TargetKind::Broker(_))
    }
}

/// Shared state from which each virtual user gets its own [`Session`].
#[derive(Clone)]
pub enum Target {
    /// HTTP: each session opens its own connection.
    Broker(Arc<str>),
    /// SQL: sessions share a fixed set of connections, round-robin.
    Raw(Arc<RawPool>),
    /// SQL, like `Raw`, on the ceiling's tables.
    Ceiling(Arc<CeilingPool>),
}

/// The ceiling target's connections, each with its push statement prepared, and the partitions
/// known to exist.
pub struct CeilingPool {
    pool: RawPool,
    push: Vec<tokio_postgres::Statement>,
    known: ceiling::Known,
}

/// The raw target's connections.
pub struct RawPool {
    clients: Vec<Client>,
    next: AtomicUsize,
}

impl Target {
    /// Connects what the target needs up front (the raw pool).
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn open(kind: &TargetKind) -> anyhow::Result<Target> {
        Ok(match kind {
            TargetKind::Broker(url) => Target::Broker(Arc::from(url.trim_end_matches('/'))),
            TargetKind::Raw(database_url, connections) => Target::Raw(Arc::new(
                RawPool::connect(database_url, *connections).await?,
            )),
            TargetKind::Ceiling(database_url, connections) => {
                let pool = RawPool::connect(database_url, *connections).await?;
                ceiling::install(&pool.clients[0]).await?;
                let mut push = Vec::with_capacity(pool.clients.len());
                for client in &pool.clients {
                    push.push(ceiling::prepare(client).await?);
                }
                Target::Ceiling(Arc::new(CeilingPool {
                    pool,
                    push,
                    known: ceiling::Known::default(),
                }))
            }
        })
    }

    /// A session for one virtual user.
    pub fn session(&self) -> Session {
        match self {
            Target::Broker(base) => Session::Broker(HttpConn::new(base)),
            Target::Raw(pool) => Session::Raw(pool.clone(), pool.next_index()),
            Target::Ceiling(ceiling) => {
                Session::Ceiling(ceiling.clone(), ceiling.pool.next_index())
            }
        }
    }
}

impl RawPool {
    async fn connect(database_url: &str, connections: usize) -> anyhow::Result<RawPool> {
        let mut clients = Vec::new();
        for _ in 0..connections.max(1) {
            let (client, connection) = tokio_postgres::connect(database_url, NoTls)
                .await
                .context("SQL target: connect")?;
            tokio::spawn(connection);
            client
                .batch_execute("set statement_timeout = 60000")
                .await?;
            clients.push(client);
        }
        Ok(RawPool {
            clients,
            next: AtomicUsize::new(0),
        })
    }

    fn next_index(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len()
    }
}

/// One virtual user's channel to the target.
pub enum Session {
    /// A keep-alive HTTP/1.1 connection (opened on first use, reopened after an error).
    Broker(HttpConn),
    /// A connection of the raw pool.
    Raw(Arc<RawPool>, usize),
    /// A connection of the ceiling's pool.
    Ceiling(Arc<CeilingPool>, usize),
}

fn raw_items(items: &[Item]) -> (String, String) {
    let mut meta = Vec::with_capacity(items.len());
    let mut payloads = String::from("[");
    for (i, item) in items.iter().enumerate() {
        meta.push(json!({
            "queue": item.queue,
            "partition": item.partition,
            "transactionId": Uuid::new_v4().to_string(),
            "messageId": Uuid::now_v7().to_string(),
        }));
        if i > 0 {
            payloads.push(',');
        }
        payloads.push_str(&item.payload);
    }
    payloads.push(']');
    (Value::Array(meta).to_string(), payloads)
}

/// The messages of a pop's answer.
fn deliveries(answer: &[u8]) -> anyhow::Result<Vec<Delivery>> {
    Ok(serde_json::from_slice::<PopAnswer>(answer)?.messages)
}

fn ack_json(acks: &[Ack], group: Option<&str>) -> Value {
    Value::Array(
        acks.iter()
            .map(|a| {
                json!({
                    "transactionId": a.transaction_id,
                    "partitionId": a.partition_id,
                    "leaseId": if a.lease_id.is_empty() { Value::Null } else { json!(a.lease_id) },
                    "status": a.status,
                    "consumerGroup": group,
                    "error": if a.status == "completed" { Value::Null } else { json!("bench") },
                })
            })
            .collect(),
    )
}

impl Session {
    fn raw(&self) -> Option<&Client> {
        match self {
            Session::Raw(pool, index) => pool.clients.get(*index),
            Session::Ceiling(ceiling, index) => ceiling.pool.clients.get(*index),
            Session::Broker(_) => None,
        }
    }

    fn no_ceiling(what: &str) -> anyhow::Error {
        anyhow!("the ceiling target has no {what} (it models push only)")
    }

    /// Creates or reconfigures a queue.
    ///
    /// # Errors
    /// Transport error or a non-2xx answer.
    pub async fn configure(&mut self, queue: &str, options: Value) -> anyhow::Result<()> {
        let body = json!({"queue": queue, "options": options});
        match self {
            Session::Broker(conn) => {
                let (status, text) = conn
                    .send(
                        "POST",
                        "/api/v1/configure",
                        Some(body.to_string().into_bytes()),
                    )
                    .await?;
                if status >= 300 {
                    bail!(
                        "configure {queue}: {status} {}",
                        String::from_utf8_lossy(&text)
                    );
                }
            }
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                client
                    .query(
                        "select regina.configure($1::text::jsonb)",
                        &[&body.to_string()],
                    )
                    .await?;
            }
            Session::Ceiling(ceiling, index) => {
                ceiling::configure(&ceiling.pool.clients[*index], queue).await?;
            }
        }
        Ok(())
    }

    /// Pushes items in one request (one SQL call for `raw`); returns how many were queued.
    ///
    /// # Errors
    /// Transport error or a non-201 answer.
    pub async fn push(&mut self, items: &[Item]) -> anyhow::Result<usize> {
        match self {
            Session::Broker(conn) => {
                let mut body = String::from("{\"items\":[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        body.push(',');
                    }
                    body.push_str(&format!(
                        "{{\"queue\":{},\"partition\":{},\"payload\":{}}}",
                        Value::from(item.queue.as_str()),
                        Value::from(item.partition.as_str()),
                        item.payload
                    ));
                }
                body.push_str("]}");
                let (status, text) = conn
                    .send("POST", "/api/v1/push", Some(body.into_bytes()))
                    .await?;
                if status != 201 {
                    bail!("push: {status} {}", String::from_utf8_lossy(&text));
                }
                queued(&text)
            }
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                let (meta, payloads) = raw_items(items);
                let rows = client
                    .query(
                        "select result from regina.push_text($1::text::jsonb, $2::text::json)",
                        &[&meta, &payloads],
                    )
                    .await?;
                let mut count = 0;
                for row in rows {
                    let entry: PushEntry<'_> = serde_json::from_str(row.get::<_, &str>(0))?;
                    count += usize::from(entry.is_queued());
                }
                Ok(count)
            }
            Session::Ceiling(c, index) => {
                ceiling::push(&c.pool.clients[*index], &c.push[*index], &c.known, items).await
            }
        }
    }

    /// Pops; an empty answer is an empty vector.
    ///
    /// # Errors
    /// Transport error or an unexpected status.
    pub async fn pop(&mut self, pop: &Pop) -> anyhow::Result<Vec<Delivery>> {
        match self {
            Session::Broker(conn) => {
                let mut path = format!(
                    "/api/v1/pop/queue/{}?batch={}&partitions={}&autoAck={}",
                    pop.queue, pop.batch, pop.partitions, pop.auto_ack
                );
                if let Some(group) = &pop.group {
                    path.push_str(&format!("&consumerGroup={group}"));
                }
                if pop.wait_ms > 0 {
                    path.push_str(&format!("&wait=true&timeout={}", pop.wait_ms));
                }
                let (status, text) = conn.send("GET", &path, None).await?;
                match status {
                    200 => deliveries(&text),
                    204 => Ok(Vec::new()),
                    _ => bail!("pop: {status} {}", String::from_utf8_lossy(&text)),
                }
            }
            Session::Ceiling(..) => Err(Session::no_ceiling("pop")),
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                let request = json!([{
                    "queue": pop.queue, "partition": null, "namespace": null, "task": null,
                    "consumerGroup": pop.group, "batch": pop.batch, "partitions": pop.partitions,
                    "autoAck": pop.auto_ack, "subscriptionMode": null, "subscriptionFrom": null,
                    "leaseId": Uuid::now_v7().to_string(),
                }]);
                let rows = client
                    .query(
                        "select result from regina.pop_text($1::text::jsonb)",
                        &[&request.to_string()],
                    )
                    .await?;
                let mut out = Vec::new();
                for row in rows {
                    out.extend(deliveries(row.get::<_, &str>(0).as_bytes())?);
                }
                Ok(out)
            }
        }
    }

    /// Acknowledges in one request (`/ack/batch`; one `regina.ack` call for `raw`).
    ///
    /// # Errors
    /// Transport error or a non-200 answer.
    pub async fn ack(&mut self, acks: &[Ack], group: Option<&str>) -> anyhow::Result<()> {
        if acks.is_empty() {
            return Ok(());
        }
        let items = ack_json(acks, group);
        match self {
            Session::Broker(conn) => {
                let body = json!({"acknowledgments": items, "consumerGroup": group});
                let (status, text) = conn
                    .send(
                        "POST",
                        "/api/v1/ack/batch",
                        Some(body.to_string().into_bytes()),
                    )
                    .await?;
                if status != 200 {
                    bail!("ack: {status} {}", String::from_utf8_lossy(&text));
                }
            }
            Session::Ceiling(..) => return Err(Session::no_ceiling("ack")),
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                client
                    .query(
                        "select idx from regina.ack($1::text::jsonb)",
                        &[&items.to_string()],
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// Acks `acks` and pushes `items` atomically: `POST /api/v1/transaction` for the broker, one
    /// SQL transaction for `raw`.
    ///
    /// # Errors
    /// Transport error or a failed transaction.
    pub async fn transaction(
        &mut self,
        acks: &[Ack],
        group: Option<&str>,
        items: &[Item],
    ) -> anyhow::Result<()> {
        match self {
            Session::Broker(conn) => {
                let mut operations: Vec<Value> = acks
                    .iter()
                    .map(|a| {
                        json!({"type": "ack", "transactionId": a.transaction_id, "leaseId": a.lease_id,
                               "partitionId": a.partition_id, "status": a.status,
                               "consumerGroup": group})
                    })
                    .collect();
                for item in items {
                    let payload: Value = serde_json::from_str(&item.payload)?;
                    operations.push(json!({"type": "push", "items": [{
                        "queue": item.queue, "partition": item.partition, "payload": payload}]}));
                }
                let body = json!({"operations": operations});
                let (status, text) = conn
                    .send(
                        "POST",
                        "/api/v1/transaction",
                        Some(body.to_string().into_bytes()),
                    )
                    .await?;
                match status {
                    200 => Ok(()),
                    _ => bail!("transaction: {status} {}", String::from_utf8_lossy(&text)),
                }
            }
            Session::Ceiling(..) => Err(Session::no_ceiling("transaction")),
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                let (meta, payloads) = raw_items(items);
                let acks = ack_json(acks, group).to_string();
                client.batch_execute("begin").await?;
                let result = async {
                    client
                        .query("select idx from regina.ack($1::text::jsonb)", &[&acks])
                        .await?;
                    client
                        .query(
                            "select idx from regina.push_text($1::text::jsonb, $2::text::json)",
                            &[&meta, &payloads],
                        )
                        .await?;
                    Ok::<_, anyhow::Error>(())
                }
                .await;
                match result {
                    Ok(()) => client.batch_execute("commit").await?,
                    Err(e) => {
                        client.batch_execute("rollback").await?;
                        return Err(e);
                    }
                }
                Ok(())
            }
        }
    }

    /// Dead-letter entries of a queue and group (broker: `/api/v1/dlq`; raw: `regina.dlq_list`).
    ///
    /// # Errors
    /// Transport error.
    pub async fn dlq_count(&mut self, queue: &str, group: &str) -> anyhow::Result<u64> {
        match self {
            Session::Broker(conn) => {
                let path = format!("/api/v1/dlq?queue={queue}&consumerGroup={group}&limit=1");
                let (status, text) = conn.send("GET", &path, None).await?;
                if status != 200 {
                    bail!("dlq: {status} {}", String::from_utf8_lossy(&text));
                }
                let body: Value = serde_json::from_slice(&text)?;
                Ok(body["total"].as_u64().unwrap_or(0))
            }
            Session::Ceiling(..) => Err(Session::no_ceiling("dead-letter queue")),
            Session::Raw(..) => {
                let client = self.raw().ok_or_else(|| anyhow!("no client"))?;
                let query =
                    json!({"queue": queue, "consumerGroup": group, "limit": 1, "offset": 0});
                let row = client
                    .query_one(
                        "select regina.dlq_list($1::text::jsonb)::text",
                        &[&query.to_string()],
                    )
                    .await?;
                let body: Value = serde_json::from_str(&row.get::<_, String>(0))?;
                Ok(body["total"].as_u64().unwrap_or(0))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pop_answer_gives_its_messages_with_null_or_missing_ids_empty() {
        let answer = br#"{"success":true,"leaseId":null,"messages":[
            {"partition":"p","partitionId":"u","transactionId":"t","leaseId":null,
             "createdAt":"2026-12-03T00:00:00Z","data":{"l":1,"s":2}},
            {"partition":"q","transactionId":"t2","data":"x"}]}"#;
        let got = deliveries(answer).expect("answer");
        assert_eq!(got.len(), 2);
        assert_eq!(
            (
                got[0].partition.as_str(),
                got[0].partition_id.as_str(),
                got[0].lease_id.as_str()
            ),
            ("p", "u", "")
        );
        assert_eq!(got[0].data, json!({"l": 1, "s": 2}));
        assert_eq!(
            (got[1].partition_id.as_str(), got[1].transaction_id.as_str()),
            ("", "t2")
        );
        assert!(deliveries(br#"{"empty":"empty"}"#)
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn a_push_answer_counts_its_queued_entries() {
        let answer = br#"[{"status":"queued","message_id":"a"},{"status":"duplicate"},
                          {"status":"failed","code":"queue_full"},{"status":"queued"}]"#;
        assert_eq!(queued(answer).expect("answer"), 2);
    }
}
