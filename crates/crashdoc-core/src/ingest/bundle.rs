//! crashdoc's own evidence bundle: what `crashdoc capture` writes and
//! `crashdoc analyze` reads back. See `docs/bundle.md` for the layout.
//!
//! ```text
//! manifest.json                  {"format": "crashdoc-bundle", "version": 1, "pods": [...]}
//! pods/NAMESPACE/POD/pod.json    the Pod object
//! pods/NAMESPACE/POD/events.json EventList of the pod (by uid)
//! pods/NAMESPACE/POD/logs-previous.CONTAINER.txt, logs.CONTAINER.txt
//! pods/NAMESPACE/POD/replicaset.json, deployment.json, ...  owner chain
//! pods/NAMESPACE/POD/node.json, pvc.json
//! pods/NAMESPACE/POD/references.json  ConfigMaps/Secrets: key names and sizes only
//! pods/NAMESPACE/POD/missing.json     what the collector could not read, and why
//! pods/NAMESPACE/POD/log-runs.json    which run of its container each log file holds
//! ```

use super::{Doc, Evidence, InputError, Parts, assemble, read_folder_into};
use crate::model::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

pub const FORMAT: &str = "crashdoc-bundle";
pub const VERSION: u32 = 1;

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    #[serde(default)]
    pub created: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub context: Option<String>,
    pub pods: Vec<ManifestPod>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestPod {
    pub namespace: String,
    pub name: String,
    /// Folder of the pod's files, relative to the bundle root.
    pub path: String,
}

/// The names of the files in a bundle's pod folder, shared by the writer
/// (crashdoc-kube's sources) and the reader ([`super::kind_of_file`]).
pub mod file {
    pub const POD: &str = "pod.json";
    pub const EVENTS: &str = "events.json";
    pub const REPLICASET: &str = "replicaset.json";
    pub const DEPLOYMENT: &str = "deployment.json";
    pub const STATEFULSET: &str = "statefulset.json";
    pub const DAEMONSET: &str = "daemonset.json";
    pub const JOB: &str = "job.json";
    pub const NODE: &str = "node.json";
    pub const PVC: &str = "pvc.json";
    pub const TOP: &str = "top-pod.txt";
    pub const REFERENCES: &str = "references.json";
    pub const MISSING: &str = "missing.json";
    /// The owning Deployment's ReplicaSets, every revision: a `kind: List`
    /// as `kubectl get rs -l SELECTOR -o json` prints it (issue 11).
    pub const REPLICASETS: &str = "replicasets.json";
    /// The owning StatefulSet's or DaemonSet's ControllerRevisions: a
    /// `kind: List` as `kubectl get controllerrevisions -l SELECTOR -o json`.
    pub const CONTROLLER_REVISIONS: &str = "controllerrevisions.json";
    /// Every pod of the workload, of every revision: a `kind: List` as
    /// `kubectl get pods -l SELECTOR -o json` prints it.
    pub const WORKLOAD_PODS: &str = "workload-pods.json";
    /// The nodes those pods run on: a `kind: List` of Node objects.
    pub const NODES: &str = "nodes.json";
    /// `kubectl rollout history KIND/NAME [--revision=N]` as printed.
    pub const ROLLOUT_HISTORY: &str = "rollout-history.txt";
    /// Which run of its container each log file holds ([`super::LogRuns`]).
    /// Not named `logs...`: every name with that prefix is a log.
    pub const LOG_RUNS: &str = "log-runs.json";
    /// Prefix of a container's current log: `logs.CONTAINER.txt`.
    pub const LOGS: &str = "logs";
    /// Prefix of a container's previous log: `logs-previous.CONTAINER.txt`.
    pub const LOGS_PREVIOUS: &str = "logs-previous";
}

/// One file of a bundle's pod folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleFile {
    Pod,
    Events,
    ReplicaSet,
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
    Node,
    Pvc,
    /// Usage as `kubectl top pod --containers` prints it.
    Top,
    References,
    Missing,
    /// Every ReplicaSet of the owning Deployment (issue 11).
    ReplicaSets,
    /// Every ControllerRevision of the owning StatefulSet or DaemonSet.
    ControllerRevisions,
    /// Every pod of the workload, all revisions.
    WorkloadPods,
    /// The nodes the workload's pods run on.
    Nodes,
    /// `kubectl rollout history KIND/NAME [--revision=N]` output.
    RolloutHistory,
    /// Which run of its container each log file holds.
    LogRuns,
    Logs {
        container: String,
        previous: bool,
    },
}

