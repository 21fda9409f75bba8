//! Run options and the config file (`--config`).
//!
//! ```yaml
//! # .crashdoc-lint.yaml
//! ignore:
//!   - image/mutable-tag                      # everywhere
//!   - probe/liveness-equals-readiness:Deployment/web   # one object (Kind/name)
//! require-digest: true                       # image/no-digest becomes active
//! capacity:
//!   gpu: 8
//!   memory: 512Gi
//! ```

use crate::input::{Input, Object};
use serde::Deserialize;

/// What the cluster can hold, for the rollout checks (`--capacity gpu=8`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capacity {
    pub gpu: Option<u64>,
    /// Bytes.
    pub memory: Option<f64>,
    /// Where the figures come from (`--capacity`, the config, the nodes'
    /// allocatable), said in the output.
    pub source: Option<String>,
}

impl Capacity {
    /// `gpu=8`, `memory=512Gi`, or both separated by commas.
    pub fn parse_into(&mut self, s: &str) -> Result<(), String> {
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                format!("`{part}` is not RESOURCE=AMOUNT (e.g. gpu=8, memory=512Gi)")
            })?;
            match k.trim() {
                "gpu" | "nvidia.com/gpu" => {
                    self.gpu = Some(
                        v.trim()
                            .parse()
                            .map_err(|_| format!("`{v}` is not a GPU count"))?,
                    )
                }
                "memory" => {
                    self.memory = Some(
                        crate::k8s::quantity(v.trim())
                            .ok_or_else(|| format!("`{v}` is not a memory quantity like 512Gi"))?,
                    )
                }
                other => return Err(format!("unknown capacity resource `{other}` (gpu, memory)")),
            }
        }
        Ok(())
    }
}

/// The config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// `check-id` or `check-id:Kind/name`.
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default)]
    pub require_digest: bool,
    #[serde(default)]
    pub capacity: Option<CapacityConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityConfig {
    pub gpu: Option<u64>,
    pub memory: Option<String>,
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl Config {
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let c: Config = serde_saphyr::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        for i in &c.ignore {
            let id = i.split(':').next().unwrap_or("");
            if crate::check(id).is_none() {
                return Err(ConfigError(format!(
                    "ignore: `{id}` is not a check id (see `crashdoc lint --list`)"
                )));
            }
        }
        Ok(c)
    }

    /// Whether the config suppresses `id` on `obj`.
    pub fn ignores(&self, id: &str, obj: &Object) -> bool {
        self.ignore.iter().any(|i| match i.split_once(':') {
            None => i == id,
            Some((cid, target)) => {
                cid == id
                    && (target == format!("{}/{}", obj.kind, obj.name)
                        || target.eq_ignore_ascii_case(&format!("{}/{}", obj.kind, obj.name)))
            }
        })
    }
}

/// Everything a run needs besides the input.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub config: Config,
    pub capacity: Capacity,
    /// The older render, for `--against OLD`.
    pub against: Option<Input>,
    /// `image/no-digest` applies (`--require-digest` or the config).
    pub require_digest: bool,
}

impl Options {
    /// Fold the config file's settings into the options (flags win).
    pub fn with_config(mut self, c: Config) -> Result<Options, ConfigError> {
        self.require_digest |= c.require_digest;
        if let Some(cap) = &c.capacity {
            if self.capacity.gpu.is_none() {
                self.capacity.gpu = cap.gpu;
            }
            if self.capacity.memory.is_none()
                && let Some(m) = &cap.memory
            {
                self.capacity.memory = Some(crate::k8s::quantity(m).ok_or_else(|| {
                    ConfigError(format!("capacity.memory: `{m}` is not a quantity"))
                })?);
            }
        }
        self.config = c;
        Ok(self)
    }
}

