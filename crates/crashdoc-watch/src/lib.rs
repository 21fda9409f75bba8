//! `crashdoc watch`: capture every container termination as it happens.
//!
//! The kubelet keeps only a container's last termination, and the next
//! crash overwrites its previous logs. This crate follows pods with a
//! kube-runtime watcher and, on every termination, once per
//! `(pod uid, container, restart count)`:
//!
//! 1. counts it (Prometheus counters by workload, container, reason, exit
//!    code; restarts it could not see individually count as `Unobserved`),
//! 2. captures the evidence while it still exists (the same collection as
//!    `crashdoc capture`: previous logs, events, owner, node, ...) on a
//!    bounded pool of workers,
//! 3. diagnoses it with the same rules as `crashdoc analyze`,
//! 4. stores capture and diagnosis in the history database
//!    ([`crashdoc_history`]), and
//! 5. notifies webhooks, rate-limited per workload.
//!
//! Under a restart storm the capture queue is bounded: terminations it
//! cannot take are still counted and stored from the pod's status alone
//! (`status_only`), so nothing is lost and memory stays flat.
//!
//! Resuming: the history holds, per container, the last termination
//! recorded; the watcher's first list after a start, a 410 Gone or a lost
//! connection is compared against it, so a restart of crashdoc or of the
//! API server neither duplicates nor drops a termination the kubelet still
//! shows.
//!
//! With `leader_election`, only the replica holding the Lease watches; the
//! Lease is the only object crashdoc ever writes. Each replica has its own
//! history, so a leadership term does not resume from it: it reports what
//! finished after the hand-over (see `Shared::handover`), so two replicas
//! never report the same termination.

pub mod history;
pub mod metrics;
pub mod notify;
pub mod server;
pub mod track;

use crashdoc_core::diagnose;
use crashdoc_core::ingest::bundle::{self, PodFiles};
use crashdoc_history::{Capture, CaptureKind, Inserted, Retention, Store, TerminationKey};
use crashdoc_kube::{CollectOptions, Collector};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use metrics::{Metrics, RestartLabels};
use server::{Health, Readiness};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use track::{Seen, Termination, Tracker};

/// The Lease annotation a leader writes when it hands over: the instant up
/// to which it reported terminations.
pub const REPORTED_UNTIL: &str = "crashdoc.io/reported-until";

/// A change to the persisted baselines.
enum BaselineOp {
    Set((String, String, i32)),
    Forget(String),
    /// After a list: every pod not in it is gone.
    Keep(HashSet<String>),
}

const SHED: &str = "the capture queue was full (restart storm): logs and events were not read";

/// Leader election on a Lease.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub lease_name: String,
    pub lease_namespace: String,
    /// This replica's identity in the Lease (`holderIdentity`).
    pub identity: String,
    /// Seconds a leader's claim is valid without renewal.
    pub duration_secs: u64,
}

/// A webhook to notify.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    pub url: String,
    pub format: notify::Format,
}

/// Everything `watch` needs to know.
#[derive(Debug, Clone)]
pub struct Config {
    /// `None`: every namespace.
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub db: PathBuf,
    pub retention: Retention,
    pub listen: SocketAddr,
    /// Captures running at once.
    pub capture_concurrency: usize,
    /// Terminations waiting for a capture; beyond it they are stored from
    /// their status alone.
    pub queue_capacity: usize,
    pub collect: CollectOptions,
    pub leader: Option<LeaderElection>,
    pub webhooks: Vec<WebhookConfig>,
    pub notify_interval: Duration,
    /// Also capture the last termination of pods already crash-looping when
    /// the watch starts (off: they are a baseline, reported from their next
    /// termination on; an earlier run may have them). Ignored with leader
    /// election, where the previous leader may have reported them.
    pub capture_existing: bool,
    /// The kubeconfig context, written into bundles.
    pub context: Option<String>,
    pub verbose: bool,
}

