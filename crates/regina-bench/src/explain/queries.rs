//! The statements the admin, status and analytics endpoints send, with the arguments they send
//! them on the fixture. Changes run in a transaction that is rolled back.

use anyhow::Context as _;

use super::session::Session;

/// One statement to measure.
#[derive(Debug, Clone)]
pub struct Query {
    /// Short name (file name of its plans).
    pub name: String,
    /// The endpoint that sends it.
    pub endpoint: String,
    /// The SQL, arguments included.
    pub sql: String,
    /// Whether it changes data (then it runs inside `begin … rollback`).
    pub changes: bool,
}

/// Rows of the fixture the queries name.
pub struct Targets {
    /// A message of a partition every group passed: `(partition uuid, transactionId)`.
    settled: (String, String),
    /// A message pending for queue mode outside any lease.
    pending: (String, String),
    /// A dead-lettered message.
    dead: (String, String),
}

impl Targets {
    /// Finds the rows on the fixture.
    ///
    /// # Errors
    /// The fixture lacks such rows.
    pub async fn find(session: &Session) -> anyhow::Result<Targets> {
        let pick = |sql: &'static str| async move {
            let row = session
                .client
                .query_one(sql, &[])
                .await
                .with_context(|| format!("fixture row: {sql}"))?;
            Ok::<_, anyhow::Error>((row.get::<_, String>(0), row.get::<_, String>(1)))
        };
        Ok(Targets {
            settled: pick(
                "select p.uuid::text, m.transaction_id from regina.partitions p
                 join regina.messages m on m.partition_id = p.id and m.seq = 0
                 where p.id % 5 = 3 and p.id % 2 = 1 and p.next_seq > 2 order by p.id limit 1",
            )
            .await?,
            pending: pick(
                "select p.uuid::text, m.transaction_id from regina.partitions p
                 join regina.messages m on m.partition_id = p.id and m.seq = p.next_seq - 1
                 where p.id % 5 = 1 and p.id % 50 <> 1 and p.next_seq > 2 order by p.id limit 1",
            )
            .await?,
            dead: pick(
                "select p.uuid::text, d.transaction_id from regina.dead_letters d
                 join regina.partitions p on p.id = d.partition_id order by d.id limit 1",
            )
            .await?,
        })
    }
}

fn query(name: &str, endpoint: &str, sql: &str) -> Query {
    Query {
        name: name.to_owned(),
        endpoint: endpoint.to_owned(),
        sql: sql.to_owned(),
        changes: false,
    }
}

fn change(name: &str, endpoint: &str, sql: &str) -> Query {
    Query {
        changes: true,
        ..query(name, endpoint, sql)
    }
}

/// A feed's range ending now, as the broker passes it.
fn range(span: &str, bucket_seconds: u32) -> String {
    format!(
        "jsonb_build_object('from', now() - interval '{span}', 'to', now(), \
         'bucketSeconds', {bucket_seconds})"
    )
}

/// Statements without arguments to fill in: `(name, endpoint, sql)`.
const FIXED_FEEDS: &[(&str, &str, &str)] = &[
    (
        "overview",
        "GET /resources/overview",
        "select regina.overview('{}')",
    ),
    (
        "status-queue-big",
        "GET /status/queues/fx.big",
        r#"select regina.status_queue('{"queue": "fx.big", "limit": 1000, "offset": 0}')"#,
    ),
    (
        "status-queue-big-offset",
        "GET /status/queues/fx.big?offset=40000",
        r#"select regina.status_queue('{"queue": "fx.big", "limit": 1000, "offset": 40000}')"#,
    ),
    (
        "status-queue-messages-big",
        "GET /status/queues/fx.big/messages",
        r#"select * from regina.status_queue_messages('{"queue": "fx.big", "limit": 50}')"#,
    ),
    (
        "status-queue-messages-small",
        "GET /status/queues/f1.q01/messages",
        r#"select * from regina.status_queue_messages('{"queue": "f1.q01", "limit": 50}')"#,
    ),
    (
        "status-queue-messages-offset",
        "GET /status/queues/fx.big/messages?offset=5000",
        r#"select * from regina.status_queue_messages(
               '{"queue": "fx.big", "limit": 50, "offset": 5000}')"#,
    ),
    (
        "cluster-gauges",
        "GET /metrics/prometheus (cluster gauges)",
        "select * from regina.metrics_cluster_gauges(1000)",
    ),
];

