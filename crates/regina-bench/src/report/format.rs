//! Human-friendly numbers for reports: `12 345 msg/s`, `1.8 ms`, `52.1 MB`.
//!
//! Sizes are decimal (1 MB = 10^6 bytes). Thousands are separated by a plain space so that tables
//! read the same as plain text and on GitHub.

/// An integer with thousands separated by spaces: `12 345 678`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    // The first group takes what is left over from groups of three.
    let first = match digits.len() % 3 {
        0 => 3,
        r => r,
    };
    let (head, tail) = digits.split_at(first.min(digits.len()));
    let mut out = head.to_owned();
    for group in tail.as_bytes().chunks(3) {
        out.push(' ');
        out.push_str(std::str::from_utf8(group).unwrap_or_default());
    }
    out
}

/// A signed integer with thousands separated: `-1 234`.
pub fn thousands_signed(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n.unsigned_abs())
    }
}

/// A count with a unit: `12 345`, one decimal below 10 (`2.5`), `0` for zero.
fn count(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        "0".to_owned()
    } else if x < 10.0 {
        format!("{x:.1}")
    } else {
        thousands(x.round() as u64)
    }
}

/// A message rate: `12 345 msg/s`.
pub fn rate(per_sec: f64) -> String {
    format!("{} msg/s", count(per_sec))
}

/// A request rate: `1 234 req/s`.
pub fn req_rate(per_sec: f64) -> String {
    format!("{} req/s", count(per_sec))
}

/// A latency given in milliseconds: `0.42 ms`, `1.8 ms`, `12.3 ms`, `345 ms`, `1.23 s`.
pub fn ms(ms: f64) -> String {
    if !ms.is_finite() || ms <= 0.0 {
        "0 ms".to_owned()
    } else if ms < 1.0 {
        format!("{ms:.2} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

/// A duration in seconds: `0.35 s`, `12.3 s`, `123 s`.
pub fn secs(secs: f64) -> String {
    if !secs.is_finite() || secs <= 0.0 {
        "0 s".to_owned()
    } else if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 100.0 {
        format!("{secs:.1} s")
    } else {
        format!("{secs:.0} s")
    }
}

/// A size in bytes: `512 B`, `12.3 kB`, `52.1 MB`, `1.25 GB` (decimal units); negative sizes
/// (shrinking) keep their sign.
pub fn bytes(b: f64) -> String {
    if !b.is_finite() {
        return "–".to_owned();
    }
    if b < 0.0 {
        return format!("-{}", bytes(-b));
    }
    const UNITS: [(f64, &str); 4] = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    for (size, unit) in UNITS {
        if b >= size {
            let v = b / size;
            return if v < 10.0 {
                format!("{v:.2} {unit}")
            } else if v < 100.0 {
                format!("{v:.1} {unit}")
            } else {
                format!("{v:.0} {unit}")
            };
        }
    }
    format!("{b:.0} B")
}

/// A byte rate: `12.3 MB/s`.
pub fn byte_rate(per_sec: f64) -> String {
    format!("{}/s", bytes(per_sec))
}

/// A fraction as a percentage: `0.953` → `95.3 %`.
pub fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "–".to_owned();
    }
    let p = fraction * 100.0;
    if p.abs() >= 99.95 || p == 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// A ratio: `0.85×`, `12.3×`.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        "–".to_owned()
    } else if x < 10.0 {
        format!("{x:.2}×")
    } else {
        format!("{x:.1}×")
    }
}

/// An axis label: `950`, `12k`, `1.5M`.
pub fn compact(x: f64) -> String {
    let a = x.abs();
    let (v, suffix) = if a >= 1e9 {
        (x / 1e9, "G")
    } else if a >= 1e6 {
        (x / 1e6, "M")
    } else if a >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let text = if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    // `1.50k` → `1.5k`, `2.00` → `2`.
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text}{suffix}")
}

/// Text fit for one Markdown table cell: pipes escaped, line breaks flattened.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1 000");
        assert_eq!(thousands(12_345), "12 345");
        assert_eq!(thousands(1_234_567), "1 234 567");
        assert_eq!(thousands_signed(-1234), "-1 234");
        assert_eq!(thousands_signed(i64::MIN), "-9 223 372 036 854 775 808");
    }

    #[test]
    fn rates() {
        assert_eq!(rate(12_345.4), "12 345 msg/s");
        assert_eq!(rate(2.54), "2.5 msg/s");
        assert_eq!(rate(0.0), "0 msg/s");
        assert_eq!(rate(f64::NAN), "0 msg/s");
        assert_eq!(req_rate(1499.6), "1 500 req/s");
    }

    #[test]
    fn latencies_and_durations() {
        assert_eq!(ms(0.0), "0 ms");
        assert_eq!(ms(0.423), "0.42 ms");
        assert_eq!(ms(1.834), "1.8 ms");
        assert_eq!(ms(12.34), "12.3 ms");
        assert_eq!(ms(345.4), "345 ms");
        assert_eq!(ms(1234.0), "1.23 s");
        assert_eq!(secs(0.347), "0.35 s");
        assert_eq!(secs(12.34), "12.3 s");
        assert_eq!(secs(123.4), "123 s");
    }

    #[test]
    fn sizes() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(12_345.0), "12.3 kB");
        assert_eq!(bytes(52_100_000.0), "52.1 MB");
        assert_eq!(bytes(1_250_000_000.0), "1.25 GB");
        assert_eq!(bytes(-8_100_000.0), "-8.10 MB");
        assert_eq!(byte_rate(7_000_000.0), "7.00 MB/s");
    }

    #[test]
    fn fractions_and_axes() {
        assert_eq!(percent(0.953), "95.3 %");
        assert_eq!(percent(1.0), "100 %");
        assert_eq!(percent(0.0), "0 %");
        assert_eq!(ratio(0.8512), "0.85×");
        assert_eq!(ratio(f64::INFINITY), "–");
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(12_000.0), "12k");
        assert_eq!(compact(1_500.0), "1.5k");
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(0.0), "0");
        assert_eq!(cell("a | b\nc"), "a \\| b c");
    }
}
