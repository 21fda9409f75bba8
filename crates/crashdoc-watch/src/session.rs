//! A watch session's decisions, as a pure state machine (kube-runtime's
//! watcher pattern): [`on_event`] takes the [`State`] and one [`Event`] and
//! returns the [`Action`]s to take. No IO, no clock, no channel: the async
//! loop in `lib.rs` turns watcher events and the stop signal into events and
//! only executes the actions (metrics, health, logs, the capture queue, the
//! baselines). Everything decided here is unit-tested with hand-built pods,
//! as [`crate::track`] is.

use crate::metrics::RestartLabels;
use crate::track::{self, Seen, Termination, Tracker};
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashSet;
use std::time::Duration;

/// A change to the persisted baselines.
#[derive(Debug, Clone, PartialEq)]
pub enum BaselineOp {
    Set((String, String, i32)),
    Forget(String),
    /// After a list: every pod not in it is gone.
    Keep(HashSet<String>),
}

/// What the session is told.
#[derive(Debug, Clone)]
pub enum Event {
    /// A (re-)list starts.
    Init,
    /// A pod of the list.
    InitApply(Box<Pod>),
    /// The list is complete.
    InitDone,
    /// A pod changed (or appeared) while watching.
    Apply(Box<Pod>),
    Delete(Box<Pod>),
    /// The watch failed; the watcher retries with back-off.
    Error(String),
    /// The session is asked to stop, at `now`.
    Stop {
        now: jiff::Timestamp,
    },
}

/// A termination to capture (the loop stamps when it was queued).
#[derive(Debug, Clone)]
pub struct ToCapture {
    pub term: Termination,
    pub pod: Box<Pod>,
    pub workload: Option<(String, String)>,
    pub node: Option<String>,
}

/// What the loop does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Count a (re-)start of the watch.
    WatchRestarted,
    /// A log line shown only with `--verbose`.
    Verbose(String),
    WatchedPods(usize),
    TrackedContainers(usize),
    /// The list is complete, or the watch delivers again after an error:
    /// ready.
    Ready,
    /// Log the failure and report it on `/readyz`.
    Degraded(String),
    /// Persist a baseline change (only when a later run resumes from them).
    Baseline(BaselineOp),
    /// Terminations no update showed: count and log them.
    Unobserved {
        labels: RestartLabels,
        count: u32,
        log: String,
    },
    /// A termination: count it, then capture it (or, with the queue full,
    /// store it from its status alone).
    Terminated {
        labels: RestartLabels,
        capture: Box<ToCapture>,
    },
    /// Go on reading events for `wait`, then finish (a leader's hand-over).
    DrainFor(Duration),
    /// Stop reading events now.
    Finish,
}

/// A session's state between events.
#[derive(Debug)]
pub struct State {
    tracker: Tracker,
    /// Pods the watch shows now.
    in_view: HashSet<String>,
    /// Pods of the list in progress.
    listing: HashSet<String>,
    /// A leader hands over at a whole second: after the stop it reports only
    /// terminations that finished before it; the next leader reports those
    /// that finished at or after it.
    cutoff: Option<jiff::Timestamp>,
    /// One instance (no leader election): baselines are persisted, and a
    /// stop ends the session at once.
    resume_from_history: bool,
    /// An error was reported and neither a list nor a watch event has
    /// followed it yet.
    degraded: bool,
    pub terminations: u64,
    pub unobserved: u64,
}

impl State {
    /// A session reporting terminations of unknown containers that finished
    /// at or after `since` (`None`: all of them).
    pub fn new(since: Option<jiff::Timestamp>, resume_from_history: bool) -> Self {
        State {
            tracker: Tracker::new(since),
            in_view: HashSet::new(),
            listing: HashSet::new(),
            cutoff: None,
            resume_from_history,
            degraded: false,
            terminations: 0,
            unobserved: 0,
        }
    }

    /// Seed a container's baseline from the history.
    pub fn seed(&mut self, id: track::ContainerId, n: i32) {
        self.tracker.seed(id, n);
    }

    /// The hand-over instant, once a leader's session was stopped.
    pub fn cutoff(&self) -> Option<jiff::Timestamp> {
        self.cutoff
    }

    /// Whether an error was the last word on the watch (`/readyz` 503).
    pub fn degraded(&self) -> bool {
        self.degraded
    }

    /// Whether a leader's session was stopped and drains until its cutoff.
    pub fn stopping(&self) -> bool {
        self.cutoff.is_some()
    }
}

