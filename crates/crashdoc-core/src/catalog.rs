//! The knowledge catalog: everything crashdoc recognises in text, as data.
//!
//! The YAML files under `crates/crashdoc-core/catalog/` (format:
//! `catalog/README.md`) are compiled into the binary. Each entry gives a
//! pattern, where it can stand, the cause it supports and how strongly, its
//! meaning, its source (the file in the software that prints it) and a test
//! line. The one-pass log scanner ([`crate::scan::Catalog`]) and the
//! event, status and free-text matching all read these entries;
//! `crashdoc explain CAUSE` prints them and `crashdoc catalog` lists them.
//!
//! `kubernetes-vocabulary.yaml` is Kubernetes' own vocabulary, extracted from
//! its source: every container reason and event reason with its message
//! template, each mapped to a cause or marked `none` with the reason why.
//! Reasons are looked up by name ([`reason`]); message templates become
//! entries of the catalog too, so a kubelet message is recognised in any
//! text it is pasted into.

use crate::causes::Cause;
use crate::scan::{SigKind, Signature, Stage};
use crate::strength::Strength;
use serde::Deserialize;
use std::sync::LazyLock;

/// The catalog's files, in the order they are read.
pub const FILES: &[(&str, &str)] = &[
    (
        "general.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/general.json")),
    ),
    (
        "markers.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/markers.json")),
    ),
    (
        "model-server-stages.yaml",
        include_str!(concat!(
            env!("OUT_DIR"),
            "/catalog/model-server-stages.json"
        )),
    ),
    (
        "kubernetes.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/kubernetes.json")),
    ),
    (
        "container-runtime.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/container-runtime.json")),
    ),
    (
        "nvidia-container.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/nvidia-container.json")),
    ),
    (
        "cuda.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/cuda.json")),
    ),
    (
        "gpu-frameworks.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/gpu-frameworks.json")),
    ),
    (
        "model-servers.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/model-servers.json")),
    ),
    (
        "errno.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/errno.json")),
    ),
    (
        "runtimes.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/runtimes.json")),
    ),
    (
        "cpu.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/cpu.json")),
    ),
    (
        "databases.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/databases.json")),
    ),
    (
        "infrastructure.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/infrastructure.json")),
    ),
    (
        "app-frameworks.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/app-frameworks.json")),
    ),
    (
        "node-lifecycle.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/node-lifecycle.json")),
    ),
    (
        "k8s-ecosystem.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/k8s-ecosystem.json")),
    ),
    (
        "clients.yaml",
        include_str!(concat!(env!("OUT_DIR"), "/catalog/clients.json")),
    ),
    (
        "observability-messaging.yaml",
        include_str!(concat!(
            env!("OUT_DIR"),
            "/catalog/observability-messaging.json"
        )),
    ),
];

/// Kubernetes' vocabulary, extracted from its source.
pub const VOCABULARY: (&str, &str) = (
    "kubernetes-vocabulary.yaml",
    include_str!(concat!(
        env!("OUT_DIR"),
        "/catalog/kubernetes-vocabulary.json"
    )),
);

/// Where a text stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// A container's own output.
    Log,
    /// An event's reason or message.
    Event,
    /// A container state's reason or message, a pod's status reason or message.
    State,
    /// A node condition's reason or message.
    Node,
    /// Any text of any input (a pasted journal, dmesg, tool output).
    Any,
}

impl Place {
    pub fn id(self) -> &'static str {
        match self {
            Place::Log => "log",
            Place::Event => "event",
            Place::State => "state",
            Place::Node => "node",
            Place::Any => "any",
        }
    }
}

/// The places an entry may be matched at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Places(u8);

impl Places {
    /// A container's output only.
    pub const LOG: Places = Places(1);

    fn bit(p: Place) -> u8 {
        1 << (p as u8)
    }

    pub fn of(places: &[Place]) -> Places {
        Places(places.iter().fold(0, |a, p| a | Places::bit(*p)))
    }

    /// Whether an entry with these places counts for a text at `at`. Free
    /// text (`Any`) may hold anything, so every entry counts there; an
    /// entry declared `any` counts everywhere.
    pub fn allow(self, at: Place) -> bool {
        at == Place::Any || self.0 & (Places::bit(at) | Places::bit(Place::Any)) != 0
    }

