//! Runs every rule on a pod, merges and ranks the findings, says what
//! evidence is missing.

use crate::causes::Cause;
use crate::model::*;
use crate::rules::{self, Context, Finding};
use crate::scan::LogKind;
use crate::strength::adjust;
use serde::Serialize;

/// How sure a diagnosis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub fn from_score(s: f32) -> Self {
        if s >= 0.85 {
            Confidence::High
        } else if s >= 0.6 {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }
}

/// One ranked cause (the JSON contract's `diagnoses[]`).
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub cause: Cause,
    pub container: Option<String>,
    pub confidence: Confidence,
    pub summary: String,
    pub evidence: Vec<Cite>,
    pub fix: Vec<String>,
    pub commands: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
    /// For a cause the evidence does not settle: the one command (or
    /// field) that would confirm it or rule it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decide: Option<String>,
    /// The ranking score behind the confidence, 0..1.
    pub score: f32,
}

/// A diagnosed pod (the JSON contract's `pods[]`).
#[derive(Debug, Clone, Serialize)]
pub struct PodReport {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub owner: Option<String>,
    pub diagnoses: Vec<Diagnosis>,
    pub missing: Vec<Missing>,
    /// Startup timeline of model servers, per log.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<RunTimeline>,
    /// What changed from the last healthy revision to the failing one
    /// (issue 11); absent when the input has nothing to compare.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<crate::changes::ChangesReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(skip)]
    pub restarts: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunTimeline {
    pub log: String,
    pub run: LogKind,
    pub stages: Vec<rules::facts::StageMark>,
    /// The stage the run was in when its log ends.
    pub last_stage: Option<String>,
}

/// The whole report (`--format json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub pods: Vec<PodReport>,
}

pub const SCHEMA: &str = "crashdoc/v1";

/// Diagnose every pod of the evidence; pods with the strongest diagnosis first.
pub fn diagnose_all(ev: &crate::ingest::Evidence) -> Report {
    let mut pods: Vec<PodReport> = ev
        .pods
        .iter()
        .map(|p| {
            let extra: Vec<Missing> = ev
                .collector_missing
                .iter()
                .filter(|(n, _)| n.is_empty() || Some(n) == p.name.as_ref())
                .map(|(_, m)| m.clone())
                .collect();
            diagnose(p, &extra)
        })
        .collect();
    pods.sort_by(|a, b| {
        let key = |r: &PodReport| {
            r.diagnoses
                .first()
                .map(|d| {
                    (
                        d.cause != Cause::Unknown,
                        d.confidence,
                        (d.score * 1000.0) as i32,
                    )
                })
                .unwrap_or((false, Confidence::Low, 0))
        };
        key(b).cmp(&key(a))
    });
    Report {
        schema: SCHEMA,
        pods,
    }
}

/// Diagnose one pod.
pub fn diagnose(pod: &Pod, collector_missing: &[Missing]) -> PodReport {
    let cx = Context::new(pod);
    let mut findings: Vec<Finding> = rules::all()
        .iter()
        .flat_map(|r| (r.check)(&cx))
        .filter(|f| f.score > 0.0)
        .collect();
    findings.extend(catalog_findings(&cx, &findings));

    let mut merged = merge_same_cause(findings);
    rank(&mut merged);
    let candidates = rules::candidates::candidates(&cx, &merged);
    merged.extend(candidates);
    merged.retain(|f| !f.evidence.is_empty());
    if let [top, second, ..] = &mut merged[..]
        && !top.status_only
    {
        let line = why_first(top, second);
        let head = format!("ranked above {}:", second.cause);
        if !top.reasoning.iter().any(|r| r.starts_with(&head)) {
            top.reasoning.push(line);
        }
    }

    let missing = missing_evidence(pod, collector_missing);
    // Silent evidence: nothing but the status speaks (an exit code, `Error`,
    // a back-off), so no cause is named and `unknown` leads the candidates.
    let silent = !merged.is_empty() && merged.iter().all(|f| f.status_only);
    let mut diagnoses: Vec<Diagnosis> = merged.into_iter().map(|f| to_diagnosis(&cx, f)).collect();
    if diagnoses.is_empty() {
        diagnoses.push(unknown(pod, &cx, &missing));
    } else if silent {
        let u = silent_unknown(unknown(pod, &cx, &missing), &diagnoses);
        diagnoses.insert(0, u);
    }
    let timeline = timelines(pod);
    let mut notes = pod.notes.clone();
    if let Some(c) = compare_runs(&timeline) {
        notes.push(c);
    }
    if let Some(top) = diagnoses.first_mut() {
        debug_safely(pod, &cx, top);
    }
    let changes = crate::changes::analyze(pod);
    if let (Some(ch), Some(top)) = (&changes, diagnoses.first_mut()) {
        apply_changes(top, ch);
    }
    PodReport {
        namespace: pod.namespace.clone(),
        name: pod.name.clone(),
        owner: pod.owner.as_ref().map(|o| format!("{}/{}", o.kind, o.name)),
        diagnoses,
        missing,
        timeline,
        changes,
        notes,
        sources: {
            let mut s = pod.sources.clone();
            s.dedup();
            s
        },
        restarts: pod
            .containers
            .iter()
            .map(|c| c.restarts())
            .max()
            .unwrap_or(0)
            .max(pod.listed_restarts.unwrap_or(0)),
    }
}