/// Feeds over a range ending now: `(name, endpoint, function, extra query members)`; each runs
/// over the last hour and over 31 days.
const RANGED_FEEDS: &[(&str, &str, &str, &str)] = &[
    (
        "status",
        "GET /status",
        "status",
        r#"{"workerSeenSeconds": 60}"#,
    ),
    (
        "status-queue-filter",
        "GET /status?queue=fx.big",
        "status",
        r#"{"queue": "fx.big"}"#,
    ),
    (
        "status-queues",
        "GET /status/queues",
        "status_queues",
        r#"{"limit": 100}"#,
    ),
    (
        "status-analytics-day",
        "GET /status/analytics?interval=day",
        "status_analytics",
        r#"{"interval": "day"}"#,
    ),
    (
        "status-analytics-hour-queue",
        "GET /status/analytics?queue=fx.big",
        "status_analytics",
        r#"{"interval": "hour", "queue": "fx.big"}"#,
    ),
];

/// The analytics feeds, over the last hour and over 31 days.
const ANALYTICS_FEEDS: [&str; 6] = [
    "system-metrics",
    "worker-metrics",
    "queue-lag",
    "queue-ops",
    "queue-parked-replicas",
    "retention",
];

/// The status, analytics and overview statements (sql/functions/9*.sql).
pub fn stats_feeds() -> Vec<Query> {
    let mut all: Vec<Query> = FIXED_FEEDS
        .iter()
        .map(|(name, endpoint, sql)| query(name, endpoint, sql))
        .collect();
    for (span, suffix, bucket) in [("1 hour", "1h", 60), ("31 days", "31d", 21_600)] {
        let range = range(span, bucket);
        for (name, endpoint, function, extra) in RANGED_FEEDS {
            all.push(query(
                &format!("{name}-{suffix}"),
                endpoint,
                &format!("select regina.{function}({range} || '{extra}')"),
            ));
        }
        for feed in ANALYTICS_FEEDS {
            all.push(query(
                &format!("analytics-{feed}-{suffix}"),
                "GET /analytics/<feed>",
                &format!("select regina.analytics('{feed}', {range})"),
            ));
        }
    }
    all.push(query(
        "analytics-postgres-stats",
        "GET /analytics/postgres-stats",
        &format!(
            "select regina.analytics('postgres-stats', {})",
            range("1 hour", 60)
        ),
    ));
    all.push(change(
        "metrics-trim",
        "leader: metrics history trim",
        "select regina.metrics_trim(30, 1000)",
    ));
    all
}