/// `t` rounded up to a whole second.
pub(crate) fn ceil_sec(t: jiff::Timestamp) -> jiff::Timestamp {
    let up = i64::from(t.subsec_nanosecond() > 0);
    jiff::Timestamp::from_second(t.as_second() + up).unwrap_or(t)
}

/// The decisions one event brings.
pub fn on_event(st: &mut State, ev: Event) -> Vec<Action> {
    let mut out = Vec::new();
    let pod = match ev {
        Event::Init => {
            st.listing.clear();
            out.push(Action::WatchRestarted);
            out.push(Action::Verbose("watch: listing pods".into()));
            return out;
        }
        Event::InitApply(p) => {
            if let Some(uid) = &p.metadata.uid {
                st.listing.insert(uid.clone());
            }
            p
        }
        Event::InitDone => {
            // Pods gone while we were not watching: forget them.
            st.tracker.retain_pods(&st.listing);
            st.in_view = std::mem::take(&mut st.listing);
            if st.resume_from_history {
                out.push(Action::Baseline(BaselineOp::Keep(st.in_view.clone())));
            }
            out.push(Action::WatchedPods(st.in_view.len()));
            out.push(Action::TrackedContainers(st.tracker.len()));
            st.degraded = false;
            out.push(Action::Ready);
            out.push(Action::Verbose(format!(
                "watch: {} pods listed; watching",
                st.in_view.len()
            )));
            return out;
        }
        Event::Apply(p) => {
            recovered(st, &mut out);
            if let Some(uid) = &p.metadata.uid
                && st.in_view.insert(uid.clone())
            {
                out.push(Action::WatchedPods(st.in_view.len()));
            }
            p
        }
        Event::Delete(p) => {
            recovered(st, &mut out);
            if let Some(uid) = &p.metadata.uid {
                st.tracker.forget(uid);
                if st.resume_from_history {
                    out.push(Action::Baseline(BaselineOp::Forget(uid.clone())));
                }
                st.in_view.remove(uid);
                out.push(Action::WatchedPods(st.in_view.len()));
                out.push(Action::TrackedContainers(st.tracker.len()));
            }
            return out;
        }
        Event::Error(msg) => {
            st.degraded = true;
            out.push(Action::Degraded(msg));
            return out;
        }
        Event::Stop { now } => {
            if st.cutoff.is_some() {
                return out;
            }
            if st.resume_from_history {
                out.push(Action::Finish);
                return out;
            }
            let c = ceil_sec(now);
            st.cutoff = Some(c);
            out.push(Action::DrainFor(
                (c - now).unsigned_abs() + Duration::from_millis(500),
            ));
            return out;
        }
    };
    observe(st, pod, &mut out);
    out
}

/// A watch event after an error: the watch delivers again, ready.
///
/// kube-runtime 5.0.0's watcher (`src/watcher.rs` `step_trampolined`) yields
/// `Apply`/`Delete` only from its `Watching` state, i.e. from a watch opened
/// at the resourceVersion of a complete list or of the last event it passed
/// on. After a lost connection or a failed watch start it goes back to
/// `InitListed { resource_version }` and resumes from there (a 410 alone
/// sends it to `Empty`, a re-list: `Init` .. `InitDone`). The resumed watch
/// yields no marker of its own: a successful watch start and bookmarks are
/// swallowed (`(None, State::Watching { .. })`), so its first `Apply` or
/// `Delete` is the first sign that events flow again, continuous with what
/// was seen before the error. An error still recurring comes as another
/// `Error` and keeps the session degraded.
fn recovered(st: &mut State, out: &mut Vec<Action>) {
    if st.degraded {
        st.degraded = false;
        out.push(Action::Ready);
        out.push(Action::Verbose(
            "watch: resumed from its resourceVersion; watching".into(),
        ));
    }
}

