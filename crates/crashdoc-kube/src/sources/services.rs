//! The second wave: the Services behind the hosts the first wave's logs fail
//! to reach (chosen by crashdoc-core's `hosts::unreachable_hosts`).

use super::{Ctx, Output, Rule, Source, not_found};
use crashdoc_core::ingest::bundle::{Reference, ReferenceKind};
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use std::collections::BTreeMap;

pub struct Services;

static RBAC: &[Rule] = &[Rule::new("", "services", &["get"])];

/// Where a host's Service would be: `db`, `db.ns`, `db.ns.svc.cluster.local`
/// give (name, namespace); None for a name that cannot be a Service.
pub fn service_of(host: &str, default_namespace: &str) -> Option<(String, String)> {
    let mut parts = host.split('.');
    let name = parts.next()?.to_string();
    let ns = parts
        .next()
        .filter(|n| *n != "svc")
        .map(str::to_string)
        .unwrap_or_else(|| default_namespace.to_string());
    if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((name, ns))
}

impl Source for Services {
    fn name(&self) -> &'static str {
        "services"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let targets: Vec<(String, String)> = cx
                .hosts
                .iter()
                .filter_map(|h| service_of(h, cx.default_namespace))
                .collect();
            let results = join_all(targets.iter().map(|(name, ns)| async move {
                let api: Api<Service> = Api::namespaced(cx.client.clone(), ns);
                cx.get(&api, name).await
            }))
            .await;
            let mut out = Output::default();
            for ((name, ns), r) in targets.into_iter().zip(results) {
                // Unreadable (forbidden, failing): exists unknown, as before.
                let exists = match r {
                    Ok(_) => Some(true),
                    Err(e) if not_found(&e) => Some(false),
                    Err(_) => None,
                };
                out.references.push(Reference {
                    kind: ReferenceKind::Service,
                    name: if ns == cx.default_namespace {
                        name
                    } else {
                        format!("{name}.{ns}")
                    },
                    exists,
                    keys: BTreeMap::new(),
                    changed: None,
                });
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_map_to_their_service() {
        assert_eq!(service_of("db", "shop"), Some(("db".into(), "shop".into())));
        assert_eq!(
            service_of("db.data.svc.cluster.local", "shop"),
            Some(("db".into(), "data".into()))
        );
        assert_eq!(
            service_of("db.svc", "shop"),
            Some(("db".into(), "shop".into()))
        );
        assert_eq!(service_of("8080", "shop"), None);
    }
}