impl BundleFile {
    /// Every file kind with a fixed name (logs excluded).
    pub const FIXED: [BundleFile; 18] = [
        BundleFile::Pod,
        BundleFile::Events,
        BundleFile::ReplicaSet,
        BundleFile::Deployment,
        BundleFile::StatefulSet,
        BundleFile::DaemonSet,
        BundleFile::Job,
        BundleFile::Node,
        BundleFile::Pvc,
        BundleFile::Top,
        BundleFile::References,
        BundleFile::Missing,
        BundleFile::ReplicaSets,
        BundleFile::ControllerRevisions,
        BundleFile::WorkloadPods,
        BundleFile::Nodes,
        BundleFile::RolloutHistory,
        BundleFile::LogRuns,
    ];

    /// The files of a workload's revisions (issue 11), written by
    /// crashdoc-kube's `revisions` source (all in [`Self::FIXED`] too; the
    /// reader classifies them as `FileKind::Rollout`).
    pub const REVISIONS: [BundleFile; 4] = [
        BundleFile::ReplicaSets,
        BundleFile::ControllerRevisions,
        BundleFile::WorkloadPods,
        BundleFile::Nodes,
    ];

    /// The file name inside the pod folder.
    pub fn name(&self) -> String {
        match self {
            BundleFile::Logs {
                container,
                previous,
            } => format!(
                "{}.{container}.txt",
                if *previous {
                    file::LOGS_PREVIOUS
                } else {
                    file::LOGS
                }
            ),
            fixed => fixed.fixed_name().unwrap_or_default().to_string(),
        }
    }

    fn fixed_name(&self) -> Option<&'static str> {
        Some(match self {
            BundleFile::Pod => file::POD,
            BundleFile::Events => file::EVENTS,
            BundleFile::ReplicaSet => file::REPLICASET,
            BundleFile::Deployment => file::DEPLOYMENT,
            BundleFile::StatefulSet => file::STATEFULSET,
            BundleFile::DaemonSet => file::DAEMONSET,
            BundleFile::Job => file::JOB,
            BundleFile::Node => file::NODE,
            BundleFile::Pvc => file::PVC,
            BundleFile::Top => file::TOP,
            BundleFile::References => file::REFERENCES,
            BundleFile::Missing => file::MISSING,
            BundleFile::ReplicaSets => file::REPLICASETS,
            BundleFile::ControllerRevisions => file::CONTROLLER_REVISIONS,
            BundleFile::WorkloadPods => file::WORKLOAD_PODS,
            BundleFile::Nodes => file::NODES,
            BundleFile::RolloutHistory => file::ROLLOUT_HISTORY,
            BundleFile::LogRuns => file::LOG_RUNS,
            BundleFile::Logs { .. } => return None,
        })
    }

    /// Whether a file name is a log of the bundle (current or previous).
    pub fn is_log(name: &str) -> bool {
        name.starts_with(file::LOGS)
    }
}

/// What a [`Reference`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferenceKind {
    ConfigMap,
    Secret,
    Service,
    ServiceAccount,
    /// A kind this crashdoc does not know (a newer bundle): read, not checked.
    #[serde(other)]
    Other,
}

impl ReferenceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceKind::ConfigMap => "ConfigMap",
            ReferenceKind::Secret => "Secret",
            ReferenceKind::Service => "Service",
            ReferenceKind::ServiceAccount => "ServiceAccount",
            ReferenceKind::Other => "Other",
        }
    }
}

