//! The rules. Each rule is declared next to its documentation (what it
//! detects, why that crash-loops, the evidence it reads, an example, the
//! fix, known false positives) and its log signatures; `crashdoc explain
//! CAUSE` prints that text, and the fixtures under `tests/fixtures/rules`
//! hold a positive and a near-miss negative input for each.

pub mod candidates;
mod config;
pub mod facts;
pub mod gpu;
pub mod logs;
mod placement;
pub mod probes;
mod status;

use crate::catalog::{Place, VocabKind};
use crate::causes::Cause;
use crate::model::*;
use crate::scan::{Hit, LogKind, LogScan, SigKind};
use crate::strength::adjust;

/// A rule's documentation, in the order `crashdoc explain` prints it.
#[derive(Debug)]
pub struct RuleDoc {
    pub what: &'static str,
    pub why: &'static str,
    pub evidence: &'static str,
    pub example: &'static str,
    pub fix: &'static str,
    pub false_positives: &'static str,
}

impl RuleDoc {
    /// The sections with their headings, in the order `crashdoc explain`
    /// prints them.
    pub fn sections(&self) -> [(&'static str, &'static str); 6] {
        [
            ("What it detects", self.what),
            ("Why it crash-loops", self.why),
            ("Evidence", self.evidence),
            ("Example", self.example),
            ("Fix", self.fix),
            ("Known false positives", self.false_positives),
        ]
    }
}

/// A rule: one cause, its documentation, its check. What it recognises in
/// text is in the catalog (`crate::catalog`), under its cause.
pub struct Rule {
    pub cause: Cause,
    pub doc: RuleDoc,
    /// The causes this rule's finding ranks above when both are found with
    /// at least moderate support, and why. `diagnose` applies these
    /// declarations and prints their reasons; the score decides only
    /// between causes that declare nothing about each other (or both do,
    /// each for its own evidence).
    pub outranks: &'static [Outrank],
    /// The places whose catalog matches for its cause the check weighs
    /// itself (log lines through `Context::from_logs`, events and states
    /// with its own judgment: a stale pull failure, a Job's exit 0). The
    /// catalog's matches at the other places become a finding of their
    /// own, beside whatever the check finds.
    pub reads: &'static [Place],
    pub check: fn(&Context) -> Vec<Finding>,
}

/// A declared precedence: this rule's cause ranks above `cause`.
#[derive(Debug, Clone, Copy)]
pub struct Outrank {
    pub cause: Cause,
    pub why: &'static str,
    /// `None`: whenever both causes are found. `Some(basis)`: only when
    /// this rule's finding rests on that reading of the evidence (the check
    /// marks it with [`Finding::on`]); `why` says which situation that is.
    pub only: Option<&'static str>,
}

/// Every specific cause outranks a bare application crash.
pub const OUTRANKS_APP_CRASH: Outrank = Outrank {
    cause: Cause::AppCrash,
    why: "it names what failed; an exception or a non-zero exit is how that failure looks from outside",
    only: None,
};

/// The precedence `winner`'s rule declares over `loser`, if any: its
/// reason, when the declaration holds for this finding (one with no
/// `only`, or one whose basis the finding rests on).
pub fn outrank_reason(winner: &Finding, loser: Cause) -> Option<&'static str> {
    rule(winner.cause)?
        .outranks
        .iter()
        .find(|o| o.cause == loser && o.only.is_none_or(|b| winner.basis.contains(&b)))
        .map(|o| o.why)
}

