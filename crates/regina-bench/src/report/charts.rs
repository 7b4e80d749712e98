//! SVG charts of a run (plotters' SVG backend: text is left to the viewer's sans-serif font, so
//! nothing here needs fonts or system libraries). Each function returns None when it has nothing
//! to draw.

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::format;
use crate::model::{IntervalSample, ScalingPoint, TelemetrySample};

const WIDTH: u32 = 960;
const HEIGHT: u32 = 420;
const PANEL_HEIGHT: u32 = 260;
/// Lines with at most this many points get a marker at each.
const MARKED_POINTS_MAX: usize = 30;

/// Wait classes in stacking order (bottom first) with their colours, the same in every chart.
/// Classes not listed here stack above these in name order, in [`OTHER_COLOR`].
pub const WAIT_CLASSES: &[(&str, RGBColor)] = &[
    ("CPU", RGBColor(0x2c, 0xa0, 0x2c)),
    ("IO", RGBColor(0x1f, 0x77, 0xb4)),
    ("LWLock", RGBColor(0xe3, 0x77, 0xc2)),
    ("Lock", RGBColor(0xd6, 0x27, 0x28)),
    ("IPC", RGBColor(0xff, 0x7f, 0x0e)),
    ("Client", RGBColor(0x9e, 0xda, 0xe5)),
    ("BufferPin", RGBColor(0x17, 0xbe, 0xcf)),
    ("Timeout", RGBColor(0xbc, 0xbd, 0x22)),
    ("Activity", RGBColor(0xc7, 0xc7, 0xc7)),
    ("Extension", RGBColor(0x8c, 0x56, 0x4b)),
];

/// Colour of wait classes missing from [`WAIT_CLASSES`].
pub const OTHER_COLOR: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);

const BLUE_DARK: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const BLUE_LIGHT: RGBColor = RGBColor(0x84, 0xb6, 0xdb);
const ORANGE_DARK: RGBColor = RGBColor(0xe6, 0x6b, 0x00);
const ORANGE_LIGHT: RGBColor = RGBColor(0xff, 0xbb, 0x78);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const PURPLE: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const BROWN: RGBColor = RGBColor(0x8c, 0x56, 0x4b);

/// One line of a chart.
struct Line {
    name: &'static str,
    color: RGBColor,
    width: u32,
    points: Vec<(f64, f64)>,
}

impl Line {
    fn new(name: &'static str, color: RGBColor, width: u32, points: Vec<(f64, f64)>) -> Line {
        Line {
            name,
            color,
            width,
            points,
        }
    }

    /// Has something other than zeros.
    fn has_data(&self) -> bool {
        self.points.iter().any(|&(_, y)| y > 0.0)
    }
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("chart: {e}")
}

/// Draws `lines` (those with data) on `area` with a shared time axis `0..x_max`.
fn draw_lines(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    y_desc: &str,
    x_max: f64,
    lines: &[Line],
) -> anyhow::Result<()> {
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|&(_, y)| y))
        .fold(0.0_f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.25 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max.max(1.0), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format::compact(*x))
        .y_label_formatter(&|y| format::compact(*y))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(err)?;
    for line in lines.iter().filter(|l| l.has_data()) {
        let color = line.color;
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(line.width),
            ))
            .map_err(err)?
            .label(line.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
            });
        // Short runs: mark the samples (a single one would otherwise not show at all).
        if line.points.len() <= MARKED_POINTS_MAX {
            chart
                .draw_series(
                    line.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, color.filled())),
                )
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xbb, 0xbb, 0xbb))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// A single-panel line chart, or None when no line has data.
fn line_chart(title: &str, y_desc: &str, lines: Vec<Line>) -> anyhow::Result<Option<String>> {
    panels_chart(vec![(title, y_desc, lines)])
}