    pub fn list(self) -> Vec<Place> {
        [
            Place::Log,
            Place::Event,
            Place::State,
            Place::Node,
            Place::Any,
        ]
        .into_iter()
        .filter(|p| self.0 & Places::bit(*p) != 0)
        .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    family: String,
    entries: Vec<RawEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: String,
    cause: String,
    strength: Strength,
    #[serde(rename = "where")]
    places: Vec<Place>,
    keywords: Vec<String>,
    #[serde(default)]
    regex: Option<String>,
    meaning: String,
    source: String,
    test: String,
    #[serde(default)]
    near_miss: Vec<String>,
}

/// What kind of name a vocabulary entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VocabKind {
    EventReason,
    WaitingReason,
    TerminatedReason,
    PodReason,
    PodConditionReason,
    NodeCondition,
    RuntimeMessage,
}

impl VocabKind {
    pub fn id(self) -> &'static str {
        match self {
            VocabKind::EventReason => "event-reason",
            VocabKind::WaitingReason => "waiting-reason",
            VocabKind::TerminatedReason => "terminated-reason",
            VocabKind::PodReason => "pod-reason",
            VocabKind::PodConditionReason => "pod-condition-reason",
            VocabKind::NodeCondition => "node-condition",
            VocabKind::RuntimeMessage => "runtime-message",
        }
    }
}

/// One name of Kubernetes' vocabulary.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VocabEntry {
    pub kind: VocabKind,
    pub name: String,
    pub component: String,
    #[serde(default)]
    pub message: Option<String>,
    pub source: String,
    /// A cause id, or `none`.
    pub cause: String,
    #[serde(default)]
    pub strength: Option<Strength>,
    pub why: String,
}

impl VocabEntry {
    /// The cause it supports, and how strongly; `None` for `none`.
    pub fn supports(&self) -> Option<(Cause, Strength)> {
        let c = self.cause.parse::<Cause>().ok()?;
        Some((c, self.strength.unwrap_or(Strength::Weak)))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vocabulary {
    /// The Kubernetes version the vocabulary was read from.
    pub kubernetes: String,
    pub entries: Vec<VocabEntry>,
}

/// A problem with the catalog's data (the test suite runs [`check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub entry: String,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.entry, self.what)
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn kind_of(cause: &str) -> Result<SigKind, String> {
    Ok(match cause {
        "signal:sigterm" => SigKind::Sigterm,
        "signal:exception" => SigKind::Exception,
        s if s.starts_with("stage:") => SigKind::Stage(match &s["stage:".len()..] {
            "download" => Stage::Download,
            "load-weights" => Stage::LoadWeights,
            "weights-loaded" => Stage::WeightsLoaded,
            "kv-cache" => Stage::KvCache,
            "cuda-graphs" => Stage::CudaGraphs,
            "listening" => Stage::Listening,
            other => return Err(format!("unknown stage {other:?}")),
        }),
        s => SigKind::Cause(
            s.parse::<Cause>()
                .map_err(|_| format!("unknown cause {s:?}"))?,
        ),
    })
}

fn entry_signature(family: &str, file: &str, e: RawEntry) -> Result<Signature, String> {
    let kind = kind_of(&e.cause)?;
    if kind == SigKind::Cause(Cause::Unknown) {
        return Err("an entry cannot support `unknown`".into());
    }
    if e.keywords.is_empty() {
        return Err("no keyword".into());
    }
    for k in &e.keywords {
        if k.trim().len() < 3 || k.contains('\n') {
            return Err(format!(
                "keyword {k:?} is shorter than 3 characters or spans lines"
            ));
        }
    }
    if e.places.is_empty() {
        return Err("no place (`where`)".into());
    }
    if matches!(e.strength, Strength::Hint | Strength::Certain) {
        return Err("`hint` and `certain` are the rules' levels (the status alone; a status field naming the cause), not a message's".into());
    }
    let keywords: Vec<&'static str> = e.keywords.into_iter().map(leak).collect();
    Ok(Signature {
        id: leak(e.id),
        kind,
        strength: e.strength,
        places: Places::of(&e.places),
        keywords: Vec::leak(keywords),
        regex: e.regex.map(leak),
        meaning: leak(e.meaning),
        source: leak(e.source),
        family: leak(family.to_string()),
        file: leak(file.to_string()),
        test: leak(e.test),
        near_miss: Vec::leak(e.near_miss.into_iter().map(leak).collect()),
    })
}

/// The longest literal run of a message template, and the template as a
/// regular expression (`%s`, `%v`, `%d`, `%q` ... match any text).
pub fn template_pattern(template: &str) -> Option<(String, String)> {
    static VERB: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"%[-+# 0-9.*]*[a-zA-Z%]|\{[^{}]*\}").expect("static regex")
    });
    let mut rx = String::from("(?i)");
    let mut longest = "";
    let mut last = 0;
    for m in VERB.find_iter(template) {
        let lit = &template[last..m.start()];
        if lit.trim().len() > longest.trim().len() {
            longest = lit;
        }
        rx.push_str(&regex::escape(lit));
        rx.push_str(if m.as_str() == "%%" { "%" } else { ".*?" });
        last = m.end();
    }
    let lit = &template[last..];
    if lit.trim().len() > longest.trim().len() {
        longest = lit;
    }
    rx.push_str(&regex::escape(lit.trim_end_matches(['.', '\n'])));
    let keyword = longest.trim().trim_end_matches('.').trim();
    (keyword.len() >= 10 && !keyword.contains('\n')).then(|| (keyword.to_string(), rx))
}

