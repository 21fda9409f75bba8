//! What changed between the last healthy revision and the failing one, and
//! whether any of it coincides with the first crash: the `changes` object of
//! each pod in the JSON report, and the "What changed" section.
//!
//! A change coincides when it is relevant (a template change with
//! `relevant: true`, a config object changed or missing a referenced key, a
//! node difference every failing pod shares) and happened after the last
//! healthy revision started running and before the first crash. A template
//! change always precedes its own pods' crashes. Cosmetic changes (labels,
//! annotations such as `kubectl.kubernetes.io/restartedAt`) never coincide.

use super::config::{self, ConfigChange};
use super::nodes::{self, NodeDiff};
use super::pods::{self, FirstCrash, PodFacts};
use super::revisions::{self, GENERATED_LABELS, Revision};
use super::{Change, ChangeKind, diff_templates};
use crate::ingest::rollout::{RolloutInput, Sourced};
use crate::model::{Cite, Pod, StateKind};
use crate::time::parse_timestamp;
use serde::Serialize;

/// `changes.verdict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A relevant change happened between the last healthy run and the first crash.
    Coincides,
    /// Revisions were compared and no change explains the crash.
    NothingExplains,
    /// The failing revision is known but there is nothing to compare it with.
    NoComparison,
}

/// One side of the comparison (`changes.revisions.failing|last_healthy`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionRef {
    pub number: Option<u64>,
    pub name: String,
    pub rolled_out: Option<String>,
    /// Last healthy only: `ran-healthy` (a pod of it was Ready without a
    /// restart for a while), `still-ready` (its ReplicaSet has ready
    /// replicas), `previous` (the revision before, health not observed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<&'static str>,
    pub cite: Cite,
}

