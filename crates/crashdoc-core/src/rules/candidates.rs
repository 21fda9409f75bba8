//! Candidates from the status alone: what an exit code, a waiting reason, a
//! restart pattern, the controller and the container's role suggest when no
//! message names the cause, ranked and each with what would decide it.
//!
//! They fill the ranking below every finding the evidence supports (at
//! [`Strength::Hint`], confidence low), so that when the first answer is
//! wrong the right cause is among the next ones, and `unknown` comes first
//! only when nothing points anywhere.
//!
//! The table is read top to bottom: the first applicable row of a cause
//! places it; the order of the rows is the order of likelihood.

use super::{Context, Finding};
use crate::causes::Cause;
use crate::model::*;
use crate::strength::{Strength, adjust};

/// What the status says about the failing container.
#[derive(Debug, Default)]
pub struct Facts<'a> {
    pub exit: Option<i32>,
    pub reason: Option<&'a str>,
    pub waiting: Option<&'a str>,
    pub kind: ContainerKind,
    /// Run by a controller that restarts it (Deployment, ReplicaSet,
    /// StatefulSet, DaemonSet) or under `restartPolicy: Always`.
    pub restarted_by_controller: bool,
    pub liveness_or_startup: bool,
    pub run_seconds: Option<i64>,
    pub pending: bool,
    /// The container restarted: previous logs exist or a restart count.
    pub restarted: bool,
    /// The previous run's log holds no error line the catalog knows.
    pub log_ends_clean: bool,
    evidence: Vec<Cite>,
}

impl Facts<'_> {
    fn failed(&self) -> bool {
        self.exit
            .is_some_and(|e| e != 0 && !(128..=165).contains(&e))
            || self.reason == Some("Error")
            || self.waiting == Some("CrashLoopBackOff") && self.exit.is_none()
    }
    fn short_run(&self) -> bool {
        self.run_seconds.is_none_or(|s| s < 60)
    }
}

/// One row of the table.
pub struct Candidate {
    pub cause: Cause,
    pub when: fn(&Facts) -> bool,
    /// Why the status suggests it.
    pub why: &'static str,
    /// What evidence would confirm or rule it out.
    pub decide: &'static str,
    /// The one command that reads that evidence, with the names filled in.
    pub command: fn(&Context) -> String,
}

fn previous_logs(cx: &Context) -> String {
    cx.logs_previous_cmd(cx.focus_name())
}

fn events_of(cx: &Context, reason: &str) -> String {
    cx.kubectl(&format!(
        "get events --field-selector involvedObject.name={},reason={reason}",
        cx.pod_name()
    ))
}

