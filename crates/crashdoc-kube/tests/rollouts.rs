//! `verify` of StatefulSets, DaemonSets and Deployments against the mock
//! API server (tests/common): a rollout that holds, a new pod that crash
//! loops, a rollout still incomplete at the deadline; the new revision's
//! restarts against the old one's; GETs only.

mod common;

use common::{Mock, NS, Reply, list, ok};
use crashdoc_kube::verify::{Kind, Revisions, Verdict, Verification, VerifyOptions, verify};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

const PODS: &str = "/api/v1/namespaces/shop/pods";
const STS: &str = "/apis/apps/v1/namespaces/shop/statefulsets/db";
const DS: &str = "/apis/apps/v1/namespaces/shop/daemonsets/agent";
const CRS: &str = "/apis/apps/v1/namespaces/shop/controllerrevisions";
const DEPLOY: &str = "/apis/apps/v1/namespaces/shop/deployments/web";
const RSS: &str = "/apis/apps/v1/namespaces/shop/replicasets";

/// A pod of `owner`, labelled with a controller revision hash, running
/// ready, or crash-looping with `restarts`.
fn pod(name: &str, owner: (&str, &str), hash: &str, restarts: i32, healthy: bool) -> Value {
    let state = if healthy {
        json!({"running": {}})
    } else {
        json!({"waiting": {"reason": "CrashLoopBackOff"}})
    };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
            "labels": {"app": "db", "controller-revision-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner.0, "name": owner.1,
                "uid": format!("uid-{}", owner.1), "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "img:2"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "img:2",
            "imageID": "", "ready": healthy, "restartCount": restarts, "state": state,
            "lastState": if restarts > 0 { json!({"terminated": {"exitCode": 1, "reason": "Error"}}) } else { json!({}) }}]}})
}

/// A pod of StatefulSet db.
fn db(name: &str, hash: &str, restarts: i32, healthy: bool) -> Value {
    pod(name, ("StatefulSet", "db"), hash, restarts, healthy)
}

/// A pod of DaemonSet agent.
fn agent(name: &str, hash: &str, restarts: i32, healthy: bool) -> Value {
    pod(name, ("DaemonSet", "agent"), hash, restarts, healthy)
}

fn pods(items: Vec<Value>) -> Reply {
    list("PodList", items)
}

fn statefulset(updated: i32, ready: i32) -> Reply {
    ok(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": NS, "generation": 2, "uid": "uid-db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}},
        "status": {"observedGeneration": 2, "replicas": 2, "readyReplicas": ready,
            "updatedReplicas": updated, "currentRevision": "db-1", "updateRevision": "db-2"}}))
}

fn daemonset(updated: i32, available: i32) -> Reply {
    ok(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": NS, "generation": 3, "uid": "uid-agent"},
        "spec": {"selector": {"matchLabels": {"app": "db"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}},
            "updateStrategy": {"type": "RollingUpdate"}},
        "status": {"observedGeneration": 3, "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2, "numberMisscheduled": 0, "numberReady": available,
            "updatedNumberScheduled": updated, "numberAvailable": available}}))
}

/// The DaemonSet's history: revision 3 (hash h3) is the newest; another
/// DaemonSet's revision 9 is not its own.
fn history() -> Reply {
    let cr = |name: &str, owner: &str, revision: i64, hash: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": NS,
                "labels": {"app": "db", "controller-revision-hash": hash},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner,
                    "uid": format!("uid-{owner}"), "controller": true}]},
            "revision": revision})
    };
    list(
        "ControllerRevisionList",
        vec![
            cr("agent-h2", "agent", 2, "h2"),
            cr("agent-h3", "agent", 3, "h3"),
            cr("other-h9", "other", 9, "h9"),
        ],
    )
}

/// A deadline no test reaches.
const HOUR: Duration = Duration::from_secs(3600);

/// No stable window, this deadline, a quick poll.
fn opts(timeout: Duration) -> VerifyOptions {
    VerifyOptions {
        stable: Duration::ZERO,
        timeout,
        poll: Duration::from_millis(1),
    }
}

/// `verify` of `kind`/`name` with [`opts`]: the verification and what it said.
async fn run(m: &Mock, kind: Kind, name: &str, timeout: Duration) -> (Verification, Vec<String>) {
    let said = Mutex::new(Vec::new());
    let say = |s: &str| said.lock().unwrap().push(s.to_string());
    let v = verify(&m.client(), NS, kind, name, opts(timeout), &say)
        .await
        .unwrap();
    (v, said.into_inner().unwrap())
}

/// A mock whose `route` gives `workload` in turn, and whose pod list gives
/// each look's pods in turn.
fn mock(route: &str, workload: Vec<Reply>, looks: Vec<Vec<Value>>) -> Mock {
    let m = Mock::default();
    m.on(route, workload);
    m.on(PODS, looks.into_iter().map(pods).collect());
    m
}

/// [`mock`] of DaemonSet agent, with its [`history`].
fn agent_mock(daemonsets: Vec<Reply>, looks: Vec<Vec<Value>>) -> Mock {
    let m = mock(DS, daemonsets, looks);
    m.on(CRS, vec![history()]);
    m
}

