//! What a revision comparison (issue 11, [`crate::changes::analyze`])
//! reads: the workload's ReplicaSets or ControllerRevisions, its pods of
//! every revision, their nodes, pasted rollout history, and the times of
//! the ConfigMaps and Secrets the pod references. Kept as the objects
//! themselves (a secret's values dropped), each with the file it came from.
//!
//! Read from the bundle files `replicasets.json`, `controllerrevisions.json`,
//! `workload-pods.json`, `nodes.json`, `rollout-history.txt` (also `.yaml`),
//! and from any YAML/JSON document of objects (two pasted ReplicaSets or
//! pods of different revisions, `pod.json`, `replicaset.json`, a ConfigMap).

use super::Doc;
use super::history::{self, HistoryRevision};
use super::objects::parse_tree;
use crate::model::{Cite, SourceKind};
use serde_json::Value;

/// Which revision file (by its bundle name, see `bundle::file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutFile {
    ReplicaSets,
    ControllerRevisions,
    WorkloadPods,
    Nodes,
    History,
}

/// An object and where it was read: `replicasets.json items[1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced {
    pub file: String,
    /// `items[N]` in a list, empty for a single object.
    pub at: String,
    pub value: Value,
}

impl Sourced {
    /// A citation of `field` (a dotted path under the object).
    pub fn cite(&self, source: SourceKind, field: &str, text: impl Into<String>) -> Cite {
        let at = if self.at.is_empty() {
            String::new()
        } else {
            format!(" {}", self.at)
        };
        Cite::new(source, format!("{}{at} {field}", self.file), text)
    }

    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A ConfigMap or Secret as the comparison needs it: key names and when it
/// last changed. Never a value.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigTime {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    pub name: String,
    pub exists: Option<bool>,
    pub keys: Vec<String>,
    /// RFC 3339: newest `managedFields[].time`, else `creationTimestamp`.
    pub changed: Option<String>,
    pub cite: Cite,
}

/// An event with its times (BackOff, Killing...), for the first crash.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    pub reason: String,
    /// The involved object's name (a pod).
    pub object: String,
    pub first: Option<String>,
    pub last: Option<String>,
    pub count: Option<u64>,
    pub cite: Cite,
}

/// Everything a revision comparison reads for one folder (shared by its pods).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutInput {
    pub replica_sets: Vec<Sourced>,
    pub controller_revisions: Vec<Sourced>,
    pub workload_pods: Vec<Sourced>,
    pub nodes: Vec<Sourced>,
    pub history: Vec<HistoryRevision>,
    /// Pods read from other documents (`pod.json`, pasted pod YAML).
    pub pods: Vec<Sourced>,
    /// Deployment / StatefulSet / DaemonSet objects.
    pub workloads: Vec<Sourced>,
    pub config: Vec<ConfigTime>,
    pub events: Vec<TimedEvent>,
    /// A file made for the comparison was read (not just the owner chain).
    pub dedicated: bool,
}

impl RolloutInput {
    pub fn is_empty(&self) -> bool {
        *self == RolloutInput::default()
    }

    /// Read one of the revision files. Returns a note when it held nothing.
    pub fn read_file(&mut self, kind: RolloutFile, doc: &Doc) -> Option<String> {
        self.dedicated = true;
        if kind == RolloutFile::History {
            let found = history::parse(doc);
            if found.is_empty() {
                return Some(format!(
                    "{}: no `kubectl rollout history` output found",
                    doc.name
                ));
            }
            self.history.extend(found);
            return None;
        }
        let (tree, partial) = parse_tree(&doc.text);
        let Some(tree) = tree else {
            return Some(format!(
                "{}: {}",
                doc.name,
                partial.unwrap_or_else(|| "not YAML or JSON".into())
            ));
        };
        let before = self.count();
        for (at, v) in items(&tree) {
            if v.pointer("/metadata/name").is_none() {
                continue;
            }
            let s = Sourced {
                file: doc.name.clone(),
                at,
                value: v.clone(),
            };
            let kind_field = v.get("kind").and_then(Value::as_str).unwrap_or("");
            match (kind, kind_field) {
                (RolloutFile::ReplicaSets, "ReplicaSet" | "") => self.replica_sets.push(s),
                (RolloutFile::ControllerRevisions, "ControllerRevision" | "") => {
                    self.controller_revisions.push(s)
                }
                (RolloutFile::WorkloadPods, "Pod" | "") => self.workload_pods.push(s),
                (RolloutFile::Nodes, "Node" | "") => self.nodes.push(s),
                _ => self.collect_one(s),
            }
        }
        let mut note = partial.map(|p| format!("{}: {p}", doc.name));
        if self.count() == before {
            note = Some(format!("{}: no objects found", doc.name));
        }
        note
    }

