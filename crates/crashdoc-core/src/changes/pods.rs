//! Pods of the workload: which ran healthy, which crash, and when each
//! first crashed (from `status.containerStatuses[]` and BackOff events).
//!
//! Fields (kubernetes v1.36.3 staging/src/k8s.io/api/core/v1/types.go):
//! `restartCount`, `lastState.terminated.finishedAt`, `state.running.startedAt`,
//! `state.waiting.reason`, `ready`; the pod's `Ready` condition. The
//! kubelet's `BackOff` event ("Back-off restarting failed container",
//! pkg/kubelet/events/event.go `BackOffStartContainer`) carries
//! `firstTimestamp` (or `eventTime`).

use crate::ingest::rollout::{Sourced, TimedEvent};
use crate::model::{Cite, SourceKind};
use crate::time::parse_timestamp;
use serde::Serialize;
use serde_json::Value;

/// The kubelet's waiting reasons for a container it could not start, so
/// that the pod fails without a run to restart (kubernetes v1.36.3
/// pkg/kubelet/kuberuntime/kuberuntime_container.go `ErrCreateContainerConfig`,
/// `ErrCreateContainer`; pkg/kubelet/container/sync_result.go
/// `ErrRunContainer`; pkg/kubelet/images/types.go `ErrImagePullBackOff`,
/// `ErrImagePull`, `ErrImageInspect`, `ErrImageNeverPull`,
/// `ErrInvalidImageName`). A revision whose pods wait like this failed as
/// surely as one whose pods crash-loop.
pub const START_FAILURES: &[&str] = &[
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "ImagePullBackOff",
    "ErrImagePull",
    "ImageInspectError",
    "ErrImageNeverPull",
    "InvalidImageName",
];

/// A run that lasted this long without a restart counts as healthy.
pub const HEALTHY_FOR_SECONDS: i64 = 600;

/// What one pod tells the comparison.
#[derive(Debug, Clone)]
pub struct PodFacts<'a> {
    pub source: &'a Sourced,
    pub name: String,
    pub node: Option<String>,
    pub restarts: u64,
    pub ready: bool,
    /// Waiting in CrashLoopBackOff, restarted after a terminated run, or
    /// waiting for a container the kubelet cannot start ([`START_FAILURES`]).
    pub crashing: bool,
    /// The first container waiting in a [`START_FAILURES`] reason: its index
    /// in `status.containerStatuses` and the reason.
    pub start_failure: Option<(usize, String)>,
    /// The start of the current run of its least stable container.
    pub running_since: Option<i64>,
}

impl<'a> PodFacts<'a> {
    pub fn of(source: &'a Sourced) -> PodFacts<'a> {
        let v = &source.value;
        let statuses: Vec<&Value> = v
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let restarts = statuses
            .iter()
            .filter_map(|c| c.get("restartCount").and_then(Value::as_u64))
            .max()
            .unwrap_or(0);
        let waiting_crash = statuses.iter().any(|c| {
            c.pointer("/state/waiting/reason").and_then(Value::as_str) == Some("CrashLoopBackOff")
        });
        let start_failure = statuses.iter().enumerate().find_map(|(i, c)| {
            let r = c.pointer("/state/waiting/reason").and_then(Value::as_str)?;
            START_FAILURES.contains(&r).then(|| (i, r.to_string()))
        });
        let terminated_before = statuses
            .iter()
            .any(|c| c.pointer("/lastState/terminated").is_some());
        let ready_condition = v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
            })
            .and_then(|c| c.get("status").and_then(Value::as_str))
            .map(|s| s == "True");
        let all_ready = !statuses.is_empty()
            && statuses
                .iter()
                .all(|c| c.get("ready").and_then(Value::as_bool) == Some(true));
        let running_since = statuses
            .iter()
            .filter_map(|c| {
                c.pointer("/state/running/startedAt")
                    .and_then(Value::as_str)
            })
            .filter_map(parse_timestamp)
            .max();
        PodFacts {
            source,
            name: source.name().to_string(),
            node: v
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .map(str::to_string),
            restarts,
            ready: ready_condition.unwrap_or(all_ready) && all_ready,
            crashing: waiting_crash
                || start_failure.is_some()
                || (restarts > 0 && terminated_before && !all_ready),
            start_failure,
            running_since,
        }
    }

    /// Ready, and without a restart for [`HEALTHY_FOR_SECONDS`] before `now`
    /// (the newest time the input records), or never restarted.
    pub fn healthy(&self, now: Option<i64>) -> bool {
        if !self.ready || self.crashing {
            return false;
        }
        if self.restarts == 0 {
            return true;
        }
        match (self.running_since, now) {
            (Some(s), Some(n)) => n - s >= HEALTHY_FOR_SECONDS,
            _ => false,
        }
    }
}

