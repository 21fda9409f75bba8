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
mod inflight;
mod leader;
pub mod metrics;
pub mod notify;
mod pipeline;
mod records;
pub mod server;
pub mod session;
pub mod track;

use crashdoc_history::{Retention, Store};
use crashdoc_kube::CollectOptions;
use futures::StreamExt;
use inflight::{InFlight, Token};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use metrics::Metrics;
use records::{Job, Record};
use server::{Health, Readiness};
use session::{Action, BaselineOp, Event};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The Lease annotation a leader writes when it hands over: the instant up
/// to which it reported terminations.
pub const REPORTED_UNTIL: &str = "crashdoc.io/reported-until";

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
    /// The cluster's name in the history: every capture's
    /// [`crashdoc_history::TerminationKey::cluster`].
    pub cluster: String,
    /// The history: a file, or a database shared by many clusters'
    /// watchers (opened by the caller with this cluster's scope).
    pub store: Arc<dyn Store>,
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

/// A log line on standard error, every URL in it masked.
pub(crate) fn log(msg: &str) {
    eprintln!(
        "{} {}",
        jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        crashdoc_core::redact::mask_urls_in(msg)
    );
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
    let store = cfg.store.clone();
    if store.is_read_only() {
        return Err(WatchError::Config(format!(
            "the history {} is open read-only",
            store.location()
        )));
    }
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
        "crashdoc watch: cluster {} · {} → history {} · metrics http://{addr}/metrics",
        cfg.cluster,
        match &cfg.namespace {
            Some(ns) => format!("namespace {ns}"),
            None => "all namespaces".into(),
        },
        store.location()
    ));
    // The spool's depth, age and drops (a database's; a file has none).
    let spooler = {
        let (store, metrics) = (store.clone(), metrics.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            loop {
                tick.tick().await;
                metrics.spool(store.spool().as_ref(), jiff::Timestamp::now());
            }
        })
    };

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

    let cluster: Arc<str> = Arc::from(cfg.cluster.as_str());
    let shared = Shared {
        client,
        cfg: Arc::new(cfg),
        store,
        metrics,
        health,
        webhooks,
        inflight: InFlight::default(),
        cluster,
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
    spooler.abort();
    Ok(summary)
}

#[derive(Clone)]
pub(crate) struct Shared {
    client: kube::Client,
    cfg: Arc<Config>,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    webhooks: Vec<Arc<notify::Webhook>>,
    /// Terminations observed (and baselines set) not yet stored, or given
    /// up on: each holds a token.
    inflight: InFlight,
    /// `cfg.cluster`, shared by every job.
    cluster: Arc<str>,
}

impl Shared {
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