impl Capacity {
    /// The capacity of a cluster from its Node objects (as `list nodes`
    /// returns them): the sum of `status.allocatable` `nvidia.com/gpu` and
    /// `memory` over the nodes that take pods (not cordoned), the largest
    /// single node's in `source`. `None` for a resource no node offers.
    pub fn from_nodes(nodes: &[serde_json::Value]) -> Capacity {
        let (mut gpu, mut mem) = (0u64, 0.0f64);
        let (mut max_gpu, mut max_mem) = (0u64, 0.0f64);
        let mut counted = 0;
        let mut cordoned = 0;
        for n in nodes {
            if n.pointer("/spec/unschedulable")
                .and_then(serde_json::Value::as_bool)
                == Some(true)
            {
                cordoned += 1;
                continue;
            }
            let Some(a) = n.pointer("/status/allocatable") else {
                continue;
            };
            counted += 1;
            let g = a
                .get("nvidia.com/gpu")
                .and_then(crate::k8s::quantity_of)
                .unwrap_or(0.0)
                .max(0.0) as u64;
            let m = a
                .get("memory")
                .and_then(crate::k8s::quantity_of)
                .unwrap_or(0.0)
                .max(0.0);
            gpu += g;
            mem += m;
            max_gpu = max_gpu.max(g);
            max_mem = max_mem.max(m);
        }
        let mut most = Vec::new();
        if gpu > 0 {
            most.push(format!("{max_gpu} GPU"));
        }
        if mem > 0.0 {
            most.push(crate::k8s::gib(max_mem));
        }
        let most = if most.is_empty() {
            String::new()
        } else {
            format!(", at most {} on one node", most.join(" and "))
        };
        let cordon = if cordoned > 0 {
            format!(", {cordoned} cordoned node(s) left out")
        } else {
            String::new()
        };
        Capacity {
            gpu: (gpu > 0).then_some(gpu),
            memory: (mem > 0.0).then_some(mem),
            source: Some(format!(
                "the allocatable of {counted} node(s){most}{cordon}"
            )),
        }
    }

    /// One line for the output: what the rollout checks compared against.
    pub fn describe(&self) -> Option<String> {
        if self.gpu.is_none() && self.memory.is_none() && self.source.is_none() {
            return None;
        }
        let mut parts = Vec::new();
        if let Some(g) = self.gpu {
            parts.push(format!("{g} GPU"));
        }
        if let Some(m) = self.memory {
            parts.push(format!("{} memory", crate::k8s::gib(m)));
        }
        if parts.is_empty() {
            parts.push("no GPU or memory".into());
        }
        let figures = parts.join(", ");
        Some(match &self.source {
            Some(s) => format!("{figures} (from {s})"),
            None => figures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, gpu: Option<&str>, memory: &str, cordoned: bool) -> serde_json::Value {
        let mut alloc = json!({"cpu": "15900m", "memory": memory, "pods": "110"});
        if let Some(g) = gpu {
            alloc["nvidia.com/gpu"] = g.into();
        }
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name},
            "spec": {"unschedulable": cordoned},
            "status": {"capacity": {"memory": "999Gi", "nvidia.com/gpu": "99"}, "allocatable": alloc}
        })
    }

    #[test]
    fn capacity_from_node_allocatable() {
        let nodes = [
            node("gpu-a", Some("8"), "1000Gi", false),
            node("gpu-b", Some("4"), "500Gi", false),
            node("cpu-a", None, "61255908Ki", false),
            // Cordoned: takes no new pod, so its GPUs do not count.
            node("gpu-c", Some("8"), "1000Gi", true),
        ];
        let c = Capacity::from_nodes(&nodes);
        assert_eq!(c.gpu, Some(12));
        let gib = (1u64 << 30) as f64;
        let want = 1500.0 * gib + 61255908.0 * 1024.0;
        assert!((c.memory.unwrap() - want).abs() < 1.0, "{:?}", c.memory);
        let s = c.describe().unwrap();
        assert_eq!(
            s,
            "12 GPU, 1559Gi memory (from the allocatable of 3 node(s), at most 8 GPU and 1000Gi on one node, 1 cordoned node(s) left out)"
        );
        // The capacity (not the allocatable) is never read.
        assert!(!s.contains("99"), "{s}");
    }

    #[test]
    fn capacity_from_nodes_without_gpus_sets_no_gpu() {
        let c = Capacity::from_nodes(&[
            node("a", None, "16Gi", false),
            node("b", Some("0"), "16Gi", false),
        ]);
        assert_eq!(c.gpu, None);
        assert_eq!(c.memory, Some(32.0 * (1u64 << 30) as f64));
        let c = Capacity::from_nodes(&[]);
        assert_eq!((c.gpu, c.memory), (None, None));
        assert_eq!(
            c.describe().unwrap(),
            "no GPU or memory (from the allocatable of 0 node(s))"
        );
    }

    #[test]
    fn capacity_flags() {
        let mut c = Capacity::default();
        c.parse_into("gpu=8,memory=512Gi").unwrap();
        assert_eq!(c.gpu, Some(8));
        assert_eq!(c.memory, Some(512.0 * (1u64 << 30) as f64));
        assert!(c.parse_into("cpu=4").is_err());
        assert!(c.parse_into("gpu").is_err());
    }

    #[test]
    fn config_rejects_unknown_ids_and_fields() {
        assert!(Config::parse("ignore: [image/mutable-tag]\n").is_ok());
        assert!(Config::parse("ignore: [image/mutabel-tag]\n").is_err());
        assert!(Config::parse("ignroe: []\n").is_err());
    }
}
