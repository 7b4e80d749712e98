//! The end of a run: the delivery (or storage) verdict and the report with its figures.

use std::collections::BTreeMap;

use regina_bench::model::{Environment, RunReport, Summary, Totals, Verification, KEPT_PACE_MIN};
use serde_json::json;

use super::workers::Shared;
use super::Window;
use crate::plan::GroupPlan;
use crate::steady;
use crate::system::System;
use crate::target::{Session, TargetKind};
use crate::verify;

/// Whether every message consumers forwarded arrived downstream.
pub fn forwarded_arrived(shared: &Shared) -> bool {
    let forwarded = shared
        .forwarded
        .lock()
        .map(|f| f.clone())
        .unwrap_or_default();
    shared
        .downstream
        .lock()
        .map(|d| forwarded.iter().all(|k| d.contains_key(k)))
        .unwrap_or(false)
}

/// The delivery check (or, push-only, the storage check of offsets from `first_seq` on), with
/// the dead-letter and forwarding checks of the scenarios that inject them.
pub async fn verdict(
    shared: &Shared,
    kind: &TargetKind,
    system: &System,
    session: &mut Session,
    first_seq: i64,
    notes: &mut Vec<String>,
) -> anyhow::Result<Verification> {
    let plan = &shared.plan;
    let group_keys: Vec<String> = plan.groups.iter().map(GroupPlan::key).collect();
    let explained: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.fail_ratio > 0.0 || plan.poison_ratio > 0.0)
        .map(GroupPlan::key)
        .collect();
    let mut verification = if plan.verify_db {
        verify::storage_check(
            &system.database_url,
            &shared.ledger,
            &plan.tag,
            steady::schema(kind),
            first_seq,
        )
        .await?
    } else {
        shared.ledger.verdict(&group_keys, &explained)
    };
    if plan.poison_ratio > 0.0 {
        let poison = shared.ledger.poison();
        let mut dead = 0;
        for g in &group_keys {
            let n = session.dlq_count(&plan.queue(0), g).await?;
            dead += n;
            if n != poison {
                verification.failures.push(format!(
                    "group {g}: {n} dead letters, {poison} poison messages pushed"
                ));
            }
        }
        verification.dead_lettered = dead;
    }
    if plan.groups.iter().any(|g| g.forward_ratio > 0.0) {
        forwarding_check(shared, kind, &mut verification, notes);
    }
    verification.passed = verification.failures.is_empty();
    if kind.is_sql() && !plan.groups.is_empty() {
        notes
            .push("SQL consumers poll (no long-poll in SQL): an empty pop sleeps 10 ms".to_owned());
    }
    match kind {
        TargetKind::Raw(_, n) | TargetKind::Ceiling(_, n) => notes.push(format!(
            "{} target: {n} PostgreSQL connections shared by the virtual users",
            kind.name()
        )),
        TargetKind::Broker(_) => {}
    }
    Ok(verification)
}

fn forwarding_check(
    shared: &Shared,
    kind: &TargetKind,
    verification: &mut Verification,
    notes: &mut Vec<String>,
) {
    let forwarded = shared
        .forwarded
        .lock()
        .map(|f| f.clone())
        .unwrap_or_default();
    let arrived = shared
        .downstream
        .lock()
        .map(|d| d.clone())
        .unwrap_or_default();
    let missing = forwarded
        .iter()
        .filter(|k| !arrived.contains_key(k))
        .count();
    let twice = arrived.values().filter(|n| **n > 1).count();
    notes.push(format!(
        "{} messages forwarded through {}; {} arrived downstream, {missing} missing, {twice} more than once",
        forwarded.len(),
        if kind.is_sql() {
            "one SQL transaction (ack + push)"
        } else {
            "POST /api/v1/transaction"
        },
        arrived.len()
    ));
    if missing > 0 || twice > 0 {
        verification
            .failures
            .push(format!("forwarding: {missing} missing, {twice} duplicated"));
    }
}

/// `cpu` seconds per `n` things, in `unit`s of a second (1e6: µs); None for no things.
fn per(cpu: f64, n: u64, unit: f64) -> Option<f64> {
    (n > 0).then(|| cpu * unit / n as f64)
}