/// A vocabulary entry with a cause and a message template, as a catalog
/// entry: its longest literal run selects a line, the template decides.
fn vocab_signature(v: &VocabEntry, version: &str) -> Option<Signature> {
    let (cause, strength) = v.supports()?;
    let (keyword, rx) = template_pattern(v.message.as_deref()?)?;
    let test = static_fill(v.message.as_deref()?);
    Some(Signature {
        id: leak(format!(
            "k8s.{}.{}",
            v.kind.id(),
            v.name.to_ascii_lowercase().replace([' ', '_', ':'], "-")
        )),
        kind: SigKind::Cause(cause),
        strength,
        places: Places::of(&[Place::Event, Place::State, Place::Node, Place::Any]),
        keywords: Vec::leak(vec![leak(keyword)]),
        regex: Some(leak(rx)),
        meaning: leak(v.why.clone()),
        source: leak(format!("kubernetes {version} {}", v.source)),
        family: "kubernetes-vocabulary",
        file: VOCABULARY.0,
        test: leak(test),
        near_miss: &[],
    })
}

/// A template with its placeholders filled, for the entry's test line.
fn static_fill(template: &str) -> String {
    static VERB: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"%[-+# 0-9.*]*[a-zA-Z]|\{[^{}]*\}").expect("static regex")
    });
    VERB.replace_all(template, "x1").replace("%%", "%")
}

/// A vocabulary name, ready for lookup: its message template as a regular
/// expression (to tell apart entries of one name), and the cause it
/// supports as a catalog entry.
struct Reason {
    kind: VocabKind,
    name: &'static str,
    /// The message template as a regular expression, compiled the first
    /// time a reason of this name is looked up with a message.
    template: Option<String>,
    template_rx: std::sync::OnceLock<Option<regex::Regex>>,
    sig: Option<&'static Signature>,
}

impl Reason {
    fn template_matches(&self, message: &str) -> bool {
        self.template_rx
            .get_or_init(|| {
                self.template
                    .as_deref()
                    .and_then(|rx| regex::Regex::new(rx).ok())
            })
            .as_ref()
            .is_some_and(|t| t.is_match(message))
    }
}

struct Loaded {
    signatures: Vec<&'static Signature>,
    vocabulary: Vocabulary,
    reasons: Vec<Reason>,
    problems: Vec<Problem>,
}

/// A vocabulary entry as the catalog entry that a matching reason field
/// stands for (looked up by name, never scanned for).
fn reason_signature(v: &VocabEntry, version: &str, n: usize) -> Option<Signature> {
    let (cause, strength) = v.supports()?;
    let slug = v
        .name
        .to_ascii_lowercase()
        .replace([' ', '_', ':', '/'], "-");
    Some(Signature {
        id: leak(format!("k8s.reason.{}.{slug}.{n}", v.kind.id())),
        kind: SigKind::Cause(cause),
        strength,
        places: Places::of(&[Place::Event, Place::State, Place::Node]),
        keywords: Vec::leak(vec![leak(v.name.clone())]),
        regex: None,
        meaning: leak(v.why.clone()),
        source: leak(format!("kubernetes {version} {}", v.source)),
        family: "kubernetes-vocabulary",
        file: VOCABULARY.0,
        test: "",
        near_miss: &[],
    })
}

