//! The collector against a mock API server (kube-rs's pattern: a tower
//! service behind `kube::Client::new`), in plain `cargo test`: every request
//! is recorded (verb, path, query), every answer is chosen per path and per
//! attempt, so 403s, 404s, 429s, 5xx, reset connections, pagination, an
//! absent metrics API and a pod deleted between list and get are exercised
//! without a cluster.

mod common;

use bytes::Bytes;
use common::{cause, opts};
use crashdoc_core::ingest::bundle::{PodFiles, Reference, ReferenceKind, read_memory};
use crashdoc_core::model::Missing;
use crashdoc_kube::{Collection, KubeError, Target};
use http::{Request, Response};
use http_body_util::Full;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const NS: &str = "shop";
const SECRET_VALUE: &str = "hunter2-planted-value";

/// One answer of the mock server.
#[derive(Clone, Debug)]
enum Reply {
    Json(u16, Value),
    Text(u16, String),
    /// 429 with a Retry-After header.
    TooMany,
    /// The connection drops before an answer.
    Reset,
}

fn status(code: u16, reason: &str) -> Reply {
    Reply::Json(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("{reason} (mock)"), "reason": reason, "code": code}),
    )
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    method: String,
    path: String,
    query: String,
}

/// A recorded-response API server: answers by path, the n-th request of a
/// path gets the n-th answer (the last one repeats).
#[derive(Clone, Default)]
struct Mock {
    routes: Arc<Mutex<HashMap<String, Vec<Reply>>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mock {
    fn on(&self, path: &str, replies: Vec<Reply>) -> &Self {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_string(), replies);
        self
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn calls(&self, path: &str) -> usize {
        self.seen().iter().filter(|s| s.path == path).count()
    }

    fn client(&self) -> kube::Client {
        let m = self.clone();
        let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
            let m = m.clone();
            async move {
                let path = req.uri().path().to_string();
                let query = req.uri().query().unwrap_or("").to_string();
                let n = {
                    let mut seen = m.seen.lock().unwrap();
                    let n = seen.iter().filter(|s| s.path == path).count();
                    seen.push(Seen {
                        method: req.method().to_string(),
                        path: path.clone(),
                        query,
                    });
                    n
                };
                let reply = {
                    let routes = m.routes.lock().unwrap();
                    match routes.get(&path) {
                        Some(r) => r[n.min(r.len() - 1)].clone(),
                        None => status(404, "NotFound"),
                    }
                };
                let (code, body, retry) = match reply {
                    Reply::Reset => {
                        return Err::<
                            Response<Full<Bytes>>,
                            Box<dyn std::error::Error + Send + Sync>,
                        >(Box::new(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "connection reset by peer",
                        )));
                    }
                    Reply::Json(c, v) => (c, v.to_string(), false),
                    Reply::Text(c, t) => (c, t, false),
                    Reply::TooMany => {
                        (429, status(429, "TooManyRequests").json().to_string(), true)
                    }
                };
                let mut b = Response::builder()
                    .status(code)
                    .header("content-type", "application/json");
                if retry {
                    b = b.header("retry-after", "1");
                }
                Ok(b.body(Full::new(Bytes::from(body))).unwrap())
            }
        });
        kube::Client::new(svc, NS)
    }
}

impl Reply {
    fn json(&self) -> Value {
        match self {
            Reply::Json(_, v) => v.clone(),
            _ => Value::Null,
        }
    }
}

fn ok(v: Value) -> Reply {
    Reply::Json(200, v)
}

fn pod_json(name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": uid, "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                "uid": "rs-1", "controller": true}]},
        "spec": {
            "nodeName": "node-1",
            "serviceAccountName": "web",
            "containers": [{"name": "web", "image": "web:1",
                "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "app-secret", "key": "token"}}}],
                "envFrom": [{"configMapRef": {"name": "app-config"}}],
                "resources": {"limits": {"memory": "256Mi"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        },
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "web", "image": "web:1", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
    })
}

const POD: &str = "/api/v1/namespaces/shop/pods/web-1";
const PODS: &str = "/api/v1/namespaces/shop/pods";
const LOG: &str = "/api/v1/namespaces/shop/pods/web-1/log";
const EVENTS: &str = "/api/v1/namespaces/shop/events";
const RS: &str = "/apis/apps/v1/namespaces/shop/replicasets/web-abc";
const RSS: &str = "/apis/apps/v1/namespaces/shop/replicasets";
const DEPLOY: &str = "/apis/apps/v1/namespaces/shop/deployments/web";
const NODE: &str = "/api/v1/nodes/node-1";
const PVC: &str = "/api/v1/namespaces/shop/persistentvolumeclaims/data";
const CM: &str = "/api/v1/namespaces/shop/configmaps/app-config";
const SECRET: &str = "/api/v1/namespaces/shop/secrets/app-secret";
const SA: &str = "/api/v1/namespaces/shop/serviceaccounts/web";
const METRICS: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-1";
const SVC: &str = "/api/v1/namespaces/shop/services/postgres";

/// A cluster where everything about web-1 can be read.
fn cluster() -> Mock {
    let m = Mock::default();
    let event = json!({"metadata": {"name": "web-1.1", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": NS, "uid": "uid-1"},
        "reason": "BackOff", "type": "Warning", "message": "Back-off restarting failed container web in pod web-1"});
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"spec": {"containers": [{"name": "web", "image": "web:1"}]}}}});
    m.on(POD, vec![ok(pod_json("web-1", "uid-1"))])
        .on(PODS, vec![ok(json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
            "items": [pod_json("web-1", "uid-1")]}))])
        .on(LOG, vec![Reply::Text(200, "loading model\nError: connect ECONNREFUSED postgres:5432\n".into())])
        .on(EVENTS, vec![ok(json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [event]}))])
        .on(RS, vec![ok(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-abc", "namespace": NS, "annotations": {"deployment.kubernetes.io/revision": "2"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1", "controller": true}]},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}}))])
        .on(RSS, vec![ok(json!({"apiVersion": "apps/v1", "kind": "ReplicaSetList", "metadata": {}, "items": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet",
             "metadata": {"name": "web-abc", "namespace": NS, "annotations": {"deployment.kubernetes.io/revision": "2"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1", "controller": true}]},
             "spec": {"selector": {"matchLabels": {"app": "web"}}}}]}))])
        .on(DEPLOY, vec![ok(deploy)])
        .on(NODE, vec![ok(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}))])
        .on(PVC, vec![ok(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": NS}, "status": {"phase": "Bound"}}))])
        .on(CM, vec![ok(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": NS}, "data": {"MODEL": "llama"}}))])
        .on(SECRET, vec![ok(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "app-secret", "namespace": NS},
            "data": {"token": "aHVudGVyMi1wbGFudGVkLXZhbHVl"},
            "stringData": {"other": SECRET_VALUE}}))])
        .on(SA, vec![ok(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": NS}}))])
        .on(METRICS, vec![ok(json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            "metadata": {"name": "web-1", "namespace": NS},
            "containers": [{"name": "web", "usage": {"cpu": "12m", "memory": "250Mi"}}]}))])
        .on(SVC, vec![status(404, "NotFound")]);
    m
}

async fn collect(m: &Mock, target: &str) -> Result<Collection, KubeError> {
    let target: Target = target.parse().unwrap();
    crashdoc_kube::scan::collect_target(m.client(), NS, opts(), &target).await
}

fn file<'a>(p: &'a PodFiles, name: &str) -> Option<&'a [u8]> {
    p.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| b.as_slice())
}

