//! Each kind of evidence is a source (troubleshoot's collector interface): it
//! names itself, declares the RBAC rules it needs (get/list/watch only), and
//! collects one pod's evidence into typed bundle files, references and
//! [`Missing`] entries. A source never fails: what it could not read is data
//! in the bundle. The driver in [`crate::collect`] runs them in waves.

pub mod events;
pub mod logs;
pub mod metrics;
pub mod node;
pub mod owner;
pub mod pod;
pub mod pvcs;
pub mod references;
pub mod revisions;
pub mod service_account;
pub mod services;
pub mod shared;

use crate::CollectOptions;
use crashdoc_core::ingest::bundle::{BundleFile, Reference};
use crashdoc_core::model::Missing;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::Api;
use std::sync::atomic::{AtomicU32, Ordering};

/// One RBAC rule a source needs: API group (`""` for core), resource, verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub group: &'static str,
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
}

impl Rule {
    pub const fn new(
        group: &'static str,
        resource: &'static str,
        verbs: &'static [&'static str],
    ) -> Rule {
        Rule {
            group,
            resource,
            verbs,
        }
    }

    /// `pods/log`, `pods.metrics.k8s.io`: the resource as RBAC hints name it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// What a source collected for one pod.
#[derive(Debug, Default, Clone)]
pub struct Output {
    pub files: Vec<(BundleFile, Vec<u8>)>,
    /// Entries of `references.json`.
    pub references: Vec<Reference>,
    /// Entries of `missing.json`.
    pub missing: Vec<Missing>,
}

/// One pod, and what a source may use to read its evidence.
pub struct Ctx<'a> {
    pub client: &'a kube::Client,
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The collector's namespace (where a bare host name is looked up).
    pub default_namespace: &'a str,
    /// The pod's name.
    pub name: &'a str,
    pub pod: &'a Pod,
    pub opts: &'a CollectOptions,
    /// Events already listed for the pod (a scan lists them once per namespace).
    pub events: Option<&'a [Event]>,
    /// The hosts the pod's logs fail to reach (second wave only).
    pub hosts: &'a [String],
    /// The pod's files from the waves before this one (the owner chain).
    pub prior: &'a [(BundleFile, Vec<u8>)],
    /// What the sources of the collection read once for all (nodes,
    /// workloads' revisions).
    pub shared: &'a shared::Shared,
    /// The runs whose logs are wanted, by container, instead of each
    /// container's last termination (a watch's termination: [`crate::runs`]).
    pub runs: &'a [(String, crate::runs::Run)],
    pub(crate) requests: &'a AtomicU32,
}

/// A namespaced kind read whole from the API, by get or list: what
/// `Api::namespaced` and its reads ask of it.
pub(crate) trait Namespaced:
    kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType: Default>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType: Default>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
{
}

impl Ctx<'_> {
    /// Count one API request.
    pub fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The API of a namespaced kind in the pod's namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    /// Get one object, counted, retried on transient errors.
    pub async fn get<K>(&self, api: &Api<K>, name: &str) -> Result<K, kube::Error>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        self.count();
        crate::retry::read(3, || api.get(name)).await
    }

    /// A node (cluster-scoped), read at most once per collection,
    /// managedFields stripped.
    pub async fn node(&self, name: &str) -> shared::NodeRead {
        self.shared
            .node(name, || async {
                let api: Api<Node> = Api::all(self.client.clone());
                match self.get(&api, name).await {
                    Ok(mut n) => {
                        n.metadata.managed_fields = None;
                        Ok(std::sync::Arc::new(n))
                    }
                    Err(e) => Err(std::sync::Arc::new(e)),
                }
            })
            .await
    }
}

/// A kind of evidence.
pub trait Source: Sync {
    /// Its name (`logs`, `events`, ...).
    fn name(&self) -> &'static str;
    /// The RBAC rules its requests need.
    fn rbac(&self) -> &'static [Rule];
    /// Collect one pod's evidence of this kind.
    fn collect<'a>(&'a self, cx: &'a Ctx<'a>) -> BoxFuture<'a, Output>;
}

/// The first wave, in the order their files and entries are written.
pub static FIRST_WAVE: &[&dyn Source] = &[
    &pod::PodSource,
    &logs::Logs,
    &events::Events,
    &owner::OwnerChain,
    &node::NodeSource,
    &pvcs::Pvcs,
    &references::References,
    &service_account::ServiceAccounts,
    &metrics::Metrics,
];

/// The second wave: it needs the first wave's logs (Services) and owner
/// chain (revisions).
pub static SECOND_WAVE: &[&dyn Source] = &[&services::Services, &revisions::Revisions];

/// Requests made before the sources run: resolving a target to its pods,
/// and `scan`'s listing of pods and events.
pub static RESOLVE_RBAC: &[Rule] = &[
    Rule::new("", "pods", &["get", "list"]),
    Rule::new("", "events", &["list"]),
    Rule::new("apps", "deployments", &["get"]),
    Rule::new("apps", "statefulsets", &["get"]),
    Rule::new("apps", "daemonsets", &["get"]),
    Rule::new("apps", "replicasets", &["get", "list"]),
    Rule::new("batch", "jobs", &["get"]),
];

/// Every rule any read of the collector needs (resolve and every source).
pub fn all_rules() -> Vec<(&'static str, Rule)> {
    let mut out: Vec<(&'static str, Rule)> = RESOLVE_RBAC.iter().map(|r| ("resolve", *r)).collect();
    for s in FIRST_WAVE.iter().chain(SECOND_WAVE) {
        out.extend(s.rbac().iter().map(|r| (s.name(), *r)));
    }
    out
}

/// A failed read as missing evidence: why, and for a 403 the RBAC rule that
/// would allow it as the hint.
pub fn missing(what: impl Into<String>, e: &kube::Error, verb: &str, rule: &Rule) -> Missing {
    let (why, hint) = match e {
        kube::Error::Api(s) if s.code == 403 => {
            let res = rule.qualified();
            (
                "forbidden".to_string(),
                Some(format!(
                    "grant `{verb}` on `{res}` (rbac: apiGroups: [\"{}\"], resources: [{}], verbs: [{verb}])",
                    rule.group, rule.resource
                )),
            )
        }
        kube::Error::Api(s) if s.code == 404 => ("not found".to_string(), None),
        kube::Error::Api(s) => (
            format!("the API server answered {}: {}", s.code, s.message),
            None,
        ),
        other => (format!("request failed: {other}"), None),
    };
    Missing {
        what: what.into(),
        why,
        hint,
    }
}

/// Whether an error is the API server's 404.
pub fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

pub(crate) fn json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}