fn load() -> Loaded {
    let mut problems = Vec::new();
    let mut signatures: Vec<&'static Signature> = Vec::new();
    for (file, text) in FILES {
        let raw: RawFile = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                problems.push(Problem {
                    file: file.to_string(),
                    entry: "-".into(),
                    what: format!("not a catalog file: {e}"),
                });
                continue;
            }
        };
        for e in raw.entries {
            let id = e.id.clone();
            match entry_signature(&raw.family, file, e) {
                Ok(s) => signatures.push(Box::leak(Box::new(s))),
                Err(what) => problems.push(Problem {
                    file: file.to_string(),
                    entry: id,
                    what,
                }),
            }
        }
    }
    let vocabulary: Vocabulary = match serde_json::from_str(VOCABULARY.1) {
        Ok(v) => v,
        Err(e) => {
            problems.push(Problem {
                file: VOCABULARY.0.into(),
                entry: "-".into(),
                what: format!("not a vocabulary file: {e}"),
            });
            Vocabulary {
                kubernetes: "?".into(),
                entries: vec![],
            }
        }
    };
    for v in &vocabulary.entries {
        if let Some(s) = vocab_signature(v, &vocabulary.kubernetes)
            && !signatures.iter().any(|x| x.id == s.id)
        {
            signatures.push(Box::leak(Box::new(s)));
        }
    }
    let reasons = vocabulary
        .entries
        .iter()
        .enumerate()
        .map(|(n, v)| Reason {
            kind: v.kind,
            name: leak(v.name.clone()),
            template: v
                .message
                .as_deref()
                .and_then(template_pattern)
                .map(|(_, rx)| rx),
            template_rx: std::sync::OnceLock::new(),
            sig: reason_signature(v, &vocabulary.kubernetes, n).map(|s| &*Box::leak(Box::new(s))),
        })
        .collect();
    Loaded {
        signatures,
        vocabulary,
        reasons,
        problems,
    }
}

static LOADED: LazyLock<Loaded> = LazyLock::new(load);

/// Every entry of the catalog, the vocabulary's message templates included.
pub fn signatures() -> &'static [&'static Signature] {
    &LOADED.signatures
}

/// Kubernetes' vocabulary.
pub fn vocabulary() -> &'static Vocabulary {
    &LOADED.vocabulary
}

/// The entries that support a cause.
pub fn for_cause(cause: Cause) -> impl Iterator<Item = &'static Signature> {
    signatures()
        .iter()
        .copied()
        .filter(move |s| s.kind == SigKind::Cause(cause))
}

/// The catalog entry a Kubernetes reason stands for (`OOMKilled` as a
/// terminated reason, `FailedMount` as an event reason), or `None` when the
/// vocabulary marks it `none` or does not know it. When one name has several
/// entries (`Unhealthy` for liveness and readiness), the one whose message
/// template matches `message` decides; without a match, they must agree.
pub fn reason_support(
    kind: VocabKind,
    name: &str,
    message: Option<&str>,
) -> Option<&'static Signature> {
    let all: Vec<&Reason> = LOADED
        .reasons
        .iter()
        .filter(|r| r.kind == kind && r.name == name)
        .collect();
    if let Some(m) = message
        && let Some(r) = all.iter().find(|r| r.template_matches(m))
    {
        return r.sig;
    }
    let first = all.first()?.sig?;
    all.iter()
        .all(|r| r.sig.is_some_and(|s| s.kind == first.kind))
        .then_some(first)
}

