//! Leader election on a Lease: watch only while holding it, and hand over
//! at an instant both leaders agree on (the Lease is the only object
//! crashdoc writes).

use crate::server::Readiness;
use crate::session::ceil_sec;
use crate::{LeaderElection, REPORTED_UNTIL, Shared, Summary, WatchError, log};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::time::Duration;

impl Shared {
    /// Watch only while holding the Lease.
    pub(crate) async fn lead(
        &self,
        le: LeaderElection,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<Summary, WatchError> {
        let lease_err = |message: String| WatchError::Lease {
            namespace: le.lease_namespace.clone(),
            name: le.lease_name.clone(),
            message,
        };
        let duration = le.duration_secs.max(2);
        let grace = (duration / 3).max(1);
        let manager = kube_lease_manager::LeaseManagerBuilder::new(
            self.client.clone(),
            le.lease_name.clone(),
        )
        .with_namespace(le.lease_namespace.clone())
        .with_identity(le.identity.clone())
        .with_duration(duration)
        .with_grace(grace)
        .with_field_manager("crashdoc")
        .build()
        .await
        .map_err(|e| lease_err(e.to_string()))?;
        let (mut leading, task) = manager.watch().await;
        self.health.set(Readiness::Standby);
        log(&format!(
            "leader election: waiting for Lease {}/{} as {}",
            le.lease_namespace, le.lease_name, le.identity
        ));
        let mut total = Summary::default();
        tokio::pin!(shutdown);
        loop {
            // Standby until we lead.
            while !*leading.borrow_and_update() {
                self.metrics.leader.set(0);
                self.health.set(Readiness::Standby);
                tokio::select! {
                    _ = &mut shutdown => return self.release(leading, task, total).await,
                    r = leading.changed() => if r.is_err() {
                        return Err(lease_err("the lease manager stopped".into()));
                    },
                }
            }
            self.metrics.leader.set(1);
            let since = self.handover(&le, grace).await;
            log(&format!(
                "leader election: this replica leads; reporting terminations finished since {since}"
            ));
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let me = self.clone();
            let mut session = tokio::spawn(async move {
                me.session(Some(since), false, async {
                    let _ = stop_rx.await;
                })
                .await
            });
            let mut stop = Some(stop_tx);
            let mut shutting_down = false;
            loop {
                tokio::select! {
                    _ = &mut shutdown, if !shutting_down => {
                        shutting_down = true;
                        if let Some(s) = stop.take() { let _ = s.send(()); }
                    }
                    r = leading.changed(), if stop.is_some() => {
                        if r.is_err() || !*leading.borrow() {
                            log("leader election: lost the Lease; stopping the watch");
                            if let Some(s) = stop.take() { let _ = s.send(()); }
                        }
                    }
                    s = &mut session => {
                        if let Ok(s) = s {
                            total.terminations += s.terminations;
                            total.unobserved += s.unobserved;
                            total.captures += s.captures;
                            total.reported_until = s.reported_until;
                        }
                        break;
                    }
                }
            }
            self.metrics.leader.set(0);
            if shutting_down {
                return self.release(leading, task, total).await;
            }
        }
    }

    /// Where this leadership term takes over: the instant the previous
    /// leader said it had reported up to when it handed over gracefully
    /// (the `crashdoc.io/reported-until` annotation it writes on the Lease
    /// before releasing it), else — the previous leader died — `grace`
    /// before now: it renewed at least that long before its claim expired,
    /// so nothing after that was reported twice.
    ///
    /// The history database is per replica, so another replica may have
    /// reported terminations this one's history does not know: a term never
    /// resumes from the local history, only from this instant.
    async fn handover(&self, le: &LeaderElection, grace: u64) -> jiff::Timestamp {
        let floor =
            ceil_sec(jiff::Timestamp::now() - jiff::SignedDuration::from_secs(grace as i64));
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &le.lease_namespace);
        let noted = match api.get_opt(&le.lease_name).await {
            Ok(Some(l)) => l
                .metadata
                .annotations
                .and_then(|a| a.get(REPORTED_UNTIL).cloned())
                .and_then(|t| t.parse::<jiff::Timestamp>().ok()),
            _ => None,
        };
        let Some(t) = noted else { return floor };
        // Consumed: a later term whose leader dies without handing over must
        // not take this stale instant for its own.
        if let Err(e) = self.note_handover(le, None).await {
            log(&format!(
                "leader election: cannot clear the hand-over note: {e}"
            ));
        }
        t
    }

    /// Write (`Some`) or clear (`None`) the hand-over instant on the Lease.
    async fn note_handover(
        &self,
        le: &LeaderElection,
        until: Option<jiff::Timestamp>,
    ) -> Result<Lease, kube::Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &le.lease_namespace);
        let patch = serde_json::json!({"metadata": {"annotations": {
            REPORTED_UNTIL: until.map(|t| t.to_string())}}});
        api.patch(
            &le.lease_name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    }

    async fn release(
        &self,
        leading: tokio::sync::watch::Receiver<bool>,
        task: tokio::task::JoinHandle<
            Result<kube_lease_manager::LeaseManager, kube_lease_manager::LeaseManagerError>,
        >,
        total: Summary,
    ) -> Result<Summary, WatchError> {
        // Closing the channel stops the manager's task; releasing the Lease
        // lets a standby take over at once instead of after its expiry.
        if let (Some(le), Some(until)) = (&self.cfg.leader, total.reported_until) {
            // Tell the next leader where to take over.
            if let Err(e) = self.note_handover(le, Some(until)).await {
                log(&format!(
                    "leader election: cannot note the handover on the Lease: {e}"
                ));
            }
        }
        drop(leading);
        if let Ok(Ok(Ok(m))) = tokio::time::timeout(Duration::from_secs(5), task).await {
            let _ = m.release().await;
        }
        Ok(total)
    }
}