pub static TABLE: &[Candidate] = &[
    Candidate {
        cause: Cause::OomKilled,
        when: |f| f.exit == Some(137) && f.reason != Some("OOMKilled"),
        why: "exit 137 is SIGKILL, which the kernel's OOM killer sends when the memory limit is hit",
        decide: "memory usage against the limit (`kubectl top pod --containers`), the node's kernel log, an OOMKilled reason",
        command: |cx| cx.kubectl(&format!("top pod {} --containers", cx.pod_name())),
    },
    Candidate {
        cause: Cause::ProbeKill,
        when: |f| {
            f.liveness_or_startup
                && (matches!(f.exit, Some(0 | 137 | 143)) || f.reason == Some("Completed"))
        },
        why: "a liveness or startup probe is configured, and a probe kill ends a run with SIGTERM, then SIGKILL after the grace period",
        decide: "the events: `Unhealthy` (Liveness/Startup probe failed) and `Killing`",
        command: |cx| events_of(cx, "Unhealthy"),
    },
    Candidate {
        cause: Cause::ProbeKill,
        when: |f| f.liveness_or_startup && f.restarted && f.log_ends_clean && f.exit.is_none(),
        why: "the container restarted with a liveness or startup probe configured, and its last run logged no error",
        decide: "the events: `Unhealthy` (Liveness/Startup probe failed) and `Killing`; the lastState's exit code",
        command: |cx| events_of(cx, "Unhealthy"),
    },
    Candidate {
        cause: Cause::Terminated,
        when: |f| f.exit == Some(143),
        why: "exit 143 is SIGTERM: something asked the container to stop",
        decide: "the events and the rollout history (`kubectl rollout history`)",
        command: |cx| events_of(cx, "Killing"),
    },
    Candidate {
        cause: Cause::ExitZero,
        when: |f| {
            f.restarted_by_controller
                && f.kind == ContainerKind::Main
                && (f.exit == Some(0) || f.reason == Some("Completed"))
        },
        why: "the process exited 0 under a controller that restarts whatever stops",
        decide: "the previous logs' last lines: a finished task, or a server that never started listening",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::NativeCrash,
        when: |f| matches!(f.exit, Some(132 | 134 | 135 | 136 | 139)),
        why: "an exit of 128 + SIGILL, SIGABRT, SIGBUS, SIGFPE or SIGSEGV: the process died of a signal it raised itself",
        decide: "the previous logs' last lines and the node's kernel log (segfault, trap invalid opcode)",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::BadCommand,
        when: |f| {
            matches!(f.exit, Some(126..=128))
                || matches!(
                    f.waiting,
                    Some("RunContainerError" | "CreateContainerError" | "StartError")
                )
        },
        why: "the entrypoint could not be run (exit 126/127, or the runtime failed to start it)",
        decide: "the `Failed` event's message from the container runtime",
        command: |cx| events_of(cx, "Failed"),
    },
    Candidate {
        cause: Cause::DependencyUnreachable,
        when: |f| f.kind == ContainerKind::Init && f.failed(),
        why: "an init container that fails usually waits for, or prepares, a dependency that is not there",
        decide: "the init container's logs (`kubectl logs POD -c INIT --previous`)",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::BadConfig,
        when: |f| f.failed() && f.short_run(),
        why: "a run that fails within seconds of starting is most often a configuration the program rejects",
        decide: "the previous logs' last lines",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::AppCrash,
        when: |f| f.failed(),
        why: "a non-zero exit with no message naming a cause",
        decide: "the previous logs: a stack trace or panic names what failed",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::DependencyUnreachable,
        when: |f| f.failed(),
        why: "services that exit at start when a backend they need is down are common",
        decide: "the previous logs (connection refused, no such host, timeouts) and the backends' endpoints",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::MissingFile,
        when: |f| f.failed() && f.short_run(),
        why: "a program that exits at once often cannot find the file or model it loads",
        decide: "the previous logs, and the volumeMounts against the paths it opens",
        command: previous_logs,
    },
    Candidate {
        cause: Cause::Volume,
        when: |f| f.waiting == Some("ContainerCreating") || f.pending && f.waiting.is_none(),
        why: "a container that never leaves ContainerCreating usually waits for a volume to mount",
        decide: "the events (FailedMount, FailedAttachVolume) and `kubectl get pvc`",
        command: |cx| events_of(cx, "FailedMount"),
    },
    Candidate {
        cause: Cause::Unschedulable,
        when: |f| f.pending && f.waiting.is_none(),
        why: "a Pending pod with no running container may never have been scheduled",
        decide: "the events (FailedScheduling) and `kubectl get pod -o wide` (NODE)",
        command: |cx| events_of(cx, "FailedScheduling"),
    },
];

/// At most this many candidates are added below the findings.
pub const SHOWN: usize = 3;

fn facts<'a>(cx: &'a Context) -> Facts<'a> {
    let pod = cx.pod;
    let mut f = Facts {
        pending: pod.phase_is("Pending") || pod.status_contains("Pending"),
        restarted_by_controller: pod.owner.as_ref().is_some_and(|o| {
            matches!(
                o.kind.as_str(),
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
        }) || pod
            .restart_policy
            .as_ref()
            .is_some_and(|r| r.value == "Always"),
        ..Default::default()
    };
    if let Some(s) = &pod.listed_status {
        f.evidence.push(s.cite.clone());
        // `get pods` shows the waiting reason of the failing container.
        let (init, v) = match s.value.strip_prefix("Init:") {
            Some(v) => (true, v),
            None => (false, s.value.as_str()),
        };
        if v.chars().all(|c| c.is_ascii_alphanumeric()) && v != "Running" && v != "Pending" {
            f.waiting = Some(v);
        }
        if init {
            f.kind = ContainerKind::Init;
        }
    }
    f.restarted = pod.has_previous_logs() || pod.is_restarting();
    let previous: Vec<_> = pod
        .logs
        .iter()
        .filter(|l| l.kind == crate::scan::LogKind::Previous)
        .collect();
    f.log_ends_clean = !previous.is_empty()
        && previous.iter().all(|l| {
            l.hits
                .iter()
                .all(|h| matches!(h.sig.kind, crate::scan::SigKind::Stage(_)))
        });
    if let Some(last) = previous.iter().find_map(|l| l.tail.last().map(|t| (l, t))) {
        f.evidence.push(Cite::new(
            SourceKind::Log,
            format!("{}:{}", last.0.file, last.1.number),
            crate::text::clip(&crate::redact::redact(last.1.text.trim()), 300),
        ));
    }
    let Some(c) = cx.focus else { return f };
    if let Some(p) = c
        .probes
        .iter()
        .find(|p| matches!(p.kind, ProbeKind::Liveness | ProbeKind::Startup))
    {
        f.evidence.push(p.cite.clone());
    }
    if f.kind == ContainerKind::Main {
        f.kind = c.kind;
    }
    f.liveness_or_startup = c
        .probes
        .iter()
        .any(|p| matches!(p.kind, ProbeKind::Liveness | ProbeKind::Startup));
    if let Some(w) = c.waiting_reason() {
        f.waiting = Some(w.value.as_str());
        f.evidence.push(w.cite.clone());
    }
    if let Some(t) = c.last_termination() {
        f.exit = t.exit();
        f.reason = t.reason.as_ref().map(|r| r.value.as_str());
        f.run_seconds = t.run_seconds();
        for c in [
            t.exit_code.as_ref().map(|e| &e.cite),
            t.reason.as_ref().map(|r| &r.cite),
        ]
        .into_iter()
        .flatten()
        {
            f.evidence.push(c.clone());
        }
    }
    f
}

