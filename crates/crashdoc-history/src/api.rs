//! The one interface of the history: [`Store`], implemented by the embedded
//! redb file ([`crate::RedbStore`]) and by PostgreSQL ([`crate::PgStore`]),
//! and the shapes of the fleet queries that both answer.
//!
//! Every method is synchronous and may block (on a disk sync, or on a
//! network round trip); async callers run them on a blocking thread
//! (`tokio::task::spawn_blocking`). A store is `Send + Sync`: share one
//! through an `Arc<dyn Store>`.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use serde::Serialize;

use crate::{
    Capture, ConfigKeys, HistoryError, Inserted, PruneStats, Query, Record, Retention, Stats,
    TerminationKey,
};

/// The capture history: the same contract, whatever holds it.
///
/// A handle may be opened *for* one cluster (the watcher's
/// `--cluster`): then the writer-side state ([`Store::seen_keys`],
/// [`Store::baselines`], [`Store::checkpoint`], [`Store::prune`]) is that
/// cluster's alone, so that many watchers share one database without
/// touching each other's. Reads ([`Store::list`], [`Store::group`],
/// [`Store::new_causes`]) select clusters with [`Query::cluster`].
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Where the history is, for messages: a file path, or a database URL
    /// with any password masked (never a credential).
    fn location(&self) -> String;

    /// Whether this handle was opened read-only (writes fail with
    /// [`HistoryError::ReadOnly`]).
    fn is_read_only(&self) -> bool;

    /// Stores captures, each with the key names of the ConfigMaps and
    /// Secrets its pod referenced, in one transaction. A capture whose
    /// [`TerminationKey`] is already stored is not written again: it is
    /// reported as [`Inserted::Duplicate`] of the stored one (so a capture
    /// retried after a timeout is stored once). A key repeated within
    /// `cs` is stored once.
    fn insert_batch_with_keys(
        &self,
        cs: &[(&Capture, &[ConfigKeys])],
    ) -> Result<Vec<Inserted>, HistoryError>;

    /// [`Store::insert_batch_with_keys`] of one capture without key names.
    fn insert(&self, c: &Capture) -> Result<Inserted, HistoryError> {
        let mut v = self.insert_batch_with_keys(&[(c, &[])])?;
        v.pop().ok_or_else(|| HistoryError::Internal {
            detail: "an insert of one capture reported nothing".to_string(),
        })
    }

    /// [`Store::insert_batch_with_keys`] without key names.
    fn insert_batch(&self, cs: &[Capture]) -> Result<Vec<Inserted>, HistoryError> {
        let with: Vec<(&Capture, &[ConfigKeys])> = cs.iter().map(|c| (c, &[][..])).collect();
        self.insert_batch_with_keys(&with)
    }

    /// The key names stored with each of these captures (none for a capture
    /// stored without them).
    fn config_keys(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<ConfigKeys>>, HistoryError>;

    /// Whether a capture with this key is stored.
    fn contains(&self, k: &TerminationKey) -> Result<bool, HistoryError>;

    /// Every stored key of this handle's cluster (all keys when it has
    /// none), to warm a restarted watcher's dedup set.
    fn seen_keys(&self) -> Result<HashSet<TerminationKey>, HistoryError>;

    /// The captures that match every filter of `q`, newest first (by
    /// `observed_at`, then id), without their bundles, and without
    /// `diagnosis_json` unless [`Query::with_diagnosis`] is set.
    fn list(&self, q: &Query) -> Result<Vec<Record>, HistoryError>;

    /// One capture with its bundle and diagnosis.
    fn get(&self, id: u64) -> Result<Option<Record>, HistoryError>;

    /// One capture's bundle (`.tar.gz` bytes), when it has one.
    fn bundle(&self, id: u64) -> Result<Option<Vec<u8>>, HistoryError>;

    /// Removes this handle's cluster's oldest captures until every limit of
    /// `r` holds for that cluster; `now` anchors [`Retention::max_age`].
    fn prune(&self, r: &Retention, now: Timestamp) -> Result<PruneStats, HistoryError>;

    /// Records that this handle's cluster's watcher reported every
    /// termination up to `at`.
    fn set_checkpoint(&self, at: Timestamp) -> Result<(), HistoryError>;

    /// The last [`Store::set_checkpoint`] of this handle's cluster.
    fn checkpoint(&self) -> Result<Option<Timestamp>, HistoryError>;

    /// Drops the baselines of the `forget` pods and, when `keep` is given,
    /// of every pod not in it; then raises containers' baselines (never
    /// lowers one). `set` is (pod UID, container, restart count).
    fn update_baselines(
        &self,
        set: &[(String, String, i32)],
        forget: &HashSet<String>,
        keep: Option<&HashSet<String>>,
    ) -> Result<(), HistoryError>;

    /// Every container's baseline, by (pod UID, container).
    fn baselines(&self) -> Result<HashMap<(String, String), i32>, HistoryError>;

    /// Counts, sizes and time span of this handle's cluster's captures (of
    /// all when it has none).
    fn stats(&self) -> Result<Stats, HistoryError>;

    /// The captures matching `q` (its `limit` and `with_diagnosis` aside),
    /// counted per group: which clusters, namespaces, workloads, causes or
    /// nodes crash most, each group with its causes. Most captures first.
    fn group(&self, q: &Query, by: GroupBy) -> Result<Vec<Group>, HistoryError>;

    /// The (cluster, workload, cause) triples among the captures matching
    /// `q` whose first capture in the whole history came at or after
    /// `since`: the causes that are new, not ones that have been with a
    /// workload for a month. Newest first.
    fn new_causes(&self, q: &Query, since: Since) -> Result<Vec<NewCause>, HistoryError>;

    /// The spool's state when this store queues captures locally while its
    /// database is unreachable ([`crate::SpoolingStore`]); `None` otherwise.
    fn spool(&self) -> Option<SpoolStats> {
        None
    }
}

