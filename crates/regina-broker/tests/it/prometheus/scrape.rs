//! A scrape of `GET /metrics/prometheus`, read with a Prometheus text-format parser.

use std::collections::BTreeSet;

use openmetrics_parser::prometheus::parse_prometheus;
use openmetrics_parser::{
    HistogramValue, MetricsExposition, PrometheusType, PrometheusValue, Sample,
};

use crate::support::Api;

type Exposition = MetricsExposition<PrometheusType, PrometheusValue>;

/// One parsed exposition.
pub struct Metrics {
    pub parsed: Exposition,
    pub text: String,
}

/// Whether `sample` carries every pair of `labels`.
fn has_labels(sample: &Sample<PrometheusValue>, labels: &[(&str, &str)]) -> bool {
    let set = sample.get_labelset().expect("a label set");
    labels
        .iter()
        .all(|(k, v)| set.get_label_value(k) == Some(*v))
}

impl Metrics {
    /// `GET /metrics/prometheus`, checked for its headers and parsed by a text-format parser
    /// (which refuses malformed lines, duplicate series and broken histograms).
    pub async fn scrape(api: &Api) -> Metrics {
        let r = api.get("/metrics/prometheus").await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.header("content-type"),
            Some("text/plain; version=0.0.4; charset=utf-8")
        );
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        let parsed = parse_prometheus(&r.text)
            .unwrap_or_else(|e| panic!("not valid exposition text: {e:?}\n{}", r.text));
        Metrics {
            parsed,
            text: r.text,
        }
    }

    /// The samples of family `metric` carrying `labels`.
    fn samples<'a>(
        &'a self,
        metric: &str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample<PrometheusValue>> + 'a {
        self.parsed
            .families
            .get(metric)
            .into_iter()
            .flat_map(|f| f.iter_samples())
            .filter(move |s| has_labels(s, labels))
    }

    /// The sum of the counter or gauge samples of `metric` with `labels` (0 when none).
    pub fn value(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples(metric, labels)
            .map(|s| match &s.value {
                PrometheusValue::Counter(c) => c.value.as_f64(),
                PrometheusValue::Gauge(v) | PrometheusValue::Unknown(v) => v.as_f64(),
                other => panic!("{metric} is not a plain value: {other:?}"),
            })
            .sum()
    }

    /// The histogram `metric` with `labels` (exactly one series).
    pub fn histogram(&self, metric: &str, labels: &[(&str, &str)]) -> Option<HistogramValue> {
        let mut found = self.samples(metric, labels).map(|s| match &s.value {
            PrometheusValue::Histogram(h) => h.clone(),
            other => panic!("{metric} is not a histogram: {other:?}"),
        });
        let first = found.next();
        assert!(
            found.next().is_none(),
            "{metric} {labels:?} names several series"
        );
        first
    }

    /// Observations of histogram `metric` with `labels` (its `_count`; 0 without a series).
    pub fn observations(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        self.histogram(metric, labels)
            .and_then(|h| h.count)
            .map_or(0.0, |c| c as f64)
    }

    /// The sum of histogram `metric` with `labels`.
    pub fn histogram_sum(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        self.histogram(metric, labels)
            .and_then(|h| h.sum)
            .map_or(0.0, |s| s.as_f64())
    }

    /// Every label value of every sample.
    pub fn label_values(&self) -> BTreeSet<String> {
        self.parsed
            .families
            .values()
            .flat_map(|f| f.iter_samples())
            .flat_map(|s| {
                let set = s.get_labelset().expect("a label set");
                set.iter_values().cloned().collect::<Vec<_>>()
            })
            .collect()
    }

    /// Values of label `name` over the samples of `metric`.
    pub fn label_values_of(&self, metric: &str, name: &str) -> BTreeSet<String> {
        self.samples(metric, &[])
            .filter_map(|s| {
                let set = s.get_labelset().expect("a label set");
                set.get_label_value(name).map(str::to_owned)
            })
            .collect()
    }

    /// The families of the exposition.
    pub fn families(&self) -> BTreeSet<String> {
        self.parsed.families.keys().cloned().collect()
    }
}