impl std::fmt::Display for ReferenceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `references.json`: an object the pod depends on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reference {
    pub kind: ReferenceKind,
    pub name: String,
    /// False when the object does not exist; None when it could not be read.
    pub exists: Option<bool>,
    /// Key name -> size of the value in bytes. Never the value.
    #[serde(default)]
    pub keys: BTreeMap<String, Option<u64>>,
    /// When the object last changed: the newest `metadata.managedFields[].time`
    /// (RFC 3339), else its `creationTimestamp`. Absent in older bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

/// `log-runs.json`: which run of its container each log file holds, and the
/// run each container's diagnosis is about (its last termination) with the
/// file that holds that run's output. Written by the collector; a bundle
/// without it is read by the log files' names alone (docs/bundle.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRuns {
    #[serde(default)]
    pub files: Vec<LogRun>,
    #[serde(default)]
    pub terminations: Vec<TerminatedRun>,
}

/// One log file of the bundle and the run it was read from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRun {
    /// The file in the pod folder (`logs-previous.app.txt`).
    pub file: String,
    pub container: String,
    /// Read with `kubectl logs --previous` (else `kubectl logs`).
    pub previous: bool,
    /// The container ID of the run the kubelet serves this request from, by
    /// the pod status the request was made on. Absent: that status names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// Where that status shows the run: `running`, `terminated`
    /// (`state.terminated`) or `lastState` (`lastState.terminated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The container's `restartCount` in that status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_count: Option<i32>,
    /// The run's `finishedAt`, when it had ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// `true`: the pod, read again after the log, still resolved this request
    /// to `container_id`, so the file holds that run. `false`: the kubelet
    /// had moved on to a later run by then: the file may hold either.
    /// Absent: not checked (no container ID, or the pod could not be read
    /// again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
}

/// A container's last termination: the run its diagnosis is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminatedRun {
    pub container: String,
    /// The run's container ID (`lastState.terminated.containerID` or
    /// `state.terminated.containerID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The restart count the termination is known by (`crashdoc watch`'s
    /// key: the restart count its container was created with;
    /// `restartCount` in `state.terminated` and in the back-off's
    /// `lastState`, `restartCount - 1` in `lastState` beside a running
    /// container: `crashdoc_kube::runs::last_state_run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The log file holding this run's output. Absent: no log request
    /// serves it any more (overwritten by later runs; `missing.json` says
    /// so), or its container ID is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Whether `file` was checked to hold this run (see [`LogRun::verified`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
}

/// Give each log the run `log-runs.json` says it holds: the file holding a
/// container's last termination is its crashed run
/// ([`crate::scan::LogKind::Previous`]) whatever its name; the container's
/// other described files are its current run when they were read from the
/// running container (and not found moved on), else another run of it
/// ([`crate::scan::LogKind::Other`], weaker evidence, with a note). Only
/// terminations with a container ID decide; other containers' logs, and
/// every log of a bundle without the file, keep the kinds their names give.
/// Returns the notes.
pub fn relabel_logs(logs: &mut [crate::scan::LogScan], runs: &LogRuns) -> Vec<String> {
    use crate::scan::LogKind;
    let mut notes = Vec::new();
    for t in &runs.terminations {
        let Some(id) = &t.container_id else {
            continue;
        };
        for l in logs.iter_mut() {
            let Some(meta) = runs
                .files
                .iter()
                .find(|f| f.file == l.file && f.container == t.container)
            else {
                continue;
            };
            l.kind = if t.file.as_deref() == Some(meta.file.as_str()) {
                LogKind::Previous
            } else if meta.state.as_deref() == Some("running") && meta.verified != Some(false) {
                LogKind::Current
            } else {
                notes.push(format!(
                    "{}: another run of {} than its last termination ({id}); read as other text, not as that run's log",
                    l.file, t.container
                ));
                LogKind::Other
            };
        }
    }
    notes
}

fn parse_manifest(root: &Path, text: &str) -> Result<Manifest, InputError> {
    let m: Manifest = serde_json::from_str(text)
        .map_err(|e| InputError::BadBundle(root.to_path_buf(), format!("manifest.json: {e}")))?;
    if m.format != FORMAT {
        return Err(InputError::BadBundle(
            root.to_path_buf(),
            format!("manifest format is `{}`, not `{FORMAT}`", m.format),
        ));
    }
    if m.version > VERSION {
        return Err(InputError::BadBundle(
            root.to_path_buf(),
            format!(
                "bundle version {} is newer than this crashdoc reads ({VERSION}); upgrade crashdoc",
                m.version
            ),
        ));
    }
    Ok(m)
}