/// Everything wrong with the catalog's data: unreadable files, malformed
/// entries, duplicate ids, regexes that do not compile, test lines that do
/// not match their entry (or match a near miss), vocabulary entries
/// without a cause or a reason.
pub fn check() -> Vec<Problem> {
    let mut out = LOADED.problems.clone();
    let mut seen = std::collections::HashSet::new();
    let p = |s: &Signature, what: String| Problem {
        file: s.file.to_string(),
        entry: s.id.to_string(),
        what,
    };
    for s in signatures() {
        if !seen.insert(s.id) {
            out.push(p(s, "duplicate id".into()));
        }
        for (name, v) in [
            ("meaning", s.meaning),
            ("source", s.source),
            ("test", s.test),
        ] {
            if v.trim().is_empty() || v.trim() == "TODO" {
                out.push(p(s, format!("no {name}")));
            }
        }
        if let Some(r) = s.regex
            && let Err(e) = regex::Regex::new(r)
        {
            out.push(p(s, format!("regex does not compile: {e}")));
            continue;
        }
        if s.test.trim() != "TODO" && !s.matches(s.test) {
            out.push(p(
                s,
                format!("its test line does not match it: {:?}", s.test),
            ));
        }
        for nm in s.near_miss {
            if s.matches(nm) {
                out.push(p(s, format!("a near miss matches it: {nm:?}")));
            }
        }
    }
    for v in &vocabulary().entries {
        let vp = |what: String| Problem {
            file: VOCABULARY.0.into(),
            entry: format!("{} {}", v.kind.id(), v.name),
            what,
        };
        if v.cause != "none" && v.cause.parse::<Cause>().is_err() {
            out.push(vp(format!("unknown cause {:?}", v.cause)));
        }
        if v.cause != "none" && v.strength.is_none() {
            out.push(vp("a cause without a strength".into()));
        }
        if v.why.trim().is_empty() || v.source.trim().is_empty() {
            out.push(vp("unmapped: no reason (`why`) or no source".into()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_sound() {
        let problems = check();
        assert!(
            problems.is_empty(),
            "{} problems:\n{}",
            problems.len(),
            problems
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    #[test]
    fn every_vocabulary_entry_is_mapped() {
        let v = vocabulary();
        assert!(!v.entries.is_empty(), "the vocabulary is empty");
        for e in &v.entries {
            assert!(
                e.cause == "none" || e.supports().is_some(),
                "{} {}: cause {:?} is neither a cause id nor none",
                e.kind.id(),
                e.name,
                e.cause
            );
        }
    }

    #[test]
    fn templates_become_patterns() {
        let (k, rx) =
            template_pattern("Back-off restarting failed container %s in pod %s").unwrap();
        assert_eq!(k, "Back-off restarting failed container");
        let r = regex::Regex::new(&rx).unwrap();
        assert!(r.is_match("Back-off restarting failed container web in pod web-1_default(uid)"));
        assert!(template_pattern("%s").is_none());
        assert!(template_pattern("failed %v").is_none());
    }

    #[test]
    fn reasons_are_looked_up_by_name_and_message() {
        let oom = reason_support(VocabKind::TerminatedReason, "OOMKilled", None).unwrap();
        assert_eq!(oom.kind, SigKind::Cause(Cause::OomKilled));
        assert!(reason_support(VocabKind::WaitingReason, "CrashLoopBackOff", None).is_none());
        let live = reason_support(
            VocabKind::EventReason,
            "Unhealthy",
            Some("Liveness probe failed: HTTP probe failed with statuscode: 500"),
        )
        .unwrap();
        assert_eq!(live.kind, SigKind::Cause(Cause::ProbeKill));
        // The near miss: a readiness probe never kills.
        assert!(
            reason_support(
                VocabKind::EventReason,
                "Unhealthy",
                Some("Readiness probe failed: connection refused")
            )
            .is_none()
        );
        assert!(reason_support(VocabKind::EventReason, "NoSuchReason", None).is_none());
    }

    #[test]
    fn places() {
        let p = Places::of(&[Place::Log]);
        assert!(p.allow(Place::Log));
        assert!(p.allow(Place::Any));
        assert!(!p.allow(Place::Event));
        let a = Places::of(&[Place::Any]);
        assert!(a.allow(Place::Event) && a.allow(Place::Log));
    }
}

#[cfg(test)]
mod crosstalk {
    use super::*;

    /// Test lines that a stronger entry of another cause also matches: the
    /// line would be read as that other cause.
    pub fn conflicts() -> Vec<String> {
        let scanner = crate::scan::Catalog::global();
        let mut out = Vec::new();
        for s in signatures() {
            let SigKind::Cause(own) = s.kind else {
                continue;
            };
            if s.test.is_empty() {
                continue;
            }
            for o in scanner.classify(s.test) {
                if let SigKind::Cause(c) = o.kind
                    && c != own
                    && o.strength > s.strength
                {
                    out.push(format!(
                        "{} ({own}, {}) is outranked on its own test line by {} ({c}, {}): {:?}",
                        s.id, s.strength, o.id, o.strength, s.test
                    ));
                }
            }
        }
        out
    }

    /// Lines healthy programs print match no entry of a cause.
    #[test]
    fn benign_lines_match_no_cause() {
        let scanner = crate::scan::Catalog::global();
        let mut bad = Vec::new();
        for line in include_str!("../catalog/benign.txt").lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            for s in scanner.classify(line) {
                if matches!(s.kind, SigKind::Cause(_)) {
                    bad.push(format!("{} matches {line:?}", s.id));
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn no_test_line_is_read_as_another_cause() {
        let c = conflicts();
        assert!(c.is_empty(), "{} conflicts:\n{}", c.len(), c.join("\n"));
    }
}
