//! The node the pod runs on (cluster-scoped), read once per collection
//! (see [`super::shared`]).

use super::{Ctx, Output, Rule, Source, json, missing};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::BoxFuture;

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
            match cx.node(&n).await {
                Ok(node) => out.files.push((BundleFile::Node, json(&*node))),
                Err(e) => out.missing.push(missing("node", &e, "get", &RBAC[0])),
            }
            out
        })
    }
}