    /// One watch session: list + watch, capture, store. Returns when `stop`
    /// resolves. The decisions are [`session::on_event`]'s; this loop turns
    /// the watcher's events and the stop into [`Event`]s and executes the
    /// [`Action`]s.
    async fn session(
        &self,
        since: Option<jiff::Timestamp>,
        resume_from_history: bool,
        stop: impl std::future::Future<Output = ()>,
    ) -> Summary {
        let cfg = &self.cfg;
        let mut state = session::State::new(since, resume_from_history);
        if resume_from_history {
            for (id, n) in self.seeds() {
                state.seed(id, n);
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
        let (jobs, job_rx) = mpsc::channel::<(Job, Token)>(cfg.queue_capacity);
        // Records waiting for the database: bounded too (a batch of up to
        // 256 is one transaction, ~1000 records/s).
        let (rec_tx, rec_rx) = mpsc::channel::<(Record, Token)>(2_000);
        let writer = tokio::spawn(self.clone().writer(rec_rx));
        let workers = tokio::spawn(self.clone().workers(job_rx, rec_tx.clone()));
        let (shed, shed_rx) = mpsc::channel::<(Job, Token)>(5_000);
        let shedder = tokio::spawn(self.clone().shedder(shed_rx, rec_tx.clone()));

        // Baselines to persist (only when a later run resumes from them).
        let (baselines, base_rx) = mpsc::channel::<(BaselineOp, Option<Token>)>(20_000);
        let baseliner = resume_from_history.then(|| tokio::spawn(self.clone().baseliner(base_rx)));
        let queues = Queues {
            jobs,
            shed,
            baselines,
        };
        let mut stream = watcher(api, wc).default_backoff().boxed();
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
        // A leader's session, once stopped, drains until its cutoff.
        let deadline = tokio::time::sleep(Duration::from_secs(u64::MAX / 4));
        tokio::pin!(deadline);
        tokio::pin!(stop);
        'events: loop {
            let ev = tokio::select! {
                _ = &mut stop, if !state.stopping() => Event::Stop { now: jiff::Timestamp::now() },
                _ = &mut deadline => break,
                ev = stream.next() => {
                    let Some(ev) = ev else { break };
                    self.metrics.watch_events.inc();
                    self.metrics
                        .last_event
                        .set(jiff::Timestamp::now().as_millisecond() as f64 / 1000.0);
                    match ev {
                        Ok(watcher::Event::Init) => Event::Init,
                        Ok(watcher::Event::InitApply(p)) => Event::InitApply(Box::new(p)),
                        Ok(watcher::Event::InitDone) => Event::InitDone,
                        Ok(watcher::Event::Apply(p)) => Event::Apply(Box::new(p)),
                        Ok(watcher::Event::Delete(p)) => Event::Delete(Box::new(p)),
                        Err(e) => Event::Error(e.to_string()),
                    }
                }
            };
            for action in session::on_event(&mut state, ev) {
                if !self.execute(action, &queues, deadline.as_mut()) {
                    break 'events;
                }
            }
        }
        // Drain: captures in flight get a few seconds to finish.
        drop(queues);
        drop(rec_tx);
        let drained = tokio::time::timeout(Duration::from_secs(15), async {
            let _ = workers.await;
            let _ = shedder.await;
            if let Some(b) = baseliner {
                let _ = b.await;
            }
            writer.await.unwrap_or_default()
        })
        .await;
        if let Some(c) = checkpointer {
            c.abort();
            self.checkpoint().await;
        }
        Summary {
            terminations: state.terminations,
            unobserved: state.unobserved,
            captures: drained.unwrap_or_default(),
            reported_until: state.cutoff(),
        }
    }

    /// Execute one of [`session::on_event`]'s actions; `false`: the session ends.
    fn execute(
        &self,
        action: Action,
        q: &Queues,
        deadline: std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> bool {
        match action {
            Action::WatchRestarted => {
                self.metrics.watch_restarts.inc();
            }
            Action::Verbose(m) => {
                if self.cfg.verbose {
                    log(&m);
                }
            }
            Action::WatchedPods(n) => {
                self.metrics.watched_pods.set(n as i64);
            }
            Action::TrackedContainers(n) => {
                self.metrics.tracked_containers.set(n as i64);
            }
            Action::Ready => self.health.set(Readiness::Ready),
            Action::Degraded(msg) => {
                log(&format!("watch: {msg} (retrying with back-off)"));
                self.health.set(Readiness::Degraded(msg));
            }
            Action::Baseline(op) => {
                // A baseline set is on its way until stored; a
                // failed send drops its token.
                let token = matches!(op, BaselineOp::Set(_)).then(|| self.inflight.token());
                let _ = q.baselines.try_send((op, token));
            }
            Action::Unobserved {
                labels,
                count,
                log: line,
            } => {
                self.metrics.restart(labels, u64::from(count));
                log(&line);
            }
            Action::Terminated { labels, capture } => {
                self.metrics.restart(labels, 1);
                let session::ToCapture {
                    term,
                    pod,
                    workload,
                    node,
                } = *capture;
                let job = Job {
                    cluster: self.cluster.clone(),
                    node,
                    pod: *pod,
                    workload,
                    term,
                    observed_at: jiff::Timestamp::now(),
                    queued: Instant::now(),
                };
                match q.jobs.try_send((job, self.inflight.token())) {
                    Ok(()) => {
                        self.metrics.queue_depth.inc();
                    }
                    Err(mpsc::error::TrySendError::Full(job))
                    | Err(mpsc::error::TrySendError::Closed(job)) => {
                        // Backlog: keep what the status says (off
                        // this loop, so the watch keeps up); a job
                        // no one takes drops its token.
                        if q.shed.try_send(job).is_err() {
                            self.metrics.capture("failed");
                        }
                    }
                }
            }
            Action::DrainFor(wait) => {
                deadline.reset(tokio::time::Instant::now() + wait);
            }
            Action::Finish => return false,
        }
        true
    }
}

/// Where a session's actions send their work.
struct Queues {
    /// Terminations to capture (bounded: `queue_capacity`).
    jobs: mpsc::Sender<(Job, Token)>,
    /// Terminations the capture queue could not take: status only.
    shed: mpsc::Sender<(Job, Token)>,
    baselines: mpsc::Sender<(BaselineOp, Option<Token>)>,
}
