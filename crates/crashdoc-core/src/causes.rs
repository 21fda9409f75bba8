//! The cause taxonomy of `shared/spec/causes.md`: stable ids used in JSON,
//! tests and the evaluation corpus.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! causes {
    ($($variant:ident => $id:literal, $title:literal;)*) => {
        /// One root cause from the taxonomy.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Cause { $($variant),* }

        impl Cause {
            /// Every cause, in taxonomy order.
            pub const ALL: &'static [Cause] = &[$(Cause::$variant),*];

            /// The stable id (`oom-killed`, ...).
            pub fn id(self) -> &'static str {
                match self { $(Cause::$variant => $id),* }
            }

            /// What happened, in a few words.
            pub fn title(self) -> &'static str {
                match self { $(Cause::$variant => $title),* }
            }
        }

        impl FromStr for Cause {
            type Err = UnknownCause;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s { $($id => Ok(Cause::$variant),)* _ => Err(UnknownCause(s.to_string())) }
            }
        }
    };
}

causes! {
    OomKilled => "oom-killed", "the container exceeded its memory limit and was killed";
    NodePressure => "node-pressure", "the kubelet evicted the pod or the node ran out of a resource";
    GpuOom => "gpu-oom", "the GPU ran out of memory";
    GpuUnavailable => "gpu-unavailable", "no usable GPU (scheduling, device plugin, driver or CUDA mismatch)";
    MissingFile => "missing-file", "a model, config, weights or script path does not exist";
    Volume => "volume", "a volume could not be mounted or used";
    DiskFull => "disk-full", "no space or inodes left on a volume or the node";
    ConfigRefMissing => "config-ref-missing", "the pod references a ConfigMap, Secret or key that does not exist";
    BadConfig => "bad-config", "the application rejected its own configuration";
    AuthFailure => "auth-failure", "credentials missing, wrong or expired, or RBAC denies access";
    ProbeKill => "probe-kill", "a liveness or startup probe killed the container";
    ExitZero => "exit-zero", "the process exited 0 under a controller that expects a service";
    DependencyUnreachable => "dependency-unreachable", "a backend it needs is down, not ready or misnamed";
    AppCrash => "app-crash", "the application failed with an exception or panic";
    BadCommand => "bad-command", "the entrypoint cannot start (wrong command, missing binary, wrong architecture)";
    NativeCrash => "native-crash", "the process died from a signal it raised itself";
    Terminated => "terminated", "the container was asked to stop (SIGTERM), not a crash";
    PortConflict => "port-conflict", "the server could not bind its port";
    Permission => "permission", "the security context forbids what the process needs";
    ImagePull => "image-pull", "the image could not be pulled";
    Unschedulable => "unschedulable", "the pod was never scheduled";
    Unknown => "unknown", "the evidence does not support any cause";
}

/// A cause id that is not in the taxonomy.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown cause id `{0}`")]
pub struct UnknownCause(pub String);

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Cause {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for c in Cause::ALL {
            assert_eq!(c.id().parse::<Cause>().unwrap(), *c);
        }
        assert!("oom".parse::<Cause>().is_err());
    }

    /// The repository's copy of the taxonomy (docs/causes.md): always there.
    const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/causes.md"));

    /// The table rows of a taxonomy file: (id, the whole row).
    fn rows(md: &str) -> Vec<(String, String)> {
        md.lines()
            .filter_map(|l| {
                let id = l.strip_prefix("| `")?.split('`').next()?;
                Some((id.to_string(), l.trim_end().to_string()))
            })
            .collect()
    }

    #[test]
    fn the_docs_taxonomy_is_the_cause_enum() {
        let ids: Vec<String> = rows(DOC).into_iter().map(|(id, _)| id).collect();
        let code: Vec<&str> = Cause::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(
            ids, code,
            "docs/causes.md and Cause::ALL differ (ids or order)"
        );
    }

    #[test]
    fn rows_reads_ids_and_sees_a_missing_one() {
        let md = "| id | what |\n|---|---|\n| `oom-killed` | killed |\n| `gpu-oom` | gpu |\n";
        let ids: Vec<String> = rows(md).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["oom-killed", "gpu-oom"]);
        // A taxonomy without one of the code's ids is told apart.
        let short: Vec<String> = rows(&DOC.replace("| `gpu-oom` |", "| gpu-oom |"))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_ne!(short.len(), Cause::ALL.len());
    }

    #[test]
    fn ids_match_the_spec() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/spec/causes.md"
        );
        // The spec lives beside the repo in ../shared: a clone with nothing
        // beside it says so and passes (docs/causes.md is checked against the
        // code above); CI, which has it, must check it.
        let Ok(spec) = std::fs::read_to_string(path) else {
            assert!(
                std::env::var("CI").is_err(),
                "{path}: the spec must be present in CI"
            );
            println!(
                "skipped: no cause taxonomy at {path} (it lives beside the repo in ../shared)"
            );
            return;
        };
        for c in Cause::ALL {
            assert!(
                spec.contains(&format!("`{}`", c.id())),
                "{} missing from causes.md",
                c.id()
            );
        }
        // docs/causes.md is the spec's table, row for row.
        assert_eq!(
            rows(DOC),
            rows(&spec),
            "docs/causes.md differs from {path}: copy the spec's table"
        );
    }
}
