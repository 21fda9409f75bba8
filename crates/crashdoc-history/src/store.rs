//! The redb-backed store. The table layout is described in the crate docs.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::ops::Bound;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use redb::{
    Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadOnlyTable,
    ReadTransaction, ReadableDatabase, ReadableTable, Table, TableDefinition, TableHandle,
    WriteTransaction,
};

use crate::error::HistoryError;
use crate::model::{
    Capture, ConfigKeys, Inserted, PruneStats, Query, Record, Retention, Stats, TerminationKey,
};

/// Layout version of the tables and of the JSON metadata records. A file with
/// a newer version is refused with [`HistoryError::SchemaVersion`]; a
/// version-1 or -2 file is read as it is (all its captures are of cluster
/// `""`), and migrated to this version in one transaction when a writer
/// opens it (1 → 2: the `config_keys` table; 2 → 3: the cluster in the keys,
/// index rows and baselines, per-cluster counters and checkpoints).
pub const SCHEMA_VERSION: u64 = 3;

/// The oldest schema version read (and migrated by a writer).
const OLDEST_READ: u64 = 1;

/// Largest bundle or diagnosis stored (4 GiB).
pub const MAX_BLOB_BYTES: u64 = 1 << 32;

/// Page cache of one open store. redb's default (1 GiB) is meant for a
/// database server; a watcher mostly appends, and `crashdoc history` reads
/// the small index rows and records.
const CACHE_BYTES: usize = 64 << 20;

/// Bundles and diagnoses are stored in pieces of at most this many bytes.
/// redb gives a value larger than a 4 KiB page a page of the next power of
/// two, so a 70 KiB bundle stored whole takes 128 KiB, and a 4.1 KiB
/// diagnosis 8 KiB; in pieces that fit one 4 KiB page, pages hold ~90% data.
const CHUNK: usize = 4000;

/// `&str` → `u64`: `schema_version`, `next_id`, `captures`, `bundle_bytes`, `stored_bytes`.
const META: TableDefinition<&str, u64> = TableDefinition::new("crashdoc_history.meta");
/// id → JSON of the [`Capture`] without its bundle and diagnosis.
const CAPTURES: TableDefinition<u64, &[u8]> = TableDefinition::new("crashdoc_history.captures");
/// (id, part, seq) → piece of the bundle (part 0) or of the diagnosis JSON (part 1).
const BLOBS: TableDefinition<(u64, u8, u32), &[u8]> =
    TableDefinition::new("crashdoc_history.blobs");
/// (cluster, pod_uid, container, restart_count) → id (schema 3).
const KEYS: TableDefinition<(&str, &str, &str, i32), u64> =
    TableDefinition::new("crashdoc_history.keys_v3");
/// Schema 1-2: (pod_uid, container, restart_count) → id.
const KEYS_V2: TableDefinition<(&str, &str, i32), u64> =
    TableDefinition::new("crashdoc_history.keys");
/// (pod uid, container) → the highest restart count N whose termination is
/// accounted for (captured, or seen before the watcher started), so that a
/// restarted watcher counts the terminations it missed. Added in place
/// (older files get it on the first write).
const BASELINES: TableDefinition<(&str, &str, &str), i32> =
    TableDefinition::new("crashdoc_history.baselines_v3");
/// Schema 1-2: (pod uid, container) → baseline, all of cluster "".
const BASELINES_V2: TableDefinition<(&str, &str), i32> =
    TableDefinition::new("crashdoc_history.baselines");
/// cluster → (captures, bundle bytes, stored bytes) of its captures (schema 3).
const CLUSTERS: TableDefinition<&str, (u64, u64, u64)> =
    TableDefinition::new("crashdoc_history.clusters");
/// cluster → Unix milliseconds up to which its watcher was watching (schema 3).
const CHECKPOINTS: TableDefinition<&str, u64> =
    TableDefinition::new("crashdoc_history.checkpoints");
/// id → JSON of the [`ConfigKeys`] of the capture (schema 2).
const CONFIG_KEYS: TableDefinition<u64, &[u8]> =
    TableDefinition::new("crashdoc_history.config_keys");
/// (scope, scope value, observed_at in ns, id) → row. Every capture is in
/// scope ALL (value "") and in the scopes of its cluster, namespace, pod
/// name, pod UID and owner name (schema 3).
const INDEX: TableDefinition<(u8, &str, i128, u64), Row> =
    TableDefinition::new("crashdoc_history.index_v3");
/// Schema 1-2: the same without the cluster (in the rows and scopes).
const INDEX_V2: TableDefinition<(u8, &str, i128, u64), RowV2> =
    TableDefinition::new("crashdoc_history.index");

const PART_BUNDLE: u8 = 0;
const PART_DIAGNOSIS: u8 = 1;

const SCOPE_ALL: u8 = 0;
const SCOPE_NAMESPACE: u8 = 1;
const SCOPE_POD: u8 = 2;
const SCOPE_POD_UID: u8 = 3;
const SCOPE_OWNER: u8 = 4;
const SCOPE_CLUSTER: u8 = 5;

/// (cluster, namespace, pod, pod_uid, container, restart_count, owner_kind
/// or "", owner or "", bundle bytes, stored bytes of the whole capture).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    i32,
    &'static str,
    &'static str,
    u64,
    u64,
);
type RowRef<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    i32,
    &'a str,
    &'a str,
    u64,
    u64,
);
/// The schema-2 row: [`Row`] without the cluster.
type RowV2 = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    i32,
    &'static str,
    &'static str,
    u64,
    u64,
);

const K_SCHEMA: &str = "schema_version";
const K_NEXT_ID: &str = "next_id";
const K_CAPTURES: &str = "captures";
const K_BUNDLE_BYTES: &str = "bundle_bytes";
const K_STORED_BYTES: &str = "stored_bytes";
/// Unix milliseconds up to which a watcher was watching (its checkpoint).
const K_WATCHED_UNTIL: &str = "watched_until_ms";

/// The capture history in one file. `Send + Sync`: share it through an `Arc`;
/// reads run concurrently, writes are serialized by redb.
pub struct RedbStore {
    db: std::sync::Arc<Db>,
    path: PathBuf,
    /// The cluster of the writer-side state ([`RedbStore::for_cluster`]).
    cluster: Option<String>,
    /// A schema-1 or -2 file opened read-only: read through the old tables.
    legacy: bool,
}

enum Db {
    Write(Database),
    Read(ReadOnlyDatabase),
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<RedbStore>();
};

fn builder() -> Builder {
    let mut b = Builder::new();
    // One writing process (`crashdoc watch`), any number of read-only ones
    // (`crashdoc history`) that see its commits as they land.
    b.set_concurrency_mode(ConcurrencyMode::SingleWriter);
    b.set_cache_size(CACHE_BYTES);
    b
}

/// Runs `f`, turning a panic into [`HistoryError::Corrupted`]. redb trusts
/// committed pages on a plain open (it verifies checksums only when it
/// repairs), and a damaged page can make it panic rather than return an
/// error; a watcher or `crashdoc history` should report that, not crash.
fn guard<T>(path: &Path, f: impl FnOnce() -> Result<T, HistoryError>) -> Result<T, HistoryError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(HistoryError::Corrupted {
            path: path.to_path_buf(),
            detail: format!("the database engine stopped on damaged data: {msg}"),
        })
    })
}

fn ns(t: Timestamp) -> i128 {
    t.as_nanosecond()
}