/// Why `watch` could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    History(#[from] crashdoc_history::HistoryError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("leader election on Lease {namespace}/{name} failed: {message}")]
    Lease {
        namespace: String,
        name: String,
        message: String,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl crashdoc_core::Hint for WatchError {
    /// What the user can do about it.
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            WatchError::Listen { .. } => Some(
                "another process uses that address; pick another with --listen 127.0.0.1:PORT"
                    .into(),
            ),
            WatchError::Lease { namespace, .. } => Some(format!(
                "leader election needs get, create, update and patch on leases.coordination.k8s.io in namespace {namespace} (the only write crashdoc makes); see deploy/ for the Role"
            ).into()),
            // The history's own hint, as `crashdoc history` prints it.
            WatchError::History(e) => e.hint(),
            WatchError::Config(_) => None,
        }
    }
}

/// What a watch did, returned when it stops.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub terminations: u64,
    pub unobserved: u64,
    pub captures: u64,
    /// A leader's term: the whole second up to which it reported every
    /// termination (what it writes on the Lease when it hands over).
    pub reported_until: Option<jiff::Timestamp>,
}

/// `t` rounded down to its whole second (`finishedAt` has whole seconds).
fn floor_sec(t: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// `t` rounded up to a whole second.
fn ceil_sec(t: jiff::Timestamp) -> jiff::Timestamp {
    let up = i64::from(t.subsec_nanosecond() > 0);
    jiff::Timestamp::from_second(t.as_second() + up).unwrap_or(t)
}

fn log(msg: &str) {
    eprintln!(
        "{} {msg}",
        jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ")
    );
}

/// One termination waiting for its capture.
struct Job {
    term: Termination,
    pod: Pod,
    workload: Option<(String, String)>,
    node: Option<String>,
    observed_at: jiff::Timestamp,
    queued: Instant,
}

/// Run until `shutdown` resolves. Errors only on what cannot be retried
/// (the database, the listen address, the Lease); API server failures are
/// retried with back-off and reported on `/readyz`.
pub async fn run(
    client: kube::Client,
    cfg: Config,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<Summary, WatchError> {
    if cfg.capture_concurrency == 0 || cfg.queue_capacity == 0 {
        return Err(WatchError::Config(
            "capture concurrency and queue capacity must be at least 1".into(),
        ));
    }
    let store = Arc::new(Store::open(&cfg.db)?);
    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(Health::default());
    if let Ok(s) = store.stats() {
        metrics.history(&s, &cfg.retention);
    }
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| WatchError::Listen {
            addr: cfg.listen,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(cfg.listen);
    tokio::spawn(server::serve(listener, metrics.clone(), health.clone()));
    log(&format!(
        "crashdoc watch: {} → history {} · metrics http://{addr}/metrics",
        match &cfg.namespace {
            Some(ns) => format!("namespace {ns}"),
            None => "all namespaces".into(),
        },
        cfg.db.display()
    ));

    let webhooks: Vec<Arc<notify::Webhook>> = cfg
        .webhooks
        .iter()
        .map(|w| notify::Webhook::new(&w.url, w.format, cfg.notify_interval).map(Arc::new))
        .collect::<Result<_, _>>()
        .map_err(WatchError::Config)?;

    // Retention, at start and every five minutes.
    let pruner = {
        let (store, metrics, retention) = (store.clone(), metrics.clone(), cfg.retention.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(300));
            loop {
                tick.tick().await;
                let (s, r) = (store.clone(), retention.clone());
                let res =
                    tokio::task::spawn_blocking(move || s.prune(&r, jiff::Timestamp::now())).await;
                match res {
                    Ok(Ok(p)) if p.removed > 0 => {
                        metrics.history_pruned.inc_by(p.removed);
                        log(&format!(
                            "history: removed {} capture(s) past the retention limits ({} KiB)",
                            p.removed,
                            p.bytes_freed / 1024
                        ));
                    }
                    Ok(Err(e)) => log(&format!("history: pruning failed: {e}")),
                    _ => {}
                }
                if let Ok(s) = store.stats() {
                    metrics.history(&s, &retention);
                }
            }
        })
    };

    let shared = Shared {
        client,
        cfg: Arc::new(cfg),
        store,
        metrics,
        health,
        webhooks,
        pending: Arc::new(AtomicI64::new(0)),
    };
    let summary = match shared.cfg.leader.clone() {
        None => {
            shared.metrics.leader.set(1);
            // One instance: the history knows what was reported before a
            // restart, so containers it knows resume from there.
            // Containers it has no record of: terminations since the last
            // checkpoint of the history (what happened while no watcher
            // ran), else since the start (a second of slack: finishedAt
            // has whole seconds).
            let since = (!shared.cfg.capture_existing).then(|| {
                let now = jiff::Timestamp::now();
                match shared.store.checkpoint() {
                    Ok(Some(cp)) if cp < now => floor_sec(cp),
                    _ => floor_sec(now) - jiff::SignedDuration::from_secs(1),
                }
            });
            shared.session(since, true, shutdown).await
        }
        Some(le) => shared.lead(le, shutdown).await?,
    };
    pruner.abort();
    Ok(summary)
}

#[derive(Clone)]
struct Shared {
    client: kube::Client,
    cfg: Arc<Config>,
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    webhooks: Vec<Arc<notify::Webhook>>,
    /// Terminations observed and not yet stored (or given up on).
    pending: Arc<AtomicI64>,
}

impl Shared {
    /// Watch only while holding the Lease.
    async fn lead(
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

    /// Baselines from the history: the last termination recorded per container.
    fn seeds(&self) -> HashMap<(String, String), i32> {
        let mut out: HashMap<(String, String), i32> = match self.store.baselines() {
            Ok(b) => b,
            Err(e) => {
                log(&format!(
                    "history: cannot read the containers' baselines: {e}"
                ));
                HashMap::new()
            }
        };
        match self.store.seen_keys() {
            Ok(keys) => {
                for k in keys {
                    let e = out
                        .entry((k.pod_uid, k.container))
                        .or_insert(k.restart_count);
                    *e = (*e).max(k.restart_count);
                }
            }
            Err(e) => log(&format!(
                "history: cannot read the recorded terminations: {e}"
            )),
        }
        out
    }

    /// One watch session: list + watch, capture, store. Returns when `stop` resolves.
    async fn session(
        &self,
        since: Option<jiff::Timestamp>,
        resume_from_history: bool,
        stop: impl std::future::Future<Output = ()>,
    ) -> Summary {
        let cfg = &self.cfg;
        let mut tracker = Tracker::new(since);
        if resume_from_history {
            for (id, n) in self.seeds() {
                tracker.seed(id, n);
            }
        }
        let api: Api<Pod> = match &cfg.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        };
        let mut wc = watcher::Config::default();
        if let Some(sel) = &cfg.label_selector {
            wc = wc.labels(sel);
        }
        let (job_tx, job_rx) = mpsc::channel::<Job>(cfg.queue_capacity);
        // Records waiting for the database: bounded too (a batch of up to
        // 256 is one transaction, ~1000 records/s).
        let (rec_tx, rec_rx) = mpsc::channel::<Capture>(2_000);
        let writer = tokio::spawn(self.clone().writer(rec_rx));
        let workers = tokio::spawn(self.clone().workers(job_rx, rec_tx.clone()));
        let (shed_tx, shed_rx) = mpsc::channel::<Job>(5_000);
        let shedder = tokio::spawn(self.clone().shedder(shed_rx, rec_tx.clone()));

        // Baselines to persist (only when a later run resumes from them).
        let (base_tx, base_rx) = mpsc::channel::<BaselineOp>(20_000);
        let baseliner = resume_from_history.then(|| tokio::spawn(self.clone().baseliner(base_rx)));
        let mut stream = watcher(api, wc).default_backoff().boxed();
        let mut summary = Summary::default();
        let mut in_view: HashSet<String> = HashSet::new();
        let mut listing: HashSet<String> = HashSet::new();
        // The history's checkpoint: while nothing observed is still on its
        // way to the database, every termination up to now is stored.
        let checkpointer = resume_from_history.then(|| {
            let me = self.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(5));
                loop {
                    tick.tick().await;
                    me.checkpoint().await;
                }
            })
        });
        // A leader hands over at a whole second: after the stop it goes on
        // reading events until that second has passed (plus the events'
        // latency), reporting only terminations that finished before it; the
        // next leader reports those that finished at or after it.
        let mut cutoff: Option<jiff::Timestamp> = None;
        let deadline = tokio::time::sleep(Duration::from_secs(u64::MAX / 4));
        tokio::pin!(deadline);
        tokio::pin!(stop);
        loop {
            let ev = tokio::select! {
                _ = &mut stop, if cutoff.is_none() => {
                    if resume_from_history {
                        break;
                    }
                    let now = jiff::Timestamp::now();
                    let c = ceil_sec(now);
                    cutoff = Some(c);
                    let wait = (c - now).unsigned_abs() + Duration::from_millis(500);
                    deadline.as_mut().reset(tokio::time::Instant::now() + wait);
                    continue;
                }
                _ = &mut deadline => break,
                ev = stream.next() => match ev { Some(ev) => ev, None => break },
            };
            self.metrics.watch_events.inc();
            self.metrics
                .last_event
                .set(jiff::Timestamp::now().as_millisecond() as f64 / 1000.0);
            let pod = match ev {
                Ok(watcher::Event::Init) => {
                    self.metrics.watch_restarts.inc();
                    listing.clear();
                    if cfg.verbose {
                        log("watch: listing pods");
                    }
                    continue;
                }
                Ok(watcher::Event::InitApply(p)) => {
                    if let Some(uid) = &p.metadata.uid {
                        listing.insert(uid.clone());
                    }
                    p
                }
                Ok(watcher::Event::InitDone) => {
                    // Pods gone while we were not watching: forget them.
                    tracker.retain_pods(&listing);
                    in_view = std::mem::take(&mut listing);
                    if baseliner.is_some() {
                        let _ = base_tx.try_send(BaselineOp::Keep(in_view.clone()));
                    }
                    self.metrics.watched_pods.set(in_view.len() as i64);
                    self.metrics.tracked_containers.set(tracker.len() as i64);
                    self.health.set(Readiness::Ready);
                    if cfg.verbose {
                        log(&format!("watch: {} pods listed; watching", in_view.len()));
                    }
                    continue;
                }
                Ok(watcher::Event::Apply(p)) => {
                    if let Some(uid) = &p.metadata.uid
                        && in_view.insert(uid.clone())
                    {
                        self.metrics.watched_pods.set(in_view.len() as i64);
                    }
                    p
                }
                Ok(watcher::Event::Delete(p)) => {
                    if let Some(uid) = &p.metadata.uid {
                        tracker.forget(uid);
                        if baseliner.is_some() {
                            let _ = base_tx.try_send(BaselineOp::Forget(uid.clone()));
                        }
                        in_view.remove(uid);
                        self.metrics.watched_pods.set(in_view.len() as i64);
                        self.metrics.tracked_containers.set(tracker.len() as i64);
                    }
                    continue;
                }
                Err(e) => {
                    let msg = e.to_string();
                    log(&format!("watch: {msg} (retrying with back-off)"));
                    self.health.set(Readiness::Degraded(msg));
                    continue;
                }
            };
            let seen = tracker.observe(&pod);
            if baseliner.is_some() {
                for b in tracker.take_fresh() {
                    if base_tx.try_send(BaselineOp::Set(b)).is_ok() {
                        self.pending.fetch_add(1, Ordering::SeqCst);
                    }
                }
            } else {
                tracker.take_fresh();
            }
            if seen.is_empty() {
                continue;
            }
            self.metrics.tracked_containers.set(tracker.len() as i64);
            let workload = track::workload_of(&pod);
            let (owner_kind, owner) = workload.clone().unwrap_or_default();
            for s in seen {
                match s {
                    Seen::Unobserved {
                        namespace,
                        pod: name,
                        container,
                        count,
                        ..
                    } => {
                        summary.unobserved += u64::from(count);
                        self.metrics.restart(
                            RestartLabels {
                                namespace: namespace.clone(),
                                owner_kind: owner_kind.clone(),
                                owner: owner.clone(),
                                container: container.clone(),
                                reason: "Unobserved".into(),
                                exit_code: String::new(),
                            },
                            u64::from(count),
                        );
                        log(&format!(
                            "{namespace}/{name} {container}: {count} termination(s) happened while they could not be observed (counted as Unobserved)"
                        ));
                    }
                    Seen::Terminated(term) => {
                        if let (Some(c), Some(f)) = (cutoff, term.finished_at)
                            && f >= c
                        {
                            // The next leader's.
                            continue;
                        }
                        summary.terminations += 1;
                        self.metrics.restart(
                            RestartLabels {
                                namespace: term.namespace.clone(),
                                owner_kind: owner_kind.clone(),
                                owner: owner.clone(),
                                container: term.container.clone(),
                                reason: term.reason.clone().unwrap_or_else(|| "Unknown".into()),
                                exit_code: term.exit_code.to_string(),
                            },
                            1,
                        );
                        let job = Job {
                            node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                            pod: pod.clone(),
                            workload: workload.clone(),
                            term,
                            observed_at: jiff::Timestamp::now(),
                            queued: Instant::now(),
                        };
                        match job_tx.try_send(job) {
                            Ok(()) => {
                                self.metrics.queue_depth.inc();
                                self.pending.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(mpsc::error::TrySendError::Full(job))
                            | Err(mpsc::error::TrySendError::Closed(job)) => {
                                // Backlog: keep what the status says (off
                                // this loop, so the watch keeps up).
                                match shed_tx.try_send(job) {
                                    Ok(()) => {
                                        self.pending.fetch_add(1, Ordering::SeqCst);
                                    }
                                    Err(_) => self.metrics.capture("failed"),
                                }
                            }
                        }
                    }
                }
            }
        }
        // Drain: captures in flight get a few seconds to finish.
        drop(job_tx);
        drop(shed_tx);
        drop(rec_tx);
        drop(base_tx);
        let drained = tokio::time::timeout(Duration::from_secs(15), async {
            let _ = workers.await;
            let _ = shedder.await;
            if let Some(b) = baseliner {
                let _ = b.await;
            }
            writer.await.unwrap_or_default()
        })
        .await;
        summary.captures = drained.unwrap_or_default();
        if let Some(c) = checkpointer {
            c.abort();
            self.checkpoint().await;
        }
        summary.reported_until = cutoff;
        summary
    }

    /// Capture queued terminations, `capture_concurrency` at a time.
    async fn workers(self, rx: mpsc::Receiver<Job>, out: mpsc::Sender<Capture>) {
        let stream = tokio_stream_from(rx);
        stream
            .for_each_concurrent(self.cfg.capture_concurrency, |job| {
                let me = self.clone();
                let out = out.clone();
                async move {
                    let rec = me.capture(job).await;
                    if out.send(rec).await.is_err() {
                        me.metrics.capture("failed");
                        me.pending.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
            .await;
    }

    /// Persist baselines in batches (one transaction each).
    async fn baseliner(self, mut rx: mpsc::Receiver<BaselineOp>) {
        let mut buf: Vec<BaselineOp> = Vec::with_capacity(4096);
        while rx.recv_many(&mut buf, 4096).await > 0 {
            let mut set = Vec::new();
            let mut forget = HashSet::new();
            let mut keep = None;
            for op in buf.drain(..) {
                match op {
                    BaselineOp::Set(b) => set.push(b),
                    BaselineOp::Forget(uid) => {
                        forget.insert(uid);
                    }
                    BaselineOp::Keep(k) => keep = Some(k),
                }
            }
            let n = set.len() as i64;
            let store = self.store.clone();
            let res = tokio::task::spawn_blocking(move || {
                store.update_baselines(&set, &forget, keep.as_ref())
            })
            .await;
            self.pending.fetch_sub(n, Ordering::SeqCst);
            if let Ok(Err(e)) = res {
                log(&format!(
                    "history: cannot store the containers' baselines: {e}"
                ));
            }
        }
    }

    /// Advance the history's checkpoint to now when nothing observed is
    /// still waiting to be stored and the watch is up to date.
    async fn checkpoint(&self) {
        if self.pending.load(Ordering::SeqCst) != 0 || self.health.get() != Readiness::Ready {
            return;
        }
        let store = self.store.clone();
        let now = jiff::Timestamp::now();
        match tokio::task::spawn_blocking(move || store.set_checkpoint(now)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => log(&format!("history: cannot write the checkpoint: {e}")),
            Err(_) => {}
        }
    }

    /// Records from the pod status alone for terminations the capture queue
    /// could not take, diagnosed off the async threads, in batches.
    async fn shedder(self, mut rx: mpsc::Receiver<Job>, out: mpsc::Sender<Capture>) {
        let mut buf: Vec<Job> = Vec::with_capacity(64);
        while rx.recv_many(&mut buf, 64).await > 0 {
            let jobs = std::mem::take(&mut buf);
            let context = self.cfg.context.clone();
            let n = jobs.len();
            let recs = tokio::task::spawn_blocking(move || {
                jobs.iter()
                    .map(|j| status_only(j, &context, SHED))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            for _ in recs.len()..n {
                self.metrics.capture("failed");
                self.pending.fetch_sub(1, Ordering::SeqCst);
            }
            for r in recs {
                if out.send(r).await.is_err() {
                    self.metrics.capture("failed");
                    self.pending.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    async fn capture(&self, job: Job) -> Capture {
        let waited = job.queued.elapsed();
        let started = Instant::now();
        let ns = job.term.namespace.clone();
        let collector = Collector::new(self.client.clone(), ns, self.cfg.collect.clone());
        let files = collector.collect_pod(job.pod.clone(), None).await;
        self.metrics.queue_depth.dec();
        let rec = record(&job, files, &self.cfg.context, waited);
        self.metrics
            .capture_seconds
            .observe(started.elapsed().as_secs_f64());
        rec
    }

    /// Store records in batches (one transaction each), then count and notify.
    /// Returns how many were stored.
    async fn writer(self, mut rx: mpsc::Receiver<Capture>) -> u64 {
        let mut stored = 0u64;
        let mut buf: Vec<Capture> = Vec::with_capacity(256);
        while rx.recv_many(&mut buf, 256).await > 0 {
            let batch = std::mem::take(&mut buf);
            let n = batch.len() as i64;
            let store = self.store.clone();
            let res = tokio::task::spawn_blocking(move || {
                let r = store.insert_batch(&batch);
                (batch, r)
            })
            .await;
            // Stored (or failed for good): no longer on their way.
            self.pending.fetch_sub(n, Ordering::SeqCst);
            let (batch, result) = match res {
                Ok(x) => x,
                Err(e) => {
                    log(&format!("history: the writer task failed: {e}"));
                    continue;
                }
            };
            let inserted = match result {
                Ok(i) => i,
                Err(e) => {
                    log(&format!(
                        "history: cannot store {} capture(s): {e}",
                        batch.len()
                    ));
                    for _ in &batch {
                        self.metrics.capture("failed");
                    }
                    continue;
                }
            };
            for (c, ins) in batch.into_iter().zip(inserted) {
                let Inserted::New(id) = ins else { continue };
                stored += 1;
                self.metrics.history_captures.inc();
                self.metrics.capture(kind_str(c.kind));
                if let Some(cause) = &c.cause {
                    self.metrics.diagnosis(
                        &c.namespace,
                        c.owner_kind.as_deref().unwrap_or_default(),
                        c.owner.as_deref().unwrap_or_default(),
                        cause,
                    );
                }
                log(&line(&c, id));
                for w in &self.webhooks {
                    let (w, n, m) = (w.clone(), notice(&c, id), self.metrics.clone());
                    tokio::spawn(async move {
                        match w.notify(n).await {
                            notify::Sent::Sent => m.notification("sent"),
                            notify::Sent::Suppressed => m.notification("suppressed"),
                            notify::Sent::Failed(e) => {
                                m.notification("failed");
                                log(&format!("webhook: {e}"));
                            }
                        }
                    });
                }
            }
        }
        stored
    }
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn confidence_str(c: diagnose::Confidence) -> &'static str {
    match c {
        diagnose::Confidence::High => "high",
        diagnose::Confidence::Medium => "medium",
        diagnose::Confidence::Low => "low",
    }
}

fn kind_str(k: CaptureKind) -> &'static str {
    match k {
        CaptureKind::Full => "full",
        CaptureKind::Partial => "partial",
        CaptureKind::StatusOnly => "status_only",
    }
}

/// The log line of a stored capture.
fn line(c: &Capture, id: u64) -> String {
    format!(
        "{}/{} {} #{}: {}{} → {}{} [{} #{id}]",
        c.namespace,
        c.pod,
        c.key.container,
        c.key.restart_count,
        c.reason.as_deref().unwrap_or("terminated"),
        c.exit_code
            .map(|e| format!(" exit {e}"))
            .unwrap_or_default(),
        c.cause.as_deref().unwrap_or("no diagnosis"),
        c.confidence
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        kind_str(c.kind),
    )
}

fn notice(c: &Capture, id: u64) -> notify::Notice {
    let d: Option<serde_json::Value> = c
        .diagnosis_json
        .as_deref()
        .and_then(|j| serde_json::from_str(j).ok());
    let strings = |field: &str| -> Vec<String> {
        d.as_ref()
            .and_then(|d| d[field].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    notify::Notice {
        kind: "crashdoc.termination",
        namespace: c.namespace.clone(),
        pod: c.pod.clone(),
        container: c.key.container.clone(),
        owner_kind: c.owner_kind.clone(),
        owner: c.owner.clone(),
        restart_count: c.key.restart_count,
        reason: c.reason.clone(),
        exit_code: c.exit_code.unwrap_or(-1),
        cause: c.cause.clone(),
        confidence: c.confidence.clone(),
        summary: c.summary.clone(),
        fix: strings("fix"),
        commands: strings("commands"),
        suppressed: 0,
        history_id: Some(id),
    }
}

/// Diagnose a pod's files and build its history record.
fn build(
    job: &Job,
    files: PodFiles,
    context: &Option<String>,
    kind: CaptureKind,
    mut missing: Vec<String>,
) -> Capture {
    let ev = bundle::read_memory(std::slice::from_ref(&files));
    let report = diagnose::diagnose_all(&ev);
    let pod_report = report.pods.first();
    // Evidence the capture could not read makes it partial; metrics usage
    // (no metrics-server) and Secret key names (not read by choice) are
    // extras whose absence is noted but does not.
    let mut partial = !missing.is_empty();
    if kind != CaptureKind::StatusOnly {
        for m in pod_report.into_iter().flat_map(|p| p.missing.iter()) {
            partial |= !matches!(m.what.as_str(), "usage" | "secret key names");
            missing.push(format!("{}: {}", m.what, m.why));
        }
    }
    // The diagnosis of this container when there is one, else the pod's first.
    let diag = pod_report.and_then(|p| {
        p.diagnoses
            .iter()
            .find(|d| d.container.as_deref() == Some(job.term.container.as_str()))
            .or_else(|| p.diagnoses.first())
    });
    let created = jiff::Timestamp::now().to_string();
    let bundle =
        match bundle::tar_gz_bytes(std::slice::from_ref(&files), context.as_deref(), &created) {
            Ok(b) => Some(b),
            Err(e) => {
                missing.push(format!("bundle: {e}"));
                None
            }
        };
    let kind = match kind {
        CaptureKind::Full if partial || bundle.is_none() => CaptureKind::Partial,
        k => k,
    };
    Capture {
        key: TerminationKey {
            pod_uid: job.term.uid.clone(),
            container: job.term.container.clone(),
            restart_count: job.term.restart_count,
        },
        namespace: job.term.namespace.clone(),
        pod: job.term.pod.clone(),
        owner_kind: job.workload.as_ref().map(|w| w.0.clone()),
        owner: job.workload.as_ref().map(|w| w.1.clone()),
        node: job.node.clone(),
        finished_at: job.term.finished_at,
        observed_at: job.observed_at,
        reason: job.term.reason.clone(),
        exit_code: Some(job.term.exit_code),
        signal: job.term.signal,
        cause: diag.map(|d| d.cause.id().to_string()),
        confidence: diag.map(|d| confidence_str(d.confidence).to_string()),
        summary: diag.map(|d| d.summary.clone()),
        diagnosis_json: diag.and_then(|d| serde_json::to_string(d).ok()),
        kind,
        missing,
        bundle,
    }
}

fn record(job: &Job, files: PodFiles, context: &Option<String>, waited: Duration) -> Capture {
    let mut missing = Vec::new();
    if waited > Duration::from_secs(30) {
        missing.push(format!(
            "captured {} s after the termination: a later crash may have replaced the previous log",
            waited.as_secs()
        ));
    }
    build(job, files, context, CaptureKind::Full, missing)
}

/// A record from the pod's status alone (no API request).
fn status_only(job: &Job, context: &Option<String>, why: &str) -> Capture {
    let files = PodFiles {
        namespace: job.term.namespace.clone(),
        name: job.term.pod.clone(),
        files: vec![(
            "pod.json".into(),
            serde_json::to_vec_pretty(&job.pod).unwrap_or_default(),
        )],
    };
    build(
        job,
        files,
        context,
        CaptureKind::StatusOnly,
        vec![why.to_string()],
    )
}
