//! The pod's ServiceAccount: whether it exists.

use super::shared::PerObject;
use super::{Ctx, Output, Rule, Source, missing, not_found};
use crashdoc_core::ingest::bundle::{Reference, ReferenceKind};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::Api;
use std::collections::BTreeMap;

pub struct ServiceAccounts;

static RBAC: &[Rule] = &[Rule::new("", "serviceaccounts", &["get"])];

impl Source for ServiceAccounts {
    fn name(&self) -> &'static str {
        "serviceaccount"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let sa = cx
                .pod
                .spec
                .as_ref()
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_else(|| "default".into());
            let key = format!("{}/{sa}", cx.namespace);
            cx.shared
                .per_object(PerObject::ServiceAccount, &key, || look_up(cx, sa))
                .await
        })
    }
}

/// Whether the ServiceAccount `sa` of the pod's namespace exists.
async fn look_up(cx: &Ctx<'_>, sa: String) -> Output {
    let api: Api<ServiceAccount> = cx.api();
    let mut out = Output::default();
    let exists = match cx.get(&api, &sa).await {
        Ok(_) => true,
        Err(e) if not_found(&e) => false,
        Err(e) => {
            out.missing
                .push(missing("serviceaccount", &e, "get", &RBAC[0]));
            return out;
        }
    };
    out.references.push(Reference {
        kind: ReferenceKind::ServiceAccount,
        name: sa,
        exists: Some(exists),
        keys: BTreeMap::new(),
        changed: None,
    });
    out
}
