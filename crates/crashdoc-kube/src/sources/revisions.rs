//! A workload's revisions (issue 11): once the owner chain is known (the
//! first wave's `deployment.json`, `statefulset.json` or `daemonset.json`),
//! its ReplicaSets or ControllerRevisions and its pods, each listed once by
//! the workload's selector, and the nodes those pods run on (the node the
//! node source read is not read again). Every pod of a workload gets the
//! same files from one read.
//!
//! Which objects belong to the workload follows kubectl's `rollout history`
//! (kubectl v0.36.3, pkg/polymorphichelpers/history.go, `controlledHistory`:
//! list by the selector, keep what the workload controls). A Deployment's
//! ReplicaSets are named `DEPLOYMENT-HASH` (kubernetes v1.36.3,
//! pkg/controller/deployment/sync.go, `generateReplicaSetName`).

use super::shared::{NodeRead, workload_key};
use super::{Ctx, Namespaced, Output, Rule, Source, json, missing};
use crate::collect::{selector_string, unhealthy};
use crashdoc_core::ingest::bundle::BundleFile;
use crashdoc_core::model::Missing;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, ListParams};
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Revisions;

static RBAC: &[Rule] = &[
    Rule::new("apps", "replicasets", &["list"]),
    Rule::new("apps", "controllerrevisions", &["list"]),
    Rule::new("", "pods", &["list"]),
    Rule::new("", "nodes", &["get"]),
];

/// Nodes read per workload at most (a DaemonSet has a pod on every node).
pub const MAX_NODES: usize = 16;

/// The workload a pod's owner chain ends in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub kind: &'static str,
    pub name: String,
    pub uid: Option<String>,
    pub selector: String,
}

fn workload_of(
    kind: &'static str,
    meta: &ObjectMeta,
    sel: Option<&LabelSelector>,
) -> Option<Workload> {
    let selector = selector_string(sel?);
    (!selector.is_empty()).then(|| Workload {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        selector,
    })
}

/// The Deployment, StatefulSet or DaemonSet among a pod's first-wave files.
pub fn workload(files: &[(BundleFile, Vec<u8>)]) -> Option<Workload> {
    files.iter().find_map(|(f, b)| match f {
        BundleFile::Deployment => {
            let d: Deployment = serde_json::from_slice(b).ok()?;
            workload_of("Deployment", &d.metadata, Some(&d.spec.selector))
        }
        BundleFile::StatefulSet => {
            let s: StatefulSet = serde_json::from_slice(b).ok()?;
            workload_of("StatefulSet", &s.metadata, Some(&s.spec.selector))
        }
        BundleFile::DaemonSet => {
            let d: DaemonSet = serde_json::from_slice(b).ok()?;
            workload_of("DaemonSet", &d.metadata, Some(&d.spec.selector))
        }
        _ => None,
    })
}

/// Whether `meta`'s controller is the object (kind, name, uid): by uid
/// when both have one, else by kind and name.
fn controlled_by(meta: &ObjectMeta, kind: &str, name: &str, uid: Option<&str>) -> bool {
    meta.owner_references.iter().flatten().any(|o| {
        o.controller == Some(true)
            && o.kind == kind
            && match uid {
                Some(u) if !o.uid.is_empty() => o.uid == u,
                _ => o.name == name,
            }
    })
}

/// The pods that belong to the workload: controlled by one of its
/// ReplicaSets (a Deployment; `rs` None when they could not be listed) or
/// by the workload itself.
fn own_pods(w: &Workload, rs: Option<&[ReplicaSet]>, pods: Vec<Pod>) -> Vec<Pod> {
    pods.into_iter()
        .filter(|p| match w.kind {
            "Deployment" => match rs {
                Some(rs) => {
                    rs.iter().any(|r| {
                        controlled_by(
                            &p.metadata,
                            "ReplicaSet",
                            r.metadata.name.as_deref().unwrap_or_default(),
                            r.metadata.uid.as_deref(),
                        )
                    }) || p.metadata.owner_references.iter().flatten().any(|o| {
                        o.controller == Some(true)
                            && o.kind == "ReplicaSet"
                            && o.name.starts_with(&format!("{}-", w.name))
                    })
                }
                None => true,
            },
            kind => controlled_by(&p.metadata, kind, &w.name, w.uid.as_deref()),
        })
        .collect()
}

