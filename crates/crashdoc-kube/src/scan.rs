//! `scan` and target collection as library calls, shared by the CLI
//! (crates/crashdoc/src/live.rs) and the MCP server (crates/crashdoc-mcp).
//! Moved from the binary unchanged: paging of 500, events listed once per
//! namespace, the failing pods of a target.

use crate::{CollectOptions, Collection, Collector, KubeError, Target, TargetKind, unhealthy};
use crashdoc_core::diagnose::Report;
use crashdoc_core::ingest::bundle::PodFiles;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams};
use std::collections::HashMap;

/// Resolve a target and collect its failing pods (or the pod itself, failing or not).
pub async fn collect_target(
    client: kube::Client,
    namespace: &str,
    options: CollectOptions,
    target: &Target,
) -> Result<Collection, KubeError> {
    let collector = Collector::new(client, namespace.to_string(), options);
    let pods = collector.resolve(target).await?;
    let failing: Vec<Pod> = if target.kind == TargetKind::Pod {
        pods
    } else {
        pods.into_iter().filter(unhealthy).take(10).collect()
    };
    if failing.is_empty() {
        return Err(KubeError::NoFailingPod {
            target: target.name.clone(),
            namespace: namespace.to_string(),
        });
    }
    Ok(collector.collect(failing).await)
}

/// What a scan collected.
pub struct Scanned {
    /// One bundle entry per unhealthy pod.
    pub pods: Vec<PodFiles>,
    /// Pods listed, healthy ones included.
    pub total: usize,
    /// Set when events could not be listed (the pods were collected without them).
    pub events_note: Option<String>,
}

/// Collect every unhealthy pod of `namespace` (every namespace with `all`).
/// `on_pod(n)` is called after each pod is collected, `n` the number of
/// unhealthy pods to collect (a progress bar).
pub async fn scan(
    client: kube::Client,
    namespace: &str,
    all: bool,
    options: CollectOptions,
    concurrency: usize,
    on_pod: &(dyn Fn(usize) + Sync),
) -> Result<Scanned, KubeError> {
    let pods_api: Api<Pod> = if all {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), namespace)
    };
    let events_api: Api<Event> = if all {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), namespace)
    };
    // Pages of 500: memory holds only the unhealthy pods.
    let mut unhealthy_pods: Vec<Pod> = Vec::new();
    // Pending for under two minutes, still being set up: listed only if a
    // Warning event says why (a FailedMount), once the events are read.
    let mut young: Vec<Pod> = Vec::new();
    let mut total = 0usize;
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = crate::retry::read(3, || pods_api.list(&lp))
            .await
            .map_err(|e| forbidden(e, "list", "pods", namespace))?;
        total += page.items.len();
        for p in page.items.into_iter().filter(unhealthy) {
            if just_created_pending(&p) {
                young.push(p);
            } else {
                unhealthy_pods.push(p);
            }
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    // Events once for the whole namespace, grouped by the pod's uid.
    let mut by_uid: HashMap<String, Vec<Event>> = HashMap::new();
    let mut events_note = None;
    let mut token: Option<String> = None;
    if !unhealthy_pods.is_empty() || !young.is_empty() {
        loop {
            let mut lp = ListParams::default().limit(500);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            match crate::retry::read(3, || events_api.list(&lp)).await {
                Ok(page) => {
                    for e in page.items {
                        if let Some(uid) = e.involved_object.uid.clone() {
                            by_uid.entry(uid).or_default().push(e);
                        }
                    }
                    token = page.metadata.continue_.filter(|t| !t.is_empty());
                    if token.is_none() {
                        break;
                    }
                }
                Err(e) => {
                    events_note = Some(format!(
                        "events could not be listed ({e}); diagnosing without them"
                    ));
                    break;
                }
            }
        }
    }
    let events_ok = events_note.is_none();
    if events_ok {
        unhealthy_pods.extend(young.into_iter().filter(|p| {
            let uid = p.metadata.uid.as_deref().unwrap_or_default();
            by_uid.get(uid).is_some_and(|evs| warned(evs))
        }));
    }
    let collector = Collector::new(client, namespace.to_string(), options);
    let collector = &collector;
    let by_uid = &by_uid;
    let n = unhealthy_pods.len();
    let pods: Vec<PodFiles> = futures::stream::iter(unhealthy_pods.into_iter().map(|p| {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let events = if events_ok {
            Some(by_uid.get(&uid).cloned().unwrap_or_default())
        } else {
            None
        };
        async move {
            let f = collector.collect_pod(p, events).await;
            on_pod(n);
            f
        }
    }))
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await;
    Ok(Scanned {
        pods,
        total,
        events_note,
    })
}

