//! The redb-backed store. The table layout is described in the crate docs.

use std::collections::HashSet;
use std::fs;
use std::ops::Bound;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use redb::{
    Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadTransaction,
    ReadableDatabase, ReadableTable, ReadableTableMetadata, Table, TableDefinition, TableHandle,
    WriteTransaction,
};

use crate::error::HistoryError;
use crate::model::{
    Capture, Inserted, PruneStats, Query, Record, Retention, Stats, TerminationKey,
};

/// Layout version of the tables and of the JSON metadata records. A file with
/// another version is refused with [`HistoryError::SchemaVersion`].
pub const SCHEMA_VERSION: u64 = 1;

/// Page cache of one open store. redb's default (1 GiB) is meant for a
/// database server; a watcher mostly appends, and `crashdoc history` reads
/// the small index rows.
const CACHE_BYTES: usize = 64 << 20;

/// `&str` → `u64`: `schema_version`, `next_id`, `bundle_bytes`, `stored_bytes`.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("crashdoc_history.meta");
/// id → JSON of the [`Capture`] without its bundle.
const CAPTURES: TableDefinition<u64, &[u8]> = TableDefinition::new("crashdoc_history.captures");
/// id → bundle bytes (absent when the capture has none).
const BUNDLES: TableDefinition<u64, &[u8]> = TableDefinition::new("crashdoc_history.bundles");
/// (pod_uid, container, restart_count) → id.
const KEYS: TableDefinition<(&str, &str, i32), u64> = TableDefinition::new("crashdoc_history.keys");
/// (observed_at in ns, id) → the row that `list` filters on and `prune` removes by.
const TIMELINE: TableDefinition<(i128, u64), Row> =
    TableDefinition::new("crashdoc_history.timeline");

/// (namespace, pod, pod_uid, container, restart_count, owner_kind or "",
/// owner or "", bundle bytes, metadata record bytes).
type Row = (
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
    i32,
    &'a str,
    &'a str,
    u64,
    u64,
);

const K_SCHEMA: &str = "schema_version";
const K_NEXT_ID: &str = "next_id";
const K_BUNDLE_BYTES: &str = "bundle_bytes";
const K_STORED_BYTES: &str = "stored_bytes";

/// The capture history in one file. `Send + Sync`: share it through an `Arc`;
/// reads run concurrently, writes are serialized by redb.
pub struct Store {
    db: Db,
    path: PathBuf,
}

enum Db {
    Write(Database),
    Read(ReadOnlyDatabase),
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Store>();
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

impl Store {
    /// Opens the history for writing, creating the file (and its folders)
    /// when it does not exist. Only one process can have it open this way:
    /// a second gets [`HistoryError::Locked`].
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
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
            let store = Store {
                db: Db::Write(db),
                path: path.to_path_buf(),
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
    pub fn open_read_only(path: &Path) -> Result<Store, HistoryError> {
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
            let store = Store {
                db: Db::Read(db),
                path: path.to_path_buf(),
            };
            let txn = store.read()?;
            let meta = txn.open_table(META).map_err(|e| store.err(e))?;
            let version = meta.get(K_SCHEMA).map_err(|e| store.err(e))?;
            store.check_version(version.map(|v| v.value()))?;
            drop(meta);
            Ok(store)
        })
    }

