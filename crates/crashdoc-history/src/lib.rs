//! crashdoc-history: the history of captured container terminations, kept by
//! `crashdoc watch` and read by `crashdoc history`, behind one interface,
//! [`Store`]: an embedded file ([redb](https://docs.rs/redb), pure Rust;
//! [`RedbStore`]) for one cluster, or PostgreSQL ([`PgStore`], the module
//! docs of `pg` describe its tables) for a fleet of watchers, optionally
//! with a local spool for the database's outages ([`SpoolingStore`], see
//! [`spool`]). [`open`] opens either from a `--db` [`Location`].
//!
//! ```no_run
//! use crashdoc_history::{Capture, CaptureKind, Query, RedbStore, Retention, TerminationKey};
//!
//! let store = RedbStore::open(std::path::Path::new("/var/lib/crashdoc/history.redb"))?;
//! let capture = Capture {
//!     key: TerminationKey::new("3f1c…", "server", 7),
//!     namespace: "shop".into(),
//!     pod: "web-7d9c-x2x4f".into(),
//!     owner_kind: Some("Deployment".into()),
//!     owner: Some("web".into()),
//!     node: None,
//!     revision: None,
//!     finished_at: None,
//!     observed_at: jiff::Timestamp::now(),
//!     reason: Some("OOMKilled".into()),
//!     exit_code: Some(137),
//!     signal: None,
//!     cause: Some("oom-killed".into()),
//!     confidence: Some("high".into()),
//!     summary: Some("killed at its 512Mi memory limit".into()),
//!     diagnosis_json: None,
//!     kind: CaptureKind::Full,
//!     missing: vec![],
//!     logs: None,
//!     capture_delay_ms: None,
//!     bundle: Some(std::fs::read("bundle.tar.gz")?),
//! };
//! // A second insert of the same key is a Duplicate of the stored id.
//! let id = store.insert(&capture)?.id().ok_or("not stored")?;
//!
//! // The restarts of one workload, newest first, without their bundles:
//! let q = Query { namespace: Some("shop".into()), owner: Some("web".into()), limit: Some(20), ..Query::default() };
//! for r in store.list(&q)? {
//!     println!("{} {} {:?}", r.id, r.capture.observed_at, r.capture.cause);
//! }
//! // Export one capture as a bundle:
//! if let Some(bytes) = store.bundle(id)? {
//!     std::fs::write("capture.tar.gz", bytes)?;
//! }
//! store.prune(&Retention { max_captures: Some(10_000), ..Retention::default() }, jiff::Timestamp::now())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Tables
//!
//! | table | key → value | role |
//! | --- | --- | --- |
//! | `crashdoc_history.meta` | `&str` → `u64` | `schema_version` ([`SCHEMA_VERSION`]), `next_id` (ids are never reused), counters `captures`, `bundle_bytes`, `stored_bytes` |
//! | `crashdoc_history.captures` | id → JSON | the [`Capture`] without bundle and diagnosis (~0.5 KiB; its serde form) |
//! | `crashdoc_history.blobs` | (id, part, seq) → bytes | the bundle (part 0) and the diagnosis JSON (part 1) in pieces of 4 000 bytes, each within one 4 KiB page (redb gives a larger value a page of the next power of two) |
//! | `crashdoc_history.keys_v3` | (cluster, pod_uid, container, restart_count) → id | dedup, [`Store::contains`], [`Store::seen_keys`] (schema 1-2: `crashdoc_history.keys`, without the cluster) |
//! | `crashdoc_history.config_keys` | id → JSON | the [`ConfigKeys`] of the ConfigMaps and Secrets the captured pod referenced (schema 2; a schema-1 file gets the table when a writer opens it) |
//! | `crashdoc_history.index_v3` | (scope, value, observed_at ns, id) → row | each capture under scope *all* and under its cluster, namespace, pod name, pod UID and owner name; row = (cluster, namespace, pod, pod_uid, container, restart_count, owner_kind, owner, bundle bytes, stored bytes) (schema 1-2: `crashdoc_history.index`, without the cluster) |
//! | `crashdoc_history.clusters` | cluster → (captures, bundle bytes, stored bytes) | a cluster-scoped handle's [`Store::stats`] and [`Store::prune`] |
//! | `crashdoc_history.checkpoints` | cluster → ms | [`Store::checkpoint`] (schema 1-2: `watched_until_ms` in meta) |
//! | `crashdoc_history.baselines_v3` | (cluster, pod_uid, container) → restart count | [`Store::baselines`] (schema 1-2: `crashdoc_history.baselines`) |
//!
//! [`Store::list`] scans, newest first, the index range of the most
//! selective scope the query names, filters on the rows, and decodes only the
//! records it returns. [`Store::prune`] walks scope *all* oldest first and
//! removes a capture from every table using its row alone. Every insert,
//! batch and prune is one redb write transaction over all tables, so they
//! never disagree, even after a crash.
//!
//! # Processes
//!
//! The file is opened in redb's `SingleWriter` mode: one process writes
//! ([`RedbStore::open`]; a second one gets [`HistoryError::Locked`]) while any
//! number read ([`RedbStore::open_read_only`]), each read seeing the latest
//! commit. Within a process, share one store (`Send + Sync`) through an
//! `Arc`: reads run concurrently, writes one after another.
//!
//! Durability: each write transaction is synced to disk before it returns,
//! so one insert costs one `fsync`; batch captures that arrive together.
//! Removing captures frees pages that later captures reuse; the file does
//! not shrink.

mod api;
mod error;
pub mod fleet;
mod location;
mod model;
mod pg;
pub mod spool;
mod store;

pub use api::{Group, GroupBy, NewCause, Since, SpoolStats, Store};
pub use error::HistoryError;
pub use location::{Location, OpenOptions, SpoolConfig, mask_url, open};
pub use model::{
    Capture, CaptureKind, CaptureLogs, ConfigKeys, Inserted, PruneStats, Query, Record, Retention,
    Stats, TerminationKey,
};
pub use pg::{PG_SCHEMA_VERSION, PgStore};
pub use spool::SpoolingStore;
pub use store::{MAX_BLOB_BYTES, RedbStore, SCHEMA_VERSION};