/// A candidate cause with its support.
#[derive(Debug, Clone)]
pub struct Finding {
    pub cause: Cause,
    pub container: Option<String>,
    /// Strength of support, 0..1 (confidence: high >= 0.85, medium >= 0.6).
    pub score: f32,
    pub summary: String,
    pub evidence: Vec<Cite>,
    pub fix: Vec<String>,
    pub commands: Vec<String>,
    /// Why this ranks where it does, when other signals compete.
    pub reasoning: Vec<String>,
    /// Made by the catalog's generic pass rather than a rule's check: when
    /// both name the cause, the check's summary and fix lead.
    pub generic: bool,
    /// The readings of the evidence this finding rests on that a rule's
    /// `outranks` names in its `only` (empty for most findings).
    pub basis: Vec<&'static str>,
    /// Read off the status alone (an exit code, a restart pattern, a
    /// condition that no longer holds), with no message naming the cause.
    /// When every finding of a pod is such, the evidence is silent and
    /// `unknown` comes first (`diagnose`).
    pub status_only: bool,
    /// The one command (or field) that would confirm this cause or rule it
    /// out, for a finding the evidence does not settle.
    pub decide: Option<String>,
}

impl Finding {
    pub fn new(cause: Cause, score: f32, summary: impl Into<String>) -> Self {
        Finding {
            cause,
            container: None,
            score,
            summary: summary.into(),
            evidence: vec![],
            fix: vec![],
            commands: vec![],
            reasoning: vec![],
            generic: false,
            basis: vec![],
            status_only: false,
            decide: None,
        }
    }
    /// A finding from the status alone ([`Strength::Hint`]): a candidate
    /// to rule out, never a diagnosis on its own.
    ///
    /// [`Strength::Hint`]: crate::strength::Strength::Hint
    pub fn hint(cause: Cause, summary: impl Into<String>) -> Self {
        let mut f = Finding::new(cause, crate::strength::Strength::Hint.score(), summary);
        f.status_only = true;
        f
    }
    /// The command or field that would decide this finding.
    pub fn decided_by(mut self, how: impl Into<String>) -> Self {
        self.decide = Some(how.into());
        self
    }
    /// Mark the finding as resting on `basis` (a rule's `Outrank::only`).
    pub fn on(mut self, basis: &'static str) -> Self {
        if !self.basis.contains(&basis) {
            self.basis.push(basis);
        }
        self
    }
    pub fn container(mut self, c: Option<&str>) -> Self {
        self.container = c.filter(|c| !c.is_empty()).map(str::to_string);
        self
    }
    pub fn cite(mut self, c: &Cite) -> Self {
        if !self.evidence.contains(c) {
            self.evidence.push(c.clone());
        }
        self
    }
    pub fn cite_opt(self, c: Option<&Cite>) -> Self {
        match c {
            Some(c) => self.cite(c),
            None => self,
        }
    }
    pub fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix.push(f.into());
        self
    }
    pub fn cmd(mut self, c: impl Into<String>) -> Self {
        self.commands.push(c.into());
        self
    }
    pub fn why(mut self, r: impl Into<String>) -> Self {
        self.reasoning.push(r.into());
        self
    }
}

/// `container NAME`, or `the container` when the name is not known.
pub fn who(name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() => format!("container {n}"),
        _ => "the container".to_string(),
    }
}

/// Every rule, in taxonomy order.
pub fn all() -> Vec<&'static Rule> {
    vec![
        &status::OOM_KILLED,
        &placement::NODE_PRESSURE,
        &gpu::GPU_OOM,
        &gpu::GPU_UNAVAILABLE,
        &logs::MISSING_FILE,
        &placement::VOLUME,
        &placement::DISK_FULL,
        &config::CONFIG_REF_MISSING,
        &config::BAD_CONFIG,
        &config::AUTH_FAILURE,
        &probes::PROBE_KILL,
        &status::EXIT_ZERO,
        &logs::DEPENDENCY_UNREACHABLE,
        &logs::APP_CRASH,
        &status::BAD_COMMAND,
        &status::NATIVE_CRASH,
        &status::TERMINATED,
        &logs::PORT_CONFLICT,
        &placement::PERMISSION,
        &placement::IMAGE_PULL,
        &placement::UNSCHEDULABLE,
    ]
}

