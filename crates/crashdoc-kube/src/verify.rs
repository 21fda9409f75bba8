//! `verify`: after a fix, wait for the rollout of a Deployment, StatefulSet
//! or DaemonSet as its controller reports it, then watch the new pods for a
//! stable window. Read-only.
//!
//! When a rollout is complete follows kubectl's `rollout status`
//! (k8s.io/kubectl v0.36.3, pkg/polymorphichelpers/rollout_status.go:
//! DeploymentStatusViewer, StatefulSetStatusViewer, DaemonSetStatusViewer).
//! The new pods are, for a Deployment, those of the ReplicaSet at the
//! Deployment's `deployment.kubernetes.io/revision`; for a StatefulSet,
//! those whose `controller-revision-hash` label is `status.updateRevision`
//! (k8s.io/kubernetes v1.36.3 pkg/controller/statefulset/stateful_set_utils.go,
//! setPodRevision); for a DaemonSet, those whose `controller-revision-hash`
//! is the label of its newest ControllerRevision (pkg/controller/daemon/
//! update.go: constructHistory, snapshot; util/daemonset_util.go: IsPodUpdated).

use crate::KubeError;
use crate::collect::unhealthy;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The pod label a StatefulSet's and a DaemonSet's controller set to the
/// revision a pod was made from (apps/v1 ControllerRevisionHashLabelKey).
pub const REVISION_LABEL: &str = "controller-revision-hash";
const DEPLOYMENT_REVISION: &str = "deployment.kubernetes.io/revision";

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

/// The restarts of the new revision's pods against the old revisions'
/// (each old pod as last seen: they go away as the rollout proceeds).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Revisions {
    /// The new revision: a ReplicaSet's name, or a controller revision hash.
    pub new_revision: String,
    pub new_pods: usize,
    pub new_restarts: i64,
    pub old_pods: usize,
    pub old_restarts: i64,
}

impl Revisions {
    /// `restarts: new revision web-7d9f (2 pods): 0; old revisions (1 pod seen): 14`
    pub fn line(&self) -> String {
        let pods = |n: usize| {
            if n == 1 {
                "1 pod".to_string()
            } else {
                format!("{n} pods")
            }
        };
        let new = if self.new_revision.is_empty() {
            "new pods".to_string()
        } else {
            format!("new revision {}", self.new_revision)
        };
        format!(
            "restarts: {new} ({}): {}; old revisions ({} seen): {}",
            pods(self.new_pods),
            self.new_restarts,
            pods(self.old_pods),
            self.old_restarts
        )
    }

    /// The same for `--format json`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "new": {"revision": self.new_revision, "pods": self.new_pods, "restarts": self.new_restarts},
            "old": {"pods": self.old_pods, "restarts": self.old_restarts},
        })
    }
}

/// A verdict and the restarts by revision.
#[derive(Debug)]
pub struct Verification {
    pub verdict: Verdict,
    pub revisions: Revisions,
}

/// The workloads `verify` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl Kind {
    /// As a target is written: deploy/NAME, sts/NAME, ds/NAME.
    pub fn short(self) -> &'static str {
        match self {
            Kind::Deployment => "deploy",
            Kind::StatefulSet => "sts",
            Kind::DaemonSet => "ds",
        }
    }

    fn resource(self) -> &'static str {
        match self {
            Kind::Deployment => "deployments",
            Kind::StatefulSet => "statefulsets",
            Kind::DaemonSet => "daemonsets",
        }
    }

    fn singular(self) -> &'static str {
        match self {
            Kind::Deployment => "deployment",
            Kind::StatefulSet => "statefulset",
            Kind::DaemonSet => "daemonset",
        }
    }
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

/// One look at a rollout: what kubectl's status viewer would say, and
/// whether it would call the rollout done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub message: String,
    pub done: bool,
}

fn step(message: String, done: bool) -> Step {
    Step { message, done }
}

/// A Deployment's rollout: observed, every replica updated and available,
/// no old replica left (DeploymentStatusViewer).
pub fn deployment_step(d: &Deployment) -> Step {
    let generation = d.metadata.generation.unwrap_or(0);
    let st = d.status.clone().unwrap_or_default();
    let want = d.spec.replicas.unwrap_or(1);
    let updated = st.updated_replicas.unwrap_or(0);
    let available = st.available_replicas.unwrap_or(0);
    let total = st.replicas.unwrap_or(0);
    step(
        format!("rollout: {updated}/{want} updated, {available} available, {total} total"),
        st.observed_generation.unwrap_or(0) >= generation
            && updated == want
            && available >= want
            && total == want,
    )
}

