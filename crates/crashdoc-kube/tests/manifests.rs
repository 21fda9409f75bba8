//! `lint --live`'s listing (crashdoc_kube::manifests) against the mock API
//! server (tests/common): one list per kind, Secrets as key names only,
//! owned pods left out, the claims' and nodes' failures said, any other
//! list's failure an error naming it; throttled lists retried.

mod common;

use common::{Mock, NS, Reply, list, status};
use crashdoc_kube::KubeError;
use crashdoc_kube::manifests::list as list_manifests;
use serde_json::json;

const SECRET_VALUE: &str = "hunter2-planted-value";

fn path(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("/api/v1/namespaces/{NS}/{resource}")
    } else {
        format!("/apis/{group}/namespaces/{NS}/{resource}")
    }
}

/// A namespace with one of everything: every list answers.
fn cluster() -> Mock {
    let m = Mock::default();
    let meta = |name: &str| {
        json!({"name": name, "namespace": NS, "managedFields": [{"manager": "kubectl"}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": SECRET_VALUE}})
    };
    let deploy = json!({"metadata": meta("web"), "spec": {"selector": {}, "template": {}}, "status": {"replicas": 1}});
    let bare = json!({"metadata": meta("debug"), "spec": {"containers": []}});
    let mut owned = json!({"metadata": meta("web-1"), "spec": {"containers": []}});
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "u"}]);
    let secret = json!({"metadata": meta("app-secret"),
        "data": {"token": "aHVudGVyMi1wbGFudGVkLXZhbHVl"}, "stringData": {"password": SECRET_VALUE}});
    m.on(
        &path("apps/v1", "deployments"),
        vec![list("DeploymentList", vec![deploy])],
    )
    .on(
        &path("apps/v1", "statefulsets"),
        vec![list("StatefulSetList", vec![])],
    )
    .on(
        &path("apps/v1", "daemonsets"),
        vec![list("DaemonSetList", vec![])],
    )
    .on(&path("batch/v1", "jobs"), vec![list("JobList", vec![])])
    .on(
        &path("batch/v1", "cronjobs"),
        vec![list("CronJobList", vec![])],
    )
    .on(&path("", "pods"), vec![list("PodList", vec![bare, owned])])
    .on(
        &path("", "configmaps"),
        vec![list(
            "ConfigMapList",
            vec![json!({"metadata": meta("cfg"), "data": {"A": "1"}})],
        )],
    )
    .on(&path("", "secrets"), vec![list("SecretList", vec![secret])])
    .on(
        &path("", "persistentvolumeclaims"),
        vec![list("PersistentVolumeClaimList", vec![])],
    )
    .on(
        "/api/v1/nodes",
        vec![list("NodeList", vec![json!({"metadata": {"name": "n1"}})])],
    );
    m
}

#[tokio::test]
async fn every_kind_is_listed_once_and_secrets_keep_their_key_names_only() {
    let m = cluster();
    let got = list_manifests(&m.client(), Some(NS), true).await.unwrap();
    let kinds: Vec<(&str, &str)> = got
        .objects
        .iter()
        .map(|(k, v)| (*k, v["metadata"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("Deployment", "web"),
            ("Pod", "debug"),
            ("ConfigMap", "cfg"),
            ("Secret", "app-secret")
        ],
        "the owned pod web-1 is linted through its workload"
    );
    let all =
        serde_json::to_string(&got.objects.iter().map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
    assert!(
        !all.contains(SECRET_VALUE) && !all.contains("aHVudGVy"),
        "{all}"
    );
    assert!(
        !all.contains("managedFields") && !all.contains("\"status\""),
        "{all}"
    );
    let secret = &got.objects[3].1;
    assert_eq!(secret["data"], json!({"token": null, "password": null}));
    assert_eq!(got.nodes.unwrap().unwrap().len(), 1);
    assert!(got.pvcs_error.is_none());
    let seen = m.seen();
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert!(seen.iter().all(|s| s.method == "GET" && !s.watch()));
}

#[tokio::test]
async fn claims_and_nodes_may_fail_other_lists_may_not() {
    let m = cluster();
    m.on(
        &path("", "persistentvolumeclaims"),
        vec![Reply::Json(403, status(403, "Forbidden"))],
    );
    m.on(
        "/api/v1/nodes",
        vec![Reply::Json(403, status(403, "Forbidden"))],
    );
    let got = list_manifests(&m.client(), Some(NS), true).await.unwrap();
    assert!(got.pvcs_error.unwrap().contains("Forbidden"));
    assert!(got.nodes.unwrap().is_err());
    assert_eq!(got.objects.len(), 4);

    let m = cluster();
    m.on(
        &path("", "secrets"),
        vec![Reply::Json(403, status(403, "Forbidden"))],
    );
    match list_manifests(&m.client(), Some(NS), false).await {
        Err(KubeError::List { what, source }) => {
            assert_eq!(what, "secrets");
            assert!(matches!(source, kube::Error::Api(s) if s.code == 403));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.calls("/api/v1/nodes"), 0, "no nodes unless asked");
}

#[tokio::test]
async fn a_throttled_list_is_retried_and_all_namespaces_list_cluster_wide() {
    let m = cluster();
    let deployments = path("apps/v1", "deployments");
    let ok_list = list("DeploymentList", vec![]);
    m.on(
        &deployments,
        vec![Reply::Json(429, status(429, "TooManyRequests")), ok_list],
    );
    let got = list_manifests(&m.client(), Some(NS), false).await.unwrap();
    assert_eq!(m.calls(&deployments), 2);
    assert_eq!(got.objects.len(), 3);

    let m = Mock::default();
    m.on(
        "/apis/apps/v1/deployments",
        vec![list("DeploymentList", vec![])],
    );
    let r = list_manifests(&m.client(), None, false).await;
    // Every list went to the cluster-wide path (the others 404 here).
    assert!(
        m.seen().iter().all(|s| !s.path.contains("/namespaces/")),
        "{:?}",
        m.seen()
    );
    assert!(
        matches!(
            r,
            Err(KubeError::List {
                what: "statefulsets",
                ..
            })
        ),
        "{r:?}"
    );
}
