//! The cluster's name in a shared history: what `crashdoc watch --cluster`
//! defaults to.
//!
//! Outside a cluster it is the kubeconfig context (`--context`, else the
//! kubeconfig's `current-context`), the name a person already uses for it.
//! Inside one (no kubeconfig: the service account) no name is written
//! down anywhere, so the `kube-system` namespace's UID stands in: it is
//! made once with the cluster and outlives every workload in it (the
//! convention of clusterID in kubernetes-sigs/about-api's ClusterProperty
//! KEP-2149, which suggests that UID as a cluster's unique id).

use crate::KubeError;
use k8s_openapi::api::core::v1::Namespace;
use std::path::Path;

/// A cluster's name and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterIdentity {
    pub name: String,
    /// `"--context"`, `"the kubeconfig's current-context"` or `"the
    /// kube-system namespace's UID"`: for the log line.
    pub source: &'static str,
}

/// The name from the kubeconfig, when there is one: `context`, else its
/// current context. `None` when no kubeconfig can be read (in a pod).
pub fn from_kubeconfig(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Option<ClusterIdentity> {
    if let Some(c) = context.filter(|c| !c.is_empty()) {
        return Some(ClusterIdentity {
            name: c.to_string(),
            source: "--context",
        });
    }
    let kc = match kubeconfig {
        Some(p) => kube::config::Kubeconfig::read_from(p).ok()?,
        None => kube::config::Kubeconfig::read().ok()?,
    };
    current_context(&kc)
}

/// The current context of a parsed kubeconfig.
pub fn current_context(kc: &kube::config::Kubeconfig) -> Option<ClusterIdentity> {
    kc.current_context
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(|c| ClusterIdentity {
            name: c.to_string(),
            source: "the kubeconfig's current-context",
        })
}

/// The cluster's name: from the kubeconfig when there is one, else the
/// `kube-system` namespace's UID (one `get namespaces/kube-system`).
pub async fn cluster_identity(
    client: &kube::Client,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<ClusterIdentity, KubeError> {
    if let Some(id) = from_kubeconfig(kubeconfig, context) {
        return Ok(id);
    }
    kube_system_uid(client).await
}

/// The `kube-system` namespace's UID.
pub async fn kube_system_uid(client: &kube::Client) -> Result<ClusterIdentity, KubeError> {
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns = api.get("kube-system").await.map_err(|e| match &e {
        kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
            verb: "get".into(),
            resource: "namespaces (kube-system, to name the cluster; or pass --cluster)".into(),
            namespace: "kube-system".into(),
        },
        _ => KubeError::Api(e),
    })?;
    let uid = ns.metadata.uid.filter(|u| !u.is_empty()).ok_or_else(|| {
        KubeError::Target("the kube-system namespace has no UID: pass --cluster NAME".into())
    })?;
    Ok(ClusterIdentity {
        name: uid,
        source: "the kube-system namespace's UID",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kc(current: Option<&str>) -> kube::config::Kubeconfig {
        kube::config::Kubeconfig {
            current_context: current.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn the_context_names_the_cluster() {
        assert_eq!(
            current_context(&kc(Some("prod-eu"))).map(|i| i.name),
            Some("prod-eu".to_string())
        );
        // Near miss: a kubeconfig without a current context names nothing.
        assert_eq!(current_context(&kc(None)), None);
        assert_eq!(current_context(&kc(Some(""))), None);
    }

    #[test]
    fn an_explicit_context_wins_without_reading_a_file() {
        let id = from_kubeconfig(Some(Path::new("/nonexistent/kubeconfig")), Some("gpu-us"));
        assert_eq!(
            id.map(|i| (i.name, i.source)),
            Some(("gpu-us".into(), "--context"))
        );
        // Near miss: no context and an unreadable kubeconfig give no name.
        assert_eq!(
            from_kubeconfig(Some(Path::new("/nonexistent/kubeconfig")), None),
            None
        );
    }
}
