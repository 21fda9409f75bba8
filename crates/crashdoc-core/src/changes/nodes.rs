//! The nodes of the failing pods against those of the last healthy ones.
//!
//! What is compared, and where each name comes from:
//! - instance type: `node.kubernetes.io/instance-type`, else the deprecated
//!   `beta.kubernetes.io/instance-type` (kubernetes v1.36.3
//!   staging/src/k8s.io/api/core/v1/well_known_labels.go
//!   `LabelInstanceTypeStable`, `LabelInstanceType`);
//! - `status.nodeInfo.kernelVersion`, `osImage`, `kubeletVersion`,
//!   `containerRuntimeVersion` (core/v1 types.go `NodeSystemInfo`);
//! - GPU feature discovery's labels (NVIDIA/k8s-device-plugin, which now
//!   holds gpu-feature-discovery: internal/lm/nvml.go `newVersionLabeler`
//!   writes `nvidia.com/cuda.driver.major|minor|rev` and
//!   `nvidia.com/cuda.runtime.major|minor`; internal/lm/resource.go
//!   `baseLabeler` writes `nvidia.com/gpu.product`);
//! - the node pool or group: `eks.amazonaws.com/nodegroup` (EKS managed node
//!   groups, docs.aws.amazon.com/eks managed-node-groups), `cloud.google.com/
//!   gke-nodepool` (GKE, cloud.google.com/kubernetes-engine docs "node
//!   labels"), `kubernetes.azure.com/agentpool` (AKS, learn.microsoft.com/
//!   azure/aks/use-labels), `karpenter.sh/nodepool` (kubernetes-sigs/karpenter
//!   pkg/apis/v1 `NodePoolLabelKey`).

