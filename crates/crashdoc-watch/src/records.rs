//! The history record of a termination: its capture diagnosed with the same
//! rules as `crashdoc analyze`, its log line and its webhook notice.

use crate::notify;
use crate::track::Termination;
use crashdoc_core::diagnose::{self, Diagnosis};
use crashdoc_core::ingest::bundle::{self, PodFiles, Reference, ReferenceKind};
use crashdoc_history::{Capture, CaptureKind, CaptureLogs, ConfigKeys, TerminationKey};
use k8s_openapi::api::core::v1::Pod;
use std::time::{Duration, Instant};

/// One termination waiting for its capture.
pub(crate) struct Job {
    /// The cluster's name in the history (`--cluster`).
    pub cluster: std::sync::Arc<str>,
    pub term: Termination,
    pub pod: Pod,
    pub workload: Option<(String, String)>,
    pub node: Option<String>,
    pub observed_at: jiff::Timestamp,
    pub queued: Instant,
}

/// A capture on its way to the history, with the diagnosis it was built
/// from (for the notice: no re-parsing of the stored JSON).
pub(crate) struct Record {
    pub capture: Capture,
    pub diagnosis: Option<Diagnosis>,
    /// The key names of the ConfigMaps and Secrets the pod referenced.
    pub config_keys: Vec<ConfigKeys>,
}

/// The key names (never values) of the ConfigMaps and Secrets in a
/// capture's `references.json`.
pub(crate) fn config_keys(files: &PodFiles) -> Vec<ConfigKeys> {
    let Some((_, bytes)) = files
        .files
        .iter()
        .find(|(n, _)| n == bundle::file::REFERENCES)
    else {
        return Vec::new();
    };
    let refs: Vec<Reference> = serde_json::from_slice(bytes).unwrap_or_default();
    refs.into_iter()
        .filter(|r| matches!(r.kind, ReferenceKind::ConfigMap | ReferenceKind::Secret))
        .map(|r| ConfigKeys {
            kind: r.kind.as_str().to_string(),
            name: r.name,
            exists: r.exists,
            keys: r.keys.into_keys().collect(),
            changed: r.changed,
        })
        .collect()
}

/// Which run the capture's logs of `container` came from, by the bundle's
/// `log-runs.json` (the collector checked each file against the pod read
/// again after it).
pub(crate) fn logs_from(files: &PodFiles, container: &str) -> Option<CaptureLogs> {
    let (_, bytes) = files
        .files
        .iter()
        .find(|(n, _)| n == bundle::file::LOG_RUNS)?;
    let runs: bundle::LogRuns = serde_json::from_slice(bytes).ok()?;
    let t = runs
        .terminations
        .iter()
        .find(|t| t.container == container)?;
    let mine = |f: &&bundle::LogRun| f.container == container;
    // The file holding the run; else the one a reader takes for the crash
    // (its --previous log), checked, whatever run it came from.
    let from = match &t.file {
        Some(name) => runs.files.iter().filter(mine).find(|f| &f.file == name),
        None => runs
            .files
            .iter()
            .filter(mine)
            .filter(|f| f.verified == Some(true))
            .max_by_key(|f| f.previous),
    };
    let matched = match (&t.container_id, &t.file, t.verified) {
        (None, _, _) => None,
        (Some(_), Some(_), Some(true)) => Some(true),
        (Some(_), Some(_), _) => None,
        (Some(_), None, _) => Some(false),
    };
    Some(CaptureLogs {
        target: t.container_id.clone(),
        container_id: from.and_then(|f| f.container_id.clone()),
        file: t.file.clone(),
        matched,
    })
}

fn confidence_str(c: diagnose::Confidence) -> &'static str {
    match c {
        diagnose::Confidence::High => "high",
        diagnose::Confidence::Medium => "medium",
        diagnose::Confidence::Low => "low",
    }
}

pub(crate) fn kind_str(k: CaptureKind) -> &'static str {
    match k {
        CaptureKind::Full => "full",
        CaptureKind::Partial => "partial",
        CaptureKind::StatusOnly => "status_only",
    }
}

