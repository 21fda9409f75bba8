//! The records kept in the history, and the shapes of queries and limits.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

/// Identifies one container termination: the same pod (by UID, so that a
/// recreated pod of the same name is another pod), the same container and the
/// same restart count is the same crash, however many times it is observed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TerminationKey {
    /// The cluster the pod ran in (`crashdoc watch --cluster`); `""` in
    /// captures of versions that did not record it. Two clusters' pods are
    /// different pods even with the same UID.
    #[serde(default)]
    pub cluster: String,
    pub pod_uid: String,
    pub container: String,
    pub restart_count: i32,
}

impl TerminationKey {
    pub fn new(
        pod_uid: impl Into<String>,
        container: impl Into<String>,
        restart_count: i32,
    ) -> Self {
        TerminationKey {
            cluster: String::new(),
            pod_uid: pod_uid.into(),
            container: container.into(),
            restart_count,
        }
    }

    /// The same key in the named cluster.
    pub fn in_cluster(mut self, cluster: impl Into<String>) -> Self {
        self.cluster = cluster.into();
        self
    }
}

/// How much evidence a capture holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureKind {
    /// Everything the collector asks for was captured.
    Full,
    /// A bundle was captured, but some evidence is missing (see [`Capture::missing`]).
    Partial,
    /// Only the container status was seen (the pod was gone, or the API refused
    /// the rest); there is no bundle.
    StatusOnly,
}

impl CaptureKind {
    /// The serialized name: `full`, `partial` or `status_only`.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureKind::Full => "full",
            CaptureKind::Partial => "partial",
            CaptureKind::StatusOnly => "status_only",
        }
    }
}

/// One observed container termination, with its diagnosis and evidence.
///
/// `bundle` is not part of the serde form (it is binary and can be tens of
/// megabytes): the store keeps it apart, [`crate::Store::get`] and
/// [`crate::Store::bundle`] return it, and [`crate::Store::list`] never loads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    pub key: TerminationKey,
    pub namespace: String,
    pub pod: String,
    /// Top workload kind, e.g. `Deployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_kind: Option<String>,
    /// Top workload name, e.g. `web`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pod's rollout revision: its `pod-template-hash` label (a
    /// Deployment's ReplicaSet) or `controller-revision-hash` (a
    /// StatefulSet's or DaemonSet's revision), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The container's `state.terminated.finishedAt` (or `lastState`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// When crashdoc saw the termination; the history is ordered by this.
    pub observed_at: Timestamp,
    /// `terminated.reason`, e.g. `OOMKilled`, `Error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Top diagnosis cause id, e.g. `oom-killed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// `high`, `medium` or `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The full `crashdoc/v1` JSON of the diagnosis; opaque to this crate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis_json: Option<String>,
    pub kind: CaptureKind,
    /// Evidence that could not be captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Which run the terminated container's stored logs came from. Absent in
    /// status-only captures and in captures of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<CaptureLogs>,
    /// Milliseconds from the termination's `finishedAt` (whole seconds, the
    /// node's clock) to the end of its capture. Absent without a
    /// `finishedAt`, and in status-only captures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_delay_ms: Option<i64>,
    /// The crashdoc bundle as `.tar.gz` bytes; opaque to this crate. `None`
    /// for [`CaptureKind::StatusOnly`], and in [`crate::Store::list`] results.
    #[serde(skip)]
    pub bundle: Option<Vec<u8>>,
}

/// Which run a capture's logs of the terminated container came from: the
/// terminated run itself (by its container ID), or a later one when the
/// kubelet had moved on (the bundle's `log-runs.json` has the details).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureLogs {
    /// The terminated run's container ID, from the status that reported the
    /// termination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The container ID of the run the stored log of the container came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The bundle file holding the terminated run's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `true`: the stored log is the terminated run's own, checked against
    /// the pod read again after it; `false`: that run's output was
    /// overwritten, or the log is another run's. Absent: it could not be
    /// checked (no container IDs in the status, or the pod could not be
    /// read again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<bool>,
}