/// Whether a pod's events hold a Warning: for a pod still being set up
/// (ContainerCreating, PodInitializing), the kubelet's reason it cannot go
/// on, e.g. `FailedMount` (kubernetes v1.36.3 pkg/kubelet/events/event.go
/// FailedMountVolume, recorded as v1.EventTypeWarning by
/// pkg/volume/util/operationexecutor/operation_generator.go and
/// pkg/kubelet/kubelet.go, "Unable to attach or mount volumes").
fn warned(events: &[Event]) -> bool {
    events.iter().any(|e| e.type_.as_deref() == Some("Warning"))
}

/// Pending for under two minutes while its containers are only being set
/// up (no other waiting reason, not refused by the scheduler): usually a
/// pod just created, listed only with a Warning event (`warned`).
fn just_created_pending(p: &Pod) -> bool {
    let pending = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending");
    // The scheduler already said no: not just created, whatever its age.
    let unschedulable = p.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False")
    });
    if unschedulable {
        return false;
    }
    let waiting_reason_bad = p.status.as_ref().is_some_and(|s| {
        s.container_statuses
            .iter()
            .flatten()
            .chain(s.init_container_statuses.iter().flatten())
            .any(|c| {
                c.state
                    .as_ref()
                    .and_then(|st| st.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    .is_some_and(|r| r != "ContainerCreating" && r != "PodInitializing")
            })
    });
    let age = p
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| k8s_openapi::jiff::Timestamp::now().as_second() - t.0.as_second());
    pending && !waiting_reason_bad && age.is_some_and(|a| a < 120)
}

fn forbidden(e: kube::Error, verb: &str, resource: &str, ns: &str) -> KubeError {
    match &e {
        kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
            verb: verb.into(),
            resource: resource.into(),
            namespace: ns.into(),
        },
        _ => KubeError::Api(e),
    }
}

/// One group of a scan: the pods whose first diagnosis names the same cause.
#[derive(serde::Serialize)]
pub struct Group {
    pub cause: String,
    pub count: usize,
    pub owners: Vec<String>,
    pub pods: Vec<String>,
}

/// The scan's groups, largest first.
pub fn groups(report: &Report) -> Vec<Group> {
    let mut g: Vec<Group> = Vec::new();
    for p in &report.pods {
        let Some(d) = p.diagnoses.first() else {
            continue;
        };
        let name = format!(
            "{}/{}",
            p.namespace.clone().unwrap_or_default(),
            p.name.clone().unwrap_or_default()
        );
        let owner = p.owner.clone().unwrap_or_else(|| "-".into());
        match g.iter_mut().find(|x| x.cause == d.cause.id()) {
            Some(x) => {
                x.count += 1;
                x.pods.push(name);
                if !x.owners.contains(&owner) {
                    x.owners.push(owner);
                }
            }
            None => g.push(Group {
                cause: d.cause.id().into(),
                count: 1,
                owners: vec![owner],
                pods: vec![name],
            }),
        }
    }
    g.sort_by(|a, b| b.count.cmp(&a.count).then(a.cause.cmp(&b.cause)));
    g
}

/// `scan --format json`: the `crashdoc/v1` report plus `groups` and
/// `scanned`, each pod with its `workload` (crate::workload).
pub fn json(
    report: &Report,
    pods: &[PodFiles],
    total: usize,
) -> Result<serde_json::Value, serde_json::Error> {
    let mut v = serde_json::to_value(report)?;
    crate::workload::annotate(&mut v, report, pods);
    v["groups"] = serde_json::to_value(groups(report))?;
    v["scanned"] = serde_json::json!(total);
    Ok(v)
}
