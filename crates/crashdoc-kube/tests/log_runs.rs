//! Which run the collected logs come from, against a mock kubelet whose pod
//! status moves on while crashdoc reads (tests/common's mock API server, in
//! plain `cargo test`). The mock answers `kubectl logs` and `--previous`
//! with the output of the run the real kubelet would serve for the status it
//! currently reports (Kubernetes v1.36.3 pkg/kubelet/kubelet_pods.go,
//! validateContainerLogStatus), written out per phase below, not computed
//! by the code under test:
//!
//! - just crashed: `state.terminated` = the crash B, `lastState` = the run A
//!   before it: `logs` reads B, `--previous` reads A;
//! - restarted: `state.running` = the next run C, `lastState` = B: `logs`
//!   reads C, `--previous` reads B;
//! - two runs later: `state.running` = D, `lastState` = C: B is gone.

mod common;

use common::{Mock, NS, Reply, Respond, Seen, cause, list, node_1, ok, opts, status};
use crashdoc_core::ingest::bundle::{LogRuns, PodFiles, read_memory};
use crashdoc_core::model::Missing;
use crashdoc_core::scan::LogKind;
use crashdoc_kube::{Collection, Target};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const POD: &str = "/api/v1/namespaces/shop/pods/web-1";
const PODS: &str = "/api/v1/namespaces/shop/pods";
const WATCH: &str = "/api/v1/namespaces/shop/pods?watch";
const LOG: &str = "/api/v1/namespaces/shop/pods/web-1/log";
const EVENTS: &str = "/api/v1/namespaces/shop/events";
const NODE: &str = "/api/v1/nodes/node-1";

const A: &str = "containerd://run-a";
const B: &str = "containerd://run-b";
const C: &str = "containerd://run-c";
const D: &str = "containerd://run-d";

/// Each run's output: B, the crash the tests are about, cannot bind its
/// port; the run before it could not reach its database; the next ones
/// start (C) or fail otherwise (D).
const OUT_A: &str = "run A: connecting\nError: connect ECONNREFUSED 10.0.0.5:5432\n";
const OUT_B: &str = "run B: starting\nError: listen EADDRINUSE: address already in use :::8080\n";
const OUT_C: &str = "run C: starting\nListening on :8080\n";
const OUT_D: &str =
    "run D: starting\nFileNotFoundError: [Errno 2] No such file or directory: '/models/x'\n";

fn ended(id: &str, at: &str) -> Value {
    json!({"terminated": {"exitCode": 1, "reason": "Error", "containerID": id,
        "startedAt": at, "finishedAt": at}})
}

fn pod(restarts: i32, id: &str, state: Value, last: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": NS, "uid": "uid-1", "resourceVersion": "10"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "web:1"}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "web", "image": "web:1", "imageID": "", "ready": false,
            "restartCount": restarts, "containerID": id, "state": state, "lastState": last}]}
    })
}

/// One status the kubelet reports, and what each log request then reads
/// (`None`: the kubelet's error).
#[derive(Clone)]
struct Phase {
    pod: Value,
    logs: Option<&'static str>,
    previous: Option<&'static str>,
}

/// B just crashed (restartCount 3, B's own; it becomes 4 when C is created).
fn just_crashed(at: &str, before: &str) -> Phase {
    Phase {
        pod: pod(3, B, ended(B, at), ended(A, before)),
        logs: Some(OUT_B),
        previous: Some(OUT_A),
    }
}

/// The back-off over, C runs; B is lastState.
fn restarted(at: &str) -> Phase {
    Phase {
        pod: pod(
            4,
            C,
            json!({"running": {"startedAt": "2026-11-29T10:00:20Z"}}),
            ended(B, at),
        ),
        logs: Some(OUT_C),
        previous: Some(OUT_B),
    }
}

/// Two runs later: D runs, C is lastState, B is gone.
fn two_runs_later() -> Phase {
    Phase {
        pod: pod(
            5,
            D,
            json!({"running": {"startedAt": "2026-11-29T10:01:00Z"}}),
            ended(C, "2026-11-29T10:00:50Z"),
        ),
        logs: Some(OUT_D),
        previous: Some(OUT_C),
    }
}

/// When the kubelet moves from the first phase to the second.
#[derive(Clone, Copy, PartialEq)]
enum Moves {
    /// Right after the pod is first read (between crashdoc's status read
    /// and its log reads).
    AfterFirstGet,
    /// When the first log request arrives (after a watch event).
    AtFirstLog,
    /// The kubelet is already in the last phase (its logs come from its
    /// own status), the API server shows the first phase for this many
    /// more pod reads (the kubelet's status reaches it a moment later).
    ApiLags(usize),
    Never,
}

