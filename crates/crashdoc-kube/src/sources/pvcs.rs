//! The PersistentVolumeClaims the pod mounts, as one List.

use super::{Ctx, Output, Rule, Source, json, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::Api;

pub struct Pvcs;

static RBAC: &[Rule] = &[Rule::new("", "persistentvolumeclaims", &["get"])];

impl Source for Pvcs {
    fn name(&self) -> &'static str {
        "pvcs"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let claims: Vec<String> = cx
                .pod
                .spec
                .iter()
                .flat_map(|s| s.volumes.iter().flatten())
                .filter_map(|v| {
                    v.persistent_volume_claim
                        .as_ref()
                        .map(|c| c.claim_name.clone())
                })
                .collect();
            let api: Api<PersistentVolumeClaim> = cx.api();
            let results = join_all(claims.iter().map(|c| cx.get(&api, c))).await;
            let mut out = Output::default();
            let mut items = Vec::new();
            for (c, r) in claims.iter().zip(results) {
                match r {
                    Ok(mut p) => {
                        p.metadata.managed_fields = None;
                        items.push(p);
                    }
                    Err(e) => out.missing.push(missing(
                        format!("persistentvolumeclaim {c}"),
                        &e,
                        "get",
                        &RBAC[0],
                    )),
                }
            }
            if !items.is_empty() {
                out.files.push((
                    BundleFile::Pvc,
                    json(&serde_json::json!({"kind": "List", "apiVersion": "v1", "items": items})),
                ));
            }
            out
        })
    }
}