/// The nodes to read: unhealthy pods' nodes and healthy pods' nodes in
/// turn (both sides of a comparison), at most [`MAX_NODES`]; and how many
/// were left out.
pub fn nodes_to_read(pods: &[Pod]) -> (Vec<String>, usize) {
    let mut seen = BTreeSet::new();
    let mut side = |healthy: bool| -> Vec<String> {
        pods.iter()
            .filter(|p| unhealthy(p) != healthy)
            .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
            .filter(|n| seen.insert(n.clone()))
            .collect()
    };
    let (bad, good) = (side(false), side(true));
    let mut out = Vec::new();
    for i in 0..bad.len().max(good.len()) {
        out.extend(bad.get(i).cloned());
        out.extend(good.get(i).cloned());
    }
    let left = out.len().saturating_sub(MAX_NODES);
    out.truncate(MAX_NODES);
    (out, left)
}

fn list_file<T: serde::Serialize>(items: &[T]) -> Vec<u8> {
    json(
        &serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}),
    )
}

/// List one kind by the workload's selector, counted and retried.
async fn list<K>(cx: &Ctx<'_>, sel: &str) -> Result<Vec<K>, kube::Error>
where
    K: Namespaced,
{
    let api: Api<K> = cx.api();
    let lp = ListParams::default().labels(sel);
    cx.count();
    let mut items = crate::retry::read(3, || api.list(&lp)).await?.items;
    for x in &mut items {
        x.meta_mut().managed_fields = None;
    }
    Ok(items)
}

/// Everything about one workload's revisions, read once.
async fn gather(cx: &Ctx<'_>, w: &Workload) -> Output {
    let mut out = Output::default();
    let what = |res: &str| format!("{res} of {} {}", w.kind.to_ascii_lowercase(), w.name);
    let key = workload_key(cx.namespace, w.kind, &w.name);
    let seed = cx.shared.seeded(&key);
    let pods = if w.kind == "Deployment" {
        let (rs, pods) = match seed {
            Some(s) => (Ok(s.replica_sets), Ok(s.pods)),
            None => futures::join!(
                list::<ReplicaSet>(cx, &w.selector),
                list::<Pod>(cx, &w.selector)
            ),
        };
        let rs = match rs {
            Ok(rs) => {
                let mut rs: Vec<ReplicaSet> = rs
                    .into_iter()
                    .filter(|r| controlled_by(&r.metadata, w.kind, &w.name, w.uid.as_deref()))
                    .collect();
                for r in &mut rs {
                    r.metadata.managed_fields = None;
                }
                out.files.push((BundleFile::ReplicaSets, list_file(&rs)));
                Some(rs)
            }
            Err(e) => {
                out.missing
                    .push(missing(what("replicasets"), &e, "list", &RBAC[0]));
                None
            }
        };
        pods.map(|p| own_pods(w, rs.as_deref(), p))
    } else {
        let (crs, pods) = futures::join!(
            list::<ControllerRevision>(cx, &w.selector),
            list::<Pod>(cx, &w.selector)
        );
        match crs {
            Ok(crs) => {
                let crs: Vec<ControllerRevision> = crs
                    .into_iter()
                    .filter(|r| controlled_by(&r.metadata, w.kind, &w.name, w.uid.as_deref()))
                    .collect();
                out.files
                    .push((BundleFile::ControllerRevisions, list_file(&crs)));
            }
            Err(e) => out
                .missing
                .push(missing(what("controllerrevisions"), &e, "list", &RBAC[1])),
        }
        pods.map(|p| own_pods(w, None, p))
    };
    let pods = match pods {
        Ok(mut p) => {
            for x in &mut p {
                x.metadata.managed_fields = None;
            }
            p
        }
        Err(e) => {
            out.missing
                .push(missing(what("pods"), &e, "list", &RBAC[2]));
            return out;
        }
    };
    out.files.push((BundleFile::WorkloadPods, list_file(&pods)));
    nodes(cx, &pods, &mut out).await;
    out
}

/// The nodes of the workload's pods, each read once per collection.
async fn nodes(cx: &Ctx<'_>, pods: &[Pod], out: &mut Output) {
    let (names, left) = nodes_to_read(pods);
    let reads: Vec<NodeRead> = join_all(names.iter().map(|n| cx.node(n))).await;
    let mut items = Vec::new();
    let mut failed = None;
    for (n, r) in names.iter().zip(reads) {
        match r {
            Ok(node) => items.push(node),
            Err(e) => failed = failed.or(Some((n.clone(), e))),
        }
    }
    if let Some((n, e)) = failed {
        out.missing.push(missing(
            format!("node {n} (of the workload's pods)"),
            &e,
            "get",
            &RBAC[3],
        ));
    }
    if left > 0 {
        out.missing.push(Missing {
            what: format!("{left} more nodes of the workload's pods"),
            why: format!("at most {MAX_NODES} nodes are read per workload"),
            hint: None,
        });
    }
    if !items.is_empty() {
        let items: Vec<&k8s_openapi::api::core::v1::Node> = items.iter().map(Arc::as_ref).collect();
        out.files.push((BundleFile::Nodes, list_file(&items)));
    }
}

impl Source for Revisions {
    fn name(&self) -> &'static str {
        "revisions"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let Some(w) = workload(cx.prior) else {
                return Output::default();
            };
            let key = workload_key(cx.namespace, w.kind, &w.name);
            let shared = cx.shared.workload(&key, || gather(cx, &w)).await;
            Output::clone(&shared)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, restarts: i32, owner: (&str, &str)) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "apps/v1",
                "kind": owner.0, "name": owner.1, "uid": "", "controller": true}]},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "i",
                "imageID": "", "ready": restarts == 0, "restartCount": restarts,
                "state": {"running": {}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_workload_comes_from_the_owner_files() {
        let d = json!({"metadata": {"name": "web", "uid": "d1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {}}});
        let files = vec![
            (BundleFile::ReplicaSet, b"{}".to_vec()),
            (BundleFile::Deployment, serde_json::to_vec(&d).unwrap()),
        ];
        let w = workload(&files).unwrap();
        assert_eq!(
            (w.kind, w.name.as_str(), w.selector.as_str()),
            ("Deployment", "web", "app=web")
        );
        assert_eq!(w.uid.as_deref(), Some("d1"));
        // Near misses: a ReplicaSet alone, a Job, an empty selector.
        assert!(workload(&files[..1]).is_none());
        assert!(workload(&[(BundleFile::Job, b"{}".to_vec())]).is_none());
        let empty = json!({"metadata": {"name": "db"}, "spec": {"selector": {}, "serviceName": "", "template": {}}});
        assert!(
            workload(&[(BundleFile::StatefulSet, serde_json::to_vec(&empty).unwrap())]).is_none()
        );
    }

    #[test]
    fn only_the_workloads_own_pods_are_kept() {
        let w = Workload {
            kind: "Deployment",
            name: "web".into(),
            uid: None,
            selector: "app=web".into(),
        };
        let rs: ReplicaSet =
            serde_json::from_value(json!({"metadata": {"name": "web-1a"}})).unwrap();
        let pods = vec![
            pod("a", "n1", 0, ("ReplicaSet", "web-1a")),
            pod("b", "n1", 0, ("ReplicaSet", "web-2b")),
            pod("c", "n1", 0, ("ReplicaSet", "webshop-3c")),
            pod("d", "n1", 0, ("StatefulSet", "web")),
        ];
        let kept: Vec<_> = own_pods(&w, Some(&[rs]), pods.clone())
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        assert_eq!(kept, ["a", "b"]);
        let sts = Workload {
            kind: "StatefulSet",
            ..w.clone()
        };
        let kept: Vec<_> = own_pods(&sts, None, pods)
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        assert_eq!(kept, ["d"]);
    }

    #[test]
    fn nodes_of_failing_and_healthy_pods_alternate_up_to_the_limit() {
        let o = ("ReplicaSet", "web-1");
        let pods = vec![
            pod("a", "bad-1", 3, o),
            pod("b", "bad-1", 2, o),
            pod("c", "good-1", 0, o),
            pod("d", "bad-2", 1, o),
            pod("e", "good-2", 0, o),
        ];
        let (names, left) = nodes_to_read(&pods);
        assert_eq!(names, ["bad-1", "good-1", "bad-2", "good-2"]);
        assert_eq!(left, 0);
        let many: Vec<Pod> = (0..40)
            .map(|i| pod(&format!("p{i}"), &format!("n{i}"), i % 2, o))
            .collect();
        let (names, left) = nodes_to_read(&many);
        assert_eq!(names.len(), MAX_NODES);
        assert_eq!(left, 40 - MAX_NODES);
        // Both sides are represented within the limit.
        assert!(names.contains(&"n0".to_string()) && names.contains(&"n1".to_string()));
    }
}
