//! Line-level text helpers shared by the parsers and the log scanner.

use regex::Regex;
use std::sync::LazyLock;

/// Remove ANSI escape sequences and a trailing carriage return.
pub fn clean_line(s: &str) -> String {
    let s = s.strip_suffix('\r').unwrap_or(s);
    if !s.contains('\x1b') {
        return s.to_string();
    }
    static ANSI: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
            .expect("static regex")
    });
    ANSI.replace_all(s, "").into_owned()
}

/// Strip the prefixes that log shippers and kubectl put before the program's
/// own text: CRI (`2024-01-01T00:00:00Z stdout F `), `--timestamps`, and
/// `[pod/NAME/container]` from `kubectl logs --prefix`.
pub fn strip_log_prefix(s: &str) -> &str {
    static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^(?:\[pod/[^\]]+\]\s+)?(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)\s+(?:(?:stdout|stderr)\s+[FP]\s+)?)?",
        )
        .expect("static regex")
    });
    match PREFIX.find(s) {
        Some(m) => &s[m.end()..],
        None => s,
    }
}

/// Decode bytes as UTF-8, replacing invalid sequences.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Shorten a quoted line for display, keeping its start.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Whether the bytes look like text rather than a binary blob.
pub fn looks_textual(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.is_empty() {
        return true;
    }
    let bad = sample
        .iter()
        .filter(|&&b| b == 0 || (b < 0x09) || (0x0e..0x20).contains(&b) && b != 0x1b)
        .count();
    bad * 100 / sample.len() < 5
}

/// A resource quantity (`500m`, `1Gi`, `1.5e3`) as a number in base units
/// (`16Gi` -> bytes, `500m` -> 0.5). Shared by the revision diff and lint. Source:
/// k8s.io/apimachinery v0.36.3 pkg/api/resource/suffix.go (binary suffixes
/// Ki..Ei, decimal n u m k M G T P E, and exponents).
pub fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    Some(num * mult)
}

/// Parse a Kubernetes quantity of bytes (`512Mi`, `1G`, `30Mi`, `1.5Gi`, `2048`, `87608Ki`).
pub fn parse_bytes(q: &str) -> Option<u64> {
    let q = q.trim().trim_matches('"');
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mul: f64 = match unit.trim() {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GB" => 1e9,
        "MB" => 1e6,
        _ => return None,
    };
    Some((n * mul) as u64)
}

/// Render bytes as a Kubernetes quantity, rounded up to a tidy value.
pub fn format_bytes_quantity(bytes: u64) -> String {
    const MI: u64 = 1024 * 1024;
    const GI: u64 = 1024 * MI;
    if bytes >= GI {
        let gi = (bytes as f64 / GI as f64 * 2.0).ceil() / 2.0;
        if gi.fract() == 0.0 {
            format!("{}Gi", gi as u64)
        } else {
            format!("{}Mi", (gi * 1024.0) as u64)
        }
    } else {
        let mi = bytes.div_ceil(MI);
        let step = if mi > 256 {
            64
        } else if mi > 64 {
            16
        } else {
            8
        };
        format!("{}Mi", mi.div_ceil(step) * step)
    }
}

/// Where in `line` the keywords of an entry first occur, the latest of them
/// (ASCII case-insensitive), or 0. Wrapped errors (`a: b: c`, `0/3 nodes are available: 3
/// Insufficient cpu`) print the context first and the innermost cause last,
/// so among the entries that read a line, the one whose keyword stands
/// latest names the root.
pub fn innermost(line: &str, keywords: &[&str]) -> usize {
    let lower = line.to_ascii_lowercase();
    keywords
        .iter()
        .filter_map(|k| lower.find(&k.to_ascii_lowercase()))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {

    #[test]
    fn quantities_in_base_units() {
        assert_eq!(quantity("16Gi"), Some(16.0 * 1073741824.0));
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("1.5e3"), Some(1500.0));
        assert_eq!(quantity("2Ei"), Some(2.0 * 1024f64.powi(6)));
        assert!((quantity("100u").unwrap() - 1e-4).abs() < 1e-12);
        assert_eq!(quantity("1GB"), None);
        assert_eq!(quantity("lots"), None);
    }

    use super::*;

    #[test]
    fn prefixes_are_stripped() {
        assert_eq!(
            strip_log_prefix("2024-01-01T00:00:00.123Z stdout F hello"),
            "hello"
        );
        assert_eq!(strip_log_prefix("2024-01-01T00:00:00+01:00 hello"), "hello");
        assert_eq!(strip_log_prefix("[pod/x-1/app] panic: boom"), "panic: boom");
        assert_eq!(strip_log_prefix("plain"), "plain");
        assert_eq!(clean_line("\x1b[31mred\x1b[0m\r"), "red");
    }

    #[test]
    fn quantities() {
        assert_eq!(parse_bytes("30Mi"), Some(30 * 1024 * 1024));
        assert_eq!(parse_bytes("1.5Gi"), Some(1610612736));
        assert_eq!(parse_bytes("87608Ki"), Some(87608 * 1024));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(format_bytes_quantity(45 * 1024 * 1024), "48Mi");
        assert_eq!(format_bytes_quantity(3 * 1024 * 1024 * 1024 + 1), "3584Mi");
        assert_eq!(format_bytes_quantity(16 * 1024 * 1024 * 1024), "16Gi");
    }

    #[test]
    fn the_innermost_keyword_stands_last() {
        let m = "0/3 nodes are available: 3 Insufficient cpu.";
        assert!(innermost(m, &["Insufficient"]) > innermost(m, &["nodes are available"]));
        // Context repeated after the cause does not count.
        let p = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available";
        assert!(innermost(p, &["Insufficient"]) > innermost(p, &["nodes are available"]));
        assert_eq!(innermost(m, &["taint"]), 0);
    }
}
