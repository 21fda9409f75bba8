//! Rule fixtures, in the manner of clippy's UI tests: every case folder under
//! `tests/fixtures/rules/<cause-id>/<case-name>/` holds kubectl output named
//! as crashdoc reads it, next to an `expected.json`:
//!
//! - positive: `{"kind": "positive", "top": "<cause>", "container": "<name>" | null,
//!   "min_confidence": "low" | "medium" | "high"}` (container and
//!   min_confidence optional): the first diagnosis must be that cause.
//! - negative (near miss): `{"kind": "negative", "not_top": "<cause>", "top": "<cause>"}`
//!   (top optional): input that looks like the cause but is not.
//!
//! A positive case lives in the folder of its `top` cause, a negative one in
//! the folder of its `not_top` cause; every cause needs at least one of
//! each, `unknown` too (positive: the evidence is silent; near miss: the
//! same status with one line that names a cause). A case may carry `"known_gap": "<why>"`: its failure is a
//! known weakness of a rule, printed as a warning instead of failing the test.
//! Every diagnosis of every case must cite at least one piece of evidence,
//! known gap or not. `CRASHDOC_FIXTURES_VERBOSE=1` prints every case's
//! ranking.

use crashdoc_core::Cause;
use crashdoc_core::diagnose::Confidence;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::{name_of, sorted_dirs, warn};

fn fixtures_root() -> PathBuf {
    common::fixtures("rules")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Positive,
    Negative,
}

#[derive(Debug)]
struct Expected {
    kind: Kind,
    top: Option<Cause>,
    not_top: Option<Cause>,
    /// `Some(None)`: the top diagnosis must name no container.
    container: Option<Option<String>>,
    min_confidence: Option<Confidence>,
    known_gap: Option<String>,
}

fn parse_cause(v: &Value, field: &str) -> Result<Option<Cause>, String> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse::<Cause>()
            .map(Some)
            .map_err(|e| format!("`{field}`: {e}")),
        Some(other) => Err(format!("`{field}` must be a cause id, not {other}")),
    }
}

fn parse_expected(text: &str) -> Result<Expected, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v.as_object().ok_or("expected.json must hold an object")?;
    const FIELDS: &[&str] = &[
        "kind",
        "top",
        "not_top",
        "container",
        "min_confidence",
        "known_gap",
    ];
    if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!("unknown field `{k}`"));
    }
    let kind = match v.get("kind").and_then(Value::as_str) {
        Some("positive") => Kind::Positive,
        Some("negative") => Kind::Negative,
        other => {
            return Err(format!(
                "`kind` must be positive or negative, not {other:?}"
            ));
        }
    };
    let top = parse_cause(&v, "top")?;
    let not_top = parse_cause(&v, "not_top")?;
    let container = match v.get("container") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(s.clone())),
        Some(other) => return Err(format!("`container` must be a string or null, not {other}")),
    };
    let min_confidence = match v.get("min_confidence") {
        None => None,
        Some(Value::String(s)) => Some(match s.as_str() {
            "low" => Confidence::Low,
            "medium" => Confidence::Medium,
            "high" => Confidence::High,
            _ => return Err(format!("`min_confidence` {s:?} is not low, medium or high")),
        }),
        Some(other) => return Err(format!("`min_confidence` must be a string, not {other}")),
    };
    let known_gap = match v.get("known_gap") {
        None => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(_) => return Err("`known_gap` must be a non-empty sentence".into()),
    };
    match kind {
        Kind::Positive if top.is_none() => return Err("a positive case needs `top`".into()),
        Kind::Positive if not_top.is_some() => {
            return Err("a positive case has no `not_top`".into());
        }
        Kind::Negative if not_top.is_none() => {
            return Err("a negative case needs `not_top`".into());
        }
        Kind::Negative if container.is_some() || min_confidence.is_some() => {
            return Err("`container` and `min_confidence` are for positive cases".into());
        }
        _ => {}
    }
    if top.is_some() && top == not_top {
        return Err("`top` and `not_top` are the same cause".into());
    }
    Ok(Expected {
        kind,
        top,
        not_top,
        container,
        min_confidence,
        known_gap,
    })
}

/// What a case's rule checks found wrong (`rule`) and what is wrong whatever
/// the known gaps say (`hard`: evidence-less diagnoses, unreadable input).
#[derive(Default)]
struct Outcome {
    rule: Vec<String>,
    hard: Vec<String>,
    /// The ranked diagnoses, for the failure message.
    ranking: String,
}

