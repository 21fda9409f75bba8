//! A database history that keeps captures locally while the database is
//! unreachable: [`SpoolingStore`].
//!
//! # Semantics
//!
//! * **Writes.** [`Store::insert_batch_with_keys`] goes to the database.
//!   When the database cannot be reached (connection refused, timed out, or
//!   lost: [`HistoryError::Unavailable`]), refuses the login
//!   ([`HistoryError::Auth`]: a rotated password waits for an operator, and
//!   so does the evidence; [`HistoryError::is_retryable`]), or was
//!   unreachable at the last attempt, the captures go into the spool, an embedded redb file
//!   ([`crate::RedbStore`]), and are reported as [`Inserted::Spooled`]. A
//!   capture whose key is already in the spool is not spooled twice (also
//!   [`Inserted::Spooled`]). Other database errors (a constraint, a
//!   capture too large) are returned as they are: they are not
//!   fixed by waiting.
//! * **Limits.** The spool holds at most [`SpoolConfig::max_captures`]
//!   captures and [`SpoolConfig::max_bytes`] stored bytes. A capture that
//!   would go past either limit is **dropped**: reported as
//!   [`Inserted::Dropped`] and counted in [`SpoolStats::dropped`]. The
//!   captures already waiting are kept (the oldest evidence of an outage is
//!   usually the most useful); the watcher still has the termination in its
//!   own logs and metrics.
//! * **Drain.** A background thread (started by [`SpoolingStore::new`],
//!   stopped when the store is dropped) tries the database every
//!   [`DRAIN_INTERVAL`]. While it answers, it moves the spooled captures in
//!   batches of [`DRAIN_BATCH`], oldest first (by `observed_at`), each batch
//!   in one database transaction, and deletes a batch from the spool only
//!   after the database committed it. A crash between the two leaves the
//!   batch in both; the next drain inserts it again, the database reports
//!   the keys as duplicates, and the spool copies are deleted: stored once.
//!   A spooled capture that the database refuses for another reason than
//!   unavailability is removed from the spool and counted as dropped.
//! * **Loss.** What can be lost: the captures dropped past the limits; the
//!   spooled captures when the spool file is lost (deleted, on an
//!   `emptyDir` of a rescheduled pod, a broken disk) before they drained.
//!   Each spooled capture is synced to disk before the insert returns.
//! * **Reads** go to the database; while it is down they fail with
//!   [`HistoryError::Unavailable`], whose hint names the spool and its
//!   depth. [`Store::seen_keys`] and [`Store::contains`] also count the
//!   spooled keys; while the database is down, `seen_keys` returns the
//!   spool's keys alone and records a warning ([`SpoolingStore::take_warnings`]),
//!   so a watcher can start during an outage (it may then report again a
//!   termination the database has, which the database dedups).
//! * **Metrics.** [`Store::spool`] returns the depth, the `observed_at` of
//!   the oldest waiting capture, the drops and drains since start, and
//!   whether the database was down at the last attempt.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::api::{Group, GroupBy, NewCause, Since, SpoolStats, Store};
use crate::location::SpoolConfig;
use crate::{
    Capture, ConfigKeys, HistoryError, Inserted, PruneStats, Query, Record, RedbStore, Retention,
    Stats, TerminationKey,
};

/// How often the drain thread tries the database.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(1500);

/// Captures moved per database transaction by the drain.
pub const DRAIN_BATCH: usize = 100;

/// A database store with a local spool for its outages. See the module docs.
pub struct SpoolingStore {
    shared: Arc<Shared>,
    drain: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    db: Arc<dyn Store>,
    spool: RedbStore,
    cfg: SpoolConfig,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    dropped: u64,
    drained: u64,
    database_down: bool,
    stop: bool,
    warnings: Vec<String>,
}

impl std::fmt::Debug for SpoolingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpoolingStore")
            .field("db", &self.shared.db)
            .field("spool", &self.shared.cfg.path)
            .finish()
    }
}

impl SpoolingStore {
    /// Wraps `db` with the spool file of `cfg` (created when missing, and
    /// drained of what a previous process left there), and starts the drain
    /// thread. The spool is scoped to `cluster` like the database handle.
    pub fn new(
        db: Arc<dyn Store>,
        cfg: &SpoolConfig,
        cluster: Option<String>,
    ) -> Result<SpoolingStore, HistoryError> {
        let spool = RedbStore::open(&cfg.path)?;
        let spool = match cluster {
            Some(c) => spool.for_cluster(c),
            None => spool,
        };
        let shared = Arc::new(Shared {
            db,
            spool,
            cfg: cfg.clone(),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        let drain = std::thread::Builder::new()
            .name("crashdoc-spool".to_string())
            .spawn(move || s.drain_loop())
            .map_err(|e| HistoryError::Internal {
                detail: format!("cannot start the spool's drain thread: {e}"),
            })?;
        Ok(SpoolingStore {
            shared,
            drain: Some(drain),
        })
    }

    /// The warnings recorded since the last call (e.g. a `seen_keys` answered
    /// from the spool alone), for the caller's log.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().warnings)
    }

    /// Asks the drain thread to try the database now.
    pub fn drain_now(&self) {
        self.shared.wake.notify_all();
    }
}

impl Drop for SpoolingStore {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.drain.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_down(&self, down: bool) {
        self.lock().database_down = down;
    }