/// The candidates for causes no finding names yet, best first.
pub fn candidates(cx: &Context, found: &[Finding]) -> Vec<Finding> {
    let f = facts(cx);
    if f.evidence.is_empty() {
        return vec![];
    }
    let mut out: Vec<Finding> = Vec::new();
    for c in TABLE {
        if out.len() == SHOWN {
            break;
        }
        if found.iter().chain(&out).any(|x| x.cause == c.cause) || !(c.when)(&f) {
            continue;
        }
        // Below every finding, in the table's order.
        let score = Strength::Hint.score() - adjust::NEXT_CANDIDATE * out.len() as f32;
        let mut x = Finding::new(
            c.cause,
            score,
            format!(
                "a candidate from the status alone: {}; to decide, read {}",
                c.why, c.decide
            ),
        )
        .container(cx.focus_name())
        .decided_by((c.command)(cx));
        x.status_only = true;
        for e in &f.evidence {
            x = x.cite(e);
        }
        out.push(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::read_paste;

    fn causes(paste: &str) -> Vec<Cause> {
        let ev = read_paste(paste.as_bytes(), "paste").unwrap();
        let r = crate::diagnose::diagnose(&ev.pods[0], &[]);
        r.diagnoses.iter().map(|d| d.cause).collect()
    }

    #[test]
    fn exit_137_without_a_reason_suggests_oom_then_probe() {
        let got = causes(
            "Name: web-1\nControlled By: ReplicaSet/web-6468f86645\nContainers:\n  web:\n    State: Waiting\n      Reason: CrashLoopBackOff\n    Last State: Terminated\n      Exit Code: 137\n    Liveness: http-get http://:8080/health delay=0s timeout=1s period=10s #success=1 #failure=3\n",
        );
        let oom = got.iter().position(|c| *c == Cause::OomKilled);
        let probe = got.iter().position(|c| *c == Cause::ProbeKill);
        assert!(oom.is_some() && probe.is_some(), "{got:?}");
    }

    #[test]
    fn a_failed_run_alone_is_unknown_then_its_candidates() {
        let paste = "Name: api-0\nContainers:\n  api:\n    State: Waiting\n      Reason: CrashLoopBackOff\n    Last State: Terminated\n      Reason: Error\n      Exit Code: 1\n";
        let got = causes(paste);
        assert_eq!(got[0], Cause::Unknown, "{got:?}");
        assert!(got.len() >= 4, "{got:?}");
        // Every candidate after it says what would decide it.
        let ev = read_paste(paste.as_bytes(), "paste").unwrap();
        let r = crate::diagnose::diagnose(&ev.pods[0], &[]);
        for d in &r.diagnoses[1..] {
            let how = d.decide.as_deref().unwrap_or_default();
            assert!(how.starts_with("kubectl "), "{:?}: {how:?}", d.cause);
        }
        assert!(r.diagnoses[0].commands[0].contains("logs api-0 --previous"));
    }

    /// Near miss: the same status with one log line that names a cause is
    /// not silent; the cause leads.
    #[test]
    fn near_miss_a_failed_run_with_a_named_cause_is_not_unknown() {
        let got = causes(
            "Name: api-0\nContainers:\n  api:\n    State: Waiting\n      Reason: CrashLoopBackOff\n    Last State: Terminated\n      Reason: Error\n      Exit Code: 1\n$ kubectl logs api-0 --previous\nError: dial tcp 10.0.0.7:5432: connect: connection refused\n",
        );
        assert_eq!(got[0], Cause::DependencyUnreachable, "{got:?}");
    }

    /// Exit 137 without an OOMKilled reason and with no usage measured is
    /// silent too: OOM and a probe kill are both candidates.
    #[test]
    fn exit_137_alone_is_unknown_first() {
        let got = causes(
            "Name: web-1\nContainers:\n  web:\n    State: Waiting\n      Reason: CrashLoopBackOff\n    Last State: Terminated\n      Exit Code: 137\n",
        );
        assert_eq!(got[0], Cause::Unknown, "{got:?}");
        assert_eq!(got[1], Cause::OomKilled, "{got:?}");
    }

    #[test]
    fn near_miss_a_running_pod_with_nothing_wrong_gets_none() {
        let got = causes("Name: ok-0\nContainers:\n  app:\n    State: Running\n");
        assert_eq!(got, vec![Cause::Unknown]);
    }
}
