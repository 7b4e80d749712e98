//! HTTP request counters and durations by route template, method and status. Every label has a
//! bounded set of values: route templates come from the router (never the raw path), methods
//! outside the standard ones count as `other`, statuses are three digits.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use dashmap::DashMap;
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec};

/// The `route` of requests no route matched (unknown paths, and answers given before routing:
/// CORS preflights, `503` while overloaded or shutting down).
pub(crate) const UNMATCHED: &str = "unmatched";

/// The `method` label: the standard methods by name, anything else as `other`.
pub(crate) fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::HEAD => "HEAD",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// One route's series, resolved on first use.
struct RouteSeries {
    duration: Histogram,
    /// By (method, status).
    requests: DashMap<(&'static str, u16), IntCounter>,
}

/// `http_requests_total{route,method,status}` and `http_request_duration_seconds{route}`, with
/// their children cached per route so that counting a request takes shard reads and atomics.
pub(crate) struct HttpMetrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    routes: DashMap<Box<str>, Arc<RouteSeries>>,
}

impl HttpMetrics {
    /// Counts into the two families (already registered).
    pub(crate) fn new(requests: IntCounterVec, duration: HistogramVec) -> HttpMetrics {
        HttpMetrics {
            requests,
            duration,
            routes: DashMap::new(),
        }
    }

    /// Counts one answered request of `route` (a template, or [`UNMATCHED`]).
    pub(crate) fn answered(
        &self,
        route: &str,
        method: &Method,
        status: StatusCode,
        elapsed: Duration,
    ) {
        let series = self.route(route);
        series.duration.observe(elapsed.as_secs_f64());
        let method = method_label(method);
        let key = (method, status.as_u16());
        if let Some(counter) = series.requests.get(&key) {
            counter.inc();
            return;
        }
        let counter = self
            .requests
            .with_label_values(&[route, method, status.as_str()]);
        counter.inc();
        series.requests.insert(key, counter);
    }

    fn route(&self, route: &str) -> Arc<RouteSeries> {
        if let Some(series) = self.routes.get(route) {
            return series.clone();
        }
        self.routes
            .entry(route.into())
            .or_insert_with(|| {
                Arc::new(RouteSeries {
                    duration: self.duration.with_label_values(&[route]),
                    requests: DashMap::new(),
                })
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{HistogramOpts, Opts};

    use super::*;

    #[test]
    fn methods_outside_the_standard_set_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let odd = Method::from_bytes(b"BREW").expect("a valid token");
        assert_eq!(method_label(&odd), "other");
    }

    #[test]
    fn requests_are_counted_by_route_method_and_status() {
        let requests = IntCounterVec::new(
            Opts::new("requests", "test"),
            &["route", "method", "status"],
        )
        .expect("valid family");
        let duration =
            HistogramVec::new(HistogramOpts::new("duration", "test"), &["route"]).expect("valid");
        let http = HttpMetrics::new(requests.clone(), duration.clone());
        let ms = Duration::from_millis(3);
        http.answered("/a/{x}", &Method::GET, StatusCode::OK, ms);
        http.answered("/a/{x}", &Method::GET, StatusCode::OK, ms);
        http.answered("/a/{x}", &Method::POST, StatusCode::BAD_REQUEST, ms);
        http.answered(UNMATCHED, &Method::GET, StatusCode::NOT_FOUND, ms);
        let count = |labels: &[&str]| requests.with_label_values(labels).get();
        assert_eq!(count(&["/a/{x}", "GET", "200"]), 2);
        assert_eq!(count(&["/a/{x}", "POST", "400"]), 1);
        assert_eq!(count(&["unmatched", "GET", "404"]), 1);
        assert_eq!(
            duration.with_label_values(&["/a/{x}"]).get_sample_count(),
            3
        );
    }
}
