//! The capture pipeline: queued terminations are captured on a bounded pool
//! (or, shed under a restart storm, recorded from their status alone),
//! stored in batches, counted and notified; baselines are stored in batches
//! too; the checkpoint advances while nothing is in flight.

use crate::inflight::Token;
use crate::records::{self, Job, Record, kind_str, line, notice, status_only};
use crate::server::Readiness;
use crate::session::BaselineOp;
use crate::{Shared, log, notify};
use crashdoc_core::diagnose::Diagnosis;
use crashdoc_history::{Capture, ConfigKeys, Inserted};
use crashdoc_kube::Collector;
use crashdoc_kube::runs::Run;
use futures::StreamExt;
use std::collections::HashSet;
use std::time::Instant;
use tokio::sync::mpsc;

const SHED: &str = "the capture queue was full (restart storm): logs and events were not read";

impl Shared {
    /// Capture queued terminations, `capture_concurrency` at a time.
    pub(crate) async fn workers(
        self,
        rx: mpsc::Receiver<(Job, Token)>,
        out: mpsc::Sender<(Record, Token)>,
    ) {
        let stream = tokio_stream_from(rx);
        stream
            .for_each_concurrent(self.cfg.capture_concurrency, |(job, token)| {
                let me = self.clone();
                let out = out.clone();
                async move {
                    let rec = me.capture(job).await;
                    // A failed send drops the token with the record.
                    if out.send((rec, token)).await.is_err() {
                        me.metrics.capture("failed");
                    }
                }
            })
            .await;
    }

    /// Persist baselines in batches (one transaction each).
    pub(crate) async fn baseliner(self, mut rx: mpsc::Receiver<(BaselineOp, Option<Token>)>) {
        let mut buf: Vec<(BaselineOp, Option<Token>)> = Vec::with_capacity(4096);
        while rx.recv_many(&mut buf, 4096).await > 0 {
            let mut set = Vec::new();
            let mut forget = HashSet::new();
            let mut keep = None;
            let mut tokens = Vec::new();
            for (op, token) in buf.drain(..) {
                tokens.extend(token);
                match op {
                    BaselineOp::Set(b) => set.push(b),
                    BaselineOp::Forget(uid) => {
                        forget.insert(uid);
                    }
                    BaselineOp::Keep(k) => keep = Some(k),
                }
            }
            let store = self.store.clone();
            let res = tokio::task::spawn_blocking(move || {
                store.update_baselines(&set, &forget, keep.as_ref())
            })
            .await;
            drop(tokens);
            if let Ok(Err(e)) = res {
                log(&format!(
                    "history: cannot store the containers' baselines: {e}"
                ));
            }
        }
    }

    /// Advance the history's checkpoint to now when nothing observed is
    /// still waiting to be stored and the watch is up to date.
    pub(crate) async fn checkpoint(&self) {
        if !self.inflight.idle() || self.health.get() != Readiness::Ready {
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
    pub(crate) async fn shedder(
        self,
        mut rx: mpsc::Receiver<(Job, Token)>,
        out: mpsc::Sender<(Record, Token)>,
    ) {
        let mut buf: Vec<(Job, Token)> = Vec::with_capacity(64);
        while rx.recv_many(&mut buf, 64).await > 0 {
            let (jobs, tokens): (Vec<Job>, Vec<Token>) = buf.drain(..).unzip();
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
            }
            // Tokens without a record (the task failed) are dropped here.
            for (r, token) in recs.into_iter().zip(tokens) {
                if out.send((r, token)).await.is_err() {
                    self.metrics.capture("failed");
                }
            }
        }
    }

    async fn capture(&self, job: Job) -> Record {
        let waited = job.queued.elapsed();
        let started = Instant::now();
        let ns = job.term.namespace.clone();
        let collector = Collector::new(self.client.clone(), ns, self.cfg.collect.clone());
        // This termination's own run: by its container ID, else by its
        // finishedAt or restart count (crashdoc_kube::runs).
        let run = Run {
            container_id: job.term.container_id.clone(),
            restart_count: Some(job.term.restart_count),
            finished_at: job.term.finished_at.map(|t| t.to_string()),
        };
        let files = collector
            .collect_run(job.pod.clone(), None, &job.term.container, run)
            .await;
        let completed = jiff::Timestamp::now();
        self.metrics.queue_depth.dec();
        let rec = records::record(&job, files, &self.cfg.context, waited, completed);
        self.metrics
            .capture_seconds
            .observe(started.elapsed().as_secs_f64());
        rec
    }

    /// Store records in batches (one transaction each), then count and notify.
    /// Returns how many were stored.
    pub(crate) async fn writer(self, mut rx: mpsc::Receiver<(Record, Token)>) -> u64 {
        let mut stored = 0u64;
        let mut buf: Vec<(Record, Token)> = Vec::with_capacity(256);
        while rx.recv_many(&mut buf, 256).await > 0 {
            let (records, tokens): (Vec<Record>, Vec<Token>) = buf.drain(..).unzip();
            let mut batch: Vec<Capture> = Vec::with_capacity(records.len());
            let mut diagnoses: Vec<Option<Diagnosis>> = Vec::with_capacity(records.len());
            let mut keys: Vec<Vec<ConfigKeys>> = Vec::with_capacity(records.len());
            for r in records {
                batch.push(r.capture);
                diagnoses.push(r.diagnosis);
                keys.push(r.config_keys);
            }
            let store = self.store.clone();
            let res = tokio::task::spawn_blocking(move || {
                let with: Vec<(&Capture, &[ConfigKeys])> = batch
                    .iter()
                    .zip(&keys)
                    .map(|(c, k)| (c, k.as_slice()))
                    .collect();
                let r = store.insert_batch_with_keys(&with);
                drop(with);
                (batch, r)
            })
            .await;
            // Stored (or failed for good): no longer on their way.
            drop(tokens);
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
            for ((c, d), ins) in batch.into_iter().zip(diagnoses).zip(inserted) {
                let id = match ins {
                    Inserted::New(id) => Some(id),
                    // Kept locally; written when the database answers.
                    Inserted::Spooled => None,
                    Inserted::Duplicate(_) => continue,
                    Inserted::Dropped => {
                        self.metrics.capture("dropped");
                        log(&format!(
                            "history: the database is unreachable and the spool is full: dropped the capture of {}/{} {} #{}",
                            c.namespace, c.pod, c.key.container, c.key.restart_count
                        ));
                        continue;
                    }
                };
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
                    let (w, n, m) = (w.clone(), notice(&c, d.as_ref(), id), self.metrics.clone());
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

pub(crate) fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
