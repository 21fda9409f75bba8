//! Output: text, JSON (`crashdoc/lint-v1`, docs/lint.md) and SARIF 2.1.0.
//! Every message and fix goes through crashdoc-core's redaction: a token
//! written into a manifest's command line never reaches the output.

use crate::checks::{ALL, Check, Severity};
use crate::{Finding, Report};
use crashdoc_core::redact::redact;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// The JSON schema id of `--format json`.
pub const SCHEMA: &str = "crashdoc/lint-v1";

fn clean(s: &str) -> String {
    s.lines()
        .map(|l| redact(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The terminal report.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.findings {
        let _ = writeln!(
            out,
            "{}:{}: {}[{}] {}{}: {} (leads to {})",
            f.source.file,
            f.source.line,
            f.check.severity.word(),
            f.check.id,
            f.object(),
            f.source
                .template
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default(),
            clean(&f.message),
            f.check.cause.id()
        );
        if !f.fix.is_empty() {
            let _ = writeln!(out, "  fix:");
            for l in clean(&f.fix).lines() {
                let _ = writeln!(out, "    {l}");
            }
        }
    }
    let _ = writeln!(
        out,
        "{} error(s), {} warning(s) in {} object(s){}",
        r.count(Severity::Error),
        r.count(Severity::Warning),
        r.objects,
        if r.suppressed > 0 {
            format!("; {} suppressed", r.suppressed)
        } else {
            String::new()
        }
    );
    if let Some(c) = r.capacity.describe() {
        let _ = writeln!(out, "rollout capacity: {c}");
    }
    if !r.findings.is_empty() {
        let _ = writeln!(
            out,
            "`crashdoc explain CHECK-ID` tells why each one crash-loops."
        );
    }
    out
}

fn finding_json(f: &Finding) -> Value {
    json!({
        "check": f.check.id,
        "severity": f.check.severity,
        "cause": f.check.cause.id(),
        "file": f.source.file,
        "line": f.source.line,
        "field": f.source.field,
        "template": f.source.template,
        "object": {"kind": f.kind, "namespace": f.namespace, "name": f.name},
        "container": f.container,
        "message": clean(&f.message),
        "fix": clean(&f.fix),
    })
}

/// `--format json`.
pub fn json(r: &Report) -> Value {
    let mut v = json!({
        "schema": SCHEMA,
        "objects": r.objects,
        "summary": {
            "errors": r.count(Severity::Error),
            "warnings": r.count(Severity::Warning),
            "suppressed": r.suppressed,
        },
        "findings": r.findings.iter().map(finding_json).collect::<Vec<_>>(),
    });
    if let Some(d) = r.capacity.describe() {
        v["capacity"] = json!({
            "gpu": r.capacity.gpu,
            "memory_bytes": r.capacity.memory,
            "source": d,
        });
    }
    v
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn rule(c: &Check) -> Value {
    let mut md = String::new();
    for (h, t) in c.sections() {
        if h.starts_with("Example") {
            let _ = write!(md, "**{h}**\n\n```yaml\n{t}```\n\n");
        } else {
            let _ = write!(md, "**{h}**: {t}\n\n");
        }
    }
    json!({
        "id": c.id,
        "name": c.id.replace(['/', '-'], "_"),
        "shortDescription": {"text": c.what},
        "fullDescription": {"text": format!("{} {}", c.what, c.why)},
        "help": {"text": format!("{}\nFix: {}", c.why, c.fix), "markdown": md.trim_end()},
        "defaultConfiguration": {"level": level(c.severity)},
        "properties": {"cause": c.cause.id(), "tags": [c.cause.id(), "crash-loop"]},
    })
}

/// A file name as a SARIF artifact URI (a relative reference; `stdin` stays as is).
fn uri(file: &str) -> String {
    let mut s = String::new();
    for b in file.trim_start_matches("./").bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                s.push(b as char)
            }
            _ => {
                let _ = write!(s, "%{b:02X}");
            }
        }
    }
    s
}

/// `--format sarif`: SARIF 2.1.0, one run, every check as a rule.
pub fn sarif(r: &Report, version: &str) -> Value {
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let idx = ALL.iter().position(|c| c.id == f.check.id).unwrap_or(0);
            json!({
                "ruleId": f.check.id,
                "ruleIndex": idx,
                "level": level(f.check.severity),
                "message": {"text": format!("{} (leads to {})\nfix:\n{}", clean(&f.message), f.check.cause.id(), clean(&f.fix))},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&f.source.file)},
                        "region": {"startLine": f.source.line.max(1)},
                    },
                    "logicalLocations": [{
                        "fullyQualifiedName": format!("{}.{}", f.object(), f.source.field),
                        "kind": "object",
                    }],
                }],
                "properties": {"cause": f.check.cause.id(), "field": f.source.field, "fix": clean(&f.fix)},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "crashdoc",
                "semanticVersion": version,
                "informationUri": "https://example.invalid/crashdoc",
                "rules": ALL.iter().map(|c| rule(c)).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    })
}

/// `crashdoc explain CHECK-ID`.
pub fn explain(c: &Check) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} — lint check, {}; leads to {}: {}\n",
        c.id,
        c.severity.word(),
        c.cause.id(),
        c.cause.title()
    );
    for (h, t) in c.sections() {
        let _ = writeln!(out, "{h}:");
        for l in t.lines() {
            let _ = writeln!(out, "  {l}");
        }
        let _ = writeln!(out);
    }
    out
}

/// The lint checks that prevent a cause, appended to `crashdoc explain
/// CAUSE`: empty when none does.
pub fn preventing(cause: crashdoc_core::Cause) -> String {
    let list: Vec<_> = ALL.iter().filter(|c| c.cause == cause).collect();
    if list.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nLint checks that catch it before it ships (`crashdoc lint`):\n");
    for c in list {
        let _ = writeln!(s, "  {:48} {}", c.id, c.severity.word());
    }
    s
}

/// `crashdoc lint --list`.
pub fn list() -> String {
    let mut out = String::new();
    for c in ALL {
        let _ = writeln!(
            out,
            "{:48} {:7} {:20} {}",
            c.id,
            c.severity.word(),
            c.cause.id(),
            c.what
        );
    }
    out
}

#[cfg(test)]
mod preventing_tests {
    use super::*;

    #[test]
    fn preventing_lists_the_checks_of_the_cause_and_no_other() {
        let cause = ALL[0].cause;
        let text = preventing(cause);
        assert!(text.starts_with("\nLint checks that catch it"), "{text}");
        for c in ALL {
            let line = format!("  {:48} {}", c.id, c.severity.word());
            assert_eq!(text.contains(&line), c.cause == cause, "{}: {text}", c.id);
        }
    }
}
