//! Which run of a container `kubectl logs` and `kubectl logs --previous`
//! read, and which of the two reads a given termination. Pure functions of
//! the pod status, no I/O.
//!
//! The kubelet does not keep logs by restart count: it picks the container
//! whose log it serves from the pod status, by container ID. Kubernetes
//! v1.36.3, `pkg/kubelet/kubelet_pods.go`, `(*Kubelet).validateContainerLogStatus`
//! (called by `GetKubeletContainerLogs` with the status manager's status):
//!
//! - `previous=true` serves `lastState.terminated.containerID`, and refuses
//!   when there is no `lastState.terminated` or its ID is empty;
//! - `previous=false` serves, in this order: the status' `containerID` when
//!   `state.running` is set; `state.terminated.containerID` when
//!   `state.terminated` is set (falling back to
//!   `lastState.terminated.containerID` when that ID is empty, "the next
//!   container didn't start"); `lastState.terminated.containerID`; and
//!   refuses for `state.waiting` (its reason in the error) or no state.
//!
//! The status moves on under a reader. Same file,
//! `(*Kubelet).convertToAPIContainerStatuses`: the newest container of the
//! runtime gives `state`, `containerID` and `restartCount` (the restart
//! count the kubelet gave that container when it created it), the second
//! newest `lastState`. Right after a crash the newest is the crashed run:
//! `state.terminated` = the crash, `lastState` = the run *before* it; so
//! `logs` reads the crash and `--previous` the run before. Once the sync
//! loop hits the back-off (the `reasonCache` holds `CrashLoopBackOff`), the
//! same status becomes `state.waiting` with `lastState` = the crash
//! (`if status.State.Terminated != nil { status.LastTerminationState =
//! status.State }`): both requests read the crash. When the back-off ends
//! the next run is the newest: `state.running` = the next run, `lastState`
//! = the crash; `logs` reads the next run. What a request serves only ever
//! moves to later runs, so a request that resolves to the same container ID
//! before and after a read was served from that container.
//!
//! A run is numbered by the restart count of its container: the kubelet
//! gives a new container the newest one's restart count plus one when it
//! creates it (`pkg/kubelet/kuberuntime/kuberuntime_container.go`
//! `startContainer`: `restartCount = containerStatus.RestartCount + 1`), and
//! the status' `restartCount` is the newest container's. So the three views
//! of run N's crash read:
//!
//! | view | `state` | `restartCount` | `lastState.terminated` |
//! |---|---|---|---|
//! | right after the exit | `terminated` = run N | N | run N-1 |
//! | in the back-off | `waiting` (`CrashLoopBackOff`) | N | run N |
//! | the next run started | `running` = run N+1 | N+1 | run N |
//!
//! `lastState`'s run is `restartCount - 1` only where the status shows a
//! newer container ([`last_state_run`]).

use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod, PodStatus};

/// Where in a container status a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// `state.running` (its ID is the status' `containerID`).
    Running,
    /// `state.terminated`.
    Terminated,
    /// `lastState.terminated`.
    LastTerminated,
}

impl Slot {
    /// As the bundle's `log-runs.json` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::Running => "running",
            Slot::Terminated => "terminated",
            Slot::LastTerminated => "lastState",
        }
    }
}

/// The container a log request is served from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub container_id: String,
    pub slot: Slot,
}

/// Why the kubelet answers a log request with an error instead
/// (validateContainerLogStatus's errors, in its order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// `container %q in pod %q is not available`: no status of that name.
    NotAvailable,
    /// `previous terminated container %q in pod %q not found`.
    NoPreviousTermination,
    /// `container %q in pod %q is terminated`: terminated, with no ID to
    /// read from.
    TerminatedWithoutId,
    /// `container %q in pod %q is waiting to start: REASON`.
    Waiting(String),
    /// `container %q in pod %q is waiting to start - no logs yet`.
    NoLogsYet,
    /// Running, but the status names no container ID: the kubelet passes an
    /// empty ID on, which the runtime cannot find.
    RunningWithoutId,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotAvailable => f.write_str("the container has no status"),
            Refused::NoPreviousTermination => f.write_str("no previous terminated container"),
            Refused::TerminatedWithoutId => {
                f.write_str("terminated, with no container ID to read from")
            }
            Refused::Waiting(r) => write!(f, "waiting to start: {r}"),
            Refused::NoLogsYet => f.write_str("waiting to start - no logs yet"),
            Refused::RunningWithoutId => f.write_str("running, with no container ID"),
        }
    }
}

