//! The collector: resolving a target to its pods, then the driver that runs
//! the sources of [`crate::sources`] in waves (every source of a wave in
//! parallel, pods concurrently), counting requests and timing each wave.

use crate::sources::shared::{Seed, Shared, workload_key};
use crate::sources::{Ctx, FIRST_WAVE, Namespaced, Output, SECOND_WAVE, Source, json, revisions};
use crate::{KubeError, Target, TargetKind};
use crashdoc_core::ingest::bundle::{BundleFile, PodFiles};
use futures::future::join_all;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

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
    /// How long each wave of sources took, in order.
    pub wave_times: Vec<Duration>,
    /// Requests made by each wave of sources, in order.
    pub wave_requests: Vec<u32>,
}

pub struct Collector {
    client: kube::Client,
    namespace: String,
    opts: CollectOptions,
    requests: AtomicU32,
    wave_count: AtomicU32,
    /// (time, requests) of each wave of sources.
    waves: Mutex<Vec<(Duration, u32)>>,
    /// Reads shared by the sources and pods of this collector.
    shared: Shared,
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

/// Whether the revisions source runs: `CRASHDOC_REVISIONS=0` turns it off
/// (the collection as it was before issue 11, for comparisons: it is how
/// tests/cluster/regressions.sh measures what the source costs).
fn revisions_enabled() -> bool {
    std::env::var_os("CRASHDOC_REVISIONS").is_none_or(|v| v != "0")
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
            wave_count: AtomicU32::new(0),
            waves: Mutex::new(Vec::new()),
            shared: Shared::default(),
        }
    }

    /// A collector for many pods at one instant (a scan): reads that name
    /// the same object for many pods are made once ([`Shared::across_pods`]).
    pub fn sharing_across_pods(mut self) -> Self {
        self.shared = Shared::across_pods();
        self
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
        self.wave_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Get one named object of the namespace, with the error a user can act on.
    async fn get_named<K>(&self, name: &str, resource: &str, kind: &str) -> Result<K, KubeError>
    where
        K: Namespaced,
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
        let rs_api = self.api::<ReplicaSet>();
        let rs_f = async {
            if target.kind == TargetKind::Deployment {
                self.count();
                crate::retry::read(3, || rs_api.list(&lp)).await.ok()
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
        // The revisions source reuses both lists instead of making them again.
        if let Some(rs) = &rss {
            self.shared.seed(
                &workload_key(&ns, "Deployment", name),
                Seed {
                    replica_sets: rs.items.clone(),
                    pods: pods.clone(),
                },
            );
        }
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

    /// Collect everything about the given pods: the first wave of sources
    /// for every pod concurrently, then the second (the Services behind the
    /// hosts their logs fail to reach, the revisions of their workload).
    pub async fn collect(&self, pods: Vec<Pod>) -> Collection {
        let parts = self
            .run_wave(|| join_all(pods.iter().map(|p| self.first_wave(p, None, Vec::new()))))
            .await;
        let mut pods: Vec<(PodParts, Vec<String>)> = parts
            .into_iter()
            .map(|p| {
                let hosts = p.unreachable_hosts();
                (p, hosts)
            })
            .collect();
        let with_revisions = revisions_enabled();
        let second_wave: Vec<&dyn Source> = SECOND_WAVE
            .iter()
            .copied()
            .filter(|s| with_revisions || s.name() != "revisions")
            .collect();
        if pods.iter().any(|(p, h)| {
            !h.is_empty() || (with_revisions && revisions::workload(&p.out.files).is_some())
        }) {
            let second = self
                .run_wave(|| {
                    join_all(
                        pods.iter()
                            .map(|(p, hosts)| self.run_sources(&second_wave, p, hosts)),
                    )
                })
                .await;
            for ((p, _), out) in pods.iter_mut().zip(second) {
                p.add(out);
            }
        }
        let (wave_times, wave_requests) = match self.waves.lock() {
            Ok(w) => w.iter().copied().unzip(),
            Err(_) => (Vec::new(), Vec::new()),
        };
        Collection {
            pods: pods.into_iter().map(|(p, _)| p.finish()).collect(),
            requests: self.requests.load(Ordering::Relaxed),
            waves: self.wave_count.load(Ordering::Relaxed),
            wave_times,
            wave_requests,
        }
    }

    /// One pod's files from the first wave (no Services: a watch or a scan
    /// collects each pod on its own). `events` are used instead of a
    /// request when given (a scan lists events once for the namespace).
    pub async fn collect_pod(&self, pod: Pod, events: Option<Vec<Event>>) -> PodFiles {
        self.first_wave(&pod, events.as_deref(), Vec::new())
            .await
            .finish()
    }

    /// [`Self::collect_pod`] for one run of one container: its logs are
    /// that run's (a watch's termination, by container ID where the status
    /// that reported it had one), never a later run's unnamed
    /// (`log-runs.json` and `missing.json` say where it is, or that it was
    /// overwritten).
    pub async fn collect_run(
        &self,
        pod: Pod,
        events: Option<Vec<Event>>,
        container: &str,
        run: crate::runs::Run,
    ) -> PodFiles {
        self.first_wave(&pod, events.as_deref(), vec![(container.to_string(), run)])
            .await
            .finish()
    }

    /// Run one wave, counting it and timing it.
    async fn run_wave<F, Fut, T>(&self, f: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let before = self.requests.load(Ordering::Relaxed);
        let started = Instant::now();
        let out = f().await;
        let made = self.requests.load(Ordering::Relaxed) - before;
        // A wave whose reads were all shared (a node already read, lists
        // resolve made) is no round trip.
        if made > 0 {
            self.wave();
        }
        if let Ok(mut w) = self.waves.lock() {
            w.push((started.elapsed(), made));
        }
        out
    }

    async fn first_wave(
        &self,
        pod: &Pod,
        events: Option<&[Event]>,
        runs: Vec<(String, crate::runs::Run)>,
    ) -> PodParts {
        let mut parts = PodParts::new(pod, &self.namespace);
        parts.runs = runs;
        let out = self.run_sources_with(FIRST_WAVE, &parts, events, &[]).await;
        parts.add(out);
        parts
    }

    async fn run_sources(
        &self,
        sources: &[&dyn Source],
        parts: &PodParts,
        hosts: &[String],
    ) -> Output {
        self.run_sources_with(sources, parts, None, hosts).await
    }

    /// Run sources concurrently for one pod; their outputs in source order.
    async fn run_sources_with(
        &self,
        sources: &[&dyn Source],
        parts: &PodParts,
        events: Option<&[Event]>,
        hosts: &[String],
    ) -> Output {
        let cx = Ctx {
            client: &self.client,
            namespace: &parts.namespace,
            default_namespace: &self.namespace,
            name: &parts.name,
            pod: &parts.pod,
            opts: &self.opts,
            events,
            hosts,
            prior: &parts.out.files,
            shared: &self.shared,
            runs: &parts.runs,
            requests: &self.requests,
        };
        let outs = join_all(sources.iter().map(|s| s.collect(&cx))).await;
        let mut all = Output::default();
        for o in outs {
            all.files.extend(o.files);
            all.references.extend(o.references);
            all.missing.extend(o.missing);
        }
        all
    }
}

/// One pod's evidence while its sources run.
struct PodParts {
    namespace: String,
    name: String,
    pod: Pod,
    /// The runs whose logs are wanted ([`Ctx::runs`]).
    runs: Vec<(String, crate::runs::Run)>,
    out: Output,
}

impl PodParts {
    fn new(pod: &Pod, default_namespace: &str) -> Self {
        PodParts {
            namespace: pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| default_namespace.to_string()),
            name: pod.metadata.name.clone().unwrap_or_default(),
            pod: pod.clone(),
            runs: Vec::new(),
            out: Output::default(),
        }
    }

    fn add(&mut self, o: Output) {
        self.out.files.extend(o.files);
        self.out.references.extend(o.references);
        self.out.missing.extend(o.missing);
    }

    /// The hosts its logs fail to reach (crashdoc-core chooses them).
    fn unreachable_hosts(&self) -> Vec<String> {
        let logs: Vec<(String, String)> = self
            .out
            .files
            .iter()
            .filter(|(f, _)| matches!(f, BundleFile::Logs { .. }))
            .map(|(f, b)| (f.name(), String::from_utf8_lossy(b).into_owned()))
            .collect();
        crashdoc_core::hosts::unreachable_hosts(logs.iter().map(|(n, t)| (n.as_str(), t.as_str())))
    }

    /// The bundle files: the sources' files, `references.json` when any,
    /// `missing.json` always.
    fn finish(self) -> PodFiles {
        let mut files: Vec<(String, Vec<u8>)> = self
            .out
            .files
            .into_iter()
            .map(|(f, b)| (f.name(), b))
            .collect();
        if !self.out.references.is_empty() {
            files.push((BundleFile::References.name(), json(&self.out.references)));
        }
        files.push((BundleFile::Missing.name(), json(&self.out.missing)));
        PodFiles {
            namespace: self.namespace,
            name: self.name,
            files,
        }
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
