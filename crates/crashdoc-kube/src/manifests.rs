//! The objects `crashdoc lint --live` lints, read with list requests only:
//! workloads, bare pods, ConfigMaps, Secrets (key names only), PVCs, and
//! the nodes when the rollout capacity is wanted.
//!
//! Secret values are dropped here, before anything else sees them; status,
//! managed fields and the last-applied annotation (which may hold a whole
//! Secret) are removed from every object.

use crate::KubeError;
use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
use kube::api::{Api, ListParams};
use serde_json::Value;

/// What a live lint reads.
#[derive(Debug, Default)]
pub struct Manifests {
    /// (kind, object): Deployments, StatefulSets, DaemonSets, Jobs,
    /// CronJobs, pods no controller owns, ConfigMaps, PersistentVolumeClaims,
    /// Secrets with their key names only; in that order.
    pub objects: Vec<(&'static str, Value)>,
    /// Why the PersistentVolumeClaims could not be listed (the lint goes on
    /// without them).
    pub pvcs_error: Option<String>,
    /// The nodes, when asked for: Ok(nodes), or why they could not be listed.
    pub nodes: Option<Result<Vec<Value>, String>>,
}

/// Remove what lint never reads and nobody should print: managed fields,
/// status, the last-applied annotation (it may hold a whole Secret).
pub fn trim(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(|a| a.as_object_mut()) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    v
}

/// A Secret as lint may see it: its name, namespace and key names.
fn secret_keys(s: &core::Secret) -> Value {
    let mut keys = serde_json::Map::new();
    for k in s
        .data
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .chain(s.string_data.iter().flatten().map(|(k, _)| k))
    {
        keys.insert(k.clone(), Value::Null);
    }
    serde_json::json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": s.metadata.name, "namespace": s.metadata.namespace}, "data": keys})
}

fn values<T: serde::Serialize>(items: Vec<T>) -> impl Iterator<Item = Value> {
    // A typed object the client just decoded always serialises.
    items
        .into_iter()
        .filter_map(|o| serde_json::to_value(&o).ok())
}

/// List the namespace's objects (`None`: every namespace), and the nodes
/// when `nodes` is true. A list that fails is an error naming it, except
/// the claims' and the nodes', which are said in [`Manifests`].
pub async fn list(
    client: &kube::Client,
    namespace: Option<&str>,
    nodes: bool,
) -> Result<Manifests, KubeError> {
    macro_rules! list {
        ($t:ty) => {{
            let api: Api<$t> = match namespace {
                None => Api::all(client.clone()),
                Some(ns) => Api::namespaced(client.clone(), ns),
            };
            async move {
                let lp = ListParams::default();
                crate::retry::read(3, || api.list(&lp)).await
            }
        }};
    }
    let node_list = async {
        if nodes {
            let api: Api<core::Node> = Api::all(client.clone());
            let lp = ListParams::default();
            Some(crate::retry::read(3, || api.list(&lp)).await)
        } else {
            None
        }
    };
    let (deps, stss, dss, jobs, cjs, pods, cms, secrets, pvcs, node_list) = futures::join!(
        list!(apps::Deployment),
        list!(apps::StatefulSet),
        list!(apps::DaemonSet),
        list!(batch::Job),
        list!(batch::CronJob),
        list!(core::Pod),
        list!(core::ConfigMap),
        list!(core::Secret),
        list!(core::PersistentVolumeClaim),
        node_list,
    );
    let failed = |what: &'static str| move |source| KubeError::List { what, source };
    let mut m = Manifests::default();
    let mut add = |kind: &'static str, vs: &mut dyn Iterator<Item = Value>| {
        m.objects.extend(vs.map(|v| (kind, trim(v))));
    };
    add(
        "Deployment",
        &mut values(deps.map_err(failed("deployments"))?.items),
    );
    add(
        "StatefulSet",
        &mut values(stss.map_err(failed("statefulsets"))?.items),
    );
    add(
        "DaemonSet",
        &mut values(dss.map_err(failed("daemonsets"))?.items),
    );
    add("Job", &mut values(jobs.map_err(failed("jobs"))?.items));
    add(
        "CronJob",
        &mut values(cjs.map_err(failed("cronjobs"))?.items),
    );
    // Pods a controller owns are linted through their workload.
    let bare = pods.map_err(failed("pods"))?.items.into_iter().filter(|p| {
        p.metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty())
    });
    add("Pod", &mut values(bare.collect()));
    add(
        "ConfigMap",
        &mut values(cms.map_err(failed("configmaps"))?.items),
    );
    // Claims only size the model caches: one the credentials may not list
    // leaves that check out, not the lint.
    match pvcs {
        Ok(list) => add("PersistentVolumeClaim", &mut values(list.items)),
        Err(e) => m.pvcs_error = Some(e.to_string()),
    }
    let secrets = secrets.map_err(failed("secrets"))?.items;
    add("Secret", &mut secrets.iter().map(secret_keys));
    m.nodes = node_list.map(|r| {
        r.map(|l| values(l.items).collect())
            .map_err(|e| e.to_string())
    });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_drops_status_managed_fields_and_last_applied() {
        let v = trim(serde_json::json!({
            "metadata": {"name": "a", "managedFields": [{}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{secret}", "keep": "1"}},
            "spec": {}, "status": {"replicas": 1}}));
        assert_eq!(
            v,
            serde_json::json!({"metadata": {"name": "a", "annotations": {"keep": "1"}}, "spec": {}})
        );
    }

    #[test]
    fn a_secret_keeps_its_key_names_only() {
        let s: core::Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "n"},
            "data": {"token": "aHVudGVy"}, "stringData": {"pw": "hunter2"}}))
        .unwrap();
        let v = secret_keys(&s);
        assert_eq!(v["data"], serde_json::json!({"token": null, "pw": null}));
        assert!(!v.to_string().contains("hunter2") && !v.to_string().contains("aHVudGVy"));
    }
}