/// Findings of the same cause become one: the strongest leads and takes the
/// others' evidence, fixes and commands.
fn merge_same_cause(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut merged: Vec<Finding> = Vec::new();
    for f in findings {
        match merged.iter_mut().find(|m| m.cause == f.cause) {
            Some(m) => absorb(m, f),
            None => merged.push(f),
        }
    }
    merged
}

/// `f`, a weaker finding of `m`'s cause, merged into `m`.
fn absorb(m: &mut Finding, f: Finding) {
    if m.generic && !f.generic {
        // The rule's own reading of the evidence leads.
        m.summary = f.summary.clone();
        m.generic = false;
        // A generic finding's fix is the rule's documented advice;
        // the rule's own fix says it for this evidence.
        if !f.fix.is_empty() {
            m.fix = f.fix.clone();
        }
        if f.container.is_some() {
            m.container = f.container.clone();
        }
    }
    let mut new_evidence = false;
    for e in f.evidence {
        if !m.evidence.contains(&e) && m.evidence.len() < 6 {
            new_evidence = true;
            m.evidence.push(e);
        }
    }
    // The same for a generic finding merged into the rule's own.
    let restates = f.generic && !m.generic && !m.fix.is_empty();
    for x in f.fix {
        if !restates && !m.fix.contains(&x) {
            m.fix.push(x);
        }
    }
    for x in f.commands {
        if !m.commands.contains(&x) {
            m.commands.push(x);
        }
    }
    m.reasoning.extend(f.reasoning);
    // Status-only when every reading of it is.
    m.status_only &= f.status_only;
    m.decide = m.decide.take().or(f.decide);
    for b in f.basis {
        if !m.basis.contains(&b) {
            m.basis.push(b);
        }
    }
    m.container = m.container.take().or(f.container);
    // Independent support from another source adds a little.
    if new_evidence {
        m.score = (m.score + adjust::CORROBORATED).min(adjust::SPECIFIC_CEILING);
    }
}

/// A ranked finding as the report gives it, with `describe` and `logs
/// --previous` among its commands.
fn to_diagnosis(cx: &Context, f: Finding) -> Diagnosis {
    let mut commands = f.commands;
    let default_cmds = [
        cx.describe_cmd(),
        cx.logs_previous_cmd(f.container.as_deref()),
    ];
    for c in default_cmds {
        if !commands.contains(&c) && commands.len() < 4 {
            commands.push(c);
        }
    }
    Diagnosis {
        cause: f.cause,
        container: f.container,
        confidence: Confidence::from_score(f.score),
        summary: sentence(&f.summary),
        evidence: f.evidence,
        fix: f.fix,
        commands,
        reasoning: f.reasoning,
        decide: f.decide,
        score: (f.score * 100.0).round() / 100.0,
    }
}

/// The stages each log shows a run passing through, for logs with two or more.
fn timelines(pod: &Pod) -> Vec<RunTimeline> {
    pod.logs
        .iter()
        .filter_map(|l| {
            let stages = rules::facts::timeline(l);
            (stages.len() >= 2).then(|| RunTimeline {
                log: l.file.clone(),
                run: l.kind,
                last_stage: stages.last().map(|m| m.stage.describe().to_string()),
                stages,
            })
        })
        .collect()
}