/// The rule for a cause.
pub fn rule(cause: Cause) -> Option<&'static Rule> {
    all().into_iter().find(|r| r.cause == cause)
}

/// A piece of text that supports a cause: a log line, or an event's,
/// a container state's, the pod's or a node's message, matched by a
/// catalog entry.
#[derive(Debug, Clone)]
pub struct Support<'a> {
    pub hit: Hit,
    /// The log the line is in (`None` for an event or a status field).
    pub log: Option<&'a LogScan>,
    /// Which run of the container, for a log line.
    pub kind: Option<LogKind>,
    /// Where the text stands.
    pub at: Place,
    pub container: Option<String>,
    pub score: f32,
    cite: Cite,
}

impl Support<'_> {
    pub fn cite(&self) -> Cite {
        self.cite.clone()
    }

    /// Whether another line the scanner kept from the same log is a message
    /// of class `id` (`crate::classes::is`); false for an event or a status
    /// field.
    pub fn log_has(&self, id: &str) -> bool {
        self.log
            .is_some_and(|l| l.hits.iter().any(|h| crate::classes::is(id, &h.line.text)))
    }

    /// Support from a status field or an event: `text` is what the entry
    /// matched, `cite` the field it stands in.
    fn of_field(
        sig: &'static crate::scan::Signature,
        text: &str,
        at: Place,
        container: Option<String>,
        cite: &Cite,
    ) -> Self {
        Support {
            hit: Hit {
                sig,
                line: crate::scan::Line {
                    number: 0,
                    text: text.to_string(),
                },
                decisive: false,
            },
            log: None,
            kind: None,
            at,
            container,
            score: sig.weight() * adjust::AT_FIELD,
            cite: cite.clone(),
        }
    }
}

static ACCESS_LOG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#""(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) [^"]* HTTP/[\d.]+" \d{3}\b|\b(?:method|verb)[=:]"?(?:GET|POST|PUT|DELETE|PATCH)\b.{0,80}\bstatus[=:]"?\d{3}"#).expect("static regex")
});

/// The volume a kubelet volume message names: `<operation> for volume
/// "NAME" : <error>` (kubernetes v1.36.3
/// pkg/volume/util/operationexecutor/operation_executor.go generateVolumeMsg,
/// `VolumeSpec.Name()`: the pod's volume name, or a PersistentVolume's).
static VOLUME_IN_MESSAGE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"\bfor volume "([^"]+)""#).expect("static regex")
});

/// The volume a kubelet volume message names (`for volume "NAME"`).
pub fn volume_in(message: &str) -> Option<&str> {
    Some(VOLUME_IN_MESSAGE.captures(message)?.get(1)?.as_str())
}

/// What the rules see: the pod, and what was precomputed from it.
pub struct Context<'a> {
    pub pod: &'a Pod,
    /// The container that is failing, when one can be told.
    pub focus: Option<&'a Container>,
    supports: Vec<Support<'a>>,
}

/// How much a line counts by where it was read: the crashed run's own
/// output most, free text least.
fn place_factor(kind: LogKind) -> (f32, Place) {
    match kind {
        LogKind::Previous => (1.0, Place::Log),
        LogKind::Current => (adjust::AT_CURRENT_RUN, Place::Log),
        LogKind::Other => (adjust::AT_FREE_TEXT, Place::Any),
        LogKind::Text => (adjust::AT_STRUCTURED_TEXT, Place::Any),
    }
}

