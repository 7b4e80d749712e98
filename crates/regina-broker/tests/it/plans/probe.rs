//! Reads the plans PostgreSQL executed for one call, through `auto_explain`: every statement the
//! call ran (nested statements of the SQL functions included), with actual row counts. The rows a
//! plan node handled are deterministic for a given database state, so a statement whose work grows
//! faster than its input shows up here whatever the speed of the machine.

use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

/// A session whose statements log their plans back to it as notices.
pub struct PlanProbe {
    client: Client,
    notices: mpsc::UnboundedReceiver<String>,
}

/// What one node of one executed plan did.
#[derive(Clone, Debug)]
pub struct NodeWork {
    /// Rows the node produced and discarded (filters, join filters, rechecks), over all its loops.
    pub rows: f64,
    /// Index entries an index-only scan looked up in the table beyond the rows it handled: those
    /// of rows that are gone (deleted or moved, by this transaction or one that some snapshot may
    /// still see), which it passes without counting them as rows.
    pub gone_rows: f64,
    /// Node type, relation and the start of the statement's text, to name it in a failure.
    pub label: String,
}

/// The work of one probed call: every node of every statement it executed.
#[derive(Debug, Default)]
pub struct CallWork {
    /// Every node.
    pub nodes: Vec<NodeWork>,
    /// Statements executed.
    pub statements: usize,
}

impl CallWork {
    /// The node that handled the most rows.
    pub fn busiest(&self) -> NodeWork {
        self.nodes
            .iter()
            .max_by(|a, b| a.rows.total_cmp(&b.rows))
            .cloned()
            .unwrap_or(NodeWork {
                rows: 0.0,
                gone_rows: 0.0,
                label: "nothing executed".to_owned(),
            })
    }

    /// Rows handled by all nodes together.
    pub fn total_rows(&self) -> f64 {
        self.nodes.iter().map(|n| n.rows).sum()
    }

    /// Index entries of gone rows that all nodes together passed.
    pub fn total_gone_rows(&self) -> f64 {
        self.nodes.iter().map(|n| n.gone_rows).sum()
    }
}

impl PlanProbe {
    /// A session on `database_url` with `auto_explain` logging every statement (nested ones
    /// included) with actual row counts, as JSON notices to this client. The session keeps the
    /// server's plan settings: the functions under test choose their own (`plan_cache_mode`).
    /// JIT must be available and on at its default thresholds, as on a default server, so that
    /// a statement that would be compiled is seen compiled.
    pub async fn connect(database_url: &str) -> PlanProbe {
        let (client, mut connection) = tokio_postgres::connect(database_url, NoTls).await.unwrap();
        let (sender, notices) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let AsyncMessage::Notice(notice) = message {
                    let _ = sender.send(notice.message().to_owned());
                }
            }
        });
        client
            .batch_execute(
                "load 'auto_explain';
                 set auto_explain.log_min_duration = 0;
                 set auto_explain.log_analyze = on;
                 set auto_explain.log_timing = off;
                 set auto_explain.log_nested_statements = on;
                 set auto_explain.log_format = json;
                 set auto_explain.log_level = notice;
                 set client_min_messages = notice;",
            )
            .await
            .unwrap();
        let jit = client
            .query_one(
                "select pg_jit_available() and current_setting('jit')::boolean
                        and current_setting('jit_above_cost')::float8 = 100000",
                &[],
            )
            .await
            .unwrap();
        assert!(
            jit.get::<_, bool>(0),
            "the plan probe needs JIT available and on at its default thresholds"
        );
        PlanProbe { client, notices }
    }

    /// Runs `sql` unlogged (setting up state for the call to measure).
    pub async fn setup(&mut self, sql: &str) {
        self.client
            .batch_execute(&format!(
                "set auto_explain.log_min_duration = -1; {sql}; \
                 set auto_explain.log_min_duration = 0;"
            ))
            .await
            .unwrap_or_else(|e| panic!("setup failed: {e:?}\n{sql}"));
        self.drain();
    }

    /// Runs `sql` and returns the work of every statement it executed.
    pub async fn measure(&mut self, sql: &str) -> CallWork {
        self.drain();
        self.client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("measured call failed: {e:?}\n{sql}"));
        // A statement after the call: its notices arrive after every notice of the call.
        self.client.batch_execute("select 1").await.unwrap();
        let mut work = CallWork::default();
        // Statements that PostgreSQL compiled with JIT (their start), which none should be.
        let mut compiled = Vec::new();
        while let Ok(notice) = self.notices.try_recv() {
            let Some(start) = notice.find('{') else {
                continue;
            };
            let plan: Value = serde_json::from_str(&notice[start..]).unwrap();
            let text = plan["Query Text"].as_str().unwrap_or("");
            if text.trim() == "select 1" {
                continue;
            }
            work.statements += 1;
            let statement: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let statement: String = statement.chars().take(90).collect();
            collect_nodes(&plan["Plan"], &statement, &mut work.nodes);
            if plan["JIT"]["Functions"].as_f64().unwrap_or(0.0) > 0.0 {
                compiled.push(statement);
            }
        }
        // A statement compiled by JIT costs 20-200 ms of CPU at every execution, more than any
        // of these statements costs to run: a function that turns a plan method off (which
        // counts that method at 10^10 where it is unavoidable) must turn JIT off too.
        assert!(
            compiled.is_empty(),
            "statements compiled by JIT in `{sql}`: {compiled:?}"
        );
        work
    }

    fn drain(&mut self) {
        while self.notices.try_recv().is_ok() {}
    }
}

/// Adds `node` and its children. "Actual Rows" and the "Rows Removed" counts are averages per
/// loop in EXPLAIN's output, hence the product with the loops. An index-only scan also reports
/// "Heap Fetches" (a total over the loops): the entries whose row it had to look up in the
/// table, those of gone rows included; the fetches beyond its rows are gone rows it passed.
fn collect_nodes(node: &Value, statement: &str, into: &mut Vec<NodeWork>) {
    let number = |key: &str| node[key].as_f64().unwrap_or(0.0);
    let per_loop = number("Actual Rows")
        + number("Rows Removed by Filter")
        + number("Rows Removed by Join Filter")
        + number("Rows Removed by Index Recheck");
    let mut relation = node["Relation Name"]
        .as_str()
        .or(node["CTE Name"].as_str())
        .or(node["Function Name"].as_str())
        .unwrap_or("")
        .to_owned();
    if let Some(index) = node["Index Name"].as_str() {
        relation = format!("{relation} using {index}");
    }
    into.push(NodeWork {
        rows: per_loop * number("Actual Loops"),
        gone_rows: (number("Heap Fetches") - per_loop * number("Actual Loops")).max(0.0),
        label: format!(
            "{} {relation} (loops {}) in `{statement}`",
            node["Node Type"].as_str().unwrap_or("?"),
            number("Actual Loops"),
        ),
    });
    if let Some(children) = node["Plans"].as_array() {
        for child in children {
            collect_nodes(child, statement, into);
        }
    }
}