/// A container without a shell, or one that dies too fast to exec into, is
/// debugged with `kubectl debug` (an ephemeral container or a copy of the
/// pod), not by changing the production command (crate::debugging).
fn debug_safely(pod: &Pod, cx: &Context, top: &mut Diagnosis) {
    let Some(container) = top
        .container
        .clone()
        .or(cx.focus_name().map(str::to_string))
    else {
        return;
    };
    let Some(why) = crate::debugging::why(pod, &container) else {
        return;
    };
    let [ephemeral, copy] = crate::debugging::commands(pod, &container);
    top.fix.push(format!(
        "debug it without touching the production pod ({}): attach an ephemeral busybox that shares {container}'s processes (`{ephemeral}`), or start a copy of the pod whose {container} sleeps instead of running (`{copy}`) and start the program by hand in it",
        why.sentence(&container)
    ));
    for c in [copy, ephemeral] {
        if !top.commands.contains(&c) {
            top.commands.insert(0, c);
        }
    }
}

/// The top diagnosis names the rollback only when a template change
/// coincides with the first crash, and says which; otherwise it says that
/// no change since the last healthy revision explains the crash.
fn apply_changes(top: &mut Diagnosis, ch: &crate::changes::ChangesReport) {
    use crate::changes::Verdict;
    let healthy = ch.last_healthy_words();
    let failing = ch.revisions.failing.words();
    match ch.verdict {
        Verdict::Coincides => {
            let which = ch.coinciding.join("; ");
            match &ch.undo {
                Some(undo) => {
                    top.fix.push(format!(
                        "roll back to {healthy} while fixing: {failing} changed {which}, which coincides with the first crash (`{undo}`)"
                    ));
                    if !top.commands.contains(undo) {
                        top.commands.insert(0, undo.clone());
                    }
                }
                None => top.reasoning.push(format!(
                    "changed since {healthy} and before the first crash: {which}"
                )),
            }
        }
        Verdict::NothingExplains => top.reasoning.push(format!(
            "no change since {healthy} explains it: the template diff to {failing}, the referenced config objects and the nodes were compared"
        )),
        Verdict::NoComparison => {}
    }
}

/// How far each run got, side by side: the same stage every time means a
/// fixed wall (a limit, a probe budget); later and later means growth.
fn compare_runs(t: &[RunTimeline]) -> Option<String> {
    let prev = t.iter().find(|r| r.run == LogKind::Previous)?;
    let cur = t.iter().find(|r| r.run == LogKind::Current)?;
    let reach = |r: &RunTimeline| {
        let m = r.stages.last()?;
        Some((m.stage, m.at_seconds))
    };
    let (ps, pa) = reach(prev)?;
    let (cs, ca) = reach(cur)?;
    let at = |a: Option<i64>| a.map(|s| format!(" at {s}s")).unwrap_or_default();
    let verdict = if ps == cs {
        "the same stage: the run stops at a fixed point (a memory limit or a probe budget), not by chance"
    } else if cs > ps {
        "the current run got further"
    } else {
        "the current run has not yet reached where the previous one died"
    };
    Some(format!(
        "runs compared: the previous run reached {}{}, the current run {}{}; {verdict}",
        ps.describe(),
        at(pa),
        cs.describe(),
        at(ca)
    ))
}

fn sentence(s: &str) -> String {
    let mut out = s.trim().to_string();
    if let Some(first) = out.get(..1) {
        let up = first.to_uppercase();
        out.replace_range(..1, &up);
    }
    if !out.ends_with(['.', '!', '?', ')']) {
        out.push('.');
    }
    out
}

/// The findings the catalog's entries make on their own: lines of a cause
/// whose rule does not read its log lines itself, and events, status
/// messages, node conditions and free text that no rule's finding cites.
fn catalog_findings(cx: &Context, found: &[Finding]) -> Vec<Finding> {
    let cited = |c: &Cite| {
        found
            .iter()
            .any(|f| f.evidence.iter().any(|e| e.reference == c.reference))
    };
    let mut out = Vec::new();
    for r in rules::all() {
        let sup: Vec<_> = cx
            .catalog_support(r.cause)
            .into_iter()
            .filter(|s| !r.reads.contains(&s.at) && !cited(&s.cite()))
            .collect();
        let Some(mut f) = cx.finding_from(r.cause, &sup, |s| s.hit.sig.meaning.to_string()) else {
            continue;
        };
        f = f.fix(r.doc.fix);
        f.generic = true;
        out.push(f);
    }
    out
}

