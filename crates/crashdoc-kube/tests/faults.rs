//! The live side under faults, against the mock API server (tests/common),
//! in plain `cargo test`: a 429 whose Retry-After is waited for (bounded),
//! a response slower than the request timeout (abandoned, the source named
//! missing, the diagnosis still made), and a watch broken by 410 Gone
//! (re-listed, no termination lost). The clock is tokio's paused clock
//! where the test measures a wait: no real sleeping.

mod common;

use common::{Mock, NS, Reply, cause, list, node_1, ok, opts, status};
use crashdoc_core::ingest::bundle::{PodFiles, read_memory};
use crashdoc_core::model::Missing;
use crashdoc_kube::{Collection, Target};
use serde_json::{Value, json};
use std::time::Duration;

const POD: &str = "/api/v1/namespaces/shop/pods/web-1";
const PODS: &str = "/api/v1/namespaces/shop/pods";
const LOG: &str = "/api/v1/namespaces/shop/pods/web-1/log";
const EVENTS: &str = "/api/v1/namespaces/shop/events";
const NODE: &str = "/api/v1/nodes/node-1";
/// The watch of the pods (tests/common routes it apart from their list).
const WATCH: &str = "/api/v1/namespaces/shop/pods?watch";

/// A bare pod (no owner, volumes or references) whose container's run
/// `restarts` was OOM-killed, finishing at `finished`, as the back-off
/// shows it (`restartCount` the crashed run's, lastState that run).
fn pod(restarts: i32, finished: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": NS, "uid": "uid-1", "resourceVersion": "10"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "web:1",
            "resources": {"limits": {"memory": "256Mi"}}}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "web", "image": "web:1", "imageID": "", "ready": false, "restartCount": restarts,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                "startedAt": finished, "finishedAt": finished}}}]}
    })
}