    /// The spool's depth, for messages.
    fn describe(&self) -> String {
        let depth = self.spool.stats().map_or(0, |s| s.captures);
        format!(
            "the spool {} holds {depth} captures",
            self.cfg.path.display()
        )
    }

    /// `e` with the spool named in its hint, when it is an outage.
    fn with_spool(&self, e: HistoryError) -> HistoryError {
        match e {
            HistoryError::Unavailable {
                location, detail, ..
            } => {
                self.set_down(true);
                HistoryError::Unavailable {
                    location,
                    detail,
                    spool: Some(self.describe()),
                }
            }
            e => e,
        }
    }

    /// Puts captures into the spool within its limits.
    fn spool_captures(
        &self,
        cs: &[(&Capture, &[ConfigKeys])],
    ) -> Result<Vec<Inserted>, HistoryError> {
        let stats = self.spool.stats()?;
        let (mut n, mut bytes) = (stats.captures, stats.stored_bytes);
        let mut out = Vec::with_capacity(cs.len());
        let mut take: Vec<(&Capture, &[ConfigKeys])> = Vec::new();
        let mut seen: HashSet<&TerminationKey> = HashSet::new();
        let mut dropped = 0;
        for &(c, k) in cs {
            if seen.contains(&c.key) || self.spool.contains(&c.key)? {
                out.push(Inserted::Spooled);
                continue;
            }
            let size = crate::store::stored_size(c, k);
            if n + 1 > self.cfg.max_captures || bytes.saturating_add(size) > self.cfg.max_bytes {
                out.push(Inserted::Dropped);
                dropped += 1;
                continue;
            }
            n += 1;
            bytes += size;
            seen.insert(&c.key);
            take.push((c, k));
            out.push(Inserted::Spooled);
        }
        if !take.is_empty() {
            self.spool.insert_batch_with_keys(&take)?;
        }
        if dropped > 0 {
            self.lock().dropped += dropped;
        }
        Ok(out)
    }

    fn drain_loop(&self) {
        loop {
            {
                let st = self.lock();
                if st.stop {
                    return;
                }
                let (st, _) = self
                    .wake
                    .wait_timeout(st, DRAIN_INTERVAL)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if st.stop {
                    return;
                }
            }
            let started = Instant::now();
            // Drain until empty, down, or asked to stop.
            loop {
                if self.lock().stop {
                    return;
                }
                match self.drain_once() {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(_) => break,
                }
                if started.elapsed() > Duration::from_secs(600) {
                    break;
                }
            }
        }
    }

    /// Moves one batch; returns how many captures left the spool.
    fn drain_once(&self) -> Result<u64, HistoryError> {
        let ids = self.spool.oldest_ids(DRAIN_BATCH)?;
        if ids.is_empty() {
            if self.lock().database_down {
                // Probe, so that the writers go to the database again.
                match self.db.checkpoint() {
                    Ok(_) => self.set_down(false),
                    Err(e) if e.is_retryable() => {}
                    Err(_) => self.set_down(false),
                }
            }
            return Ok(0);
        }
        let mut records = Vec::with_capacity(ids.len());
        for &id in &ids {
            if let Some(r) = self.spool.get(id)? {
                records.push(r);
            }
        }
        let keys = self.spool.config_keys(&ids)?;
        let batch: Vec<(&Capture, &[ConfigKeys])> = records
            .iter()
            .map(|r| {
                (
                    &r.capture,
                    keys.get(&r.id).map_or(&[][..], |k| k.as_slice()),
                )
            })
            .collect();
        match self.db.insert_batch_with_keys(&batch) {
            Ok(_) => {
                self.set_down(false);
                let n = self.spool.remove(&ids)?;
                self.lock().drained += n;
                Ok(n)
            }
            Err(e) if e.is_retryable() => {
                self.set_down(true);
                Err(e)
            }
            Err(_) => {
                // One by one: keep what the database takes, drop what it
                // refuses for good.
                self.set_down(false);
                let mut moved = 0;
                for (r, one) in records.iter().zip(&batch) {
                    match self.db.insert_batch_with_keys(std::slice::from_ref(one)) {
                        Ok(_) => {
                            moved += self.spool.remove(&[r.id])?;
                        }
                        Err(e) if e.is_retryable() => {
                            self.set_down(true);
                            return Err(e);
                        }
                        Err(e) => {
                            self.spool.remove(&[r.id])?;
                            let mut st = self.lock();
                            st.dropped += 1;
                            st.warnings.push(format!(
                                "a spooled capture of {}/{} was dropped: the database refused it: {e}",
                                r.capture.namespace, r.capture.pod
                            ));
                        }
                    }
                }
                self.lock().drained += moved;
                Ok(u64::try_from(records.len()).unwrap_or(0))
            }
        }
    }
}

impl Store for SpoolingStore {
    fn location(&self) -> String {
        self.shared.db.location()
    }

