//! A workload's revisions from whatever the input holds: ReplicaSets (a
//! Deployment), ControllerRevisions (a StatefulSet or DaemonSet), pasted
//! `kubectl rollout history --revision=N`, or pods of different revisions.
//!
//! Sources (kubernetes v1.36.3 / k8s.io/api v0.36.3):
//! - ReplicaSet revision: annotation `deployment.kubernetes.io/revision`
//!   (pkg/controller/deployment/util/deployment_util.go `RevisionAnnotation`);
//!   its pods carry `pod-template-hash` (k8s.io/api apps/v1 types.go
//!   `DefaultDeploymentUniqueLabelKey`), also the ReplicaSet's name suffix.
//! - ControllerRevision: `.revision` is the number and `.data` the patch
//!   `{"spec":{"template":{..., "$patch":"replace"}}}` (pkg/controller/
//!   statefulset/stateful_set_utils.go `getPatch`/`newRevision`, pkg/controller/
//!   daemon/update.go `getPatch`/`snapshot`); pods carry
//!   `controller-revision-hash` (apps/v1 `ControllerRevisionHashLabelKey`):
//!   the revision's name for a StatefulSet, the hash (the name's suffix, also
//!   the revision's own label) for a DaemonSet.

use crate::ingest::rollout::{RolloutInput, Sourced};
use crate::model::{Cite, SourceKind};
use crate::time::parse_timestamp;
use serde_json::{Map, Value};

pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";

/// Labels a controller adds to each pod (and, for the hash, to the
/// template of its ReplicaSet): they differ between revisions by design.
pub const GENERATED_LABELS: &[&str] = &[
    POD_TEMPLATE_HASH,
    CONTROLLER_REVISION_HASH,
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "pod-template-generation",
];

/// One revision of the workload and its pod template.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    pub number: Option<u64>,
    /// The ReplicaSet's or ControllerRevision's name, else `revision N` or
    /// the pods' hash.
    pub name: String,
    /// What the revision's pods carry as `pod-template-hash` or
    /// `controller-revision-hash`.
    pub hashes: Vec<String>,
    /// When it rolled out: the ReplicaSet's or ControllerRevision's
    /// `creationTimestamp`.
    pub rolled_out: Option<String>,
    pub template: Value,
    /// `spec.replicas` / `status.readyReplicas` of a ReplicaSet.
    pub replicas: Option<u64>,
    pub ready: Option<u64>,
    /// The owning workload (`Deployment`, `web`), from ownerReferences.
    pub owner: Option<(String, String)>,
    /// Read back from `kubectl rollout history` text, which prints only
    /// part of a template (see `changes::project`).
    pub printed: bool,
    /// Made from a pod's spec (no ReplicaSet or history of it): admission
    /// adds fields to pods (default tolerations, priority, LimitRanger's
    /// resources) that templates lack, so it is compared with pods only.
    pub from_pod: bool,
    pub cite: Cite,
}

impl Revision {
    pub fn rolled_out_secs(&self) -> Option<i64> {
        parse_timestamp(self.rolled_out.as_deref()?)
    }

    /// Whether a pod with these labels runs this revision.
    pub fn runs(&self, pod: &Value) -> bool {
        [POD_TEMPLATE_HASH, CONTROLLER_REVISION_HASH]
            .iter()
            .filter_map(|l| label(pod, l))
            .any(|h| self.hashes.iter().any(|x| x == h) || self.name.ends_with(&format!("-{h}")))
            || owner_name(pod).is_some_and(|o| o == self.name)
    }
}

/// The label's value on an object.
pub fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

fn owner_ref(v: &Value) -> Option<(String, String)> {
    let owners = v.pointer("/metadata/ownerReferences")?.as_array()?;
    let o = owners
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .or(owners.first())?;
    Some((
        o.get("kind")?.as_str()?.to_string(),
        o.get("name")?.as_str()?.to_string(),
    ))
}

