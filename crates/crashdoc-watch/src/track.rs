//! Which container terminations a pod update reveals, each exactly once.
//!
//! Pure logic, no I/O: the watch loop feeds it every pod it sees (watch
//! events and re-lists alike) and gets back the terminations it has not
//! reported yet.
//!
//! A termination's identity is `(pod uid, container, N)`, where `N` is the
//! container's restart count *at the time it terminated*: `restartCount`
//! while `state.terminated` is set, `restartCount - 1` once the kubelet has
//! restarted it and the termination moved to `lastState.terminated`. Both
//! views of the same termination map to the same `N`, so the order and
//! number of updates the watch delivers do not matter.
//!
//! The kubelet keeps only the last termination. When `N` jumps by more than
//! one between two sightings (the watch expired with 410 Gone and re-listed,
//! crashdoc was down, an update was coalesced), the terminations in between
//! cannot be read any more; they are reported as [`Seen::Unobserved`] so that
//! the restart counters still add up to the restart count's increase.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
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

/// Remembers, per container, the last termination reported.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Highest `N` reported (or known from the history, or -1 + the restart
    /// count of a container first seen without a termination) per container.
    last: HashMap<ContainerId, i32>,
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
        let e = self.last.entry(id).or_insert(n);
        *e = (*e).max(n);
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
                let Some(t) = terminated(cs) else {
                    // Seen without a termination: every later one is new,
                    // judged by its restart count, never by its time.
                    let id = (uid.to_string(), cs.name.clone());
                    if !self.last.contains_key(&id) {
                        self.fresh
                            .push((id.0.clone(), id.1.clone(), cs.restart_count - 1));
                        self.last.insert(id, cs.restart_count - 1);
                    }
                    continue;
                };
                let (n, state) = t;
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
                let id = (uid.to_string(), cs.name.clone());
                let finished_at = state.finished_at.as_ref().and_then(|t| timestamp(&t.0));
                match self.last.get(&id).copied() {
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
                            self.last.insert(id, n);
                            continue;
                        }
                    }
                }
                self.last.insert(id, n);
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
                    container_id: state.container_id.clone().filter(|id| !id.is_empty()),
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

/// The termination a container status shows, with its `N`.
fn terminated(
    cs: &ContainerStatus,
) -> Option<(i32, &k8s_openapi::api::core::v1::ContainerStateTerminated)> {
    if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
        return Some((cs.restart_count, t));
    }
    let t = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref())?;
    Some(((cs.restart_count - 1).max(0), t))
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

    fn crashed(restarts: i32, reason: &str, code: i32) -> serde_json::Value {
        json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": restarts,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": code, "reason": reason,
                "finishedAt": "2026-11-29T10:00:00Z"}}}])
    }

    fn terminated_now(restarts: i32, code: i32) -> serde_json::Value {
        json!([{"name": "app", "image": "x", "imageID": "", "ready": false,
            "restartCount": restarts,
            "state": {"terminated": {"exitCode": code, "reason": "Error",
                "finishedAt": "2026-11-29T10:00:00Z"}}}])
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
    fn one_termination_in_both_views_is_reported_once() {
        let mut t = Tracker::new(None);
        // The container just died (restartCount 2, state terminated) ...
        let a = t.observe(&pod("u1", terminated_now(2, 1)));
        assert_eq!(terms(&a), vec![("app".into(), 2)]);
        // ... then the kubelet restarts it: the same termination in lastState.
        let b = t.observe(&pod("u1", crashed(3, "Error", 1)));
        assert!(b.is_empty(), "{b:?}");
        // The same update delivered again (a re-list) changes nothing.
        assert!(t.observe(&pod("u1", crashed(3, "Error", 1))).is_empty());
        // The next crash is new.
        let c = t.observe(&pod("u1", crashed(4, "OOMKilled", 137)));
        assert_eq!(terms(&c), vec![("app".into(), 3)]);
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
        assert_eq!(terms(&seen), vec![("app".into(), 4)]);
    }

    #[test]
    fn seeded_baseline_resumes_without_duplicates() {
        let mut t = Tracker::new(Some("2026-11-29T12:00:00Z".parse().unwrap()));
        t.seed(("u1".into(), "app".into()), 3);
        // Recorded before the restart: nothing new.
        assert!(t.observe(&pod("u1", crashed(4, "Error", 1))).is_empty());
        // Two more while crashdoc was down: one unobserved, the last captured,
        // even though it finished before this run started.
        let seen = t.observe(&pod("u1", crashed(6, "Error", 1)));
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
            vec![("app".into(), 3)]
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
        let mut crashed = crashed(1, "Error", 1);
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
}