impl RevisionRef {
    /// `revision N`, or `template NAME` when it has no number.
    pub fn words(&self) -> String {
        match self.number {
            Some(n) => format!("revision {n}"),
            None => format!("template {}", self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionPair {
    pub failing: RevisionRef,
    pub last_healthy: Option<RevisionRef>,
}

/// One entry of `changes.timeline`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    pub at: String,
    pub what: String,
    pub cite: Cite,
}

/// `pods[].changes` of the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangesReport {
    pub verdict: Verdict,
    pub revisions: RevisionPair,
    /// The template diff, cosmetic entries included (`relevant: false`).
    pub template: Vec<Change>,
    pub config: Vec<ConfigChange>,
    pub nodes: Vec<NodeDiff>,
    /// The earliest first crash of the failing revision's pods.
    pub first_crash: Option<FirstCrash>,
    /// Each crashing pod's first crash and node, earliest first.
    pub first_crashes: Vec<FirstCrash>,
    pub timeline: Vec<TimelineEntry>,
    /// The changes that coincide with the first crash, one sentence each.
    pub coinciding: Vec<String>,
    /// `kubectl rollout undo KIND/NAME [-n NS] --to-revision=N`, only when a
    /// template change coincides.
    pub undo: Option<String>,
    /// The workload compared (`deployment/web`).
    pub workload: Option<String>,
}

impl ChangesReport {
    /// The last healthy revision in words (`revision 2`), or `the last
    /// healthy revision` when none was found.
    pub fn last_healthy_words(&self) -> String {
        self.revisions
            .last_healthy
            .as_ref()
            .map(RevisionRef::words)
            .unwrap_or_else(|| "the last healthy revision".into())
    }
}

/// The revision comparison for one pod, or `None` when the input has
/// nothing to compare (no revision files, one ReplicaSet of the owner chain).
pub fn analyze(pod: &Pod) -> Option<ChangesReport> {
    let input: &RolloutInput = &pod.rollout;
    if input.is_empty() {
        return None;
    }
    let (subject, all_pods, revs) = scope(pod, input)?;
    let failing_i = failing_index(&revs, subject, pod)?;
    let facts: Vec<PodFacts> = dedup_pods(&all_pods)
        .into_iter()
        .map(PodFacts::of)
        .collect();
    let now = pods::newest_time(&facts, &input.events);
    let healthy_i = healthy_index(&revs, failing_i, &facts, now);
    let failing = &revs[failing_i];
    let healthy = healthy_i.map(|(i, basis)| (&revs[i], basis));

    // The failing revision's crashing pods, and the healthy one's healthy pods.
    let crashing: Vec<&PodFacts> = facts
        .iter()
        .filter(|p| failing.runs(&p.source.value) && p.crashing)
        .collect();
    // Each crashing pod's first crash, earliest first; the pod's model when
    // the input has no status object of it.
    let mut first_crashes: Vec<FirstCrash> = crashing
        .iter()
        .filter_map(|p| pods::first_crash(p, &input.events))
        .collect();
    if first_crashes.is_empty() {
        first_crashes.extend(model_first_crash(pod));
    }
    first_crashes.sort_by_key(|f| (f.secs(), f.pod.clone()));
    let first_crash = first_crashes.first().cloned();

    let template: Vec<Change> = match healthy {
        // A printed revision against a JSON one: both cut to what the
        // printout shows.
        Some((h, _)) if h.printed != failing.printed => diff_templates(
            &super::project::printed_view(&h.template),
            &super::project::printed_view(&failing.template),
        )
        .into_iter()
        .filter(|c| !is_generated_label(&c.path))
        .collect(),
        Some((h, _)) => diff_templates(&h.template, &failing.template)
            .into_iter()
            .filter(|c| !is_generated_label(&c.path))
            .collect(),
        None => Vec::new(),
    };
    let crash_at = first_crash.as_ref().and_then(FirstCrash::secs);
    let since = healthy.and_then(|(h, _)| h.rolled_out_secs());
    let config = config::compare(&failing.template, &input.config, (since, crash_at));
    let nodes = match healthy {
        Some((h, _)) => {
            let f_nodes: Vec<String> = crashing.iter().filter_map(|p| p.node.clone()).collect();
            let h_nodes: Vec<String> = facts
                .iter()
                .filter(|p| h.runs(&p.source.value) && p.healthy(now))
                .filter_map(|p| p.node.clone())
                .collect();
            nodes::compare(&input.nodes, &f_nodes, &h_nodes)
        }
        None => Vec::new(),
    };

    let since_words = match healthy {
        Some((h, _)) => format!("{} rolled out", revision_words(h)),
        None => "the last healthy revision".into(),
    };
    let mut coinciding: Vec<String> = template
        .iter()
        .filter(|c| c.relevant)
        .map(change_sentence)
        .collect();
    let template_coincides = !coinciding.is_empty();
    coinciding.extend(
        config
            .iter()
            .filter(|c| c.in_window)
            .map(|c| c.sentence(&since_words)),
    );
    coinciding.extend(
        nodes
            .iter()
            .filter(|n| n.shared_by_all_failing)
            .map(NodeDiff::sentence),
    );

    let workload = workload_of(pod, &revs, failing);
    let undo = match (template_coincides, healthy, &workload) {
        (true, Some((h, _)), Some(w)) => h.number.map(|n| {
            let ns = pod
                .namespace
                .as_ref()
                .map(|n| format!(" -n {n}"))
                .unwrap_or_default();
            format!("kubectl rollout undo {w}{ns} --to-revision={n}")
        }),
        _ => None,
    };
    // Without a healthy revision, config times have no window and no node
    // has a healthy counterpart: nothing was compared.
    let verdict = if !coinciding.is_empty() {
        Verdict::Coincides
    } else if healthy.is_some() {
        Verdict::NothingExplains
    } else {
        Verdict::NoComparison
    };
    let timeline = timeline(&revs, &config, &first_crashes);
    Some(ChangesReport {
        verdict,
        revisions: RevisionPair {
            failing: rev_ref(failing, None),
            last_healthy: healthy.map(|(h, b)| rev_ref(h, Some(b))),
        },
        template,
        config,
        nodes,
        first_crash,
        first_crashes,
        timeline,
        coinciding,
        undo,
        workload,
    })
}

/// The pod's own status object, the pods of its workload and the
/// workload's revisions; `None` when the pod does not crash or there is
/// nothing to compare.
type Scope<'a> = (Option<&'a Sourced>, Vec<&'a Sourced>, Vec<Revision>);

fn scope<'a>(pod: &Pod, input: &'a RolloutInput) -> Option<Scope<'a>> {
    let name = pod.name.as_deref().unwrap_or("");
    let listed: Vec<&Sourced> = input
        .workload_pods
        .iter()
        .chain(input.pods.iter())
        .collect();
    let subject = listed.iter().find(|p| p.name() == name).copied();
    // A pod that neither restarts nor crash-loops has no first crash to explain.
    // Its own status object decides when the input has it (a pasted list's
    // fragments can lend one pod another's last state).
    let restarting = match subject {
        Some(s) => {
            let f = PodFacts::of(s);
            f.crashing || f.restarts > 0
        }
        None => {
            pod.is_restarting()
                || pod.containers.iter().any(|c| {
                    c.waiting_reason()
                        .is_some_and(|r| pods::START_FAILURES.contains(&r.value.as_str()))
                })
        }
    };
    if !restarting {
        return None;
    }
    // Only this pod's workload: a pasted pod list may hold other workloads.
    let key = subject
        .and_then(|s| revisions::workload_key(&s.value))
        .or_else(|| model_workload(pod));
    let same = |v: &serde_json::Value| key.is_none() || revisions::workload_key(v) == key;
    let all_pods: Vec<&Sourced> = listed.into_iter().filter(|p| same(&p.value)).collect();
    let mut revs: Vec<Revision> = revisions::collect(input)
        .into_iter()
        .filter(|r| match (&r.owner, &key) {
            (Some((k, n)), Some((kk, kn))) => k == kk && n == kn,
            _ => true,
        })
        .collect();
    let extra = revisions::from_pods(&all_pods, &revs);
    revs.extend(extra);
    if revs.is_empty() || (!input.dedicated && revs.len() < 2) {
        return None;
    }
    Some((subject, all_pods, revs))
}