/// The workload a pod belongs to: (`Deployment`, `web`) for a pod of
/// ReplicaSet `web-<pod-template-hash>`, the StatefulSet or DaemonSet named
/// by its owner, else what its name suggests.
pub fn workload_key(pod: &Value) -> Option<(String, String)> {
    match owner_ref(pod) {
        Some((kind, name)) if kind == "ReplicaSet" => {
            let base = label(pod, POD_TEMPLATE_HASH)
                .and_then(|h| name.strip_suffix(&format!("-{h}")))
                .map(str::to_string)
                .or_else(|| {
                    crate::ingest::infer_owner(&format!("{name}-xxxxx"))
                        .filter(|o| o.kind == "Deployment")
                        .map(|o| o.name)
                });
            Some(match base {
                Some(b) => ("Deployment".into(), b),
                None => (kind, name),
            })
        }
        Some(k) => Some(k),
        None => {
            let o = crate::ingest::infer_owner(pod.pointer("/metadata/name")?.as_str()?)?;
            Some((o.kind, o.name))
        }
    }
}

fn owner_name(pod: &Value) -> Option<String> {
    owner_ref(pod).map(|(_, n)| n)
}

fn str_at(v: &Value, p: &str) -> Option<String> {
    v.pointer(p).and_then(Value::as_str).map(str::to_string)
}

fn from_replica_set(s: &Sourced) -> Revision {
    let v = &s.value;
    let number = v
        .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
        .and_then(Value::as_str)
        .and_then(|n| n.trim().parse().ok());
    let mut hashes: Vec<String> = [
        label(v, POD_TEMPLATE_HASH),
        label(v, CONTROLLER_REVISION_HASH),
    ]
    .into_iter()
    .flatten()
    .map(str::to_string)
    .collect();
    if let Some(h) = v
        .pointer("/spec/template/metadata/labels")
        .and_then(|l| l.get(POD_TEMPLATE_HASH))
        .and_then(Value::as_str)
    {
        hashes.push(h.to_string());
    }
    Revision {
        number,
        name: s.name().to_string(),
        hashes,
        rolled_out: str_at(v, "/metadata/creationTimestamp"),
        template: v.pointer("/spec/template").cloned().unwrap_or(Value::Null),
        replicas: Some(
            v.pointer("/spec/replicas")
                .and_then(Value::as_u64)
                .unwrap_or(1),
        ),
        ready: Some(
            v.pointer("/status/readyReplicas")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        ),
        owner: owner_ref(v),
        printed: false,
        from_pod: false,
        cite: s.cite(
            SourceKind::Object,
            "metadata.annotations[deployment.kubernetes.io/revision]",
            format!(
                "ReplicaSet {} revision {}",
                s.name(),
                number.map_or("?".to_string(), |n| n.to_string())
            ),
        ),
    }
}

/// The pod template a ControllerRevision's `.data` patch replaces.
pub fn controller_revision_template(cr: &Value) -> Option<Value> {
    let mut t = cr.pointer("/data/spec/template")?.clone();
    if let Some(m) = t.as_object_mut() {
        m.remove("$patch");
    }
    Some(t)
}

fn from_controller_revision(s: &Sourced) -> Option<Revision> {
    let v = &s.value;
    let template = controller_revision_template(v)?;
    let number = v.get("revision").and_then(Value::as_u64);
    let name = s.name().to_string();
    let mut hashes = vec![name.clone()];
    if let Some(h) = label(v, CONTROLLER_REVISION_HASH) {
        hashes.push(h.to_string());
    }
    if let Some((_, suffix)) = name.rsplit_once('-') {
        hashes.push(suffix.to_string());
    }
    Some(Revision {
        number,
        cite: s.cite(
            SourceKind::Object,
            "revision",
            format!(
                "ControllerRevision {name} revision {}",
                number.map_or("?".to_string(), |n| n.to_string())
            ),
        ),
        name,
        hashes,
        rolled_out: str_at(v, "/metadata/creationTimestamp"),
        template,
        replicas: None,
        ready: None,
        owner: owner_ref(v),
        printed: false,
        from_pod: false,
    })
}