/// The log line of a stored capture (`id`: `None` while it waits in the
/// spool for the database).
pub(crate) fn line(c: &Capture, id: Option<u64>) -> String {
    format!(
        "{}/{} {} #{}: {}{} → {}{} [{} {}]",
        c.namespace,
        c.pod,
        c.key.container,
        c.key.restart_count,
        c.reason.as_deref().unwrap_or("terminated"),
        c.exit_code
            .map(|e| format!(" exit {e}"))
            .unwrap_or_default(),
        c.cause.as_deref().unwrap_or("no diagnosis"),
        c.confidence
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        kind_str(c.kind),
        id.map_or_else(|| "spooled".to_string(), |id| format!("#{id}")),
    )
}

pub(crate) fn notice(
    c: &Capture,
    diagnosis: Option<&Diagnosis>,
    id: Option<u64>,
) -> notify::Notice {
    notify::Notice {
        kind: "crashdoc.termination",
        namespace: c.namespace.clone(),
        pod: c.pod.clone(),
        container: c.key.container.clone(),
        owner_kind: c.owner_kind.clone(),
        owner: c.owner.clone(),
        restart_count: c.key.restart_count,
        reason: c.reason.clone(),
        exit_code: c.exit_code.unwrap_or(-1),
        cause: c.cause.clone(),
        confidence: c.confidence.clone(),
        summary: c.summary.clone(),
        fix: diagnosis.map(|d| d.fix.clone()).unwrap_or_default(),
        commands: diagnosis.map(|d| d.commands.clone()).unwrap_or_default(),
        suppressed: 0,
        history_id: id,
    }
}

/// Diagnose a pod's files and build its history record.
fn build(
    job: &Job,
    files: PodFiles,
    context: &Option<String>,
    kind: CaptureKind,
    mut missing: Vec<String>,
    completed: Option<jiff::Timestamp>,
) -> Record {
    let config_keys = config_keys(&files);
    let logs = match kind {
        CaptureKind::StatusOnly => None,
        _ => logs_from(&files, &job.term.container),
    };
    let capture_delay_ms = completed
        .zip(job.term.finished_at)
        .map(|(done, finished)| done.duration_since(finished).as_millis() as i64);
    let ev = bundle::read_memory(std::slice::from_ref(&files));
    let report = diagnose::diagnose_all(&ev);
    let pod_report = report.pods.first();
    // Evidence the capture could not read makes it partial; metrics usage
    // (no metrics-server) and Secret key names (not read by choice) are
    // extras whose absence is noted but does not.
    let mut partial = !missing.is_empty();
    if kind != CaptureKind::StatusOnly {
        for m in pod_report.into_iter().flat_map(|p| p.missing.iter()) {
            partial |= !matches!(m.what.as_str(), "usage" | "secret key names");
            missing.push(format!("{}: {}", m.what, m.why));
        }
    }
    // The diagnosis of this container when there is one, else the pod's first.
    let diag = pod_report.and_then(|p| {
        p.diagnoses
            .iter()
            .find(|d| d.container.as_deref() == Some(job.term.container.as_str()))
            .or_else(|| p.diagnoses.first())
    });
    let created = jiff::Timestamp::now().to_string();
    let bundle =
        match bundle::tar_gz_bytes(std::slice::from_ref(&files), context.as_deref(), &created) {
            Ok(b) => Some(b),
            Err(e) => {
                missing.push(format!("bundle: {e}"));
                None
            }
        };
    let kind = match kind {
        CaptureKind::Full if partial || bundle.is_none() => CaptureKind::Partial,
        k => k,
    };
    let capture = Capture {
        key: TerminationKey {
            cluster: job.cluster.to_string(),
            pod_uid: job.term.uid.clone(),
            container: job.term.container.clone(),
            restart_count: job.term.restart_count,
        },
        namespace: job.term.namespace.clone(),
        pod: job.term.pod.clone(),
        owner_kind: job.workload.as_ref().map(|w| w.0.clone()),
        owner: job.workload.as_ref().map(|w| w.1.clone()),
        node: job.node.clone(),
        revision: crate::track::revision_of(&job.pod),
        finished_at: job.term.finished_at,
        observed_at: job.observed_at,
        reason: job.term.reason.clone(),
        exit_code: Some(job.term.exit_code),
        signal: job.term.signal,
        cause: diag.map(|d| d.cause.id().to_string()),
        confidence: diag.map(|d| confidence_str(d.confidence).to_string()),
        summary: diag.map(|d| d.summary.clone()),
        diagnosis_json: diag.and_then(|d| serde_json::to_string(d).ok()),
        kind,
        missing,
        logs,
        capture_delay_ms,
        bundle,
    };
    Record {
        capture,
        diagnosis: diag.cloned(),
        config_keys,
    }
}