/// When a pod first crashed, and how that is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirstCrash {
    pub pod: String,
    pub node: Option<String>,
    /// RFC 3339.
    pub at: String,
    pub restarts: u64,
    /// `exact` (the first run's finishedAt, or the first BackOff or
    /// Failed event), `no-later-than` (a later run's), or
    /// `since-start` (a container that never started: the pod's
    /// `status.startTime`, when no event dates the first failure).
    pub precision: &'static str,
    pub cite: Cite,
}

impl FirstCrash {
    pub fn secs(&self) -> Option<i64> {
        parse_timestamp(&self.at)
    }

    /// ` on node NAME`, or nothing when the node is unknown.
    pub fn on_node(&self) -> String {
        self.node
            .as_deref()
            .map(|n| format!(" on node {n}"))
            .unwrap_or_default()
    }

    /// The crash time is exact, not a no-later-than bound.
    pub fn is_exact(&self) -> bool {
        self.precision == "exact"
    }

    /// How to read the time, for a sentence: nothing when exact.
    pub fn qualifier(&self) -> &'static str {
        match self.precision {
            "exact" => "",
            "since-start" => "failing since the pod started at ",
            _ => "no later than ",
        }
    }
}

/// Whether a container's `lastState.terminated` is its first run's (the
/// container created with restart count 0), so that its `finishedAt` is the
/// first crash. The status' `restartCount` is the newest container's
/// (kubernetes v1.36.3 `pkg/kubelet/kuberuntime/kuberuntime_container.go`
/// `startContainer` gives a new container the previous count plus one), and
/// `lastState` is the second newest container where the status shows a newer
/// one (`newer_shown`: `state.running`, `state.terminated`, or a
/// `containerID` other than `lastState`'s), the newest where it does not
/// (the back-off, `pkg/kubelet/kubelet_pods.go`
/// `convertToAPIContainerStatuses`). So run 0 is in `lastState` with
/// `restartCount` 1 beside a newer container, 0 in the back-off.
pub(crate) fn last_state_is_first_run(newer_shown: bool, restarts: u64) -> bool {
    if newer_shown {
        restarts <= 1
    } else {
        restarts == 0
    }
}