fn nonempty(s: Option<&String>) -> Option<&str> {
    s.map(String::as_str).filter(|s| !s.is_empty())
}

/// The status of a container by name: app containers first, then init
/// containers, then ephemeral ones (the kubelet's order).
pub fn container_status<'a>(status: &'a PodStatus, container: &str) -> Option<&'a ContainerStatus> {
    [
        &status.container_statuses,
        &status.init_container_statuses,
        &status.ephemeral_container_statuses,
    ]
    .into_iter()
    .flat_map(|l| l.iter().flatten())
    .find(|s| s.name == container)
}

/// The container `kubectl logs [--previous] -c CONTAINER` is served from,
/// by this status: `validateContainerLogStatus` (module docs).
pub fn served(status: &PodStatus, container: &str, previous: bool) -> Result<Served, Refused> {
    let cs = container_status(status, container).ok_or(Refused::NotAvailable)?;
    served_by(cs, previous)
}

/// [`served`] for one container status.
pub fn served_by(cs: &ContainerStatus, previous: bool) -> Result<Served, Refused> {
    let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    let last_id = last.and_then(|t| nonempty(t.container_id.as_ref()));
    let state = cs.state.as_ref();
    let from_last = |id: &str| Served {
        container_id: id.to_string(),
        slot: Slot::LastTerminated,
    };
    if previous {
        return last_id.map(from_last).ok_or(Refused::NoPreviousTermination);
    }
    if state.is_some_and(|s| s.running.is_some()) {
        return nonempty(cs.container_id.as_ref())
            .map(|id| Served {
                container_id: id.to_string(),
                slot: Slot::Running,
            })
            .ok_or(Refused::RunningWithoutId);
    }
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        return match nonempty(t.container_id.as_ref()) {
            Some(id) => Ok(Served {
                container_id: id.to_string(),
                slot: Slot::Terminated,
            }),
            None => last_id.map(from_last).ok_or(Refused::TerminatedWithoutId),
        };
    }
    if last.is_some() {
        return last_id.map(from_last).ok_or(Refused::TerminatedWithoutId);
    }
    match state.and_then(|s| s.waiting.as_ref()) {
        Some(w) => Err(Refused::Waiting(w.reason.clone().unwrap_or_default())),
        None => Err(Refused::NoLogsYet),
    }
}

/// One run of a container, as a termination identifies it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    /// The runtime's container ID (`containerd://…`): the run's identity.
    pub container_id: Option<String>,
    /// The restart count the termination is known by (`crashdoc watch`'s
    /// key, the run's `N`: [`terminated_run`], [`last_state_run`]): the
    /// identity where there is no container ID.
    pub restart_count: Option<i32>,
    /// `finishedAt`, RFC 3339.
    pub finished_at: Option<String>,
}

impl Run {
    fn of(t: &ContainerStateTerminated, n: i32) -> Run {
        Run {
            container_id: nonempty(t.container_id.as_ref()).map(str::to_string),
            restart_count: Some(n),
            finished_at: t.finished_at.as_ref().map(|f| f.0.to_string()),
        }
    }

    /// Whether `other`, a run a status shows, is this run: the same
    /// container ID where both have one; else the same `finishedAt` where
    /// both have one; else the same restart count.
    pub fn same(&self, other: &Run) -> bool {
        if let (Some(a), Some(b)) = (&self.container_id, &other.container_id) {
            return a == b;
        }
        let at = |r: &Run| {
            r.finished_at
                .as_deref()
                .and_then(|f| f.parse::<k8s_openapi::jiff::Timestamp>().ok())
        };
        if let (Some(a), Some(b)) = (at(self), at(other)) {
            return a == b;
        }
        self.restart_count.is_some() && self.restart_count == other.restart_count
    }
}