fn events() -> Reply {
    list(
        "EventList",
        vec![json!({"metadata": {"name": "web-1.1", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": NS, "uid": "uid-1"},
        "reason": "BackOff", "type": "Warning",
        "message": "Back-off restarting failed container web in pod web-1"})],
    )
}

fn cluster() -> Mock {
    let m = Mock::default();
    m.on(POD, vec![ok(pod(3, "2026-01-01T00:00:00Z"))])
        .on(
            LOG,
            vec![Reply::Text(200, "loading weights\nKilled\n".into())],
        )
        .on(EVENTS, vec![events()])
        .on(NODE, vec![node_1()]);
    m
}

/// Collect web-1 through crashdoc's own client stack over the mock.
async fn collect(m: &Mock, timeout: Option<Duration>) -> Collection {
    let client = crashdoc_kube::client_over(m.service(), NS, timeout);
    let target: Target = "web-1".parse().unwrap();
    crashdoc_kube::scan::collect_target(client, NS, opts(), &target)
        .await
        .unwrap()
}

/// [`collect`] with this request timeout, and how long it took.
async fn timed_collect(m: &Mock, timeout: Duration) -> (Collection, Duration) {
    let start = tokio::time::Instant::now();
    let c = collect(m, Some(timeout)).await;
    (c, start.elapsed())
}

fn missing(p: &PodFiles) -> Vec<Missing> {
    let f = p.files.iter().find(|(n, _)| n == "missing.json").unwrap();
    serde_json::from_slice(&f.1).unwrap()
}

/// Why the events are missing, the one source missing.
fn why_events_missing(p: &PodFiles) -> String {
    let gone = missing(p);
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert_eq!(gone[0].what, "events");
    gone[0].why.clone()
}

fn has(p: &PodFiles, name: &str) -> bool {
    p.files.iter().any(|(n, _)| n == name)
}

fn throttled(after: &str) -> Reply {
    Reply::WithHeaders(
        429,
        status(429, "TooManyRequests").to_string(),
        vec![("retry-after", after.to_string())],
    )
}

#[tokio::test(start_paused = true)]
async fn a_429_waits_what_its_retry_after_says() {
    let m = cluster();
    m.on(EVENTS, vec![throttled("4"), events()]);
    let (c, took) = timed_collect(&m, Duration::from_secs(30)).await;
    // 4 s, not the 200 ms back-off: nothing else in the collection waits.
    assert_eq!(took, Duration::from_secs(4));
    assert_eq!(m.calls(EVENTS), 2);
    assert!(has(&c.pods[0], "events.json"));
    assert!(missing(&c.pods[0]).is_empty(), "{:?}", missing(&c.pods[0]));
    assert!(m.seen().iter().all(|s| s.method == "GET"));
    assert_eq!(cause(&c), "oom-killed");
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_after_is_bounded_and_a_plain_text_429_is_understood() {
    let m = cluster();
    // The priority-and-fairness filter's answer: plain text and the header.
    let apf = Reply::WithHeaders(
        429,
        "Too many requests, please try again later.\n".to_string(),
        vec![
            ("retry-after", "3600".into()),
            ("content-type", "text/plain".into()),
        ],
    );
    m.on(EVENTS, vec![apf, throttled("3600"), events()]);
    let (c, took) = timed_collect(&m, Duration::from_secs(30)).await;
    assert_eq!(
        took,
        2 * crashdoc_kube::retry::MAX_RETRY_AFTER,
        "each wait cut to 10 s"
    );
    assert_eq!(m.calls(EVENTS), 3);
    assert!(missing(&c.pods[0]).is_empty());
}

#[tokio::test(start_paused = true)]
async fn throttled_to_the_end_is_missing_with_the_servers_words() {
    let m = cluster();
    m.on(EVENTS, vec![throttled("1")]);
    let (c, took) = timed_collect(&m, Duration::from_secs(30)).await;
    assert_eq!(m.calls(EVENTS), 3, "three attempts");
    assert_eq!(took, Duration::from_secs(2), "1 s before each retry");
    let why = why_events_missing(&c.pods[0]);
    assert!(why.contains("429"), "{why}");
    assert_eq!(cause(&c), "oom-killed", "the diagnosis is still made");
}

#[tokio::test(start_paused = true)]
async fn a_response_slower_than_the_timeout_is_abandoned_and_named_missing() {
    let m = cluster();
    m.on(
        EVENTS,
        vec![Reply::Slow(Duration::from_secs(3600), Box::new(events()))],
    );
    let (c, took) = timed_collect(&m, Duration::from_secs(5)).await;
    assert_eq!(took, Duration::from_secs(5), "abandoned at the timeout");
    assert_eq!(m.calls(EVENTS), 1, "not tried again");
    let p = &c.pods[0];
    assert!(!has(p, "events.json"));
    let why = why_events_missing(p);
    assert!(
        why.contains("no answer from the API server within 5s"),
        "{why}"
    );
    // Everything else was read, and the diagnosis is made.
    assert!(has(p, "pod.json") && has(p, "logs-previous.web.txt") && has(p, "node.json"));
    assert_eq!(cause(&c), "oom-killed");
    let report = crashdoc_core::diagnose_all(&read_memory(&c.pods));
    let json = crashdoc_core::render::json(&report);
    assert!(
        json.contains("no answer from the API server within 5s"),
        "{json}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_answer_inside_the_timeout_is_waited_for() {
    let m = cluster();
    m.on(
        EVENTS,
        vec![Reply::Slow(Duration::from_secs(4), Box::new(events()))],
    );
    let (c, took) = timed_collect(&m, Duration::from_secs(5)).await;
    assert_eq!(took, Duration::from_secs(4));
    assert!(has(&c.pods[0], "events.json"));
    assert!(missing(&c.pods[0]).is_empty());
}

/// `crashdoc watch` over the mock until `watches` watch requests were made
/// and the captures read `logs` logs; its summary.
async fn watch(
    m: &Mock,
    db: &std::path::Path,
    watches: usize,
    logs: usize,
) -> crashdoc_watch::Summary {
    watch_probed(m, db, watches, logs).await.0
}

/// The status line's code of `GET /readyz` on `port` (0: no answer).
async fn readyz(port: u16) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return 0;
    };
    let req = "GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if s.write_all(req.as_bytes()).await.is_err() {
        return 0;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    String::from_utf8_lossy(&buf)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// [`watch`], and what `/readyz` answered at the end, before the stop.
async fn watch_probed(
    m: &Mock,
    db: &std::path::Path,
    watches: usize,
    logs: usize,
) -> (crashdoc_watch::Summary, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let cfg = crashdoc_watch::Config {
        namespace: Some(NS.into()),
        label_selector: None,
        cluster: "test".into(),
        store: std::sync::Arc::new(crashdoc_history::RedbStore::open(db).unwrap()),
        retention: crashdoc_history::Retention::default(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
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
    let (tx, rx) = tokio::sync::oneshot::channel();
    let watched = m.clone();
    let stop = async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while (watched.calls(WATCH) < watches || watched.calls(LOG) < logs)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = tx.send(readyz(port).await);
    };
    let summary = crashdoc_watch::run(m.client(), cfg, stop).await.unwrap();
    (summary, rx.await.unwrap_or(0))
}

fn pod_list(p: Value, rv: &str) -> Reply {
    ok(
        json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": rv}, "items": [p]}),
    )
}

/// An hour ago (a restart before the watch), and now to the second (one
/// during it).
fn before_and_during() -> (String, String) {
    let now = jiff::Timestamp::now();
    let before = (now - jiff::SignedDuration::from_hours(1)).to_string();
    let during = jiff::Timestamp::from_second(now.as_second())
        .unwrap()
        .to_string();
    (before, during)
}

/// [`pod`] at resourceVersion `rv`.
fn pod_at(restarts: i32, finished: &str, rv: &str) -> Value {
    let mut p = pod(restarts, finished);
    p["metadata"]["resourceVersion"] = json!(rv);
    p
}

/// A watch that sends the pod MODIFIED, then ends.
fn modified(p: Value) -> Reply {
    Reply::Events(vec![json!({"type": "MODIFIED", "object": p})])
}

/// The pods were listed once, then only watched (three watches).
fn assert_listed_once(on_pods: &[(bool, String)]) {
    assert_eq!(
        on_pods.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
        [false, true, true, true],
        "one list, then watches only: {on_pods:?}"
    );
}

/// (watch?, query) of each request on the pods' path.
fn on_pods(m: &Mock) -> Vec<(bool, String)> {
    m.seen()
        .iter()
        .filter(|s| s.path == PODS)
        .map(|s| (s.watch(), s.query.clone()))
        .collect()
}

/// The watch: a list, a watch broken by 410 Gone, a re-list in which the
/// pod restarted twice more, then a watch that stays open.
#[tokio::test]
async fn a_watch_broken_by_410_gone_relists_and_loses_no_termination() {
    let (before, during) = before_and_during();
    let m = cluster();
    m.on(
        PODS,
        vec![
            pod_list(pod(3, &before), "10"),
            pod_list(pod(5, &during), "20"),
        ],
    );
    let gone = json!({"type": "ERROR", "object": status(410, "Expired")});
    m.on(WATCH, vec![Reply::Events(vec![gone]), Reply::Open]);
    m.on(POD, vec![ok(pod(5, &during))]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.redb");
    let summary = watch(&m, &db, 2, 2).await;

    // Runs 4 and 5 crashed while the watch was broken: 5 is seen in the
    // re-list's status, 4 is counted as unobserved; 3 was the baseline.
    assert_eq!(summary.terminations, 1);
    assert_eq!(summary.unobserved, 1);
    assert_eq!(summary.captures, 1);
    let seen = m.seen();
    assert!(seen.iter().all(|s| s.method == "GET"), "{seen:?}");
    let on_pods = on_pods(&m);
    assert_eq!(
        on_pods.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
        [false, true, false, true],
        "list, watch (410), re-list, watch: {on_pods:?}"
    );
    assert!(on_pods[1].1.contains("resourceVersion=10"), "{on_pods:?}");
    assert!(on_pods[3].1.contains("resourceVersion=20"), "{on_pods:?}");
    // The aborted retention task lets go of the database on its next poll.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let store = crashdoc_history::RedbStore::open(&db).unwrap();
    assert_eq!(store.stats().unwrap().captures, 1);
}

/// A watch whose stream just ends (the server's timeout) is resumed from
/// the last resourceVersion it saw, without a re-list, and what the next
/// watch carries is counted.
#[tokio::test]
async fn a_watch_that_ends_resumes_from_its_resource_version() {
    let (before, during) = before_and_during();
    let m = cluster();
    m.on(PODS, vec![pod_list(pod(3, &before), "10")]);
    let p5 = pod_at(5, &during, "12");
    m.on(
        WATCH,
        vec![
            modified(pod_at(4, &during, "11")),
            modified(p5.clone()),
            Reply::Open,
        ],
    );
    m.on(POD, vec![ok(p5)]);
    let dir = tempfile::tempdir().unwrap();
    let summary = watch(&m, &dir.path().join("history.redb"), 3, 4).await;
    assert_eq!((summary.terminations, summary.unobserved), (2, 0));
    let on_pods = on_pods(&m);
    assert_listed_once(&on_pods);
    for (i, rv) in [(1, "10"), (2, "11"), (3, "12")] {
        assert!(
            on_pods[i].1.contains(&format!("resourceVersion={rv}")),
            "{on_pods:?}"
        );
    }
}

/// A blackout without a 410: the watch start fails (the connection drops),
/// the watcher resumes from resourceVersion 10 without a re-list, and the
/// resumed watch's first event makes `/readyz` 200 again.
#[tokio::test]
async fn a_watch_resumed_after_an_error_is_ready_again_without_a_relist() {
    let (before, during) = before_and_during();
    let m = cluster();
    m.on(PODS, vec![pod_list(pod(3, &before), "10")]);
    let p4 = pod_at(4, &during, "11");
    m.on(WATCH, vec![Reply::Reset, modified(p4.clone()), Reply::Open]);
    m.on(POD, vec![ok(p4)]);
    let dir = tempfile::tempdir().unwrap();
    let (summary, ready) = watch_probed(&m, &dir.path().join("history.redb"), 3, 2).await;
    assert_eq!((summary.terminations, summary.unobserved), (1, 0));
    let on_pods = on_pods(&m);
    assert_listed_once(&on_pods);
    assert!(on_pods[2].1.contains("resourceVersion=10"), "{on_pods:?}");
    assert_eq!(ready, 200);
}

/// Near miss: every watch start keeps failing; the session stays degraded.
#[tokio::test]
async fn a_watch_still_failing_stays_unready() {
    let m = cluster();
    m.on(PODS, vec![pod_list(pod(3, "2026-01-01T00:00:00Z"), "10")]);
    m.on(WATCH, vec![Reply::Reset]);
    let dir = tempfile::tempdir().unwrap();
    let (summary, ready) = watch_probed(&m, &dir.path().join("history.redb"), 3, 0).await;
    assert_eq!(summary.terminations, 0);
    assert_eq!(
        on_pods(&m).iter().filter(|(w, _)| !*w).count(),
        1,
        "no re-list"
    );
    assert_eq!(ready, 503);
}
