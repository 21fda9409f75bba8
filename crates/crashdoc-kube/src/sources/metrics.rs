//! Usage per container from metrics.k8s.io, when the cluster serves it, as
//! `kubectl top pod --containers` prints it (which `analyze` reads).

use super::{Ctx, Output, Rule, Source, missing, not_found};
use crashdoc_core::ingest::bundle::BundleFile;
use crashdoc_core::model::Missing;
use futures::future::BoxFuture;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject};

pub struct Metrics;

static RBAC: &[Rule] = &[Rule::new("metrics.k8s.io", "pods", &["get"])];

/// `top-pod.txt` from a PodMetrics object.
pub fn top_text(pod: &str, m: &DynamicObject) -> String {
    let mut top = String::from("POD NAME CPU(cores) MEMORY(bytes)\n");
    for c in m
        .data
        .get("containers")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let get = |k: &str| {
            c.pointer(&format!("/usage/{k}"))
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string()
        };
        let cname = c.get("name").and_then(|v| v.as_str()).unwrap_or("?");
        top.push_str(&format!("{pod} {cname} {} {}\n", get("cpu"), get("memory")));
    }
    top
}

/// The group itself is absent.
fn not_served() -> Missing {
    Missing {
        what: "usage".into(),
        why: "the cluster does not serve metrics.k8s.io (no metrics-server)".into(),
        hint: None,
    }
}

impl Source for Metrics {
    fn name(&self) -> &'static str {
        "metrics"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let ar = ApiResource {
                group: "metrics.k8s.io".into(),
                version: "v1beta1".into(),
                api_version: "metrics.k8s.io/v1beta1".into(),
                kind: "PodMetrics".into(),
                plural: "pods".into(),
            };
            let api: Api<DynamicObject> =
                Api::namespaced_with(cx.client.clone(), cx.namespace, &ar);
            let mut out = Output::default();
            if cx.shared.metrics_absent() {
                out.missing.push(not_served());
                return out;
            }
            match cx.get(&api, cx.name).await {
                Ok(m) => out
                    .files
                    .push((BundleFile::Top, top_text(cx.name, &m).into_bytes())),
                // metrics-server serves the group but has no sample of this
                // pod yet (a NotFound Status): nothing to say.
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                // The group itself is absent: a bare 404 page, not a Status.
                Err(e) if not_found(&e) => {
                    cx.shared.set_metrics_absent();
                    out.missing.push(not_served());
                }
                Err(e) => out
                    .missing
                    .push(missing("usage (metrics.k8s.io)", &e, "get", &RBAC[0])),
            }
            out
        })
    }
}