/// Whether the kubelet made this termination up for a container the
/// runtime no longer reports: no container ID, reason
/// `ContainerStatusUnknown` (or `RestartingAllContainers`). It then counts
/// the lost run as a restart itself, so `restartCount` is already one past
/// that run (kubernetes v1.36.3 `pkg/kubelet/kubelet_pods.go`
/// `convertToAPIContainerStatuses`: `status.RestartCount =
/// oldStatus.RestartCount + 1` for a running container the runtime reports
/// as unknown, `status.RestartCount += 1` for one it no longer lists).
fn synthesized(t: &ContainerStateTerminated) -> bool {
    nonempty(t.container_id.as_ref()).is_none()
        && matches!(
            t.reason.as_deref(),
            Some("ContainerStatusUnknown" | "RestartingAllContainers")
        )
}

/// The run `state.terminated` shows (its `N`): the newest container, so
/// `restartCount`; one less for a termination the kubelet made up
/// ([`synthesized`]). `None`: not terminated.
pub fn terminated_run(cs: &ContainerStatus) -> Option<i32> {
    let t = cs.state.as_ref()?.terminated.as_ref()?;
    let rc = cs.restart_count;
    Some(if synthesized(t) { (rc - 1).max(0) } else { rc })
}

/// The run `lastState.terminated` shows (its `N`). `lastState` is the
/// second newest container where the status shows a newer one, the newest
/// where it does not (`if status.State.Terminated != nil {
/// status.LastTerminationState = status.State }` when the back-off turns
/// `state` into `waiting`, kubernetes v1.36.3 `pkg/kubelet/kubelet_pods.go`
/// `convertToAPIContainerStatuses`):
///
/// - `state.terminated`: the run before that one;
/// - `state.running`: `restartCount - 1`;
/// - `state.waiting` (or no state): `restartCount` (the back-off view),
///   unless the status' `containerID` names another container than
///   `lastState`'s (a container created and not started yet, its
///   `restartCount` already counted: `restartCount - 1`), or the kubelet
///   made the termination up ([`synthesized`], `restartCount - 1`).
///
/// `None`: no `lastState.terminated`.
pub fn last_state_run(cs: &ContainerStatus) -> Option<i32> {
    let t = cs.last_state.as_ref()?.terminated.as_ref()?;
    let rc = cs.restart_count;
    let state = cs.state.as_ref();
    let n = if let Some(n) = terminated_run(cs) {
        n - 1
    } else if state.is_some_and(|s| s.running.is_some()) || synthesized(t) {
        rc - 1
    } else {
        match (
            nonempty(cs.container_id.as_ref()),
            nonempty(t.container_id.as_ref()),
        ) {
            (Some(current), Some(last)) if current != last => rc - 1,
            _ => rc,
        }
    };
    Some(n.max(0))
}

/// The last run a status that shows no termination has seen end (`-1`:
/// none), the baseline of a container first seen that way: a back-off
/// (`CrashLoopBackOff`) is for the newest container, which ended, so
/// `restartCount`; else (running, creating, pulling, ...) `restartCount - 1`.
pub fn ended_through(cs: &ContainerStatus) -> i32 {
    let back_off = cs
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"));
    if back_off {
        cs.restart_count
    } else {
        cs.restart_count - 1
    }
}

/// The ended runs a container status shows, with their slots and their
/// `N` ([`terminated_run`], [`last_state_run`]), as `crashdoc watch`'s
/// tracker numbers them: `state.terminated`, then `lastState.terminated`.
pub fn ended_runs(cs: &ContainerStatus) -> Vec<(Slot, Run)> {
    let mut out = Vec::new();
    if let (Some(t), Some(n)) = (
        cs.state.as_ref().and_then(|s| s.terminated.as_ref()),
        terminated_run(cs),
    ) {
        out.push((Slot::Terminated, Run::of(t, n)));
    }
    if let (Some(t), Some(n)) = (
        cs.last_state.as_ref().and_then(|s| s.terminated.as_ref()),
        last_state_run(cs),
    ) {
        out.push((Slot::LastTerminated, Run::of(t, n)));
    }
    out
}

/// Whether a container is meant to keep running, so that any exit of it,
/// exit 0 included, is a restart: app containers under `restartPolicy:
/// Always` (the default), and restartable init containers (sidecars).
pub fn keeps_running(pod: &Pod, container: &str) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    if spec.containers.iter().any(|c| c.name == container) {
        return spec.restart_policy.as_deref().is_none_or(|p| p == "Always");
    }
    spec.init_containers
        .iter()
        .flatten()
        .any(|c| c.name == container && c.restart_policy.as_deref() == Some("Always"))
}

