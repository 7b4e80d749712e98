//! `regina-bench`: Regina's load generator and benchmark harness.

fn main() {
    let _ = regina_bench::model::RunReport::default();
}
