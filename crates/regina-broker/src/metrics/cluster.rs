//! The cluster gauges of `GET /metrics/prometheus` (http-api.md §3.1): queue depth, consumer lag
//! and DLQ depth, which describe the whole database rather than this instance. They are read at
//! each scrape from the stats tables the leader refreshes every `STATS_INTERVAL_MS` (one cheap
//! statement, bounded by `METRICS_QUEUE_LABELS_MAX` queues), so every instance reports the same
//! values: aggregate them with `max` across instances, not `sum`.

use prometheus::{Encoder as _, GaugeVec, Opts, Registry, TextEncoder};

use crate::db::stats::ClusterGauge;

/// The families: name (without the `regina_` prefix), help, whether it has a `group` label.
const FAMILIES: [(&str, &str, bool); 4] = [
    (
        "queue_depth",
        "Messages of the queue not yet settled by every group, as of the last stats refresh.",
        false,
    ),
    (
        "dlq_depth",
        "Dead-letter entries of the queue, as of the last stats refresh.",
        false,
    ),
    (
        "consumer_lag_messages",
        "Messages of the queue the group has not settled, as of the last stats refresh.",
        true,
    ),
    (
        "consumer_lag_seconds",
        "Age of the group's oldest unsettled message on the queue, as of the last stats refresh.",
        true,
    ),
];

/// The text exposition of `gauges` (empty when there are none), with the library's escaping.
pub(crate) fn render(gauges: &[ClusterGauge]) -> String {
    let registry =
        Registry::new_custom(Some("regina".to_owned()), None).expect("a constant, valid prefix");
    for (name, help, grouped) in FAMILIES {
        let labels: &[&str] = if grouped {
            &["queue", "group"]
        } else {
            &["queue"]
        };
        let family = GaugeVec::new(Opts::new(name, help), labels).expect("valid constant labels");
        let mut used = false;
        for gauge in gauges.iter().filter(|g| g.metric == name) {
            let group = gauge.group.as_deref().unwrap_or_default();
            let values: &[&str] = if grouped {
                &[&gauge.queue, group]
            } else {
                &[&gauge.queue]
            };
            family.with_label_values(values).set(gauge.value);
            used = true;
        }
        if used && registry.register(Box::new(family)).is_err() {
            tracing::error!(family = name, "cluster gauge family registered twice");
        }
    }
    let mut out = Vec::new();
    if let Err(error) = TextEncoder::new().encode(&registry.gather(), &mut out) {
        tracing::error!(%error, "cluster gauges could not be encoded");
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauge(metric: &str, queue: &str, group: Option<&str>, value: f64) -> ClusterGauge {
        ClusterGauge {
            metric: metric.to_owned(),
            queue: queue.to_owned(),
            group: group.map(str::to_owned),
            value,
        }
    }

    #[test]
    fn gauges_render_with_their_labels_and_escaping() {
        let text = render(&[
            gauge("queue_depth", "orders", None, 5.0),
            gauge("queue_depth", "we\"ird\\q", None, 1.0),
            gauge("consumer_lag_seconds", "orders", Some("billing"), 12.5),
        ]);
        assert!(text.contains("# TYPE regina_queue_depth gauge"), "{text}");
        assert!(
            text.contains("regina_queue_depth{queue=\"orders\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("regina_queue_depth{queue=\"we\\\"ird\\\\q\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("regina_consumer_lag_seconds{group=\"billing\",queue=\"orders\"} 12.5"),
            "{text}"
        );
        assert!(
            !text.contains("dlq_depth"),
            "families without values are left out: {text}"
        );
    }

    #[test]
    fn no_gauges_render_nothing() {
        assert_eq!(render(&[]), "");
    }
}
