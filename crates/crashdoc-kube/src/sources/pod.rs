//! The pod itself, as `pod.json` (read by the resolve step: no request here).

use super::{Ctx, Output, Rule, Source, json};
use crashdoc_core::ingest::bundle::BundleFile;
use futures::future::BoxFuture;

pub struct PodSource;

static RBAC: &[Rule] = &[Rule::new("", "pods", &["get", "list", "watch"])];

impl Source for PodSource {
    fn name(&self) -> &'static str {
        "pod"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let mut pod = cx.pod.clone();
            pod.metadata.managed_fields = None;
            Output {
                files: vec![(BundleFile::Pod, json(&pod))],
                ..Default::default()
            }
        })
    }
}