use crate::ingest::rollout::Sourced;
use crate::model::{Cite, SourceKind};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// Where a node attribute is read from.
enum Read {
    /// The first of these labels the node has.
    Label(&'static [&'static str]),
    /// A `status.nodeInfo` field.
    Info(&'static str),
    /// GFD's split labels `PREFIX.PART` (`PREFIX`, `PARTS`).
    Dotted(&'static str, &'static [&'static str]),
}

impl Read {
    fn read(&self, v: &Value) -> Option<(String, String)> {
        match self {
            Read::Label(keys) => label_of(v, keys),
            Read::Info(f) => info(v, f),
            Read::Dotted(prefix, parts) => dotted(v, prefix, parts),
        }
    }
}

fn label_of(v: &Value, keys: &[&str]) -> Option<(String, String)> {
    let labels = v.pointer("/metadata/labels")?;
    keys.iter().find_map(|k| {
        labels
            .get(*k)
            .and_then(Value::as_str)
            .map(|x| (format!("metadata.labels[{k}]"), x.to_string()))
    })
}

fn info(v: &Value, f: &str) -> Option<(String, String)> {
    v.pointer(&format!("/status/nodeInfo/{f}"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|x| (format!("status.nodeInfo.{f}"), x.to_string()))
}

/// `major.minor[.rev]` from GFD's split labels.
fn dotted(v: &Value, prefix: &str, parts: &[&str]) -> Option<(String, String)> {
    let labels = v.pointer("/metadata/labels")?;
    let got: Vec<&str> = parts
        .iter()
        .map_while(|p| {
            labels
                .get(format!("{prefix}.{p}"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .collect();
    (!got.is_empty()).then(|| (format!("metadata.labels[{prefix}.*]"), got.join(".")))
}

/// Each node attribute: its name in the report and where it is read from.
const ATTRS: &[(&str, Read)] = &[
    (
        "instance type",
        Read::Label(&[
            "node.kubernetes.io/instance-type",
            "beta.kubernetes.io/instance-type",
        ]),
    ),
    (
        "node pool",
        Read::Label(&[
            "eks.amazonaws.com/nodegroup",
            "cloud.google.com/gke-nodepool",
            "kubernetes.azure.com/agentpool",
            "karpenter.sh/nodepool",
        ]),
    ),
    ("kernel", Read::Info("kernelVersion")),
    ("OS image", Read::Info("osImage")),
    ("kubelet", Read::Info("kubeletVersion")),
    ("container runtime", Read::Info("containerRuntimeVersion")),
    (
        "GPU driver",
        Read::Dotted("nvidia.com/cuda.driver", &["major", "minor", "rev"]),
    ),
    (
        "CUDA",
        Read::Dotted("nvidia.com/cuda.runtime", &["major", "minor"]),
    ),
    ("GPU product", Read::Label(&["nvidia.com/gpu.product"])),
];

/// One attribute whose values differ between the two sets of nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeDiff {
    pub attribute: &'static str,
    /// Values on the failing pods' nodes (`(unknown)` for a node without it).
    pub failing: Vec<String>,
    /// Values on the last healthy pods' nodes.
    pub healthy: Vec<String>,
    /// Every failing node has the one value, and no healthy node has it.
    pub shared_by_all_failing: bool,
    pub failing_nodes: Vec<String>,
    pub healthy_nodes: Vec<String>,
    pub evidence: Vec<Cite>,
}

impl NodeDiff {
    /// `every crashing pod runs on instance type m6i.large; the last healthy
    /// ones ran on m6i.2xlarge`.
    pub fn sentence(&self) -> String {
        format!(
            "every crashing pod runs on {} {}; the last healthy ones ran on {}",
            self.attribute,
            self.failing.join(", "),
            self.healthy.join(", ")
        )
    }
}

const UNKNOWN: &str = "(unknown)";

/// Compare the nodes (by name) the failing and the healthy pods run on.
pub fn compare(nodes: &[Sourced], failing: &[String], healthy: &[String]) -> Vec<NodeDiff> {
    let find = |name: &str| nodes.iter().find(|n| n.name() == name);
    let (f_nodes, h_nodes): (Vec<&Sourced>, Vec<&Sourced>) = (
        failing.iter().filter_map(|n| find(n)).collect(),
        healthy.iter().filter_map(|n| find(n)).collect(),
    );
    if f_nodes.is_empty() || h_nodes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, source) in ATTRS {
        let read = |ns: &[&Sourced]| -> (BTreeSet<String>, Vec<Cite>) {
            let mut vals = BTreeSet::new();
            let mut cites = Vec::new();
            for n in ns {
                match source.read(&n.value) {
                    Some((field, v)) => {
                        cites.push(n.cite(
                            SourceKind::Node,
                            &field,
                            format!("node {}: {name} {v}", n.name()),
                        ));
                        vals.insert(v);
                    }
                    None => {
                        vals.insert(UNKNOWN.to_string());
                    }
                }
            }
            (vals, cites)
        };
        let (fv, fc) = read(&f_nodes);
        let (hv, hc) = read(&h_nodes);
        if fv == hv || (fv.iter().all(|v| v == UNKNOWN) && hv.iter().all(|v| v == UNKNOWN)) {
            continue;
        }
        let shared = fv.len() == 1
            && fv.iter().all(|v| v != UNKNOWN && !hv.contains(v))
            && !hv.contains(UNKNOWN);
        let mut evidence = fc;
        evidence.extend(hc);
        evidence.dedup();
        out.push(NodeDiff {
            attribute: name,
            failing: fv.into_iter().collect(),
            healthy: hv.into_iter().collect(),
            shared_by_all_failing: shared,
            failing_nodes: f_nodes.iter().map(|n| n.name().to_string()).collect(),
            healthy_nodes: h_nodes.iter().map(|n| n.name().to_string()).collect(),
            evidence,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, itype: &str, kernel: &str, driver: Option<&str>) -> Sourced {
        let mut labels = json!({ "node.kubernetes.io/instance-type": itype, "eks.amazonaws.com/nodegroup": "general" });
        if let Some(d) = driver {
            let p: Vec<&str> = d.split('.').collect();
            labels["nvidia.com/cuda.driver.major"] = json!(p[0]);
            labels["nvidia.com/cuda.driver.minor"] = json!(p[1]);
        }
        Sourced {
            file: "nodes.json".into(),
            at: String::new(),
            value: json!({"kind":"Node","metadata":{"name":name,"labels":labels},
                "status":{"nodeInfo":{"kernelVersion":kernel,"osImage":"Ubuntu 24.04","kubeletVersion":"v1.36.3","containerRuntimeVersion":"containerd://2.1.0"}}}),
        }
    }

    #[test]
    fn a_difference_every_failing_node_shares() {
        let nodes = [
            node("a", "m6i.large", "6.8.0", Some("550.54")),
            node("b", "m6i.large", "6.8.0", Some("550.54")),
            node("c", "m6i.2xlarge", "6.8.0", Some("535.129")),
        ];
        let d = compare(&nodes, &["a".into(), "b".into()], &["c".into()]);
        let names: Vec<&str> = d.iter().map(|x| x.attribute).collect();
        assert_eq!(names, ["instance type", "GPU driver"]);
        assert!(d.iter().all(|x| x.shared_by_all_failing));
        assert_eq!(
            d[0].sentence(),
            "every crashing pod runs on instance type m6i.large; the last healthy ones ran on m6i.2xlarge"
        );
        assert!(
            d[0].evidence[0]
                .reference
                .contains("node.kubernetes.io/instance-type")
        );
    }

    #[test]
    fn near_misses_same_nodes_or_a_mixed_failing_set() {
        let nodes = [
            node("a", "m6i.large", "6.8.0", None),
            node("b", "m6i.2xlarge", "6.8.0", None),
            node("c", "m6i.2xlarge", "6.8.0", None),
        ];
        // The same kind of node on both sides: nothing to say.
        assert!(compare(&nodes, &["b".into()], &["c".into()]).is_empty());
        // Crashes on both types: a difference, but not one every crash shares.
        let d = compare(&nodes, &["a".into(), "b".into()], &["c".into()]);
        assert_eq!(d.len(), 1);
        assert!(!d[0].shared_by_all_failing);
        // No node objects for the healthy side: no comparison.
        assert!(compare(&nodes, &["a".into()], &["zzz".into()]).is_empty());
    }
}
