//! A connection to one cluster: the client and the namespace commands
//! default to. The CLI holds this, never a `kube::Client` of its own.

use crate::KubeError;
use std::path::Path;

/// A client and its namespace (the one given, else the context's).
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    namespace: String,
}

impl Cluster {
    /// Connect the way kubectl does (see [`crate::client_with`]);
    /// `namespace` overrides the context's default namespace; each request
    /// waits at most `timeout` for its answer to begin.
    pub async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        namespace: Option<&str>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Self, KubeError> {
        let (client, default_ns) = crate::client_with(kubeconfig, context, timeout).await?;
        Ok(Self::new(
            client,
            namespace.map_or(default_ns, str::to_string),
        ))
    }

    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}