/// A mock kubelet: the pod's status and its logs by phase.
#[derive(Clone)]
struct Kubelet {
    phases: Arc<Vec<Phase>>,
    at: Arc<AtomicUsize>,
    moves: Moves,
    /// (previous?, text served) of each log request, in order.
    served: Arc<Mutex<Vec<(bool, String)>>>,
}

impl Kubelet {
    fn new(phases: Vec<Phase>, moves: Moves) -> Kubelet {
        Kubelet {
            phases: Arc::new(phases),
            at: Arc::new(AtomicUsize::new(0)),
            moves,
            served: Arc::default(),
        }
    }

    fn phase(&self) -> Phase {
        let i = self.at.load(Ordering::SeqCst).min(self.phases.len() - 1);
        self.phases[i].clone()
    }

    fn pod_reply(&self) -> Reply {
        let k = self.clone();
        let reads = Arc::new(AtomicUsize::new(0));
        Reply::Dynamic(Respond(Arc::new(move |_: &Seen| {
            if let Moves::ApiLags(n) = k.moves {
                let i = if reads.fetch_add(1, Ordering::SeqCst) < n {
                    0
                } else {
                    k.phases.len() - 1
                };
                return ok(k.phases[i].pod.clone());
            }
            let p = k.phase().pod;
            if k.moves == Moves::AfterFirstGet {
                k.at.fetch_max(1, Ordering::SeqCst);
            }
            ok(p)
        })))
    }

    fn log_reply(&self) -> Reply {
        let k = self.clone();
        Reply::Dynamic(Respond(Arc::new(move |s: &Seen| {
            if k.moves == Moves::AtFirstLog {
                k.at.fetch_max(1, Ordering::SeqCst);
            }
            let previous = s.query.split('&').any(|q| q == "previous=true");
            let p = match k.moves {
                Moves::ApiLags(_) => k.phases[k.phases.len() - 1].clone(),
                _ => k.phase(),
            };
            match if previous { p.previous } else { p.logs } {
                Some(text) => {
                    k.served.lock().unwrap().push((previous, text.to_string()));
                    Reply::Text(200, text.to_string())
                }
                None => Reply::Json(400, status(400, "BadRequest")),
            }
        })))
    }

    fn mock(&self) -> Mock {
        let m = Mock::default();
        m.on(POD, vec![self.pod_reply()])
            .on(LOG, vec![self.log_reply()])
            .on(EVENTS, vec![list("EventList", vec![])])
            .on(NODE, vec![node_1()]);
        m
    }
}

async fn collect(m: &Mock) -> Collection {
    let target: Target = "web-1".parse().unwrap();
    crashdoc_kube::scan::collect_target(m.client(), NS, opts(), &target)
        .await
        .unwrap()
}

fn file<'a>(p: &'a PodFiles, name: &str) -> Option<&'a str> {
    p.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| std::str::from_utf8(b).unwrap())
}

fn log_runs(p: &PodFiles) -> LogRuns {
    serde_json::from_str(file(p, "log-runs.json").expect("log-runs.json")).unwrap()
}

fn missing(p: &PodFiles) -> Vec<Missing> {
    serde_json::from_str(file(p, "missing.json").unwrap()).unwrap()
}

/// The kind `analyze` gives each log of the bundle, by file name.
fn kinds(p: &PodFiles) -> Vec<(String, LogKind)> {
    let ev = read_memory(std::slice::from_ref(p));
    let mut k: Vec<(String, LogKind)> = ev.pods[0]
        .logs
        .iter()
        .filter(|l| l.file.starts_with("logs"))
        .map(|l| (l.file.clone(), l.kind))
        .collect();
    k.sort_by(|a, b| a.0.cmp(&b.0));
    k
}

fn log_calls(m: &Mock) -> Vec<bool> {
    m.seen()
        .iter()
        .filter(|s| s.path == LOG)
        .map(|s| s.query.contains("previous=true"))
        .collect()
}