/// The record of a capture that read `files` and ended at `completed`.
pub(crate) fn record(
    job: &Job,
    files: PodFiles,
    context: &Option<String>,
    waited: Duration,
    completed: jiff::Timestamp,
) -> Record {
    let mut missing = Vec::new();
    if waited > Duration::from_secs(30) {
        missing.push(format!(
            "captured {} s after the termination: a later crash may have replaced the previous log",
            waited.as_secs()
        ));
    }
    build(
        job,
        files,
        context,
        CaptureKind::Full,
        missing,
        Some(completed),
    )
}

/// A record from the pod's status alone (no API request).
pub(crate) fn status_only(job: &Job, context: &Option<String>, why: &str) -> Record {
    let files = PodFiles {
        namespace: job.term.namespace.clone(),
        name: job.term.pod.clone(),
        files: vec![(
            "pod.json".into(),
            serde_json::to_vec_pretty(&job.pod).unwrap_or_default(),
        )],
    };
    build(
        job,
        files,
        context,
        CaptureKind::StatusOnly,
        vec![why.to_string()],
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(reason: &str, code: i32) -> Job {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1"},
            "spec": {"containers": [{"name": "app", "image": "x",
                "resources": {"limits": {"memory": "64Mi"}}}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app", "image": "x",
                "imageID": "", "ready": false, "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": code, "reason": reason,
                    "finishedAt": "2026-11-29T10:00:00Z"}}}]}
        }))
        .unwrap();
        Job {
            cluster: "east".into(),
            term: Termination {
                namespace: "shop".into(),
                pod: "web-1".into(),
                uid: "u1".into(),
                container: "app".into(),
                restart_count: 2,
                reason: Some(reason.into()),
                exit_code: code,
                signal: None,
                finished_at: Some("2026-11-29T10:00:00Z".parse().unwrap()),
                message: None,
                init: false,
                container_id: None,
            },
            pod,
            workload: None,
            node: None,
            observed_at: "2026-11-29T10:00:01Z".parse().unwrap(),
            queued: Instant::now(),
        }
    }

    #[test]
    fn the_notice_takes_fix_and_commands_from_the_typed_diagnosis() {
        let r = status_only(&job("OOMKilled", 137), &None, "shed");
        let d = r.diagnosis.as_ref().expect("a diagnosis");
        assert_eq!(r.capture.cause.as_deref(), Some(d.cause.id()));
        assert_eq!(r.capture.kind, CaptureKind::StatusOnly);
        let n = notice(&r.capture, r.diagnosis.as_ref(), Some(7));
        assert!(!n.fix.is_empty(), "{n:?}");
        assert_eq!((&n.fix, &n.commands), (&d.fix, &d.commands));
        // The same as the stored JSON says (what notice() parsed before).
        let stored: serde_json::Value =
            serde_json::from_str(r.capture.diagnosis_json.as_deref().unwrap()).unwrap();
        assert_eq!(json!(n.fix), stored["fix"]);
        assert_eq!(json!(n.commands), stored["commands"]);
        assert_eq!(n.history_id, Some(7));
    }

    #[test]
    fn a_capture_keeps_the_key_names_of_its_config_maps_and_secrets() {
        let refs = json!([
            {"kind": "ConfigMap", "name": "app-config", "exists": true,
             "keys": {"MODEL_NAME": 17, "LOG_LEVEL": 4}, "changed": "2026-12-01T10:00:00Z"},
            {"kind": "Secret", "name": "app-secret", "exists": false, "keys": {}},
            {"kind": "Service", "name": "postgres", "exists": true, "keys": {}}
        ]);
        let mut files = PodFiles {
            namespace: "shop".into(),
            name: "web-1".into(),
            files: vec![("references.json".into(), serde_json::to_vec(&refs).unwrap())],
        };
        let r = record(
            &job("Error", 1),
            files.clone(),
            &None,
            Duration::ZERO,
            jiff::Timestamp::now(),
        );
        let k = &r.config_keys;
        assert_eq!(k.len(), 2, "ConfigMaps and Secrets only: {k:?}");
        assert_eq!(
            (k[0].kind.as_str(), k[0].name.as_str()),
            ("ConfigMap", "app-config")
        );
        assert_eq!(k[0].keys, ["LOG_LEVEL", "MODEL_NAME"]);
        assert_eq!(k[0].changed.as_deref(), Some("2026-12-01T10:00:00Z"));
        assert_eq!((k[1].kind.as_str(), k[1].exists), ("Secret", Some(false)));
        // Near miss: no references.json, no key names.
        files.files.clear();
        assert!(config_keys(&files).is_empty());
        assert!(
            status_only(&job("Error", 1), &None, "shed")
                .config_keys
                .is_empty()
        );
    }

    fn with_log_runs(runs: serde_json::Value) -> PodFiles {
        PodFiles {
            namespace: "shop".into(),
            name: "web-1".into(),
            files: vec![
                ("logs-previous.app.txt".into(), b"Killed\n".to_vec()),
                ("log-runs.json".into(), serde_json::to_vec(&runs).unwrap()),
            ],
        }
    }

    #[test]
    fn a_capture_records_which_run_its_logs_came_from_and_its_delay() {
        let runs = json!({"files": [{"file": "logs-previous.app.txt", "container": "app",
                "previous": true, "container_id": "containerd://b", "state": "lastState",
                "verified": true}],
            "terminations": [{"container": "app", "container_id": "containerd://b",
                "file": "logs-previous.app.txt", "verified": true}]});
        let done: jiff::Timestamp = "2026-11-29T10:00:02.5Z".parse().unwrap();
        let r = record(
            &job("OOMKilled", 137),
            with_log_runs(runs),
            &None,
            Duration::ZERO,
            done,
        );
        let logs = r.capture.logs.as_ref().unwrap();
        assert_eq!(logs.matched, Some(true));
        assert_eq!(logs.target.as_deref(), Some("containerd://b"));
        assert_eq!(logs.container_id.as_deref(), Some("containerd://b"));
        assert_eq!(logs.file.as_deref(), Some("logs-previous.app.txt"));
        assert_eq!(
            r.capture.capture_delay_ms,
            Some(2500),
            "finishedAt 10:00:00"
        );
        // Near miss: overwritten: no file holds the run; the log kept is
        // another run's.
        let gone = json!({"files": [{"file": "logs-previous.app.txt", "container": "app",
                "previous": true, "container_id": "containerd://c", "verified": true}],
            "terminations": [{"container": "app", "container_id": "containerd://b"}]});
        let r = record(
            &job("OOMKilled", 137),
            with_log_runs(gone),
            &None,
            Duration::ZERO,
            done,
        );
        let logs = r.capture.logs.as_ref().unwrap();
        assert_eq!(logs.matched, Some(false));
        assert_eq!(logs.container_id.as_deref(), Some("containerd://c"));
        // No container IDs: nothing to match; no log-runs.json (or status
        // only): nothing recorded.
        let no_id = json!({"terminations": [{"container": "app"}]});
        let r = record(
            &job("OOMKilled", 137),
            with_log_runs(no_id),
            &None,
            Duration::ZERO,
            done,
        );
        assert_eq!(r.capture.logs.as_ref().unwrap().matched, None);
        let s = status_only(&job("OOMKilled", 137), &None, "shed");
        assert_eq!((s.capture.logs, s.capture.capture_delay_ms), (None, None));
    }

    #[test]
    fn without_a_diagnosis_the_notice_has_no_fix() {
        let r = status_only(&job("OOMKilled", 137), &None, "shed");
        let n = notice(&r.capture, None, Some(1));
        assert!(n.fix.is_empty() && n.commands.is_empty());
        assert_eq!(n.cause, r.capture.cause);
    }
}