impl<'a> Context<'a> {
    pub fn new(pod: &'a Pod) -> Self {
        let focus = focus_container(pod);
        let mut supports = Vec::new();
        for log in pod.logs.iter().chain(&pod.texts) {
            let (factor, at) = place_factor(log.kind);
            let near_end = log.lines.saturating_sub(log.lines / 6).max(1);
            for hit in &log.hits {
                if !hit.sig.places.allow(at) {
                    continue;
                }
                // An access-log entry records what the server answered its
                // clients (a 401, a 503): it says nothing about this pod.
                if ACCESS_LOG.is_match(&hit.line.text) {
                    continue;
                }
                // On one line, the strongest signature speaks; the others count less.
                let best = log
                    .hits
                    .iter()
                    .filter(|h| {
                        h.line.number == hit.line.number
                            && matches!(h.sig.kind, SigKind::Cause(_))
                            && h.sig.places.allow(at)
                    })
                    .map(|h| h.sig.weight())
                    .fold(0.0f32, f32::max);
                let mut w = hit.sig.weight();
                if matches!(hit.sig.kind, SigKind::Cause(_)) && w < best {
                    w *= adjust::OUTSHONE_ON_ITS_LINE;
                }
                if hit.sig.kind == SigKind::Exception {
                    // A cause on the same line explains it; a source line of a
                    // traceback (`raise X(...)`) is not where the program says why.
                    let body = crate::text::strip_log_prefix(&hit.line.text).trim_start();
                    if best > 0.0
                        || body.starts_with("raise ")
                        || body.starts_with("throw ")
                        || body.starts_with("File \"")
                        || body.starts_with("at ")
                    {
                        continue;
                    }
                }
                let mut score = w * factor;
                if hit.decisive {
                    score += adjust::DECISIVE_LINE;
                }
                if log.lines > 20 && hit.line.number >= near_end {
                    score += adjust::NEAR_END;
                }
                supports.push(Support {
                    hit: hit.clone(),
                    log: Some(log),
                    kind: Some(log.kind),
                    at,
                    container: log.container.clone(),
                    score: score.min(adjust::CEILING),
                    cite: Cite::new(
                        if log.kind == LogKind::Text {
                            SourceKind::Other
                        } else {
                            SourceKind::Log
                        },
                        format!("{}:{}", log.file, hit.line.number),
                        crate::text::clip(&crate::redact::redact(hit.line.text.trim()), 300),
                    ),
                });
            }
        }
        for (text, container, at, cite) in status_texts(pod) {
            for sig in crate::scan::Catalog::global().classify(text) {
                if !matches!(sig.kind, SigKind::Cause(_)) || !sig.places.allow(at) {
                    continue;
                }
                supports.push(Support::of_field(sig, text, at, container.clone(), cite));
            }
        }
        for (kind, name, message, container, at, cite) in reason_fields(pod) {
            let Some(sig) = crate::catalog::reason_support(kind, name, message) else {
                continue;
            };
            supports.push(Support::of_field(sig, name, at, container, cite));
        }
        Context {
            pod,
            focus,
            supports,
        }
    }

