//! `verify`: after a fix, wait for the rollout as the deployment controller
//! reports it, then watch the new pods for a stable window. Read-only.

use crate::KubeError;
use crate::collect::unhealthy;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How a verification ended.
#[derive(Debug)]
pub enum Verdict {
    /// The rollout completed and its pods held for the stable window.
    Held { pods: usize, waited: Duration },
    /// The rollout did not complete in time (or the controller gave up).
    RolloutFailed { reason: String, failing: Vec<Pod> },
    /// A new pod restarted, terminated or lost readiness in the window.
    Unstable { reason: String, failing: Vec<Pod> },
}

/// Progress lines for the user (stderr).
pub trait Progress {
    fn say(&self, msg: &str);
}

impl<F: Fn(&str)> Progress for F {
    fn say(&self, msg: &str) {
        self(msg)
    }
}

/// The windows of a verification.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// How long the new pods must hold.
    pub stable: Duration,
    /// Give up on the rollout after this long.
    pub timeout: Duration,
    /// How often to look.
    pub poll: Duration,
}

pub async fn verify_deployment(
    client: &kube::Client,
    ns: &str,
    name: &str,
    opts: VerifyOptions,
    progress: &dyn Progress,
) -> Result<Verdict, KubeError> {
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let (stable, timeout, poll) = (opts.stable, opts.timeout, opts.poll);
    let start = Instant::now();
    let get = |e: kube::Error| match &e {
        kube::Error::Api(s) if s.code == 404 => KubeError::NotFound {
            what: format!("deployment/{name}"),
            namespace: ns.into(),
        },
        kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
            verb: "get".into(),
            resource: "deployments".into(),
            namespace: ns.into(),
        },
        _ => KubeError::Api(e),
    };
    // 1. The rollout, as the deployment controller reports it.
    let mut last_msg = String::new();
    let (selector, revision) = loop {
        let d = deploys.get(name).await.map_err(get)?;
        let generation = d.metadata.generation.unwrap_or(0);
        let st = d.status.clone().unwrap_or_default();
        let want = d.spec.replicas.unwrap_or(1);
        let updated = st.updated_replicas.unwrap_or(0);
        let available = st.available_replicas.unwrap_or(0);
        let total = st.replicas.unwrap_or(0);
        let msg =
            format!("rollout: {updated}/{want} updated, {available} available, {total} total");
        if msg != last_msg {
            progress.say(&msg);
            last_msg = msg;
        }
        let deadline = st.conditions.iter().flatten().find(|c| {
            c.type_.as_deref() == Some("Progressing")
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
        });
        let sel = crate::collect::selector_string(&d.spec.selector);
        let rev = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision").cloned())
            .unwrap_or_default();
        if let Some(c) = deadline {
            let failing = failing_pods(&pods, &rss, &sel, &rev).await;
            return Ok(Verdict::RolloutFailed {
                reason: c
                    .message
                    .clone()
                    .unwrap_or_else(|| "progress deadline exceeded".into()),
                failing,
            });
        }
        let done = st.observed_generation.unwrap_or(0) >= generation
            && updated == want
            && available >= want
            && total == want;
        if done {
            break (sel, rev);
        }
        if start.elapsed() > timeout {
            let failing = failing_pods(&pods, &rss, &sel, &rev).await;
            return Ok(Verdict::RolloutFailed {
                reason: format!(
                    "the rollout did not complete in {}s ({last_msg})",
                    timeout.as_secs()
                ),
                failing,
            });
        }
        tokio::time::sleep(poll).await;
    };
    // 2. The new pods, for the stable window.
    progress.say(&format!(
        "rollout complete; watching the new pods for {}s",
        stable.as_secs()
    ));
    let window = Instant::now();
    let mut baseline: HashMap<String, i32> = HashMap::new();
    loop {
        let current = new_pods(&pods, &rss, &selector, &revision).await?;
        for p in &current {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let restarts = restarts(p);
            let base = *baseline.entry(uid).or_insert(restarts);
            if restarts > base || unhealthy(p) {
                let why = if restarts > base {
                    format!(
                        "pod {} restarted during the stable window ({base} -> {restarts})",
                        p.metadata.name.clone().unwrap_or_default()
                    )
                } else {
                    format!(
                        "pod {} is not running ready",
                        p.metadata.name.clone().unwrap_or_default()
                    )
                };
                return Ok(Verdict::Unstable {
                    reason: why,
                    failing: vec![p.clone()],
                });
            }
        }
        if window.elapsed() >= stable {
            return Ok(Verdict::Held {
                pods: current.len(),
                waited: start.elapsed(),
            });
        }
        tokio::time::sleep(poll).await;
    }
}

fn restarts(p: &Pod) -> i32 {
    p.status
        .iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .map(|c| c.restart_count)
        .sum()
}

/// Pods of the ReplicaSet at the deployment's current revision.
async fn new_pods(
    pods: &Api<Pod>,
    rss: &Api<ReplicaSet>,
    selector: &str,
    revision: &str,
) -> Result<Vec<Pod>, KubeError> {
    let lp = ListParams::default().labels(selector);
    let rs_name = rss
        .list(&lp)
        .await
        .map_err(KubeError::Api)?
        .items
        .into_iter()
        .find(|rs| {
            rs.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                .map(String::as_str)
                == Some(revision)
        });
    let all = pods.list(&lp).await.map_err(KubeError::Api)?.items;
    Ok(match rs_name.and_then(|rs| rs.metadata.name) {
        Some(n) => all
            .into_iter()
            .filter(|p| {
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.name == n)
            })
            .collect(),
        None => all,
    })
}

async fn failing_pods(
    pods: &Api<Pod>,
    rss: &Api<ReplicaSet>,
    selector: &str,
    revision: &str,
) -> Vec<Pod> {
    new_pods(pods, rss, selector, revision)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(unhealthy)
        .take(5)
        .collect()
}
