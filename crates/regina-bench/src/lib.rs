//! Regina's benchmark harness as a library: the run model, resource telemetry and report writers.
//! The `regina-bench` binary (load generator and scenarios) is built on it.

pub mod model;
pub mod report;
pub mod telemetry;
