//! The cluster's name in a shared history, against the mock API server.

mod common;

use common::{Mock, Reply, ok, status};
use serde_json::json;

const KUBE_SYSTEM: &str = "/api/v1/namespaces/kube-system";

fn client(m: &Mock) -> kube::Client {
    crashdoc_kube::client_over(m.service(), "default", None)
}

#[tokio::test]
async fn in_a_pod_the_cluster_is_named_by_the_kube_system_uid() {
    let m = Mock::default();
    m.on(
        KUBE_SYSTEM,
        vec![ok(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "kube-system", "uid": "6f1f7e2a-0c39-4c5e-9d61-5a3b1e2f0a11"}}))],
    );
    let id = crashdoc_kube::identity::kube_system_uid(&client(&m))
        .await
        .expect("a name");
    assert_eq!(id.name, "6f1f7e2a-0c39-4c5e-9d61-5a3b1e2f0a11");
    assert_eq!(id.source, "the kube-system namespace's UID");
    // One read, a get: nothing is written.
    let seen = m.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", KUBE_SYSTEM)
    );
}

#[tokio::test]
async fn a_forbidden_read_says_to_pass_cluster() {
    let m = Mock::default();
    m.on(
        KUBE_SYSTEM,
        vec![Reply::Json(403, status(403, "Forbidden"))],
    );
    let e = crashdoc_kube::identity::kube_system_uid(&client(&m))
        .await
        .expect_err("forbidden");
    let text = format!("{e}");
    assert!(text.contains("--cluster"), "{text}");
}
