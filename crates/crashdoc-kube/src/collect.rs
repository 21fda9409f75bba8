//! The collector: one pod's evidence in parallel after the first request,
//! as bundle files.

use crate::{KubeError, Target, TargetKind};
use crashdoc_core::ingest::bundle::{PodFiles, Reference};
use crashdoc_core::model::Missing;
use futures::future::join_all;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event, Node, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams, LogParams};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};

/// Bounds and switches of a collection.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Lines of each log to keep (from the end).
    pub log_lines: Option<i64>,
    /// Bytes of each log to keep.
    pub log_bytes: i64,
    /// Read Secrets (key names and sizes only). Off: Secrets are not read at all.
    pub secret_keys: bool,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            log_lines: Some(5000),
            log_bytes: 8 << 20,
            secret_keys: true,
        }
    }
}

/// What a collection produced.
#[derive(Debug, Default)]
pub struct Collection {
    pub pods: Vec<PodFiles>,
    /// API requests made.
    pub requests: u32,
    /// Sequential rounds of requests (the rest ran in parallel within a round).
    pub waves: u32,
}

pub struct Collector {
    client: kube::Client,
    namespace: String,
    opts: CollectOptions,
    requests: AtomicU32,
    waves: AtomicU32,
}

/// The verb and resource of a request, for error messages and hints.
struct Req<'a> {
    verb: &'a str,
    resource: &'a str,
}

fn classify(e: kube::Error, req: &Req, ns: &str, what: &str) -> KubeError {
    match &e {
        kube::Error::Api(s) if s.code == 404 => KubeError::NotFound {
            what: what.to_string(),
            namespace: ns.to_string(),
        },
        kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
            verb: req.verb.into(),
            resource: req.resource.into(),
            namespace: ns.to_string(),
        },
        _ => KubeError::Api(e),
    }
}

fn missing(what: impl Into<String>, e: &kube::Error, req: &Req) -> Missing {
    let why = match e {
        kube::Error::Api(s) if s.code == 403 => format!(
            "forbidden; hint: grant `{}` on `{}` (rbac: resources: [{}], verbs: [{}])",
            req.verb, req.resource, req.resource, req.verb
        ),
        kube::Error::Api(s) if s.code == 404 => "not found".to_string(),
        kube::Error::Api(s) => format!("the API server answered {}: {}", s.code, s.message),
        other => format!("request failed: {other}"),
    };
    Missing {
        what: what.into(),
        why,
    }
}

fn json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