fn missing(p: &PodFiles) -> Vec<Missing> {
    serde_json::from_slice(file(p, "missing.json").expect("missing.json")).unwrap()
}

fn references(p: &PodFiles) -> Vec<Reference> {
    file(p, "references.json")
        .map(|b| serde_json::from_slice(b).unwrap())
        .unwrap_or_default()
}

fn reference(p: &PodFiles, kind: ReferenceKind, name: &str) -> Option<Reference> {
    references(p)
        .into_iter()
        .find(|r| r.kind == kind && r.name == name)
}

/// The cause diagnosed when everything could be read.
async fn baseline() -> String {
    cause(&collect(&cluster(), "web-1").await.unwrap())
}

#[tokio::test]
async fn a_readable_pod_is_collected_in_three_waves_of_gets() {
    let m = cluster();
    let c = collect(&m, "web-1").await.unwrap();
    let p = &c.pods[0];
    let names: Vec<&str> = p.files.iter().map(|(n, _)| n.as_str()).collect();
    for f in [
        "pod.json",
        "logs.web.txt",
        "logs-previous.web.txt",
        "events.json",
        "replicaset.json",
        "deployment.json",
        "node.json",
        "pvc.json",
        "top-pod.txt",
        "references.json",
        "missing.json",
        "replicasets.json",
        "workload-pods.json",
        "nodes.json",
    ] {
        assert!(names.contains(&f), "{f} not in {names:?}");
    }
    assert!(missing(p).is_empty(), "{:?}", missing(p));
    let secret = reference(p, ReferenceKind::Secret, "app-secret").unwrap();
    assert_eq!(secret.exists, Some(true));
    assert_eq!(
        secret.keys.keys().collect::<Vec<_>>(),
        ["other", "token"],
        "key names only"
    );
    assert_eq!(
        reference(p, ReferenceKind::ConfigMap, "app-config")
            .unwrap()
            .exists,
        Some(true)
    );
    assert_eq!(
        reference(p, ReferenceKind::ServiceAccount, "web")
            .unwrap()
            .exists,
        Some(true)
    );
    // The second wave: the Service behind the host the log fails to reach.
    assert_eq!(
        reference(p, ReferenceKind::Service, "postgres")
            .unwrap()
            .exists,
        Some(false)
    );
    for (n, b) in &p.files {
        let text = String::from_utf8_lossy(b);
        assert!(!text.contains(SECRET_VALUE), "secret value in {n}");
        assert!(
            !text.contains("aHVudGVyMi1wbGFudGVkLXZhbHVl"),
            "secret value in {n}"
        );
    }
    assert_eq!(
        file(p, "top-pod.txt").map(String::from_utf8_lossy).unwrap(),
        "POD NAME CPU(cores) MEMORY(bytes)\nweb-1 web 12m 250Mi\n"
    );

    // Requests: only GETs; one to resolve, 11 in the first wave, 3 in the
    // second (the Service; the Deployment's ReplicaSets and pods, listed by
    // its selector; node-1 is not read again).
    let seen = m.seen();
    assert!(seen.iter().all(|s| s.method == "GET"), "{seen:?}");
    assert_eq!(seen.len(), 15, "{seen:?}");
    assert_eq!(c.requests, 15);
    assert_eq!(c.waves, 3);
    assert_eq!(c.wave_requests, [11, 3]);
    assert_eq!(
        m.calls(NODE),
        1,
        "the node source's read serves the revisions"
    );
    for path in [RSS, PODS] {
        let l: Vec<&Seen> = seen.iter().filter(|s| s.path == path).collect();
        assert_eq!(l.len(), 1, "{path}");
        assert!(
            l[0].query.contains("labelSelector=app%3Dweb"),
            "{}",
            l[0].query
        );
    }
    assert_eq!(c.wave_times.len(), 2);
    assert_eq!(seen[0].path, POD);
    assert!(seen[12..].iter().any(|s| s.path == SVC));
    let logs: Vec<&Seen> = seen.iter().filter(|s| s.path == LOG).collect();
    assert_eq!(logs.len(), 2);
    assert!(logs.iter().any(|s| s.query.contains("previous=true")));
    assert!(logs.iter().all(|s| s.query.contains("container=web")));
    assert!(logs.iter().all(|s| s.query.contains("tailLines=100")));
    let ev = seen.iter().find(|s| s.path == EVENTS).unwrap();
    assert!(
        ev.query
            .contains("fieldSelector=involvedObject.uid%3Duid-1"),
        "{}",
        ev.query
    );
    assert_eq!(cause(&c), baseline().await);
}