/// A StatefulSet's rollout as StatefulSetStatusViewer judges it. Err when
/// its update strategy is not RollingUpdate (kubectl refuses those too).
pub fn statefulset_step(s: &StatefulSet) -> Result<Step, String> {
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    // The API server defaults an absent type to RollingUpdate.
    if strategy
        .type_
        .as_deref()
        .is_some_and(|t| t != "RollingUpdate")
    {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    let st = s.status.clone().unwrap_or_default();
    let observed = st.observed_generation.unwrap_or(0);
    if observed == 0 || s.metadata.generation.unwrap_or(0) > observed {
        return Ok(step(
            "rollout: waiting for statefulset spec update to be observed".into(),
            false,
        ));
    }
    let replicas = s.spec.replicas;
    let ready = st.ready_replicas.unwrap_or(0);
    if let Some(r) = replicas
        && ready < r
    {
        return Ok(step(
            format!("rollout: waiting for {} pods to be ready", r - ready),
            false,
        ));
    }
    let updated = st.updated_replicas.unwrap_or(0);
    if let Some(ru) = &strategy.rolling_update {
        if let (Some(r), Some(p)) = (replicas, ru.partition)
            && updated < r - p
        {
            return Ok(step(
                format!(
                    "rollout: waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated",
                    r - p
                ),
                false,
            ));
        }
        return Ok(step(
            format!("rollout: partitioned roll out complete: {updated} new pods have been updated"),
            true,
        ));
    }
    let (update, current) = (
        st.update_revision.unwrap_or_default(),
        st.current_revision.unwrap_or_default(),
    );
    if update != current {
        return Ok(step(
            format!(
                "rollout: waiting for statefulset rolling update to complete {updated} pods at revision {update}"
            ),
            false,
        ));
    }
    Ok(step(
        format!(
            "rollout: statefulset rolling update complete {} pods at revision {current}",
            st.current_replicas.unwrap_or(0)
        ),
        true,
    ))
}

/// A DaemonSet's rollout as DaemonSetStatusViewer judges it. Err when its
/// update strategy is not RollingUpdate.
pub fn daemonset_step(d: &DaemonSet) -> Result<Step, String> {
    let strategy = d.spec.update_strategy.clone().unwrap_or_default();
    if strategy
        .type_
        .as_deref()
        .is_some_and(|t| t != "RollingUpdate")
    {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    let st = d.status.clone().unwrap_or_default();
    if d.metadata.generation.unwrap_or(0) > st.observed_generation.unwrap_or(0) {
        return Ok(step(
            "rollout: waiting for daemon set spec update to be observed".into(),
            false,
        ));
    }
    let (updated, desired) = (
        st.updated_number_scheduled.unwrap_or(0),
        st.desired_number_scheduled,
    );
    if updated < desired {
        return Ok(step(
            format!("rollout: {updated} out of {desired} new pods have been updated"),
            false,
        ));
    }
    let available = st.number_available.unwrap_or(0);
    if available < desired {
        return Ok(step(
            format!("rollout: {available} of {desired} updated pods are available"),
            false,
        ));
    }
    Ok(step(
        format!("rollout: {desired} of {desired} updated pods are available"),
        true,
    ))
}

/// Which pods are the new revision's.
#[derive(Debug, Clone)]
enum New {
    /// The ReplicaSet whose revision annotation is this.
    ReplicaSetRevision(String),
    /// Pods labelled with this controller revision hash.
    Hash(String),
    /// A DaemonSet's: its newest ControllerRevision's hash.
    DaemonSetHistory { uid: String },
}

/// What one look at the workload found.
struct Look {
    step: Step,
    /// The controller gave up (a Deployment's progress deadline).
    failed: Option<String>,
    selector: String,
    new: New,
}

/// `verify` against one workload.
struct Verifier<'a> {
    client: &'a kube::Client,
    ns: &'a str,
    name: &'a str,
    kind: Kind,
    pods: Api<Pod>,
    /// Each pod seen, by uid: (is the new revision's, its restarts when last seen).
    seen: HashMap<String, (bool, i32)>,
    new_revision: String,
}

impl Verifier<'_> {
    fn error(&self, e: kube::Error) -> KubeError {
        match &e {
            kube::Error::Api(s) if s.code == 404 => KubeError::NotFound {
                what: format!("{}/{}", self.kind.singular(), self.name),
                namespace: self.ns.into(),
            },
            kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
                verb: "get".into(),
                resource: self.kind.resource().into(),
                namespace: self.ns.into(),
            },
            _ => KubeError::Api(e),
        }
    }

    /// One look at the workload, as its controller reports it.
    async fn look(&self) -> Result<Look, KubeError> {
        let strategy = |e: String| {
            KubeError::Target(format!(
                "{}/{}: {e}; verify follows rolling updates",
                self.kind.short(),
                self.name
            ))
        };
        match self.kind {
            Kind::Deployment => {
                let api: Api<Deployment> = Api::namespaced(self.client.clone(), self.ns);
                let d = read(|| api.get(self.name))
                    .await
                    .map_err(|e| self.error(e))?;
                let failed = d
                    .status
                    .iter()
                    .flat_map(|s| s.conditions.iter().flatten())
                    .find(|c| {
                        c.type_.as_deref() == Some("Progressing")
                            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
                    })
                    .map(|c| {
                        c.message
                            .clone()
                            .unwrap_or_else(|| "progress deadline exceeded".into())
                    });
                let rev = d
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(DEPLOYMENT_REVISION).cloned())
                    .unwrap_or_default();
                Ok(Look {
                    step: deployment_step(&d),
                    failed,
                    selector: crate::collect::selector_string(&d.spec.selector),
                    new: New::ReplicaSetRevision(rev),
                })
            }
            Kind::StatefulSet => {
                let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), self.ns);
                let s = read(|| api.get(self.name))
                    .await
                    .map_err(|e| self.error(e))?;
                let update = s
                    .status
                    .as_ref()
                    .and_then(|st| st.update_revision.clone())
                    .unwrap_or_default();
                Ok(Look {
                    step: statefulset_step(&s).map_err(strategy)?,
                    failed: None,
                    selector: crate::collect::selector_string(&s.spec.selector),
                    new: New::Hash(update),
                })
            }
            Kind::DaemonSet => {
                let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), self.ns);
                let d = read(|| api.get(self.name))
                    .await
                    .map_err(|e| self.error(e))?;
                Ok(Look {
                    step: daemonset_step(&d).map_err(strategy)?,
                    failed: None,
                    selector: crate::collect::selector_string(&d.spec.selector),
                    new: New::DaemonSetHistory {
                        uid: d.metadata.uid.clone().unwrap_or_default(),
                    },
                })
            }
        }
    }

    /// The new revision's name or hash, or None when it cannot be told
    /// (then every pod of the selector counts as new).
    async fn new_revision(&self, new: &New, lp: &ListParams) -> Result<Option<String>, KubeError> {
        Ok(match new {
            New::Hash(h) => Some(h.clone()).filter(|h| !h.is_empty()),
            New::ReplicaSetRevision(rev) => {
                let rss: Api<ReplicaSet> = Api::namespaced(self.client.clone(), self.ns);
                read(|| rss.list(lp))
                    .await
                    .map_err(KubeError::Api)?
                    .items
                    .into_iter()
                    .find(|rs| {
                        rs.metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(DEPLOYMENT_REVISION))
                            == Some(rev)
                    })
                    .and_then(|rs| rs.metadata.name)
            }
            New::DaemonSetHistory { uid } => {
                let crs: Api<ControllerRevision> = Api::namespaced(self.client.clone(), self.ns);
                read(|| crs.list(lp))
                    .await
                    .map_err(KubeError::Api)?
                    .items
                    .into_iter()
                    .filter(|c| {
                        c.metadata
                            .owner_references
                            .iter()
                            .flatten()
                            .any(|o| &o.uid == uid)
                    })
                    .max_by_key(|c| c.revision)
                    .and_then(|c| c.metadata.labels?.get(REVISION_LABEL).cloned())
            }
        })
    }

    /// The selector's pods, the new revision's first; every pod's restarts
    /// are remembered for [`Revisions`].
    async fn pods(&mut self, look: &Look) -> Result<(Vec<Pod>, Vec<Pod>), KubeError> {
        let lp = ListParams::default().labels(&look.selector);
        let new = self.new_revision(&look.new, &lp).await?;
        let all = read(|| self.pods.list(&lp))
            .await
            .map_err(KubeError::Api)?
            .items;
        let is_new = |p: &Pod| match (&new, &look.new) {
            (None, _) => true,
            (Some(rs), New::ReplicaSetRevision(_)) => p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| &o.name == rs),
            (Some(h), _) => {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(REVISION_LABEL))
                    == Some(h)
            }
        };
        let (fresh, old): (Vec<Pod>, Vec<Pod>) = all.into_iter().partition(is_new);
        if let Some(n) = new {
            self.new_revision = n;
        }
        for (p, new) in fresh
            .iter()
            .map(|p| (p, true))
            .chain(old.iter().map(|p| (p, false)))
        {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            self.seen.insert(uid, (new, restarts(p)));
        }
        Ok((fresh, old))
    }

    fn revisions(&self, current: &[Pod]) -> Revisions {
        let mut r = Revisions {
            new_revision: self.new_revision.clone(),
            ..Default::default()
        };
        for p in current {
            r.new_pods += 1;
            r.new_restarts += i64::from(restarts(p));
        }
        for (new, n) in self.seen.values() {
            if !new {
                r.old_pods += 1;
                r.old_restarts += i64::from(*n);
            }
        }
        r
    }

    async fn failing(&mut self, look: &Look) -> (Vec<Pod>, Revisions) {
        let new = self.pods(look).await.map(|(n, _)| n).unwrap_or_default();
        let r = self.revisions(&new);
        (new.into_iter().filter(unhealthy).take(5).collect(), r)
    }
}

