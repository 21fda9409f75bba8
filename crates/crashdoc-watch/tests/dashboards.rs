//! The Grafana dashboard (deploy/grafana/crashdoc.json) and the alert rules
//! (deploy/helm/crashdoc/files/prometheus-rules.yaml) name only metrics that
//! `crashdoc watch` exports, and every query names at least one.

use crashdoc_watch::metrics::Metrics;
use std::collections::BTreeSet;
use std::path::Path;

fn repo_file(p: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The series names the exposition has, from its `# TYPE` lines: counters
/// as NAME_total, histograms as NAME_bucket/_sum/_count, gauges as NAME.
fn exported() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    // Labelled families show in the exposition once they have a child.
    let m = Metrics::new();
    m.restart(
        crashdoc_watch::metrics::RestartLabels {
            namespace: "ns".into(),
            owner_kind: "Deployment".into(),
            owner: "web".into(),
            container: "app".into(),
            reason: "Error".into(),
            exit_code: "1".into(),
        },
        1,
    );
    m.capture("full");
    m.diagnosis("ns", "Deployment", "web", "app-crash");
    m.notification("sent");
    for line in m.encode().lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut it = rest.split_whitespace();
        let (Some(name), Some(kind)) = (it.next(), it.next()) else {
            continue;
        };
        match kind {
            "counter" => {
                names.insert(format!("{name}_total"));
            }
            "histogram" => {
                for s in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{s}"));
                }
            }
            _ => {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// PromQL words that are not metric names.
const KEYWORDS: &[&str] = &[
    // aggregation operators, which may be followed by `by (...)` first
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
    "le",
];

/// The metric names a PromQL expression reads: identifiers outside label
/// matchers, strings, ranges and grouping clauses that are not function
/// calls, keywords or dashboard variables.
fn metric_names(expr: &str) -> Vec<String> {
    let mut cleaned = String::new();
    let (mut depth_brace, mut depth_bracket, mut in_str) = (0, 0, None::<char>);
    for c in expr.chars() {
        if let Some(q) = in_str {
            if c == q {
                in_str = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => in_str = Some(c),
            '{' => depth_brace += 1,
            '}' => depth_brace -= 1,
            '[' => depth_bracket += 1,
            ']' => depth_bracket -= 1,
            _ if depth_brace > 0 || depth_bracket > 0 => {}
            _ => cleaned.push(c),
        }
        if matches!(c, '{' | '[') {
            cleaned.push(' ');
        }
    }
    let mut out = Vec::new();
    let chars: Vec<char> = cleaned.chars().collect();
    let mut i = 0;
    let mut skip_group = false;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if matches!(
                word.as_str(),
                "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
            ) {
                skip_group = true;
            } else if word.starts_with('$')
                || next == Some(&'(')
                || KEYWORDS.contains(&word.as_str())
            {
            } else {
                out.push(word);
            }
            continue;
        }
        if c == '(' && skip_group {
            // by (a, b): label names, not metrics.
            while i < chars.len() && chars[i] != ')' {
                i += 1;
            }
            skip_group = false;
        }
        i += 1;
    }
    out
}

/// Every `expr` (and templating query) of the dashboard.
fn dashboard_queries() -> Vec<String> {
    let d: serde_json::Value =
        serde_json::from_str(&repo_file("deploy/grafana/crashdoc.json")).expect("dashboard JSON");
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} has no query", p["title"]);
        for t in targets {
            out.push(t["expr"].as_str().expect("expr").to_string());
        }
    }
    for v in d["templating"]["list"].as_array().expect("templating") {
        if let Some(q) = v["query"]["query"].as_str() {
            // label_values(METRIC, label)
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|s| s.split(',').next())
                .expect("label_values(METRIC, label)");
            out.push(inner.to_string());
        }
    }
    out
}

