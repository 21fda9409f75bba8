//! Timestamps as kubectl prints them.

/// Seconds since the epoch for an RFC 3339 time (`2025-01-14T08:41:38Z`), an
/// RFC 2822 time as `kubectl describe` prints it (`Sat, 18 Feb 2023 17:21:12
/// +0100`), or seconds since midnight for a bare `19:06:20`.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim().trim_matches('"');
    if s.is_empty() {
        return None;
    }
    if let Ok(ts) = s.parse::<jiff::Timestamp>() {
        return Some(ts.as_second());
    }
    if let Ok(zdt) = jiff::fmt::rfc2822::parse(s) {
        return Some(zdt.timestamp().as_second());
    }
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() == 3 {
        let h: i64 = parts[0].parse().ok()?;
        let m: i64 = parts[1].parse().ok()?;
        let sec: f64 = parts[2].parse().ok()?;
        if h < 24 && m < 60 && sec < 61.0 {
            return Some(h * 3600 + m * 60 + sec as i64);
        }
    }
    None
}

/// `1h2m3s`-style rendering of a duration in seconds.
pub fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) if s == 0 => format!("{m}m"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let a = parse_timestamp("Sat, 18 Feb 2023 17:21:12 +0100").unwrap();
        let b = parse_timestamp("Sat, 18 Feb 2023 17:24:25 +0100").unwrap();
        assert_eq!(b - a, 193);
        let c = parse_timestamp("2025-01-14T08:41:17Z").unwrap();
        let d = parse_timestamp("\"2025-01-14T08:41:38Z\"").unwrap();
        assert_eq!(d - c, 21);
        assert_eq!(
            parse_timestamp("19:07:13").unwrap() - parse_timestamp("19:06:20").unwrap(),
            53
        );
        assert_eq!(parse_timestamp("garbage"), None);
        assert_eq!(human_duration(53), "53s");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
    }
}

/// A duration as the command line takes it: `90s`, `5m`, `1h`, `14d`, or
/// plain seconds (`--stable`, `--since`, `--retention`; the MCP server's
/// `since`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("`{s}` is not a duration like 90s, 5m, 1h or 14d");
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    Ok(std::time::Duration::from_secs(secs))
}

/// A `--since`: a duration before `now` (`2h`, `7d`) or an RFC 3339
/// instant (`2026-12-01T08:00:00Z`).
pub fn parse_since(s: &str, now: jiff::Timestamp) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    let d = parse_duration(s).map_err(|_| {
        format!("`{s}` is neither a duration like 2h or 7d nor a time like 2026-12-01T08:00:00Z")
    })?;
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    Ok(now
        .checked_sub(jiff::SignedDuration::from_secs(secs))
        .unwrap_or(jiff::Timestamp::MIN))
}

#[cfg(test)]
mod duration_tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn since_is_a_duration_ago_or_an_instant() {
        let now: jiff::Timestamp = "2026-12-02T03:00:00Z".parse().unwrap();
        assert_eq!(
            super::parse_since("2h", now).map(|t| t.to_string()),
            Ok("2026-12-02T01:00:00Z".to_string())
        );
        assert_eq!(
            super::parse_since("2026-11-30T08:00:00Z", now).map(|t| t.to_string()),
            Ok("2026-11-30T08:00:00Z".to_string())
        );
        // Near misses: a date without a time zone, a unit kubectl does not use.
        assert!(super::parse_since("2026-11-30 08:00", now).is_err());
        assert!(super::parse_since("2w", now).is_err());
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("14d"), Ok(Duration::from_secs(14 * 86_400)));
    }

    #[test]
    fn near_misses_are_refused() {
        for s in [
            "",
            "5 m",
            "5min",
            "h",
            "-5m",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
    }
}