#[tokio::test]
async fn a_deployment_resolves_through_its_selector_in_two_waves() {
    let m = cluster();
    let c = collect(&m, "deploy/web").await.unwrap();
    assert_eq!(c.pods.len(), 1);
    assert_eq!(
        c.waves, 4,
        "get the deployment, list pods and replicasets, then two waves"
    );
    let seen = m.seen();
    assert_eq!(seen[0].path, DEPLOY);
    let list = seen.iter().find(|s| s.path == PODS).unwrap();
    assert!(
        list.query.contains("labelSelector=app%3Dweb"),
        "{}",
        list.query
    );
    // The revisions source reuses resolve's two lists: each made once.
    assert_eq!(m.calls(RSS), 1);
    assert_eq!(m.calls(PODS), 1);
    assert_eq!(m.calls(NODE), 1);
    assert_eq!(c.requests, 15, "{seen:?}");
    assert_eq!(c.wave_requests, [11, 1]);
    assert!(file(&c.pods[0], "replicasets.json").is_some());
    assert_eq!(c.requests as usize, seen.len());
    assert_eq!(cause(&c), baseline().await);
}

/// Each source forbidden on its own: missing evidence with the RBAC rule
/// as its hint, the rest collected, a diagnosis still made.
#[tokio::test]
async fn a_403_on_each_source_is_missing_evidence_with_an_rbac_hint() {
    let cases: &[(&str, &str, &str)] = &[
        (LOG, "logs --previous of web", "grant `get` on `pods/log`"),
        (EVENTS, "events", "grant `list` on `events`"),
        (
            RS,
            "owner ReplicaSet/web-abc",
            "grant `get` on `replicasets.apps`",
        ),
        (
            DEPLOY,
            "owner Deployment/web",
            "grant `get` on `deployments.apps`",
        ),
        (NODE, "node", "grant `get` on `nodes`"),
        (
            PVC,
            "persistentvolumeclaim data",
            "grant `get` on `persistentvolumeclaims`",
        ),
        (CM, "configmap app-config", "grant `get` on `configmaps`"),
        (SECRET, "secret app-secret", "grant `get` on `secrets`"),
        (SA, "serviceaccount", "grant `get` on `serviceaccounts`"),
        (
            METRICS,
            "usage (metrics.k8s.io)",
            "grant `get` on `pods.metrics.k8s.io`",
        ),
        (
            RSS,
            "replicasets of deployment web",
            "grant `list` on `replicasets.apps`",
        ),
        (PODS, "pods of deployment web", "grant `list` on `pods`"),
    ];
    for (path, what, hint) in cases {
        let m = cluster();
        m.on(path, vec![status(403, "Forbidden")]);
        let c = collect(&m, "web-1").await.unwrap();
        let p = &c.pods[0];
        let miss = missing(p);
        let entry = miss
            .iter()
            .find(|x| x.what == *what)
            .unwrap_or_else(|| panic!("{path}: no missing {what}: {miss:?}"));
        assert_eq!(entry.why, "forbidden", "{path}");
        let h = entry.hint.as_deref().unwrap_or_default();
        assert!(h.starts_with(hint), "{path}: {h}");
        assert!(!entry.why.contains("hint"), "advice stays out of why");
        // Only this source is missing (a forbidden log takes both runs).
        assert!(
            miss.iter()
                .all(|x| x.hint.is_some() && x.why == "forbidden"),
            "{path}: {miss:?}"
        );
        // A 403 is not retried.
        assert_eq!(m.calls(path), if *path == LOG { 2 } else { 1 }, "{path}");
        assert!(!cause(&c).is_empty(), "{path}: no diagnosis");
        if *path == CM || *path == SECRET {
            let kind = if *path == CM {
                ReferenceKind::ConfigMap
            } else {
                ReferenceKind::Secret
            };
            let name = if *path == CM {
                "app-config"
            } else {
                "app-secret"
            };
            assert_eq!(reference(p, kind, name).unwrap().exists, None);
        }
    }
    // A forbidden Service lookup leaves the Service's existence unknown.
    let m = cluster();
    m.on(SVC, vec![status(403, "Forbidden")]);
    let c = collect(&m, "web-1").await.unwrap();
    assert_eq!(
        reference(&c.pods[0], ReferenceKind::Service, "postgres")
            .unwrap()
            .exists,
        None
    );
}

#[tokio::test]
async fn a_404_says_the_reference_does_not_exist() {
    let m = cluster();
    m.on(CM, vec![status(404, "NotFound")])
        .on(SECRET, vec![status(404, "NotFound")])
        .on(SA, vec![status(404, "NotFound")]);
    let c = collect(&m, "web-1").await.unwrap();
    let p = &c.pods[0];
    for (kind, name) in [
        (ReferenceKind::ConfigMap, "app-config"),
        (ReferenceKind::Secret, "app-secret"),
        (ReferenceKind::ServiceAccount, "web"),
    ] {
        let r = reference(p, kind, name).unwrap();
        assert_eq!(r.exists, Some(false), "{kind} {name}");
        assert!(r.keys.is_empty());
    }
    assert!(
        missing(p).is_empty(),
        "a 404 is an answer, not missing evidence"
    );
    // Near miss: the ConfigMap that exists is still `exists: true`.
    let m = cluster();
    m.on(SECRET, vec![status(404, "NotFound")]);
    let c = collect(&m, "web-1").await.unwrap();
    assert_eq!(
        reference(&c.pods[0], ReferenceKind::ConfigMap, "app-config")
            .unwrap()
            .exists,
        Some(true)
    );
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried() {
    let m = cluster();
    m.on(EVENTS, vec![Reply::TooMany, ok(cluster_events())]);
    let c = collect(&m, "web-1").await.unwrap();
    assert_eq!(m.calls(EVENTS), 2);
    assert!(file(&c.pods[0], "events.json").is_some());
    assert!(missing(&c.pods[0]).is_empty());
    // Counted once: the collector counts reads, the server sees attempts.
    assert_eq!(c.requests as usize + 1, m.seen().len());
}

fn cluster_events() -> Value {
    json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": []})
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let m = cluster();
    m.on(
        NODE,
        vec![
            status(503, "ServiceUnavailable"),
            ok(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})),
        ],
    )
    .on(PVC, vec![status(500, "InternalError")]);
    let c = collect(&m, "web-1").await.unwrap();
    let p = &c.pods[0];
    assert_eq!(m.calls(NODE), 2);
    assert!(file(p, "node.json").is_some());
    assert_eq!(m.calls(PVC), 3, "three attempts");
    let miss = missing(p);
    assert_eq!(miss.len(), 1, "{miss:?}");
    assert_eq!(miss[0].what, "persistentvolumeclaim data");
    assert!(
        miss[0].why.starts_with("the API server answered 500"),
        "{}",
        miss[0].why
    );
    assert_eq!(miss[0].hint, None);
    assert_eq!(cause(&c), baseline().await);
}