fn len64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl RedbStore {
    /// Opens the history for writing, creating the file (and its folders)
    /// when it does not exist. Only one process can have it open this way:
    /// a second gets [`HistoryError::Locked`].
    pub fn open(path: &Path) -> Result<RedbStore, HistoryError> {
        guard(path, || {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(|source| HistoryError::Io {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
            let db = builder()
                .create(path)
                .map_err(|e| HistoryError::from_redb(path, e))?;
            let store = RedbStore {
                db: std::sync::Arc::new(Db::Write(db)),
                path: path.to_path_buf(),
                cluster: None,
                legacy: false,
            };
            store.init()?;
            Ok(store)
        })
    }

    /// Opens an existing history for reading. It works while a `crashdoc
    /// watch` holds the file for writing (both sides use redb's
    /// `SingleWriter` mode, so each read sees the watcher's latest commit).
    ///
    /// A file left unclean by a watcher that was killed cannot be read by a
    /// read-only handle: it is repaired first by a short writable open (when
    /// no watcher has it), then opened read-only.
    pub fn open_read_only(path: &Path) -> Result<RedbStore, HistoryError> {
        guard(path, || {
            match fs::metadata(path) {
                Ok(m) if m.is_dir() => {
                    return Err(HistoryError::NotCrashdoc {
                        path: path.to_path_buf(),
                        detail: "it is a folder".to_string(),
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(HistoryError::NotFound {
                        path: path.to_path_buf(),
                    });
                }
                Err(source) => {
                    return Err(HistoryError::Io {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
            let db = match builder().open_read_only(path) {
                Ok(db) => db,
                Err(DatabaseError::RepairAborted) => {
                    match builder().open(path) {
                        // Opening for writing repairs; closing records a clean state.
                        Ok(db) => db.close().map_err(|e| HistoryError::from_redb(path, e))?,
                        // A watcher got there first: it repairs the file itself.
                        Err(DatabaseError::DatabaseAlreadyOpen) => {}
                        Err(e) => return Err(HistoryError::from_redb(path, e)),
                    }
                    builder()
                        .open_read_only(path)
                        .map_err(|e| HistoryError::from_redb(path, e))?
                }
                Err(e) => return Err(HistoryError::from_redb(path, e)),
            };
            let mut store = RedbStore {
                db: std::sync::Arc::new(Db::Read(db)),
                path: path.to_path_buf(),
                cluster: None,
                legacy: false,
            };
            let txn = store.read()?;
            let meta = txn.open_table(META).map_err(|e| store.err(e))?;
            let version = meta
                .get(K_SCHEMA)
                .map_err(|e| store.err(e))?
                .map(|v| v.value());
            store.check_version(version)?;
            store.legacy = version.is_some_and(|v| v < SCHEMA_VERSION);
            drop(meta);
            drop(txn);
            Ok(store)
        })
    }

    /// This handle scoped to `cluster` (`crashdoc watch --cluster`): its
    /// [`RedbStore::seen_keys`], [`RedbStore::stats`], [`RedbStore::prune`],
    /// checkpoint and baselines are that cluster's. An unscoped handle's
    /// keys, stats and prune cover every cluster, and its checkpoint and
    /// baselines are those of cluster `""`.
    pub fn for_cluster(mut self, cluster: impl Into<String>) -> RedbStore {
        self.cluster = Some(cluster.into());
        self
    }

    /// Another handle on the same open file, scoped to `cluster` (`None`:
    /// unscoped): one process writing for several clusters.
    pub fn with_cluster(&self, cluster: Option<String>) -> RedbStore {
        RedbStore {
            db: self.db.clone(),
            path: self.path.clone(),
            cluster,
            legacy: self.legacy,
        }
    }

    /// The cluster this handle is scoped to.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// The cluster of the checkpoint and baselines.
    fn state_cluster(&self) -> &str {
        self.cluster.as_deref().unwrap_or("")
    }

    fn read_only_err(&self) -> HistoryError {
        HistoryError::ReadOnly {
            location: self.path.display().to_string(),
        }
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this store was opened with [`RedbStore::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        matches!(*self.db, Db::Read(_))
    }

    /// Stores a capture, unless its key is already stored: then nothing is
    /// written (the first capture of a termination is kept) and the stored id
    /// is returned. One transaction, durable when this returns.
    pub fn insert(&self, c: &Capture) -> Result<Inserted, HistoryError> {
        guard(&self.path, || self.write(|w| w.insert(c, &[])))
    }

    /// [`RedbStore::insert`] for many captures in one transaction (one disk sync):
    /// the way to record a restart storm. A key repeated in `cs` is stored
    /// once; its later occurrences are reported as duplicates of it.
    pub fn insert_batch(&self, cs: &[Capture]) -> Result<Vec<Inserted>, HistoryError> {
        guard(&self.path, || {
            self.write(|w| cs.iter().map(|c| w.insert(c, &[])).collect())
        })
    }

    /// [`RedbStore::insert_batch`], each capture with the key names of the
    /// ConfigMaps and Secrets its pod referenced (stored with it, counted
    /// in its stored bytes, pruned with it).
    pub fn insert_batch_with_keys(
        &self,
        cs: &[(&Capture, &[ConfigKeys])],
    ) -> Result<Vec<Inserted>, HistoryError> {
        guard(&self.path, || {
            self.write(|w| cs.iter().map(|(c, k)| w.insert(c, k)).collect())
        })
    }

    /// The key names stored with each of these captures (none for a
    /// capture stored without them, or by an older crashdoc).
    pub fn config_keys(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<ConfigKeys>>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let table = match txn.open_table(CONFIG_KEYS) {
                Ok(t) => t,
                // A schema-1 file opened read-only has no such table yet.
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
                Err(e) => return Err(self.err(e)),
            };
            let mut out = HashMap::new();
            for &id in ids {
                if let Some(v) = table.get(id).map_err(|e| self.err(e))? {
                    let keys: Vec<ConfigKeys> =
                        serde_json::from_slice(v.value()).map_err(|source| {
                            HistoryError::Encoding {
                                id: Some(id),
                                source,
                            }
                        })?;
                    out.insert(id, keys);
                }
            }
            Ok(out)
        })
    }

    /// Whether a capture with this key is stored.
    pub fn contains(&self, k: &TerminationKey) -> Result<bool, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            if self.legacy {
                if !k.cluster.is_empty() {
                    return Ok(false);
                }
                let keys = txn.open_table(KEYS_V2).map_err(|e| self.err(e))?;
                let found = keys
                    .get((k.pod_uid.as_str(), k.container.as_str(), k.restart_count))
                    .map_err(|e| self.err(e))?;
                return Ok(found.is_some());
            }
            let keys = txn.open_table(KEYS).map_err(|e| self.err(e))?;
            let found = keys
                .get((
                    k.cluster.as_str(),
                    k.pod_uid.as_str(),
                    k.container.as_str(),
                    k.restart_count,
                ))
                .map_err(|e| self.err(e))?;
            Ok(found.is_some())
        })
    }

    /// Every stored key of this handle's cluster (of all clusters when it
    /// has none), to warm a watcher's dedup set when it restarts.
    pub fn seen_keys(&self) -> Result<HashSet<TerminationKey>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let mut out = HashSet::new();
            if self.legacy {
                if self.cluster.as_deref().is_some_and(|c| !c.is_empty()) {
                    return Ok(out);
                }
                let keys = txn.open_table(KEYS_V2).map_err(|e| self.err(e))?;
                for entry in keys.iter().map_err(|e| self.err(e))? {
                    let (k, _) = entry.map_err(|e| self.err(e))?;
                    let (uid, container, restart_count) = k.value();
                    out.insert(TerminationKey::new(uid, container, restart_count));
                }
                return Ok(out);
            }
            let keys = txn.open_table(KEYS).map_err(|e| self.err(e))?;
            let range = match &self.cluster {
                Some(c) => keys.range::<(&str, &str, &str, i32)>((c.as_str(), "", "", i32::MIN)..),
                None => keys.range::<(&str, &str, &str, i32)>(..),
            }
            .map_err(|e| self.err(e))?;
            for entry in range {
                let (k, _) = entry.map_err(|e| self.err(e))?;
                let (cluster, uid, container, restart_count) = k.value();
                if self.cluster.as_deref().is_some_and(|c| c != cluster) {
                    break;
                }
                out.insert(TerminationKey::new(uid, container, restart_count).in_cluster(cluster));
            }
            Ok(out)
        })
    }

    /// The captures that match every filter of `q`, newest first (by
    /// `observed_at`, then id), without their bundles, and without
    /// `diagnosis_json` unless [`Query::with_diagnosis`] is set.
    ///
    /// Cost: a scan of the index rows of the most selective scope the query
    /// names (pod UID, pod, owner, namespace, else all) within
    /// `q.since..q.until`, stopping once `q.limit` rows match; then one small
    /// metadata record decoded per result.
    pub fn list(&self, q: &Query) -> Result<Vec<Record>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let (scope, value) = if let Some(uid) = &q.pod_uid {
                (SCOPE_POD_UID, uid.as_str())
            } else if let Some(pod) = &q.pod {
                (SCOPE_POD, pod.as_str())
            } else if let Some(owner) = q.owner.as_deref().filter(|o| !o.is_empty()) {
                // Captures without an owner are not in an owner scope; an
                // empty owner filter selects them through the rows.
                (SCOPE_OWNER, owner)
            } else if let Some(namespace) = &q.namespace {
                (SCOPE_NAMESPACE, namespace.as_str())
            } else if let Some(cluster) = q.cluster.as_deref().filter(|_| !self.legacy) {
                (SCOPE_CLUSTER, cluster)
            } else {
                (SCOPE_ALL, "")
            };
            let since = q.since.map_or(i128::MIN, ns);
            let lower = Bound::Included((scope, value, since, 0u64));
            let upper = match q.until {
                // Ids start at 1, so this excludes every capture observed at `until`.
                Some(t) => Bound::Excluded((scope, value, ns(t), 0u64)),
                None => Bound::Included((scope, value, i128::MAX, u64::MAX)),
            };
            let limit = q.limit.unwrap_or(usize::MAX);
            let mut hits: Vec<(u64, u64)> = Vec::new();
            if limit > 0 && since < q.until.map_or(i128::MAX, ns) && !self.legacy {
                let index = txn.open_table(INDEX).map_err(|e| self.err(e))?;
                for entry in index
                    .range::<(u8, &str, i128, u64)>((lower, upper))
                    .map_err(|e| self.err(e))?
                    .rev()
                {
                    let (k, row) = entry.map_err(|e| self.err(e))?;
                    let row = row.value();
                    if matches(q, &row) {
                        hits.push((k.value().3, row.8));
                        if hits.len() >= limit {
                            break;
                        }
                    }
                }
            } else if limit > 0 && since < q.until.map_or(i128::MAX, ns) {
                // A schema-1/2 file read as it is: every capture is of cluster "".
                let index = txn.open_table(INDEX_V2).map_err(|e| self.err(e))?;
                for entry in index
                    .range::<(u8, &str, i128, u64)>((lower, upper))
                    .map_err(|e| self.err(e))?
                    .rev()
                {
                    let (k, row) = entry.map_err(|e| self.err(e))?;
                    let (a, b, c, d, e, f, g, h, i) = row.value();
                    let row: RowRef<'_> = ("", a, b, c, d, e, f, g, h, i);
                    if matches(q, &row) {
                        hits.push((k.value().3, row.8));
                        if hits.len() >= limit {
                            break;
                        }
                    }
                }
            }
            let captures = txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            let blobs = if q.with_diagnosis {
                Some(txn.open_table(BLOBS).map_err(|e| self.err(e))?)
            } else {
                None
            };
            let mut out = Vec::with_capacity(hits.len());
            for (id, bundle_len) in hits {
                let Some(json) = captures.get(id).map_err(|e| self.err(e))? else {
                    return Err(
                        self.corrupted(format!("capture {id} is indexed but has no record"))
                    );
                };
                let mut capture = decode(id, json.value())?;
                if let Some(blobs) = &blobs {
                    capture.diagnosis_json = self.diagnosis(blobs, id)?;
                }
                out.push(Record {
                    id,
                    capture,
                    bundle_len,
                });
            }
            Ok(out)
        })
    }

    /// One capture, with its diagnosis and bundle.
    pub fn get(&self, id: u64) -> Result<Option<Record>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let captures = txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            let Some(json) = captures.get(id).map_err(|e| self.err(e))? else {
                return Ok(None);
            };
            let mut capture = decode(id, json.value())?;
            let blobs = txn.open_table(BLOBS).map_err(|e| self.err(e))?;
            capture.diagnosis_json = self.diagnosis(&blobs, id)?;
            capture.bundle = read_blob(&blobs, id, PART_BUNDLE).map_err(|e| self.err(e))?;
            let bundle_len = capture.bundle.as_ref().map_or(0, |b| len64(b.len()));
            Ok(Some(Record {
                id,
                capture,
                bundle_len,
            }))
        })
    }

    /// The bundle of one capture (`.tar.gz` bytes), or `None` when there is
    /// no such capture or it has no bundle.
    pub fn bundle(&self, id: u64) -> Result<Option<Vec<u8>>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let blobs = txn.open_table(BLOBS).map_err(|e| self.err(e))?;
            read_blob(&blobs, id, PART_BUNDLE).map_err(|e| self.err(e))
        })
    }

    /// Removes the oldest captures (by `observed_at`, then id) of this
    /// handle's cluster (of all clusters when it has none) until every limit
    /// of `r` holds for them, in one transaction that keeps all tables
    /// consistent. `now` anchors [`Retention::max_age`].
    pub fn prune(&self, r: &Retention, now: Timestamp) -> Result<PruneStats, HistoryError> {
        let cutoff = r.max_age.map(|age| ns(now) - age.as_nanos().max(0));
        let cluster = self.cluster.clone();
        guard(&self.path, || {
            self.write(|w| w.prune(r, cutoff, cluster.as_deref()))
        })
    }

    /// Record that this handle's cluster's watcher was watching, with every
    /// termination up to `at` reported. The next watcher of that cluster
    /// reports the terminations of containers it has no record of that
    /// finished after it, so a watcher that was killed loses nothing that
    /// happened while it was down.
    pub fn set_checkpoint(&self, at: Timestamp) -> Result<(), HistoryError> {
        let Db::Write(db) = &*self.db else {
            return Err(self.read_only_err());
        };
        guard(&self.path, || {
            let txn = db.begin_write().map_err(|e| self.err(e))?;
            {
                let mut t = txn.open_table(CHECKPOINTS).map_err(|e| self.err(e))?;
                let ms = u64::try_from(at.as_millisecond()).unwrap_or(0);
                t.insert(self.state_cluster(), ms)
                    .map_err(|e| self.err(e))?;
            }
            txn.commit().map_err(|e| self.err(e))
        })
    }

    /// Drop the baselines of the `forget` pods and, when `keep` is given, of
    /// every pod not in it; then raise containers' baselines (never lowers
    /// one). Only this handle's cluster's baselines. One transaction.
    pub fn update_baselines(
        &self,
        set: &[(String, String, i32)],
        forget: &HashSet<String>,
        keep: Option<&HashSet<String>>,
    ) -> Result<(), HistoryError> {
        let Db::Write(db) = &*self.db else {
            return Err(self.read_only_err());
        };
        let me = self.state_cluster();
        guard(&self.path, || {
            let txn = db.begin_write().map_err(|e| self.err(e))?;
            {
                let mut t = txn.open_table(BASELINES).map_err(|e| self.err(e))?;
                if !forget.is_empty() || keep.is_some() {
                    t.retain(|(cluster, uid, _), _| {
                        cluster != me
                            || (!forget.contains(uid) && keep.is_none_or(|k| k.contains(uid)))
                    })
                    .map_err(|e| self.err(e))?;
                }
                for (uid, container, n) in set {
                    let k = (me, uid.as_str(), container.as_str());
                    let cur = t.get(k).map_err(|e| self.err(e))?.map(|v| v.value());
                    if cur.is_none_or(|c| c < *n) {
                        t.insert(k, *n).map_err(|e| self.err(e))?;
                    }
                }
            }
            txn.commit().map_err(|e| self.err(e))
        })
    }

    /// Every container's baseline of this handle's cluster (see
    /// [`RedbStore::update_baselines`]).
    pub fn baselines(&self) -> Result<HashMap<(String, String), i32>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let mut out = HashMap::new();
            let me = self.state_cluster();
            if self.legacy {
                let t = match txn.open_table(BASELINES_V2) {
                    Ok(t) => t,
                    Err(redb::TableError::TableDoesNotExist(_)) => return Ok(out),
                    Err(e) => return Err(self.err(e)),
                };
                if !me.is_empty() {
                    return Ok(out);
                }
                for entry in t.iter().map_err(|e| self.err(e))? {
                    let (k, v) = entry.map_err(|e| self.err(e))?;
                    let (uid, container) = k.value();
                    out.insert((uid.to_string(), container.to_string()), v.value());
                }
                return Ok(out);
            }
            let t = txn.open_table(BASELINES).map_err(|e| self.err(e))?;
            for entry in t
                .range::<(&str, &str, &str)>((me, "", "")..)
                .map_err(|e| self.err(e))?
            {
                let (k, v) = entry.map_err(|e| self.err(e))?;
                let (cluster, uid, container) = k.value();
                if cluster != me {
                    break;
                }
                out.insert((uid.to_string(), container.to_string()), v.value());
            }
            Ok(out)
        })
    }

    /// The last [`RedbStore::set_checkpoint`] of this handle's cluster, if
    /// its watcher ever wrote one.
    pub fn checkpoint(&self) -> Result<Option<Timestamp>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let ms = if self.legacy {
                let meta = txn.open_table(META).map_err(|e| self.err(e))?;
                let v = meta
                    .get(K_WATCHED_UNTIL)
                    .map_err(|e| self.err(e))?
                    .map(|v| v.value());
                v.filter(|_| self.state_cluster().is_empty())
            } else {
                let t = txn.open_table(CHECKPOINTS).map_err(|e| self.err(e))?;
                t.get(self.state_cluster())
                    .map_err(|e| self.err(e))?
                    .map(|v| v.value())
            };
            Ok(ms.and_then(|ms| Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()))
        })
    }

    /// Counts, sizes and time span of this handle's cluster's captures (of
    /// all when it has none).
    pub fn stats(&self) -> Result<Stats, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let counter = |k: &str| -> Result<u64, HistoryError> {
                Ok(meta
                    .get(k)
                    .map_err(|e| self.err(e))?
                    .map_or(0, |v| v.value()))
            };
            let (captures, bundle_bytes, stored_bytes) = match &self.cluster {
                Some(c) if !self.legacy => txn
                    .open_table(CLUSTERS)
                    .map_err(|e| self.err(e))?
                    .get(c.as_str())
                    .map_err(|e| self.err(e))?
                    .map_or((0, 0, 0), |v| v.value()),
                Some(c) if !c.is_empty() => (0, 0, 0),
                _ => (
                    counter(K_CAPTURES)?,
                    counter(K_BUNDLE_BYTES)?,
                    counter(K_STORED_BYTES)?,
                ),
            };
            let (scope, value) = match &self.cluster {
                Some(c) if !self.legacy => (SCOPE_CLUSTER, c.as_str()),
                _ => (SCOPE_ALL, ""),
            };
            let mut ends = [None, None];
            if captures > 0 {
                let range = (scope, value, i128::MIN, 0)..=(scope, value, i128::MAX, u64::MAX);
                let first_last = |back: bool| -> Result<Option<i128>, HistoryError> {
                    macro_rules! end {
                        ($table:expr) => {{
                            let t = txn.open_table($table).map_err(|e| self.err(e))?;
                            let mut it = t
                                .range::<(u8, &str, i128, u64)>(range.clone())
                                .map_err(|e| self.err(e))?;
                            let entry = if back { it.next_back() } else { it.next() };
                            match entry {
                                Some(entry) => Some(entry.map_err(|e| self.err(e))?.0.value().2),
                                None => None,
                            }
                        }};
                    }
                    Ok(if self.legacy {
                        end!(INDEX_V2)
                    } else {
                        end!(INDEX)
                    })
                };
                ends = [first_last(false)?, first_last(true)?];
            }
            let [oldest, newest] = ends.map(|t| t.and_then(|t| Timestamp::from_nanosecond(t).ok()));
            Ok(Stats {
                captures,
                bundle_bytes,
                stored_bytes,
                file_bytes: fs::metadata(&self.path).ok().map(|m| m.len()),
                oldest,
                newest,
            })
        })
    }

    /// The ids of the `n` oldest captures (by `observed_at`, then id): the
    /// order in which a spool drains.
    #[doc(hidden)]
    pub fn oldest_ids(&self, n: usize) -> Result<Vec<u64>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let index = txn.open_table(INDEX).map_err(|e| self.err(e))?;
            let mut out = Vec::new();
            for entry in index
                .range::<(u8, &str, i128, u64)>(
                    (SCOPE_ALL, "", i128::MIN, 0)..=(SCOPE_ALL, "", i128::MAX, u64::MAX),
                )
                .map_err(|e| self.err(e))?
                .take(n)
            {
                out.push(entry.map_err(|e| self.err(e))?.0.value().3);
            }
            Ok(out)
        })
    }

    /// Removes the captures with these ids (the spool's drain, once the
    /// database has committed them); returns how many were there.
    #[doc(hidden)]
    pub fn remove(&self, ids: &[u64]) -> Result<u64, HistoryError> {
        guard(&self.path, || self.write(|w| w.remove_ids(ids)))
    }

    /// Checks that every table agrees with the others (each indexed capture
    /// has its record, key, scope entries and pieces; the counters match).
    /// Reads every record, and every piece's length. For tests and
    /// `fsck`-like tooling.
    #[doc(hidden)]
    pub fn check_consistency(&self) -> Result<(), HistoryError> {
        guard(&self.path, || self.check_consistency_inner())
    }

    fn check_consistency_inner(&self) -> Result<(), HistoryError> {
        use redb::ReadableTableMetadata;
        if self.legacy {
            return Err(HistoryError::Internal {
                detail: "check_consistency reads schema-3 files only (open this one for writing to migrate it)".to_string(),
            });
        }
        let txn = self.read()?;
        let e = |x: redb::StorageError| self.err(x);
        let index = txn.open_table(INDEX).map_err(|x| self.err(x))?;
        let clusters = txn.open_table(CLUSTERS).map_err(|x| self.err(x))?;
        let mut per_cluster: HashMap<String, (u64, u64, u64)> = HashMap::new();
        let captures = txn.open_table(CAPTURES).map_err(|x| self.err(x))?;
        let blobs = txn.open_table(BLOBS).map_err(|x| self.err(x))?;
        let keys = txn.open_table(KEYS).map_err(|x| self.err(x))?;
        let meta = txn.open_table(META).map_err(|x| self.err(x))?;
        let config_keys = match txn.open_table(CONFIG_KEYS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(x) => return Err(self.err(x)),
        };
        let mut key_sets = 0u64;

        let (mut n, mut entries, mut pieces) = (0u64, 0u64, 0u64);
        let (mut bundle_bytes, mut stored_bytes, mut max_id) = (0u64, 0u64, 0u64);
        let all = index
            .range::<(u8, &str, i128, u64)>(
                (SCOPE_ALL, "", i128::MIN, 0)..=(SCOPE_ALL, "", i128::MAX, u64::MAX),
            )
            .map_err(e)?;
        for entry in all {
            let (k, row) = entry.map_err(e)?;
            let (_, _, t, id) = k.value();
            let row = row.value();
            n += 1;
            max_id = max_id.max(id);
            let Some(json) = captures.get(id).map_err(e)? else {
                return Err(self.corrupted(format!("capture {id} has no record")));
            };
            let c = decode(id, json.value())?;
            let mut lens = [0u64; 2];
            for (part, len) in lens.iter_mut().enumerate() {
                let part = u8::try_from(part).unwrap_or(u8::MAX);
                for piece in blobs
                    .range::<(u64, u8, u32)>((id, part, 0)..=(id, part, u32::MAX))
                    .map_err(e)?
                {
                    let (_, v) = piece.map_err(e)?;
                    *len += len64(v.value().len());
                    pieces += 1;
                }
            }
            let mut keys_len = 0;
            if let Some(t) = &config_keys
                && let Some(k) = t.get(id).map_err(e)?
            {
                keys_len = len64(k.value().len());
                key_sets += 1;
            }
            let stored = len64(json.value().len()) + lens[0] + lens[1] + keys_len;
            if ns(c.observed_at) != t || row_of(&c, lens[0], stored) != row {
                return Err(
                    self.corrupted(format!("capture {id}: index row disagrees with its record"))
                );
            }
            for (scope, value) in scopes(&row) {
                let other = index.get((scope, value, t, id)).map_err(e)?;
                if other.map(|o| o.value() == row) != Some(true) {
                    return Err(self.corrupted(format!("capture {id}: scope {scope} entry")));
                }
                entries += 1;
            }
            let key = keys
                .get((row.0, row.3, row.4, row.5))
                .map_err(e)?
                .map(|v| v.value());
            let t = per_cluster.entry(row.0.to_string()).or_default();
            t.0 += 1;
            t.1 += row.8;
            t.2 += row.9;
            if key != Some(id) {
                return Err(self.corrupted(format!("capture {id}: key maps to {key:?}")));
            }
            bundle_bytes += row.8;
            stored_bytes += row.9;
        }
        for entry in clusters.iter().map_err(e)? {
            let (k, v) = entry.map_err(e)?;
            let found = v.value();
            let expected = per_cluster.remove(k.value()).unwrap_or_default();
            if found != expected {
                return Err(self.corrupted(format!(
                    "cluster {:?}: counters {found:?}, rows {expected:?}",
                    k.value()
                )));
            }
        }
        if let Some((c, _)) = per_cluster.into_iter().next() {
            return Err(self.corrupted(format!("cluster {c:?} has no counters")));
        }
        for (name, expected, len) in [
            ("records", n, captures.len().map_err(e)?),
            ("keys", n, keys.len().map_err(e)?),
            ("index entries", entries, index.len().map_err(e)?),
            ("pieces", pieces, blobs.len().map_err(e)?),
            (
                "key sets",
                key_sets,
                match &config_keys {
                    Some(t) => t.len().map_err(e)?,
                    None => 0,
                },
            ),
        ] {
            if len != expected {
                return Err(self.corrupted(format!("{len} {name}, expected {expected}")));
            }
        }
        let get = |k: &str| -> Result<u64, HistoryError> {
            Ok(meta.get(k).map_err(e)?.map_or(0, |v| v.value()))
        };
        if get(K_CAPTURES)? != n
            || get(K_BUNDLE_BYTES)? != bundle_bytes
            || get(K_STORED_BYTES)? != stored_bytes
        {
            return Err(self.corrupted("counters disagree with the rows".to_string()));
        }
        if get(K_NEXT_ID)? <= max_id {
            return Err(self.corrupted("next id is not above every id".to_string()));
        }
        Ok(())
    }

    // ------------------------------------------------------------ internals

    fn err(&self, e: impl Into<redb::Error>) -> HistoryError {
        HistoryError::from_redb(&self.path, e)
    }

    fn corrupted(&self, detail: String) -> HistoryError {
        HistoryError::Corrupted {
            path: self.path.clone(),
            detail,
        }
    }

    fn read(&self) -> Result<ReadTransaction, HistoryError> {
        match &*self.db {
            Db::Write(db) => db.begin_read(),
            Db::Read(db) => db.begin_read(),
        }
        .map_err(|e| self.err(e))
    }

    fn diagnosis(
        &self,
        blobs: &ReadOnlyTable<(u64, u8, u32), &[u8]>,
        id: u64,
    ) -> Result<Option<String>, HistoryError> {
        match read_blob(blobs, id, PART_DIAGNOSIS).map_err(|e| self.err(e))? {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| self.corrupted(format!("capture {id}: diagnosis is not UTF-8"))),
        }
    }

    fn check_version(&self, found: Option<u64>) -> Result<(), HistoryError> {
        match found {
            Some(v) if (OLDEST_READ..=SCHEMA_VERSION).contains(&v) => Ok(()),
            Some(found) => Err(HistoryError::SchemaVersion {
                location: self.path.display().to_string(),
                found,
                supported: SCHEMA_VERSION,
            }),
            None => Err(HistoryError::NotCrashdoc {
                path: self.path.clone(),
                detail: "it has no schema version".to_string(),
            }),
        }
    }

    /// Checks the schema version of an existing history, or lays out the
    /// tables of a new one.
    fn init(&self) -> Result<(), HistoryError> {
        let Db::Write(db) = &*self.db else {
            return Err(self.read_only_err());
        };
        let txn = db.begin_write().map_err(|e| self.err(e))?;
        let has_meta = txn
            .list_tables()
            .map_err(|e| self.err(e))?
            .any(|t| t.name() == META.name());
        if has_meta {
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let version = meta
                .get(K_SCHEMA)
                .map_err(|e| self.err(e))?
                .map(|v| v.value());
            drop(meta);
            self.check_version(version)?;
            if version == Some(SCHEMA_VERSION) {
                // Every table was created with the metadata; nothing to write.
                txn.abort().map_err(|e| self.err(e))?;
                return Ok(());
            }
            // Schema 1 -> 2: the config_keys table; the records are unchanged.
            txn.open_table(CONFIG_KEYS).map_err(|e| self.err(e))?;
            // Schema 2 -> 3: keys, index rows and baselines with the cluster
            // (every old capture is of cluster ""), per-cluster counters, the
            // checkpoint of cluster "". All in this one transaction.
            self.migrate_to_3(&txn)?;
            txn.open_table(META)
                .map_err(|e| self.err(e))?
                .insert(K_SCHEMA, SCHEMA_VERSION)
                .map_err(|e| self.err(e))?;
            return txn.commit().map_err(|e| self.err(e));
        }
        if let Some(other) = txn.list_tables().map_err(|e| self.err(e))?.next() {
            return Err(HistoryError::NotCrashdoc {
                path: self.path.clone(),
                detail: format!("it is a redb database with other tables ({})", other.name()),
            });
        }
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            for (k, v) in [
                (K_SCHEMA, SCHEMA_VERSION),
                (K_NEXT_ID, 1),
                (K_CAPTURES, 0),
                (K_BUNDLE_BYTES, 0),
                (K_STORED_BYTES, 0),
            ] {
                meta.insert(k, v).map_err(|e| self.err(e))?;
            }
            txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            txn.open_table(BLOBS).map_err(|e| self.err(e))?;
            txn.open_table(KEYS).map_err(|e| self.err(e))?;
            txn.open_table(INDEX).map_err(|e| self.err(e))?;
            txn.open_table(CONFIG_KEYS).map_err(|e| self.err(e))?;
            txn.open_table(BASELINES).map_err(|e| self.err(e))?;
            txn.open_table(CLUSTERS).map_err(|e| self.err(e))?;
            txn.open_table(CHECKPOINTS).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// The schema 2 → 3 conversion within `txn` (see [`RedbStore::init`]).
    fn migrate_to_3(&self, txn: &WriteTransaction) -> Result<(), HistoryError> {
        let e = |x: redb::StorageError| self.err(x);
        let te = |x: redb::TableError| self.err(x);
        {
            let old = txn.open_table(KEYS_V2).map_err(te)?;
            let mut new = txn.open_table(KEYS).map_err(te)?;
            for entry in old.iter().map_err(e)? {
                let (k, v) = entry.map_err(e)?;
                let (uid, container, n) = k.value();
                new.insert(("", uid, container, n), v.value()).map_err(e)?;
            }
        }
        txn.delete_table(KEYS_V2).map_err(te)?;
        let (mut captures, mut bundle_bytes, mut stored_bytes) = (0u64, 0u64, 0u64);
        {
            let old = txn.open_table(INDEX_V2).map_err(te)?;
            let mut new = txn.open_table(INDEX).map_err(te)?;
            for entry in old.iter().map_err(e)? {
                let (k, row) = entry.map_err(e)?;
                let (scope, value, at, id) = k.value();
                let (a, b, c, d, n, f, g, h, i) = row.value();
                let row: RowRef<'_> = ("", a, b, c, d, n, f, g, h, i);
                new.insert((scope, value, at, id), row).map_err(e)?;
                if scope == SCOPE_ALL {
                    new.insert((SCOPE_CLUSTER, "", at, id), row).map_err(e)?;
                    captures += 1;
                    bundle_bytes += h;
                    stored_bytes += i;
                }
            }
        }
        txn.delete_table(INDEX_V2).map_err(te)?;
        {
            let mut new = txn.open_table(BASELINES).map_err(te)?;
            let has_old = txn
                .list_tables()
                .map_err(e)?
                .any(|t| t.name() == BASELINES_V2.name());
            if has_old {
                let old = txn.open_table(BASELINES_V2).map_err(te)?;
                for entry in old.iter().map_err(e)? {
                    let (k, v) = entry.map_err(e)?;
                    let (uid, container) = k.value();
                    new.insert(("", uid, container), v.value()).map_err(e)?;
                }
            }
            if has_old {
                txn.delete_table(BASELINES_V2).map_err(te)?;
            }
        }
        let mut meta = txn.open_table(META).map_err(te)?;
        let mut clusters = txn.open_table(CLUSTERS).map_err(te)?;
        if captures > 0 {
            clusters
                .insert("", (captures, bundle_bytes, stored_bytes))
                .map_err(e)?;
        }
        let mut checkpoints = txn.open_table(CHECKPOINTS).map_err(te)?;
        if let Some(ms) = meta.remove(K_WATCHED_UNTIL).map_err(e)? {
            checkpoints.insert("", ms.value()).map_err(e)?;
        }
        Ok(())
    }

    /// Runs `f` in one write transaction, committed when it succeeds and
    /// aborted (nothing written) when it fails.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Writer<'_>) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let Db::Write(db) = &*self.db else {
            return Err(self.read_only_err());
        };
        let txn = db.begin_write().map_err(|e| self.err(e))?;
        let (out, dirty) = {
            let mut w = Writer::open(&txn, &self.path)?;
            let out = f(&mut w)?;
            if w.dirty {
                w.save()?;
            }
            (out, w.dirty)
        };
        if dirty {
            txn.commit().map_err(|e| self.err(e))?;
        } else {
            // Only duplicates, or nothing to prune: no disk sync.
            txn.abort().map_err(|e| self.err(e))?;
        }
        Ok(out)
    }
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("read_only", &self.is_read_only())
            .finish()
    }
}

fn decode(id: u64, json: &[u8]) -> Result<Capture, HistoryError> {
    serde_json::from_slice(json).map_err(|source| HistoryError::Encoding {
        id: Some(id),
        source,
    })
}

/// The capture as its JSON record stores it: without bundle and diagnosis.
pub(crate) fn record_of(c: &Capture) -> Capture {
    Capture {
        key: c.key.clone(),
        namespace: c.namespace.clone(),
        pod: c.pod.clone(),
        owner_kind: c.owner_kind.clone(),
        owner: c.owner.clone(),
        node: c.node.clone(),
        revision: c.revision.clone(),
        finished_at: c.finished_at,
        observed_at: c.observed_at,
        reason: c.reason.clone(),
        exit_code: c.exit_code,
        signal: c.signal,
        cause: c.cause.clone(),
        confidence: c.confidence.clone(),
        summary: c.summary.clone(),
        diagnosis_json: None,
        kind: c.kind,
        missing: c.missing.clone(),
        logs: c.logs.clone(),
        capture_delay_ms: c.capture_delay_ms,
        bundle: None,
    }
}

/// The pieces of one part of a capture, joined; `None` when there are none.
fn read_blob(
    blobs: &impl ReadableTable<(u64, u8, u32), &'static [u8]>,
    id: u64,
    part: u8,
) -> Result<Option<Vec<u8>>, redb::StorageError> {
    let mut out: Option<Vec<u8>> = None;
    for piece in blobs.range::<(u64, u8, u32)>((id, part, 0)..=(id, part, u32::MAX))? {
        let (_, v) = piece?;
        out.get_or_insert_with(Vec::new)
            .extend_from_slice(v.value());
    }
    Ok(out)
}

fn row_of(c: &Capture, bundle_len: u64, stored: u64) -> RowRef<'_> {
    (
        c.key.cluster.as_str(),
        c.namespace.as_str(),
        c.pod.as_str(),
        c.key.pod_uid.as_str(),
        c.key.container.as_str(),
        c.key.restart_count,
        c.owner_kind.as_deref().unwrap_or(""),
        c.owner.as_deref().unwrap_or(""),
        bundle_len,
        stored,
    )
}

/// The index scopes a row is listed under.
fn scopes<'a>(row: &RowRef<'a>) -> impl Iterator<Item = (u8, &'a str)> {
    let (cluster, namespace, pod, uid, _, _, _, owner, _, _) = *row;
    [
        Some((SCOPE_ALL, "")),
        Some((SCOPE_CLUSTER, cluster)),
        Some((SCOPE_NAMESPACE, namespace)),
        Some((SCOPE_POD, pod)),
        Some((SCOPE_POD_UID, uid)),
        (!owner.is_empty()).then_some((SCOPE_OWNER, owner)),
    ]
    .into_iter()
    .flatten()
}

/// The query's field filters (its time bounds are the scan's range).
fn matches(q: &Query, row: &RowRef<'_>) -> bool {
    fn eq(filter: &Option<String>, value: &str) -> bool {
        filter.as_deref().is_none_or(|f| f == value)
    }
    let (cluster, namespace, pod, uid, container, _, owner_kind, owner, _, _) = *row;
    eq(&q.cluster, cluster)
        && eq(&q.namespace, namespace)
        && eq(&q.pod, pod)
        && eq(&q.pod_uid, uid)
        && eq(&q.container, container)
        && eq(&q.owner_kind, owner_kind)
        && eq(&q.owner, owner)
}

/// What is needed to remove a capture from every table.
struct Victim {
    at: i128,
    id: u64,
    cluster: String,
    namespace: String,
    pod: String,
    uid: String,
    container: String,
    restart_count: i32,
    owner: String,
    bundle_len: u64,
    stored: u64,
}

/// The open tables of one write transaction, and the counters it updates.
struct Writer<'t> {
    path: &'t Path,
    meta: Table<'t, &'static str, u64>,
    captures: Table<'t, u64, &'static [u8]>,
    blobs: Table<'t, (u64, u8, u32), &'static [u8]>,
    keys: Table<'t, (&'static str, &'static str, &'static str, i32), u64>,
    clusters: Table<'t, &'static str, (u64, u64, u64)>,
    index: Table<'t, (u8, &'static str, i128, u64), Row>,
    config_keys: Table<'t, u64, &'static [u8]>,
    next_id: u64,
    captures_count: u64,
    bundle_bytes: u64,
    stored_bytes: u64,
    /// Whether anything was written.
    dirty: bool,
}

impl<'t> Writer<'t> {
    fn open(txn: &'t WriteTransaction, path: &'t Path) -> Result<Writer<'t>, HistoryError> {
        let e = |e: redb::TableError| HistoryError::from_redb(path, e);
        let meta = txn.open_table(META).map_err(e)?;
        let get = |k: &str| -> Result<u64, HistoryError> {
            Ok(meta
                .get(k)
                .map_err(|x| HistoryError::from_redb(path, x))?
                .map_or(0, |v| v.value()))
        };
        let next_id = get(K_NEXT_ID)?.max(1);
        let captures_count = get(K_CAPTURES)?;
        let bundle_bytes = get(K_BUNDLE_BYTES)?;
        let stored_bytes = get(K_STORED_BYTES)?;
        Ok(Writer {
            path,
            captures: txn.open_table(CAPTURES).map_err(e)?,
            blobs: txn.open_table(BLOBS).map_err(e)?,
            keys: txn.open_table(KEYS).map_err(e)?,
            index: txn.open_table(INDEX).map_err(e)?,
            clusters: txn.open_table(CLUSTERS).map_err(e)?,
            config_keys: txn.open_table(CONFIG_KEYS).map_err(e)?,
            meta,
            next_id,
            captures_count,
            bundle_bytes,
            stored_bytes,
            dirty: false,
        })
    }

    fn insert(
        &mut self,
        c: &Capture,
        config_keys: &[ConfigKeys],
    ) -> Result<Inserted, HistoryError> {
        let path = self.path;
        let err = |e: redb::StorageError| HistoryError::from_redb(path, e);
        let key = (
            c.key.cluster.as_str(),
            c.key.pod_uid.as_str(),
            c.key.container.as_str(),
            c.key.restart_count,
        );
        if let Some(id) = self.keys.get(key).map_err(err)? {
            return Ok(Inserted::Duplicate(id.value()));
        }
        let bundle = c.bundle.as_deref();
        let diagnosis = c.diagnosis_json.as_deref().map(str::as_bytes);
        for (what, blob) in [("bundle", bundle), ("diagnosis", diagnosis)] {
            let bytes = blob.map_or(0, |b| len64(b.len()));
            if bytes > MAX_BLOB_BYTES {
                return Err(HistoryError::TooLarge {
                    what,
                    bytes,
                    limit: MAX_BLOB_BYTES,
                });
            }
        }
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or_else(|| HistoryError::Corrupted {
            path: path.to_path_buf(),
            detail: "capture ids are exhausted".to_string(),
        })?;
        let json = serde_json::to_vec(&record_of(c))
            .map_err(|source| HistoryError::Encoding { id: None, source })?;
        let keys_json = if config_keys.is_empty() {
            None
        } else {
            Some(
                serde_json::to_vec(config_keys)
                    .map_err(|source| HistoryError::Encoding { id: None, source })?,
            )
        };
        self.dirty = true;
        self.captures.insert(id, json.as_slice()).map_err(err)?;
        if let Some(k) = &keys_json {
            self.config_keys.insert(id, k.as_slice()).map_err(err)?;
        }
        for (part, blob) in [(PART_BUNDLE, bundle), (PART_DIAGNOSIS, diagnosis)] {
            let Some(blob) = blob else { continue };
            if blob.is_empty() {
                // An empty bundle is still a bundle.
                self.blobs.insert((id, part, 0), &[][..]).map_err(err)?;
            }
            for (seq, piece) in (0u32..).zip(blob.chunks(CHUNK)) {
                self.blobs.insert((id, part, seq), piece).map_err(err)?;
            }
        }
        let bundle_len = bundle.map_or(0, |b| len64(b.len()));
        let stored = len64(json.len())
            + bundle_len
            + diagnosis.map_or(0, |d| len64(d.len()))
            + keys_json.as_ref().map_or(0, |k| len64(k.len()));
        let row = row_of(c, bundle_len, stored);
        let at = ns(c.observed_at);
        for (scope, value) in scopes(&row) {
            self.index
                .insert((scope, value, at, id), row)
                .map_err(err)?;
        }
        self.keys.insert(key, id).map_err(err)?;
        let cluster = c.key.cluster.as_str();
        let (n, b, s) = self
            .clusters
            .get(cluster)
            .map_err(err)?
            .map_or((0, 0, 0), |v| v.value());
        self.clusters
            .insert(
                cluster,
                (
                    n + 1,
                    b.saturating_add(bundle_len),
                    s.saturating_add(stored),
                ),
            )
            .map_err(err)?;
        self.captures_count += 1;
        self.bundle_bytes = self.bundle_bytes.saturating_add(bundle_len);
        self.stored_bytes = self.stored_bytes.saturating_add(stored);
        Ok(Inserted::New(id))
    }

    fn prune(
        &mut self,
        r: &Retention,
        cutoff: Option<i128>,
        cluster: Option<&str>,
    ) -> Result<PruneStats, HistoryError> {
        let path = self.path;
        let err = |e: redb::StorageError| HistoryError::from_redb(path, e);
        // The captures counted against the limits: the cluster's, or all.
        let (scope, value, mut remaining, mut stored) = match cluster {
            Some(c) => {
                let (n, _, s) = self
                    .clusters
                    .get(c)
                    .map_err(err)?
                    .map_or((0, 0, 0), |v| v.value());
                (SCOPE_CLUSTER, c, n, s)
            }
            None => (SCOPE_ALL, "", self.captures_count, self.stored_bytes),
        };
        let mut victims = Vec::new();
        let all = self
            .index
            .range::<(u8, &str, i128, u64)>(
                (scope, value, i128::MIN, 0)..=(scope, value, i128::MAX, u64::MAX),
            )
            .map_err(err)?;
        for entry in all {
            let (k, row) = entry.map_err(err)?;
            let (_, _, at, id) = k.value();
            let too_old = cutoff.is_some_and(|c| at < c);
            let too_many = r.max_captures.is_some_and(|m| remaining > m);
            let too_big = r.max_bytes.is_some_and(|m| stored > m);
            if !(too_old || too_many || too_big) {
                break;
            }
            let (
                cluster,
                namespace,
                pod,
                uid,
                container,
                restart_count,
                _,
                owner,
                bundle_len,
                bytes,
            ) = row.value();
            victims.push(Victim {
                at,
                id,
                cluster: cluster.to_string(),
                namespace: namespace.to_string(),
                pod: pod.to_string(),
                uid: uid.to_string(),
                container: container.to_string(),
                restart_count,
                owner: owner.to_string(),
                bundle_len,
                stored: bytes,
            });
            remaining = remaining.saturating_sub(1);
            stored = stored.saturating_sub(bytes);
        }
        let mut stats = PruneStats::default();
        self.dirty |= !victims.is_empty();
        for v in victims {
            self.remove_victim(&v)?;
            stats.removed += 1;
            stats.bytes_freed += v.stored;
        }
        Ok(stats)
    }

    /// Removes the captures with these ids (those that exist), for the
    /// spool's drain.
    fn remove_ids(&mut self, ids: &[u64]) -> Result<u64, HistoryError> {
        let path = self.path;
        let err = |e: redb::StorageError| HistoryError::from_redb(path, e);
        let mut n = 0;
        for &id in ids {
            let Some(json) = self.captures.get(id).map_err(err)? else {
                continue;
            };
            let c = decode(id, json.value())?;
            drop(json);
            let at = ns(c.observed_at);
            let Some(row) = self.index.get((SCOPE_ALL, "", at, id)).map_err(err)? else {
                return Err(HistoryError::Corrupted {
                    path: path.to_path_buf(),
                    detail: format!("capture {id} has a record but no index row"),
                });
            };
            let (_, _, _, _, _, _, _, _, bundle_len, stored) = row.value();
            drop(row);
            let v = Victim {
                at,
                id,
                cluster: c.key.cluster,
                namespace: c.namespace,
                pod: c.pod,
                uid: c.key.pod_uid,
                container: c.key.container,
                restart_count: c.key.restart_count,
                owner: c.owner.unwrap_or_default(),
                bundle_len,
                stored,
            };
            self.dirty = true;
            self.remove_victim(&v)?;
            n += 1;
        }
        Ok(n)
    }

    fn remove_victim(&mut self, v: &Victim) -> Result<(), HistoryError> {
        let path = self.path;
        let err = |e: redb::StorageError| HistoryError::from_redb(path, e);
        let row: RowRef<'_> = (
            &v.cluster,
            &v.namespace,
            &v.pod,
            &v.uid,
            &v.container,
            v.restart_count,
            "",
            &v.owner,
            v.bundle_len,
            v.stored,
        );
        for (scope, value) in scopes(&row) {
            self.index.remove((scope, value, v.at, v.id)).map_err(err)?;
        }
        self.captures.remove(v.id).map_err(err)?;
        self.config_keys.remove(v.id).map_err(err)?;
        self.blobs
            .retain_in::<(u64, u8, u32), _>((v.id, 0, 0)..=(v.id, u8::MAX, u32::MAX), |_, _| false)
            .map_err(err)?;
        let key = (
            v.cluster.as_str(),
            v.uid.as_str(),
            v.container.as_str(),
            v.restart_count,
        );
        let owner = self.keys.get(key).map_err(err)?.map(|g| g.value());
        if owner == Some(v.id) {
            self.keys.remove(key).map_err(err)?;
        }
        let (n, b, s) = self
            .clusters
            .get(v.cluster.as_str())
            .map_err(err)?
            .map_or((0, 0, 0), |x| x.value());
        let left = (
            n.saturating_sub(1),
            b.saturating_sub(v.bundle_len),
            s.saturating_sub(v.stored),
        );
        if left.0 == 0 {
            self.clusters.remove(v.cluster.as_str()).map_err(err)?;
        } else {
            self.clusters
                .insert(v.cluster.as_str(), left)
                .map_err(err)?;
        }
        self.captures_count = self.captures_count.saturating_sub(1);
        self.bundle_bytes = self.bundle_bytes.saturating_sub(v.bundle_len);
        self.stored_bytes = self.stored_bytes.saturating_sub(v.stored);
        Ok(())
    }

    /// Writes the counters back.
    fn save(&mut self) -> Result<(), HistoryError> {
        for (k, v) in [
            (K_NEXT_ID, self.next_id),
            (K_CAPTURES, self.captures_count),
            (K_BUNDLE_BYTES, self.bundle_bytes),
            (K_STORED_BYTES, self.stored_bytes),
        ] {
            self.meta
                .insert(k, v)
                .map_err(|e| HistoryError::from_redb(self.path, e))?;
        }
        Ok(())
    }
}

impl crate::Store for RedbStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }
    fn is_read_only(&self) -> bool {
        RedbStore::is_read_only(self)
    }
    fn insert_batch_with_keys(
        &self,
        cs: &[(&Capture, &[ConfigKeys])],
    ) -> Result<Vec<Inserted>, HistoryError> {
        RedbStore::insert_batch_with_keys(self, cs)
    }
    fn insert(&self, c: &Capture) -> Result<Inserted, HistoryError> {
        RedbStore::insert(self, c)
    }
    fn insert_batch(&self, cs: &[Capture]) -> Result<Vec<Inserted>, HistoryError> {
        RedbStore::insert_batch(self, cs)
    }
    fn config_keys(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<ConfigKeys>>, HistoryError> {
        RedbStore::config_keys(self, ids)
    }
    fn contains(&self, k: &TerminationKey) -> Result<bool, HistoryError> {
        RedbStore::contains(self, k)
    }
    fn seen_keys(&self) -> Result<HashSet<TerminationKey>, HistoryError> {
        RedbStore::seen_keys(self)
    }
    fn list(&self, q: &Query) -> Result<Vec<Record>, HistoryError> {
        RedbStore::list(self, q)
    }
    fn get(&self, id: u64) -> Result<Option<Record>, HistoryError> {
        RedbStore::get(self, id)
    }
    fn bundle(&self, id: u64) -> Result<Option<Vec<u8>>, HistoryError> {
        RedbStore::bundle(self, id)
    }
    fn prune(&self, r: &Retention, now: Timestamp) -> Result<PruneStats, HistoryError> {
        RedbStore::prune(self, r, now)
    }
    fn set_checkpoint(&self, at: Timestamp) -> Result<(), HistoryError> {
        RedbStore::set_checkpoint(self, at)
    }
    fn checkpoint(&self) -> Result<Option<Timestamp>, HistoryError> {
        RedbStore::checkpoint(self)
    }
    fn update_baselines(
        &self,
        set: &[(String, String, i32)],
        forget: &HashSet<String>,
        keep: Option<&HashSet<String>>,
    ) -> Result<(), HistoryError> {
        RedbStore::update_baselines(self, set, forget, keep)
    }
    fn baselines(&self) -> Result<HashMap<(String, String), i32>, HistoryError> {
        RedbStore::baselines(self)
    }
    fn stats(&self) -> Result<Stats, HistoryError> {
        RedbStore::stats(self)
    }
    fn group(&self, q: &Query, by: crate::GroupBy) -> Result<Vec<crate::Group>, HistoryError> {
        let q = Query {
            limit: None,
            with_diagnosis: false,
            ..q.clone()
        };
        Ok(crate::fleet::group(&RedbStore::list(self, &q)?, by))
    }
    fn new_causes(
        &self,
        q: &Query,
        since: crate::Since,
    ) -> Result<Vec<crate::NewCause>, HistoryError> {
        let q = Query {
            limit: None,
            with_diagnosis: false,
            ..q.clone()
        };
        let matching = RedbStore::list(self, &q)?;
        let since = match since {
            crate::Since::At(t) => t,
            crate::Since::Revision(rev) => {
                match matching
                    .iter()
                    .filter(|r| r.capture.revision.as_deref() == Some(rev.as_str()))
                    .map(|r| r.capture.observed_at)
                    .min()
                {
                    Some(t) => t,
                    None => return Ok(Vec::new()),
                }
            }
        };
        // First sightings over the whole history of the workloads: every
        // capture of a (cluster, workload, cause) shares its cluster,
        // namespace and owner, so only the filters on those keep them all.
        let all = RedbStore::list(
            self,
            &Query {
                cluster: q.cluster.clone(),
                namespace: q.namespace.clone(),
                owner_kind: q.owner_kind.clone(),
                owner: q.owner.clone(),
                ..Query::default()
            },
        )?;
        Ok(crate::fleet::new_causes(&all, &matching, since))
    }
}

/// The stored bytes a capture takes ([`Stats::stored_bytes`]), as an insert
/// counts them.
pub(crate) fn stored_size(c: &Capture, keys: &[ConfigKeys]) -> u64 {
    let json = serde_json::to_vec(&record_of(c)).map_or(0, |j| len64(j.len()));
    let keys = if keys.is_empty() {
        0
    } else {
        serde_json::to_vec(keys).map_or(0, |k| len64(k.len()))
    };
    json + c.bundle.as_ref().map_or(0, |b| len64(b.len()))
        + c.diagnosis_json.as_ref().map_or(0, |d| len64(d.len()))
        + keys
}
