//! crashdoc-kube: read-only collection of a pod's evidence from the API
//! server, into the same bundle that `crashdoc analyze` reads.
//!
//! Only `get`, `list` and `watch` are ever sent: the collector has no code
//! path that creates, updates, patches or deletes. Secret values are read
//! only to count their keys' sizes and are dropped at once; they never reach
//! a bundle, the output or a log line.

mod cluster;
pub mod collect;
pub mod identity;
pub mod manifests;
pub mod retry;
pub mod runs;
pub mod scan;
pub mod sources;
pub mod stack;
mod target;
pub mod verify;
pub mod workload;

pub use cluster::Cluster;
pub use collect::{CollectOptions, Collection, Collector, selector_string, unhealthy};
pub use identity::{ClusterIdentity, cluster_identity};
pub use sources::references::referenced_objects;
pub use target::{Target, TargetKind};

/// What went wrong talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("cannot load the Kubernetes configuration")]
    Config(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{what} not found in namespace {namespace}")]
    NotFound { what: String, namespace: String },
    #[error("the API server refused to let this user {verb} {resource} in namespace {namespace}")]
    Forbidden {
        verb: String,
        resource: String,
        namespace: String,
    },
    #[error("cannot list {what}")]
    List {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("request to the API server failed: {0}")]
    Api(#[source] kube::Error),
    #[error("{0}")]
    Target(String),
    #[error(
        "{target} in namespace {namespace} has no failing pod: every pod is running, ready and has not restarted"
    )]
    NoFailingPod { target: String, namespace: String },
}

impl crashdoc_core::Hint for KubeError {
    /// The `hint:` line that tells the user what to do next.
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(match self {
            KubeError::Config(_) => "set KUBECONFIG or pass --kubeconfig / --context; inside a pod the service account is used".into(),
            KubeError::NotFound { namespace, .. } => format!("check the name and namespace (`kubectl get pods -n {namespace}`), or pass -n").into(),
            KubeError::Forbidden { verb, resource, namespace } => format!(
                "grant the user `{verb}` on `{resource}` in {namespace} (a Role with verbs [get, list, watch] is all crashdoc needs)"
            ).into(),
            // Said as it always was: the API server's error is the cause.
            KubeError::List { .. } => return None,
            KubeError::Api(_) => "check that the API server is reachable (`kubectl get --raw /readyz`)".into(),
            KubeError::Target(_) => "targets look like NAME, pod/NAME, deploy/NAME, sts/NAME, ds/NAME or job/NAME".into(),
            KubeError::NoFailingPod { namespace, .. } => format!("name one of its pods to diagnose it anyway (`kubectl get pods -n {namespace}`), or `crashdoc scan -n {namespace}` for every unhealthy pod").into(),
        })
    }
}

/// How long a request may wait for its answer to begin, unless told
/// otherwise ([`client_with`]).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Build a client the way kubectl does: --kubeconfig, else KUBECONFIG or
/// ~/.kube/config, else the in-cluster service account; --context picks
/// the context. Returns the client and the context's default namespace.
/// Requests time out after [`REQUEST_TIMEOUT`].
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<(kube::Client, String), KubeError> {
    client_with(kubeconfig, context, Some(REQUEST_TIMEOUT)).await
}

/// [`client`] with a request timeout of its own (`None`: none).
pub async fn client_with(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    timeout: Option<std::time::Duration>,
) -> Result<(kube::Client, String), KubeError> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| KubeError::Config(Box::new(e)))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| KubeError::Config(Box::new(e)))?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| KubeError::Config(Box::new(e)))?,
        None => kube::Config::infer()
            .await
            .map_err(|e| KubeError::Config(Box::new(e)))?,
    };
    let ns = config.default_namespace.clone();
    // crashdoc retries its reads itself (retry.rs), a Retry-After bounded;
    // kube-client's own retry layer would wait out any Retry-After up to 15
    // times (kube-client 5.0.0 src/client/retry.rs, RetryPolicy::server_retry).
    config.default_retry = false;
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| KubeError::Config(Box::new(e)))?;
    let client = builder.with_layer(&stack::Layer { timeout }).build();
    Ok((client, ns))
}

/// A client over any tower service (a mock API server) with crashdoc's
/// layer on it, as [`client_with`] builds it over the network.
pub fn client_over<S, B>(
    service: S,
    namespace: &str,
    timeout: Option<std::time::Duration>,
) -> kube::Client
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    kube::client::ClientBuilder::new(service, namespace)
        .with_layer(&stack::Layer { timeout })
        .build()
}