    /// Every piece of text that supports a cause, from wherever it was read.
    pub fn catalog_support(&self, cause: Cause) -> Vec<&Support<'a>> {
        let mut v: Vec<&Support> = self
            .supports
            .iter()
            .filter(|s| s.hit.sig.kind == SigKind::Cause(cause))
            .collect();
        v.sort_by(|a, b| b.score.total_cmp(&a.score));
        v
    }

    /// Log lines supporting a cause, best first.
    pub fn log_support(&self, cause: Cause) -> Vec<&Support<'a>> {
        let mut v: Vec<&Support> = self
            .supports
            .iter()
            .filter(|s| s.hit.sig.kind == SigKind::Cause(cause) && s.log.is_some())
            .collect();
        v.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.hit.line.number.cmp(&a.hit.line.number))
        });
        v
    }

    /// Log lines of a given marker kind.
    pub fn marker_support(&self, kind: SigKind) -> Vec<&Support<'a>> {
        let mut v: Vec<&Support> = self
            .supports
            .iter()
            .filter(|s| s.hit.sig.kind == kind)
            .collect();
        v.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.hit.line.number.cmp(&a.hit.line.number))
        });
        v
    }

    /// A finding built from the log lines that support `cause`, if any.
    pub fn from_logs(&self, cause: Cause, summary: impl Fn(&Support) -> String) -> Option<Finding> {
        self.finding_from(cause, &self.log_support(cause), summary)
    }

    /// A finding from supports of `cause`, best first: the best one's score,
    /// a little more for each further distinct line (up to three), its
    /// container (or the failing one), the first three citations.
    pub fn finding_from(
        &self,
        cause: Cause,
        sup: &[&Support],
        summary: impl Fn(&Support) -> String,
    ) -> Option<Finding> {
        let best = sup.first()?;
        let distinct = {
            let mut lines: Vec<String> = sup.iter().map(|s| s.cite.reference.clone()).collect();
            lines.dedup();
            lines.len()
        };
        let score =
            (best.score + adjust::REPEATED * (distinct.min(4) as f32 - 1.0)).min(adjust::CEILING);
        let container = best
            .container
            .clone()
            .or_else(|| {
                (best.at == Place::Event)
                    .then(|| self.mounting(&best.hit.line.text))
                    .flatten()
                    .map(str::to_string)
            })
            .or_else(|| self.focus_name().map(str::to_string));
        let mut f = Finding::new(cause, score, summary(best)).container(container.as_deref());
        for s in sup.iter().take(3) {
            f = f.cite(&s.cite());
        }
        Some(f)
    }

    /// The container that mounts the volume a kubelet volume message names
    /// (a pod-level event such as FailedMount names no container; the pod
    /// spec's volumeMounts say who needs the volume): the failing container
    /// if it does, else the first main container, else any. `None` when
    /// the message names no volume or no container mounts it (a
    /// PersistentVolume's name, which no volumeMount carries).
    pub fn mounting(&self, message: &str) -> Option<&str> {
        let volume = volume_in(message)?;
        let mounts = |c: &&Container| c.mounts.iter().any(|m| m.name == volume);
        if let Some(f) = self.focus.filter(mounts) {
            return Some(f.name.as_str()).filter(|n| !n.is_empty());
        }
        let cs = &self.pod.containers;
        cs.iter()
            .filter(mounts)
            .find(|c| c.kind == ContainerKind::Main)
            .or_else(|| cs.iter().find(mounts))
            .map(|c| c.name.as_str())
            .filter(|n| !n.is_empty())
    }

    pub fn focus_name(&self) -> Option<&str> {
        self.focus
            .map(|c| c.name.as_str())
            .filter(|n| !n.is_empty())
    }

    pub fn pod_name(&self) -> &str {
        self.pod.name.as_deref().unwrap_or("POD")
    }

    /// `-n NS` when the namespace is known.
    pub fn ns(&self) -> String {
        self.pod
            .namespace
            .as_ref()
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default()
    }

    /// ` -c NAME` when the pod has more than one container.
    pub fn c_flag(&self, container: Option<&str>) -> String {
        match container {
            Some(c)
                if !c.is_empty()
                    && self
                        .pod
                        .containers
                        .iter()
                        .filter(|x| !x.name.is_empty())
                        .count()
                        != 1
                    || container.is_some_and(|c| !c.is_empty())
                        && self.pod.containers.is_empty() =>
            {
                format!(" -c {}", container.unwrap_or_default())
            }
            _ => String::new(),
        }
    }

    pub fn kubectl(&self, verb_and_args: &str) -> String {
        format!("kubectl {verb_and_args}{}", self.ns())
    }

    pub fn logs_previous_cmd(&self, container: Option<&str>) -> String {
        self.kubectl(&format!(
            "logs {} --previous{}",
            self.pod_name(),
            self.c_flag(container)
        ))
    }

    pub fn describe_cmd(&self) -> String {
        self.kubectl(&format!("describe pod {}", self.pod_name()))
    }

    /// `deploy/NAME` (or the owner's kind) for commands about the workload.
    pub fn workload_ref(&self) -> Option<String> {
        let o = self.pod.owner.as_ref()?;
        let kind = match o.kind.as_str() {
            "Deployment" => "deploy",
            "StatefulSet" => "sts",
            "DaemonSet" => "ds",
            "ReplicaSet" => {
                return crate::ingest::infer_owner(&format!("{}-xxxxx", o.name))
                    .filter(|x| x.kind == "Deployment")
                    .map(|x| format!("deploy/{}", x.name))
                    .or(Some(format!("rs/{}", o.name)));
            }
            "Job" => "job",
            other => return Some(format!("{}/{}", other.to_ascii_lowercase(), o.name)),
        };
        Some(format!("{kind}/{}", o.name))
    }

    /// The kubelet's messages in container states (`state`/`lastState`
    /// `.message`), with their citations.
    pub fn state_messages(&self) -> Vec<(&'a str, &'a Cite)> {
        self.pod
            .containers
            .iter()
            .flat_map(|c| [c.state.as_ref(), c.last_state.as_ref()])
            .flatten()
            .filter_map(|st| st.message.as_ref().map(|m| (m.value.as_str(), &m.cite)))
            .collect()
    }

    pub fn events_with(&self, pred: impl Fn(&Event) -> bool) -> Vec<&'a Event> {
        self.pod.events.iter().filter(|e| pred(e)).collect()
    }

    /// The container a status-based finding is about.
    pub fn container_or_focus<'b>(&'b self, c: Option<&'b Container>) -> Option<&'b str> {
        c.map(|c| c.name.as_str())
            .filter(|n| !n.is_empty())
            .or(self.focus_name())
    }
}

