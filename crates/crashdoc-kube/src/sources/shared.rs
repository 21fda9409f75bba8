//! What the sources of one collection share, so that nothing is read twice:
//! nodes (the node source's read is the revisions source's too, and pods on
//! one node share it), a workload's revision lists (every pod of a
//! workload gets them from one read), and the lists `resolve` already made.

use super::Output;
use futures::lock::Mutex as AsyncMutex;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A node as read once: the object (managedFields stripped) or the error.
pub type NodeRead = Result<Arc<Node>, Arc<kube::Error>>;

/// A workload: `namespace/Kind/name`.
pub fn workload_key(namespace: &str, kind: &str, name: &str) -> String {
    format!("{namespace}/{kind}/{name}")
}

/// The lists `resolve` made for a Deployment target, by its selector.
#[derive(Debug, Clone)]
pub struct Seed {
    pub replica_sets: Vec<ReplicaSet>,
    pub pods: Vec<Pod>,
}

/// A value computed once: the first to ask computes it while later askers
/// wait on the lock, then every asker gets a clone.
type Cell<T> = Arc<AsyncMutex<Option<T>>>;

type Cells<T> = Mutex<HashMap<String, Cell<T>>>;

#[derive(Default)]
pub struct Shared {
    nodes: Cells<NodeRead>,
    workloads: Cells<Arc<Output>>,
    seeds: Mutex<HashMap<String, Seed>>,
    /// Whether the per-object reads below are shared (a scan).
    across_pods: bool,
    /// Owner chains by the pod's controller (`namespace/Kind/name`).
    owners: Cells<Arc<Output>>,
    /// ServiceAccount look-ups by `namespace/name`.
    service_accounts: Cells<Arc<Output>>,
    /// A metrics.k8s.io read found the group not served.
    metrics_absent: AtomicBool,
}

/// A per-object read [`Shared::per_object`] can share.
#[derive(Debug, Clone, Copy)]
pub enum PerObject {
    /// The owner chain of a pod's controller.
    Owner,
    /// Whether a ServiceAccount exists.
    ServiceAccount,
}

async fn once<T, F, Fut>(map: &Cells<T>, key: &str, init: F) -> T
where
    T: Clone,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let cell = match map.lock() {
        Ok(mut m) => m.entry(key.to_string()).or_default().clone(),
        // A poisoned map only loses the sharing, not the read.
        Err(_) => Cell::default(),
    };
    let mut slot = cell.lock().await;
    if let Some(v) = slot.as_ref() {
        return v.clone();
    }
    let v = init().await;
    *slot = Some(v.clone());
    v
}

impl Shared {
    /// A collection's sharing that also reads each owner chain and
    /// ServiceAccount once for all its pods, and stops asking metrics.k8s.io
    /// once it is known not to be served. For a collection of many pods at
    /// one instant (a scan); a pod's own collection reads them itself.
    pub fn across_pods() -> Self {
        Shared {
            across_pods: true,
            ..Shared::default()
        }
    }

    /// The output of a per-object read, `read` run the first time `key` is
    /// asked for when shared across pods, every time otherwise.
    pub async fn per_object<F, Fut>(&self, kind: PerObject, key: &str, read: F) -> Output
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Output>,
    {
        if !self.across_pods {
            return read().await;
        }
        let map = match kind {
            PerObject::Owner => &self.owners,
            PerObject::ServiceAccount => &self.service_accounts,
        };
        let shared: Arc<Output> = once(map, key, || async { Arc::new(read().await) }).await;
        Output::clone(&shared)
    }

    /// Shared across pods: a read found metrics.k8s.io not served.
    pub fn set_metrics_absent(&self) {
        if self.across_pods {
            self.metrics_absent.store(true, Ordering::Relaxed);
        }
    }

    /// Whether metrics.k8s.io is known not to be served (never, unless
    /// shared across pods).
    pub fn metrics_absent(&self) -> bool {
        self.metrics_absent.load(Ordering::Relaxed)
    }

    /// The node `name`, read by `read` the first time it is asked for.
    pub async fn node<F, Fut>(&self, name: &str, read: F) -> NodeRead
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = NodeRead>,
    {
        once(&self.nodes, name, read).await
    }

    /// A workload's revisions output, gathered by `gather` once.
    pub async fn workload<F, Fut>(&self, key: &str, gather: F) -> Arc<Output>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Output>,
    {
        once(&self.workloads, key, || async { Arc::new(gather().await) }).await
    }

    /// Keep the lists `resolve` made for a workload.
    pub fn seed(&self, key: &str, seed: Seed) {
        if let Ok(mut m) = self.seeds.lock() {
            m.insert(key.to_string(), seed);
        }
    }

    /// The lists `resolve` made for a workload, if it made them.
    pub fn seeded(&self, key: &str) -> Option<Seed> {
        self.seeds.lock().ok()?.get(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_node_is_read_once_however_many_ask() {
        let shared = Shared::default();
        let reads = AtomicU32::new(0);
        let read = || async {
            reads.fetch_add(1, Ordering::Relaxed);
            let mut n = Node::default();
            n.metadata.name = Some("n1".into());
            Ok(Arc::new(n))
        };
        let (a, b) = futures::join!(shared.node("n1", read), shared.node("n1", read));
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        assert_eq!(a.unwrap().metadata.name.as_deref(), Some("n1"));
        assert!(b.is_ok());
        // Near miss: another node is another read.
        let _ = shared.node("n2", read).await;
        assert_eq!(reads.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn per_object_reads_are_shared_only_across_pods() {
        let reads = AtomicU32::new(0);
        let read = || async {
            reads.fetch_add(1, Ordering::Relaxed);
            Output::default()
        };
        let shared = Shared::across_pods();
        let k = workload_key("ns", "ReplicaSet", "web-abc");
        let _ = futures::join!(
            shared.per_object(PerObject::Owner, &k, read),
            shared.per_object(PerObject::Owner, &k, read)
        );
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        // Another kind with the same key, another object: another read.
        let _ = shared.per_object(PerObject::ServiceAccount, &k, read).await;
        assert_eq!(reads.load(Ordering::Relaxed), 2);
        shared.set_metrics_absent();
        assert!(shared.metrics_absent());
        // Near miss: a pod's own collection reads each time, and asks
        // metrics.k8s.io for every pod.
        let own = Shared::default();
        let _ = own.per_object(PerObject::Owner, &k, read).await;
        let _ = own.per_object(PerObject::Owner, &k, read).await;
        assert_eq!(reads.load(Ordering::Relaxed), 4);
        own.set_metrics_absent();
        assert!(!own.metrics_absent());
    }

    #[tokio::test]
    async fn a_workload_is_gathered_once_and_seeds_are_per_workload() {
        let shared = Shared::default();
        let runs = AtomicU32::new(0);
        let gather = || async {
            runs.fetch_add(1, Ordering::Relaxed);
            Output::default()
        };
        let k = workload_key("ns", "Deployment", "web");
        let _ = shared.workload(&k, gather).await;
        let _ = shared.workload(&k, gather).await;
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        shared.seed(
            &k,
            Seed {
                replica_sets: vec![],
                pods: vec![Pod::default()],
            },
        );
        assert_eq!(shared.seeded(&k).map(|s| s.pods.len()), Some(1));
        assert!(
            shared
                .seeded(&workload_key("ns", "StatefulSet", "web"))
                .is_none()
        );
    }
}