/// A pod's spec as a template: what a controller or the kubelet fills in
/// per pod (node, the service-account token volume) left out.
pub fn template_of_pod(pod: &Value) -> Value {
    let mut spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(m) = spec.as_object_mut() {
        for f in ["nodeName", "hostname"] {
            m.remove(f);
        }
        // kube-api-access-XXXXX: the projected token volume the
        // ServiceAccount admission adds to each pod, named at random
        // (kubernetes v1.36.3 plugin/pkg/admission/serviceaccount/admission.go).
        let generated = |n: &str| n.starts_with("kube-api-access-");
        if let Some(vols) = m.get_mut("volumes").and_then(Value::as_array_mut) {
            vols.retain(|v| !v.get("name").and_then(Value::as_str).is_some_and(generated));
        }
        for list in ["containers", "initContainers"] {
            for c in m
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(ms) = c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
                    ms.retain(|v| !v.get("name").and_then(Value::as_str).is_some_and(generated));
                }
            }
        }
    }
    let mut meta = Map::new();
    for f in ["labels", "annotations"] {
        if let Some(x) = pod.pointer(&format!("/metadata/{f}")) {
            meta.insert(f.into(), x.clone());
        }
    }
    serde_json::json!({ "metadata": meta, "spec": spec })
}

/// Every revision the input tells, one per number (a ReplicaSet or
/// ControllerRevision before a pasted history of the same number), newest
/// first.
pub fn collect(input: &RolloutInput) -> Vec<Revision> {
    let mut out: Vec<Revision> = input.replica_sets.iter().map(from_replica_set).collect();
    out.extend(
        input
            .controller_revisions
            .iter()
            .filter_map(from_controller_revision),
    );
    for h in &input.history {
        let Some(t) = &h.template else { continue };
        if h.number.is_some() && out.iter().any(|r| r.number == h.number) {
            continue;
        }
        let hash = t
            .pointer("/metadata/labels")
            .and_then(|l| {
                l.get(POD_TEMPLATE_HASH)
                    .or_else(|| l.get(CONTROLLER_REVISION_HASH))
            })
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push(Revision {
            number: h.number,
            name: h
                .number
                .map(|n| format!("revision {n}"))
                .unwrap_or_else(|| "a pasted revision".into()),
            hashes: hash.into_iter().collect(),
            rolled_out: None,
            template: t.clone(),
            replicas: None,
            ready: None,
            owner: h
                .workload
                .as_ref()
                .map(|(k, n)| (resource_kind(k), n.clone())),
            printed: true,
            from_pod: false,
            cite: h.cite.clone(),
        });
    }
    out.sort_by_key(|r| std::cmp::Reverse((r.number, r.rolled_out_secs())));
    out
}

/// `deployment.apps` -> `Deployment`.
fn resource_kind(resource: &str) -> String {
    match resource.split('.').next().unwrap_or(resource) {
        "deployment" | "deployments" | "deploy" => "Deployment".into(),
        "statefulset" | "statefulsets" | "sts" => "StatefulSet".into(),
        "daemonset" | "daemonsets" | "ds" => "DaemonSet".into(),
        other => other.to_string(),
    }
}