#[tokio::test]
async fn a_crash_read_as_the_kubelet_restarts_the_container_is_read_again_from_previous() {
    let k = Kubelet::new(
        vec![
            just_crashed("2026-11-29T10:00:00Z", "2026-11-29T09:59:00Z"),
            restarted("2026-11-29T10:00:00Z"),
        ],
        Moves::AfterFirstGet,
    );
    let m = k.mock();
    let c = collect(&m).await;
    let p = &c.pods[0];
    // Planned on "just crashed": logs (for B) and --previous (for A). The
    // kubelet had restarted the container: they read C and B. The pod read
    // again says so; B is read again with --previous, and checked again.
    assert_eq!(log_calls(&m), [false, true, true], "{:?}", m.seen());
    assert_eq!(
        m.calls(POD),
        3,
        "resolve, then a check after each log round"
    );
    assert!(m.seen().iter().all(|s| s.method == "GET"));
    assert_eq!(file(p, "logs-previous.web.txt"), Some(OUT_B));
    assert_eq!(file(p, "logs.web.txt"), Some(OUT_C));
    let runs = log_runs(p);
    let t = &runs.terminations[0];
    assert_eq!(
        (t.container_id.as_deref(), t.restart_count),
        (Some(B), Some(3))
    );
    assert_eq!(
        (t.file.as_deref(), t.verified),
        (Some("logs-previous.web.txt"), Some(true))
    );
    let current = runs.files.iter().find(|f| !f.previous).unwrap();
    assert_eq!(
        (current.container_id.as_deref(), current.verified),
        (Some(B), Some(false)),
        "meant for B, and found moved on"
    );
    assert!(
        missing(p)
            .iter()
            .all(|m| !m.what.contains("terminated run"))
    );
    // analyze takes B's log for the crash, the other for another run.
    assert_eq!(
        kinds(p),
        [
            ("logs-previous.web.txt".to_string(), LogKind::Previous),
            ("logs.web.txt".to_string(), LogKind::Other),
        ]
    );
    assert_eq!(cause(&c), "port-conflict");
}

#[tokio::test]
async fn near_miss_a_status_that_holds_still_is_checked_once_and_read_once() {
    let k = Kubelet::new(
        vec![just_crashed("2026-11-29T10:00:00Z", "2026-11-29T09:59:00Z")],
        Moves::Never,
    );
    let m = k.mock();
    let c = collect(&m).await;
    let p = &c.pods[0];
    assert_eq!(log_calls(&m), [false, true]);
    assert_eq!(m.calls(POD), 2, "resolve, then one check");
    // kubectl logs read the crash itself, --previous the run before it.
    assert_eq!(file(p, "logs.web.txt"), Some(OUT_B));
    assert_eq!(file(p, "logs-previous.web.txt"), Some(OUT_A));
    let runs = log_runs(p);
    assert_eq!(runs.terminations[0].file.as_deref(), Some("logs.web.txt"));
    assert!(runs.files.iter().all(|f| f.verified == Some(true)));
    assert_eq!(
        kinds(p),
        [
            ("logs-previous.web.txt".to_string(), LogKind::Other),
            ("logs.web.txt".to_string(), LogKind::Previous),
        ]
    );
    assert_eq!(cause(&c), "port-conflict");
    // The same files read by their names alone (a bundle without
    // log-runs.json, as before) take the run before for the crash.
    let mut bare = p.clone();
    bare.files.retain(|(n, _)| n != "log-runs.json");
    let ev = read_memory(std::slice::from_ref(&bare));
    let prev = ev.pods[0]
        .logs
        .iter()
        .find(|l| l.kind == LogKind::Previous)
        .unwrap();
    assert_eq!(prev.file, "logs-previous.web.txt");
}

#[tokio::test]
async fn in_crash_loop_back_off_the_crash_is_read_once_as_previous() {
    let waiting = Phase {
        pod: pod(
            3,
            B,
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            ended(B, "2026-11-29T10:00:00Z"),
        ),
        logs: Some(OUT_B),
        previous: Some(OUT_B),
    };
    let m = Kubelet::new(vec![waiting], Moves::Never).mock();
    let c = collect(&m).await;
    let p = &c.pods[0];
    assert_eq!(log_calls(&m), [true], "both requests read B: one is made");
    assert_eq!(file(p, "logs-previous.web.txt"), Some(OUT_B));
    assert_eq!(file(p, "logs.web.txt"), None);
    assert_eq!(
        log_runs(p).terminations[0].file.as_deref(),
        Some("logs-previous.web.txt")
    );
    assert_eq!(cause(&c), "port-conflict");
}