/// Line charts stacked vertically on one time axis, one per panel with data; None when no panel
/// has any.
fn panels_chart(panels: Vec<Panel<'_>>) -> anyhow::Result<Option<String>> {
    let panels: Vec<Panel<'_>> = panels
        .into_iter()
        .filter(|(_, _, lines)| lines.iter().any(Line::has_data))
        .collect();
    if panels.is_empty() {
        return Ok(None);
    }
    let x_max = panels
        .iter()
        .map(|(_, _, lines)| x_max(lines))
        .fold(1.0_f64, f64::max);
    let height = if panels.len() == 1 {
        HEIGHT
    } else {
        PANEL_HEIGHT * u32::try_from(panels.len()).unwrap_or(1)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let areas = root.split_evenly((panels.len(), 1));
        for (area, (title, y_desc, lines)) in areas.iter().zip(&panels) {
            draw_lines(area, title, y_desc, x_max, lines)?;
        }
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

/// A panel: title, y-axis description and its lines.
type Panel<'a> = (&'a str, &'a str, Vec<Line>);

fn x_max(lines: &[Line]) -> f64 {
    lines
        .iter()
        .flat_map(|l| l.points.iter().map(|&(x, _)| x))
        .fold(1.0_f64, f64::max)
}

/// Interval lengths of a timeline whose `t_secs` are interval ends (the first starts at 0).
fn interval_secs(t: &[f64]) -> Vec<f64> {
    let mut last = 0.0;
    t.iter()
        .map(|&t| {
            let dt = t - last;
            last = t;
            if dt > 0.0 {
                dt
            } else {
                1.0
            }
        })
        .collect()
}

/// Pushed, delivered and acknowledged messages per second over the run.
pub fn throughput(timeline: &[IntervalSample]) -> anyhow::Result<Option<String>> {
    let t: Vec<f64> = timeline.iter().map(|s| s.t_secs).collect();
    let dt = interval_secs(&t);
    let series = |f: fn(&IntervalSample) -> u64| -> Vec<(f64, f64)> {
        timeline
            .iter()
            .zip(&dt)
            .map(|(s, dt)| (s.t_secs, f(s) as f64 / dt))
            .collect()
    };
    line_chart(
        "Throughput",
        "messages/s",
        vec![
            Line::new("pushed", BLUE_DARK, 2, series(|s| s.pushed)),
            Line::new("delivered", GREEN, 2, series(|s| s.delivered)),
            Line::new("acked", ORANGE_DARK, 2, series(|s| s.acked)),
        ],
    )
}

/// Push and end-to-end latency p50 and p99 per interval (intervals without observations are
/// left out).
pub fn latency(timeline: &[IntervalSample]) -> anyhow::Result<Option<String>> {
    let series = |f: fn(&IntervalSample) -> f64| -> Vec<(f64, f64)> {
        timeline
            .iter()
            .filter(|s| f(s) > 0.0)
            .map(|s| (s.t_secs, f(s)))
            .collect()
    };
    panels_chart(vec![
        (
            "Push latency per interval",
            "milliseconds",
            vec![
                Line::new("push p50", BLUE_LIGHT, 2, series(|s| s.push_p50_ms)),
                Line::new("push p99", BLUE_DARK, 2, series(|s| s.push_p99_ms)),
            ],
        ),
        (
            "End-to-end latency per interval (push sent → delivered)",
            "milliseconds",
            vec![
                Line::new("e2e p50", ORANGE_LIGHT, 2, series(|s| s.e2e_p50_ms)),
                Line::new("e2e p99", ORANGE_DARK, 2, series(|s| s.e2e_p99_ms)),
            ],
        ),
    ])
}

/// The wait classes of `samples` in stacking order with their colours.
pub fn wait_classes(samples: &[TelemetrySample]) -> Vec<(String, RGBColor)> {
    let mut seen: std::collections::BTreeSet<&str> = samples
        .iter()
        .flat_map(|s| s.active_sessions.keys().map(String::as_str))
        .collect();
    let mut out = Vec::new();
    for (class, color) in WAIT_CLASSES {
        if seen.remove(class) {
            out.push(((*class).to_owned(), *color));
        }
    }
    out.extend(seen.into_iter().map(|c| (c.to_owned(), OTHER_COLOR)));
    out
}

/// Active sessions by wait class, stacked; each snapshot is drawn over the interval it closes.
pub fn active_sessions(samples: &[TelemetrySample]) -> anyhow::Result<Option<String>> {
    let classes = wait_classes(samples);
    if classes.is_empty() {
        return Ok(None);
    }
    let t: Vec<f64> = samples.iter().map(|s| s.t_secs).collect();
    let mut lower = vec![0.0_f64; samples.len()];
    let mut bands = Vec::new();
    for (class, color) in &classes {
        let upper: Vec<f64> = samples
            .iter()
            .zip(&lower)
            .map(|(s, lo)| lo + f64::from(s.active_sessions.get(class).copied().unwrap_or(0)))
            .collect();
        bands.push((class.clone(), *color, lower.clone(), upper.clone()));
        lower = upper;
    }
    let y_max = lower.iter().copied().fold(0.0_f64, f64::max).max(1.0) * 1.15;
    let x_max = t.iter().copied().fold(1.0_f64, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Active sessions by wait class (pg_stat_activity)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("active sessions")
            .x_label_formatter(&|x| format::compact(*x))
            .y_label_formatter(&|y| format::compact(*y))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(err)?;
        for (class, color, lo, hi) in &bands {
            let color = *color;
            // Steps: each snapshot holds for the interval it closes.
            let steps = |values: &[f64]| -> Vec<(f64, f64)> {
                let mut start = 0.0;
                let mut out = Vec::with_capacity(2 * values.len());
                for (&end, &v) in t.iter().zip(values) {
                    out.push((start, v));
                    out.push((end, v));
                    start = end;
                }
                out
            };
            let mut outline = steps(hi);
            outline.extend(steps(lo).into_iter().rev());
            chart
                .draw_series(std::iter::once(Polygon::new(outline, color.filled())))
                .map_err(err)?
                .label(class.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

/// Resource use over the run, in stacked panels sharing the time axis: CPU of the broker and of
/// PostgreSQL (percent of one core), the broker's RSS (MB), and WAL written (MB/s).
pub fn resources(samples: &[TelemetrySample]) -> anyhow::Result<Option<String>> {
    if samples.is_empty() {
        return Ok(None);
    }
    let broker_cpu: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.t_secs, s.broker_cpu_pct?)))
        .collect();
    let pg_cpu: Vec<(f64, f64)> = samples.iter().map(|s| (s.t_secs, s.pg_cpu_pct)).collect();
    let rss: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.t_secs, s.broker_rss_bytes? as f64 / 1e6)))
        .collect();
    let wal: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (s.t_secs, s.wal_bytes_per_sec / 1e6))
        .collect();
    let mut panels: Vec<Panel<'_>> = vec![(
        "CPU",
        "% of one core",
        vec![
            Line::new("broker", PURPLE, 2, broker_cpu),
            Line::new("PostgreSQL", BLUE_DARK, 2, pg_cpu),
        ],
    )];
    if !rss.is_empty() {
        panels.push((
            "Broker memory",
            "RSS, MB",
            vec![Line::new("broker RSS", PURPLE, 2, rss)],
        ));
    }
    panels.push(("WAL written", "MB/s", vec![Line::new("WAL", BROWN, 2, wal)]));
    panels_chart(panels)
}

