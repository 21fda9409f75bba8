//! Which container terminations a pod update reveals, each exactly once.
//!
//! Pure logic, no I/O: the watch loop feeds it every pod it sees (watch
//! events and re-lists alike) and gets back the terminations it has not
//! reported yet.
//!
//! A termination's identity is `(pod uid, container, N)`, where `N` is the
//! restart count the kubelet gave the container that terminated when it
//! created it: a new container gets the newest one's count plus one
//! (kubernetes v1.36.3 `pkg/kubelet/kuberuntime/kuberuntime_container.go`
//! `startContainer`), and `restartCount` is the newest container's
//! (`pkg/kubelet/kubelet_pods.go` `convertToAPIContainerStatuses`). So the
//! kubelet shows run N's crash three ways:
//!
//! - right after the exit: `state.terminated` = run N, `restartCount` N;
//! - once a sync falls in the back-off: `state.waiting` `CrashLoopBackOff`,
//!   `restartCount` still N, `lastState.terminated` = run N;
//! - once run N+1 started: `state.running`, `restartCount` N+1,
//!   `lastState.terminated` = run N.
//!
//! `lastState`'s run is `restartCount - 1` only where the status shows a
//! newer container ([`crashdoc_kube::runs::last_state_run`]); and a
//! termination whose `containerID` is the one recorded for the run last
//! reported is that run, whatever the counts say. All views of the same
//! termination map to the same `N`, so the order and number of updates the
//! watch delivers do not matter.
//!
//! The kubelet keeps only the last termination. When `N` jumps by more than
//! one between two sightings (the watch expired with 410 Gone and re-listed,
//! crashdoc was down, an update was coalesced), the terminations in between
//! cannot be read any more; they are reported as [`Seen::Unobserved`] so that
//! the restart counters still add up to the number of runs that ended.

use crashdoc_kube::runs;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};
use std::collections::{HashMap, HashSet};

/// `(pod uid, container)`.
pub type ContainerId = (String, String);

/// What a pod update revealed about one container.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// A termination seen with its state: capture it.
    Terminated(Termination),
    /// `count` terminations happened that no update showed.
    Unobserved {
        namespace: String,
        pod: String,
        uid: String,
        container: String,
        count: u32,
    },
}

/// One container termination as the pod status shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Termination {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub container: String,
    /// The restart count when it terminated (the `N` of the identity).
    pub restart_count: i32,
    pub reason: Option<String>,
    pub exit_code: i32,
    pub signal: Option<i32>,
    pub finished_at: Option<jiff::Timestamp>,
    pub message: Option<String>,
    pub init: bool,
    /// The run's container ID (`containerID` of the `terminated` state that
    /// reported it; `None` when the status had none): which run's logs
    /// its capture must hold.
    pub container_id: Option<String>,
}

/// The workload a pod belongs to, as its owner references tell without an
/// API call: a ReplicaSet named `<deployment>-<pod-template-hash>` is folded
/// to its Deployment; Jobs, StatefulSets, DaemonSets are taken as they are.
pub fn workload_of(pod: &Pod) -> Option<(String, String)> {
    let owner = pod
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| pod.metadata.owner_references.as_ref()?.first())?;
    if owner.kind == "ReplicaSet" {
        let hash = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash"));
        if let Some(deploy) = hash.and_then(|h| owner.name.strip_suffix(&format!("-{h}"))) {
            return Some(("Deployment".into(), deploy.to_string()));
        }
    }
    Some((owner.kind.clone(), owner.name.clone()))
}

/// The pod's rollout revision, as its labels tell: `pod-template-hash` (the
/// ReplicaSet of a Deployment's rollout) or `controller-revision-hash` (a
/// StatefulSet's or DaemonSet's ControllerRevision). Both are set by the
/// controllers (kubernetes pkg/controller/deployment/sync.go,
/// pkg/controller/history/controller_history.go).
pub fn revision_of(pod: &Pod) -> Option<String> {
    let labels = pod.metadata.labels.as_ref()?;
    labels
        .get("pod-template-hash")
        .or_else(|| labels.get("controller-revision-hash"))
        .filter(|v| !v.is_empty())
        .cloned()
}

/// The last run of a container the tracker knows of.
#[derive(Debug, Clone, PartialEq)]
struct Last {
    /// Its `N`: the highest reported, known from the history, or the last
    /// run a container first seen without a termination had seen end
    /// ([`runs::ended_through`], -1: none).
    n: i32,
    /// Its container ID, when a termination of it was seen with one.
    container_id: Option<String>,
}