fn dedup_pods<'a>(pods: &[&'a Sourced]) -> Vec<&'a Sourced> {
    let mut out: Vec<&Sourced> = Vec::new();
    for p in pods {
        if !out.iter().any(|x| x.name() == p.name()) {
            out.push(p);
        }
    }
    out
}

fn is_generated_label(path: &str) -> bool {
    GENERATED_LABELS
        .iter()
        .any(|l| path == format!("metadata.labels[{l}]"))
}

fn revision_words(r: &Revision) -> String {
    match r.number {
        Some(n) => format!("revision {n}"),
        None => format!("template {}", r.name),
    }
}

fn rev_ref(r: &Revision, basis: Option<&'static str>) -> RevisionRef {
    RevisionRef {
        number: r.number,
        name: r.name.clone(),
        rolled_out: r.rolled_out.clone(),
        basis,
        cite: r.cite.clone(),
    }
}

/// `spec.containers[app].image: web:1.4.0 -> web:1.5.0`.
pub fn change_sentence(c: &Change) -> String {
    match (c.kind, &c.old, &c.new) {
        (_, Some(o), Some(n)) => format!("{}: {o} -> {n}", c.path),
        (ChangeKind::Added, _, Some(n)) => format!("{}: added {n}", c.path),
        (ChangeKind::Removed, Some(o), _) => format!("{}: removed {o}", c.path),
        (ChangeKind::Added, _, _) => format!("{}: added", c.path),
        (ChangeKind::Removed, _, _) => format!("{}: removed", c.path),
        _ => format!("{}: changed (value hidden)", c.path),
    }
}

/// The revision the crashing pod runs: by its hash label or owner, else the
/// newest revision that is not fully ready, else the newest.
fn failing_index(revs: &[Revision], subject: Option<&Sourced>, pod: &Pod) -> Option<usize> {
    if let Some(p) = subject
        && let Some(i) = revs.iter().position(|r| r.runs(&p.value))
    {
        return Some(i);
    }
    // `Controlled By: ReplicaSet/web-7d9c6b5f8` of a describe: the
    // ReplicaSet's name, or the Deployment's name and the revision's hash.
    if let Some(o) = &pod.owner
        && let Some(i) = revs.iter().position(|r| {
            r.name == o.name || r.hashes.iter().any(|h| o.name.ends_with(&format!("-{h}")))
        })
    {
        return Some(i);
    }
    let numbered: Vec<usize> = (0..revs.len())
        .filter(|&i| revs[i].number.is_some())
        .collect();
    let newest = *numbered.first()?;
    let r = &revs[newest];
    match (r.replicas, r.ready) {
        (Some(want), Some(ready)) if want > 0 && ready >= want => None,
        _ => Some(newest),
    }
}