/// Push and delivery rate against the number of partitions (logarithmic), or None without
/// points.
pub fn scaling(points: &[ScalingPoint]) -> anyhow::Result<Option<String>> {
    let points: Vec<&ScalingPoint> = points.iter().filter(|p| p.partitions > 0).collect();
    if points.is_empty() {
        return Ok(None);
    }
    let x_min = points.iter().map(|p| p.partitions).min().unwrap_or(1) as f64;
    let x_max = points.iter().map(|p| p.partitions).max().unwrap_or(1) as f64;
    let (x_min, x_max) = (x_min / 1.5, x_max * 1.5);
    let y_max = points
        .iter()
        .map(|p| p.push_rate.max(p.deliver_rate))
        .fold(0.0_f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.25 } else { 1.0 };
    let series = [
        (
            "push",
            BLUE_DARK,
            points
                .iter()
                .map(|p| (p.partitions as f64, p.push_rate))
                .collect::<Vec<_>>(),
        ),
        (
            "delivery",
            GREEN,
            points
                .iter()
                .map(|p| (p.partitions as f64, p.deliver_rate))
                .collect(),
        ),
    ];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Partition scaling", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("partitions (log scale)")
            .y_desc("messages/s")
            .x_label_formatter(&|x| format::compact(*x))
            .y_label_formatter(&|y| format::compact(*y))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(err)?;
        for (name, color, data) in series {
            chart
                .draw_series(LineSeries::new(data.iter().copied(), color.stroke_width(2)))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
            chart
                .draw_series(data.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sample(t: f64, sessions: &[(&str, u32)]) -> TelemetrySample {
        TelemetrySample {
            t_secs: t,
            broker_cpu_pct: Some(50.0),
            broker_rss_bytes: Some(30_000_000),
            pg_cpu_pct: 120.0,
            pg_rss_bytes: 0,
            active_sessions: sessions
                .iter()
                .map(|(c, n)| ((*c).to_owned(), *n))
                .collect::<BTreeMap<_, _>>(),
            wal_bytes_per_sec: 5e6,
        }
    }

    #[test]
    fn classes_stack_in_a_fixed_order() {
        let samples = [
            sample(1.0, &[("Lock", 1), ("CPU", 2)]),
            sample(2.0, &[("Zebra", 1), ("IO", 3)]),
        ];
        let names: Vec<String> = wait_classes(&samples).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["CPU", "IO", "Lock", "Zebra"]);
        let svg = active_sessions(&samples).expect("draws").expect("has data");
        assert!(svg.starts_with("<svg"));
        for class in &names {
            assert!(svg.contains(class.as_str()), "{class}");
        }
        assert!(active_sessions(&[sample(1.0, &[])])
            .expect("draws")
            .is_none());
    }

    #[test]
    fn empty_data_draws_nothing() {
        assert!(throughput(&[]).expect("ok").is_none());
        assert!(latency(&[IntervalSample::default()]).expect("ok").is_none());
        assert!(resources(&[]).expect("ok").is_none());
        assert!(scaling(&[]).expect("ok").is_none());
    }

    #[test]
    fn intervals() {
        assert_eq!(interval_secs(&[1.0, 2.0, 2.0, 4.0]), [1.0, 1.0, 1.0, 2.0]);
    }
}
