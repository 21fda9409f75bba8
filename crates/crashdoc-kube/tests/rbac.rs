//! The Helm chart's read rules against the RBAC every source declares: the
//! chart must grant what the collector reads, and nothing beyond
//! get/list/watch (the leader-election Lease aside).

use crashdoc_kube::sources::{FIRST_WAVE, SECOND_WAVE, all_rules};
use std::path::PathBuf;

#[derive(Debug, Clone)]
struct ChartRule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    resource_names: bool,
}

fn chart(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/helm/crashdoc/templates")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn flow_list(v: &str) -> Vec<String> {
    v.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty() || v.contains("\"\""))
        .collect()
}

/// The rules of a YAML rules list (template lines and comments skipped).
fn parse_rules(text: &str) -> Vec<ChartRule> {
    let mut out: Vec<ChartRule> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.starts_with("{{") || t.is_empty() {
            continue;
        }
        let (starts, t) = match t.strip_prefix("- ") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        if starts && key == "apiGroups" {
            out.push(ChartRule {
                groups: vec![],
                resources: vec![],
                verbs: vec![],
                resource_names: false,
            });
        }
        let Some(r) = out.last_mut() else { continue };
        match key {
            "apiGroups" => r.groups = flow_list(value),
            "resources" => r.resources = flow_list(value),
            "verbs" => r.verbs = flow_list(value),
            "resourceNames" => r.resource_names = true,
            _ => {}
        }
    }
    out
}

/// The body of a `{{- define "NAME" -}}` block of _helpers.tpl.
fn define(helpers: &str, name: &str) -> String {
    let start = format!("{{{{- define \"{name}\" -}}}}");
    let i = helpers
        .find(&start)
        .unwrap_or_else(|| panic!("no define {name}"))
        + start.len();
    let rest = &helpers[i..];
    // The block ends at the next define (or the end of the file).
    let end = rest.find("{{- define").unwrap_or(rest.len());
    rest[..end].to_string()
}

fn read_rules() -> Vec<ChartRule> {
    let helpers = chart("_helpers.tpl");
    let mut rules = parse_rules(&define(&helpers, "crashdoc.readRules"));
    rules.extend(parse_rules(&define(&helpers, "crashdoc.nodeRules")));
    rules
}

fn grants(rules: &[ChartRule], group: &str, resource: &str, verb: &str) -> bool {
    rules.iter().any(|r| {
        r.groups.iter().any(|g| g == group)
            && r.resources.iter().any(|x| x == resource)
            && r.verbs.iter().any(|v| v == verb)
    })
}

#[test]
fn the_chart_parses_into_the_rules_it_shows() {
    let rules = read_rules();
    assert!(rules.len() >= 8, "{rules:?}");
    assert!(grants(&rules, "", "pods/log", "get"));
    assert!(!grants(&rules, "", "pods/log", "list"));
    assert!(grants(&rules, "", "secrets", "get"));
    assert!(!grants(&rules, "", "secrets", "list"));
    assert!(grants(&rules, "metrics.k8s.io", "pods", "get"));
    assert!(grants(&rules, "", "nodes", "get"));
    assert!(!grants(&rules, "apps", "pods", "get"));
}

#[test]
fn the_chart_grants_every_rule_a_source_declares() {
    let rules = read_rules();
    let declared = all_rules();
    assert!(declared.len() >= FIRST_WAVE.len() + SECOND_WAVE.len());
    for (source, r) in declared {
        for verb in r.verbs {
            assert!(
                grants(&rules, r.group, r.resource, verb),
                "source {source} needs `{verb}` on {} but the chart's read rules do not grant it",
                r.qualified()
            );
        }
    }
}

#[test]
fn sources_and_the_chart_read_only() {
    for (source, r) in all_rules() {
        for v in r.verbs {
            assert!(
                matches!(*v, "get" | "list" | "watch"),
                "source {source} declares `{v}`"
            );
        }
    }
    for r in read_rules() {
        for v in &r.verbs {
            assert!(
                matches!(v.as_str(), "get" | "list" | "watch"),
                "the chart's read rules grant `{v}` on {:?}",
                r.resources
            );
        }
    }
    // rbac-read.yaml binds only those rules (no inline rule of its own).
    let read = chart("rbac-read.yaml");
    assert!(read.contains("include \"crashdoc.readRules\""));
    assert!(
        parse_rules(&read).is_empty(),
        "inline rules in rbac-read.yaml"
    );
    // The only write: crashdoc's own Lease.
    let lease = parse_rules(&chart("rbac-lease.yaml"));
    assert!(!lease.is_empty());
    for r in &lease {
        assert_eq!(r.groups, ["coordination.k8s.io"]);
        assert_eq!(r.resources, ["leases"]);
        for v in &r.verbs {
            assert!(
                matches!(v.as_str(), "get" | "update" | "patch" | "create"),
                "lease verb {v}"
            );
        }
        if r.verbs.iter().any(|v| v == "update" || v == "patch") {
            assert!(r.resource_names, "update/patch not restricted to the Lease");
        }
    }
}

#[test]
fn each_source_names_itself_and_its_rules() {
    let mut names: Vec<&str> = FIRST_WAVE
        .iter()
        .chain(SECOND_WAVE)
        .map(|s| s.name())
        .collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate source names");
    for s in FIRST_WAVE.iter().chain(SECOND_WAVE) {
        assert!(!s.rbac().is_empty(), "{} declares no rule", s.name());
    }
}
