//! Run reports: JSON, a Markdown summary and SVG charts under `bench/results/<date>-<scenario>/`.
//!
//! (Placeholder: writes the JSON only until the report writer lands.)

use std::path::Path;

use anyhow::Context as _;

use crate::model::{RunReport, ScalingPoint};

/// Writes one run: `<target>.json` and its charts into `dir` (created if missing).
///
/// # Errors
/// A file cannot be written.
pub fn write_run(dir: &Path, report: &RunReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!("{}.json", report.target));
    let json = serde_json::to_vec_pretty(report)?;
    std::fs::write(&path, json).with_context(|| format!("write {}", path.display()))
}

/// Writes `README.md` of a result directory: every run in it side by side, with the ratio of each
/// broker figure to the raw ceiling when both targets ran.
///
/// # Errors
/// A file cannot be written.
pub fn write_summary(dir: &Path, runs: &[RunReport]) -> anyhow::Result<()> {
    let _ = (dir, runs);
    Ok(())
}

/// Writes the partition-scaling curve (`scaling.svg`, `scaling.json`) of a `hi-part` sweep.
///
/// # Errors
/// A file cannot be written.
pub fn write_scaling(dir: &Path, points: &[ScalingPoint]) -> anyhow::Result<()> {
    let _ = (dir, points);
    Ok(())
}
