//! Every batch-shaped SQL function does work linear in its input, whatever the spread over
//! partitions: each one runs at two sizes, and the rows each plan node handled (read through
//! `auto_explain`, nested statements included) must stay within a small multiple of the input.
//! A quadratic plan — a nested loop over two item-sized sets, a scan of a whole table per item —
//! handles millions of rows at the large size and fails here, deterministically: row counts do
//! not depend on the machine's speed.

mod probe;
mod scale;
mod scenarios;
mod writes;

use probe::{CallWork, PlanProbe};
use regina_testkit::{TestBroker, TestDatabase};

/// Input rows of the small and the large call. The large call runs first, so the small one meets
/// tables already holding more rows than it has: a plan that scans a table, not its input, fails.
const SIZES: [usize; 2] = [4_000, 200];
/// No node may handle more than this many rows per input row (plus [`NODE_ROWS_FIXED`]).
const NODE_ROWS_PER_INPUT: f64 = 8.0;
/// Rows any node may handle whatever the input (small lookup tables, catalog reads).
const NODE_ROWS_FIXED: f64 = 200.0;
/// The rows handled per input row by all nodes together may grow by at most this factor from the
/// small to the large call (a linear function's ratio falls: its fixed cost is spread thinner).
/// For a call whose input grows with the size, the index entries of gone rows its scans passed
/// count too: a call that walks again, for each item, the rows it deleted for the items before
/// is quadratic. (A call on one message in tables of either size may meet such entries that the
/// setup left, in proportion to the tables: for it, rows alone.)
const TOTAL_GROWTH_MAX: f64 = 1.5;

/// Statistics as autovacuum keeps them: tables analyzed once they hold rows. (A table analyzed
/// while empty makes the planner believe it empty, so that any index ties with any other for a
/// plan made then; autovacuum never analyzes a table that has not changed.)
const ANALYZE_FILLED: &str = "do $$
    declare
        v_table text;
        v_filled boolean;
    begin
        for v_table in select c.relname from pg_class c
                       join pg_namespace n on n.oid = c.relnamespace
                       where n.nspname = 'regina' and c.relkind = 'r'
        loop
            execute format('select exists (select 1 from regina.%I)', v_table) into v_filled;
            if v_filled then
                execute format('analyze regina.%I', v_table);
            end if;
        end loop;
    end $$";

/// One batch-shaped call to measure.
pub struct Scenario {
    /// What it exercises.
    pub name: &'static str,
    /// The input rows of a call of size `n` (`n` for calls shaped by their input; 1 for a call
    /// on one message, whatever the size of the tables).
    pub input: fn(n: usize) -> usize,
    /// Each size on a database of its own: for a call whose work is a share of the whole
    /// database by design (a stats pass compares every partition), so its input is the table.
    pub own_database: bool,
    /// The setup takes the statistics itself, before it fills the tables (a plan made from
    /// statistics that say a table is nearly empty, kept while the table fills); otherwise the
    /// test takes them after the setup.
    pub stale_statistics: bool,
    /// Statements that set up the state for a call of `n` input rows on queue `queue` (not
    /// measured).
    pub setup: fn(queue: &str, n: usize) -> String,
    /// The call to measure.
    pub call: fn(queue: &str, n: usize) -> String,
}

/// Measures one scenario at both sizes on its own database and checks both bounds.
async fn check(scenario: &Scenario) {
    let mut database = fresh_database().await;
    let mut probe = PlanProbe::connect(database.url()).await;
    let mut per_input = Vec::new();
    for (i, n) in SIZES.into_iter().enumerate() {
        if scenario.own_database && i > 0 {
            database = fresh_database().await;
            probe = PlanProbe::connect(database.url()).await;
        }
        let queue = format!("plans-{n}");
        probe.setup(&(scenario.setup)(&queue, n)).await;
        if !scenario.stale_statistics {
            probe.setup(ANALYZE_FILLED).await;
        }
        let work = probe.measure(&(scenario.call)(&queue, n)).await;
        let input = (scenario.input)(n);
        let busiest = work.busiest();
        eprintln!(
            "{} at {n}: {} statements, {:.1} rows and {:.1} entries of gone rows per input row, \
             busiest node {} rows: {}",
            scenario.name,
            work.statements,
            work.total_rows() / input as f64,
            work.total_gone_rows() / input as f64,
            busiest.rows,
            busiest.label,
        );
        assert_bounded(scenario.name, input, &work);
        let gone = if (scenario.input)(SIZES[0]) == (scenario.input)(SIZES[1]) {
            0.0
        } else {
            work.total_gone_rows()
        };
        per_input.push((work.total_rows() + gone) / input as f64);
    }
    let [large, small] = [per_input[0], per_input[1]];
    assert!(
        large <= small * TOTAL_GROWTH_MAX,
        "{}: rows handled per input row grow with the input: {small:.1} at {} rows, \
         {large:.1} at {} rows",
        scenario.name,
        SIZES[1],
        SIZES[0],
    );
}

/// A migrated database of its own (the broker that made it is stopped: its leader's jobs would
/// change the state between setup and call); dropped when the returned handle goes.
async fn fresh_database() -> TestDatabase {
    let broker = TestBroker::start().await;
    let database = broker.database().expect("a database of the test kit");
    broker.shutdown().await;
    let db = database.connect().await;
    // Statistics are what the test sets (ANALYZE_FILLED), not what autovacuum happens to find
    // in between: plans made from them, hence row counts, are the same at every run.
    db.batch_execute(
        "do $$
         declare
             v_table text;
         begin
             for v_table in select c.relname from pg_class c
                            join pg_namespace n on n.oid = c.relnamespace
                            where n.nspname = 'regina' and c.relkind = 'r'
             loop
                 execute format('alter table regina.%I set (autovacuum_enabled = false)',
                                v_table);
             end loop;
         end $$",
    )
    .await
    .unwrap();
    database
}

#[track_caller]
fn assert_bounded(name: &str, n: usize, work: &CallWork) {
    assert!(work.statements > 0, "{name}: no statement was logged");
    let busiest = work.busiest();
    let bound = NODE_ROWS_PER_INPUT * n as f64 + NODE_ROWS_FIXED;
    assert!(
        busiest.rows <= bound,
        "{name} at {n} input rows: a node handled {} rows (bound {bound}): {}",
        busiest.rows,
        busiest.label,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_work_is_linear_in_its_items() {
    for scenario in scenarios::PUSH {
        check(scenario).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_ack_and_transaction_work_is_linear_in_their_items() {
    for scenario in scenarios::DELIVERY {
        check(scenario).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_message_calls_work_is_bounded_whatever_the_tables_hold() {
    for scenario in scenarios::SINGLES {
        check(scenario).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_queue_stream_and_transaction_calls_work_is_bounded_whatever_the_tables_hold() {
    for scenario in scenarios::ADMIN {
        check(scenario).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_jobs_work_is_linear_in_what_they_process() {
    for scenario in scenarios::JOBS {
        check(scenario).await;
    }
}