/// Order the findings: by score, then by the precedence the rules declare.
/// A finding whose rule declares that it outranks a higher one moves above
/// it, when it has at least moderate support and the other rule does not
/// declare the reverse; the winner's declared reason is printed. A
/// declaration with `only` holds for a finding that rests on that basis.
fn rank(f: &mut Vec<Finding>) {
    f.sort_by(|a, b| b.score.total_cmp(&a.score));
    let outranks = rules::outrank_reason;
    let floor = crate::strength::Strength::Moderate.score();
    // Move a declared winner above the first finding it outranks. Bounded:
    // a cycle of declarations (none today) cannot loop forever.
    for _ in 0..f.len() * f.len() {
        let pair = (1..f.len()).find_map(|j| {
            (0..j).find_map(|i| {
                let (hi, lo) = (&f[i], &f[j]);
                (lo.score >= floor
                    && outranks(lo, hi.cause).is_some()
                    && outranks(hi, lo.cause).is_none())
                .then_some((i, j))
            })
        });
        let Some((i, j)) = pair else { break };
        let w = f.remove(j);
        f.insert(i, w);
    }
    if f.len() < 2 {
        return;
    }
    // The alternatives: below the first, a finding that accounts for
    // evidence the first leaves unexplained comes before one that only
    // reads the first's own evidence another way (score order within each).
    let explained: Vec<String> = f[0].evidence.iter().map(|e| e.reference.clone()).collect();
    let rest = f.split_off(1);
    let (more, same): (Vec<Finding>, Vec<Finding>) = rest
        .into_iter()
        .partition(|x| x.evidence.iter().any(|e| !explained.contains(&e.reference)));
    f.extend(more);
    f.extend(same);
    let (first, rest) = f.split_at_mut(1);
    let top = &mut first[0];
    for other in rest.iter().take(2) {
        if let Some(w) = outranks(top, other.cause) {
            let s = format!("ranked above {}: {w}", other.cause);
            if !top.reasoning.contains(&s) {
                top.reasoning.push(s);
            }
        }
    }
}

/// One line: why the first finding ranks above the second, when no rule
/// declares a precedence between them.
fn why_first(top: &Finding, second: &Finding) -> String {
    use crate::strength::Strength;
    let level = |x: &Finding| {
        Strength::ALL
            .iter()
            .rev()
            .find(|s| x.score + 1e-4 >= s.score())
            .map_or("hint", |s| s.id())
    };
    let at = |x: &Finding| {
        x.evidence
            .first()
            .map(|e| format!(" ({})", e.reference))
            .unwrap_or_default()
    };
    let why = if second.status_only {
        format!(
            "a message names it{}; {} rests on the status alone",
            at(top),
            second.cause
        )
    } else if top.score > second.score + 1e-4 {
        format!(
            "its evidence is {}{}, {}'s {}{}",
            level(top),
            at(top),
            second.cause,
            level(second),
            at(second)
        )
    } else {
        let unexplained = top
            .evidence
            .iter()
            .filter(|e| !second.evidence.contains(e))
            .count();
        format!(
            "equal support; it accounts for {unexplained} piece(s) of evidence that {} does not",
            second.cause
        )
    };
    format!("ranked above {}: {why}", second.cause)
}