    fn is_read_only(&self) -> bool {
        self.shared.db.is_read_only()
    }

    fn insert_batch_with_keys(
        &self,
        cs: &[(&Capture, &[ConfigKeys])],
    ) -> Result<Vec<Inserted>, HistoryError> {
        let sh = &self.shared;
        if !sh.lock().database_down {
            match sh.db.insert_batch_with_keys(cs) {
                Err(e) if e.is_retryable() => {
                    sh.set_down(true);
                    sh.wake.notify_all();
                }
                other => return other,
            }
        }
        sh.spool_captures(cs)
    }

    fn config_keys(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<ConfigKeys>>, HistoryError> {
        let sh = &self.shared;
        sh.db.config_keys(ids).map_err(|e| sh.with_spool(e))
    }

    fn contains(&self, k: &TerminationKey) -> Result<bool, HistoryError> {
        let sh = &self.shared;
        if sh.spool.contains(k)? {
            return Ok(true);
        }
        sh.db.contains(k).map_err(|e| sh.with_spool(e))
    }

    fn seen_keys(&self) -> Result<HashSet<TerminationKey>, HistoryError> {
        let sh = &self.shared;
        let mut keys = sh.spool.seen_keys()?;
        match sh.db.seen_keys() {
            Ok(db) => keys.extend(db),
            Err(e) if e.is_retryable() => {
                sh.set_down(true);
                let mut st = sh.lock();
                st.warnings.push(format!(
                    "the database is unreachable ({e}): the keys already stored are those of the spool alone ({} keys); terminations the database has may be reported again, and it stores them once",
                    keys.len()
                ));
            }
            Err(e) => return Err(e),
        }
        Ok(keys)
    }

    fn list(&self, q: &Query) -> Result<Vec<Record>, HistoryError> {
        let sh = &self.shared;
        sh.db.list(q).map_err(|e| sh.with_spool(e))
    }

    fn get(&self, id: u64) -> Result<Option<Record>, HistoryError> {
        let sh = &self.shared;
        sh.db.get(id).map_err(|e| sh.with_spool(e))
    }

    fn bundle(&self, id: u64) -> Result<Option<Vec<u8>>, HistoryError> {
        let sh = &self.shared;
        sh.db.bundle(id).map_err(|e| sh.with_spool(e))
    }

    fn prune(&self, r: &Retention, now: Timestamp) -> Result<PruneStats, HistoryError> {
        let sh = &self.shared;
        sh.db.prune(r, now).map_err(|e| sh.with_spool(e))
    }

    fn set_checkpoint(&self, at: Timestamp) -> Result<(), HistoryError> {
        let sh = &self.shared;
        sh.db.set_checkpoint(at).map_err(|e| sh.with_spool(e))
    }

    fn checkpoint(&self) -> Result<Option<Timestamp>, HistoryError> {
        let sh = &self.shared;
        sh.db.checkpoint().map_err(|e| sh.with_spool(e))
    }

    fn update_baselines(
        &self,
        set: &[(String, String, i32)],
        forget: &HashSet<String>,
        keep: Option<&HashSet<String>>,
    ) -> Result<(), HistoryError> {
        let sh = &self.shared;
        sh.db
            .update_baselines(set, forget, keep)
            .map_err(|e| sh.with_spool(e))
    }

    fn baselines(&self) -> Result<HashMap<(String, String), i32>, HistoryError> {
        let sh = &self.shared;
        sh.db.baselines().map_err(|e| sh.with_spool(e))
    }

    fn stats(&self) -> Result<Stats, HistoryError> {
        let sh = &self.shared;
        sh.db.stats().map_err(|e| sh.with_spool(e))
    }

    fn group(&self, q: &Query, by: GroupBy) -> Result<Vec<Group>, HistoryError> {
        let sh = &self.shared;
        sh.db.group(q, by).map_err(|e| sh.with_spool(e))
    }

    fn new_causes(&self, q: &Query, since: Since) -> Result<Vec<NewCause>, HistoryError> {
        let sh = &self.shared;
        sh.db.new_causes(q, since).map_err(|e| sh.with_spool(e))
    }

    fn spool(&self) -> Option<SpoolStats> {
        let sh = &self.shared;
        let stats = sh.spool.stats().ok();
        let st = sh.lock();
        Some(SpoolStats {
            depth: stats.as_ref().map_or(0, |s| s.captures),
            oldest: stats.and_then(|s| s.oldest),
            dropped: st.dropped,
            drained: st.drained,
            database_down: st.database_down,
        })
    }
}