/// Read a bundle folder.
pub fn read_dir(root: &Path) -> Result<Evidence, InputError> {
    let text =
        std::fs::read_to_string(root.join("manifest.json")).map_err(|source| InputError::Io {
            path: root.join("manifest.json"),
            source,
        })?;
    let manifest = parse_manifest(root, &text)?;
    let mut ev = Evidence::default();
    for mp in &manifest.pods {
        let dir = root.join(&mp.path);
        if !dir.starts_with(root) || mp.path.contains("..") {
            ev.notes
                .push(format!("skipped pod path {} outside the bundle", mp.path));
            continue;
        }
        let mut parts = Parts::default();
        read_folder_into(&dir, &mut parts)?;
        push_pods(&mut ev, parts, mp);
    }
    Ok(ev)
}

fn push_pods(ev: &mut Evidence, parts: Parts, mp: &ManifestPod) {
    let mut e = assemble(parts);
    for p in &mut e.pods {
        p.namespace.get_or_insert_with(|| mp.namespace.clone());
        p.name.get_or_insert_with(|| mp.name.clone());
    }
    for (_, m) in e.collector_missing {
        ev.collector_missing.push((mp.name.clone(), m));
    }
    ev.pods.extend(e.pods);
    ev.notes.extend(e.notes);
}

/// Read a bundle packed as `.tar.gz`, streaming each entry.
pub fn read_tar_gz(path: &Path) -> Result<Evidence, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut manifest: Option<Manifest> = None;
    let mut by_dir: BTreeMap<String, Parts> = BTreeMap::new();
    for entry in archive.entries().map_err(io)? {
        let entry = entry.map_err(io)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let p = entry
            .path()
            .map_err(io)?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        // A single top-level folder wrapping the bundle is allowed.
        let (dir, name) = match p.rsplit_once('/') {
            Some((d, n)) => (d.to_string(), n.to_string()),
            None => (String::new(), p.clone()),
        };
        if name == "manifest.json" {
            let mut s = String::new();
            entry.take(1 << 20).read_to_string(&mut s).map_err(io)?;
            manifest = Some(parse_manifest(path, &s)?);
            continue;
        }
        let size = entry.header().size().unwrap_or(0);
        let parts = by_dir.entry(dir).or_default();
        if let Err(e) = parts.add_file(&name, size, entry) {
            parts.notes.push(format!("could not read {p}: {e}"));
        }
    }
    let manifest = manifest.ok_or_else(|| {
        InputError::BadBundle(path.to_path_buf(), "no manifest.json in the archive".into())
    })?;
    let mut ev = Evidence::default();
    for mp in &manifest.pods {
        let key = by_dir
            .keys()
            .find(|k| {
                k.as_str() == mp.path.trim_end_matches('/')
                    || k.ends_with(&format!("/{}", mp.path.trim_end_matches('/')))
            })
            .cloned();
        match key.and_then(|k| by_dir.remove(&k)) {
            Some(parts) => push_pods(&mut ev, parts, mp),
            None => ev.notes.push(format!(
                "manifest lists {}/{} but the archive has no files for it",
                mp.namespace, mp.name
            )),
        }
    }
    Ok(ev)
}

