//! The owner chain: ReplicaSet -> Deployment, StatefulSet, DaemonSet, Job,
//! as far as it goes.

use super::shared::{PerObject, workload_key};
use super::{Ctx, Namespaced, Output, Rule, Source, json, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;

pub struct OwnerChain;

static RBAC: &[Rule] = &[
    Rule::new("apps", "replicasets", &["get"]),
    Rule::new("apps", "deployments", &["get"]),
    Rule::new("apps", "statefulsets", &["get"]),
    Rule::new("apps", "daemonsets", &["get"]),
    Rule::new("batch", "jobs", &["get"]),
];

/// Get one owner into `out`; the object when it was read.
async fn fetch<K>(
    cx: &Ctx<'_>,
    out: &mut Output,
    kind: &str,
    name: &str,
    file: BundleFile,
    rule: &Rule,
) -> Option<K>
where
    K: Namespaced + serde::Serialize,
{
    let api: Api<K> = cx.api();
    match cx.get(&api, name).await {
        Ok(mut x) => {
            x.meta_mut().managed_fields = None;
            out.files.push((file, json(&x)));
            Some(x)
        }
        Err(e) => {
            out.missing
                .push(missing(format!("owner {kind}/{name}"), &e, "get", rule));
            None
        }
    }
}

impl Source for OwnerChain {
    fn name(&self) -> &'static str {
        "owner"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let Some(o) = cx
                .pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
            else {
                return Output::default();
            };
            let (kind, name) = (o.kind.as_str(), o.name.as_str());
            let key = workload_key(cx.namespace, kind, name);
            cx.shared
                .per_object(PerObject::Owner, &key, || chain(cx, kind, name))
                .await
        })
    }
}

/// The chain from the pod's controller `kind/name` up.
async fn chain(cx: &Ctx<'_>, kind: &str, name: &str) -> Output {
    let mut out = Output::default();
    match kind {
        "ReplicaSet" => {
            let rs: Option<ReplicaSet> =
                fetch(cx, &mut out, kind, name, BundleFile::ReplicaSet, &RBAC[0]).await;
            if let Some(d) = rs.and_then(|rs| {
                rs.metadata
                    .owner_references
                    .into_iter()
                    .flatten()
                    .find(|o| o.kind == "Deployment")
            }) {
                let _: Option<Deployment> = fetch(
                    cx,
                    &mut out,
                    "Deployment",
                    &d.name,
                    BundleFile::Deployment,
                    &RBAC[1],
                )
                .await;
            }
        }
        "StatefulSet" => {
            let _: Option<StatefulSet> =
                fetch(cx, &mut out, kind, name, BundleFile::StatefulSet, &RBAC[2]).await;
        }
        "DaemonSet" => {
            let _: Option<DaemonSet> =
                fetch(cx, &mut out, kind, name, BundleFile::DaemonSet, &RBAC[3]).await;
        }
        "Job" => {
            let _: Option<Job> = fetch(cx, &mut out, kind, name, BundleFile::Job, &RBAC[4]).await;
        }
        _ => {}
    }
    out
}
