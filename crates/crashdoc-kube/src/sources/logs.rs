//! Current and, where a run ended, previous logs of every container (init
//! containers and sidecars too), bounded, token-like strings redacted; each
//! with the run it was read from (`log-runs.json`).
//!
//! The kubelet serves a log by the container ID the pod status names
//! ([`crate::runs`]), and the status moves on while crashdoc reads: right
//! after a crash `kubectl logs` reads the crash and `--previous` the run
//! before it; a moment later the next run starts and `kubectl logs` reads
//! that one. So after the logs the pod is read again (a get), and each
//! request is checked to still resolve to the container it was made for.
//! When a container's last termination (or the run the caller names: a
//! watch's termination) is not in a checked file, it is read again with the
//! request that serves it now; when none serves it any more, the files keep
//! what they got and `missing.json` says that run's output was overwritten.

use super::{Ctx, Output, Rule, Source, json, missing};
use crate::runs::{self, Reading, Run, Served};
use crashdoc_core::ingest::bundle::{BundleFile, LogRun, LogRuns, TerminatedRun};
use crashdoc_core::model::Missing;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{Api, LogParams};
use std::collections::HashSet;

pub struct Logs;

static RBAC: &[Rule] = &[
    Rule::new("", "pods/log", &["get"]),
    // The pod read again after its logs, to check which runs they came from.
    Rule::new("", "pods", &["get"]),
];

/// Reads of the pod, each followed by the logs it shows to be needed again:
/// at most this many (so at most two logs read again).
const ROUNDS: usize = 3;

/// The logs to read: (container, previous), in spec order. A request the
/// status says is served from the same container as the other one (in
/// CrashLoopBackOff `kubectl logs` and `--previous` both read the crash) is
/// made once, as `--previous`.
pub fn log_requests(pod: &Pod) -> Vec<(String, bool)> {
    let status = pod.status.clone().unwrap_or_default();
    let mut out = Vec::new();
    for c in containers(pod) {
        let st = runs::container_status(&status, &c);
        let started = st.is_some_and(|s| {
            s.state
                .as_ref()
                .is_some_and(|x| x.running.is_some() || x.terminated.is_some())
                || s.last_state
                    .as_ref()
                    .is_some_and(|x| x.terminated.is_some())
        });
        let ended_before = st.is_some_and(|s| {
            s.restart_count > 0
                || s.last_state
                    .as_ref()
                    .is_some_and(|x| x.terminated.is_some())
        });
        let same = match (
            runs::served(&status, &c, false),
            runs::served(&status, &c, true),
        ) {
            (Ok(a), Ok(b)) => a.container_id == b.container_id,
            _ => false,
        };
        if started && !(ended_before && same) {
            out.push((c.clone(), false));
        }
        if ended_before {
            out.push((c, true));
        }
    }
    out
}

/// The pod's init and app containers, in spec order.
fn containers(pod: &Pod) -> Vec<String> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .map(|c| c.name.clone())
        .collect()
}

/// One log read, and what it was meant to read.
struct Read {
    container: String,
    previous: bool,
    /// What the status the request was made on says serves it.
    expect: Option<Served>,
    restart_count: Option<i32>,
    finished_at: Option<String>,
    /// The redacted text; `None`: the read failed (named missing).
    text: Option<String>,
    /// See [`LogRun::verified`].
    verified: Option<bool>,
}

impl Read {
    fn new(status: &PodStatus, container: &str, previous: bool) -> Read {
        let expect = runs::served(status, container, previous).ok();
        let cs = runs::container_status(status, container);
        let finished_at = expect.as_ref().and_then(|s| {
            let st = cs?;
            let t = match s.slot {
                runs::Slot::Running => return None,
                runs::Slot::Terminated => st.state.as_ref()?.terminated.as_ref()?,
                runs::Slot::LastTerminated => st.last_state.as_ref()?.terminated.as_ref()?,
            };
            t.finished_at.as_ref().map(|f| f.0.to_string())
        });
        Read {
            container: container.to_string(),
            previous,
            expect,
            restart_count: cs.map(|s| s.restart_count),
            finished_at,
            text: None,
            verified: None,
        }
    }

    fn file(&self) -> BundleFile {
        BundleFile::Logs {
            container: self.container.clone(),
            previous: self.previous,
        }
    }

    fn expected_id(&self) -> Option<&str> {
        self.expect.as_ref().map(|s| s.container_id.as_str())
    }

    /// Whether it holds `id`'s output (checked, or not checkable).
    fn holds(&self, id: &str) -> bool {
        self.text.is_some() && self.expected_id() == Some(id) && self.verified != Some(false)
    }
}

