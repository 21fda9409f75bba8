//! The node the pod runs on (cluster-scoped).

use super::{Ctx, Output, Rule, Source, json, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

pub struct NodeSource;

static RBAC: &[Rule] = &[Rule::new("", "nodes", &["get"])];

impl Source for NodeSource {
    fn name(&self) -> &'static str {
        "node"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let mut out = Output::default();
            let Some(n) = cx.pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                return out;
            };
            let api: Api<Node> = Api::all(cx.client.clone());
            match cx.get(&api, &n).await {
                Ok(mut node) => {
                    node.metadata.managed_fields = None;
                    out.files.push((BundleFile::Node, json(&node)));
                }
                Err(e) => out.missing.push(missing("node", &e, "get", &RBAC[0])),
            }
            out
        })
    }
}