    /// The file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        matches!(self.db, Db::Read(_))
    }

    /// Stores a capture, unless its key is already stored: then nothing is
    /// written (the first capture of a termination is kept) and the stored id
    /// is returned. One transaction, durable when this returns.
    pub fn insert(&self, c: &Capture) -> Result<Inserted, HistoryError> {
        guard(&self.path, || self.write(|w| w.insert(c)))
    }

    /// [`Store::insert`] for many captures in one transaction (one disk sync):
    /// the way to record a restart storm. A key repeated in `cs` is stored
    /// once; its later occurrences are reported as duplicates of it.
    pub fn insert_batch(&self, cs: &[Capture]) -> Result<Vec<Inserted>, HistoryError> {
        guard(&self.path, || {
            self.write(|w| cs.iter().map(|c| w.insert(c)).collect())
        })
    }

    /// Whether a capture with this key is stored.
    pub fn contains(&self, k: &TerminationKey) -> Result<bool, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let keys = txn.open_table(KEYS).map_err(|e| self.err(e))?;
            let found = keys
                .get((k.pod_uid.as_str(), k.container.as_str(), k.restart_count))
                .map_err(|e| self.err(e))?;
            Ok(found.is_some())
        })
    }

    /// Every stored key, to warm a watcher's dedup set when it restarts.
    pub fn seen_keys(&self) -> Result<HashSet<TerminationKey>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let keys = txn.open_table(KEYS).map_err(|e| self.err(e))?;
            let mut out = HashSet::with_capacity(
                usize::try_from(keys.len().map_err(|e| self.err(e))?).unwrap_or(0),
            );
            for entry in keys.iter().map_err(|e| self.err(e))? {
                let (k, _) = entry.map_err(|e| self.err(e))?;
                let (uid, container, restart_count) = k.value();
                out.insert(TerminationKey::new(uid, container, restart_count));
            }
            Ok(out)
        })
    }

    /// The captures that match every filter of `q`, newest first (by
    /// `observed_at`, then id), without their bundles.
    ///
    /// Cost: a scan of the compact index rows observed within
    /// `q.since..q.until` (stopping once `q.limit` rows match), then one
    /// metadata record decoded per result.
    pub fn list(&self, q: &Query) -> Result<Vec<Record>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let timeline = txn.open_table(TIMELINE).map_err(|e| self.err(e))?;
            let lower = match q.since {
                Some(t) => Bound::Included((ns(t), 0u64)),
                None => Bound::Unbounded,
            };
            let upper = match q.until {
                // Ids start at 1, so (until, 0) excludes every capture observed at `until`.
                Some(t) => Bound::Excluded((ns(t), 0u64)),
                None => Bound::Unbounded,
            };
            let limit = q.limit.unwrap_or(usize::MAX);
            let mut hits: Vec<(u64, u64)> = Vec::new();
            if limit > 0 {
                for entry in timeline
                    .range::<(i128, u64)>((lower, upper))
                    .map_err(|e| self.err(e))?
                    .rev()
                {
                    let (k, row) = entry.map_err(|e| self.err(e))?;
                    let row = row.value();
                    if matches(q, &row) {
                        hits.push((k.value().1, row.7));
                        if hits.len() >= limit {
                            break;
                        }
                    }
                }
            }
            drop(timeline);
            let captures = txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            let mut out = Vec::with_capacity(hits.len());
            for (id, bundle_len) in hits {
                let Some(json) = captures.get(id).map_err(|e| self.err(e))? else {
                    return Err(
                        self.corrupted(format!("capture {id} is indexed but has no record"))
                    );
                };
                out.push(Record {
                    id,
                    capture: decode(id, json.value())?,
                    bundle_len,
                });
            }
            Ok(out)
        })
    }

    /// One capture, with its bundle.
    pub fn get(&self, id: u64) -> Result<Option<Record>, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let captures = txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            let Some(json) = captures.get(id).map_err(|e| self.err(e))? else {
                return Ok(None);
            };
            let mut capture = decode(id, json.value())?;
            drop(json);
            let bundles = txn.open_table(BUNDLES).map_err(|e| self.err(e))?;
            capture.bundle = bundles
                .get(id)
                .map_err(|e| self.err(e))?
                .map(|b| b.value().to_vec());
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
            let bundles = txn.open_table(BUNDLES).map_err(|e| self.err(e))?;
            let bundle = bundles.get(id).map_err(|e| self.err(e))?;
            Ok(bundle.map(|b| b.value().to_vec()))
        })
    }

    /// Removes the oldest captures (by `observed_at`, then id) until every
    /// limit of `r` holds, in one transaction that keeps all tables
    /// consistent. `now` anchors [`Retention::max_age`].
    pub fn prune(&self, r: &Retention, now: Timestamp) -> Result<PruneStats, HistoryError> {
        guard(&self.path, || {
            let cutoff = r.max_age.map(|age| ns(now) - age.as_nanos().max(0));
            self.write(|w| w.prune(r, cutoff))
        })
    }

    /// Counts, sizes and time span of the history.
    pub fn stats(&self) -> Result<Stats, HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let timeline = txn.open_table(TIMELINE).map_err(|e| self.err(e))?;
            let counter = |k: &str| -> Result<u64, HistoryError> {
                Ok(meta
                    .get(k)
                    .map_err(|e| self.err(e))?
                    .map_or(0, |v| v.value()))
            };
            let at = |key: Option<(redb::AccessGuard<'_, (i128, u64)>, _)>| {
                key.and_then(|(k, _)| Timestamp::from_nanosecond(k.value().0).ok())
            };
            Ok(Stats {
                captures: timeline.len().map_err(|e| self.err(e))?,
                bundle_bytes: counter(K_BUNDLE_BYTES)?,
                stored_bytes: counter(K_STORED_BYTES)?,
                file_bytes: fs::metadata(&self.path).ok().map(|m| m.len()),
                oldest: at(timeline.first().map_err(|e| self.err(e))?),
                newest: at(timeline.last().map_err(|e| self.err(e))?),
            })
        })
    }

    /// Checks that every table agrees with the others (each indexed capture
    /// has its record, key and bundle; the counters match the rows). Reads
    /// every metadata record, but no bundle. For tests and `fsck`-like tooling.
    #[doc(hidden)]
    pub fn check_consistency(&self) -> Result<(), HistoryError> {
        guard(&self.path, || {
            let txn = self.read()?;
            let e = |e: redb::Error| HistoryError::from_redb(&self.path, e);
            let timeline = txn.open_table(TIMELINE).map_err(|x| e(x.into()))?;
            let captures = txn.open_table(CAPTURES).map_err(|x| e(x.into()))?;
            let bundles = txn.open_table(BUNDLES).map_err(|x| e(x.into()))?;
            let keys = txn.open_table(KEYS).map_err(|x| e(x.into()))?;
            let meta = txn.open_table(META).map_err(|x| e(x.into()))?;
            let n = timeline.len().map_err(|x| e(x.into()))?;
            for (name, len) in [
                ("captures", captures.len().map_err(|x| e(x.into()))?),
                ("keys", keys.len().map_err(|x| e(x.into()))?),
            ] {
                if len != n {
                    return Err(self.corrupted(format!("{n} indexed captures but {len} {name}")));
                }
            }
            let (mut bundle_bytes, mut stored_bytes, mut with_bundle, mut max_id) =
                (0u64, 0u64, 0u64, 0u64);
            for entry in timeline.iter().map_err(|x| e(x.into()))? {
                let (k, row) = entry.map_err(|x| e(x.into()))?;
                let (t, id) = k.value();
                let row = row.value();
                max_id = max_id.max(id);
                let Some(json) = captures.get(id).map_err(|x| e(x.into()))? else {
                    return Err(self.corrupted(format!("capture {id} has no record")));
                };
                let c = decode(id, json.value())?;
                let expected = row_of(&c, row.7, row.8);
                if ns(c.observed_at) != t || expected != row || len64(json.value().len()) != row.8 {
                    return Err(self
                        .corrupted(format!("capture {id}: index row disagrees with its record")));
                }
                let key = keys
                    .get((row.2, row.3, row.4))
                    .map_err(|x| e(x.into()))?
                    .map(|v| v.value());
                if key != Some(id) {
                    return Err(self.corrupted(format!("capture {id}: key maps to {key:?}")));
                }
                let blen = bundles
                    .get(id)
                    .map_err(|x| e(x.into()))?
                    .map(|b| len64(b.value().len()));
                if blen.unwrap_or(0) != row.7 {
                    return Err(self.corrupted(format!("capture {id}: bundle size disagrees")));
                }
                with_bundle += u64::from(blen.is_some());
                bundle_bytes += row.7;
                stored_bytes += row.7 + row.8;
            }
            if bundles.len().map_err(|x| e(x.into()))? != with_bundle {
                return Err(self.corrupted("bundles without a capture".to_string()));
            }
            let get = |k: &str| -> Result<u64, HistoryError> {
                Ok(meta
                    .get(k)
                    .map_err(|x| e(x.into()))?
                    .map_or(0, |v| v.value()))
            };
            if get(K_BUNDLE_BYTES)? != bundle_bytes || get(K_STORED_BYTES)? != stored_bytes {
                return Err(self.corrupted("byte counters disagree with the rows".to_string()));
            }
            if get(K_NEXT_ID)? <= max_id {
                return Err(self.corrupted("next id is not above every id".to_string()));
            }
            Ok(())
        })
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
        match &self.db {
            Db::Write(db) => db.begin_read(),
            Db::Read(db) => db.begin_read(),
        }
        .map_err(|e| self.err(e))
    }

    fn check_version(&self, found: Option<u64>) -> Result<(), HistoryError> {
        match found {
            Some(SCHEMA_VERSION) => Ok(()),
            Some(found) => Err(HistoryError::SchemaVersion {
                path: self.path.clone(),
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
        let Db::Write(db) = &self.db else {
            return Err(HistoryError::ReadOnly {
                path: self.path.clone(),
            });
        };
        let txn = db.begin_write().map_err(|e| self.err(e))?;
        let mut tables = txn.list_tables().map_err(|e| self.err(e))?;
        let has_meta = tables.any(|t| t.name() == META.name());
        drop(tables);
        if has_meta {
            let meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let version = meta
                .get(K_SCHEMA)
                .map_err(|e| self.err(e))?
                .map(|v| v.value());
            drop(meta);
            self.check_version(version)?;
            // Every table was created with the metadata; nothing to write.
            txn.abort().map_err(|e| self.err(e))?;
            return Ok(());
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
                (K_BUNDLE_BYTES, 0),
                (K_STORED_BYTES, 0),
            ] {
                meta.insert(k, v).map_err(|e| self.err(e))?;
            }
            txn.open_table(CAPTURES).map_err(|e| self.err(e))?;
            txn.open_table(BUNDLES).map_err(|e| self.err(e))?;
            txn.open_table(KEYS).map_err(|e| self.err(e))?;
            txn.open_table(TIMELINE).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// Runs `f` in one write transaction, committed when it succeeds and
    /// aborted (nothing written) when it fails.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Writer<'_>) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let Db::Write(db) = &self.db else {
            return Err(HistoryError::ReadOnly {
                path: self.path.clone(),
            });
        };
        let txn = db.begin_write().map_err(|e| self.err(e))?;
        let out = {
            let mut w = Writer::open(&txn, &self.path)?;
            let out = f(&mut w)?;
            w.save()?;
            out
        };
        txn.commit().map_err(|e| self.err(e))?;
        Ok(out)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
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

fn row_of(c: &Capture, bundle_len: u64, meta_len: u64) -> RowRef<'_> {
    (
        c.namespace.as_str(),
        c.pod.as_str(),
        c.key.pod_uid.as_str(),
        c.key.container.as_str(),
        c.key.restart_count,
        c.owner_kind.as_deref().unwrap_or(""),
        c.owner.as_deref().unwrap_or(""),
        bundle_len,
        meta_len,
    )
}

/// The query's field filters (its time bounds are the scan's range).
fn matches(q: &Query, row: &RowRef<'_>) -> bool {
    fn eq(filter: &Option<String>, value: &str) -> bool {
        filter.as_deref().is_none_or(|f| f == value)
    }
    let (namespace, pod, uid, container, _, owner_kind, owner, _, _) = *row;
    eq(&q.namespace, namespace)
        && eq(&q.pod, pod)
        && eq(&q.pod_uid, uid)
        && eq(&q.container, container)
        && eq(&q.owner_kind, owner_kind)
        && eq(&q.owner, owner)
}

/// The open tables of one write transaction, and the counters it updates.
struct Writer<'t> {
    path: &'t Path,
    meta: Table<'t, &'static str, u64>,
    captures: Table<'t, u64, &'static [u8]>,
    bundles: Table<'t, u64, &'static [u8]>,
    keys: Table<'t, (&'static str, &'static str, i32), u64>,
    timeline: Table<'t, (i128, u64), Row>,
    next_id: u64,
    bundle_bytes: u64,
    stored_bytes: u64,
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
        let (next_id, bundle_bytes, stored_bytes) = (
            get(K_NEXT_ID)?.max(1),
            get(K_BUNDLE_BYTES)?,
            get(K_STORED_BYTES)?,
        );
        Ok(Writer {
            path,
            captures: txn.open_table(CAPTURES).map_err(e)?,
            bundles: txn.open_table(BUNDLES).map_err(e)?,
            keys: txn.open_table(KEYS).map_err(e)?,
            timeline: txn.open_table(TIMELINE).map_err(e)?,
            meta,
            next_id,
            bundle_bytes,
            stored_bytes,
        })
    }

    fn insert(&mut self, c: &Capture) -> Result<Inserted, HistoryError> {
        let key = (
            c.key.pod_uid.as_str(),
            c.key.container.as_str(),
            c.key.restart_count,
        );
        if let Some(id) = self
            .keys
            .get(key)
            .map_err(|e| HistoryError::from_redb(self.path, e))?
        {
            return Ok(Inserted::Duplicate(id.value()));
        }
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or_else(|| HistoryError::Corrupted {
            path: self.path.to_path_buf(),
            detail: "capture ids are exhausted".to_string(),
        })?;
        let json =
            serde_json::to_vec(c).map_err(|source| HistoryError::Encoding { id: None, source })?;
        let bundle_len = c.bundle.as_ref().map_or(0, |b| len64(b.len()));
        let meta_len = len64(json.len());
        self.captures
            .insert(id, json.as_slice())
            .map_err(|e| HistoryError::from_redb(self.path, e))?;
        if let Some(bundle) = &c.bundle {
            self.bundles
                .insert(id, bundle.as_slice())
                .map_err(|e| HistoryError::from_redb(self.path, e))?;
        }
        self.keys
            .insert(key, id)
            .map_err(|e| HistoryError::from_redb(self.path, e))?;
        self.timeline
            .insert((ns(c.observed_at), id), row_of(c, bundle_len, meta_len))
            .map_err(|e| HistoryError::from_redb(self.path, e))?;
        self.bundle_bytes = self.bundle_bytes.saturating_add(bundle_len);
        self.stored_bytes = self
            .stored_bytes
            .saturating_add(bundle_len.saturating_add(meta_len));
        Ok(Inserted::New(id))
    }

    fn prune(&mut self, r: &Retention, cutoff: Option<i128>) -> Result<PruneStats, HistoryError> {
        struct Victim {
            at: i128,
            id: u64,
            uid: String,
            container: String,
            restart_count: i32,
            bundle_len: u64,
            bytes: u64,
        }
        let mut remaining = self
            .timeline
            .len()
            .map_err(|e| HistoryError::from_redb(self.path, e))?;
        let mut stored = self.stored_bytes;
        let mut victims = Vec::new();
        for entry in self
            .timeline
            .iter()
            .map_err(|e| HistoryError::from_redb(self.path, e))?
        {
            let (k, row) = entry.map_err(|e| HistoryError::from_redb(self.path, e))?;
            let (at, id) = k.value();
            let too_old = cutoff.is_some_and(|c| at < c);
            let too_many = r.max_captures.is_some_and(|m| remaining > m);
            let too_big = r.max_bytes.is_some_and(|m| stored > m);
            if !(too_old || too_many || too_big) {
                break;
            }
            let (_, _, uid, container, restart_count, _, _, bundle_len, meta_len) = row.value();
            let bytes = bundle_len.saturating_add(meta_len);
            victims.push(Victim {
                at,
                id,
                uid: uid.to_string(),
                container: container.to_string(),
                restart_count,
                bundle_len,
                bytes,
            });
            remaining -= 1;
            stored = stored.saturating_sub(bytes);
        }
        let mut stats = PruneStats::default();
        for v in victims {
            self.timeline
                .remove((v.at, v.id))
                .map_err(|e| HistoryError::from_redb(self.path, e))?;
            self.captures
                .remove(v.id)
                .map_err(|e| HistoryError::from_redb(self.path, e))?;
            self.bundles
                .remove(v.id)
                .map_err(|e| HistoryError::from_redb(self.path, e))?;
            let key = (v.uid.as_str(), v.container.as_str(), v.restart_count);
            let owner = self
                .keys
                .get(key)
                .map_err(|e| HistoryError::from_redb(self.path, e))?
                .map(|g| g.value());
            if owner == Some(v.id) {
                self.keys
                    .remove(key)
                    .map_err(|e| HistoryError::from_redb(self.path, e))?;
            }
            self.bundle_bytes = self.bundle_bytes.saturating_sub(v.bundle_len);
            self.stored_bytes = self.stored_bytes.saturating_sub(v.bytes);
            stats.removed += 1;
            stats.bytes_freed += v.bytes;
        }
        Ok(stats)
    }

    /// Writes the counters back.
    fn save(&mut self) -> Result<(), HistoryError> {
        for (k, v) in [
            (K_NEXT_ID, self.next_id),
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