/// A pod update: its new terminations, and the baselines it sets.
fn observe(st: &mut State, pod: Box<Pod>, out: &mut Vec<Action>) {
    let seen = st.tracker.observe(&pod);
    let fresh = st.tracker.take_fresh();
    if st.resume_from_history {
        out.extend(
            fresh
                .into_iter()
                .map(|b| Action::Baseline(BaselineOp::Set(b))),
        );
    }
    if seen.is_empty() {
        return;
    }
    out.push(Action::TrackedContainers(st.tracker.len()));
    let workload = track::workload_of(&pod);
    let (owner_kind, owner) = workload.clone().unwrap_or_default();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    for s in seen {
        match s {
            Seen::Unobserved {
                namespace,
                pod: name,
                container,
                count,
                ..
            } => {
                st.unobserved += u64::from(count);
                out.push(Action::Unobserved {
                    log: format!(
                        "{namespace}/{name} {container}: {count} termination(s) happened while they could not be observed (counted as Unobserved)"
                    ),
                    labels: RestartLabels {
                        namespace,
                        owner_kind: owner_kind.clone(),
                        owner: owner.clone(),
                        container,
                        reason: "Unobserved".into(),
                        exit_code: String::new(),
                    },
                    count,
                });
            }
            Seen::Terminated(term) => {
                if let (Some(c), Some(f)) = (st.cutoff, term.finished_at)
                    && f >= c
                {
                    // The next leader's.
                    continue;
                }
                st.terminations += 1;
                out.push(Action::Terminated {
                    labels: RestartLabels {
                        namespace: term.namespace.clone(),
                        owner_kind: owner_kind.clone(),
                        owner: owner.clone(),
                        container: term.container.clone(),
                        reason: term.reason.clone().unwrap_or_else(|| "Unknown".into()),
                        exit_code: term.exit_code.to_string(),
                    },
                    capture: Box::new(ToCapture {
                        term,
                        pod: pod.clone(),
                        workload: workload.clone(),
                        node: node.clone(),
                    }),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2026-11-29T10:00:00Z";

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    /// A Deployment's pod whose container `app` crashed `crashes` times,
    /// the last termination (run `crashes - 1`) finishing at `finished`, as
    /// the kubelet shows it in the back-off: `state.waiting`,
    /// `restartCount` the crashed run's, `lastState` = that run. No crash
    /// yet: run 0 running.
    fn pod(uid: &str, crashes: i32, finished: &str) -> Box<Pod> {
        let status = if crashes > 0 {
            json!({"name": "app", "image": "x", "imageID": "", "ready": false,
                "restartCount": crashes - 1,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "finishedAt": finished}}})
        } else {
            json!({"name": "app", "image": "x", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}})
        };
        Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": format!("web-7d9f-{uid}"), "namespace": "shop", "uid": uid,
                    "labels": {"pod-template-hash": "7d9f"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "name": "web-7d9f", "uid": "rs1", "controller": true}]},
                "spec": {"containers": [{"name": "app"}], "nodeName": "n1"},
                "status": {"containerStatuses": [status]}
            }))
            .unwrap(),
        )
    }

    fn captures(actions: &[Action]) -> Vec<(String, i32)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Terminated { capture, .. } => {
                    Some((capture.term.uid.clone(), capture.term.restart_count))
                }
                _ => None,
            })
            .collect()
    }

    fn baselines(actions: &[Action]) -> Vec<&BaselineOp> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Baseline(b) => Some(b),
                _ => None,
            })
            .collect()
    }

    /// A session after a list of `pods`.
    fn listed(st: &mut State, pods: impl IntoIterator<Item = Box<Pod>>) -> Vec<Action> {
        let mut out = on_event(st, Event::Init);
        for p in pods {
            out.extend(on_event(st, Event::InitApply(p)));
        }
        out.extend(on_event(st, Event::InitDone));
        out
    }

    #[test]
    fn a_new_termination_is_counted_labelled_and_captured() {
        let mut st = State::new(None, true);
        listed(&mut st, vec![pod("a", 0, T0)]);
        let out = on_event(&mut st, Event::Apply(pod("a", 1, T0)));
        assert_eq!(captures(&out), vec![("a".to_string(), 0)]);
        let Some(Action::Terminated { labels, capture }) =
            out.iter().find(|a| matches!(a, Action::Terminated { .. }))
        else {
            panic!("{out:?}")
        };
        assert_eq!(
            (labels.owner_kind.as_str(), labels.owner.as_str()),
            ("Deployment", "web")
        );
        assert_eq!(
            (labels.reason.as_str(), labels.exit_code.as_str()),
            ("OOMKilled", "137")
        );
        assert_eq!(capture.node.as_deref(), Some("n1"));
        assert_eq!(st.terminations, 1);
        // The same status again: nothing new.
        let again = on_event(&mut st, Event::Apply(pod("a", 1, T0)));
        assert!(captures(&again).is_empty(), "{again:?}");
        assert_eq!(st.terminations, 1);
    }

    #[test]
    fn restarts_no_update_showed_are_unobserved_not_captured() {
        let mut st = State::new(None, true);
        listed(&mut st, vec![pod("a", 1, T0)]);
        let out = on_event(&mut st, Event::Apply(pod("a", 4, T0)));
        // run 3's termination is shown; runs 1 and 2 were not.
        assert_eq!(captures(&out), vec![("a".to_string(), 3)]);
        let unobserved: Vec<u32> = out
            .iter()
            .filter_map(|a| match a {
                Action::Unobserved { count, labels, .. } => {
                    assert_eq!(labels.reason, "Unobserved");
                    Some(*count)
                }
                _ => None,
            })
            .collect();
        assert_eq!(unobserved, vec![2]);
        assert_eq!(st.unobserved, 2);
    }

    #[test]
    fn the_in_view_set_follows_lists_applies_and_deletes() {
        let mut st = State::new(None, false);
        let out = listed(&mut st, vec![pod("a", 0, T0), pod("b", 0, T0)]);
        assert!(matches!(out[0], Action::WatchRestarted));
        assert!(out.iter().any(|a| matches!(a, Action::WatchedPods(2))));
        assert!(out.iter().any(|a| matches!(a, Action::Ready)));
        // A new pod enters the view; an update of a known one does not change it.
        let out = on_event(&mut st, Event::Apply(pod("c", 0, T0)));
        assert!(
            out.iter().any(|a| matches!(a, Action::WatchedPods(3))),
            "{out:?}"
        );
        let out = on_event(&mut st, Event::Apply(pod("c", 0, T0)));
        assert!(
            !out.iter().any(|a| matches!(a, Action::WatchedPods(_))),
            "{out:?}"
        );
        let out = on_event(&mut st, Event::Delete(pod("a", 0, T0)));
        assert!(
            out.iter().any(|a| matches!(a, Action::WatchedPods(2))),
            "{out:?}"
        );
        // A re-list without b: b is gone, and so is its baseline.
        let out = listed(&mut st, vec![pod("c", 0, T0)]);
        assert!(
            out.iter().any(|a| matches!(a, Action::WatchedPods(1))),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|a| matches!(a, Action::TrackedContainers(1))),
            "{out:?}"
        );
    }

    #[test]
    fn a_deleted_and_relisted_pod_is_forgotten_so_its_next_termination_counts() {
        let mut st = State::new(None, false);
        listed(&mut st, vec![pod("a", 2, T0)]);
        on_event(&mut st, Event::Delete(pod("a", 2, T0)));
        // Known again from scratch: its last termination is reported.
        let out = on_event(&mut st, Event::Apply(pod("a", 2, T0)));
        assert_eq!(captures(&out), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn baselines_are_persisted_only_when_a_later_run_resumes_from_them() {
        let mut st = State::new(None, true);
        let out = listed(&mut st, vec![pod("a", 0, T0)]);
        let b = baselines(&out);
        assert!(
            b.iter()
                .any(|b| matches!(b, BaselineOp::Set((u, c, _)) if u == "a" && c == "app")),
            "{b:?}"
        );
        assert!(
            b.iter()
                .any(|b| matches!(b, BaselineOp::Keep(k) if k.contains("a")))
        );
        let out = on_event(&mut st, Event::Delete(pod("a", 0, T0)));
        assert!(matches!(baselines(&out)[..], [BaselineOp::Forget(u)] if u == "a"));

        // Near miss: a leader's session keeps none.
        let mut st = State::new(None, false);
        let mut out = listed(&mut st, vec![pod("a", 0, T0)]);
        out.extend(on_event(&mut st, Event::Delete(pod("a", 0, T0))));
        assert!(baselines(&out).is_empty(), "{out:?}");
    }

    #[test]
    fn a_single_instance_stops_at_once() {
        let mut st = State::new(None, true);
        let out = on_event(&mut st, Event::Stop { now: ts(T0) });
        assert!(matches!(out[..], [Action::Finish]), "{out:?}");
        assert_eq!(st.cutoff(), None);
    }

    #[test]
    fn a_leader_drains_to_the_next_whole_second_and_leaves_later_terminations() {
        let mut st = State::new(None, false);
        listed(&mut st, vec![pod("a", 0, T0), pod("b", 0, T0)]);
        let out = on_event(
            &mut st,
            Event::Stop {
                now: ts("2026-11-29T10:00:04.25Z"),
            },
        );
        assert!(
            matches!(out[..], [Action::DrainFor(d)] if d == Duration::from_millis(1250)),
            "{out:?}"
        );
        assert_eq!(st.cutoff(), Some(ts("2026-11-29T10:00:05Z")));
        assert!(st.stopping());
        // A second stop changes nothing.
        assert!(
            on_event(
                &mut st,
                Event::Stop {
                    now: ts("2026-11-29T10:00:04.9Z")
                }
            )
            .is_empty()
        );
        assert_eq!(st.cutoff(), Some(ts("2026-11-29T10:00:05Z")));
        // Finished before the cutoff: this leader's; at it: the next one's.
        let out = on_event(&mut st, Event::Apply(pod("a", 1, "2026-11-29T10:00:04Z")));
        assert_eq!(captures(&out), vec![("a".to_string(), 0)]);
        let out = on_event(&mut st, Event::Apply(pod("b", 1, "2026-11-29T10:00:05Z")));
        assert!(captures(&out).is_empty(), "{out:?}");
        assert_eq!(st.terminations, 1);
    }

    #[test]
    fn terminations_before_since_are_a_baseline_only() {
        let mut st = State::new(Some(ts("2026-11-29T10:00:01Z")), false);
        let out = listed(
            &mut st,
            vec![pod("a", 1, T0), pod("b", 1, "2026-11-29T10:00:01Z")],
        );
        assert_eq!(captures(&out), vec![("b".to_string(), 0)]);
    }

    #[test]
    fn a_seeded_container_resumes_from_the_history() {
        let mut st = State::new(None, true);
        st.seed(("a".into(), "app".into()), 2);
        let out = listed(&mut st, vec![pod("a", 3, T0)]);
        assert!(captures(&out).is_empty(), "{out:?}");
        let out = on_event(&mut st, Event::Apply(pod("a", 4, T0)));
        assert_eq!(captures(&out), vec![("a".to_string(), 3)]);
    }

    #[test]
    fn a_watch_error_degrades_and_a_list_makes_ready_again() {
        let mut st = State::new(None, false);
        let out = on_event(&mut st, Event::Error("410 Gone".into()));
        assert!(matches!(&out[..], [Action::Degraded(m)] if m == "410 Gone"));
        let out = listed(&mut st, []);
        assert!(out.iter().any(|a| matches!(a, Action::Ready)));
        assert!(!st.degraded());
    }

    fn readies(actions: &[Action]) -> usize {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Ready))
            .count()
    }

    #[test]
    fn a_watch_resumed_without_a_relist_is_ready_at_its_first_event() {
        let mut st = State::new(None, false);
        listed(&mut st, vec![pod("a", 1, T0), pod("b", 0, T0)]);
        // Ready and watching: an update is no new readiness.
        let out = on_event(&mut st, Event::Apply(pod("b", 0, T0)));
        assert_eq!(readies(&out), 0, "{out:?}");
        // A blackout: the stream is cut and the watch start fails twice.
        for msg in ["error reading watch stream", "failed to start watching"] {
            let out = on_event(&mut st, Event::Error(msg.into()));
            assert!(
                matches!(&out[..], [Action::Degraded(m)] if m == msg),
                "{out:?}"
            );
            assert!(st.degraded());
        }
        // The watcher resumes from its resourceVersion (no Init): its first
        // event makes the session ready again, and the termination counts.
        let out = on_event(&mut st, Event::Apply(pod("a", 2, T0)));
        assert_eq!(readies(&out), 1, "{out:?}");
        assert_eq!(captures(&out), vec![("a".to_string(), 1)]);
        assert!(!st.degraded());
        let out = on_event(&mut st, Event::Apply(pod("a", 3, T0)));
        assert_eq!(readies(&out), 0, "{out:?}");
        // A delete is an event of the resumed watch as well.
        on_event(&mut st, Event::Error("connection reset".into()));
        let out = on_event(&mut st, Event::Delete(pod("b", 0, T0)));
        assert_eq!(readies(&out), 1, "{out:?}");
    }

    #[test]
    fn a_watch_still_erroring_stays_degraded() {
        let mut st = State::new(None, false);
        listed(&mut st, vec![pod("a", 1, T0)]);
        for _ in 0..3 {
            let out = on_event(&mut st, Event::Error("failed to start watching".into()));
            assert_eq!(readies(&out), 0, "{out:?}");
            assert!(st.degraded());
        }
        // A re-list in progress is not ready before its end either.
        let mut out = on_event(&mut st, Event::Init);
        out.extend(on_event(&mut st, Event::InitApply(pod("a", 1, T0))));
        assert_eq!(readies(&out), 0, "{out:?}");
        assert!(st.degraded());
        // And it fails before InitDone: still degraded.
        on_event(&mut st, Event::Error("list failed".into()));
        assert!(st.degraded());
    }
}