    fn count(&self) -> usize {
        self.replica_sets.len()
            + self.controller_revisions.len()
            + self.workload_pods.len()
            + self.nodes.len()
    }

    /// Objects of any other YAML/JSON document: ReplicaSets, ControllerRevisions,
    /// pods, nodes, workloads, ConfigMaps/Secrets (names and times only), events.
    pub fn collect(&mut self, doc: &Doc) {
        if doc.text.len() > 16 << 20 {
            return;
        }
        let (Some(tree), _) = parse_tree(&doc.text) else {
            return;
        };
        for (at, v) in items(&tree) {
            self.collect_one(Sourced {
                file: doc.name.clone(),
                at,
                value: v.clone(),
            });
        }
    }

    fn collect_one(&mut self, s: Sourced) {
        let kind = s.value.get("kind").and_then(Value::as_str).unwrap_or("");
        match kind {
            "ReplicaSet" => push_new(&mut self.replica_sets, s),
            "ControllerRevision" => push_new(&mut self.controller_revisions, s),
            "Pod" => push_new(&mut self.pods, s),
            "Node" => push_new(&mut self.nodes, s),
            "Deployment" | "StatefulSet" | "DaemonSet" => push_new(&mut self.workloads, s),
            "ConfigMap" | "Secret" => self.config.push(config_time(&s, kind)),
            "Event" => {
                if let Some(e) = timed_event(&s) {
                    self.events.push(e);
                }
            }
            _ => {}
        }
    }

    /// Add another folder's input (a paste's sections, one folder's files).
    pub fn extend(&mut self, other: RolloutInput) {
        let RolloutInput {
            replica_sets,
            controller_revisions,
            workload_pods,
            nodes,
            history,
            pods,
            workloads,
            config,
            events,
            dedicated,
        } = other;
        for s in replica_sets {
            push_new(&mut self.replica_sets, s);
        }
        for s in controller_revisions {
            push_new(&mut self.controller_revisions, s);
        }
        for s in workload_pods {
            push_new(&mut self.workload_pods, s);
        }
        for s in nodes {
            push_new(&mut self.nodes, s);
        }
        for s in pods {
            push_new(&mut self.pods, s);
        }
        for s in workloads {
            push_new(&mut self.workloads, s);
        }
        self.history.extend(history);
        self.config.extend(config);
        self.events.extend(events);
        self.dedicated |= dedicated;
    }
}

/// The same object (by name and uid or, without, its content) once.
fn push_new(list: &mut Vec<Sourced>, s: Sourced) {
    let key = |v: &Value| {
        (
            v.pointer("/metadata/name").cloned(),
            v.pointer("/metadata/uid").cloned(),
            v.pointer("/metadata/resourceVersion").cloned(),
        )
    };
    if !list.iter().any(|x| key(&x.value) == key(&s.value)) {
        list.push(s);
    }
}

/// The objects of a tree: the items of a list, else the object itself.
fn items(tree: &Value) -> Vec<(String, &Value)> {
    if let Some(items) = tree.get("items").and_then(Value::as_array) {
        return items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("items[{i}]"), v))
            .collect();
    }
    if let Some(a) = tree.as_array() {
        return a
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("[{i}]"), v))
            .collect();
    }
    vec![(String::new(), tree)]
}

