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
#[error("unknown cause id `{0}` (see `crashdoc rules` for the list)")]
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

    #[test]
    fn ids_match_the_spec() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/spec/causes.md"
        );
        // The spec lives beside the repo in ../shared: a clone with nothing
        // beside it says so and passes; CI, which has it, must check it.
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
    }
}