/// The run a diagnosis of this container is about: its last termination.
/// `state.terminated` when it is one (a failure, or any exit of a container
/// meant to keep running; an init container's or a Job's exit 0 is work
/// done), else `lastState.terminated` (the container restarted after it,
/// whatever its exit code). `None`: the container never ended.
pub fn last_termination(pod: &Pod, container: &str) -> Option<Run> {
    let status = pod.status.as_ref()?;
    let cs = container_status(status, container)?;
    let runs = ended_runs(cs);
    let counts = |slot: Slot| {
        slot == Slot::LastTerminated
            || cs
                .state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_some_and(|t| t.exit_code != 0 || keeps_running(pod, container))
    };
    runs.into_iter()
        .find(|(slot, _)| counts(*slot))
        .map(|(_, r)| r)
}

/// How a termination's own output can be read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// With this request (`--previous` when `previous`), served from this
    /// container (`None`: the status names no container IDs at all, so
    /// the request is chosen by the run's slot alone).
    Request {
        previous: bool,
        container_id: Option<String>,
    },
    /// The status still shows the run, but no request serves it: its slot
    /// has no container ID (the kubelet cannot ask the runtime for it).
    Unservable(Slot),
    /// The status no longer shows the run: later runs replaced it, and
    /// with it its log.
    Gone,
    /// The status has no container of that name.
    NoStatus,
}