/// What [`Store::group`] groups by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Cluster,
    Namespace,
    /// (namespace, owner kind, owner); a capture with no owner is grouped
    /// under its pod name.
    Workload,
    Cause,
    Node,
}

impl GroupBy {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Cluster => "cluster",
            GroupBy::Namespace => "namespace",
            GroupBy::Workload => "workload",
            GroupBy::Cause => "cause",
            GroupBy::Node => "node",
        }
    }
}

impl std::str::FromStr for GroupBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "cluster" => GroupBy::Cluster,
            "namespace" => GroupBy::Namespace,
            "workload" => GroupBy::Workload,
            "cause" => GroupBy::Cause,
            "node" => GroupBy::Node,
            other => {
                return Err(format!(
                    "unknown group {other:?}: expected cluster, namespace, workload, cause or node"
                ));
            }
        })
    }
}

/// One group of [`Store::group`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The group's value: a cluster name, a namespace, `namespace/Kind/name`
    /// for a workload, a cause id, a node name; `""` for captures without
    /// one (no cause, no node).
    pub key: String,
    pub captures: u64,
    /// Distinct pods (by UID) among them.
    pub pods: u64,
    pub first: Timestamp,
    pub last: Timestamp,
    /// The group's captures by cause id, most first (`""`: no cause).
    pub causes: Vec<(String, u64)>,
}

/// Where [`Store::new_causes`] starts counting as new.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Since {
    At(Timestamp),
    /// The first capture of a pod of this rollout revision (a pod's
    /// `pod-template-hash` or `controller-revision-hash`, see
    /// [`Capture::revision`]) among the captures matching the query.
    Revision(String),
}

/// One row of [`Store::new_causes`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NewCause {
    pub cluster: String,
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub cause: String,
    pub first_seen: Timestamp,
    pub captures: u64,
}

/// The local spool of a [`crate::SpoolingStore`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SpoolStats {
    /// Captures waiting for the database.
    pub depth: u64,
    /// The `observed_at` of the oldest waiting capture (captures are
    /// spooled right after they are observed): the spool's age.
    pub oldest: Option<Timestamp>,
    /// Captures not kept because the spool was full, since this process
    /// started.
    pub dropped: u64,
    /// Captures moved from the spool into the database since this process
    /// started.
    pub drained: u64,
    /// Whether the last attempt to reach the database failed.
    pub database_down: bool,
}