/// [`last_state_is_first_run`] for a container status object.
fn last_state_is_first_run_of(c: &Value) -> bool {
    let shows = |p: &str| c.pointer(p).is_some_and(|v| !v.is_null());
    let id = |p: &str| {
        c.pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let other_container = matches!(
        (id("/containerID"), id("/lastState/terminated/containerID")),
        (Some(a), Some(b)) if a != b
    );
    let newer_shown = shows("/state/running") || shows("/state/terminated") || other_container;
    let restarts = c.get("restartCount").and_then(Value::as_u64).unwrap_or(0);
    last_state_is_first_run(newer_shown, restarts)
}

/// The earliest crash this pod's status and events tell.
pub fn first_crash(p: &PodFacts, events: &[TimedEvent]) -> Option<FirstCrash> {
    let v = &p.source.value;
    let mut found: Vec<FirstCrash> = Vec::new();
    let statuses = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, c) in statuses.iter().enumerate() {
        let Some(at) = c
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let restarts = c.get("restartCount").and_then(Value::as_u64).unwrap_or(0);
        let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
        found.push(FirstCrash {
            pod: p.name.clone(),
            node: p.node.clone(),
            at: at.to_string(),
            restarts,
            precision: if last_state_is_first_run_of(c) {
                "exact"
            } else {
                "no-later-than"
            },
            cite: p.source.cite(
                SourceKind::Status,
                &format!("status.containerStatuses[{i}].lastState.terminated.finishedAt"),
                format!("{name}: finishedAt {at}, restartCount {restarts}"),
            ),
        });
    }
    // BackOff (a restart, or a pull backing off) and, for a container that
    // cannot start, the kubelet's Failed (pkg/kubelet/events/event.go
    // `FailedToCreateContainer`, `FailedToStartContainer`: "Failed").
    let failed_too = p.start_failure.is_some();
    for e in events.iter().filter(|e| {
        e.object == p.name && (e.reason == "BackOff" || (failed_too && e.reason == "Failed"))
    }) {
        if let Some(at) = &e.first {
            found.push(FirstCrash {
                pod: p.name.clone(),
                node: p.node.clone(),
                at: at.clone(),
                restarts: p.restarts,
                precision: "exact",
                cite: e.cite.clone(),
            });
        }
    }
    if found.is_empty()
        && let Some((i, reason)) = &p.start_failure
        && let Some(at) = v.pointer("/status/startTime").and_then(Value::as_str)
    {
        found.push(FirstCrash {
            pod: p.name.clone(),
            node: p.node.clone(),
            at: at.to_string(),
            restarts: p.restarts,
            precision: "since-start",
            cite: p.source.cite(
                SourceKind::Status,
                &format!("status.containerStatuses[{i}].state.waiting.reason"),
                format!("{reason}, pod started {at}"),
            ),
        });
    }
    found
        .into_iter()
        .filter(|f| f.secs().is_some())
        .min_by_key(|f| (f.secs(), f.precision != "exact"))
}