/// Every `expr:` of the rules file, inline or as a `|` block (the chart's
/// placeholder for the threshold replaced by a number).
fn rule_exprs() -> Vec<String> {
    let text =
        repo_file("deploy/helm/crashdoc/files/prometheus-rules.yaml").replace("__RESTARTS__", "3");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(rest) = l.trim_start().strip_prefix("expr:") {
            let indent = l.len() - l.trim_start().len();
            let rest = rest.trim();
            if rest == "|" {
                let mut block = String::new();
                i += 1;
                while i < lines.len()
                    && (lines[i].trim().is_empty()
                        || lines[i].len() - lines[i].trim_start().len() > indent)
                {
                    block.push_str(lines[i].trim());
                    block.push(' ');
                    i += 1;
                }
                out.push(block);
                continue;
            }
            out.push(rest.to_string());
        }
        i += 1;
    }
    out
}

fn check(what: &str, queries: &[String]) {
    let exported = exported();
    assert!(queries.len() >= 5, "{what}: only {} queries", queries.len());
    for q in queries {
        let names = metric_names(q);
        assert!(
            names.iter().any(|n| n.starts_with("crashdoc_")),
            "{what}: `{q}` names no crashdoc metric"
        );
        for n in names {
            assert!(
                exported.contains(&n),
                "{what}: `{q}` names {n}, which crashdoc does not export ({exported:?})"
            );
        }
    }
}

#[test]
fn every_dashboard_query_names_an_exported_metric() {
    check("deploy/grafana/crashdoc.json", &dashboard_queries());
}

#[test]
fn every_alert_names_an_exported_metric() {
    let exprs = rule_exprs();
    assert_eq!(
        exprs.len(),
        repo_file("deploy/helm/crashdoc/files/prometheus-rules.yaml")
            .matches("- alert:")
            .count()
    );
    check("prometheus-rules.yaml", &exprs);
}

#[test]
fn the_dashboard_shows_what_the_issue_asks() {
    let all = dashboard_queries().join("\n");
    for (what, needle) in [
        (
            "restarts by reason",
            "sum by (reason) (increase(crashdoc_container_restarts_total",
        ),
        (
            "restarts by workload",
            "sum by (namespace, owner_kind, owner) (increase(crashdoc_container_restarts_total",
        ),
        (
            "top causes",
            "sum by (cause) (increase(crashdoc_diagnoses_total",
        ),
        (
            "capture latency",
            "crashdoc_capture_duration_seconds_bucket",
        ),
        ("queue depth", "crashdoc_capture_queue_depth"),
    ] {
        assert!(all.contains(needle), "no {what} panel");
    }
}

#[test]
fn the_checker_reads_metric_names_and_catches_strangers() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.95, sum by (le) (rate(crashdoc_capture_duration_seconds_bucket{job="x"}[$__rate_interval])))"#
        ),
        ["crashdoc_capture_duration_seconds_bucket"]
    );
    assert_eq!(
        metric_names("crashdoc_history_captures / (crashdoc_history_max_captures > 0) > 0.9"),
        ["crashdoc_history_captures", "crashdoc_history_max_captures"]
    );
    assert_eq!(
        metric_names(r#"sum without (kind) (rate(crashdoc_captures_total{kind="failed"}[15m]))"#),
        ["crashdoc_captures_total"]
    );
    // Near misses: a name crashdoc does not export, and a query without one.
    let exported = exported();
    assert!(!exported.contains("crashdoc_restarts_total"));
    assert!(exported.contains("crashdoc_container_restarts_total"));
    assert!(exported.contains("crashdoc_history_max_captures"));
    assert_eq!(metric_names("sum(up{job=\"crashdoc\"})"), ["up"]);
    let bad =
        std::panic::catch_unwind(|| check("x", &vec!["sum(crashdoc_restarts_total)".into(); 5]));
    assert!(bad.is_err(), "an unexported name passed");
    let bad = std::panic::catch_unwind(|| check("x", &vec!["sum(up)".into(); 5]));
    assert!(bad.is_err(), "a query naming no crashdoc metric passed");
}
