//! `kubectl cluster-info dump --output-directory DIR`: every unhealthy pod in
//! every namespace of the tree.

use super::{Doc, Evidence, InputError, Parts, assemble, objects};
use crate::model::*;
use crate::scan::{Catalog, LogKind};
use serde_json::Value;
use std::path::Path;

/// Whether a folder looks like a cluster-info dump.
pub fn is_dump(path: &Path) -> bool {
    // A dump's top-level nodes.json; but a pod's folder may hold the nodes
    // of its workload's pods (a bundle's `nodes.json`) beside `pod.json`.
    let pod_folder = ["pod.json", "pod.yaml", "pod.yml", "workload-pods.json"]
        .iter()
        .any(|f| path.join(f).is_file());
    if path.join("nodes.json").is_file() && !pod_folder {
        return true;
    }
    std::fs::read_dir(path)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .any(|e| e.path().join("pods.json").is_file())
        })
        .unwrap_or(false)
}

fn read_json(path: &Path) -> Option<(String, Value)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (v, _) = objects::parse_tree(&text);
    Some((text, v?))
}

/// Read every unhealthy pod of a dump.
pub fn read(root: &Path) -> Result<Evidence, InputError> {
    let mut ev = Evidence::default();
    let nodes_doc = std::fs::read_to_string(root.join("nodes.json"))
        .ok()
        .map(|text| Doc {
            name: "nodes.json".into(),
            text,
            line_offset: 0,
        });
    let nodes = nodes_doc
        .as_ref()
        .map(|d| objects::parse(d).nodes)
        .unwrap_or_default();
    let mut namespaces: Vec<_> = std::fs::read_dir(root)
        .map_err(|source| InputError::Io {
            path: root.to_path_buf(),
            source,
        })?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("pods.json").is_file())
        .collect();
    namespaces.sort_by_key(|e| e.file_name());
    for ns in namespaces {
        let dir = ns.path();
        let ns_name = ns.file_name().to_string_lossy().into_owned();
        let Some((pods_text, _)) = read_json(&dir.join("pods.json")) else {
            ev.notes
                .push(format!("{ns_name}/pods.json could not be read"));
            continue;
        };
        let pods_doc = Doc {
            name: format!("{ns_name}/pods.json"),
            text: pods_text,
            line_offset: 0,
        };
        let pods = objects::parse(&pods_doc).pods;
        let rollout = std::sync::Arc::new(namespace_rollout(
            &dir,
            &ns_name,
            &pods_doc,
            nodes_doc.as_ref(),
        ));
        let events = std::fs::read_to_string(dir.join("events.json"))
            .ok()
            .map(|text| {
                objects::parse(&Doc {
                    name: format!("{ns_name}/events.json"),
                    text,
                    line_offset: 0,
                })
                .events
            })
            .unwrap_or_default();
        // ReplicaSet -> Deployment, for the owner chain.
        let rs_owner: Vec<(String, String)> = read_json(&dir.join("replicasets.json"))
            .and_then(|(_, v)| v.get("items").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|rs| {
                let name = rs.pointer("/metadata/name")?.as_str()?.to_string();
                let dep = rs
                    .pointer("/metadata/ownerReferences/0/name")?
                    .as_str()?
                    .to_string();
                Some((name, dep))
            })
            .collect();
        for mut pod in pods {
            if !unhealthy(&pod) {
                continue;
            }
            let name = pod.name.clone().unwrap_or_default();
            pod.namespace.get_or_insert(ns_name.clone());
            if let Some(o) = &mut pod.owner
                && o.kind == "ReplicaSet"
                && let Some((_, dep)) = rs_owner.iter().find(|(rs, _)| *rs == o.name)
            {
                *o = Owner {
                    kind: "Deployment".into(),
                    name: dep.clone(),
                    observed: true,
                };
            }
            let mut parts = Parts {
                events: events
                    .iter()
                    .filter(|e| {
                        e.object
                            .as_deref()
                            .is_some_and(|o| o.starts_with(&format!("pod/{name}")))
                    })
                    .cloned()
                    .collect(),
                ..Default::default()
            };
            let log_path = dir.join(&name).join("logs.txt");
            if let Ok(f) = std::fs::File::open(&log_path) {
                let file = format!("{ns_name}/{name}/logs.txt");
                match Catalog::global().scan(f, &file, LogKind::Current, None) {
                    Ok(s) => parts.logs.push(s),
                    Err(e) => parts.notes.push(format!("could not read {file}: {e}")),
                }
            }
            parts.sources.push(pods_doc.name.clone());
            let mut e = assemble(parts);
            let mut p = e.pods.pop().unwrap_or_default();
            // The pod object is the primary evidence; the assembled parts add events and logs.
            pod.events.append(&mut p.events);
            pod.logs.append(&mut p.logs);
            pod.sources.append(&mut p.sources);
            pod.node = pod
                .node_name
                .as_ref()
                .and_then(|n| nodes.iter().find(|x| &x.name == n).cloned());
            pod.rollout = rollout.clone();
            ev.pods.push(pod);
        }
    }
    if ev.pods.is_empty() {
        ev.notes.push("the dump holds no unhealthy pod".into());
    }
    Ok(ev)
}

/// What a revision comparison reads in a dump's namespace: its ReplicaSets,
/// every pod, the nodes and the events (a dump has no ControllerRevisions).
fn namespace_rollout(
    dir: &Path,
    ns: &str,
    pods: &Doc,
    nodes: Option<&Doc>,
) -> super::rollout::RolloutInput {
    use super::rollout::{RolloutFile, RolloutInput};
    let mut r = RolloutInput::default();
    let doc = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .ok()
            .map(|text| Doc {
                name: format!("{ns}/{file}"),
                text,
                line_offset: 0,
            })
    };
    if let Some(d) = doc("replicasets.json") {
        let _ = r.read_file(RolloutFile::ReplicaSets, &d);
    }
    let _ = r.read_file(RolloutFile::WorkloadPods, pods);
    if let Some(d) = nodes {
        let _ = r.read_file(RolloutFile::Nodes, d);
    }
    if let Some(d) = doc("events.json") {
        r.collect(&d);
    }
    // A dump is not a capture made for the comparison: one revision alone
    // is nothing to compare, and says nothing.
    r.dedicated = false;
    r
}

/// A pod worth diagnosing: not Succeeded, and not Running with every
/// container ready and never restarted.
pub fn unhealthy(p: &Pod) -> bool {
    if p.phase_is("Succeeded") {
        return false;
    }
    let all_fine = p.phase_is("Running")
        && p.containers
            .iter()
            .filter(|c| c.kind != ContainerKind::Init)
            .all(|c| c.ready == Some(true) && c.restarts() == 0);
    !all_fine
}
