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
    pub endpoint: &'static str,
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

fn query(name: &str, endpoint: &'static str, sql: &str) -> Query {
    Query {
        name: name.to_owned(),
        endpoint,
        sql: sql.to_owned(),
        changes: false,
    }
}

fn change(name: &str, endpoint: &'static str, sql: &str) -> Query {
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

/// The status, analytics and overview statements (sql/functions/9*.sql).
pub fn stats_feeds() -> Vec<Query> {
    let hour = range("1 hour", 60);
    let month = range("31 days", 21_600);
    let mut all = vec![
        query("overview", "GET /resources/overview", "select regina.overview('{}')"),
        query("status-1h", "GET /status", &format!("select regina.status({hour} || '{{\"workerSeenSeconds\": 60}}')")),
        query("status-31d", "GET /status?from=-31d", &format!("select regina.status({month})")),
        query("status-queue-filter", "GET /status?queue=fx.big", &format!("select regina.status({hour} || '{{\"queue\": \"fx.big\"}}')")),
        query("status-queues", "GET /status/queues", &format!("select regina.status_queues({hour} || '{{\"limit\": 100, \"offset\": 0}}')")),
        query("status-queues-31d", "GET /status/queues?from=-31d", &format!("select regina.status_queues({month} || '{{\"limit\": 100, \"offset\": 0}}')")),
        query("status-queue-big", "GET /status/queues/fx.big", "select regina.status_queue('{\"queue\": \"fx.big\", \"limit\": 1000, \"offset\": 0}')"),
        query("status-queue-big-offset", "GET /status/queues/fx.big?offset=40000", "select regina.status_queue('{\"queue\": \"fx.big\", \"limit\": 1000, \"offset\": 40000}')"),
        query("status-queue-messages-big", "GET /status/queues/fx.big/messages", "select * from regina.status_queue_messages('{\"queue\": \"fx.big\", \"limit\": 50, \"offset\": 0}')"),
        query("status-queue-messages-small", "GET /status/queues/f1.q01/messages", "select * from regina.status_queue_messages('{\"queue\": \"f1.q01\", \"limit\": 50, \"offset\": 0}')"),
        query("status-queue-messages-offset", "GET /status/queues/fx.big/messages?offset=5000", "select * from regina.status_queue_messages('{\"queue\": \"fx.big\", \"limit\": 50, \"offset\": 5000}')"),
        query("status-analytics-31d-day", "GET /status/analytics?interval=day&from=-31d", &format!("select regina.status_analytics({month} || '{{\"interval\": \"day\"}}')")),
        query("status-analytics-31d-hour-queue", "GET /status/analytics?queue=fx.big&from=-31d", &format!("select regina.status_analytics({month} || '{{\"interval\": \"hour\", \"queue\": \"fx.big\"}}')")),
        query("cluster-gauges", "GET /metrics/prometheus (cluster gauges)", "select * from regina.metrics_cluster_gauges(1000)"),
    ];
    for feed in [
        "system-metrics",
        "worker-metrics",
        "queue-lag",
        "queue-ops",
        "queue-parked-replicas",
        "retention",
    ] {
        all.push(Query {
            name: format!("analytics-{feed}-1h"),
            endpoint: "GET /analytics/<feed>",
            sql: format!("select regina.analytics('{feed}', {hour})"),
            changes: false,
        });
        all.push(Query {
            name: format!("analytics-{feed}-31d"),
            endpoint: "GET /analytics/<feed>?from=-31d",
            sql: format!("select regina.analytics('{feed}', {month})"),
            changes: false,
        });
    }
    all.push(query(
        "analytics-postgres-stats",
        "GET /analytics/postgres-stats",
        &format!("select regina.analytics('postgres-stats', {hour})"),
    ));
    all.push(change(
        "metrics-trim",
        "leader: metrics history trim",
        "select regina.metrics_trim(30, 1000)",
    ));
    all
}

/// The resources, messages, DLQ and consumer-group statements (sql/functions/60_*, 71_*, 85_*–89_*).
pub fn admin(t: &Targets) -> Vec<Query> {
    let (sp, st) = &t.settled;
    let (pp, pt) = &t.pending;
    let (dp, dt) = &t.dead;
    vec![
        query("queues-list", "GET /resources/queues", "select regina.queues_list('{\"limit\": 1000, \"offset\": 0}')"),
        query("queue-detail-big", "GET /resources/queues/fx.big", "select regina.queue_detail('{\"queue\": \"fx.big\", \"limit\": 1000, \"offset\": 0}')"),
        query("queue-detail-small", "GET /resources/queues/f1.q01", "select regina.queue_detail('{\"queue\": \"f1.q01\", \"limit\": 1000, \"offset\": 0}')"),
        query("partitions-list", "GET /resources/partitions", "select regina.partitions_list('{\"limit\": 100, \"offset\": 0}')"),
        query("partitions-list-big-offset", "GET /resources/partitions?queue=fx.big&offset=40000", "select regina.partitions_list('{\"queue\": \"fx.big\", \"limit\": 100, \"offset\": 40000}')"),
        query("namespaces", "GET /resources/namespaces", "select regina.labels_list('namespace')"),
        query("tasks", "GET /resources/tasks", "select regina.labels_list('task')"),
        query("messages-list", "GET /messages", "select regina.messages_list('{\"limit\": 200, \"offset\": 0}')"),
        query("messages-list-queue", "GET /messages?queue=f1.q01&from=-7d", "select regina.messages_list(jsonb_build_object('queue', 'f1.q01', 'from', now() - interval '7 days', 'limit', 200, 'offset', 0))"),
        query("messages-list-pending", "GET /messages?status=pending", "select regina.messages_list('{\"status\": \"pending\", \"limit\": 200, \"offset\": 0}')"),
        query("messages-list-partition", "GET /messages?queue=fx.big&partition=p000003&from=-7d", "select regina.messages_list(jsonb_build_object('queue', 'fx.big', 'partition', 'p000003', 'from', now() - interval '7 days', 'limit', 200, 'offset', 0))"),
        query("message-detail", "GET /messages/:p/:t", &format!("select regina.message_detail('{sp}', '{st}')")),
        change("message-delete", "DELETE /messages/:p/:t", &format!("select regina.message_delete('{pp}', '{pt}')")),
        change("message-dead-letter", "POST /messages/:p/:t/dlq", &format!("select regina.message_dead_letter('{pp}', '{pt}', '__QUEUE_MODE__', 'manual')")),
        change("message-requeue", "POST /messages/:p/:t/retry", &format!("select * from regina.message_requeue('{dp}', '{dt}')")),
        change("queue-clear-small", "DELETE /queues/f1.q01/clear", "select * from regina.queue_clear('f1.q01')"),
        change("queue-delete-small", "DELETE /resources/queues/f1.q01", "select regina.queue_delete('f1.q01')"),
        query("dlq-list", "GET /dlq", "select regina.dlq_list('{\"limit\": 100, \"offset\": 0}')"),
        query("dlq-list-queue-offset", "GET /dlq?queue=fx.big&offset=10000", "select regina.dlq_list('{\"queue\": \"fx.big\", \"limit\": 100, \"offset\": 10000}')"),
        query("consumer-groups", "GET /consumer-groups", "select * from regina.consumer_groups_list('{\"limit\": 1000, \"offset\": 0}')"),
        query("consumer-groups-lagging", "GET /consumer-groups/lagging", "select * from regina.consumer_groups_lagging('{\"limit\": 1000, \"offset\": 0, \"minLagSeconds\": 3600}')"),
        query("consumer-group-detail", "GET /consumer-groups/analytics", "select regina.consumer_group_detail('analytics')"),
        query("consumer-group-detail-queue-mode", "GET /consumer-groups/__QUEUE_MODE__", "select regina.consumer_group_detail('__QUEUE_MODE__')"),
    ]
}