#[tokio::test]
async fn a_reset_connection_is_retried() {
    let m = cluster();
    m.on(SA, vec![Reply::Reset, ok(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": NS}}))]);
    let c = collect(&m, "web-1").await.unwrap();
    assert_eq!(m.calls(SA), 2);
    assert_eq!(
        reference(&c.pods[0], ReferenceKind::ServiceAccount, "web")
            .unwrap()
            .exists,
        Some(true)
    );
    // Always reset: the read fails after three attempts, as missing evidence.
    let m = cluster();
    m.on(SA, vec![Reply::Reset]);
    let c = collect(&m, "web-1").await.unwrap();
    assert_eq!(m.calls(SA), 3);
    let miss = missing(&c.pods[0]);
    assert!(
        miss.iter()
            .any(|x| x.what == "serviceaccount" && x.why.starts_with("request failed")),
        "{miss:?}"
    );
}

#[tokio::test]
async fn an_absent_metrics_api_is_named_and_a_missing_sample_is_not() {
    let m = cluster();
    m.on(METRICS, vec![Reply::Text(404, "404 page not found".into())]);
    let c = collect(&m, "web-1").await.unwrap();
    let miss = missing(&c.pods[0]);
    assert_eq!(miss.len(), 1, "{miss:?}");
    assert_eq!(miss[0].what, "usage");
    assert!(miss[0].why.contains("does not serve metrics.k8s.io"));
    assert!(file(&c.pods[0], "top-pod.txt").is_none());
    assert_eq!(cause(&c), baseline().await);
    // Near miss: metrics-server answers NotFound for a pod it has no sample of yet.
    let m = cluster();
    m.on(METRICS, vec![status(404, "NotFound")]);
    let c = collect(&m, "web-1").await.unwrap();
    assert!(missing(&c.pods[0]).is_empty());
    assert!(file(&c.pods[0], "top-pod.txt").is_none());
}

#[tokio::test]
async fn a_pod_deleted_between_list_and_get() {
    // Listed by the deployment's selector, gone when its evidence is read.
    let m = cluster();
    m.on(LOG, vec![status(404, "NotFound")])
        .on(EVENTS, vec![ok(cluster_events())])
        .on(METRICS, vec![status(404, "NotFound")]);
    let c = collect(&m, "deploy/web").await.unwrap();
    let p = &c.pods[0];
    let miss = missing(p);
    for what in ["logs of web", "logs --previous of web"] {
        let e = miss.iter().find(|x| x.what == what).unwrap();
        assert_eq!(e.why, "not found");
        assert_eq!(e.hint, None);
    }
    // The listed pod object is still the evidence: without the log that
    // names the dependency, its termination (OOMKilled) is the cause.
    assert!(file(p, "pod.json").is_some());
    assert_eq!(baseline().await, "dependency-unreachable");
    assert_eq!(cause(&c), "oom-killed");
    // Named directly and gone: the error a user can act on.
    let m = cluster();
    m.on(POD, vec![status(404, "NotFound")]);
    match collect(&m, "web-1").await {
        Err(KubeError::NotFound { what, namespace }) => {
            assert_eq!(what, "pod/web-1");
            assert_eq!(namespace, NS);
        }
        other => panic!("{:?}", other.map(|c| c.pods.len())),
    }
    assert_eq!(m.seen().len(), 1);
}

#[tokio::test]
async fn a_forbidden_pod_get_is_an_error_with_the_rule() {
    let m = cluster();
    m.on(POD, vec![status(403, "Forbidden")]);
    match collect(&m, "web-1").await {
        Err(KubeError::Forbidden { verb, resource, .. }) => {
            assert_eq!((verb.as_str(), resource.as_str()), ("get", "pods"));
        }
        other => panic!("{:?}", other.map(|c| c.pods.len())),
    }
}

#[tokio::test]
async fn scan_follows_continue_tokens() {
    let m = cluster();
    let page = |items: Vec<Value>, cont: &str| {
        ok(
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"continue": cont}, "items": items}),
        )
    };
    let healthy = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ok-1", "namespace": NS, "uid": "uid-2"},
        "spec": {"containers": [{"name": "web", "image": "web:1"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "web", "image": "web:1", "imageID": "",
            "ready": true, "restartCount": 0, "state": {"running": {}}}]}});
    m.on(
        PODS,
        vec![
            page(vec![healthy], "tok-1"),
            page(vec![pod_json("web-1", "uid-1")], ""),
        ],
    );
    m.on(EVENTS, vec![
        ok(json!({"apiVersion": "v1", "kind": "EventList", "metadata": {"continue": "ev-2"}, "items": []})),
        ok(cluster_events()),
    ]);
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 4, &|_| {})
        .await
        .unwrap();
    assert_eq!(s.total, 2, "both pages counted");
    assert_eq!(s.pods.len(), 1, "only the unhealthy pod collected");
    assert_eq!(s.pods[0].name, "web-1");
    assert!(s.events_note.is_none());
    let seen = m.seen();
    let lists: Vec<&Seen> = seen.iter().filter(|x| x.path == PODS).collect();
    assert_eq!(lists.len(), 2);
    assert!(lists[0].query.contains("limit=500") && !lists[0].query.contains("continue"));
    assert!(
        lists[1].query.contains("continue=tok-1"),
        "{}",
        lists[1].query
    );
    let evs: Vec<&Seen> = seen.iter().filter(|x| x.path == EVENTS).collect();
    assert_eq!(
        evs.len(),
        2,
        "events listed once per namespace, paged, not per pod"
    );
    assert!(evs[1].query.contains("continue=ev-2"));
    assert!(seen.iter().all(|x| x.method == "GET"));
    // A scan collects each pod's first wave only: no Service lookup.
    assert_eq!(m.calls(SVC), 0);
}