type ReasonField<'a> = (
    VocabKind,
    &'a str,
    Option<&'a str>,
    Option<String>,
    Place,
    &'a Cite,
);

/// The reason fields of the pod that Kubernetes' vocabulary names: event
/// reasons, container waiting and terminated reasons, the pod's status
/// reason, and the STATUS column of `get pods` (which shows one of them).
fn reason_fields(pod: &Pod) -> Vec<ReasonField<'_>> {
    let mut out: Vec<ReasonField> = Vec::new();
    for e in &pod.events {
        out.push((
            VocabKind::EventReason,
            e.reason.as_str(),
            Some(e.message.as_str()),
            None,
            Place::Event,
            &e.cite,
        ));
    }
    for c in &pod.containers {
        let name = (!c.name.is_empty()).then(|| c.name.clone());
        for st in [c.state.as_ref(), c.last_state.as_ref()]
            .into_iter()
            .flatten()
        {
            let Some(r) = &st.reason else { continue };
            let kind = match st.kind {
                StateKind::Waiting => VocabKind::WaitingReason,
                StateKind::Terminated => VocabKind::TerminatedReason,
                StateKind::Running => continue,
            };
            let msg = st.message.as_ref().map(|m| m.value.as_str());
            out.push((
                kind,
                r.value.as_str(),
                msg,
                name.clone(),
                Place::State,
                &r.cite,
            ));
        }
    }
    if let Some(r) = &pod.reason {
        let msg = pod.message.as_ref().map(|m| m.value.as_str());
        out.push((
            VocabKind::PodReason,
            r.value.as_str(),
            msg,
            None,
            Place::State,
            &r.cite,
        ));
    }
    if let Some(s) = &pod.listed_status {
        let v = s.value.strip_prefix("Init:").unwrap_or(&s.value);
        for kind in [
            VocabKind::WaitingReason,
            VocabKind::TerminatedReason,
            VocabKind::PodReason,
        ] {
            out.push((kind, v, None, None, Place::State, &s.cite));
        }
    }
    out
}