/// The key names of one ConfigMap or Secret a captured pod referenced, as
/// they were at that capture: names only, never values. Kept beside each
/// capture so that `crashdoc history` can say when a key disappeared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigKeys {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    pub name: String,
    /// `Some(false)`: it did not exist; `None`: it could not be read.
    #[serde(default)]
    pub exists: Option<bool>,
    /// Its key names, sorted.
    #[serde(default)]
    pub keys: Vec<String>,
    /// When it last changed (its newest managedFields time, else its
    /// creation), RFC 3339, as the capture read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

/// A stored capture and its id (ids grow with each insert and are never reused).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub id: u64,
    /// `capture.bundle` is `None` in [`crate::Store::list`] results.
    pub capture: Capture,
    /// Size of the stored bundle in bytes (0 when there is none), known
    /// without loading it.
    pub bundle_len: u64,
}

/// What [`crate::Store::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inserted {
    /// Stored under this new id.
    New(u64),
    /// The key was already stored, under this id; nothing was written.
    Duplicate(u64),
    /// Not stored yet: the database was unreachable, so a
    /// [`crate::SpoolingStore`] queued the capture in its local spool (or
    /// found it already queued there). It gets an id when the spool drains
    /// into the database; until then it is in no listing. See the module
    /// `spool` docs for when a spooled capture can still be lost.
    Spooled,
    /// Not stored at all: the database was unreachable and the spool was
    /// full, so the capture was dropped (and counted in
    /// [`crate::SpoolStats::dropped`]).
    Dropped,
}

impl Inserted {
    /// The id of the stored capture, new or not; `None` when it is not in
    /// the database (spooled, or dropped).
    pub fn id(self) -> Option<u64> {
        match self {
            Inserted::New(id) | Inserted::Duplicate(id) => Some(id),
            Inserted::Spooled | Inserted::Dropped => None,
        }
    }

    /// Whether this call wrote the capture to the database.
    pub fn is_new(self) -> bool {
        matches!(self, Inserted::New(_))
    }

    /// Whether the capture is kept: in the database (new or already
    /// there) or in the spool.
    pub fn is_kept(self) -> bool {
        !matches!(self, Inserted::Dropped)
    }
}

/// Limits applied by [`crate::Store::prune`]; each one that is set must hold
/// afterwards, and the oldest captures (by `observed_at`) go first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    /// Remove captures observed more than this long before `now`. A negative
    /// duration counts as zero.
    pub max_age: Option<SignedDuration>,
    /// Keep at most this many captures.
    pub max_captures: Option<u64>,
    /// Keep at most this many stored bytes (bundles plus metadata records,
    /// see [`Stats::stored_bytes`]).
    pub max_bytes: Option<u64>,
}

/// A filter for [`crate::Store::list`]. Every field that is set must match
/// (exactly, case-sensitively); the results are newest first by
/// `observed_at`, then by id. `owner` or `owner_kind` set to an empty string
/// selects the captures that have none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// The cluster ([`TerminationKey::cluster`]).
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub pod_uid: Option<String>,
    pub owner_kind: Option<String>,
    pub owner: Option<String>,
    pub container: Option<String>,
    /// Observed at or after this instant.
    pub since: Option<Timestamp>,
    /// Observed strictly before this instant.
    pub until: Option<Timestamp>,
    /// At most this many records (the newest ones).
    pub limit: Option<usize>,
    /// Also load each record's `diagnosis_json` (a few KiB each; left out by
    /// default, since a listing shows the summary fields).
    pub with_diagnosis: bool,
}

/// What [`crate::Store::prune`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneStats {
    pub removed: u64,
    /// Stored bytes (bundles plus metadata records) of the removed captures.
    /// The file does not shrink: redb reuses the freed pages for later captures.
    pub bytes_freed: u64,
}

/// The size and span of the history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub captures: u64,
    /// Sum of the bundle sizes.
    pub bundle_bytes: u64,
    /// Bundles plus the JSON metadata records: what [`Retention::max_bytes`] bounds.
    pub stored_bytes: u64,
    /// Size of the database file on disk, when it could be read.
    pub file_bytes: Option<u64>,
    /// Earliest and latest `observed_at`.
    pub oldest: Option<Timestamp>,
    pub newest: Option<Timestamp>,
}