/// Why a run's output is in no file, for `missing.json`.
fn lost(
    container: &str,
    run: &Run,
    now: Option<&PodStatus>,
    recreated: bool,
    failed: bool,
) -> Option<Missing> {
    let id = run.container_id.as_deref()?;
    let n = run
        .restart_count
        .map(|n| format!(", restart {n}"))
        .unwrap_or_default();
    let why = if recreated {
        "the pod was recreated (another uid) while its logs were read".to_string()
    } else {
        match now.map(|s| runs::reading(s, container, run)) {
            Some(Reading::Gone) => format!(
                "overwritten: the pod's status no longer shows container {id}{n}; `kubectl logs` and `--previous` now read later runs (the files hold those)"
            ),
            Some(Reading::Unservable(slot)) => format!(
                "the status shows the run in {} without a container ID: the kubelet cannot read its log",
                slot.as_str()
            ),
            Some(Reading::NoStatus) => "the container is no longer in the pod's status".into(),
            // The read itself failed: named missing on its own.
            _ if failed => return None,
            Some(Reading::Request { .. }) => format!(
                "the kubelet kept moving to later runs while the logs were read; container {id}{n} was not read in a checked file"
            ),
            None => return None,
        }
    };
    Some(Missing {
        what: format!("logs of {container}'s terminated run"),
        why,
        hint: None,
    })
}

impl Source for Logs {
    fn name(&self) -> &'static str {
        "logs"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let api: Api<Pod> = cx.api();
            let mut out = Output::default();
            let settled = settle(cx, &api).await;
            let planned = settled.as_ref().unwrap_or(cx.pod);
            let status = planned.status.clone().unwrap_or_default();
            let mut reads: Vec<Read> = log_requests(planned)
                .into_iter()
                .map(|(c, previous)| Read::new(&status, &c, previous))
                .collect();
            let mut attempted: HashSet<(String, bool, Option<String>)> = reads
                .iter()
                .map(|r| {
                    (
                        r.container.clone(),
                        r.previous,
                        r.expected_id().map(str::to_string),
                    )
                })
                .collect();
            fetch(cx, &api, &mut reads, &mut out.missing).await;

            // The run each container's logs are wanted for.
            let targets: Vec<(String, Run)> = containers(cx.pod)
                .into_iter()
                .filter_map(|c| {
                    let run = cx
                        .runs
                        .iter()
                        .find(|(name, _)| *name == c)
                        .map(|(_, r)| r.clone())
                        .or_else(|| runs::last_termination(cx.pod, &c))?;
                    Some((c, run))
                })
                .collect();

            let uid = cx.pod.metadata.uid.clone();
            let mut now: Option<PodStatus> = None;
            let mut recreated = false;
            // Checked only where a termination is known by its container
            // ID: a pod that never ended a run has no crash to mislabel.
            let rounds = if targets.iter().any(|(_, r)| r.container_id.is_some()) {
                ROUNDS
            } else {
                0
            };
            for round in 0..rounds {
                let unchecked = reads
                    .iter()
                    .any(|r| r.text.is_some() && r.expect.is_some() && r.verified.is_none());
                if !unchecked {
                    break;
                }
                let pod = match cx.get(&api, cx.name).await {
                    Ok(p) => p,
                    Err(e) => {
                        out.missing.push(missing(
                            "pod (read again to check which runs its logs came from)",
                            &e,
                            "get",
                            &RBAC[1],
                        ));
                        break;
                    }
                };
                if pod.metadata.uid != uid {
                    recreated = true;
                    for r in reads.iter_mut().filter(|r| r.expect.is_some()) {
                        r.verified = Some(false);
                    }
                    break;
                }
                let st = pod.status.unwrap_or_default();
                for r in reads
                    .iter_mut()
                    .filter(|r| r.text.is_some() && r.expect.is_some() && r.verified.is_none())
                {
                    let served = runs::served(&st, &r.container, r.previous).ok();
                    r.verified = Some(served.map(|s| s.container_id).as_deref() == r.expected_id());
                }
                // Targets in no checked file: read again where a request
                // serves them now, unless that very read was made.
                let mut again: Vec<Read> = Vec::new();
                for (c, run) in &targets {
                    let Some(id) = run.container_id.as_deref() else {
                        continue;
                    };
                    if reads.iter().any(|r| r.container == *c && r.holds(id)) {
                        continue;
                    }
                    if let Reading::Request {
                        previous,
                        container_id,
                    } = runs::reading(&st, c, run)
                        && attempted.insert((c.clone(), previous, container_id))
                    {
                        again.push(Read::new(&st, c, previous));
                    }
                }
                now = Some(st);
                if again.is_empty() || round + 1 == rounds {
                    break;
                }
                fetch(cx, &api, &mut again, &mut out.missing).await;
                // A new read replaces the file of its request (a failed one
                // leaves it as it was, and is named missing).
                for a in again.into_iter().filter(|a| a.text.is_some()) {
                    reads.retain(|r| !(r.container == a.container && r.previous == a.previous));
                    reads.push(a);
                }
            }