/// `k=v,k2 in (a,b)` from a LabelSelector.
pub fn selector_string(sel: &LabelSelector) -> String {
    let mut parts: Vec<String> = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in sel.match_expressions.iter().flatten() {
        let vals = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({vals})", e.key),
            "NotIn" => format!("{} notin ({vals})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    parts.join(",")
}

/// Whether a pod is worth diagnosing.
pub fn unhealthy(p: &Pod) -> bool {
    let Some(st) = &p.status else { return true };
    match st.phase.as_deref() {
        Some("Succeeded") => return false,
        Some("Failed") | Some("Pending") => return true,
        _ => {}
    }
    let statuses = st
        .container_statuses
        .iter()
        .flatten()
        .chain(st.init_container_statuses.iter().flatten());
    statuses.into_iter().any(|c| {
        c.restart_count > 0
            || c.state.as_ref().is_some_and(|s| {
                s.waiting.is_some() || s.terminated.as_ref().is_some_and(|t| t.exit_code != 0)
            })
            || (!c.ready
                && st.phase.as_deref() == Some("Running")
                && c.state.as_ref().is_some_and(|s| s.running.is_some())
                && p.spec
                    .as_ref()
                    .is_some_and(|s| s.containers.iter().any(|x| x.name == c.name)))
    })
}

impl Collector {
    pub fn new(client: kube::Client, namespace: impl Into<String>, opts: CollectOptions) -> Self {
        Collector {
            client,
            namespace: namespace.into(),
            opts,
            requests: AtomicU32::new(0),
            waves: AtomicU32::new(0),
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn wave(&self) {
        self.waves.fetch_add(1, Ordering::Relaxed);
    }

    /// Get one named object of the namespace, with the error a user can act on.
    async fn get_named<K>(&self, name: &str, resource: &str, kind: &str) -> Result<K, KubeError>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        <K as kube::Resource>::DynamicType: Default,
    {
        self.count();
        let api = self.api::<K>();
        crate::retry::read(3, || api.get(name)).await.map_err(|e| {
            classify(
                e,
                &Req {
                    verb: "get",
                    resource,
                },
                &self.namespace,
                &format!("{kind}/{name}"),
            )
        })
    }

    /// The pods a target names: a pod, or a workload's pods, newest
    /// ReplicaSet first, failing ones before healthy ones.
    pub async fn resolve(&self, target: &Target) -> Result<Vec<Pod>, KubeError> {
        let ns = self.namespace.clone();
        self.wave();
        let name = target.name.as_str();
        let selector = match target.kind {
            TargetKind::Pod => return Ok(vec![self.get_named::<Pod>(name, "pods", "pod").await?]),
            TargetKind::Deployment => Some(
                self.get_named::<Deployment>(name, "deployments", "deployment")
                    .await?
                    .spec
                    .selector,
            ),
            TargetKind::StatefulSet => Some(
                self.get_named::<StatefulSet>(name, "statefulsets", "statefulset")
                    .await?
                    .spec
                    .selector,
            ),
            TargetKind::DaemonSet => Some(
                self.get_named::<DaemonSet>(name, "daemonsets", "daemonset")
                    .await?
                    .spec
                    .selector,
            ),
            TargetKind::ReplicaSet => Some(
                self.get_named::<ReplicaSet>(name, "replicasets", "replicaset")
                    .await?
                    .spec
                    .selector,
            ),
            TargetKind::Job => self
                .get_named::<Job>(name, "jobs", "job")
                .await?
                .spec
                .and_then(|s| s.selector),
        };
        let sel = selector.map(|s| selector_string(&s)).unwrap_or_default();
        if sel.is_empty() {
            return Err(KubeError::Target(format!(
                "{}/{} has no pod selector",
                kind_word(target.kind),
                target.name
            )));
        }
        self.wave();
        let lp = ListParams::default().labels(&sel);
        self.count();
        let pods_api = self.api::<Pod>();
        let pods_f = crate::retry::read(3, || pods_api.list(&lp));
        let rs_f = async {
            if target.kind == TargetKind::Deployment {
                self.count();
                self.api::<ReplicaSet>().list(&lp).await.ok()
            } else {
                None
            }
        };
        let (pods, rss) = futures::join!(pods_f, rs_f);
        let mut pods = pods
            .map_err(|e| {
                classify(
                    e,
                    &Req {
                        verb: "list",
                        resource: "pods",
                    },
                    &ns,
                    "pods",
                )
            })?
            .items;
        // Newest ReplicaSet (highest revision) first.
        let revision: HashMap<String, i64> = rss
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|rs| {
                let rev = rs
                    .metadata
                    .annotations
                    .as_ref()?
                    .get("deployment.kubernetes.io/revision")?
                    .parse()
                    .ok()?;
                Some((rs.metadata.name?, rev))
            })
            .collect();
        let rev_of = |p: &Pod| -> i64 {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .find_map(|o| revision.get(&o.name).copied())
                .unwrap_or(0)
        };
        pods.sort_by(|a, b| {
            (
                unhealthy(b),
                rev_of(b),
                b.metadata.creation_timestamp.clone(),
            )
                .cmp(&(
                    unhealthy(a),
                    rev_of(a),
                    a.metadata.creation_timestamp.clone(),
                ))
        });
        Ok(pods)
    }

    /// Collect everything about the given pods. Within a pod, every request
    /// after the pod itself runs in parallel; pods run concurrently.
    pub async fn collect(&self, pods: Vec<Pod>) -> Collection {
        self.wave();
        let files = join_all(pods.into_iter().map(|p| self.collect_pod(p, None))).await;
        let mut pods: Vec<PodFiles> = files;
        // Second wave: the Services behind hosts the logs fail to reach.
        let hosts: Vec<(usize, Vec<String>)> = pods
            .iter()
            .enumerate()
            .map(|(i, p)| (i, unreachable_hosts(p)))
            .filter(|(_, h)| !h.is_empty())
            .collect();
        if !hosts.is_empty() {
            self.wave();
            for (i, hs) in hosts {
                let refs = join_all(hs.iter().map(|h| self.service_ref(h))).await;
                add_references(&mut pods[i], refs.into_iter().flatten().collect());
            }
        }
        Collection {
            pods,
            requests: self.requests.load(Ordering::Relaxed),
            waves: self.waves.load(Ordering::Relaxed),
        }
    }

    async fn service_ref(&self, host: &str) -> Option<Reference> {
        // `db`, `db.ns`, `db.ns.svc.cluster.local`: look the Service up where it would be.
        let mut parts = host.split('.');
        let name = parts.next()?.to_string();
        let ns = parts
            .next()
            .filter(|n| *n != "svc")
            .map(str::to_string)
            .unwrap_or_else(|| self.namespace.clone());
        if name.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        self.count();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let exists = match api.get(&name).await {
            Ok(_) => Some(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Some(false),
            Err(_) => None,
        };
        Some(Reference {
            kind: "Service".into(),
            name: if ns == self.namespace {
                name
            } else {
                format!("{name}.{ns}")
            },
            exists,
            keys: BTreeMap::new(),
        })
    }

    /// One pod's files. `events` are used instead of a request when given
    /// (a scan lists events once for the namespace).
    pub async fn collect_pod(&self, mut pod: Pod, events: Option<Vec<Event>>) -> PodFiles {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let ns = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| self.namespace.clone());
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        pod.metadata.managed_fields = None;
        let spec = pod.spec.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        let api_ns = |c: &kube::Client| -> Api<Pod> { Api::namespaced(c.clone(), &ns) };

        // Logs: current and, where a run ended, previous, of every container.
        let mut log_jobs: Vec<(String, bool)> = Vec::new();
        let statuses: Vec<_> = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten())
            .collect();
        let all_containers: Vec<String> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .map(|c| c.name.clone())
            .collect();
        for c in &all_containers {
            let st = statuses.iter().find(|s| &s.name == c);
            let started = st.is_some_and(|s| {
                s.state
                    .as_ref()
                    .is_some_and(|x| x.running.is_some() || x.terminated.is_some())
                    || s.last_state
                        .as_ref()
                        .is_some_and(|x| x.terminated.is_some())
            });
            let ended_before = st.is_some_and(|s| {
                s.restart_count > 0
                    || s.last_state
                        .as_ref()
                        .is_some_and(|x| x.terminated.is_some())
            });
            if started {
                log_jobs.push((c.clone(), false));
            }
            if ended_before {
                log_jobs.push((c.clone(), true));
            }
        }
        let logs_f = join_all(log_jobs.iter().map(|(c, previous)| {
            let api = api_ns(&self.client);
            let pod_name = name.clone();
            let lp = LogParams {
                container: Some(c.clone()),
                previous: *previous,
                tail_lines: self.opts.log_lines,
                limit_bytes: Some(self.opts.log_bytes),
                ..Default::default()
            };
            self.count();
            async move {
                (
                    c.clone(),
                    *previous,
                    crate::retry::read(3, || api.logs(&pod_name, &lp)).await,
                )
            }
        }));

        let events_f = async {
            if let Some(ev) = events {
                return Ok(ev);
            }
            self.count();
            let api: Api<Event> = Api::namespaced(self.client.clone(), &ns);
            {
                let lp = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
                crate::retry::read(3, || api.list(&lp)).await
            }
            .map(|l| l.items)
        };

        let owner_f = self.owner_chain(&pod, &ns);
        let node_f = async {
            match &spec.node_name {
                Some(n) => {
                    self.count();
                    let api: Api<Node> = Api::all(self.client.clone());
                    Some(api.get(n).await.map(|mut n| {
                        n.metadata.managed_fields = None;
                        n
                    }))
                }
                None => None,
            }
        };
        let claims: Vec<String> = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| {
                v.persistent_volume_claim
                    .as_ref()
                    .map(|c| c.claim_name.clone())
            })
            .collect();
        let pvc_f = join_all(claims.iter().map(|c| {
            self.count();
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &ns);
            async move { api.get(c).await }
        }));
        let (cms, secrets) = referenced_objects(&pod);
        let cm_f = join_all(cms.iter().map(|n| {
            self.count();
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &ns);
            async move {
                let r = api.get(n).await;
                (
                    n.clone(),
                    r.map(|cm| {
                        let mut keys: BTreeMap<String, Option<u64>> = cm
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
                        keys
                    }),
                )
            }
        }));
        let secrets_on = self.opts.secret_keys;
        let secret_f = join_all(secrets.iter().filter(|_| secrets_on).map(|n| {
            self.count();
            let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
            async move {
                // The value is read by the API client and dropped here: only
                // key names and sizes leave this closure.
                let r = api.get(n).await.map(|s| {
                    let mut keys: BTreeMap<String, Option<u64>> = s
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
                    keys
                });
                (n.clone(), r)
            }
        }));
        let sa = spec
            .service_account_name
            .clone()
            .unwrap_or_else(|| "default".into());
        let sa_f = async {
            self.count();
            let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &ns);
            api.get_opt(&sa).await
        };

        let metrics_f = async {
            // metrics.k8s.io, when the cluster serves it: usage per container.
            self.count();
            let ar = kube::core::ApiResource {
                group: "metrics.k8s.io".into(),
                version: "v1beta1".into(),
                api_version: "metrics.k8s.io/v1beta1".into(),
                kind: "PodMetrics".into(),
                plural: "pods".into(),
            };
            let api: Api<kube::core::DynamicObject> =
                Api::namespaced_with(self.client.clone(), &ns, &ar);
            api.get_opt(&name).await
        };
        let (logs, events, owners, node, pvcs, cms_r, secrets_r, sa_r, metrics) = futures::join!(
            logs_f, events_f, owner_f, node_f, pvc_f, cm_f, secret_f, sa_f, metrics_f
        );

        let mut files: Vec<(String, Vec<u8>)> = vec![("pod.json".into(), json(&pod))];
        let mut miss: Vec<Missing> = Vec::new();
        for (c, previous, r) in logs {
            let file = format!(
                "{}.{c}.txt",
                if previous { "logs-previous" } else { "logs" }
            );
            match r {
                Ok(text) => {
                    let redacted: String = text
                        .lines()
                        .map(|l| crashdoc_core::redact::redact(l).into_owned() + "\n")
                        .collect();
                    files.push((file, redacted.into_bytes()));
                }
                Err(e) => miss.push(missing(
                    format!("logs{} of {c}", if previous { " --previous" } else { "" }),
                    &e,
                    &Req {
                        verb: "get",
                        resource: "pods/log",
                    },
                )),
            }
        }
        match events {
            Ok(items) => files.push((
                "events.json".into(),
                json(&serde_json::json!({"kind": "EventList", "apiVersion": "v1", "items": items.into_iter().map(|mut e| { e.metadata.managed_fields = None; e }).collect::<Vec<_>>()})),
            )),
            Err(e) => miss.push(missing("events", &e, &Req { verb: "list", resource: "events" })),
        }
        for (file, bytes) in owners.0 {
            files.push((file, bytes));
        }
        miss.extend(owners.1);
        match node {
            Some(Ok(n)) => files.push(("node.json".into(), json(&n))),
            Some(Err(e)) => miss.push(missing(
                "node",
                &e,
                &Req {
                    verb: "get",
                    resource: "nodes",
                },
            )),
            None => {}
        }
        let mut pvc_items = Vec::new();
        for (c, r) in claims.iter().zip(pvcs) {
            match r {
                Ok(mut p) => {
                    p.metadata.managed_fields = None;
                    pvc_items.push(p);
                }
                Err(e) => miss.push(missing(
                    format!("persistentvolumeclaim {c}"),
                    &e,
                    &Req {
                        verb: "get",
                        resource: "persistentvolumeclaims",
                    },
                )),
            }
        }
        if !pvc_items.is_empty() {
            files.push((
                "pvc.json".into(),
                json(&serde_json::json!({"kind": "List", "apiVersion": "v1", "items": pvc_items})),
            ));
        }
        let mut refs: Vec<Reference> = Vec::new();
        for (kind, results) in [("ConfigMap", cms_r), ("Secret", secrets_r)] {
            for (n, r) in results {
                match r {
                    Ok(keys) => refs.push(Reference {
                        kind: kind.into(),
                        name: n,
                        exists: Some(true),
                        keys,
                    }),
                    Err(kube::Error::Api(s)) if s.code == 404 => refs.push(Reference {
                        kind: kind.into(),
                        name: n,
                        exists: Some(false),
                        keys: BTreeMap::new(),
                    }),
                    Err(e) => {
                        let resource = if kind == "Secret" {
                            "secrets"
                        } else {
                            "configmaps"
                        };
                        miss.push(missing(
                            format!("{} {n}", kind.to_ascii_lowercase()),
                            &e,
                            &Req {
                                verb: "get",
                                resource,
                            },
                        ));
                        refs.push(Reference {
                            kind: kind.into(),
                            name: n,
                            exists: None,
                            keys: BTreeMap::new(),
                        });
                    }
                }
            }
        }
        if !secrets_on && !secrets.is_empty() {
            miss.push(Missing {
                what: "secret key names".into(),
                why: "secrets were not read (key-name checks are off)".into(),
            });
        }
        match sa_r {
            Ok(Some(_)) => refs.push(Reference {
                kind: "ServiceAccount".into(),
                name: sa,
                exists: Some(true),
                keys: BTreeMap::new(),
            }),
            Ok(None) => refs.push(Reference {
                kind: "ServiceAccount".into(),
                name: sa,
                exists: Some(false),
                keys: BTreeMap::new(),
            }),
            Err(e) => miss.push(missing(
                "serviceaccount",
                &e,
                &Req {
                    verb: "get",
                    resource: "serviceaccounts",
                },
            )),
        }
        match metrics {
            Ok(Some(m)) => {
                // As `kubectl top pod --containers` prints it, which `analyze` reads.
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
                    top.push_str(&format!(
                        "{name} {cname} {} {}\n",
                        get("cpu"),
                        get("memory")
                    ));
                }
                files.push(("top-pod.txt".into(), top.into_bytes()));
            }
            Ok(None) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => miss.push(Missing {
                what: "usage".into(),
                why: "the cluster does not serve metrics.k8s.io (no metrics-server)".into(),
            }),
            Err(e) => miss.push(missing(
                "usage (metrics.k8s.io)",
                &e,
                &Req {
                    verb: "get",
                    resource: "pods.metrics.k8s.io",
                },
            )),
        }
        let mut pf = PodFiles {
            namespace: ns,
            name,
            files,
        };
        add_references(&mut pf, refs);
        pf.files.push(("missing.json".into(), json(&miss)));
        pf
    }

    /// ReplicaSet -> Deployment, StatefulSet, DaemonSet, Job: as far as it goes.
    async fn owner_chain(&self, pod: &Pod, ns: &str) -> (Vec<(String, Vec<u8>)>, Vec<Missing>) {
        let mut files = Vec::new();
        let mut miss = Vec::new();
        let Some(o) = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .cloned()
        else {
            return (files, miss);
        };
        macro_rules! fetch {
            ($ty:ty, $file:expr, $res:expr) => {{
                self.count();
                let api: Api<$ty> = Api::namespaced(self.client.clone(), ns);
                match api.get(&o.name).await {
                    Ok(mut x) => {
                        x.metadata.managed_fields = None;
                        files.push(($file.to_string(), json(&x)));
                        Some(x)
                    }
                    Err(e) => {
                        miss.push(missing(
                            format!("owner {}/{}", o.kind, o.name),
                            &e,
                            &Req {
                                verb: "get",
                                resource: $res,
                            },
                        ));
                        None
                    }
                }
            }};
        }
        match o.kind.as_str() {
            "ReplicaSet" => {
                let rs = fetch!(ReplicaSet, "replicaset.json", "replicasets");
                if let Some(d) = rs.and_then(|rs| {
                    rs.metadata
                        .owner_references
                        .into_iter()
                        .flatten()
                        .find(|o| o.kind == "Deployment")
                }) {
                    self.count();
                    let api: Api<Deployment> = Api::namespaced(self.client.clone(), ns);
                    match api.get(&d.name).await {
                        Ok(mut x) => {
                            x.metadata.managed_fields = None;
                            files.push(("deployment.json".into(), json(&x)));
                        }
                        Err(e) => miss.push(missing(
                            format!("owner Deployment/{}", d.name),
                            &e,
                            &Req {
                                verb: "get",
                                resource: "deployments",
                            },
                        )),
                    }
                }
            }
            "StatefulSet" => {
                fetch!(StatefulSet, "statefulset.json", "statefulsets");
            }
            "DaemonSet" => {
                fetch!(DaemonSet, "daemonset.json", "daemonsets");
            }
            "Job" => {
                fetch!(Job, "job.json", "jobs");
            }
            _ => {}
        }
        (files, miss)
    }
}