#[tokio::test]
async fn a_crash_two_runs_gone_is_kept_as_read_and_named_overwritten() {
    let k = Kubelet::new(
        vec![
            just_crashed("2026-11-29T10:00:00Z", "2026-11-29T09:59:00Z"),
            two_runs_later(),
        ],
        Moves::AfterFirstGet,
    );
    let m = k.mock();
    let c = collect(&m).await;
    let p = &c.pods[0];
    assert_eq!(
        log_calls(&m),
        [false, true],
        "nothing serves B: no read again"
    );
    assert_eq!(file(p, "logs.web.txt"), Some(OUT_D));
    assert_eq!(file(p, "logs-previous.web.txt"), Some(OUT_C));
    let runs = log_runs(p);
    assert_eq!(runs.terminations[0].file, None);
    assert!(runs.files.iter().all(|f| f.verified == Some(false)));
    let gone = missing(p);
    let m = gone
        .iter()
        .find(|m| m.what == "logs of web's terminated run")
        .unwrap_or_else(|| panic!("{gone:?}"));
    assert!(
        m.why.starts_with("overwritten") && m.why.contains(B),
        "{}",
        m.why
    );
    // Neither file is taken for B's output.
    assert!(
        kinds(p).iter().all(|(_, k)| *k == LogKind::Other),
        "{:?}",
        kinds(p)
    );
    let report = crashdoc_core::diagnose_all(&read_memory(&c.pods));
    let json = crashdoc_core::render::json(&report);
    assert!(json.contains("overwritten"), "{json}");
    // What the other runs' logs say still counts, as other text, and the
    // report says whose it is.
    assert!(
        json.contains("logs.web.txt: another run of web than its last termination"),
        "{json}"
    );
    let top = &report.pods[0].diagnoses[0];
    assert_ne!(top.confidence, crashdoc_core::diagnose::Confidence::High);
}

#[tokio::test]
async fn without_container_ids_the_logs_are_read_as_before_and_not_checked() {
    let mut phase = just_crashed("2026-11-29T10:00:00Z", "2026-11-29T09:59:00Z");
    let s = &mut phase.pod["status"]["containerStatuses"][0];
    s["containerID"] = json!("");
    s["state"]["terminated"]["containerID"] = json!("");
    s["lastState"]["terminated"]["containerID"] = json!("");
    let m = Kubelet::new(vec![phase], Moves::Never).mock();
    let c = collect(&m).await;
    let p = &c.pods[0];
    assert_eq!(log_calls(&m), [false, true]);
    assert_eq!(m.calls(POD), 1, "nothing to check: no second read");
    let runs = log_runs(p);
    assert!(runs.files.iter().all(|f| f.verified.is_none()));
    assert_eq!(runs.terminations[0].container_id, None);
    assert_eq!(
        kinds(p),
        [
            ("logs-previous.web.txt".to_string(), LogKind::Previous),
            ("logs.web.txt".to_string(), LogKind::Current),
        ],
        "by their names, as before"
    );
}

#[tokio::test]
async fn near_miss_a_pod_that_never_ended_a_run_is_not_read_again() {
    let running = Phase {
        pod: pod(
            0,
            C,
            json!({"running": {"startedAt": "2026-11-29T10:00:20Z"}}),
            json!({}),
        ),
        logs: Some(OUT_C),
        previous: None,
    };
    let m = Kubelet::new(vec![running], Moves::Never).mock();
    let c = collect(&m).await;
    assert_eq!(log_calls(&m), [false]);
    assert_eq!(m.calls(POD), 1, "no termination: nothing to check");
    let runs = log_runs(&c.pods[0]);
    assert!(runs.terminations.is_empty());
    assert_eq!(runs.files[0].container_id.as_deref(), Some(C));
    assert_eq!(runs.files[0].verified, None);
}

// ---- crashdoc watch: each termination's capture holds its own run ----

/// An hour ago, and now to the second.
fn before_and_during() -> (String, String) {
    let now = jiff::Timestamp::now();
    let before = (now - jiff::SignedDuration::from_hours(1)).to_string();
    let during = jiff::Timestamp::from_second(now.as_second())
        .unwrap()
        .to_string();
    (before, during)
}