/// A Deployment's verification (see [`verify`]).
pub async fn verify_deployment(
    client: &kube::Client,
    ns: &str,
    name: &str,
    opts: VerifyOptions,
    progress: &dyn Progress,
) -> Result<Verdict, KubeError> {
    Ok(verify(client, ns, Kind::Deployment, name, opts, progress)
        .await?
        .verdict)
}

/// Wait for the rollout as the workload's controller reports it, then
/// watch the new pods' restarts, readiness and terminations for the stable
/// window. The pods are listed once while a rollout is still under way, to
/// see the old revision's pods before they go.
pub async fn verify(
    client: &kube::Client,
    ns: &str,
    kind: Kind,
    name: &str,
    opts: VerifyOptions,
    progress: &dyn Progress,
) -> Result<Verification, KubeError> {
    let mut v = Verifier {
        client,
        ns,
        name,
        kind,
        pods: Api::namespaced(client.clone(), ns),
        seen: HashMap::new(),
        new_revision: String::new(),
    };
    let (stable, timeout, poll) = (opts.stable, opts.timeout, opts.poll);
    let start = Instant::now();
    // 1. The rollout, as the controller reports it.
    let mut last_msg = String::new();
    let mut first = true;
    let look = loop {
        let look = v.look().await?;
        if look.step.message != last_msg {
            progress.say(&look.step.message);
            last_msg = look.step.message.clone();
        }
        if let Some(reason) = look.failed.clone() {
            let (failing, revisions) = v.failing(&look).await;
            let verdict = Verdict::RolloutFailed { reason, failing };
            return Ok(Verification { verdict, revisions });
        }
        if look.step.done {
            break look;
        }
        if first {
            // The old revision's pods, while they are still there.
            v.pods(&look).await?;
            first = false;
        }
        if start.elapsed() > timeout {
            let (failing, revisions) = v.failing(&look).await;
            let reason = format!(
                "the rollout did not complete in {}s ({last_msg})",
                timeout.as_secs()
            );
            let verdict = Verdict::RolloutFailed { reason, failing };
            return Ok(Verification { verdict, revisions });
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
        let (current, _) = v.pods(&look).await?;
        if let Some((reason, p)) = unstable(&current, &mut baseline) {
            let revisions = v.revisions(&current);
            let verdict = Verdict::Unstable {
                reason,
                failing: vec![p],
            };
            return Ok(Verification { verdict, revisions });
        }
        if window.elapsed() >= stable {
            let revisions = v.revisions(&current);
            let verdict = Verdict::Held {
                pods: current.len(),
                waited: start.elapsed(),
            };
            return Ok(Verification { verdict, revisions });
        }
        tokio::time::sleep(poll).await;
    }
}

/// The first new pod that restarted since its baseline or is not running
/// ready, and why.
fn unstable(current: &[Pod], baseline: &mut HashMap<String, i32>) -> Option<(String, Pod)> {
    for p in current {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let restarts = restarts(p);
        let base = *baseline.entry(uid).or_insert(restarts);
        let name = p.metadata.name.clone().unwrap_or_default();
        if restarts > base {
            return Some((
                format!("pod {name} restarted during the stable window ({base} -> {restarts})"),
                p.clone(),
            ));
        }
        if unhealthy(p) {
            return Some((format!("pod {name} is not running ready"), p.clone()));
        }
    }
    None
}

/// Every read of verify, retried on transient errors (retry.rs).
async fn read<T, F, Fut>(f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    crate::retry::read(3, f).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sts(v: serde_json::Value) -> StatefulSet {
        serde_json::from_value(v).unwrap()
    }

    fn sts_with(partition: Option<i32>, ready: i32, updated: i32) -> StatefulSet {
        let mut v = json!({"metadata": {"name": "db", "generation": 2},
            "spec": {"replicas": 3, "selector": {}, "serviceName": "db", "template": {},
                "updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 2, "replicas": 3, "readyReplicas": ready,
                "updatedReplicas": updated, "currentRevision": "db-1", "updateRevision": "db-2"}});
        if let Some(p) = partition {
            v["spec"]["updateStrategy"]["rollingUpdate"] = json!({"partition": p});
        }
        sts(v)
    }

    #[test]
    fn a_statefulset_is_done_as_kubectl_says() {
        // Not observed yet.
        let mut s = sts_with(Some(0), 3, 3);
        s.status.as_mut().unwrap().observed_generation = Some(1);
        assert!(!statefulset_step(&s).unwrap().done);
        // Ready replicas first.
        let s = sts_with(Some(0), 2, 3);
        assert_eq!(
            statefulset_step(&s).unwrap(),
            step("rollout: waiting for 1 pods to be ready".into(), false)
        );
        // Partition 0: every replica updated.
        assert!(!statefulset_step(&sts_with(Some(0), 3, 2)).unwrap().done);
        assert!(statefulset_step(&sts_with(Some(0), 3, 3)).unwrap().done);
        // Partition 2 of 3: one updated pod completes it.
        assert!(statefulset_step(&sts_with(Some(2), 3, 1)).unwrap().done);
        assert!(!statefulset_step(&sts_with(Some(2), 3, 0)).unwrap().done);
        // No rollingUpdate block: the revisions must agree.
        assert!(!statefulset_step(&sts_with(None, 3, 3)).unwrap().done);
        let mut s = sts_with(None, 3, 3);
        s.status.as_mut().unwrap().current_revision = Some("db-2".into());
        assert!(statefulset_step(&s).unwrap().done);
        // OnDelete is refused, as kubectl refuses it.
        let mut s = sts_with(None, 3, 3);
        s.spec.update_strategy.as_mut().unwrap().type_ = Some("OnDelete".into());
        assert!(statefulset_step(&s).is_err());
    }

    fn ds(generation: i64, observed: i64, updated: i32, available: i32) -> DaemonSet {
        serde_json::from_value(
            json!({"metadata": {"name": "agent", "generation": generation},
            "spec": {"selector": {}, "template": {}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": 4,
                "updatedNumberScheduled": updated, "numberAvailable": available,
                "currentNumberScheduled": 4, "numberMisscheduled": 0, "numberReady": available}}),
        )
        .unwrap()
    }

    #[test]
    fn a_daemonset_is_done_as_kubectl_says() {
        assert!(
            !daemonset_step(&ds(3, 2, 4, 4)).unwrap().done,
            "not observed"
        );
        assert_eq!(
            daemonset_step(&ds(3, 3, 3, 4)).unwrap(),
            step(
                "rollout: 3 out of 4 new pods have been updated".into(),
                false
            )
        );
        assert!(
            !daemonset_step(&ds(3, 3, 4, 3)).unwrap().done,
            "not available"
        );
        assert!(daemonset_step(&ds(3, 3, 4, 4)).unwrap().done);
        let mut d = ds(3, 3, 4, 4);
        d.spec.update_strategy = Some(serde_json::from_value(json!({"type": "OnDelete"})).unwrap());
        assert!(daemonset_step(&d).is_err());
    }

    #[test]
    fn revisions_say_new_against_old() {
        let r = Revisions {
            new_revision: "db-2".into(),
            new_pods: 1,
            new_restarts: 0,
            old_pods: 3,
            old_restarts: 14,
        };
        assert_eq!(
            r.line(),
            "restarts: new revision db-2 (1 pod): 0; old revisions (3 pods seen): 14"
        );
        assert_eq!(r.json()["old"]["restarts"], 14);
        assert_eq!(r.json()["new"]["revision"], "db-2");
        let none = Revisions::default();
        assert_eq!(
            none.line(),
            "restarts: new pods (0 pods): 0; old revisions (0 pods seen): 0"
        );
    }
}