/// Which request reads the run `target` of `container`, by this status.
/// `--previous` first where both serve it (in CrashLoopBackOff both do).
/// A status that names no container ID anywhere for the container (written
/// by a test or a simulator, not by a kubelet with a runtime) is read by
/// slot: `lastState` with `--previous`, `state.terminated` without.
pub fn reading(status: &PodStatus, container: &str, target: &Run) -> Reading {
    let Some(cs) = container_status(status, container) else {
        return Reading::NoStatus;
    };
    let Some((slot, run)) = ended_runs(cs).into_iter().find(|(_, r)| target.same(r)) else {
        return Reading::Gone;
    };
    let Some(id) = run.container_id else {
        let any_id = nonempty(cs.container_id.as_ref()).is_some()
            || ended_runs(cs).iter().any(|(_, r)| r.container_id.is_some());
        return if any_id {
            Reading::Unservable(slot)
        } else {
            Reading::Request {
                previous: slot == Slot::LastTerminated,
                container_id: None,
            }
        };
    };
    for previous in [true, false] {
        if served_by(cs, previous).is_ok_and(|s| s.container_id == id) {
            return Reading::Request {
                previous,
                container_id: Some(id),
            };
        }
    }
    Reading::Unservable(slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const A: &str = "containerd://aaa";
    const B: &str = "containerd://bbb";
    const C: &str = "containerd://ccc";

    fn term(id: &str, code: i32, at: &str) -> Value {
        json!({"terminated": {"exitCode": code, "reason": "Error", "containerID": id,
            "startedAt": "2026-11-29T09:59:00Z", "finishedAt": at}})
    }

    fn cs(name: &str, rc: i32, id: &str, state: Value, last: Value) -> Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": false,
            "restartCount": rc, "containerID": id, "state": state, "lastState": last})
    }

    fn pod(statuses: Value, init: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1"},
            "spec": {"containers": [{"name": "app"}],
                "initContainers": [{"name": "migrate"}, {"name": "proxy", "restartPolicy": "Always"}]},
            "status": {"containerStatuses": statuses, "initContainerStatuses": init}
        }))
        .unwrap()
    }

    fn app(rc: i32, id: &str, state: Value, last: Value) -> Pod {
        pod(json!([cs("app", rc, id, state, last)]), json!([]))
    }

    fn st(p: &Pod) -> &PodStatus {
        p.status.as_ref().unwrap()
    }

    fn id_of(r: Result<Served, Refused>) -> Option<(String, Slot)> {
        r.ok().map(|s| (s.container_id, s.slot))
    }

    fn run(id: &str) -> Run {
        Run {
            container_id: Some(id.into()),
            ..Run::default()
        }
    }

    fn request(previous: bool, id: &str) -> Reading {
        Reading::Request {
            previous,
            container_id: Some(id.into()),
        }
    }

    /// Right after the crash of run B (restartCount 3, B's own: the kubelet
    /// counts the restart when it creates the next container):
    /// `state.terminated` is B, `lastState` the run A before it.
    fn just_crashed() -> Pod {
        app(
            3,
            B,
            term(B, 1, "2026-11-29T10:00:00Z"),
            term(A, 1, "2026-11-29T09:58:00Z"),
        )
    }

    #[test]
    fn right_after_a_crash_logs_reads_it_and_previous_the_run_before() {
        let p = just_crashed();
        assert_eq!(
            id_of(served(st(&p), "app", false)),
            Some((B.into(), Slot::Terminated))
        );
        assert_eq!(
            id_of(served(st(&p), "app", true)),
            Some((A.into(), Slot::LastTerminated))
        );
        assert_eq!(reading(st(&p), "app", &run(B)), request(false, B));
        let t = last_termination(&p, "app").unwrap();
        assert_eq!(
            (t.container_id.as_deref(), t.restart_count),
            (Some(B), Some(3))
        );
        // Near miss: the run before the crash is what --previous reads.
        assert_eq!(reading(st(&p), "app", &run(A)), request(true, A));
    }

    #[test]
    fn in_crash_loop_back_off_both_requests_read_the_crash() {
        let p = app(
            3,
            B,
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        for previous in [true, false] {
            assert_eq!(
                id_of(served(st(&p), "app", previous)),
                Some((B.into(), Slot::LastTerminated))
            );
        }
        assert_eq!(reading(st(&p), "app", &run(B)), request(true, B));
        let t = last_termination(&p, "app").unwrap();
        assert_eq!(
            (t.container_id.as_deref(), t.restart_count),
            (Some(B), Some(3)),
            "restartCount is the crashed run's until the next run starts"
        );
        // Near miss: the run before the crash is gone from the status.
        assert_eq!(reading(st(&p), "app", &run(A)), Reading::Gone);
        // Near miss: waiting without a termination (an image that cannot
        // be pulled) has no logs at all.
        let p = app(
            0,
            "",
            json!({"waiting": {"reason": "ImagePullBackOff"}}),
            json!({}),
        );
        assert_eq!(
            served(st(&p), "app", false),
            Err(Refused::Waiting("ImagePullBackOff".into()))
        );
        assert_eq!(
            served(st(&p), "app", true),
            Err(Refused::NoPreviousTermination)
        );
        assert_eq!(last_termination(&p, "app"), None);
    }

    #[test]
    fn once_the_next_run_starts_logs_reads_it_and_previous_the_crash() {
        let p = app(
            4,
            C,
            json!({"running": {"startedAt": "2026-11-29T10:00:10Z"}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(
            id_of(served(st(&p), "app", false)),
            Some((C.into(), Slot::Running))
        );
        assert_eq!(reading(st(&p), "app", &run(B)), request(true, B));
        let t = last_termination(&p, "app").unwrap();
        assert_eq!(
            (t.container_id.as_deref(), t.restart_count),
            (Some(B), Some(3)),
            "the same N as in state.terminated"
        );
        // Near miss: the running run has not ended: no request reads it as
        // a termination; nor the run before the crash.
        assert_eq!(reading(st(&p), "app", &run(C)), Reading::Gone);
        assert_eq!(reading(st(&p), "app", &run(A)), Reading::Gone);
        // Near miss: running without a container ID.
        let p = app(
            1,
            "",
            json!({"running": {}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(served(st(&p), "app", false), Err(Refused::RunningWithoutId));
    }

    fn status(p: &Pod) -> &ContainerStatus {
        &st(p).container_statuses.as_ref().unwrap()[0]
    }

    fn numbers(p: &Pod) -> Vec<(Slot, Option<String>, Option<i32>)> {
        ended_runs(status(p))
            .into_iter()
            .map(|(slot, r)| (slot, r.container_id, r.restart_count))
            .collect()
    }

    #[test]
    fn a_run_has_the_same_number_in_the_three_views_of_its_crash() {
        // Run B is the container created with restartCount 3.
        let b = |slot| (slot, Some(B.to_string()), Some(3));
        // Right after the exit: state.terminated = B, lastState = A (2).
        assert_eq!(
            numbers(&just_crashed()),
            vec![
                b(Slot::Terminated),
                (Slot::LastTerminated, Some(A.into()), Some(2))
            ]
        );
        // In the back-off: restartCount still 3, lastState = B.
        let waiting = app(
            3,
            B,
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(numbers(&waiting), vec![b(Slot::LastTerminated)]);
        // The next run C started: restartCount 4, lastState = B.
        let running = app(
            4,
            C,
            json!({"running": {}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(numbers(&running), vec![b(Slot::LastTerminated)]);
        // Near miss: C created but not started (`waiting` without a reason,
        // the status' containerID already C's, restartCount 4): B is 3.
        let created = app(
            4,
            C,
            json!({"waiting": {}}),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(numbers(&created), vec![b(Slot::LastTerminated)]);
        // Near miss: a waiting status without container IDs is the
        // back-off view.
        let bare = app(
            3,
            "",
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            term("", 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(numbers(&bare), vec![(Slot::LastTerminated, None, Some(3))]);
    }

    #[test]
    fn a_termination_the_kubelet_made_up_was_already_counted_as_a_restart() {
        let unknown = json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated"}});
        // Run B (3) was running and the runtime lost it: restartCount 4.
        let p = app(4, B, unknown.clone(), term(A, 1, "2026-11-29T09:58:00Z"));
        assert_eq!(
            numbers(&p),
            vec![
                (Slot::Terminated, None, Some(3)),
                (Slot::LastTerminated, Some(A.into()), Some(2))
            ]
        );
        // The same as lastState of the default waiting state.
        let p = app(
            4,
            "",
            json!({"waiting": {"reason": "ContainerCreating"}}),
            unknown,
        );
        assert_eq!(numbers(&p), vec![(Slot::LastTerminated, None, Some(3))]);
        // Near miss: an ordinary termination without an ID is not made up.
        let p = app(
            3,
            "",
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            term("", 137, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(numbers(&p), vec![(Slot::LastTerminated, None, Some(3))]);
    }

    #[test]
    fn a_status_without_a_termination_has_seen_runs_end_only_in_a_back_off() {
        let through = |rc: i32, state: Value| ended_through(status(&app(rc, "", state, json!({}))));
        // Running run 2: runs 0 and 1 ended.
        assert_eq!(through(2, json!({"running": {}})), 1);
        // Backing off run 2 (its lastState gone): run 2 ended too.
        assert_eq!(
            through(2, json!({"waiting": {"reason": "CrashLoopBackOff"}})),
            2
        );
        // Near miss: creating, pulling, a config error: nothing ran yet.
        for reason in [
            "ContainerCreating",
            "ImagePullBackOff",
            "CreateContainerConfigError",
        ] {
            assert_eq!(
                through(0, json!({"waiting": {"reason": reason}})),
                -1,
                "{reason}"
            );
        }
    }

    #[test]
    fn init_containers_are_found_after_the_app_containers() {
        let p = pod(
            json!([cs(
                "app",
                0,
                "",
                json!({"waiting": {"reason": "PodInitializing"}}),
                json!({})
            )]),
            json!([cs(
                "migrate",
                2,
                B,
                term(B, 1, "2026-11-29T10:00:00Z"),
                term(A, 1, "2026-11-29T09:59:00Z")
            )]),
        );
        assert_eq!(
            id_of(served(st(&p), "migrate", false)),
            Some((B.into(), Slot::Terminated))
        );
        assert_eq!(reading(st(&p), "migrate", &run(B)), request(false, B));
        assert_eq!(
            last_termination(&p, "migrate")
                .unwrap()
                .container_id
                .as_deref(),
            Some(B)
        );
        // Near miss: a container of the spec without a status.
        assert_eq!(served(st(&p), "proxy", false), Err(Refused::NotAvailable));
        assert_eq!(reading(st(&p), "proxy", &run(B)), Reading::NoStatus);
        // Near miss: an init container that completed is no termination to
        // diagnose.
        let done = pod(
            json!([]),
            json!([cs(
                "migrate",
                0,
                B,
                term(B, 0, "2026-11-29T10:00:00Z"),
                json!({})
            )]),
        );
        assert_eq!(last_termination(&done, "migrate"), None);
        assert!(
            served(st(&done), "migrate", false).is_ok(),
            "its log still reads"
        );
    }

    #[test]
    fn a_sidecar_exiting_0_is_a_restart() {
        let p = pod(
            json!([]),
            json!([cs(
                "proxy",
                2,
                C,
                json!({"running": {}}),
                term(B, 0, "2026-11-29T10:00:00Z")
            )]),
        );
        assert!(keeps_running(&p, "proxy"));
        assert_eq!(
            last_termination(&p, "proxy")
                .unwrap()
                .container_id
                .as_deref(),
            Some(B)
        );
        assert_eq!(reading(st(&p), "proxy", &run(B)), request(true, B));
        // Just exited 0 (state.terminated): still its last termination.
        let p = pod(
            json!([]),
            json!([cs(
                "proxy",
                2,
                B,
                term(B, 0, "2026-11-29T10:00:00Z"),
                json!({})
            )]),
        );
        assert_eq!(
            last_termination(&p, "proxy")
                .unwrap()
                .container_id
                .as_deref(),
            Some(B)
        );
        // Near miss: the same for a regular init container is work done.
        assert!(!keeps_running(&p, "migrate"));
    }

    #[test]
    fn an_app_container_exiting_0_counts_only_under_restart_policy_always() {
        let mut p = app(0, B, term(B, 0, "2026-11-29T10:00:00Z"), json!({}));
        assert!(last_termination(&p, "app").is_some());
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        assert_eq!(last_termination(&p, "app"), None);
    }

    #[test]
    fn an_empty_terminated_container_id_falls_back_to_last_state() {
        // "the next container didn't start": state.terminated has no ID.
        let p = app(
            3,
            "",
            term("", 128, "2026-11-29T10:00:05Z"),
            term(B, 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(
            id_of(served(st(&p), "app", false)),
            Some((B.into(), Slot::LastTerminated))
        );
        // The ID-less run itself is not served by either request.
        let failed = Run {
            finished_at: Some("2026-11-29T10:00:05Z".into()),
            ..Run::default()
        };
        assert_eq!(
            reading(st(&p), "app", &failed),
            Reading::Unservable(Slot::Terminated)
        );
        assert_eq!(reading(st(&p), "app", &run(B)), request(true, B));
        // Near miss: with no ID anywhere, the kubelet refuses both...
        let p = app(
            3,
            "",
            term("", 1, "2026-11-29T10:00:05Z"),
            term("", 1, "2026-11-29T10:00:00Z"),
        );
        assert_eq!(
            served(st(&p), "app", false),
            Err(Refused::TerminatedWithoutId)
        );
        assert_eq!(
            served(st(&p), "app", true),
            Err(Refused::NoPreviousTermination)
        );
        // ... and a status without any ID (not a kubelet's) is read by slot,
        // the run known by its finishedAt or its restart count.
        assert_eq!(
            reading(st(&p), "app", &failed),
            Reading::Request {
                previous: false,
                container_id: None
            }
        );
        let by_count = Run {
            restart_count: Some(2),
            ..Run::default()
        };
        assert_eq!(
            reading(st(&p), "app", &by_count),
            Reading::Request {
                previous: true,
                container_id: None
            }
        );
        let other = Run {
            restart_count: Some(1),
            ..Run::default()
        };
        assert_eq!(reading(st(&p), "app", &other), Reading::Gone);
    }

    #[test]
    fn ephemeral_containers_are_found_last() {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1"},
            "status": {"ephemeralContainerStatuses": [cs("debug", 0, A,
                term(A, 1, "2026-11-29T10:00:00Z"), json!({}))]}
        }))
        .unwrap();
        assert_eq!(
            id_of(served(st(&p), "debug", false)),
            Some((A.into(), Slot::Terminated))
        );
        // Near miss: --previous, with no lastState.
        assert_eq!(
            served(st(&p), "debug", true),
            Err(Refused::NoPreviousTermination)
        );
    }

    #[test]
    fn a_run_is_known_by_its_id_before_its_time_or_count() {
        let mut a = run(A);
        a.restart_count = Some(3);
        let mut b = run(B);
        b.restart_count = Some(3);
        assert!(!a.same(&b), "the ID decides");
        let t = |at: &str, n: i32| Run {
            container_id: None,
            restart_count: Some(n),
            finished_at: Some(at.into()),
        };
        assert!(t("2026-11-29T10:00:00Z", 3).same(&t("2026-11-29T10:00:00+00:00", 2)));
        assert!(!t("2026-11-29T10:00:00Z", 3).same(&t("2026-11-29T10:00:01Z", 3)));
        assert!(
            !Run::default().same(&Run::default()),
            "nothing to know it by"
        );
    }
}