/// `references.json`, `missing.json` and `log-runs.json` inside a bundle's
/// pod folder.
pub fn read_meta(parts: &mut Parts, doc: &Doc) {
    if doc.name.eq_ignore_ascii_case(file::LOG_RUNS) {
        match serde_json::from_str::<LogRuns>(&doc.text) {
            Ok(r) => parts.log_runs = Some(r),
            Err(e) => parts.notes.push(format!("{}: {e}", doc.name)),
        }
        return;
    }
    if doc.name.eq_ignore_ascii_case(file::MISSING) {
        match serde_json::from_str::<Vec<Missing>>(&doc.text) {
            Ok(m) => parts.missing.extend(m),
            Err(e) => parts.notes.push(format!("{}: {e}", doc.name)),
        }
        return;
    }
    match serde_json::from_str::<Vec<Reference>>(&doc.text) {
        Ok(refs) => {
            for (i, r) in refs.iter().enumerate() {
                if matches!(r.kind, ReferenceKind::ConfigMap | ReferenceKind::Secret) {
                    parts.rollout.config.push(super::rollout::ConfigTime {
                        kind: r.kind.as_str().to_string(),
                        name: r.name.clone(),
                        exists: r.exists,
                        keys: r.keys.keys().cloned().collect(),
                        changed: r.changed.clone(),
                        cite: Cite::new(
                            SourceKind::Object,
                            format!("{}[{i}].changed", doc.name),
                            format!(
                                "{} {} changed {}",
                                r.kind,
                                r.name,
                                r.changed.as_deref().unwrap_or("(unknown)")
                            ),
                        ),
                    });
                }
            }
            for (i, r) in refs.into_iter().enumerate() {
                let kind = match r.kind {
                    ReferenceKind::Secret => RefKind::Secret,
                    ReferenceKind::ConfigMap => RefKind::ConfigMap,
                    _ => {
                        let text = format!(
                            "{} {} exists: {}",
                            r.kind,
                            r.name,
                            r.exists.map_or("unknown".to_string(), |b| b.to_string())
                        );
                        let cite =
                            Cite::new(SourceKind::Object, format!("{}[{i}]", doc.name), text);
                        parts.object_refs.push(ObjectRef {
                            kind: r.kind.as_str().to_string(),
                            name: r.name,
                            exists: r.exists,
                            cite,
                        });
                        continue;
                    }
                };
                let text = match r.exists {
                    Some(false) => format!("{} {} does not exist", r.kind, r.name),
                    _ => format!(
                        "{} {} keys: {}",
                        r.kind,
                        r.name,
                        r.keys.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                };
                let cite = Cite::new(SourceKind::Object, format!("{}[{i}]", doc.name), text);
                if r.exists == Some(false) {
                    parts.notes.push(format!(
                        "{} {} referenced by the pod does not exist",
                        r.kind, r.name
                    ));
                }
                parts.config_objects.push(ConfigObject {
                    kind,
                    name: r.name,
                    keys: r.keys.into_iter().collect(),
                    cite,
                });
            }
        }
        Err(e) => parts.notes.push(format!("{}: {e}", doc.name)),
    }
}

/// One pod's files for a bundle: name inside the pod folder, and content.
#[derive(Debug, Clone, Default)]
pub struct PodFiles {
    pub namespace: String,
    pub name: String,
    pub files: Vec<(String, Vec<u8>)>,
}

impl PodFiles {
    pub fn path(&self) -> String {
        format!("pods/{}/{}", self.namespace, self.name)
    }
}

fn manifest_for(pods: &[PodFiles], context: Option<&str>, created: &str) -> Manifest {
    Manifest {
        format: FORMAT.into(),
        version: VERSION,
        created: Some(created.to_string()),
        tool: Some(format!("crashdoc {}", env!("CARGO_PKG_VERSION"))),
        context: context.map(str::to_string),
        pods: pods
            .iter()
            .map(|p| ManifestPod {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                path: p.path(),
            })
            .collect(),
    }
}

fn safe_component(s: &str) -> bool {
    !s.is_empty() && !s.contains('/') && !s.contains('\\') && s != "." && s != ".."
}

/// Write a bundle folder. Refuses names that would escape it.
pub fn write_dir(
    root: &Path,
    pods: &[PodFiles],
    context: Option<&str>,
    created: &str,
) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    for p in pods {
        if !safe_component(&p.namespace) || !safe_component(&p.name) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("unsafe pod name {}/{}", p.namespace, p.name),
            ));
        }
        let dir = root.join(p.path());
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in &p.files {
            if !safe_component(name) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("unsafe file name {name}"),
                ));
            }
            std::fs::write(dir.join(name), bytes)?;
        }
    }
    let m = serde_json::to_vec_pretty(&manifest_for(pods, context, created))
        .map_err(std::io::Error::other)?;
    std::fs::write(root.join("manifest.json"), m)
}

/// Write a bundle to a folder, or a `.tar.gz` when the path ends so (or
/// `.tgz`), stamped with the current time as `@SECONDS` (what `crashdoc
/// capture` and `diagnose --save` write).
pub fn write(path: &Path, pods: &[PodFiles], context: Option<&str>) -> std::io::Result<()> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let created = format!("@{secs}");
    let name = path.to_string_lossy();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        write_tar_gz(path, pods, context, &created)
    } else {
        write_dir(path, pods, context, &created)
    }
}