            // The files, in spec order, then log-runs.json.
            let order = containers(cx.pod);
            reads.sort_by_key(|r| (order.iter().position(|c| *c == r.container), r.previous));
            let mut meta = LogRuns::default();
            for r in &reads {
                let Some(text) = &r.text else { continue };
                let file = r.file();
                meta.files.push(LogRun {
                    file: file.name(),
                    container: r.container.clone(),
                    previous: r.previous,
                    container_id: r.expected_id().map(str::to_string),
                    state: r.expect.as_ref().map(|s| s.slot.as_str().to_string()),
                    restart_count: r.restart_count,
                    finished_at: r.finished_at.clone(),
                    verified: r.verified,
                });
                out.files.push((file, text.clone().into_bytes()));
            }
            for (c, run) in &targets {
                let holder = run.container_id.as_deref().and_then(|id| {
                    // A read made with --previous first: the crash's usual file.
                    reads
                        .iter()
                        .filter(|r| r.container == *c && r.holds(id))
                        .max_by_key(|r| r.previous)
                });
                if holder.is_none() {
                    let failed = reads.iter().any(|r| r.container == *c && r.text.is_none());
                    let shown = now.as_ref().or(cx.pod.status.as_ref());
                    out.missing.extend(lost(c, run, shown, recreated, failed));
                }
                meta.terminations.push(TerminatedRun {
                    container: c.clone(),
                    container_id: run.container_id.clone(),
                    restart_count: run.restart_count,
                    finished_at: run.finished_at.clone(),
                    file: holder.map(|r| r.file().name()),
                    verified: holder.and_then(|r| r.verified),
                });
            }
            if !meta.files.is_empty() || !meta.terminations.is_empty() {
                out.files.push((BundleFile::LogRuns, json(&meta)));
            }
            out
        })
    }
}

/// Read these logs in parallel: the redacted text into each read, a
/// failure into `missing`.
/// How long a watched termination still shown as its container's current
/// state is followed before its logs are read (see [`settle`]).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(1500);
const SETTLE_STEP: std::time::Duration = std::time::Duration::from_millis(250);

/// A watched run the status shows as the container's `state.terminated`
/// may already be history for the kubelet: its first crash is restarted at
/// once, with no back-off (kubernetes v1.36.3 pkg/kubelet/kuberuntime/
/// kuberuntime_manager.go doBackOff: a container with no back-off entry
/// starts again), and the kubelet answers `kubectl logs` from its own status,
/// which the API server shows a moment later (kubelet_pods.go
/// GetKubeletContainerLogs). `logs` would then serve the next run while the
/// pod read from the API still names the crashed one, and the check after
/// the read could not tell. Seen on a real kubelet: a first crash's capture
/// held the next run's output. So, for such a run, the pod is read again
/// every 250 ms for up to 1.5 s, until the status moves on (the next run
/// started: the crash is then `lastState`, served by `--previous` until that
/// next run ends) or the time is up (the container sits in its back-off,
/// and `logs` serves the crash). Returns the newest pod read, if any.
async fn settle(cx: &Ctx<'_>, api: &Api<Pod>) -> Option<Pod> {
    let shown = |pod: &Pod| {
        cx.runs.iter().any(|(c, run)| {
            let Some(id) = run.container_id.as_deref() else {
                return false;
            };
            pod.status
                .iter()
                .flat_map(|s| {
                    s.init_container_statuses
                        .iter()
                        .flatten()
                        .chain(s.container_statuses.iter().flatten())
                })
                .filter(|st| &st.name == c)
                .any(|st| {
                    st.state
                        .as_ref()
                        .and_then(|x| x.terminated.as_ref())
                        .and_then(|t| t.container_id.as_deref())
                        == Some(id)
                })
        })
    };
    if !shown(cx.pod) {
        return None;
    }
    let start = std::time::Instant::now();
    let mut newest = None;
    while start.elapsed() < SETTLE {
        tokio::time::sleep(SETTLE_STEP).await;
        let Ok(pod) = cx.get(api, cx.name).await else {
            break;
        };
        if pod.metadata.uid != cx.pod.metadata.uid {
            break;
        }
        let moved = !shown(&pod);
        newest = Some(pod);
        if moved {
            break;
        }
    }
    newest
}

async fn fetch(cx: &Ctx<'_>, api: &Api<Pod>, reads: &mut [Read], gone: &mut Vec<Missing>) {
    let results = join_all(reads.iter().map(|r| {
        let lp = LogParams {
            container: Some(r.container.clone()),
            previous: r.previous,
            tail_lines: cx.opts.log_lines,
            limit_bytes: Some(cx.opts.log_bytes),
            ..Default::default()
        };
        async move {
            cx.count();
            crate::retry::read(3, || api.logs(cx.name, &lp)).await
        }
    }))
    .await;
    for (r, result) in reads.iter_mut().zip(results) {
        match result {
            Ok(text) => {
                r.text = Some(
                    text.lines()
                        .map(|l| crashdoc_core::redact::redact(l).into_owned() + "\n")
                        .collect(),
                );
            }
            Err(e) => {
                let c = &r.container;
                gone.push(missing(
                    format!("logs{} of {c}", if r.previous { " --previous" } else { "" }),
                    &e,
                    "get",
                    &RBAC[0],
                ));
            }
        }
    }
}