/// A scan of two crash-looping pods of one ReplicaSet: their owner chain
/// and ServiceAccount are read once for both, metrics.k8s.io is asked until
/// it is known not to be served; both bundles hold the same files as each
/// pod's own collection would. Near miss: `diagnose` of the Deployment
/// still reads per pod (a_deployment_with_three_replica_sets).
#[tokio::test]
async fn a_scan_reads_an_owner_chain_and_a_service_account_once_for_all_pods() {
    let m = cluster();
    const METRICS2: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2";
    m.on(
        PODS,
        vec![ok(
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
            "items": [pod_json("web-1", "uid-1"), pod_json("web-2", "uid-2")]}),
        )],
    )
    .on(
        "/api/v1/namespaces/shop/pods/web-2",
        vec![ok(pod_json("web-2", "uid-2"))],
    )
    .on(
        "/api/v1/namespaces/shop/pods/web-2/log",
        vec![Reply::Text(200, "boom\n".into())],
    )
    .on(METRICS, vec![Reply::Text(404, "404 page not found".into())])
    .on(
        METRICS2,
        vec![Reply::Text(404, "404 page not found".into())],
    );
    // One pod at a time: the second starts once the first knows metrics.k8s.io is absent.
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 1, &|_| {})
        .await
        .unwrap();
    assert_eq!(s.pods.len(), 2);
    for path in [RS, DEPLOY, SA] {
        assert_eq!(m.calls(path), 1, "{path}");
    }
    assert_eq!(m.calls(METRICS) + m.calls(METRICS2), 1);
    for p in &s.pods {
        assert!(file(p, "replicaset.json").is_some(), "{}", p.name);
        assert!(file(p, "deployment.json").is_some(), "{}", p.name);
        let sa: Vec<_> = references(p)
            .into_iter()
            .filter(|r| r.kind == ReferenceKind::ServiceAccount)
            .collect();
        assert_eq!(sa.len(), 1, "{}", p.name);
        assert_eq!((sa[0].name.as_str(), sa[0].exists), ("web", Some(true)));
        assert!(
            missing(p)
                .iter()
                .any(|x| x.what == "usage" && x.why.contains("does not serve metrics.k8s.io")),
            "{}: {:?}",
            p.name,
            missing(p)
        );
    }
    assert_eq!(
        file(&s.pods[0], "replicaset.json"),
        file(&s.pods[1], "replicaset.json")
    );

    // Near miss: metrics.k8s.io served, each pod's usage is read.
    let m = cluster();
    m.on(
        PODS,
        vec![ok(
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
            "items": [pod_json("web-1", "uid-1"), pod_json("web-2", "uid-2")]}),
        )],
    )
    .on(
        "/api/v1/namespaces/shop/pods/web-2",
        vec![ok(pod_json("web-2", "uid-2"))],
    )
    .on(METRICS2, vec![status(404, "NotFound")]);
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 1, &|_| {})
        .await
        .unwrap();
    assert_eq!(s.pods.len(), 2);
    assert_eq!((m.calls(METRICS), m.calls(METRICS2)), (1, 1));
    let web1 = s.pods.iter().find(|p| p.name == "web-1").unwrap();
    assert!(file(web1, "top-pod.txt").is_some());
}

#[tokio::test]
async fn scan_without_events_still_collects() {
    let m = cluster();
    m.on(EVENTS, vec![status(403, "Forbidden")]);
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 2, &|_| {})
        .await
        .unwrap();
    assert!(s.events_note.is_some());
    assert_eq!(s.pods.len(), 1);
    let miss = missing(&s.pods[0]);
    assert!(
        miss.iter().any(|x| x.what == "events" && x.hint.is_some()),
        "{miss:?}"
    );
}

/// A pod of a Deployment created `age_s` seconds ago whose two containers
/// wait in ContainerCreating (its volumes not set up yet: phase Pending).
fn creating_pod(name: &str, uid: &str, age_s: i64) -> Value {
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(age_s);
    let waiting = |c: &str| {
        json!({"name": c, "image": "app:1", "imageID": "", "ready": false,
        "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}})
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": uid,
            "creationTimestamp": created.to_string(),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rr-abc",
                "uid": "rs-2", "controller": true}]},
        "spec": {"nodeName": "node-1",
            "containers": [
                {"name": "app", "image": "app:1",
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}]},
                {"name": "metrics", "image": "app:1"}],
            "volumes": [{"name": "config", "configMap": {"name": "app-config",
                "items": [{"key": "app.yaml", "path": "app.yaml"}]}}]},
        "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"},
                {"type": "PodReadyToStartContainers", "status": "False"}],
            "containerStatuses": [waiting("app"), waiting("metrics")]}
    })
}

fn pod_event(pod: &str, uid: &str, type_: &str, reason: &str, message: &str) -> Value {
    json!({"metadata": {"name": format!("{pod}.{reason}"), "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": pod, "namespace": NS, "uid": uid},
        "reason": reason, "type": type_, "message": message})
}

/// A pod 30 s in ContainerCreating whose volume the kubelet cannot set up
/// (FailedMount, a Warning) is listed; the near miss, a pod 5 s in
/// ContainerCreating with only its Scheduled event, is not. Only such
/// young pods: the events are listed all the same.
#[tokio::test]
async fn scan_lists_a_young_container_creating_pod_with_a_failed_mount() {
    let m = cluster();
    let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
        "items": [creating_pod("rr-mount", "uid-m", 30), creating_pod("rr-fresh", "uid-f", 5)]});
    m.on(PODS, vec![ok(list)]);
    let events = json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [
        pod_event("rr-mount", "uid-m", "Normal", "Scheduled", "Successfully assigned shop/rr-mount to node-1"),
        pod_event("rr-mount", "uid-m", "Warning", "FailedMount",
            "MountVolume.SetUp failed for volume \"config\" : configmap references non-existent config key: app.yaml"),
        pod_event("rr-fresh", "uid-f", "Normal", "Scheduled", "Successfully assigned shop/rr-fresh to node-1"),
    ]});
    m.on(EVENTS, vec![ok(events)]);
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 2, &|_| {})
        .await
        .unwrap();
    assert_eq!(s.total, 2);
    let names: Vec<&str> = s.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["rr-mount"]);
    let report = crashdoc_core::diagnose_all(&read_memory(&s.pods));
    let d = &report.pods[0].diagnoses[0];
    assert_eq!(
        (d.cause.id(), d.container.as_deref()),
        ("config-ref-missing", Some("app"))
    );
}