/// Write a bundle as `.tar.gz`.
pub fn write_tar_gz(
    path: &Path,
    pods: &[PodFiles],
    context: Option<&str>,
    created: &str,
) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    write_tar_gz_to(f, pods, context, created)?.sync_all()
}

/// A bundle as `.tar.gz` bytes, in memory (what `crashdoc watch` stores).
pub fn tar_gz_bytes(
    pods: &[PodFiles],
    context: Option<&str>,
    created: &str,
) -> std::io::Result<Vec<u8>> {
    write_tar_gz_to(Vec::new(), pods, context, created)
}

/// Write a bundle as `.tar.gz` into any writer, and give the writer back.
pub fn write_tar_gz_to<W: std::io::Write>(
    out: W,
    pods: &[PodFiles],
    context: Option<&str>,
    created: &str,
) -> std::io::Result<W> {
    let gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut add = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, bytes)
    };
    let m = serde_json::to_vec_pretty(&manifest_for(pods, context, created))
        .map_err(std::io::Error::other)?;
    add("manifest.json", &m)?;
    for p in pods {
        if !safe_component(&p.namespace) || !safe_component(&p.name) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("unsafe pod name {}/{}", p.namespace, p.name),
            ));
        }
        for (name, bytes) in &p.files {
            if !safe_component(name) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("unsafe file name {name}"),
                ));
            }
            add(&format!("{}/{name}", p.path()), bytes)?;
        }
    }
    tar.into_inner()?.finish()
}