/// Remembers, per container, the last termination reported.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The last run known per container.
    last: HashMap<ContainerId, Last>,
    /// Terminations that finished before this instant, on containers the
    /// tracker has no baseline for, are history: not reported (another
    /// replica or an earlier run may have). `None`: report them. Compared
    /// with `finishedAt`, which has whole seconds: give a whole second.
    since: Option<jiff::Timestamp>,
    /// Baselines set since the last [`Tracker::take_fresh`], to persist.
    fresh: Vec<(String, String, i32)>,
}

impl Tracker {
    /// A tracker that reports terminations of unknown containers only when
    /// they finished at or after `since` (`None`: always).
    pub fn new(since: Option<jiff::Timestamp>) -> Self {
        Tracker {
            last: HashMap::new(),
            since,
            fresh: Vec::new(),
        }
    }

    /// Seed the baseline of a container (from the history database).
    pub fn seed(&mut self, id: ContainerId, n: i32) {
        let e = self.last.entry(id).or_insert(Last {
            n,
            container_id: None,
        });
        if n > e.n {
            *e = Last {
                n,
                container_id: None,
            };
        }
    }

    /// The baselines set since the last call — containers first seen
    /// without a termination, or with one from before the start — for the
    /// history, so a restarted watcher counts what it missed on them too.
    pub fn take_fresh(&mut self) -> Vec<(String, String, i32)> {
        std::mem::take(&mut self.fresh)
    }

    /// Containers tracked (memory is one entry per live container).
    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// Forget the containers of a deleted pod.
    pub fn forget(&mut self, uid: &str) {
        self.last.retain(|(u, _), _| u != uid);
    }

    /// After a re-list: forget every pod not in it.
    pub fn retain_pods(&mut self, uids: &HashSet<String>) {
        self.last.retain(|(u, _), _| uids.contains(u));
    }

    /// The terminations this pod update reveals that were not reported yet.
    pub fn observe(&mut self, pod: &Pod) -> Vec<Seen> {
        let mut out = Vec::new();
        let Some(uid) = pod.metadata.uid.as_deref() else {
            return out;
        };
        // A pod being deleted stops its containers: that is shutdown, not a crash.
        if pod.metadata.deletion_timestamp.is_some() {
            return out;
        }
        let Some(status) = pod.status.as_ref() else {
            return out;
        };
        let restart_always = pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.as_deref())
            .is_none_or(|p| p == "Always");
        let sidecars: HashSet<&str> = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"))
            .map(|c| c.name.as_str())
            .collect();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let groups = [
            (status.init_container_statuses.as_ref(), true),
            (status.container_statuses.as_ref(), false),
        ];
        for (statuses, init) in groups {
            for cs in statuses.into_iter().flatten() {
                let id = (uid.to_string(), cs.name.clone());
                let Some((n, state)) = terminated(cs, self.last.get(&id)) else {
                    // Seen without a termination: every later one is new,
                    // judged by its restart count, never by its time.
                    if !self.last.contains_key(&id) {
                        let n = runs::ended_through(cs);
                        self.fresh.push((id.0.clone(), id.1.clone(), n));
                        self.last.insert(
                            id,
                            Last {
                                n,
                                container_id: None,
                            },
                        );
                    }
                    continue;
                };
                let container_id = state.container_id.clone().filter(|id| !id.is_empty());
                // Exit 0 is a crash only where the container is meant to keep
                // running: app containers under restartPolicy Always, and
                // native sidecars. An init container or a Job's container
                // that exits 0 has finished its work.
                let keeps_running = if init {
                    sidecars.contains(cs.name.as_str())
                } else {
                    restart_always
                };
                if state.exit_code == 0 && !keeps_running {
                    continue;
                }
                let finished_at = state.finished_at.as_ref().and_then(|t| timestamp(&t.0));
                match self.last.get(&id).map(|l| l.n) {
                    Some(last) if n <= last => continue,
                    Some(last) => {
                        let gap = n - last - 1;
                        if gap > 0 {
                            out.push(Seen::Unobserved {
                                namespace: namespace.clone(),
                                pod: name.clone(),
                                uid: uid.to_string(),
                                container: cs.name.clone(),
                                count: gap as u32,
                            });
                        }
                    }
                    None => {
                        if let (Some(since), Some(f)) = (self.since, finished_at)
                            && f < since
                        {
                            // Known only from before we started: a baseline.
                            self.fresh.push((id.0.clone(), id.1.clone(), n));
                            self.last.insert(id, Last { n, container_id });
                            continue;
                        }
                    }
                }
                self.last.insert(
                    id,
                    Last {
                        n,
                        container_id: container_id.clone(),
                    },
                );
                out.push(Seen::Terminated(Termination {
                    namespace: namespace.clone(),
                    pod: name.clone(),
                    uid: uid.to_string(),
                    container: cs.name.clone(),
                    restart_count: n,
                    reason: state.reason.clone(),
                    exit_code: state.exit_code,
                    signal: state.signal,
                    finished_at,
                    message: state.message.clone(),
                    init,
                    container_id,
                }));
            }
        }
        out
    }
}