fn kind_word(k: TargetKind) -> &'static str {
    match k {
        TargetKind::Pod => "pod",
        TargetKind::Deployment => "deployment",
        TargetKind::StatefulSet => "statefulset",
        TargetKind::DaemonSet => "daemonset",
        TargetKind::Job => "job",
        TargetKind::ReplicaSet => "replicaset",
    }
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

fn add_references(pf: &mut PodFiles, mut refs: Vec<Reference>) {
    if refs.is_empty() {
        return;
    }
    if let Some(i) = pf.files.iter().position(|(n, _)| n == "references.json") {
        let (_, bytes) = pf.files.remove(i);
        let mut old: Vec<Reference> = serde_json::from_slice(&bytes).unwrap_or_default();
        old.append(&mut refs);
        refs = old;
    }
    pf.files.push(("references.json".into(), json(&refs)));
}

/// Hosts that the collected logs fail to reach.
fn unreachable_hosts(pf: &PodFiles) -> Vec<String> {
    let mut hosts: BTreeSet<String> = BTreeSet::new();
    let catalog = crashdoc_core::scan::Catalog::global();
    for (name, bytes) in &pf.files {
        if !name.starts_with("logs") {
            continue;
        }
        let scan = catalog.scan_str(
            &String::from_utf8_lossy(bytes),
            name,
            crashdoc_core::scan::LogKind::Previous,
            None,
        );
        for h in scan.hits_for(crashdoc_core::Cause::DependencyUnreachable) {
            if let Some(t) = crashdoc_core::rules::logs::target_of(&h.line.text) {
                let host = t.split(':').next().unwrap_or(&t).to_string();
                if !host.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    hosts.insert(host);
                }
            }
        }
    }
    hosts.into_iter().take(5).collect()
}