/// Admin statements without arguments to fill in: `(name, endpoint, sql)`.
const FIXED_ADMIN: &[(&str, &str, &str)] = &[
    (
        "queues-list",
        "GET /resources/queues",
        r#"select regina.queues_list('{"limit": 1000, "offset": 0}')"#,
    ),
    (
        "queue-detail-big",
        "GET /resources/queues/fx.big",
        r#"select regina.queue_detail('{"queue": "fx.big", "limit": 1000, "offset": 0}')"#,
    ),
    (
        "queue-detail-small",
        "GET /resources/queues/f1.q01",
        r#"select regina.queue_detail('{"queue": "f1.q01", "limit": 1000, "offset": 0}')"#,
    ),
    (
        "partitions-list",
        "GET /resources/partitions",
        r#"select regina.partitions_list('{"limit": 100, "offset": 0}')"#,
    ),
    (
        "partitions-list-big-offset",
        "GET /resources/partitions?queue=fx.big&offset=40000",
        r#"select regina.partitions_list('{"queue": "fx.big", "limit": 100, "offset": 40000}')"#,
    ),
    (
        "namespaces",
        "GET /resources/namespaces",
        "select regina.labels_list('namespace')",
    ),
    (
        "tasks",
        "GET /resources/tasks",
        "select regina.labels_list('task')",
    ),
    (
        "messages-list",
        "GET /messages",
        r#"select regina.messages_list('{"limit": 200, "offset": 0}')"#,
    ),
    (
        "messages-list-queue",
        "GET /messages?queue=f1.q01&from=-7d",
        "select regina.messages_list(jsonb_build_object('queue', 'f1.q01', \
         'from', now() - interval '7 days', 'limit', 200, 'offset', 0))",
    ),
    (
        "messages-list-pending",
        "GET /messages?status=pending",
        r#"select regina.messages_list('{"status": "pending", "limit": 200, "offset": 0}')"#,
    ),
    (
        "messages-list-partition",
        "GET /messages?queue=fx.big&partition=p000003&from=-7d",
        "select regina.messages_list(jsonb_build_object('queue', 'fx.big', \
         'partition', 'p000003', 'from', now() - interval '7 days', 'limit', 200, 'offset', 0))",
    ),
    (
        "dlq-list",
        "GET /dlq",
        r#"select regina.dlq_list('{"limit": 100, "offset": 0}')"#,
    ),
    (
        "dlq-list-queue-offset",
        "GET /dlq?queue=fx.big&offset=10000",
        r#"select regina.dlq_list('{"queue": "fx.big", "limit": 100, "offset": 10000}')"#,
    ),
    (
        "consumer-groups",
        "GET /consumer-groups",
        r#"select * from regina.consumer_groups_list('{"limit": 1000, "offset": 0}')"#,
    ),
    (
        "consumer-groups-lagging",
        "GET /consumer-groups/lagging",
        r#"select * from regina.consumer_groups_lagging(
               '{"limit": 1000, "offset": 0, "minLagSeconds": 3600}')"#,
    ),
    (
        "consumer-group-detail",
        "GET /consumer-groups/analytics",
        r#"select regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')"#,
    ),
    (
        "consumer-group-detail-by-lag",
        "GET /consumer-groups/analytics?sort=lag&limit=200 (the dashboard's page)",
        r#"select regina.consumer_group_detail('analytics',
               '{"limit": 200, "offset": 0, "sort": "lag"}')"#,
    ),
    (
        "consumer-group-detail-queue-mode",
        "GET /consumer-groups/__QUEUE_MODE__",
        r#"select regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')"#,
    ),
];

/// The resources, messages, DLQ and consumer-group statements (sql/functions/60_*, 71_*,
/// 85_*–89_*).
pub fn admin(t: &Targets) -> Vec<Query> {
    let (sp, st) = &t.settled;
    let (pp, pt) = &t.pending;
    let (dp, dt) = &t.dead;
    let mut all: Vec<Query> = FIXED_ADMIN
        .iter()
        .map(|(name, endpoint, sql)| query(name, endpoint, sql))
        .collect();
    all.extend([
        query(
            "message-detail",
            "GET /messages/:p/:t",
            &format!("select regina.message_detail('{sp}', '{st}')"),
        ),
        change(
            "message-delete",
            "DELETE /messages/:p/:t",
            &format!("select regina.message_delete('{pp}', '{pt}')"),
        ),
        change(
            "message-dead-letter",
            "POST /messages/:p/:t/dlq",
            &format!(
                "select regina.message_dead_letter('{pp}', '{pt}', '__QUEUE_MODE__', 'manual')"
            ),
        ),
        change(
            "message-requeue",
            "POST /messages/:p/:t/retry",
            &format!("select * from regina.message_requeue('{dp}', '{dt}')"),
        ),
        change(
            "queue-clear-small",
            "DELETE /queues/f1.q01/clear",
            "select * from regina.queue_clear('f1.q01')",
        ),
        change(
            "queue-delete-small",
            "DELETE /resources/queues/f1.q01",
            "select regina.queue_delete('f1.q01')",
        ),
    ]);
    all
}
