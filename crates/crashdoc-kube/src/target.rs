//! What the user asked about: `NAME`, `pod/NAME`, `deploy/NAME`, ...

use crate::KubeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Pod,
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
    ReplicaSet,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: TargetKind,
    pub name: String,
}

impl std::str::FromStr for Target {
    type Err = KubeError;
    fn from_str(s: &str) -> Result<Self, KubeError> {
        let (kind, name) = match s.split_once('/') {
            None => (TargetKind::Pod, s),
            Some((k, n)) => {
                let kind = match k.to_ascii_lowercase().as_str() {
                    "pod" | "pods" | "po" => TargetKind::Pod,
                    "deploy" | "deployment" | "deployments" | "deployment.apps" => {
                        TargetKind::Deployment
                    }
                    "sts" | "statefulset" | "statefulsets" | "statefulset.apps" => {
                        TargetKind::StatefulSet
                    }
                    "ds" | "daemonset" | "daemonsets" | "daemonset.apps" => TargetKind::DaemonSet,
                    "job" | "jobs" | "job.batch" => TargetKind::Job,
                    "rs" | "replicaset" | "replicasets" | "replicaset.apps" => {
                        TargetKind::ReplicaSet
                    }
                    other => {
                        return Err(KubeError::Target(format!(
                            "`{other}` is not a kind crashdoc diagnoses"
                        )));
                    }
                };
                (kind, n)
            }
        };
        let valid = !name.is_empty()
            && name.len() <= 253
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !valid {
            return Err(KubeError::Target(format!(
                "`{name}` is not a valid object name"
            )));
        }
        Ok(Target {
            kind,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubectl_style_targets() {
        assert_eq!(
            "web-1".parse::<Target>().unwrap(),
            Target {
                kind: TargetKind::Pod,
                name: "web-1".into()
            }
        );
        assert_eq!(
            "deploy/vllm".parse::<Target>().unwrap().kind,
            TargetKind::Deployment
        );
        assert_eq!(
            "statefulset.apps/db".parse::<Target>().unwrap().kind,
            TargetKind::StatefulSet
        );
        assert_eq!("job/train".parse::<Target>().unwrap().kind, TargetKind::Job);
        assert!("svc/web".parse::<Target>().is_err());
        assert!("Web_1".parse::<Target>().is_err());
        assert!("pod/".parse::<Target>().is_err());
    }
}
