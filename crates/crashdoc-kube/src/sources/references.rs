//! The ConfigMaps and Secrets the pod references: key names and sizes only.
//! A Secret's values are read by the API client and dropped here.

use super::{Ctx, Output, Rule, Source, missing, not_found};
use crashdoc_core::ingest::bundle::{Reference, ReferenceKind};
use crashdoc_core::model::Missing;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use std::collections::{BTreeMap, BTreeSet};

pub struct References;

static RBAC: &[Rule] = &[
    Rule::new("", "configmaps", &["get"]),
    Rule::new("", "secrets", &["get"]),
];

type Keys = BTreeMap<String, Option<u64>>;

/// What is kept of a ConfigMap or Secret: key names and sizes, and when it
/// last changed.
type Read = (Keys, Option<String>);

/// When an object last changed: the newest `metadata.managedFields[].time`
/// (every apply, update or patch records its time there), else its
/// `creationTimestamp`; RFC 3339 as the API server writes it.
pub fn changed(meta: &ObjectMeta) -> Option<String> {
    let newest = meta
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.time.as_ref())
        .max()
        .or(meta.creation_timestamp.as_ref())?;
    serde_json::to_value(newest)
        .ok()?
        .as_str()
        .map(str::to_string)
}

/// ConfigMaps and Secrets the pod references (env, envFrom, volumes, projected).
pub fn referenced_objects(pod: &Pod) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut cms = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    let Some(spec) = &pod.spec else {
        return (cms, secrets);
    };
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
    {
        for e in c.env.iter().flatten() {
            if let Some(vf) = &e.value_from {
                if let Some(r) = &vf.config_map_key_ref {
                    cms.insert(r.name.clone());
                }
                if let Some(r) = &vf.secret_key_ref {
                    secrets.insert(r.name.clone());
                }
            }
        }
        for ef in c.env_from.iter().flatten() {
            if let Some(r) = &ef.config_map_ref {
                cms.insert(r.name.clone());
            }
            if let Some(r) = &ef.secret_ref {
                secrets.insert(r.name.clone());
            }
        }
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(c) = &v.config_map {
            cms.insert(c.name.clone());
        }
        if let Some(s) = v.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            secrets.insert(s);
        }
        for src in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(c) = &src.config_map {
                cms.insert(c.name.clone());
            }
            if let Some(s) = &src.secret {
                secrets.insert(s.name.clone());
            }
        }
    }
    (cms, secrets)
}

fn config_map_keys(cm: ConfigMap) -> Read {
    let mut keys: Keys = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), Some(v.len() as u64)))
        .collect();
    keys.extend(
        cm.binary_data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), Some(v.0.len() as u64))),
    );
    (keys, changed(&cm.metadata))
}

/// Key names and sizes; the Secret (and its values) is dropped on return.
fn secret_keys(s: Secret) -> Read {
    let mut keys: Keys = s
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), Some(v.0.len() as u64)))
        .collect();
    keys.extend(
        s.string_data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), Some(v.len() as u64))),
    );
    (keys, changed(&s.metadata))
}

fn record(
    out: &mut Output,
    kind: ReferenceKind,
    rule: &Rule,
    name: String,
    r: Result<Read, kube::Error>,
) {
    let (exists, keys, changed) = match r {
        Ok((keys, changed)) => (Some(true), keys, changed),
        Err(e) if not_found(&e) => (Some(false), BTreeMap::new(), None),
        Err(e) => {
            let what = format!("{} {name}", kind.as_str().to_ascii_lowercase());
            out.missing.push(missing(what, &e, "get", rule));
            (None, BTreeMap::new(), None)
        }
    };
    out.references.push(Reference {
        kind,
        name,
        exists,
        keys,
        changed,
    });
}

impl Source for References {
    fn name(&self) -> &'static str {
        "references"
    }
    fn rbac(&self) -> &'static [Rule] {
        RBAC
    }
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output> {
        Box::pin(async move {
            let (cms, secrets) = referenced_objects(cx.pod);
            let secrets_on = cx.opts.secret_keys;
            let cm_api: Api<ConfigMap> = cx.api();
            let secret_api: Api<Secret> = cx.api();
            let cm_f = join_all(
                cms.iter()
                    .map(|n| async { cx.get(&cm_api, n).await.map(config_map_keys) }),
            );
            let secret_f = join_all(
                secrets
                    .iter()
                    .filter(|_| secrets_on)
                    .map(|n| async { cx.get(&secret_api, n).await.map(secret_keys) }),
            );
            let (cm_r, secret_r) = futures::join!(cm_f, secret_f);
            let mut out = Output::default();
            for (n, r) in cms.into_iter().zip(cm_r) {
                record(&mut out, ReferenceKind::ConfigMap, &RBAC[0], n, r);
            }
            let secrets_read = secrets.len();
            for (n, r) in secrets.into_iter().filter(|_| secrets_on).zip(secret_r) {
                record(&mut out, ReferenceKind::Secret, &RBAC[1], n, r);
            }
            if !secrets_on && secrets_read > 0 {
                out.missing.push(Missing {
                    what: "secret key names".into(),
                    why: "secrets were not read (key-name checks are off)".into(),
                    hint: None,
                });
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(v: serde_json::Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn changed_is_the_newest_managed_fields_time() {
        let m = meta(serde_json::json!({
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-11-01T10:00:00Z"},
                {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-30T08:15:02Z"},
                {"manager": "helm", "operation": "Update", "time": "2026-11-20T00:00:00Z"}
            ]
        }));
        assert_eq!(changed(&m).as_deref(), Some("2026-11-30T08:15:02Z"));
        // Near misses: no managedFields (stripped, or an old object) falls
        // back to the creation; nothing at all is unknown.
        let m = meta(serde_json::json!({"creationTimestamp": "2026-11-01T10:00:00Z"}));
        assert_eq!(changed(&m).as_deref(), Some("2026-11-01T10:00:00Z"));
        assert_eq!(changed(&ObjectMeta::default()), None);
    }

    #[test]
    fn a_secret_keeps_key_names_and_its_change_time_only() {
        let s: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "managedFields": [{"manager": "m", "operation": "Update",
                "time": "2026-12-01T09:00:00Z"}]},
            "data": {"token": "c2VjcmV0LXZhbHVl"}
        }))
        .unwrap();
        let (keys, when) = secret_keys(s);
        assert_eq!(keys.get("token"), Some(&Some(12)));
        assert_eq!(when.as_deref(), Some("2026-12-01T09:00:00Z"));
    }
}