fn unknown(pod: &Pod, cx: &Context, missing: &[Missing]) -> Diagnosis {
    let mut evidence: Vec<Cite> = Vec::new();
    if let Some(s) = &pod.listed_status {
        evidence.push(s.cite.clone());
    }
    for c in &pod.containers {
        if let Some(w) = c.waiting_reason() {
            evidence.push(w.cite.clone());
        }
        if let Some(t) = c.last_termination()
            && let Some(e) = &t.exit_code
        {
            evidence.push(e.cite.clone());
        }
    }
    if let Some(l) = pod.logs.iter().find(|l| !l.is_empty())
        && let Some(last) = l.tail.last()
    {
        evidence.push(Cite::new(
            SourceKind::Log,
            format!("{}:{}", l.file, last.number),
            crate::redact::redact(&last.text).into_owned(),
        ));
    }
    if evidence.is_empty() {
        evidence.push(Cite::new(
            SourceKind::Other,
            "input",
            format!(
                "read: {}",
                if pod.sources.is_empty() {
                    "nothing usable".to_string()
                } else {
                    pod.sources.join(", ")
                }
            ),
        ));
    }
    let what: Vec<&str> = missing.iter().map(|m| m.what.as_str()).collect();
    Diagnosis {
        cause: Cause::Unknown,
        container: cx.focus_name().map(str::to_string),
        confidence: Confidence::Low,
        summary: if what.is_empty() {
            "The evidence matches no known cause.".to_string()
        } else {
            format!("The evidence supports no cause; missing: {}.", what.join(", "))
        },
        evidence,
        fix: vec!["collect the missing evidence (see `missing`) and analyse again, or run `crashdoc diagnose` against the cluster".into()],
        commands: vec![cx.describe_cmd(), cx.logs_previous_cmd(cx.focus_name()), cx.kubectl(&format!("get events --field-selector involvedObject.name={}", cx.pod_name()))],
        reasoning: vec![],
        decide: None,
        score: 0.0,
    }
}

/// `unknown` ahead of candidates that only the status suggests: it names
/// them in order, and for each the command that would decide it.
fn silent_unknown(mut u: Diagnosis, candidates: &[Diagnosis]) -> Diagnosis {
    let names: Vec<String> = candidates.iter().map(|d| d.cause.to_string()).collect();
    u.summary = format!(
        "No log line, reason or event names a cause; the status alone allows, in this order: {}.",
        names.join(", ")
    );
    // One line per deciding command, with every candidate it decides.
    let mut by_command: Vec<(&str, Vec<String>)> = Vec::new();
    for d in candidates {
        let Some(c) = d.decide.as_deref() else {
            continue;
        };
        match by_command.iter_mut().find(|(x, _)| *x == c) {
            Some((_, causes)) => causes.push(d.cause.to_string()),
            None => by_command.push((c, vec![d.cause.to_string()])),
        }
    }
    u.reasoning = by_command
        .iter()
        .map(|(c, causes)| format!("`{c}` decides {}", causes.join(" / ")))
        .collect();
    let mut commands: Vec<String> = Vec::new();
    for c in candidates
        .iter()
        .filter_map(|d| d.decide.clone())
        .chain(std::mem::take(&mut u.commands))
    {
        if !commands.contains(&c) {
            commands.push(c);
        }
    }
    u.commands = commands;
    for e in candidates.iter().flat_map(|d| &d.evidence) {
        if !u.evidence.contains(e) && u.evidence.len() < 6 {
            u.evidence.push(e.clone());
        }
    }
    u.fix = vec![
        "run the first command above: its output names the cause, then analyse again with it"
            .into(),
    ];
    u
}