fn run_case(dir: &Path, exp: &Expected) -> Outcome {
    let mut out = Outcome::default();
    let ev = match common::read_case(dir) {
        Ok(ev) => ev,
        Err(e) => {
            out.hard.push(format!("the input cannot be read: {e}"));
            return out;
        }
    };
    let report = crashdoc_core::diagnose::diagnose_all(&ev);
    for pod in &report.pods {
        for d in &pod.diagnoses {
            if d.evidence.is_empty() {
                out.hard.push(format!(
                    "diagnosis {} of pod {} cites no evidence",
                    d.cause,
                    pod.name.as_deref().unwrap_or("(unnamed)")
                ));
            }
        }
    }
    let Some(pod) = report.pods.first() else {
        out.hard.push("the report has no pod".into());
        return out;
    };
    out.ranking = pod
        .diagnoses
        .iter()
        .map(|d| {
            format!(
                "{} ({:?} {:.2}, container {})",
                d.cause,
                d.confidence,
                d.score,
                d.container.as_deref().unwrap_or("-")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let Some(first) = pod.diagnoses.first() else {
        out.rule.push("no diagnosis at all".into());
        return out;
    };
    if let Some(top) = exp.top
        && first.cause != top
    {
        out.rule
            .push(format!("expected top {top}, got {}", first.cause));
    }
    if let Some(not_top) = exp.not_top
        && first.cause == not_top
    {
        out.rule
            .push(format!("{not_top} must not be the top diagnosis"));
    }
    if let Some(want) = &exp.container
        && first.container != *want
    {
        out.rule.push(format!(
            "expected container {:?}, got {:?}",
            want, first.container
        ));
    }
    if let Some(min) = exp.min_confidence
        && first.confidence < min
    {
        out.rule.push(format!(
            "expected confidence at least {min:?}, got {:?}",
            first.confidence
        ));
    }
    out
}

#[test]
fn rule_fixtures() {
    let root = fixtures_root();
    let mut failures: Vec<String> = Vec::new();
    let mut gaps: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    // `unknown` is an answer too (the evidence is silent): it has its
    // cases like every cause.
    let mut coverage: BTreeMap<&'static str, (usize, usize)> =
        Cause::ALL.iter().map(|c| (c.id(), (0, 0))).collect();
    let (mut cases, mut passed) = (0usize, 0usize);
    // CRASHDOC_FIXTURES_VERBOSE=1 prints every case's ranking.
    let verbose = std::env::var_os("CRASHDOC_FIXTURES_VERBOSE").is_some();

    for cause_dir in sorted_dirs(&root) {
        let cause_name = name_of(&cause_dir);
        let folder_cause = match cause_name.parse::<Cause>() {
            Ok(c) => c,
            _ => {
                failures.push(format!("{cause_name}/: not a cause id (see Cause::ALL)"));
                continue;
            }
        };
        for case_dir in sorted_dirs(&cause_dir) {
            let case = format!("{cause_name}/{}", name_of(&case_dir));
            cases += 1;
            let exp = match std::fs::read_to_string(case_dir.join("expected.json"))
                .map_err(|e| format!("cannot read expected.json: {e}"))
                .and_then(|t| parse_expected(&t))
            {
                Ok(e) => e,
                Err(e) => {
                    failures.push(format!("{case}: {e}"));
                    continue;
                }
            };
            // The folder names the cause the case is about.
            let about = match exp.kind {
                Kind::Positive => exp.top,
                Kind::Negative => exp.not_top,
            };
            if about != Some(folder_cause) {
                let field = match exp.kind {
                    Kind::Positive => "top",
                    Kind::Negative => "not_top",
                };
                failures.push(format!(
                    "{case}: a {:?} case in folder {cause_name} must have `{field}` {cause_name}",
                    exp.kind
                ));
                continue;
            }
            let counts = coverage.get_mut(folder_cause.id()).expect("cause listed");
            match exp.kind {
                Kind::Positive => counts.0 += 1,
                Kind::Negative => counts.1 += 1,
            }

            let o = run_case(&case_dir, &exp);
            if verbose {
                warn(&format!("{case}: [{}]", o.ranking));
            }
            for h in &o.hard {
                failures.push(format!("{case}: {h}"));
            }
            match (&exp.known_gap, o.rule.is_empty()) {
                (None, true) => {
                    if o.hard.is_empty() {
                        passed += 1;
                    }
                }
                (None, false) => failures.push(format!(
                    "{case}: {}\n    diagnoses: [{}]",
                    o.rule.join("; "),
                    o.ranking
                )),
                (Some(why), false) => gaps.push(format!(
                    "{case}: {}\n    known gap: {why}\n    diagnoses: [{}]",
                    o.rule.join("; "),
                    o.ranking
                )),
                (Some(_), true) => {
                    if o.hard.is_empty() {
                        passed += 1;
                    }
                    notes.push(format!(
                        "{case}: marked known_gap but passes now; remove the marker"
                    ));
                }
            }
        }
    }

    for (id, (pos, neg)) in &coverage {
        if *pos == 0 {
            failures.push(format!("{id}: no positive case"));
        }
        if *neg == 0 {
            failures.push(format!("{id}: no negative (near miss) case"));
        }
    }

    for g in &gaps {
        warn(&format!("warning: {g}"));
    }
    for n in &notes {
        warn(&format!("note: {n}"));
    }
    warn(&format!(
        "rule fixtures: {cases} cases, {passed} pass, {} known gaps, {} failures",
        gaps.len(),
        failures.len()
    ));
    if !failures.is_empty() {
        panic!(
            "{} rule fixture problem(s):\n{}",
            failures.len(),
            failures
                .iter()
                .map(|f| format!("  - {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn expected_json_is_checked() {
    assert!(parse_expected(r#"{"kind": "positive", "top": "oom-killed"}"#).is_ok());
    assert!(parse_expected(r#"{"kind": "positive"}"#).is_err());
    assert!(parse_expected(r#"{"kind": "negative", "top": "app-crash"}"#).is_err());
    assert!(parse_expected(r#"{"kind": "negative", "not_top": "oom"}"#).is_err());
    assert!(parse_expected(r#"{"kind": "positive", "top": "oom-killed", "extra": 1}"#).is_err());
    let e = parse_expected(r#"{"kind": "positive", "top": "exit-zero", "container": null}"#)
        .expect("valid");
    assert_eq!(e.container, Some(None));
}

/// Every precedence a rule declares (`outranks`) is exercised by a fixture:
/// a case whose first diagnosis is the rule's cause while the outranked
/// cause is found too, so the declaration decides its order.
#[test]
fn every_declared_precedence_has_a_fixture() {
    let mut seen: Vec<(Cause, Vec<Cause>)> = Vec::new();
    for cause_dir in sorted_dirs(&fixtures_root()) {
        for case_dir in sorted_dirs(&cause_dir) {
            let Ok(ev) = common::read_case(&case_dir) else {
                continue;
            };
            let r = crashdoc_core::diagnose_all(&ev);
            let ds = &r.pods[0].diagnoses;
            seen.push((ds[0].cause, ds.iter().skip(1).map(|d| d.cause).collect()));
        }
    }
    let mut missing = Vec::new();
    for rule in crashdoc_core::rules::all() {
        for o in rule.outranks {
            if !seen
                .iter()
                .any(|(top, rest)| *top == rule.cause && rest.contains(&o.cause))
            {
                missing.push(format!("{} over {}", rule.cause, o.cause));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "declared precedences no fixture exercises:\n  {}",
        missing.join("\n  ")
    );
}

/// When a rule's own reading of the evidence and the catalog's generic
/// finding for the same cause merge, the rule's fix says it for this
/// evidence and its documented advice (the generic finding's fix) is not
/// repeated beside it. The shipped rollout example has both: a Go panic
/// the app-crash rule reads and catalog matches for app-crash.
#[test]
fn a_merged_finding_does_not_restate_its_rules_documented_fix() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rollout-regression");
    let ev = crashdoc_core::ingest::read_path(&dir).expect("the example reads");
    let report = crashdoc_core::diagnose::diagnose_all(&ev);
    let d = report.pods[0]
        .diagnoses
        .iter()
        .find(|d| d.cause == Cause::AppCrash)
        .expect("app-crash is diagnosed");
    let doc = crashdoc_core::rules::all()
        .into_iter()
        .find(|r| r.cause == Cause::AppCrash)
        .map(|r| r.doc.fix)
        .expect("the app-crash rule");
    assert!(
        d.fix.iter().any(|f| f.contains("top frame")),
        "the rule's own fix is kept: {:?}",
        d.fix
    );
    assert!(
        !d.fix.iter().any(|f| f == doc),
        "the documented fix is restated: {:?}",
        d.fix
    );
}