fn summary(shared: &Shared, window: &Window, verification: &Verification) -> Summary {
    let plan = &shared.plan;
    let [pushed, delivered, acked, errors, requests] =
        std::array::from_fn(|i| window.end[i] - window.start[i]);
    let pg = window.telemetry.as_ref().map(|t| t.pg_cpu_secs);
    let broker = window.telemetry.as_ref().and_then(|t| t.broker_cpu_secs);
    let consumes = !plan.groups.is_empty();
    let delivered_to_pushed = (consumes && pushed > 0)
        .then(|| delivered as f64 / (pushed as f64 * plan.groups.len() as f64));
    Summary {
        pushed,
        push_requests: requests,
        delivered,
        acked,
        errors,
        push_rate: pushed as f64 / window.secs,
        deliver_rate: delivered as f64 / window.secs,
        delivered_per_group: verification.delivered_per_group.clone(),
        backlog_at_end: window.backlog,
        pg_cpu_us_per_pushed: pg.and_then(|c| per(c, pushed, 1e6)),
        pg_cpu_ms_per_push_call: pg.and_then(|c| per(c, requests, 1e3)),
        pg_cpu_us_per_delivered: pg.and_then(|c| per(c, delivered, 1e6)),
        broker_cpu_us_per_pushed: broker.and_then(|c| per(c, pushed, 1e6)),
        delivered_to_pushed,
        kept_pace: delivered_to_pushed.map(|r| r >= KEPT_PACE_MIN),
        retention_deleted: window.retention_deleted,
    }
}

/// The run's report.
#[allow(clippy::too_many_arguments)]
pub fn report(
    shared: &Shared,
    kind: &TargetKind,
    system: &System,
    environment: Environment,
    window: Window,
    verification: Verification,
    retention_deleted: Option<u64>,
    notes: Vec<String>,
) -> RunReport {
    let plan = &shared.plan;
    let end = super::counts(shared);
    let totals = Totals {
        pushed: end[0],
        push_requests: end[4],
        delivered: end[1],
        acked: end[2],
        errors: end[3],
        latency_observations: shared.stats.observations(),
        retention_deleted,
    };
    let summary = summary(shared, &window, &verification);
    RunReport {
        scenario: plan.name.clone(),
        target: kind.name().to_owned(),
        started_at: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        duration_secs: window.secs,
        settings: json!({
            "description": plan.description,
            "queues": plan.queues,
            "partitions_per_queue": plan.partitions,
            "producers": plan.producers,
            "messages_per_push": plan.items_per_push,
            "layout": format!("{:?}", plan.layout).to_lowercase(),
            "payload": format!("{:?}", plan.payload).to_lowercase(),
            "pad_bytes": plan.pad,
            "offered_rate": plan.rate,
            "groups": plan.groups.iter().map(|g| json!({"name": g.key(), "consumers": g.consumers,
                "handler_delay_ms": g.handler_delay.as_secs_f64() * 1000.0,
                "fail_ratio": g.fail_ratio, "forward_ratio": g.forward_ratio})).collect::<Vec<_>>(),
            "pop_batch": plan.pop_batch,
            "pop_partitions": plan.pop_partitions,
            "auto_ack": plan.auto_ack,
            "prefill": plan.prefill,
            "stored": plan.stored,
            "retention": plan.retention.map(|r| json!({"span_secs": r.span.as_secs_f64(),
                "interval_ms": r.interval.as_millis() as u64, "batch": r.batch})),
            "poison_ratio": plan.poison_ratio,
            "warmup_secs": plan.warmup.as_secs_f64(),
        }),
        environment: Environment {
            broker_settings: system
                .broker_settings
                .iter()
                .cloned()
                .collect::<BTreeMap<_, _>>(),
            ..environment
        },
        summary,
        timeline: window.timeline,
        latency: shared.stats.series(),
        verification,
        telemetry: window.telemetry,
        notes,
        totals,
    }
}

#[cfg(test)]
mod tests {
    use super::per;

    #[test]
    fn cost_per_thing() {
        assert_eq!(per(2.0, 0, 1e6), None);
        assert_eq!(per(2.0, 4, 1e6), Some(500_000.0));
        assert_eq!(per(0.5, 1_000, 1e3), Some(0.5));
    }
}
