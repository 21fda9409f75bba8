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

#[cfg(test)]
mod tests {
    use super::*;

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