/// Key names and the newest change time; the values are not kept.
fn config_time(s: &Sourced, kind: &str) -> ConfigTime {
    let v = &s.value;
    let mut keys = Vec::new();
    for field in ["data", "stringData", "binaryData"] {
        if let Some(m) = v.get(field).and_then(Value::as_object) {
            keys.extend(m.keys().cloned());
        }
    }
    keys.sort();
    keys.dedup();
    let changed = newest_change(v);
    let name = s.name().to_string();
    ConfigTime {
        kind: kind.to_string(),
        cite: s.cite(
            SourceKind::Object,
            "metadata.managedFields[].time",
            format!(
                "{kind} {name} changed {}",
                changed.as_deref().unwrap_or("(unknown)")
            ),
        ),
        name,
        exists: Some(true),
        keys,
        changed,
    }
}

/// The newest `metadata.managedFields[].time`, else `creationTimestamp`
/// (the time the apiserver records for each write: k8s.io/apimachinery
/// v0.36.3 pkg/apis/meta/v1/types.go `ManagedFieldsEntry.Time`).
pub fn newest_change(v: &Value) -> Option<String> {
    let times = v
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("time").and_then(Value::as_str))
                .filter_map(|t| crate::time::parse_timestamp(t).map(|s| (s, t)))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    times
        .into_iter()
        .max_by_key(|(s, _)| *s)
        .map(|(_, t)| t.to_string())
        .or_else(|| {
            v.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

fn timed_event(s: &Sourced) -> Option<TimedEvent> {
    let v = &s.value;
    let str_at = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let reason = str_at("/reason")?;
    let object = str_at("/involvedObject/name").or_else(|| str_at("/regarding/name"))?;
    let first = str_at("/firstTimestamp")
        .or_else(|| str_at("/eventTime"))
        .or_else(|| str_at("/deprecatedFirstTimestamp"));
    let last = str_at("/lastTimestamp").or_else(|| str_at("/series/lastObservedTime"));
    let count = v
        .get("count")
        .or_else(|| v.pointer("/series/count"))
        .and_then(Value::as_u64);
    let cite = s.cite(
        SourceKind::Event,
        "firstTimestamp",
        format!(
            "{reason} {object} first {}",
            first.as_deref().unwrap_or("(unknown)")
        ),
    );
    Some(TimedEvent {
        reason,
        object,
        first,
        last,
        count,
        cite,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::doc;

    #[test]
    fn a_list_file_is_read_by_kind() {
        let mut r = RolloutInput::default();
        let note = r.read_file(
            RolloutFile::ReplicaSets,
            &doc(
                "replicasets.json",
                r#"{"kind":"List","items":[{"kind":"ReplicaSet","metadata":{"name":"web-a"}},{"kind":"ReplicaSet","metadata":{"name":"web-b"}}]}"#,
            ),
        );
        assert_eq!(note, None);
        assert_eq!(r.replica_sets.len(), 2);
        assert_eq!(r.replica_sets[1].at, "items[1]");
        assert!(r.dedicated);
        let bad = r.read_file(RolloutFile::Nodes, &doc("nodes.json", "{}"));
        assert!(bad.is_some_and(|n| n.contains("no objects")));
    }

    #[test]
    fn config_objects_keep_names_and_times_not_values() {
        let mut r = RolloutInput::default();
        r.collect(&doc(
            "secret.yaml",
            "kind: Secret\nmetadata:\n  name: db\n  creationTimestamp: \"2026-11-01T00:00:00Z\"\n  managedFields:\n  - time: \"2026-11-30T09:00:00Z\"\n  - time: \"2026-11-20T09:00:00Z\"\ndata:\n  password: c2VjcmV0LXZhbHVl\n",
        ));
        assert_eq!(r.config.len(), 1);
        let c = &r.config[0];
        assert_eq!(c.keys, ["password"]);
        assert_eq!(c.changed.as_deref(), Some("2026-11-30T09:00:00Z"));
        let all = format!("{r:?}");
        assert!(!all.contains("c2VjcmV0") && !all.contains("secret-value"));
    }

    #[test]
    fn other_kinds_are_left_out() {
        let mut r = RolloutInput::default();
        r.collect(&doc("x.yaml", "kind: Service\nmetadata:\n  name: web\n"));
        assert!(r.is_empty());
    }
}