/// (pods, restarts) of the new revision, then of the old one.
fn new_and_old(r: &Revisions) -> ((usize, i64), (usize, i64)) {
    ((r.new_pods, r.new_restarts), (r.old_pods, r.old_restarts))
}

fn assert_held(v: &Verification, n: usize) {
    assert!(
        matches!(v.verdict, Verdict::Held { pods, .. } if pods == n),
        "{:?}",
        v.verdict
    );
}

fn assert_gets_only(m: &Mock) {
    let seen = m.seen();
    assert!(
        seen.iter().all(|s| s.method == "GET" && !s.watch()),
        "{seen:?}"
    );
    for s in seen.iter().filter(|s| s.path == PODS || s.path == CRS) {
        assert!(s.query.contains("labelSelector=app%3Ddb"), "{s:?}");
    }
}

#[tokio::test]
async fn a_statefulset_rollout_that_holds_reports_old_against_new_restarts() {
    let m = mock(
        STS,
        vec![statefulset(1, 2), statefulset(2, 2)],
        vec![
            // Under way: db-1 is still the old revision's, crash-looping.
            vec![db("db-0", "db-2", 0, true), db("db-1", "db-1", 7, false)],
            vec![db("db-0", "db-2", 0, true), db("db-1", "db-2", 0, true)],
        ],
    );
    let (v, said) = run(&m, Kind::StatefulSet, "db", HOUR).await;
    assert_held(&v, 2);
    assert_eq!(v.revisions.new_revision, "db-2");
    // db-1 was seen at the old revision with 7 restarts, then replaced
    // (same name and uid here: the mock keeps uids by name).
    assert_eq!(new_and_old(&v.revisions), ((2, 0), (0, 0)));
    assert_eq!(
        said[0],
        "rollout: waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated"
    );
    assert_eq!(
        said[1],
        "rollout: partitioned roll out complete: 2 new pods have been updated"
    );
    assert_eq!(m.calls(STS), 2, "polled until the rollout completed");
    assert_eq!(m.calls(PODS), 2, "once under way, once in the window");
    assert_gets_only(&m);
}

#[tokio::test]
async fn old_revision_pods_that_went_away_keep_their_restarts() {
    let m = mock(
        STS,
        vec![statefulset(1, 2), statefulset(2, 2)],
        vec![
            vec![
                db("db-0", "db-2", 0, true),
                db("db-1-old", "db-1", 7, false),
            ],
            vec![db("db-0", "db-2", 0, true), db("db-1", "db-2", 0, true)],
        ],
    );
    let (v, _) = run(&m, Kind::StatefulSet, "db", HOUR).await;
    assert_held(&v, 2);
    assert_eq!(new_and_old(&v.revisions), ((2, 0), (1, 7)));
}