/// Near miss: without a Warning the young ContainerCreating pod stays out,
/// and a scan with nothing else unhealthy finds nothing.
#[tokio::test]
async fn scan_leaves_out_a_young_container_creating_pod_without_warnings() {
    let m = cluster();
    let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
        "items": [creating_pod("rr-fresh", "uid-f", 5)]});
    m.on(PODS, vec![ok(list)]);
    let events = json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [
        pod_event("rr-fresh", "uid-f", "Normal", "Scheduled", "Successfully assigned shop/rr-fresh to node-1"),
        // Another pod's warning is not this pod's.
        pod_event("web-1", "uid-1", "Warning", "BackOff", "Back-off restarting failed container web in pod web-1"),
    ]});
    m.on(EVENTS, vec![ok(events)]);
    let s = crashdoc_kube::scan::scan(m.client(), NS, false, opts(), 2, &|_| {})
        .await
        .unwrap();
    assert_eq!(s.total, 1);
    assert!(
        s.pods.is_empty(),
        "{:?}",
        s.pods.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
}

// `verify` against the same mock: the deployment's rollout as its status
// reports it, then the new ReplicaSet's pods. Windows are zero or never
// reached: the verdicts do not depend on time.

mod verify {
    use super::*;
    use crashdoc_kube::verify::{Verdict, VerifyOptions, verify_deployment};
    use std::time::Duration;