/// `crashdoc watch` over the mock until it made `logs` log requests.
async fn watch(m: &Mock, db: &std::path::Path, logs: usize) -> crashdoc_watch::Summary {
    let cfg = crashdoc_watch::Config {
        namespace: Some(NS.into()),
        label_selector: None,
        cluster: "test".into(),
        store: std::sync::Arc::new(crashdoc_history::RedbStore::open(db).unwrap()),
        retention: crashdoc_history::Retention::default(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        capture_concurrency: 1,
        queue_capacity: 8,
        collect: opts(),
        leader: None,
        webhooks: vec![],
        notify_interval: Duration::from_secs(60),
        capture_existing: false,
        context: None,
        verbose: false,
    };
    let watched = m.clone();
    let stop = async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while (watched.calls(WATCH) < 2 || watched.calls(LOG) < logs)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    crashdoc_watch::run(m.client(), cfg, stop).await.unwrap()
}

/// The watch sees B running, then B's termination (state.terminated); by
/// the time its capture reads the logs the kubelet shows `after`.
async fn watched_crash(after: Phase, logs: usize) -> (crashdoc_history::Record, Option<Vec<u8>>) {
    watched_crash_as(after, logs, Moves::AtFirstLog).await
}

async fn watched_crash_as(
    after: Phase,
    logs: usize,
    moves: Moves,
) -> (crashdoc_history::Record, Option<Vec<u8>>) {
    let (before, during) = before_and_during();
    watched(&before, just_crashed(&during, &before), after, logs, moves).await
}

/// B backing off after its crash: `restartCount` still 3 (the kubelet
/// counts the restart when it creates the next container), lastState B.
fn backing_off(at: &str) -> Phase {
    Phase {
        pod: pod(
            3,
            B,
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            ended(B, at),
        ),
        logs: Some(OUT_B),
        previous: Some(OUT_B),
    }
}

/// The watch sees B running (restartCount 3, A's crash an hour old in
/// lastState), then `crashed` as a watch event; by the time its capture
/// reads the logs the kubelet shows `after`.
async fn watched(
    before: &str,
    crashed: Phase,
    after: Phase,
    logs: usize,
    moves: Moves,
) -> (crashdoc_history::Record, Option<Vec<u8>>) {
    let running_b = pod(
        3,
        B,
        json!({"running": {"startedAt": before}}),
        ended(A, before),
    );
    let mut at_event = crashed.pod.clone();
    at_event["metadata"]["resourceVersion"] = json!("11");
    let k = Kubelet::new(vec![crashed, after], moves);
    let m = k.mock();
    m.on(
        PODS,
        vec![ok(json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "10"}, "items": [running_b]}))],
    );
    m.on(
        WATCH,
        vec![
            Reply::Events(vec![json!({"type": "MODIFIED", "object": at_event})]),
            Reply::Open,
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.redb");
    let summary = watch(&m, &db, logs).await;
    assert_eq!((summary.terminations, summary.captures), (1, 1));
    assert!(m.seen().iter().all(|s| s.method == "GET"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let store = crashdoc_history::RedbStore::open(&db).unwrap();
    let all = store.list(&crashdoc_history::Query::default()).unwrap();
    assert_eq!(all.len(), 1);
    let bundle = store.bundle(all[0].id).unwrap();
    (all[0].clone(), bundle)
}

/// The logs of a stored `.tar.gz` bundle as `analyze` reads them: file,
/// kind and the text of its lines.
fn stored_logs(bundle: &[u8]) -> Vec<(String, LogKind, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.tar.gz");
    std::fs::write(&path, bundle).unwrap();
    let ev = crashdoc_core::ingest::bundle::read_tar_gz(&path).unwrap();
    ev.pods[0]
        .logs
        .iter()
        .map(|l| {
            let text: String = l.head.iter().map(|x| format!("{}\n", x.text)).collect();
            (l.file.clone(), l.kind, text)
        })
        .collect()
}

fn stored<'a>(logs: &'a [(String, LogKind, String)], name: &str) -> Option<(LogKind, &'a str)> {
    logs.iter()
        .find(|(f, _, _)| f == name)
        .map(|(_, k, t)| (*k, t.as_str()))
}

#[tokio::test]
async fn a_watched_termination_keeps_its_own_run_when_the_next_one_has_started() {
    let (record, bundle) = watched_crash(restarted("2026-11-29T10:00:00Z"), 3).await;
    let c = &record.capture;
    assert_eq!(c.key.restart_count, 3);
    let logs = c.logs.as_ref().expect("which run the logs came from");
    assert_eq!(logs.target.as_deref(), Some(B));
    assert_eq!(logs.container_id.as_deref(), Some(B));
    assert_eq!(logs.matched, Some(true));
    assert_eq!(logs.file.as_deref(), Some("logs-previous.web.txt"));
    let delay = c.capture_delay_ms.expect("finishedAt to capture");
    assert!((0..30_000).contains(&delay), "{delay}");
    let logs = stored_logs(&bundle.expect("a bundle"));
    assert_eq!(
        stored(&logs, "logs-previous.web.txt"),
        Some((LogKind::Previous, OUT_B))
    );
    assert_eq!(c.cause.as_deref(), Some("port-conflict"));
    assert!(
        !c.missing.iter().any(|m| m.contains("terminated run")),
        "{:?}",
        c.missing
    );
}

/// Found on a real kubelet: a first crash is restarted at once, and the
/// kubelet serves `logs` from the next run while the API server still shows
/// the crash as the container's state. The capture waits for the status to
/// move on and reads the crash with `--previous`.
#[tokio::test]
async fn a_watched_crash_restarted_at_once_is_read_once_the_api_server_shows_the_restart() {
    let (record, bundle) =
        watched_crash_as(restarted("2026-11-29T10:00:00Z"), 3, Moves::ApiLags(2)).await;
    let c = &record.capture;
    let logs = c.logs.as_ref().expect("which run the logs came from");
    assert_eq!(logs.target.as_deref(), Some(B));
    assert_eq!(logs.matched, Some(true));
    assert_eq!(logs.file.as_deref(), Some("logs-previous.web.txt"));
    let logs = stored_logs(&bundle.expect("a bundle"));
    assert_eq!(
        stored(&logs, "logs-previous.web.txt"),
        Some((LogKind::Previous, OUT_B))
    );
    assert!(
        logs.iter()
            .all(|(f, k, t)| *k != LogKind::Previous || f != "logs.web.txt" || t != OUT_C),
        "the next run's output is not taken for the crash: {logs:?}"
    );
}

/// Near miss: a crash in its back-off (the status holds still) is read
/// from `logs` after the settle time, as the kubelet serves it.
#[tokio::test]
async fn near_miss_a_watched_crash_in_its_back_off_is_read_from_logs() {
    let (before, during) = before_and_during();
    let crashed = just_crashed(&during, &before);
    let (record, bundle) = watched_crash_as(crashed, 3, Moves::Never).await;
    let c = &record.capture;
    let logs = c.logs.as_ref().expect("which run the logs came from");
    assert_eq!(
        (logs.target.as_deref(), logs.matched),
        (Some(B), Some(true))
    );
    assert_eq!(logs.file.as_deref(), Some("logs.web.txt"));
    let logs = stored_logs(&bundle.expect("a bundle"));
    assert_eq!(stored(&logs, "logs.web.txt").map(|(_, t)| t), Some(OUT_B));
}

/// The watch never sees B's `state.terminated`: the first update after
/// B ran is the back-off (`restartCount` 3, lastState B). That is run 3,
/// not run 2 (A's crash, the baseline of the list): captured, keyed 3.
#[tokio::test]
async fn a_watched_crash_first_seen_in_the_back_off_is_keyed_by_its_own_run() {
    let (before, during) = before_and_during();
    let (record, bundle) = watched(
        &before,
        backing_off(&during),
        restarted(&during),
        1,
        Moves::AtFirstLog,
    )
    .await;
    let c = &record.capture;
    assert_eq!(c.key.restart_count, 3);
    let logs = c.logs.as_ref().expect("which run the logs came from");
    assert_eq!(logs.target.as_deref(), Some(B));
    assert_eq!(logs.matched, Some(true));
    assert_eq!(logs.file.as_deref(), Some("logs-previous.web.txt"));
    let logs = stored_logs(&bundle.expect("a bundle"));
    assert_eq!(
        stored(&logs, "logs-previous.web.txt"),
        Some((LogKind::Previous, OUT_B))
    );
}

#[tokio::test]
async fn near_miss_a_watched_termination_whose_run_is_gone_is_recorded_unmatched() {
    let (record, bundle) = watched_crash(two_runs_later(), 2).await;
    let c = &record.capture;
    let logs = c.logs.as_ref().unwrap();
    assert_eq!(logs.target.as_deref(), Some(B));
    assert_eq!(logs.matched, Some(false));
    assert_eq!(logs.file, None);
    assert_ne!(logs.container_id.as_deref(), Some(B));
    assert_eq!(c.kind, crashdoc_history::CaptureKind::Partial);
    assert!(
        c.missing
            .iter()
            .any(|m| m.starts_with("logs of web's terminated run: overwritten")),
        "{:?}",
        c.missing
    );
    let logs = stored_logs(&bundle.unwrap());
    assert_eq!(
        stored(&logs, "logs-previous.web.txt"),
        Some((LogKind::Other, OUT_C)),
        "kept as read, not taken for B's"
    );
}