/// The newest revision before the failing one whose pods ran healthy;
/// without pods, a ReplicaSet still ready, else the previous revision.
fn healthy_index(
    revs: &[Revision],
    failing: usize,
    facts: &[PodFacts],
    now: Option<i64>,
) -> Option<(usize, &'static str)> {
    let f = &revs[failing];
    let older: Vec<usize> = (0..revs.len())
        .filter(|&i| i != failing && revs[i].from_pod == f.from_pod)
        .filter(|&i| match (revs[i].number, f.number) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        })
        .collect();
    if let Some(&i) = older.iter().find(|&&i| {
        facts
            .iter()
            .any(|p| revs[i].runs(&p.source.value) && p.healthy(now))
    }) {
        return Some((i, "ran-healthy"));
    }
    // Pods of an older revision that all crash too: that one was not healthy.
    let crashed = |i: usize| {
        let mine: Vec<&PodFacts> = facts
            .iter()
            .filter(|p| revs[i].runs(&p.source.value))
            .collect();
        !mine.is_empty() && mine.iter().all(|p| p.crashing)
    };
    if let Some(&i) = older
        .iter()
        .find(|&&i| revs[i].ready.is_some_and(|r| r > 0) && !crashed(i))
    {
        return Some((i, "still-ready"));
    }
    older
        .iter()
        .find(|&&i| revs[i].number.is_some() && !crashed(i))
        .map(|&i| (i, "previous"))
}

/// The workload of a pod known only from its model (describe output).
fn model_workload(pod: &Pod) -> Option<(String, String)> {
    let o = match &pod.owner {
        Some(o) if o.kind == "ReplicaSet" => {
            crate::ingest::infer_owner(&format!("{}-xxxxx", o.name)).unwrap_or_else(|| o.clone())
        }
        Some(o) => o.clone(),
        None => crate::ingest::infer_owner(pod.name.as_deref()?)?,
    };
    Some((o.kind, o.name))
}

/// `deployment/web`: the pod's owner, the revision's owner, the history header.
fn workload_of(pod: &Pod, revs: &[Revision], failing: &Revision) -> Option<String> {
    let word = |k: &str| match k {
        "Deployment" => Some("deployment"),
        "StatefulSet" => Some("statefulset"),
        "DaemonSet" => Some("daemonset"),
        _ => None,
    };
    if let Some(o) = &pod.owner
        && let Some(w) = word(&o.kind)
    {
        return Some(format!("{w}/{}", o.name));
    }
    std::iter::once(failing)
        .chain(revs.iter())
        .filter_map(|r| r.owner.as_ref())
        .find_map(|(k, n)| word(k).map(|w| format!("{w}/{n}")))
}

/// Without the pod's own status object, its model: the earliest
/// `lastState.terminated.finishedAt`.
fn model_first_crash(pod: &Pod) -> Option<FirstCrash> {
    pod.containers
        .iter()
        .filter_map(|c| {
            let t = c.last_state.as_ref()?;
            let at = t.finished_at.clone()?;
            parse_timestamp(&at)?;
            Some(FirstCrash {
                pod: pod.name.clone().unwrap_or_default(),
                node: pod.node_name.clone(),
                restarts: u64::from(c.restarts()),
                precision: if pods::last_state_is_first_run(
                    c.state.as_ref().is_some_and(|s| {
                        matches!(s.kind, StateKind::Running | StateKind::Terminated)
                    }),
                    u64::from(c.restarts()),
                ) {
                    "exact"
                } else {
                    "no-later-than"
                },
                cite: Cite {
                    reference: format!(
                        "status.containerStatuses[{}].lastState.terminated.finishedAt",
                        c.name
                    ),
                    ..t.kind_cite.clone()
                },
                at,
            })
        })
        .min_by_key(|f| f.secs())
}

fn timeline(
    revs: &[Revision],
    config: &[ConfigChange],
    crashes: &[FirstCrash],
) -> Vec<TimelineEntry> {
    let mut out: Vec<(i64, TimelineEntry)> = Vec::new();
    let mut push = |at: &str, what: String, cite: Cite| {
        if let Some(s) = parse_timestamp(at) {
            out.push((
                s,
                TimelineEntry {
                    at: at.to_string(),
                    what,
                    cite,
                },
            ));
        }
    };
    for r in revs {
        if let Some(at) = &r.rolled_out {
            push(
                at,
                format!("{} rolled out ({})", revision_words(r), r.name),
                r.cite.clone(),
            );
        }
    }
    for c in config {
        if let Some(at) = &c.changed {
            push(at, format!("{} {} changed", c.kind, c.name), c.cite.clone());
        }
    }
    for f in crashes {
        let on = f.on_node();
        let (what, when) = match f.precision {
            "exact" => ("first crashed", ""),
            "since-start" => ("failing since it started", ""),
            _ => ("first crashed", " (no later than)"),
        };
        push(
            &f.at,
            format!("pod {} {what}{on}{when}", f.pod),
            f.cite.clone(),
        );
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.what.cmp(&b.1.what)));
    out.into_iter().map(|(_, e)| e).collect()
}
