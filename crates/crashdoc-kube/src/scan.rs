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
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

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
    /// How long each phase took, in order (`-v`).
    pub phases: Vec<(&'static str, Duration)>,
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
    let started = Instant::now();
    // Pages of 500, each decoded only as far as `unhealthy` reads (a
    // [`SlimPod`]); only the unhealthy pods are decoded whole and kept.
    let pods_url = pods_api.resource_url().to_string();
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
        let text = crate::retry::read(3, || list_page(&client, &pods_url, &lp))
            .await
            .map_err(|e| forbidden(e, "list", "pods", namespace))?;
        let page: Page = serde_json::from_str(&text).map_err(decode)?;
        total += page.items.len();
        for raw in page.items {
            let slim: SlimPod = serde_json::from_str(raw.get()).map_err(decode)?;
            if !slim.unhealthy() {
                continue;
            }
            let p: Pod = serde_json::from_str(raw.get()).map_err(decode)?;
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
    let listed = started.elapsed();
    // Events once for the whole namespace, grouped by the pod's uid; only
    // the events of the pods listed above are decoded and kept.
    let wanted: HashSet<String> = unhealthy_pods
        .iter()
        .chain(&young)
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let events_url = events_api.resource_url().to_string();
    let mut by_uid: HashMap<String, Vec<Event>> = HashMap::new();
    let mut events_note = None;
    let mut token: Option<String> = None;
    if !wanted.is_empty() {
        loop {
            let mut lp = ListParams::default().limit(500);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = crate::retry::read(3, || list_page(&client, &events_url, &lp))
                .await
                .and_then(|text| events_page(&text, &wanted, &mut by_uid));
            match page {
                Ok(next) => {
                    token = next;
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
    let events_read = started.elapsed() - listed;
    let events_ok = events_note.is_none();
    if events_ok {
        unhealthy_pods.extend(young.into_iter().filter(|p| {
            let uid = p.metadata.uid.as_deref().unwrap_or_default();
            by_uid.get(uid).is_some_and(|evs| warned(evs))
        }));
    }
    let collector = Collector::new(client, namespace.to_string(), options).sharing_across_pods();
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
        phases: vec![
            ("list pods", listed),
            ("list events", events_read),
            ("collect", started.elapsed() - listed - events_read),
        ],
    })
}

/// One page of a list, its items left undecoded.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(borrow, default)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(rename = "continue")]
    continue_: Option<String>,
}

/// One page of a list, as `Api::list` asks for it, its body undecoded.
async fn list_page(
    client: &kube::Client,
    url: &str,
    lp: &ListParams,
) -> Result<String, kube::Error> {
    let mut req = kube::core::Request::new(url)
        .list(lp)
        .map_err(kube::Error::BuildRequest)?;
    req.extensions_mut().insert("list");
    client.request_text(req).await
}

fn decode(e: serde_json::Error) -> KubeError {
    KubeError::Api(kube::Error::SerdeError(e))
}

/// The events of a page whose pod is `wanted`, into `by_uid`; the page's
/// continue token.
fn events_page(
    text: &str,
    wanted: &HashSet<String>,
    by_uid: &mut HashMap<String, Vec<Event>>,
) -> Result<Option<String>, kube::Error> {
    let page: Page = serde_json::from_str(text).map_err(kube::Error::SerdeError)?;
    for raw in page.items {
        let slim: SlimEvent = serde_json::from_str(raw.get()).map_err(kube::Error::SerdeError)?;
        let Some(uid) = slim.involved_object.uid.filter(|u| wanted.contains(u)) else {
            continue;
        };
        let e: Event = serde_json::from_str(raw.get()).map_err(kube::Error::SerdeError)?;
        by_uid.entry(uid).or_default().push(e);
    }
    Ok(page.metadata.continue_.filter(|t| !t.is_empty()))
}

/// What a scan reads of an event before decoding it whole.
#[derive(Deserialize)]
struct SlimEvent {
    #[serde(rename = "involvedObject", default)]
    involved_object: SlimRef,
}

#[derive(Deserialize, Default)]
struct SlimRef {
    uid: Option<String>,
}

/// What [`unhealthy`] reads of a pod, and nothing else: a list page's
/// healthy pods (nearly all of a large cluster's) are never decoded whole.
/// [`SlimPod::unhealthy`] is `unhealthy` on these fields; the tests hold
/// the two to the same answers.
#[derive(Deserialize)]
struct SlimPod {
    spec: Option<SlimSpec>,
    status: Option<SlimStatus>,
}

#[derive(Deserialize)]
struct SlimSpec {
    #[serde(default)]
    containers: Vec<SlimName>,
}

#[derive(Deserialize)]
struct SlimName {
    name: String,
}

#[derive(Deserialize)]
struct SlimStatus {
    phase: Option<String>,
    #[serde(rename = "containerStatuses")]
    container_statuses: Option<Vec<SlimContainer>>,
    #[serde(rename = "initContainerStatuses")]
    init_container_statuses: Option<Vec<SlimContainer>>,
}

#[derive(Deserialize)]
struct SlimContainer {
    name: String,
    #[serde(rename = "restartCount", default)]
    restart_count: i32,
    #[serde(default)]
    ready: bool,
    state: Option<SlimState>,
}

#[derive(Deserialize)]
struct SlimState {
    running: Option<IgnoredAny>,
    waiting: Option<IgnoredAny>,
    terminated: Option<SlimTerminated>,
}

#[derive(Deserialize)]
struct SlimTerminated {
    #[serde(rename = "exitCode", default)]
    exit_code: i32,
}

impl SlimPod {
    /// [`unhealthy`], read from these fields.
    fn unhealthy(&self) -> bool {
        let Some(st) = &self.status else { return true };
        match st.phase.as_deref() {
            Some("Succeeded") => return false,
            Some("Failed") | Some("Pending") => return true,
            _ => {}
        }
        let mut statuses = st
            .container_statuses
            .iter()
            .flatten()
            .chain(st.init_container_statuses.iter().flatten());
        statuses.any(|c| {
            c.restart_count > 0
                || c.state.as_ref().is_some_and(|s| {
                    s.waiting.is_some() || s.terminated.as_ref().is_some_and(|t| t.exit_code != 0)
                })
                || (!c.ready
                    && st.phase.as_deref() == Some("Running")
                    && c.state.as_ref().is_some_and(|s| s.running.is_some())
                    && self
                        .spec
                        .as_ref()
                        .is_some_and(|s| s.containers.iter().any(|x| x.name == c.name)))
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn cs(name: &str, restarts: i32, ready: bool, state: Value) -> Value {
        json!({"name": name, "image": "app:1", "imageID": "", "ready": ready,
            "restartCount": restarts, "state": state})
    }

    fn pod(phase: Option<&str>, statuses: Vec<Value>, init: Vec<Value>) -> Value {
        let mut status = json!({"containerStatuses": statuses, "initContainerStatuses": init});
        if let Some(p) = phase {
            status["phase"] = json!(p);
        }
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1",
                "labels": {"app": "web"}, "annotations": {"a": "b"},
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
            "spec": {"containers": [{"name": "app", "image": "app:1"}],
                "initContainers": [{"name": "init", "image": "init:1"}]},
            "status": status})
    }

    /// The slim answer for a pod as a list page carries it, and the whole
    /// pod's.
    fn both(v: &Value) -> (bool, bool) {
        let text = v.to_string();
        let slim: SlimPod = serde_json::from_str(&text).unwrap();
        let full: Pod = serde_json::from_str(&text).unwrap();
        (slim.unhealthy(), unhealthy(&full))
    }

    #[test]
    fn the_slim_decoding_finds_every_unhealthy_pod_unhealthy() {
        let running = json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}});
        let cases = [
            // crash-looping: a restart, waiting in the back-off
            pod(
                Some("Running"),
                vec![cs(
                    "app",
                    3,
                    false,
                    json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}),
                )],
                vec![],
            ),
            // never started: waiting with no restart
            pod(
                Some("Running"),
                vec![cs(
                    "app",
                    0,
                    false,
                    json!({"waiting": {"reason": "ImagePullBackOff"}}),
                )],
                vec![],
            ),
            // terminated with an error
            pod(
                Some("Running"),
                vec![cs(
                    "app",
                    0,
                    false,
                    json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
                )],
                vec![],
            ),
            // running, restarted once, ready again
            pod(
                Some("Running"),
                vec![cs("app", 1, true, running.clone())],
                vec![],
            ),
            // running but not ready (a failing readiness probe)
            pod(
                Some("Running"),
                vec![cs("app", 0, false, running.clone())],
                vec![],
            ),
            // an init container that restarted
            pod(
                Some("Running"),
                vec![cs("app", 0, true, running.clone())],
                vec![cs("init", 2, false, json!({"terminated": {"exitCode": 0}}))],
            ),
            pod(Some("Pending"), vec![], vec![]),
            pod(Some("Failed"), vec![], vec![]),
        ];
        for (i, c) in cases.iter().enumerate() {
            assert_eq!(both(c), (true, true), "case {i}: {c}");
        }
        // No status at all: unhealthy, as `unhealthy` says.
        let mut bare = pod(None, vec![], vec![]);
        bare.as_object_mut().unwrap().remove("status");
        assert_eq!(both(&bare), (true, true));
    }

    #[test]
    fn the_slim_decoding_leaves_healthy_pods_out_near_misses_included() {
        let running = json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}});
        let cases = [
            pod(
                Some("Running"),
                vec![cs("app", 0, true, running.clone())],
                vec![],
            ),
            // an init container that finished its work
            pod(
                Some("Running"),
                vec![cs("app", 0, true, running.clone())],
                vec![cs(
                    "init",
                    0,
                    false,
                    json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
                )],
            ),
            // terminated with exit 0 in a Running pod: not an error
            pod(
                Some("Running"),
                vec![cs(
                    "app",
                    0,
                    false,
                    json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
                )],
                vec![],
            ),
            // not ready and running, but no main container of that name
            // (the init container's status): not a readiness failure
            pod(
                Some("Running"),
                vec![cs("app", 0, true, running.clone())],
                vec![cs("init", 0, false, running.clone())],
            ),
            // a finished pod, whatever its containers say
            pod(
                Some("Succeeded"),
                vec![cs("app", 4, false, json!({"terminated": {"exitCode": 1}}))],
                vec![],
            ),
            // not ready while the phase is not Running yet
            pod(
                Some("Unknown"),
                vec![cs("app", 0, false, running.clone())],
                vec![],
            ),
        ];
        for (i, c) in cases.iter().enumerate() {
            assert_eq!(both(c), (false, false), "case {i}: {c}");
        }
    }

    #[test]
    fn a_page_keeps_only_the_wanted_pods_events() {
        let ev = |uid: Option<&str>, reason: &str| {
            json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("x.{reason}"), "namespace": "shop"},
                "involvedObject": {"kind": "Pod", "name": "web-1", "uid": uid},
                "reason": reason, "type": "Warning", "message": "m"})
        };
        let page = json!({"apiVersion": "v1", "kind": "EventList",
            "metadata": {"continue": "next"},
            "items": [ev(Some("u1"), "BackOff"), ev(Some("u2"), "Failed"),
                ev(None, "NoUid"), ev(Some("u1"), "Pulled")]});
        let wanted: HashSet<String> = ["u1".to_string()].into();
        let mut by_uid = HashMap::new();
        let next = events_page(&page.to_string(), &wanted, &mut by_uid).unwrap();
        assert_eq!(next.as_deref(), Some("next"));
        assert_eq!(by_uid.len(), 1, "{by_uid:?}");
        let reasons: Vec<_> = by_uid["u1"].iter().map(|e| e.reason.as_deref()).collect();
        assert_eq!(reasons, [Some("BackOff"), Some("Pulled")]);
        // The last page: no token; an empty one is none either.
        let last = json!({"metadata": {"continue": ""}, "items": []});
        assert_eq!(
            events_page(&last.to_string(), &wanted, &mut by_uid).unwrap(),
            None
        );
        // Near miss: a page that is not JSON is an error, not an empty page.
        assert!(events_page("<html>", &wanted, &mut by_uid).is_err());
    }
}