/// What the input lacks, and what it would have told.
pub fn missing_evidence(pod: &Pod, collector: &[Missing]) -> Vec<Missing> {
    let mut out: Vec<Missing> = collector.to_vec();
    let m = |what: &str, why: &str| Missing {
        what: what.into(),
        why: why.into(),
        hint: None,
    };
    let has_termination = pod
        .containers
        .iter()
        .any(|c| c.last_termination().is_some());
    let restarted = pod.is_restarting();
    if !pod.has_previous_logs() && (restarted || has_termination || pod.containers.is_empty()) {
        out.push(m("logs --previous", "the crashed run's own output (stack traces, the last lines before exit) is not in the input"));
    }
    if !has_termination
        && !pod.status_contains("Pending")
        && !pod.status_contains("ImagePull")
        && !pod.phase_is("Pending")
    {
        out.push(m("lastState.terminated", "the exit code and reason (OOMKilled, Error, Completed) of the last run are not in the input (describe pod or pod YAML has them)"));
    }
    if pod.events.is_empty() {
        out.push(m("events", "events tell probe kills, mount and scheduling failures, image pulls and evictions apart; none are in the input"));
    }
    if pod
        .containers
        .iter()
        .all(|c| c.limits.is_empty() && c.probes.is_empty())
    {
        out.push(m(
            "pod spec",
            "resources and probes (from describe pod or the pod YAML) size the fix",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_bands() {
        assert_eq!(Confidence::from_score(0.9), Confidence::High);
        assert_eq!(Confidence::from_score(0.7), Confidence::Medium);
        assert_eq!(Confidence::from_score(0.2), Confidence::Low);
    }

    #[test]
    fn runs_are_compared() {
        use crate::ingest::{Doc, FileKind, Parts, assemble};
        let run = "INFO 11-12 09:31:44 api_server.py:528] vLLM API server version 0.6.3\nINFO 11-12 09:31:58 model_runner.py:1056] Starting to load model /models/x...\nINFO 11-12 09:32:40 model_runner.py:1067] Loading weights took 14.25 GiB\n";
        let mut parts = Parts::default();
        for (name, kind) in [
            ("logs-previous.txt", LogKind::Previous),
            ("logs.txt", LogKind::Current),
        ] {
            parts.add_doc(
                FileKind::Logs {
                    kind,
                    container: None,
                },
                Doc {
                    name: name.into(),
                    text: run.into(),
                    line_offset: 0,
                },
            );
        }
        let ev = assemble(parts);
        let r = diagnose(&ev.pods[0], &[]);
        let note = r
            .notes
            .iter()
            .find(|n| n.starts_with("runs compared"))
            .expect("a comparison note");
        assert!(note.contains("the same stage"), "{note}");
    }

    /// A precedence declared `only` for a basis holds for a finding that
    /// rests on it, never for another finding of the same cause.
    #[test]
    fn a_precedence_with_only_holds_for_its_basis() {
        let ranked = |permission: Finding| {
            let mut f = vec![
                Finding::new(Cause::Volume, 0.85, "a write to a read-only file system"),
                permission,
            ];
            rank(&mut f);
            f.iter().map(|x| x.cause).collect::<Vec<_>>()
        };
        let plain = Finding::new(Cause::Permission, 0.8, "permission denied");
        assert_eq!(ranked(plain.clone()), [Cause::Volume, Cause::Permission]);
        let basis = rules::rule(Cause::Permission)
            .and_then(|r| r.outranks.iter().find(|o| o.cause == Cause::Volume))
            .and_then(|o| o.only)
            .expect("permission declares when it outranks volume");
        let on = plain.on(basis);
        assert_eq!(ranked(on), [Cause::Permission, Cause::Volume]);
    }

    /// The alternative that explains other evidence comes before the one
    /// that re-reads the first's; a near miss: with no other evidence, the
    /// score order stands.
    #[test]
    fn alternatives_explain_what_the_first_leaves() {
        let cite = |r: &str| Cite::new(SourceKind::Log, r, "line");
        let top = Finding::new(Cause::PortConflict, 0.9, "bind").cite(&cite("log:3"));
        let same = Finding::new(Cause::BadConfig, 0.7, "config").cite(&cite("log:3"));
        let other = Finding::new(Cause::DiskFull, 0.6, "disk").cite(&cite("events:1"));
        let mut f = vec![top.clone(), same.clone(), other.clone()];
        rank(&mut f);
        let got: Vec<Cause> = f.iter().map(|x| x.cause).collect();
        assert_eq!(
            got,
            [Cause::PortConflict, Cause::DiskFull, Cause::BadConfig]
        );
        let other_same = Finding::new(Cause::DiskFull, 0.6, "disk").cite(&cite("log:3"));
        let mut f = vec![top.clone(), same.clone(), other_same];
        rank(&mut f);
        let got: Vec<Cause> = f.iter().map(|x| x.cause).collect();
        assert_eq!(
            got,
            [Cause::PortConflict, Cause::BadConfig, Cause::DiskFull]
        );
        let line = why_first(&top, &same);
        assert!(
            line.starts_with("ranked above bad-config: its evidence is decisive (log:3)"),
            "{line}"
        );
    }

    #[test]
    fn empty_pod_is_unknown_with_missing() {
        let r = diagnose(&Pod::default(), &[]);
        assert_eq!(r.diagnoses.len(), 1);
        assert_eq!(r.diagnoses[0].cause, Cause::Unknown);
        assert!(!r.diagnoses[0].evidence.is_empty());
        assert!(r.missing.iter().any(|m| m.what == "logs --previous"));
    }
}