    fn deployment(updated: i32, deadline: bool) -> Value {
        let mut conditions = vec![];
        if deadline {
            conditions.push(json!({"type": "Progressing", "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"web-abc\" has timed out progressing."}));
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS, "generation": 2,
                "annotations": {"deployment.kubernetes.io/revision": "2"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "web", "image": "web:2"}]}}},
            "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": updated,
                       "availableReplicas": updated, "conditions": conditions}})
    }

    fn healthy(name: &str, owner: &str, restarts: i32) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                    "uid": "rs", "controller": true}]},
            "spec": {"containers": [{"name": "web", "image": "web:2"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "web", "image": "web:2",
                "imageID": "", "ready": true, "restartCount": restarts, "state": {"running": {}}}]}})
    }

    fn pods(items: Vec<Value>) -> Reply {
        ok(json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}))
    }

    /// A cluster whose ReplicaSets are web-abc (revision 2) and web-old (1).
    fn rollout() -> Mock {
        let m = Mock::default();
        let rs = |name: &str, rev: &str| {
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": NS,
                    "annotations": {"deployment.kubernetes.io/revision": rev}},
                "spec": {"selector": {"matchLabels": {"app": "web"}}}})
        };
        m.on(
            RSS,
            vec![ok(
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSetList", "metadata": {},
                "items": [rs("web-old", "1"), rs("web-abc", "2")]}),
            )],
        );
        m
    }

    fn opts(stable: Duration) -> VerifyOptions {
        VerifyOptions {
            stable,
            timeout: Duration::from_secs(3600),
            poll: Duration::from_millis(1),
        }
    }

    async fn run(m: &Mock, stable: Duration) -> (Result<Verdict, KubeError>, Vec<String>) {
        let said = Mutex::new(Vec::new());
        let say = |s: &str| said.lock().unwrap().push(s.to_string());
        let v = verify_deployment(&m.client(), NS, "web", opts(stable), &say).await;
        (v, said.into_inner().unwrap())
    }

    #[tokio::test]
    async fn a_completed_rollout_whose_new_pods_hold() {
        let m = rollout();
        m.on(
            DEPLOY,
            vec![ok(deployment(0, false)), ok(deployment(1, false))],
        );
        // The old ReplicaSet's crash-looping pod is not the new rollout's.
        m.on(
            PODS,
            vec![pods(vec![healthy("web-2", "web-abc", 0), {
                let mut p = pod_json("web-0", "uid-0");
                p["metadata"]["ownerReferences"][0]["name"] = json!("web-old");
                p
            }])],
        );
        let (v, said) = run(&m, Duration::ZERO).await;
        match v.unwrap() {
            Verdict::Held { pods, .. } => assert_eq!(pods, 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(m.calls(DEPLOY), 2, "polled until the rollout completed");
        assert_eq!(said[0], "rollout: 0/1 updated, 0 available, 1 total");
        assert_eq!(said[1], "rollout: 1/1 updated, 1 available, 1 total");
        let seen = m.seen();
        assert!(seen.iter().all(|s| s.method == "GET"));
        let list = seen.iter().find(|s| s.path == PODS).unwrap();
        assert!(list.query.contains("labelSelector=app%3Dweb"));
    }

    #[tokio::test]
    async fn a_new_pod_that_crash_loops_is_unstable() {
        let m = rollout();
        m.on(DEPLOY, vec![ok(deployment(1, false))]);
        m.on(PODS, vec![pods(vec![pod_json("web-1", "uid-1")])]);
        match run(&m, Duration::ZERO).await.0.unwrap() {
            Verdict::Unstable { reason, failing } => {
                assert_eq!(reason, "pod web-1 is not running ready");
                assert_eq!(failing.len(), 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_restart_in_the_window_is_unstable() {
        let m = rollout();
        m.on(DEPLOY, vec![ok(deployment(1, false))]);
        m.on(
            PODS,
            vec![
                pods(vec![healthy("web-2", "web-abc", 0)]),
                pods(vec![healthy("web-2", "web-abc", 1)]),
            ],
        );
        // The window is never reached: the second look sees the restart.
        match run(&m, Duration::from_secs(3600)).await.0.unwrap() {
            Verdict::Unstable { reason, .. } => {
                assert_eq!(
                    reason,
                    "pod web-2 restarted during the stable window (0 -> 1)"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(m.calls(PODS), 2);
    }

    #[tokio::test]
    async fn a_progress_deadline_fails_the_rollout() {
        let m = rollout();
        m.on(DEPLOY, vec![ok(deployment(0, true))]);
        m.on(PODS, vec![pods(vec![pod_json("web-1", "uid-1")])]);
        match run(&m, Duration::ZERO).await.0.unwrap() {
            Verdict::RolloutFailed { reason, failing } => {
                assert!(reason.contains("timed out progressing"), "{reason}");
                assert_eq!(failing[0].metadata.name.as_deref(), Some("web-1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_absent_or_forbidden_deployment_is_an_error() {
        let m = rollout();
        m.on(DEPLOY, vec![status(404, "NotFound")]);
        assert!(matches!(
            run(&m, Duration::ZERO).await.0,
            Err(KubeError::NotFound { .. })
        ));
        let m = rollout();
        m.on(DEPLOY, vec![status(403, "Forbidden")]);
        match run(&m, Duration::ZERO).await.0 {
            Err(KubeError::Forbidden { verb, resource, .. }) => {
                assert_eq!((verb.as_str(), resource.as_str()), ("get", "deployments"))
            }
            other => panic!("{:?}", other.is_ok()),
        }
        assert_eq!(m.seen().len(), 1);
    }
}

/// The revisions source (issue 11): a workload's ReplicaSets or
/// ControllerRevisions, its pods and their nodes, each read once.
mod revisions {
    use super::*;

    const CRS: &str = "/apis/apps/v1/namespaces/shop/controllerrevisions";
    const STS: &str = "/apis/apps/v1/namespaces/shop/statefulsets/db";
    const NODE2: &str = "/api/v1/nodes/node-2";

    fn list(kind: &str, items: Vec<Value>) -> Reply {
        ok(json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": items}))
    }

    fn rs(name: &str, rev: u32, owner: &str, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "annotations": {"deployment.kubernetes.io/revision": rev.to_string()},
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner,
                    "uid": format!("uid-{owner}"), "controller": true}]},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": image}]}}}})
    }

    /// A pod of `owner` (kind, name) on `node`; crash-looping or ready.
    fn pod(name: &str, owner: (&str, &str), node: &str, failing: bool) -> Value {
        let mut p = pod_json(name, &format!("uid-{name}"));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": owner.0,
            "name": owner.1, "uid": format!("uid-{}", owner.1), "controller": true}]);
        p["metadata"]["managedFields"] = json!([{"manager": "kubelet", "operation": "Update"}]);
        p["spec"]["nodeName"] = json!(node);
        if !failing {
            p["status"]["containerStatuses"] = json!([{"name": "web", "image": "web:2", "imageID": "",
                "ready": true, "restartCount": 0, "state": {"running": {}}}]);
        }
        p
    }

    fn items(p: &PodFiles, name: &str) -> Vec<Value> {
        let v: Value =
            serde_json::from_slice(file(p, name).unwrap_or_else(|| panic!("{name}"))).unwrap();
        assert_eq!(v["kind"], "List", "{name}");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    fn names(v: &[Value]) -> Vec<String> {
        let mut n: Vec<String> = v
            .iter()
            .filter_map(|x| x["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        n.sort();
        n
    }

    /// Deployment web: revisions 1, 2 (healthy, on node-2) and 3 (two pods
    /// crash-looping on node-1); a ReplicaSet and a pod of another
    /// Deployment match the same selector.
    fn three_revisions() -> Mock {
        let m = cluster();
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS, "uid": "uid-web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "web", "image": "web:3"}]}}}});
        let pods = vec![
            pod("web-1", ("ReplicaSet", "web-c3"), "node-1", true),
            pod("web-2", ("ReplicaSet", "web-c3"), "node-1", true),
            pod("web-3", ("ReplicaSet", "web-b2"), "node-2", false),
            pod("shop-1", ("ReplicaSet", "shop-x1"), "node-9", false),
        ];
        m.on(DEPLOY, vec![ok(deploy)])
            .on(
                RSS,
                vec![list(
                    "ReplicaSetList",
                    vec![
                        rs("web-a1", 1, "web", "web:1"),
                        rs("web-b2", 2, "web", "web:2"),
                        rs("web-c3", 3, "web", "web:3"),
                        rs("shop-x1", 1, "shop", "shop:1"),
                    ],
                )],
            )
            .on(PODS, vec![list("PodList", pods)])
            .on(
                "/apis/apps/v1/namespaces/shop/replicasets/web-c3",
                vec![ok(rs("web-c3", 3, "web", "web:3"))],
            )
            .on("/api/v1/namespaces/shop/pods/web-2/log", vec![Reply::Text(200, "boom\n".into())])
            .on(NODE2, vec![ok(json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "node-2", "labels": {"node.kubernetes.io/instance-type": "m5.large"},
                    "managedFields": [{"manager": "kubelet", "operation": "Update"}]}}))]);
        m
    }

    #[tokio::test]
    async fn a_deployment_with_three_replica_sets() {
        let m = three_revisions();
        let c = collect(&m, "deploy/web").await.unwrap();
        assert_eq!(c.pods.len(), 2, "the two crash-looping pods of web");
        for p in &c.pods {
            assert_eq!(
                names(&items(p, "replicasets.json")),
                ["web-a1", "web-b2", "web-c3"]
            );
            assert_eq!(
                names(&items(p, "workload-pods.json")),
                ["web-1", "web-2", "web-3"]
            );
            assert_eq!(names(&items(p, "nodes.json")), ["node-1", "node-2"]);
            assert!(file(p, "controllerrevisions.json").is_none());
            for f in ["replicasets.json", "workload-pods.json", "nodes.json"] {
                let text = String::from_utf8_lossy(file(p, f).unwrap());
                assert!(!text.contains("managedFields"), "{f}");
                assert!(!text.contains(SECRET_VALUE), "{f}");
            }
            assert!(missing(p).is_empty(), "{:?}", missing(p));
        }
        // Each read once for both pods: the lists are resolve's, node-1 is
        // the node source's, node-2 is read by the revisions source. (The
        // owner chain still gets the Deployment once per pod, as before.)
        for path in [RSS, PODS, NODE, NODE2] {
            assert_eq!(m.calls(path), 1, "{path}");
        }
        assert_eq!(m.calls(DEPLOY), 3);
        assert!(m.seen().iter().all(|s| s.method == "GET"));
        assert_eq!(c.requests as usize, m.seen().len());
        // resolve 3; per pod 11 in the first wave but node-1 once (21);
        // second: web-1's Service (web-2's log names no host) and node-2.
        assert_eq!(c.requests, 3 + 21 + 2);
        assert_eq!(c.wave_requests, [21, 2]);
    }

    #[tokio::test]
    async fn a_second_wave_of_shared_reads_only_is_no_wave() {
        // deploy/web, its pod on node-1, a log naming no host: the revisions
        // need nothing resolve and the node source did not read.
        let m = cluster();
        m.on(
            LOG,
            vec![Reply::Text(200, "loading model\nKilled\n".into())],
        );
        let c = collect(&m, "deploy/web").await.unwrap();
        assert!(file(&c.pods[0], "workload-pods.json").is_some());
        assert_eq!(c.wave_requests, [11, 0]);
        assert_eq!(c.waves, 3, "get, lists, first wave");
        // Near miss: a pod target lists the revisions itself, a real wave.
        let m = cluster();
        m.on(
            LOG,
            vec![Reply::Text(200, "loading model\nKilled\n".into())],
        );
        let c = collect(&m, "web-1").await.unwrap();
        assert_eq!(c.wave_requests, [11, 2]);
        assert_eq!(c.waves, 3);
    }

    #[tokio::test]
    async fn a_pod_target_lists_its_deployments_revisions_itself() {
        let m = three_revisions();
        let c = collect(&m, "web-1").await.unwrap();
        let p = &c.pods[0];
        assert_eq!(names(&items(p, "replicasets.json")).len(), 3);
        assert_eq!(names(&items(p, "workload-pods.json")).len(), 3);
        let seen = m.seen();
        let rss: Vec<&Seen> = seen.iter().filter(|s| s.path == RSS).collect();
        assert_eq!(rss.len(), 1);
        assert!(
            rss[0].query.contains("labelSelector=app%3Dweb"),
            "{}",
            rss[0].query
        );
        assert_eq!(m.calls(PODS), 1);
        assert_eq!(m.calls(NODE), 1);
        assert_eq!(m.calls(NODE2), 1);
        assert_eq!(c.wave_requests, [11, 4], "Service, two lists, node-2");
    }

    /// StatefulSet db: two ControllerRevisions (and one of another
    /// StatefulSet), db-0 crash-looping and db-1 ready on node-1.
    fn statefulset() -> Mock {
        let m = cluster();
        let cr = |name: &str, rev: i64, owner: &str| {
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": rev,
                "metadata": {"name": name, "namespace": NS, "labels": {"app": "web"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner,
                        "uid": format!("uid-{owner}"), "controller": true}]},
                "data": {"spec": {"template": {"spec": {"containers": [{"name": "web", "args": [format!("--rev={rev}")]}]}}}}})
        };
        let mut db0 = pod("db-0", ("StatefulSet", "db"), "node-1", true);
        db0["metadata"]["name"] = json!("web-1");
        m.on(POD, vec![ok(db0.clone())])
            .on(
                STS,
                vec![ok(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "db", "namespace": NS, "uid": "uid-db"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "db",
                    "template": {"spec": {"containers": [{"name": "web"}]}}}}))],
            )
            .on(
                CRS,
                vec![list(
                    "ControllerRevisionList",
                    vec![
                        cr("db-5d", 1, "db"),
                        cr("db-7f", 2, "db"),
                        cr("other-1", 1, "other"),
                    ],
                )],
            )
            .on(
                PODS,
                vec![list(
                    "PodList",
                    vec![db0, pod("db-1", ("StatefulSet", "db"), "node-1", false)],
                )],
            );
        m
    }

    #[tokio::test]
    async fn a_statefulset_with_two_controller_revisions() {
        let m = statefulset();
        let c = collect(&m, "web-1").await.unwrap();
        let p = &c.pods[0];
        assert!(file(p, "statefulset.json").is_some());
        assert_eq!(
            names(&items(p, "controllerrevisions.json")),
            ["db-5d", "db-7f"]
        );
        assert_eq!(names(&items(p, "workload-pods.json")), ["db-1", "web-1"]);
        assert_eq!(names(&items(p, "nodes.json")), ["node-1"]);
        assert!(file(p, "replicasets.json").is_none());
        assert!(missing(p).is_empty(), "{:?}", missing(p));
        assert_eq!(m.calls(RSS), 0, "no ReplicaSets for a StatefulSet");
        assert_eq!(m.calls(CRS), 1);
        assert_eq!(m.calls(NODE), 1);
        let q = &m.seen().into_iter().find(|s| s.path == CRS).unwrap().query;
        assert!(q.contains("labelSelector=app%3Dweb"), "{q}");
        // Near miss: a forbidden list is missing evidence with the rule.
        let m = statefulset();
        m.on(CRS, vec![status(403, "Forbidden")]);
        let c = collect(&m, "web-1").await.unwrap();
        let p = &c.pods[0];
        let miss = missing(p);
        let e = miss
            .iter()
            .find(|x| x.what == "controllerrevisions of statefulset db")
            .unwrap_or_else(|| panic!("{miss:?}"));
        assert_eq!(e.why, "forbidden");
        assert!(
            e.hint
                .as_deref()
                .unwrap_or_default()
                .starts_with("grant `list` on `controllerrevisions.apps`"),
            "{e:?}"
        );
        assert_eq!(m.calls(CRS), 1, "a 403 is not retried");
        assert!(file(p, "controllerrevisions.json").is_none());
        assert_eq!(
            names(&items(p, "workload-pods.json")).len(),
            2,
            "the pods still read"
        );
        assert!(!cause(&c).is_empty());
    }

    #[tokio::test]
    async fn a_404_is_not_found_and_an_absent_owner_means_no_lists() {
        // The list answers 404 (the namespace went away between reads).
        let m = statefulset();
        m.on(CRS, vec![status(404, "NotFound")]);
        let c = collect(&m, "web-1").await.unwrap();
        let miss = missing(&c.pods[0]);
        let e = miss
            .iter()
            .find(|x| x.what == "controllerrevisions of statefulset db")
            .unwrap_or_else(|| panic!("{miss:?}"));
        assert_eq!((e.why.as_str(), e.hint.as_deref()), ("not found", None));
        // The StatefulSet itself is gone: nothing to list by.
        let m = statefulset();
        m.on(STS, vec![status(404, "NotFound")]);
        let c = collect(&m, "web-1").await.unwrap();
        assert_eq!(m.calls(CRS), 0);
        assert_eq!(m.calls(PODS), 0);
        assert!(file(&c.pods[0], "workload-pods.json").is_none());
        // A pod without an owner gets no revision files and no lists.
        let m = cluster();
        let mut bare = pod_json("web-1", "uid-1");
        bare["metadata"]["ownerReferences"] = json!([]);
        m.on(POD, vec![ok(bare)]);
        let c = collect(&m, "web-1").await.unwrap();
        assert_eq!(m.calls(RSS) + m.calls(PODS) + m.calls(CRS), 0);
        assert!(file(&c.pods[0], "replicasets.json").is_none());
    }
}