/// Pods without a known revision, grouped by their hash label: each group
/// is a revision of its own (two pasted pod specs of different revisions).
pub fn from_pods(pods: &[&Sourced], known: &[Revision]) -> Vec<Revision> {
    let mut out: Vec<Revision> = Vec::new();
    for p in pods {
        // A status without a spec is no template to compare.
        let has_spec = p
            .value
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        if !has_spec || known.iter().any(|r| r.runs(&p.value)) {
            continue;
        }
        let hash = label(&p.value, POD_TEMPLATE_HASH)
            .or_else(|| label(&p.value, CONTROLLER_REVISION_HASH))
            .map(str::to_string);
        let Some(hash) = hash else { continue };
        if out.iter().any(|r| r.hashes.contains(&hash)) {
            continue;
        }
        out.push(Revision {
            number: None,
            name: hash.clone(),
            hashes: vec![hash.clone()],
            rolled_out: None,
            template: template_of_pod(&p.value),
            replicas: None,
            ready: None,
            owner: None,
            printed: false,
            from_pod: true,
            cite: p.cite(
                SourceKind::Spec,
                &format!("metadata.labels[{POD_TEMPLATE_HASH}]"),
                format!("pod {} runs template {hash}", p.name()),
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sourced(v: Value) -> Sourced {
        Sourced {
            file: "replicasets.json".into(),
            at: "items[0]".into(),
            value: v,
        }
    }

    #[test]
    fn a_controller_revision_gives_its_template_without_the_patch_marker() {
        let cr = json!({"kind":"ControllerRevision","metadata":{"name":"db-7d9c6b5f8","creationTimestamp":"2026-11-30T10:00:00Z","labels":{"controller-revision-hash":"7d9c6b5f8"}},"revision":4,
            "data":{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres:17"}]}}}}});
        let r = from_controller_revision(&sourced(cr)).unwrap();
        assert_eq!(r.number, Some(4));
        assert!(r.template.get("$patch").is_none());
        assert_eq!(r.template["spec"]["containers"][0]["image"], "postgres:17");
        // A StatefulSet's pod names the revision; a DaemonSet's, the hash.
        assert!(
            r.runs(&json!({"metadata":{"labels":{"controller-revision-hash":"db-7d9c6b5f8"}}}))
        );
        assert!(r.runs(&json!({"metadata":{"labels":{"controller-revision-hash":"7d9c6b5f8"}}})));
        assert!(
            !r.runs(&json!({"metadata":{"labels":{"controller-revision-hash":"db-5f6d7c8b9"}}}))
        );
        let no_data = json!({"kind":"ControllerRevision","metadata":{"name":"x"},"revision":1});
        assert!(from_controller_revision(&sourced(no_data)).is_none());
    }

    #[test]
    fn a_pods_template_leaves_out_what_each_pod_gets() {
        let pod = |node: &str, token: &str| {
            json!({"metadata":{"name":"web-1","labels":{"app":"web"}},"spec":{"nodeName":node,
                "volumes":[{"name":token,"projected":{}},{"name":"config","configMap":{"name":"c"}}],
                "containers":[{"name":"app","image":"web:1","volumeMounts":[{"name":token,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]}]}})
        };
        let a = template_of_pod(&pod("node-a", "kube-api-access-abcde"));
        let b = template_of_pod(&pod("node-b", "kube-api-access-vwxyz"));
        assert!(crate::changes::diff_templates(&a, &b).is_empty());
        assert_eq!(a["spec"]["volumes"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn revisions_are_newest_first_and_a_history_does_not_repeat_a_replica_set() {
        let rs = |n: u64, name: &str| {
            json!({"kind":"ReplicaSet","metadata":{"name":name,"annotations":{"deployment.kubernetes.io/revision":n.to_string()},"labels":{"pod-template-hash":name.rsplit('-').next().unwrap()}},
                "spec":{"template":{"spec":{"containers":[{"name":"app","image":format!("web:{n}")}]}}}})
        };
        let mut input = RolloutInput {
            replica_sets: vec![
                sourced(rs(2, "web-6d4cf56db6")),
                sourced(rs(3, "web-7d9c6b5f8")),
            ],
            ..Default::default()
        };
        input.history.push(crate::ingest::history::HistoryRevision {
            number: Some(3),
            workload: None,
            template: Some(json!({})),
            change_cause: None,
            cite: Cite::new(SourceKind::Spec, "h", ""),
        });
        let r = collect(&input);
        assert_eq!(
            r.iter().map(|r| r.number).collect::<Vec<_>>(),
            [Some(3), Some(2)]
        );
        assert!(r[0].runs(&json!({"metadata":{"labels":{"pod-template-hash":"7d9c6b5f8"}}})));
        assert!(!r[1].runs(&json!({"metadata":{"labels":{"pod-template-hash":"7d9c6b5f8"}}})));
    }
}