/// The texts of the pod's status that the catalog is matched against:
/// events (reason and message), container states' reasons and messages,
/// the pod's status reason and message, node conditions.
fn status_texts(pod: &Pod) -> Vec<(&str, Option<String>, Place, &Cite)> {
    let mut out = Vec::new();
    for e in &pod.events {
        out.push((e.message.as_str(), None, Place::Event, &e.cite));
    }
    for c in &pod.containers {
        let name = (!c.name.is_empty()).then(|| c.name.clone());
        for st in [c.state.as_ref(), c.last_state.as_ref()]
            .into_iter()
            .flatten()
        {
            if let Some(m) = &st.message {
                out.push((m.value.as_str(), name.clone(), Place::State, &m.cite));
            }
        }
    }
    for f in [pod.message.as_ref()].into_iter().flatten() {
        out.push((f.value.as_str(), None, Place::State, &f.cite));
    }
    if let Some(n) = &pod.node {
        for c in &n.conditions {
            out.push((c.value.as_str(), None, Place::Node, &c.cite));
        }
    }
    out
}

/// The container that is failing. A native sidecar's restarts do not hide
/// the container that really fails.
pub fn focus_container(pod: &Pod) -> Option<&Container> {
    let init_failing = pod
        .listed_status
        .as_ref()
        .is_some_and(|s| s.value.starts_with("Init:"));
    pod.containers
        .iter()
        .map(|c| {
            let mut score = 0i32;
            if let Some(w) = c.waiting_reason() {
                score += if w.value == "PodInitializing" || w.value == "ContainerCreating" {
                    0
                } else {
                    3
                };
            }
            if let Some(t) = c.last_termination() {
                if t.exit().is_some_and(|e| e != 0)
                    || t.reason.as_ref().is_some_and(|r| r.value != "Completed")
                {
                    score += 2;
                } else {
                    score += 1;
                }
            }
            if c.restarts() > 0 {
                score += 1;
            }
            if c.ready == Some(false) {
                score += 1;
            }
            if c.kind == ContainerKind::Init && init_failing {
                score += 2;
            }
            if c.kind == ContainerKind::Init
                && c.last_termination().is_some_and(|t| t.exit() == Some(0))
            {
                score -= 3;
            }
            if c.kind == ContainerKind::Sidecar {
                score /= 2;
            }
            (score, c)
        })
        .filter(|(s, _)| *s > 0)
        .max_by_key(|(s, c)| (*s, c.kind == ContainerKind::Main))
        .map(|(_, c)| c)
        .or_else(|| {
            if pod.containers.len() == 1 {
                pod.containers.first()
            } else {
                // Previous logs exist only for a container that restarted.
                pod.logs
                    .iter()
                    .filter(|l| l.kind == LogKind::Previous)
                    .find_map(|l| {
                        let n = l.container.as_deref()?;
                        pod.containers.iter().find(|c| c.name == n)
                    })
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Catalog;

    #[test]
    fn every_catalog_entry_compiles_into_the_scanner() {
        let sigs = crate::catalog::signatures().to_vec();
        let cat = Catalog::new(sigs.clone());
        assert_eq!(cat.len(), sigs.len());
    }

    #[test]
    fn every_cause_but_unknown_has_a_documented_rule() {
        for c in Cause::ALL {
            if *c == Cause::Unknown {
                continue;
            }
            let r = rule(*c).unwrap_or_else(|| panic!("no rule for {c}"));
            for (name, text) in r.doc.sections() {
                assert!(text.len() > 20, "{c}: {name} is too thin");
            }
        }
    }
}

#[cfg(test)]
mod documented_examples {
    use super::*;

    /// Every rule's documented example, read as a paste, is diagnosed as
    /// the rule's own cause (the documentation is a test, as in clippy).
    #[test]
    fn every_rules_example_is_its_own_cause() {
        let mut wrong = Vec::new();
        for r in all() {
            let ev = crate::ingest::read_paste(r.doc.example.as_bytes(), "example")
                .unwrap_or_else(|e| panic!("{}: the example cannot be read: {e}", r.cause));
            let rep = crate::diagnose::diagnose(&ev.pods[0], &[]);
            let got = rep.diagnoses[0].cause;
            if got != r.cause {
                wrong.push(format!(
                    "{}: its example is diagnosed {got}: {:?}",
                    r.cause, r.doc.example
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