#[tokio::test]
async fn a_statefulset_pod_of_the_new_revision_that_crash_loops_is_unstable() {
    let m = mock(
        STS,
        vec![statefulset(2, 2)],
        vec![vec![
            db("db-0", "db-2", 0, true),
            db("db-1", "db-2", 4, false),
        ]],
    );
    let (v, _) = run(&m, Kind::StatefulSet, "db", HOUR).await;
    match v.verdict {
        Verdict::Unstable { reason, failing } => {
            assert_eq!(reason, "pod db-1 is not running ready");
            assert_eq!(failing[0].metadata.name.as_deref(), Some("db-1"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(new_and_old(&v.revisions).0, (2, 4));
    assert_eq!(m.calls(PODS), 1);
    assert_gets_only(&m);
}

#[tokio::test]
async fn a_statefulset_rollout_incomplete_at_the_deadline_fails_with_its_new_pods() {
    // Stuck: the first updated pod never becomes ready (ordered rollout).
    let m = mock(
        STS,
        vec![statefulset(1, 1)],
        vec![vec![
            db("db-0", "db-1", 2, true),
            db("db-1", "db-2", 5, false),
        ]],
    );
    let (v, said) = run(&m, Kind::StatefulSet, "db", Duration::ZERO).await;
    match v.verdict {
        Verdict::RolloutFailed { reason, failing } => {
            assert_eq!(
                reason,
                "the rollout did not complete in 0s (rollout: waiting for 1 pods to be ready)"
            );
            let names: Vec<_> = failing
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            assert_eq!(names, ["db-1"], "the new revision's failing pod only");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(said, ["rollout: waiting for 1 pods to be ready"]);
    assert_eq!(new_and_old(&v.revisions), ((1, 5), (1, 2)));
    assert_eq!(m.calls(STS), 1);
    assert_gets_only(&m);
}

#[tokio::test]
async fn a_daemonset_rollout_that_holds_counts_its_newest_revision_as_new() {
    let m = agent_mock(
        vec![daemonset(1, 1), daemonset(2, 1), daemonset(2, 2)],
        vec![
            vec![
                agent("agent-a", "h3", 0, true),
                agent("agent-b", "h2", 9, false),
            ],
            vec![
                agent("agent-a", "h3", 0, true),
                agent("agent-c", "h3", 0, true),
            ],
        ],
    );
    let (v, said) = run(&m, Kind::DaemonSet, "agent", HOUR).await;
    assert_held(&v, 2);
    assert_eq!(v.revisions.new_revision, "h3");
    assert_eq!(new_and_old(&v.revisions).1, (1, 9));
    assert_eq!(
        said,
        [
            "rollout: 1 out of 2 new pods have been updated",
            "rollout: 1 of 2 updated pods are available",
            "rollout: 2 of 2 updated pods are available",
            "rollout complete; watching the new pods for 0s",
        ]
    );
    assert_eq!(m.calls(DS), 3);
    // The history is read with each look at the pods.
    assert_eq!((m.calls(CRS), m.calls(PODS)), (2, 2));
    assert_gets_only(&m);
}

#[tokio::test]
async fn a_daemonset_pod_of_the_new_revision_that_crash_loops_is_unstable() {
    let m = agent_mock(
        vec![daemonset(2, 2)],
        vec![vec![
            // The old revision's crash loop is not the new rollout's.
            agent("agent-b", "h2", 9, false),
            agent("agent-a", "h3", 0, true),
            agent("agent-c", "h3", 3, false),
        ]],
    );
    let (v, _) = run(&m, Kind::DaemonSet, "agent", HOUR).await;
    match v.verdict {
        Verdict::Unstable { reason, failing } => {
            assert_eq!(reason, "pod agent-c is not running ready");
            assert_eq!(failing.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(new_and_old(&v.revisions), ((2, 3), (1, 9)));
}

#[tokio::test]
async fn a_daemonset_rollout_incomplete_at_the_deadline_fails() {
    let m = agent_mock(
        vec![daemonset(1, 1)],
        vec![vec![
            agent("agent-a", "h3", 6, false),
            agent("agent-b", "h2", 0, true),
        ]],
    );
    let (v, _) = run(&m, Kind::DaemonSet, "agent", Duration::ZERO).await;
    match v.verdict {
        Verdict::RolloutFailed { reason, failing } => {
            assert!(
                reason.contains("1 out of 2 new pods have been updated"),
                "{reason}"
            );
            assert_eq!(failing[0].metadata.name.as_deref(), Some("agent-a"));
        }
        other => panic!("{other:?}"),
    }
    assert_gets_only(&m);
}

#[tokio::test]
async fn an_on_delete_statefulset_is_refused_as_kubectl_refuses_it() {
    let m = Mock::default();
    let mut s = statefulset(2, 2);
    if let Reply::Json(_, v) = &mut s {
        v["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    }
    m.on(STS, vec![s]);
    let said = Mutex::new(Vec::new());
    let say = |s: &str| said.lock().unwrap().push(s.to_string());
    let r = verify(
        &m.client(),
        NS,
        Kind::StatefulSet,
        "db",
        opts(Duration::ZERO),
        &say,
    )
    .await;
    match r {
        Err(crashdoc_kube::KubeError::Target(t)) => assert!(t.contains("RollingUpdate"), "{t}"),
        other => panic!("{:?}", other.map(|v| v.verdict)),
    }
    assert_eq!(m.seen().len(), 1);
}

#[tokio::test]
async fn a_deployment_reports_its_old_replicaset_pods_seen_during_the_rollout() {
    let deployment = |updated: i32| {
        ok(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS, "generation": 2,
                "annotations": {"deployment.kubernetes.io/revision": "2"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}},
            "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": updated,
                       "availableReplicas": updated}}))
    };
    let rs = |name: &str, rev: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS,
                "annotations": {"deployment.kubernetes.io/revision": rev}},
            "spec": {"selector": {"matchLabels": {"app": "db"}}}})
    };
    let m = mock(
        DEPLOY,
        vec![deployment(0), deployment(1)],
        vec![
            vec![pod("web-1-a", ("ReplicaSet", "web-1"), "", 12, false)],
            vec![pod("web-2-a", ("ReplicaSet", "web-2"), "", 0, true)],
        ],
    );
    m.on(
        RSS,
        vec![list(
            "ReplicaSetList",
            vec![rs("web-1", "1"), rs("web-2", "2")],
        )],
    );
    let (v, _) = run(&m, Kind::Deployment, "web", HOUR).await;
    assert_held(&v, 1);
    assert_eq!(v.revisions.new_revision, "web-2");
    assert_eq!(new_and_old(&v.revisions), ((1, 0), (1, 12)));
    assert_eq!((m.calls(DEPLOY), m.calls(RSS), m.calls(PODS)), (2, 2, 2));
    assert_gets_only(&m);
}

#[tokio::test]
async fn a_503_on_a_look_is_retried_not_a_failed_verify() {
    let m = Mock::default();
    let unavailable = Reply::Json(503, common::status(503, "ServiceUnavailable"));
    m.on(STS, vec![unavailable.clone(), statefulset(2, 2)]);
    m.on(
        PODS,
        vec![unavailable, pods(vec![db("db-0", "db-2", 0, true)])],
    );
    let (v, _) = run(&m, Kind::StatefulSet, "db", HOUR).await;
    assert_held(&v, 1);
    assert_eq!((m.calls(STS), m.calls(PODS)), (2, 2));
}