/// k8s-openapi's jiff (0.2) timestamp as the workspace's jiff 1.
fn timestamp(t: &k8s_openapi::jiff::Timestamp) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_nanosecond(t.as_nanosecond()).ok()
}

/// The termination a container status shows, with its `N`:
/// `state.terminated`, else `lastState.terminated`, numbered as
/// [`runs::terminated_run`] and [`runs::last_state_run`] say, except that a
/// termination with the container ID recorded for the last run `known` is
/// that run.
fn terminated<'a>(
    cs: &'a ContainerStatus,
    known: Option<&Last>,
) -> Option<(i32, &'a ContainerStateTerminated)> {
    let recorded = |t: &ContainerStateTerminated| {
        let known = known?;
        let id = t.container_id.as_deref().filter(|id| !id.is_empty())?;
        (known.container_id.as_deref() == Some(id)).then_some(known.n)
    };
    if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
        return Some((recorded(t).or(runs::terminated_run(cs))?, t));
    }
    let t = cs.last_state.as_ref()?.terminated.as_ref()?;
    Some((recorded(t).or(runs::last_state_run(cs))?, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, statuses: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-7d9f-abcde", "namespace": "shop", "uid": uid,
                "labels": {"pod-template-hash": "7d9f"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-7d9f", "uid": "rs1", "controller": true}]},
            "spec": {"containers": [{"name": "app"}]},
            "status": {"containerStatuses": statuses}
        }))
        .unwrap()
    }

    /// The container ID of run `n` (the container created with restart count `n`).
    fn cid(n: i32) -> String {
        format!("containerd://run{n}")
    }

    fn term(n: i32, reason: &str, code: i32) -> serde_json::Value {
        json!({"terminated": {"exitCode": code, "reason": reason, "containerID": cid(n),
            "finishedAt": "2026-11-29T10:00:00Z"}})
    }

    /// Run `n` crashed and a sync fell in the back-off: `state.waiting`,
    /// `restartCount` still `n`, `lastState` = run `n` (the status keeps
    /// run `n`'s container ID).
    fn crashed(n: i32, reason: &str, code: i32) -> serde_json::Value {
        json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": n, "containerID": cid(n),
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": term(n, reason, code)}])
    }

    /// Right after run `n` exited: `state.terminated` = run `n`,
    /// `restartCount` `n`, `lastState` = run `n - 1`.
    fn terminated_now(n: i32, code: i32) -> serde_json::Value {
        let last = if n > 0 {
            term(n - 1, "Error", 1)
        } else {
            json!({})
        };
        json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": n, "containerID": cid(n),
            "state": term(n, "Error", code), "lastState": last}])
    }

    /// Run `n + 1` started after run `n` crashed: `state.running`,
    /// `restartCount` `n + 1`, `lastState` = run `n`.
    fn restarted(n: i32) -> serde_json::Value {
        json!([{"name": "app", "image": "x", "imageID": "", "ready": true,
            "restartCount": n + 1, "containerID": cid(n + 1),
            "state": {"running": {"startedAt": "2026-11-29T10:00:10Z"}},
            "lastState": term(n, "Error", 1)}])
    }

    fn terms(seen: &[Seen]) -> Vec<(String, i32)> {
        seen.iter()
            .filter_map(|s| match s {
                Seen::Terminated(t) => Some((t.container.clone(), t.restart_count)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn one_termination_in_all_three_views_is_reported_once() {
        let mut t = Tracker::new(None);
        // Run 2 just died (state terminated, restartCount 2) ...
        let a = t.observe(&pod("u1", terminated_now(2, 1)));
        assert_eq!(terms(&a), vec![("app".into(), 2)]);
        // ... a sync falls in the back-off: the same run in lastState, the
        // restart count unchanged ...
        let b = t.observe(&pod("u1", crashed(2, "Error", 1)));
        assert!(b.is_empty(), "{b:?}");
        // ... then run 3 starts: the same termination, restartCount 3.
        assert!(t.observe(&pod("u1", restarted(2))).is_empty());
        // The same update delivered again (a re-list) changes nothing.
        assert!(t.observe(&pod("u1", restarted(2))).is_empty());
        // The next crash is new: run 3.
        let c = t.observe(&pod("u1", crashed(3, "OOMKilled", 137)));
        assert_eq!(terms(&c), vec![("app".into(), 3)]);
        assert!(t.observe(&pod("u1", restarted(3))).is_empty());
    }

    #[test]
    fn the_exit_view_is_the_run_of_the_restart_count() {
        let mut t = Tracker::new(None);
        assert_eq!(
            terms(&t.observe(&pod("u1", terminated_now(2, 1)))),
            vec![("app".into(), 2)]
        );
        // Near miss: the next run's exit is new, and not one of the runs
        // between (there are none).
        let seen = t.observe(&pod("u1", terminated_now(3, 1)));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(terms(&seen), vec![("app".into(), 3)]);
    }

    #[test]
    fn the_back_off_view_is_the_run_of_the_restart_count_not_the_one_before() {
        let mut t = Tracker::new(None);
        assert_eq!(
            terms(&t.observe(&pod("u1", crashed(2, "Error", 1)))),
            vec![("app".into(), 2)]
        );
        // The next run's exit seen only in the back-off: run 3, with nothing
        // unobserved in between (numbered 2 it would be swallowed as run 2).
        let seen = t.observe(&pod("u1", crashed(3, "Error", 1)));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(terms(&seen), vec![("app".into(), 3)]);
        // Near miss: the exit view of run 3 after it is the same run.
        assert!(t.observe(&pod("u1", terminated_now(3, 1))).is_empty());
    }

    #[test]
    fn the_next_run_view_is_the_run_before_the_restart_count() {
        let mut t = Tracker::new(None);
        // Run 3 runs, run 2 in lastState: run 2.
        assert_eq!(
            terms(&t.observe(&pod("u1", restarted(2)))),
            vec![("app".into(), 2)]
        );
        // Near miss: run 3 backing off after it is a new termination, run 3.
        assert_eq!(
            terms(&t.observe(&pod("u1", crashed(3, "Error", 1)))),
            vec![("app".into(), 3)]
        );
        // Near miss: a container created and not started yet (waiting
        // without a reason, the status' containerID the new container's,
        // restartCount already 4): lastState is still run 3.
        let created = json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": 4, "containerID": cid(4), "state": {"waiting": {}},
            "lastState": term(3, "Error", 1)}]);
        assert!(t.observe(&pod("u1", created)).is_empty());
    }

    #[test]
    fn a_termination_with_the_recorded_container_id_is_the_recorded_run() {
        let mut t = Tracker::new(None);
        assert_eq!(
            terms(&t.observe(&pod("u1", terminated_now(2, 1)))),
            vec![("app".into(), 2)]
        );
        // A status with run 2's container ID in lastState but counts that
        // do not fit it (restartCount 4, running: by the counts run 3, a
        // new one): the recorded ID decides, it is run 2, reported already.
        let odd = json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": 4, "state": {"running": {}},
            "lastState": term(2, "Error", 1)}]);
        assert!(t.observe(&pod("u1", odd)).is_empty());
        // Near miss: another container ID in the same place is another run,
        // numbered by the counts (restartCount 4, running: run 3).
        let other = json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": 4, "state": {"running": {}},
            "lastState": term(3, "Error", 1)}]);
        assert_eq!(
            terms(&t.observe(&pod("u1", other))),
            vec![("app".into(), 3)]
        );
    }

    #[test]
    fn a_container_seen_without_a_termination_has_the_last_ended_run_as_baseline() {
        let mut t = Tracker::new(None);
        let status = |uid: &str, rc: i32, state: serde_json::Value| {
            pod(
                uid,
                json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
                    "restartCount": rc, "state": state}]),
            )
        };
        // Running run 2 (lastState gone): runs 0 and 1 ended.
        assert!(
            t.observe(&status("u1", 2, json!({"running": {}})))
                .is_empty()
        );
        // Backing off run 2 without a lastState: run 2 ended too.
        let back_off = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert!(t.observe(&status("u2", 2, back_off)).is_empty());
        // Creating run 0: nothing ended.
        let creating = json!({"waiting": {"reason": "ContainerCreating"}});
        assert!(t.observe(&status("u3", 0, creating)).is_empty());
        let mut fresh = t.take_fresh();
        fresh.sort();
        assert_eq!(
            fresh,
            vec![
                ("u1".into(), "app".into(), 1),
                ("u2".into(), "app".into(), 2),
                ("u3".into(), "app".into(), -1)
            ]
        );
        // The runs after each baseline are new ...
        assert_eq!(
            terms(&t.observe(&pod("u1", crashed(2, "Error", 1)))),
            vec![("app".into(), 2)]
        );
        // (the run the back-off baseline saw end is not new when it shows)
        assert!(t.observe(&pod("u2", restarted(2))).is_empty());
        assert_eq!(
            terms(&t.observe(&pod("u2", restarted(3)))),
            vec![("app".into(), 3)]
        );
        // ... near miss: the first crash of a container first seen creating
        // is not taken for an ended run.
        assert_eq!(
            terms(&t.observe(&pod("u3", crashed(0, "Error", 1)))),
            vec![("app".into(), 0)]
        );
    }

    #[test]
    fn a_watch_started_mid_back_off_reports_each_later_crash_once_under_its_own_n() {
        let since: jiff::Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let at = |mut v: serde_json::Value, slot: &str, when: &str| {
            v[0][slot]["terminated"]["finishedAt"] = json!(when);
            v
        };
        let mut t = Tracker::new(Some(since));
        // Started while run 3 backs off (it finished before the start): a
        // baseline, not a report.
        assert!(t.observe(&pod("u1", crashed(3, "Error", 1))).is_empty());
        assert_eq!(t.take_fresh(), vec![("u1".into(), "app".into(), 3)]);
        // Run 4 starts: run 3 in lastState, restartCount 4: still run 3.
        assert!(t.observe(&pod("u1", restarted(3))).is_empty());
        // Run 4 dies: reported once, as 4, in each of its views.
        let exit = at(terminated_now(4, 1), "state", "2026-11-29T12:00:30Z");
        assert_eq!(terms(&t.observe(&pod("u1", exit))), vec![("app".into(), 4)]);
        let back_off = at(crashed(4, "Error", 1), "lastState", "2026-11-29T12:00:30Z");
        assert!(t.observe(&pod("u1", back_off)).is_empty());
        assert!(t.observe(&pod("u1", restarted(4))).is_empty());
        // Near miss: started in the back-off of a crash that finished after
        // the start: that crash is reported, once, as 3.
        let mut t = Tracker::new(Some(since));
        let late = at(crashed(3, "Error", 1), "lastState", "2026-11-29T12:00:05Z");
        assert_eq!(terms(&t.observe(&pod("u1", late))), vec![("app".into(), 3)]);
        assert!(t.observe(&pod("u1", restarted(3))).is_empty());
    }

    #[test]
    fn a_missed_update_counts_the_runs_between_as_unobserved() {
        let mut t = Tracker::new(None);
        assert_eq!(
            terms(&t.observe(&pod("u1", crashed(2, "Error", 1)))),
            vec![("app".into(), 2)]
        );
        // Runs 3 and 4 ended unseen; the next update shows run 5 running
        // and run 4 in lastState: run 3 unobserved, run 4 captured.
        let seen = t.observe(&pod("u1", restarted(4)));
        assert!(
            matches!(seen[0], Seen::Unobserved { count: 1, .. }),
            "{seen:?}"
        );
        assert_eq!(terms(&seen), vec![("app".into(), 4)]);
        // Near miss: run 5 backing off afterwards is one new run, no gap.
        let seen = t.observe(&pod("u1", crashed(5, "Error", 1)));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(terms(&seen), vec![("app".into(), 5)]);
    }

    #[test]
    fn a_termination_carries_the_container_id_of_the_run_that_ended() {
        let with_id = |restarts: i32, state: serde_json::Value, last: serde_json::Value| {
            pod(
                "u1",
                json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
                    "restartCount": restarts, "containerID": "containerd://next",
                    "state": state, "lastState": last}]),
            )
        };
        let crash = |id: &str| {
            json!({"terminated": {"exitCode": 1, "reason": "Error",
            "containerID": id, "finishedAt": "2026-11-29T10:00:00Z"}})
        };
        let id_of = |seen: Vec<Seen>| match &seen[..] {
            [Seen::Terminated(t)] => (t.restart_count, t.container_id.clone()),
            other => panic!("{other:?}"),
        };
        // Seen in state.terminated: that run's ID, not the run before's.
        let mut t = Tracker::new(None);
        let seen = t.observe(&with_id(
            2,
            crash("containerd://b"),
            crash("containerd://a"),
        ));
        assert_eq!(id_of(seen), (2, Some("containerd://b".into())));
        // Seen in lastState, the next run running: lastState's ID, not the
        // running container's.
        let mut t = Tracker::new(None);
        let seen = t.observe(&with_id(3, json!({"running": {}}), crash("containerd://b")));
        assert_eq!(id_of(seen), (2, Some("containerd://b".into())));
        // Near miss: an empty ID is none.
        let mut t = Tracker::new(None);
        let seen = t.observe(&with_id(3, json!({"running": {}}), crash("")));
        assert_eq!(id_of(seen), (2, None));
    }

    #[test]
    fn a_jump_reports_the_unobserved_terminations() {
        let mut t = Tracker::new(None);
        t.observe(&pod("u1", crashed(1, "Error", 1)));
        let seen = t.observe(&pod("u1", crashed(5, "Error", 1)));
        assert_eq!(seen.len(), 2);
        assert!(matches!(seen[0], Seen::Unobserved { count: 3, .. }));
        assert_eq!(terms(&seen), vec![("app".into(), 5)]);
    }

    #[test]
    fn seeded_baseline_resumes_without_duplicates() {
        let mut t = Tracker::new(Some("2026-11-29T12:00:00Z".parse().unwrap()));
        t.seed(("u1".into(), "app".into()), 3);
        // Recorded before the restart: nothing new, in either later view.
        assert!(t.observe(&pod("u1", crashed(3, "Error", 1))).is_empty());
        assert!(t.observe(&pod("u1", restarted(3))).is_empty());
        // Two more while crashdoc was down: one unobserved, the last captured,
        // even though it finished before this run started.
        let seen = t.observe(&pod("u1", crashed(5, "Error", 1)));
        assert!(matches!(seen[0], Seen::Unobserved { count: 1, .. }));
        assert_eq!(terms(&seen), vec![("app".into(), 5)]);
    }

    #[test]
    fn terminations_from_before_the_start_are_a_baseline_only() {
        let mut t = Tracker::new(Some("2026-11-29T12:00:00Z".parse().unwrap()));
        assert!(t.observe(&pod("u1", crashed(3, "Error", 1))).is_empty());
        // The next one counts.
        let mut later = crashed(4, "Error", 1);
        later[0]["lastState"]["terminated"]["finishedAt"] = json!("2026-11-29T12:00:05Z");
        assert_eq!(
            terms(&t.observe(&pod("u1", later))),
            vec![("app".into(), 4)]
        );
    }

    #[test]
    fn exit_zero_counts_only_where_the_container_should_keep_running() {
        let mut t = Tracker::new(None);
        // restartPolicy Always (the default): exit 0 is a restart.
        assert_eq!(t.observe(&pod("u1", crashed(1, "Completed", 0))).len(), 1);
        // A Job's pod: exit 0 is success.
        let mut p = pod("u2", terminated_now(0, 0));
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        assert!(t.observe(&p).is_empty());
        // But a failing Job container is reported.
        let mut p = pod("u3", terminated_now(0, 2));
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        assert_eq!(t.observe(&p).len(), 1);
    }

    #[test]
    fn init_containers_completing_are_not_crashes_but_sidecars_are() {
        let mut t = Tracker::new(None);
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u9"},
            "spec": {"containers": [{"name": "app"}],
                "initContainers": [{"name": "migrate"}, {"name": "proxy", "restartPolicy": "Always"}]},
            "status": {"initContainerStatuses": [
                {"name": "migrate", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "proxy", "image": "x", "imageID": "", "ready": false, "restartCount": 2,
                 "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
        }))
        .unwrap();
        assert_eq!(terms(&t.observe(&p)), vec![("proxy".into(), 1)]);
        // A failing init container is reported.
        p.metadata.uid = Some("u10".into());
        p.status
            .as_mut()
            .unwrap()
            .init_container_statuses
            .as_mut()
            .unwrap()[0]
            .state
            .as_mut()
            .unwrap()
            .terminated
            .as_mut()
            .unwrap()
            .exit_code = 1;
        let seen = t.observe(&p);
        assert!(terms(&seen).contains(&("migrate".into(), 0)), "{seen:?}");
    }

    #[test]
    fn deleting_pods_and_running_containers_report_nothing() {
        let mut t = Tracker::new(None);
        let mut p = pod("u1", crashed(2, "Error", 143));
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-11-29T10:00:00Z".parse().unwrap(),
        ));
        assert!(t.observe(&p).is_empty());
        let running = pod(
            "u2",
            json!([{"name": "app", "image": "x", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}}]),
        );
        assert!(t.observe(&running).is_empty());
        // The running container has a baseline: its next termination is new.
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_container_seen_running_is_judged_by_its_restart_count_not_by_time() {
        // Started at 12:00:00.5; the first crash's finishedAt says 12:00:00
        // (whole seconds), "before" the start, yet it came after: the
        // container was seen running with restartCount 0.
        let mut t = Tracker::new(Some("2026-11-29T12:00:01Z".parse().unwrap()));
        let running = pod(
            "u1",
            json!([{"name": "app", "image": "x", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}}]),
        );
        assert!(t.observe(&running).is_empty());
        let mut crashed = crashed(0, "Error", 1);
        crashed[0]["lastState"]["terminated"]["finishedAt"] = json!("2026-11-29T12:00:00Z");
        assert_eq!(
            terms(&t.observe(&pod("u1", crashed))),
            vec![("app".into(), 0)]
        );
    }

    #[test]
    fn forgetting_deleted_pods_keeps_memory_bounded() {
        let mut t = Tracker::new(None);
        let running = pod(
            "r1",
            json!([{"name": "app", "image": "x", "imageID": "", "ready": true,
                "restartCount": 2, "state": {"running": {}}}]),
        );
        t.observe(&running);
        assert_eq!(t.take_fresh(), vec![("r1".into(), "app".into(), 1)]);
        t.observe(&running);
        assert!(t.take_fresh().is_empty(), "a baseline is set once");
        t.forget("r1");
        for i in 0..100 {
            t.observe(&pod(&format!("u{i}"), crashed(1, "Error", 1)));
        }
        assert_eq!(t.len(), 100);
        t.forget("u0");
        let keep: HashSet<String> = (50..100).map(|i| format!("u{i}")).collect();
        t.retain_pods(&keep);
        assert_eq!(t.len(), 50);
    }

    #[test]
    fn workload_folds_replicasets_to_deployments() {
        let p = pod("u1", crashed(1, "Error", 1));
        assert_eq!(workload_of(&p), Some(("Deployment".into(), "web".into())));
        let mut sts = p.clone();
        sts.metadata.owner_references.as_mut().unwrap()[0].kind = "StatefulSet".into();
        sts.metadata.owner_references.as_mut().unwrap()[0].name = "db".into();
        assert_eq!(workload_of(&sts), Some(("StatefulSet".into(), "db".into())));
        let mut bare = p;
        bare.metadata.owner_references = None;
        assert_eq!(workload_of(&bare), None);
    }

    #[test]
    fn revision_comes_from_the_controllers_hash_labels() {
        let mut p = pod("u1", crashed(1, "Error", 1));
        let labels = p.metadata.labels.get_or_insert_with(Default::default);
        labels.insert("pod-template-hash".into(), "7d9c".into());
        assert_eq!(revision_of(&p).as_deref(), Some("7d9c"));
        let labels = p.metadata.labels.get_or_insert_with(Default::default);
        labels.remove("pod-template-hash");
        labels.insert("controller-revision-hash".into(), "db-5f6".into());
        assert_eq!(revision_of(&p).as_deref(), Some("db-5f6"));
        // Near miss: another label with a hash-like value is no revision.
        let labels = p.metadata.labels.get_or_insert_with(Default::default);
        labels.clear();
        labels.insert("app.kubernetes.io/version".into(), "7d9c".into());
        assert_eq!(revision_of(&p), None);
    }
}