/// Read bundle files already in memory (a live collection) as evidence, so
/// that a live diagnosis runs exactly what `analyze` runs on the bundle.
pub fn read_memory(pods: &[PodFiles]) -> Evidence {
    let mut ev = Evidence::default();
    for p in pods {
        let mut parts = Parts::default();
        for (name, bytes) in &p.files {
            if let Err(e) = parts.add_file(name, bytes.len() as u64, &bytes[..]) {
                parts.notes.push(format!("could not read {name}: {e}"));
            }
        }
        let mp = ManifestPod {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            path: p.path(),
        };
        push_pods(&mut ev, parts, &mp);
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let pod = PodFiles {
            namespace: "ml".into(),
            name: "web-1".into(),
            files: vec![
                ("pod.json".into(), br#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"ml"},"status":{"containerStatuses":[{"name":"web","restartCount":2,"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}"#.to_vec()),
                ("logs-previous.web.txt".into(), b"starting\n".to_vec()),
            ],
        };
        let dir = std::env::temp_dir().join(format!("crashdoc-bundle-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_dir(
            &dir,
            std::slice::from_ref(&pod),
            Some("ctx"),
            "2024-01-01T00:00:00Z",
        )
        .unwrap();
        let a = read_dir(&dir).unwrap();
        let tgz = dir.join("b.tar.gz");
        write_tar_gz(
            &tgz,
            std::slice::from_ref(&pod),
            None,
            "2024-01-01T00:00:00Z",
        )
        .unwrap();
        let b = read_tar_gz(&tgz).unwrap();
        let c = read_memory(std::slice::from_ref(&pod));
        for ev in [&a, &b, &c] {
            assert_eq!(ev.pods.len(), 1);
            let p = &ev.pods[0];
            assert_eq!(p.name.as_deref(), Some("web-1"));
            assert!(
                p.containers[0]
                    .last_termination()
                    .unwrap()
                    .reason_is("OOMKilled")
            );
            assert_eq!(p.logs.len(), 1);
        }
        let bad = PodFiles {
            namespace: "..".into(),
            name: "x".into(),
            files: vec![],
        };
        assert!(write_dir(&dir.join("bad"), &[bad], None, "").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_bundle_file_is_read_back_as_its_kind() {
        use crate::ingest::rollout::RolloutFile;
        use crate::ingest::{FileKind, kind_of_file};
        use crate::scan::LogKind;
        for f in BundleFile::FIXED {
            let want = match f {
                BundleFile::Top => FileKind::Top,
                BundleFile::References | BundleFile::Missing | BundleFile::LogRuns => {
                    FileKind::BundleMeta
                }
                BundleFile::ReplicaSets => FileKind::Rollout(RolloutFile::ReplicaSets),
                BundleFile::ControllerRevisions => {
                    FileKind::Rollout(RolloutFile::ControllerRevisions)
                }
                BundleFile::WorkloadPods => FileKind::Rollout(RolloutFile::WorkloadPods),
                BundleFile::Nodes => FileKind::Rollout(RolloutFile::Nodes),
                BundleFile::RolloutHistory => FileKind::Rollout(RolloutFile::History),
                _ => FileKind::Objects,
            };
            assert_eq!(kind_of_file(&f.name()), Some(want), "{}", f.name());
        }
        let log = BundleFile::Logs {
            container: "Web".into(),
            previous: true,
        };
        assert_eq!(log.name(), "logs-previous.Web.txt");
        assert_eq!(
            kind_of_file(&log.name()),
            Some(FileKind::Logs {
                kind: LogKind::Previous,
                container: Some("Web".into())
            })
        );
        let current = BundleFile::Logs {
            container: "web".into(),
            previous: false,
        };
        assert!(matches!(
            kind_of_file(&current.name()),
            Some(FileKind::Logs {
                kind: LogKind::Current,
                ..
            })
        ));
        assert!(BundleFile::is_log(&current.name()) && !BundleFile::is_log(file::POD));
    }

    /// A pod folder as the collector writes it right after a crash:
    /// `kubectl logs` read the crash, `--previous` the run before it.
    fn just_crashed(log_runs: Option<&str>) -> PodFiles {
        let mut files = vec![
            ("pod.json".into(), br#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"ml"},"spec":{"containers":[{"name":"web"}]},"status":{"containerStatuses":[{"name":"web","restartCount":3,"containerID":"containerd://b","state":{"terminated":{"exitCode":1,"reason":"Error","containerID":"containerd://b"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error","containerID":"containerd://a"}}}]}}"#.to_vec()),
            ("logs.web.txt".into(), b"Error: listen EADDRINUSE: address already in use :::8080\n".to_vec()),
            ("logs-previous.web.txt".into(), b"Error: connect ECONNREFUSED 10.0.0.5:5432\n".to_vec()),
        ];
        if let Some(r) = log_runs {
            files.push((file::LOG_RUNS.into(), r.as_bytes().to_vec()));
        }
        PodFiles {
            namespace: "ml".into(),
            name: "web-1".into(),
            files,
        }
    }

    fn kinds(p: &PodFiles) -> (Vec<(String, crate::scan::LogKind)>, Vec<String>) {
        let ev = read_memory(std::slice::from_ref(p));
        let mut k: Vec<_> = ev.pods[0]
            .logs
            .iter()
            .map(|l| (l.file.clone(), l.kind))
            .collect();
        k.sort_by(|a, b| a.0.cmp(&b.0));
        (k, ev.notes)
    }

    const RUNS: &str = r#"{"files": [
        {"file": "logs.web.txt", "container": "web", "previous": false,
         "container_id": "containerd://b", "state": "terminated", "restart_count": 3, "verified": true},
        {"file": "logs-previous.web.txt", "container": "web", "previous": true,
         "container_id": "containerd://a", "state": "lastState", "restart_count": 3, "verified": true}],
        "terminations": [{"container": "web", "container_id": "containerd://b", "restart_count": 3,
         "file": "logs.web.txt", "verified": true}]}"#;

    #[test]
    fn log_runs_name_the_file_that_holds_the_crashed_run() {
        use crate::scan::LogKind::*;
        let (k, notes) = kinds(&just_crashed(Some(RUNS)));
        assert_eq!(
            k,
            [
                ("logs-previous.web.txt".to_string(), Other),
                ("logs.web.txt".to_string(), Previous)
            ]
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("logs-previous.web.txt: another run of web")),
            "{notes:?}"
        );
        let report = crate::diagnose::diagnose_all(&read_memory(&[just_crashed(Some(RUNS))]));
        assert_eq!(report.pods[0].diagnoses[0].cause.id(), "port-conflict");
    }

    #[test]
    fn near_miss_without_log_runs_the_names_decide_as_before() {
        use crate::scan::LogKind::*;
        let (k, notes) = kinds(&just_crashed(None));
        assert_eq!(
            k,
            [
                ("logs-previous.web.txt".to_string(), Previous),
                ("logs.web.txt".to_string(), Current)
            ]
        );
        assert!(!notes.iter().any(|n| n.contains("another run")));
        // Terminations without a container ID decide nothing either.
        let no_id = RUNS.replace(
            r#""terminations": [{"container": "web", "container_id": "containerd://b","#,
            r#""terminations": [{"container": "web","#,
        );
        assert_ne!(no_id, RUNS);
        assert_eq!(kinds(&just_crashed(Some(&no_id))).0, k);
        // A file the collector did not describe keeps its name's kind.
        let undescribed = RUNS.replace(
            r#""file": "logs-previous.web.txt", "container""#,
            r#""file": "logs-previous.other.txt", "container""#,
        );
        assert!(
            kinds(&just_crashed(Some(&undescribed)))
                .0
                .contains(&("logs-previous.web.txt".to_string(), Previous))
        );
    }

    #[test]
    fn an_overwritten_run_leaves_no_log_taken_for_the_crash() {
        use crate::scan::LogKind::*;
        let gone = RUNS
            .replace(
                r#""file": "logs.web.txt", "verified": true}]"#,
                r#""verified": null}]"#,
            )
            .replace(r#""verified": true},"#, r#""verified": false},"#);
        assert_ne!(gone, RUNS);
        let (k, _) = kinds(&just_crashed(Some(&gone)));
        assert!(k.iter().all(|(_, kind)| *kind == Other), "{k:?}");
        // The running container's checked log stays the current run.
        let running = RUNS
            .replace(r#""state": "terminated""#, r#""state": "running""#)
            .replace(
                r#""file": "logs.web.txt", "verified": true}]"#,
                r#""file": "logs-previous.web.txt", "verified": true}]"#,
            );
        assert_eq!(
            kinds(&just_crashed(Some(&running))).0,
            [
                ("logs-previous.web.txt".to_string(), Previous),
                ("logs.web.txt".to_string(), Current)
            ]
        );
    }

    #[test]
    fn log_runs_round_trip_and_old_fields_may_be_absent() {
        let r: LogRuns = serde_json::from_str(RUNS).unwrap();
        assert_eq!(r.terminations[0].file.as_deref(), Some("logs.web.txt"));
        let back: LogRuns = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let bare: LogRuns = serde_json::from_str("{}").unwrap();
        assert_eq!(bare, LogRuns::default());
    }

    #[test]
    fn reference_kinds_keep_the_bundle_format() {
        let text = r#"[{"kind":"ConfigMap","name":"a","exists":true,"keys":{"k":1}},
            {"kind":"Secret","name":"b","exists":false},
            {"kind":"Service","name":"db","exists":false},
            {"kind":"ServiceAccount","name":"default","exists":true},
            {"kind":"Ingress","name":"x","exists":null}]"#;
        let refs: Vec<Reference> = serde_json::from_str(text).unwrap();
        let kinds: Vec<ReferenceKind> = refs.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                ReferenceKind::ConfigMap,
                ReferenceKind::Secret,
                ReferenceKind::Service,
                ReferenceKind::ServiceAccount,
                ReferenceKind::Other
            ]
        );
        let v = serde_json::to_value(&refs[..4]).unwrap();
        assert_eq!(v[0]["kind"], "ConfigMap");
        assert_eq!(v[2]["kind"], "Service");
        assert_eq!(v[3]["kind"], "ServiceAccount");
    }

    #[test]
    fn missing_reads_old_bundles_and_keeps_its_hint_apart() {
        let old: Vec<Missing> =
            serde_json::from_str(r#"[{"what":"events","why":"forbidden"}]"#).unwrap();
        assert_eq!(old[0].hint, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("hint"));
        let new = Missing {
            what: "events".into(),
            why: "forbidden".into(),
            hint: Some("grant `list` on `events`".into()),
        };
        let v = serde_json::to_value(&new).unwrap();
        assert_eq!(v["why"], "forbidden");
        assert_eq!(v["hint"], "grant `list` on `events`");
    }
}