/// The newest time anywhere in these pods' status: a stand-in for when the
/// input was captured.
pub fn newest_time(pods: &[PodFacts], events: &[TimedEvent]) -> Option<i64> {
    let mut best: Option<i64> = None;
    let mut see = |t: Option<&str>| {
        if let Some(s) = t.and_then(parse_timestamp) {
            best = Some(best.map_or(s, |b| b.max(s)));
        }
    };
    for p in pods {
        let v = &p.source.value;
        for c in v
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for f in [
                "/state/running/startedAt",
                "/lastState/terminated/finishedAt",
                "/state/terminated/finishedAt",
            ] {
                see(c.pointer(f).and_then(Value::as_str));
            }
        }
        for c in v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            see(c.get("lastTransitionTime").and_then(Value::as_str));
        }
    }
    for e in events {
        see(e.last.as_deref());
        see(e.first.as_deref());
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sourced(v: Value) -> Sourced {
        Sourced {
            file: "workload-pods.json".into(),
            at: "items[0]".into(),
            value: v,
        }
    }

    #[test]
    fn health_needs_ready_and_a_quiet_while() {
        let pod = |ready: bool, restarts: u64, started: &str| {
            sourced(
                json!({"metadata":{"name":"web-a"},"spec":{"nodeName":"n1"},"status":{
                "conditions":[{"type":"Ready","status": if ready {"True"} else {"False"}, "lastTransitionTime":"2026-11-30T12:00:00Z"}],
                "containerStatuses":[{"name":"app","ready":ready,"restartCount":restarts,
                    "state":{"running":{"startedAt":started}},
                    "lastState": if restarts > 0 {json!({"terminated":{"finishedAt":started}})} else {json!({})}}]}}),
            )
        };
        let now = parse_timestamp("2026-11-30T12:00:00Z");
        let fresh = pod(true, 0, "2026-11-30T11:59:00Z");
        assert!(PodFacts::of(&fresh).healthy(now));
        let long = pod(true, 2, "2026-11-30T11:00:00Z");
        assert!(PodFacts::of(&long).healthy(now));
        // Restarted a minute ago: ready, but not yet healthy for a while.
        let recent = pod(true, 2, "2026-11-30T11:59:00Z");
        assert!(!PodFacts::of(&recent).healthy(now));
        let unready = pod(false, 0, "2026-11-30T10:00:00Z");
        assert!(!PodFacts::of(&unready).healthy(now));
    }

    #[test]
    fn the_first_runs_finished_at_is_exact_in_each_view_of_its_crash() {
        let precision = |rc: u64, state: Value, id: &str| {
            let p = sourced(
                json!({"metadata":{"name":"web-d"},"status":{"containerStatuses":[
                {"name":"app","restartCount":rc,"containerID":id,"state":state,
                 "lastState":{"terminated":{"exitCode":1,"containerID":"containerd://run0",
                    "finishedAt":"2026-11-30T12:00:00Z"}}}]}}),
            );
            first_crash(&PodFacts::of(&p), &[]).unwrap().precision
        };
        let back_off = || json!({"waiting":{"reason":"CrashLoopBackOff"}});
        // Run 0 in the back-off: restartCount 0.
        assert_eq!(precision(0, back_off(), "containerd://run0"), "exact");
        // Run 1 running, run 0 in lastState: restartCount 1.
        assert_eq!(
            precision(1, json!({"running":{}}), "containerd://run1"),
            "exact"
        );
        // Run 1 just exited, run 0 in lastState: restartCount 1.
        let exited = json!({"terminated":{"exitCode":1,"containerID":"containerd://run1"}});
        assert_eq!(precision(1, exited, "containerd://run1"), "exact");
        // Run 1 created, not started (the status' containerID run 1's).
        assert_eq!(
            precision(1, json!({"waiting":{}}), "containerd://run1"),
            "exact"
        );
        // Near miss: restartCount 1 in the back-off is run 1's crash in
        // lastState (here its ID is the status' own), not the first.
        assert_eq!(
            precision(1, back_off(), "containerd://run0"),
            "no-later-than"
        );
        assert_eq!(precision(1, back_off(), ""), "no-later-than");
        // Near miss: run 2 running shows run 1's crash.
        assert_eq!(
            precision(2, json!({"running":{}}), "containerd://run2"),
            "no-later-than"
        );
    }

    #[test]
    fn the_first_crash_is_the_earliest_known() {
        let p = sourced(
            json!({"metadata":{"name":"web-b"},"spec":{"nodeName":"n2"},"status":{"containerStatuses":[
            {"name":"app","restartCount":4,"state":{"waiting":{"reason":"CrashLoopBackOff"}},
             "lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-11-30T12:10:00Z"}}}]}}),
        );
        let facts = PodFacts::of(&p);
        assert!(facts.crashing && !facts.healthy(None));
        let f = first_crash(&facts, &[]).unwrap();
        assert_eq!(
            (f.at.as_str(), f.precision),
            ("2026-11-30T12:10:00Z", "no-later-than")
        );
        let ev = TimedEvent {
            reason: "BackOff".into(),
            object: "web-b".into(),
            first: Some("2026-11-30T12:01:00Z".into()),
            last: None,
            count: Some(9),
            cite: Cite::new(SourceKind::Event, "events.json items[0] firstTimestamp", ""),
        };
        let other = TimedEvent {
            object: "web-c".into(),
            first: Some("2026-11-30T11:00:00Z".into()),
            ..ev.clone()
        };
        let f = first_crash(&facts, &[ev, other]).unwrap();
        assert_eq!(
            (f.at.as_str(), f.precision),
            ("2026-11-30T12:01:00Z", "exact")
        );
        assert_eq!(f.node.as_deref(), Some("n2"));
    }
}
