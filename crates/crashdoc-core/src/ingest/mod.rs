//! Reading evidence: a folder of kubectl outputs, a `kubectl cluster-info
//! dump` tree, a pasted blob, or a crashdoc bundle (folder or `.tar.gz`).
//! All of them end as the same [`Evidence`], so every rule runs the same way
//! on each.

pub mod bundle;
pub mod describe;
pub mod dump;
pub mod fragments;
pub mod history;
pub mod objects;
pub mod paste;
pub mod rollout;
pub mod tables;
pub mod tolerant;

use crate::model::*;
use crate::scan::{Catalog, LogKind, LogScan};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A text document and where it came from (for citations).
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// The file name as cited (`describe-pod.txt`, `paste`).
    pub name: String,
    pub text: String,
    /// Lines before this text in the original file.
    pub line_offset: u64,
}

/// A document read whole from the file `name` (for tests).
#[cfg(test)]
pub(crate) fn doc(name: &str, text: &str) -> Doc {
    Doc {
        name: name.into(),
        text: text.into(),
        line_offset: 0,
    }
}

/// What an input file holds, decided by its name (or a paste section's
/// command or shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    Describe,
    GetPods,
    /// Kubernetes objects in YAML or JSON (pod, events, workloads, ...).
    Objects,
    Logs {
        kind: LogKind,
        container: Option<String>,
    },
    Events,
    Node,
    Pvc,
    /// `kubectl describe secret|configmap`: key names and sizes.
    DescribeData,
    Top,
    /// Anything else: split like a paste, unknown parts scanned like a log.
    Other,
    /// crashdoc's own references.json / missing.json in a bundle.
    BundleMeta,
    /// What a revision comparison reads: a workload's ReplicaSets or
    /// ControllerRevisions, pods of every revision, nodes, rollout history.
    Rollout(rollout::RolloutFile),
}

/// Why the input could not be used at all.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no file crashdoc can read")]
    NothingUsable { path: PathBuf, ignored: Vec<String> },
    #[error("the input is empty")]
    Empty,
    #[error("the input is not text (it looks binary)")]
    Binary,
    #[error("{0} is not a crashdoc bundle: {1}")]
    BadBundle(PathBuf, String),
}

impl crate::Hint for InputError {
    /// The `hint:` line that tells the user what to do next (the CLI prints
    /// it after the error; the MCP server puts it in the tool's error result).
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Borrowed(match self {
            InputError::NothingUsable { .. } => {
                "name the files as kubectl outputs (see `crashdoc analyze --help`), or pipe a paste into `crashdoc analyze -`"
            }
            InputError::Empty => {
                "pipe kubectl output into it, e.g. `kubectl describe pod POD | crashdoc analyze -`"
            }
            InputError::Binary => {
                "crashdoc reads kubectl's text, YAML or JSON output; for a bundle pass the .tar.gz path itself"
            }
            InputError::Io { .. } => "check the path exists and is readable",
            InputError::BadBundle(..) => {
                "re-create the bundle with `crashdoc capture`, or analyse its pod folders directly"
            }
        }))
    }
}

/// Evidence for one or more pods, and what the reader noticed.
#[derive(Debug, Default)]
pub struct Evidence {
    pub pods: Vec<Pod>,
    /// Notes about the input as a whole (ignored files, partial reads).
    pub notes: Vec<String>,
    /// Missing evidence per pod name, reported by a live collector.
    pub collector_missing: Vec<(String, Missing)>,
}

/// Largest structured file read into memory; logs are streamed whatever their size.
pub const MAX_TEXT_FILE: u64 = 64 << 20;
/// Largest paste read from standard input.
pub const MAX_PASTE: u64 = 512 << 20;

/// Classify a file by its name (case-insensitive).
pub fn kind_of_file(name: &str) -> Option<FileKind> {
    let n = name.to_ascii_lowercase();
    let log = |prefix: &str, kind: LogKind| -> Option<FileKind> {
        let rest = n.strip_prefix(prefix)?;
        if rest == ".txt" || rest == ".log" {
            return Some(FileKind::Logs {
                kind,
                container: None,
            });
        }
        let c = rest
            .strip_prefix('.')?
            .strip_suffix(".txt")
            .or_else(|| rest.strip_prefix('.')?.strip_suffix(".log"))?;
        // Keep the container name as written in the file name.
        let start = prefix.len() + 1;
        Some(FileKind::Logs {
            kind,
            container: Some(name[start..start + c.len()].to_string()),
        })
    };
    use bundle::file;
    if let Some(k) =
        log(file::LOGS_PREVIOUS, LogKind::Previous).or_else(|| log(file::LOGS, LogKind::Current))
    {
        return Some(k);
    }
    Some(match n.as_str() {
        "describe-pod.txt" | "describe.txt" => FileKind::Describe,
        "get-pods.txt" | "pods.txt" => FileKind::GetPods,
        file::POD
        | file::DEPLOYMENT
        | file::REPLICASET
        | file::STATEFULSET
        | file::DAEMONSET
        | file::JOB
        | file::NODE
        | file::PVC
        | file::EVENTS
        | "pod.yaml"
        | "pod.yml"
        | "deployment.yaml"
        | "replicaset.yaml"
        | "statefulset.yaml"
        | "daemonset.yaml"
        | "job.yaml"
        | "configmap.yaml"
        | "configmap.json"
        | "secret.yaml"
        | "secret.json"
        | "node.yaml"
        | "pvc.yaml"
        | "events.yaml"
        | "owner.json" => FileKind::Objects,
        "events.txt" => FileKind::Events,
        "describe-node.txt" => FileKind::Node,
        "get-pvc.txt" | "describe-pvc.txt" => FileKind::Pvc,
        "describe-secret.txt" | "describe-configmap.txt" => FileKind::DescribeData,
        file::TOP | "top.txt" => FileKind::Top,
        "other.txt" => FileKind::Other,
        file::REFERENCES | file::MISSING | file::LOG_RUNS => FileKind::BundleMeta,
        file::REPLICASETS | "replicasets.yaml" => {
            FileKind::Rollout(rollout::RolloutFile::ReplicaSets)
        }
        file::CONTROLLER_REVISIONS | "controllerrevisions.yaml" => {
            FileKind::Rollout(rollout::RolloutFile::ControllerRevisions)
        }
        file::WORKLOAD_PODS | "workload-pods.yaml" => {
            FileKind::Rollout(rollout::RolloutFile::WorkloadPods)
        }
        file::NODES | "nodes.yaml" => FileKind::Rollout(rollout::RolloutFile::Nodes),
        file::ROLLOUT_HISTORY => FileKind::Rollout(rollout::RolloutFile::History),
        _ => return None,
    })
}

/// Everything read from one folder (one pod's worth of evidence).
#[derive(Debug, Default)]
pub struct Parts {
    pub described: Vec<describe::Described>,
    pub objects: Vec<objects::Objects>,
    pub rows: Vec<tables::PodRow>,
    pub events: Vec<Event>,
    pub logs: Vec<LogScan>,
    /// Structured documents scanned as text too.
    pub texts: Vec<LogScan>,
    /// Container states found by key in any text.
    pub fragments: Vec<fragments::Fragment>,
    pub pvcs: Vec<Pvc>,
    pub config_objects: Vec<ConfigObject>,
    pub object_refs: Vec<ObjectRef>,
    pub usage: Vec<Usage>,
    pub sources: Vec<String>,
    pub notes: Vec<String>,
    pub missing: Vec<Missing>,
    /// What a revision comparison reads (shared by the folder's pods).
    pub rollout: rollout::RolloutInput,
    /// A bundle's `log-runs.json`: which run each log holds.
    pub log_runs: Option<bundle::LogRuns>,
}

impl Parts {
    fn is_empty(&self) -> bool {
        self.described.is_empty()
            && self.objects.iter().all(|o| {
                o.pods.is_empty() && o.events.is_empty() && o.template_containers.is_empty()
            })
            && self.rows.is_empty()
            && self.events.is_empty()
            && self.logs.is_empty()
            && self.pvcs.is_empty()
            && self.config_objects.is_empty()
    }

    fn count(&self) -> usize {
        self.described
            .iter()
            .map(|d| {
                d.pod.containers.len()
                    + d.pod.events.len()
                    + usize::from(d.pod.name.is_some() || d.pod.phase.is_some())
            })
            .sum::<usize>()
            + self
                .objects
                .iter()
                .map(|o| {
                    o.pods.len()
                        + o.events.len()
                        + o.template_containers.len()
                        + o.pvcs.len()
                        + o.config_objects.len()
                        + o.nodes.len()
                })
                .sum::<usize>()
            + self.rows.len()
            + self.events.len()
            + self.logs.len()
            + self.pvcs.len()
            + self.config_objects.len()
            + self.usage.len()
    }

    /// Add a document of a known kind. A structured file that yields
    /// nothing (a paste in an unexpected layout) is scanned like a log, so
    /// its text is never lost.
    pub fn add_doc(&mut self, kind: FileKind, doc: Doc) {
        let structured = !matches!(
            kind,
            FileKind::Logs { .. }
                | FileKind::Other
                | FileKind::BundleMeta
                | FileKind::Node
                | FileKind::Rollout(_)
        );
        let before = self.count();
        let name = doc.name.clone();
        let fallback = structured.then(|| doc.clone());
        let mark = self.mark();
        // Pasted text, whatever its section was taken for (a log file given
        // by name is streamed, not read here).
        // Not the revision files: their pods are other pods than this one.
        if !matches!(
            kind,
            FileKind::BundleMeta | FileKind::Other | FileKind::Rollout(_)
        ) {
            self.fragments.extend(fragments::states(&doc));
        }
        self.add_doc_inner(kind, doc);
        if let Some(doc) = fallback
            && !doc.text.trim().is_empty()
        {
            if self.count() == before {
                self.notes.push(format!(
                    "{name}: not in the expected layout; scanned as text"
                ));
                self.scan_doc(&doc, LogKind::Other, None);
            } else {
                // Layout parsing adds structure; it never decides whether a
                // line is seen: every line is matched as text too, but for
                // the lines a parser read into an event or a status field
                // (whichever pod they are about), matched there.
                let read = self.lines_read_since(mark);
                let mut scan =
                    Catalog::global().scan_str(&doc.text, &doc.name, LogKind::Text, None);
                shift_lines(&mut scan, doc.line_offset);
                scan.hits
                    .retain(|h| !read.contains(&format!("{}:{}", scan.file, h.line.number)));
                if !scan.hits.is_empty() {
                    self.texts.push(scan);
                }
            }
        }
    }

    fn add_doc_inner(&mut self, kind: FileKind, doc: Doc) {
        match kind {
            FileKind::Describe => self.described.push(describe::parse(&doc)),
            FileKind::GetPods => {
                self.rows.extend(tables::parse_pod_rows(&doc));
                self.events.extend(tables::parse_event_lines(&doc));
            }
            FileKind::Objects => {
                self.rollout.collect(&doc);
                let o = objects::parse(&doc);
                if let Some(p) = &o.partial {
                    self.notes.push(format!("{}: {p}", doc.name));
                }
                self.objects.push(o);
            }
            FileKind::Events => {
                let (tree, _) = if doc.text.trim_start().starts_with(['{', '['])
                    || doc.text.contains("kind: Event")
                {
                    objects::parse_tree(&doc.text)
                } else {
                    (None, None)
                };
                if tree.is_some() {
                    self.rollout.collect(&doc);
                    self.objects.push(objects::parse(&doc));
                } else {
                    self.events.extend(tables::parse_event_lines(&doc));
                }
            }
            FileKind::Pvc => {
                self.pvcs.extend(tables::parse_pvcs(&doc));
                self.events.extend(tables::parse_event_lines(&doc));
            }
            FileKind::DescribeData => self
                .config_objects
                .extend(tables::parse_describe_data(&doc)),
            FileKind::Node => {
                // `describe node` text: conditions and allocatable are scanned like a log for now.
                self.scan_doc(&doc, LogKind::Other, None);
            }
            FileKind::Top => self.usage.extend(parse_top(&doc)),
            FileKind::Logs { kind, container } => self.scan_doc(&doc, kind, container),
            FileKind::Other => {
                for s in paste::split(
                    &doc.name,
                    &doc.text,
                    FileKind::Logs {
                        kind: LogKind::Other,
                        container: None,
                    },
                ) {
                    let k = match s.kind {
                        FileKind::Other => FileKind::Logs {
                            kind: LogKind::Other,
                            container: None,
                        },
                        // A `kubectl logs` inside other.txt is evidence, but of unknown run.
                        FileKind::Logs { container, .. } => FileKind::Logs {
                            kind: LogKind::Other,
                            container,
                        },
                        k => k,
                    };
                    self.add_doc(k, s.doc);
                }
            }
            FileKind::BundleMeta => bundle::read_meta(self, &doc),
            FileKind::Rollout(kind) => {
                if let Some(note) = self.rollout.read_file(kind, &doc) {
                    self.notes.push(note);
                }
            }
        }
    }

    /// How much has been parsed so far (see [`Parts::lines_read_since`]).
    fn mark(&self) -> [usize; 4] {
        [
            self.events.len(),
            self.objects.len(),
            self.described.len(),
            self.fragments.len(),
        ]
    }

    /// The `file:line` of every line parsed since `mark` into an event, a
    /// container state's field or a pod's status reason or message.
    fn lines_read_since(&self, mark: [usize; 4]) -> std::collections::HashSet<String> {
        let mut out = std::collections::HashSet::new();
        let mut add = |c: &Cite| {
            out.insert(c.location.clone().unwrap_or_else(|| c.reference.clone()));
        };
        let pods = self.described[mark[2]..]
            .iter()
            .map(|d| &d.pod)
            .chain(self.objects[mark[1]..].iter().flat_map(|o| o.pods.iter()));
        let states = pods.clone().flat_map(|p| {
            p.containers
                .iter()
                .flat_map(|c| [c.state.as_ref(), c.last_state.as_ref()])
                .flatten()
        });
        for st in states.chain(self.fragments[mark[3]..].iter().map(|f| &f.state)) {
            add(&st.kind_cite);
            for f in [st.reason.as_ref(), st.message.as_ref()]
                .into_iter()
                .flatten()
            {
                add(&f.cite);
            }
        }
        for p in pods {
            for f in [p.reason.as_ref(), p.message.as_ref()]
                .into_iter()
                .flatten()
            {
                add(&f.cite);
            }
            p.events.iter().for_each(|e| add(&e.cite));
        }
        self.events[mark[0]..]
            .iter()
            .chain(self.objects[mark[1]..].iter().flat_map(|o| o.events.iter()))
            .for_each(|e| add(&e.cite));
        out
    }

    fn scan_doc(&mut self, doc: &Doc, kind: LogKind, container: Option<String>) {
        let mut scan = Catalog::global().scan_str(&doc.text, &doc.name, kind, container);
        shift_lines(&mut scan, doc.line_offset);
        self.logs.push(scan);
    }

    /// Read one file by name from a reader. Logs are streamed; other files
    /// are read into memory up to [`MAX_TEXT_FILE`].
    pub fn add_file<R: Read>(&mut self, name: &str, size: u64, reader: R) -> std::io::Result<()> {
        // A file whose name is not known is read like a paste: evidence is
        // read wherever it stands (shared/spec/inputs.md).
        let kind = kind_of_file(name).unwrap_or_else(|| {
            self.notes.push(format!(
                "{name}: not a file name crashdoc knows; read like a paste (see `crashdoc analyze --help`)"
            ));
            FileKind::Other
        });
        self.sources.push(name.to_string());
        if let FileKind::Logs { kind, container } = kind {
            let scan = Catalog::global().scan(reader, name, kind, container)?;
            if scan.invalid_utf8 {
                self.notes.push(format!("{name}: invalid UTF-8 replaced"));
            }
            if scan.bytes == 0 {
                self.notes.push(format!("{name} is empty"));
            }
            self.logs.push(scan);
            return Ok(());
        }
        if size > MAX_TEXT_FILE {
            self.notes.push(format!(
                "skipped {name}: {size} bytes is more than a kubectl output should be"
            ));
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(size as usize);
        reader.take(MAX_TEXT_FILE).read_to_end(&mut bytes)?;
        if !crate::text::looks_textual(&bytes) {
            self.sources.pop();
            self.notes.push(format!("skipped {name}: not text"));
            return Ok(());
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        self.add_doc(
            kind,
            Doc {
                name: name.to_string(),
                text,
                line_offset: 0,
            },
        );
        Ok(())
    }
}

fn shift_lines(scan: &mut LogScan, offset: u64) {
    if offset == 0 {
        return;
    }
    for h in &mut scan.hits {
        h.line.number += offset;
    }
    for l in scan.head.iter_mut().chain(scan.tail.iter_mut()) {
        l.number += offset;
    }
}

fn parse_top(doc: &Doc) -> Vec<Usage> {
    let mut out = Vec::new();
    for (i, l) in doc.text.lines().enumerate() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 3
            && w[0] != "POD"
            && w[0] != "NAME"
            && w.last()
                .is_some_and(|m| m.ends_with("Mi") || m.ends_with("Gi") || m.ends_with("Ki"))
        {
            let (container, cpu, mem) = if w.len() >= 4 {
                (Some(w[1].to_string()), w[2], w[3])
            } else {
                (None, w[1], w[2])
            };
            out.push(Usage {
                container,
                cpu: Some(cpu.to_string()),
                memory: Some(mem.to_string()),
                cite: Cite::new(
                    SourceKind::Status,
                    format!("{}:{}", doc.name, doc.line_offset + i as u64 + 1),
                    l.trim().to_string(),
                ),
            });
        }
    }
    out
}

/// Read any supported input at `path`: a folder, a dump tree, a bundle
/// folder or `.tar.gz`, or a single file (read like a paste).
pub fn read_path(path: &Path) -> Result<Evidence, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        if path.join("manifest.json").is_file() {
            return bundle::read_dir(path);
        }
        if dump::is_dump(path) {
            return dump::read(path);
        }
        let mut parts = Parts::default();
        read_folder_into(path, &mut parts)?;
        if parts.is_empty() {
            let ignored = parts.notes.clone();
            return Err(InputError::NothingUsable {
                path: path.to_path_buf(),
                ignored,
            });
        }
        return Ok(assemble(parts));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        return bundle::read_tar_gz(path);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    if kind_of_file(&name).is_some() {
        let mut parts = Parts::default();
        parts.add_file(&name, meta.len(), file).map_err(io)?;
        return Ok(assemble(parts));
    }
    read_paste(file, &name)
}

/// Read every known file of a pod folder.
pub fn read_folder_into(path: &Path, parts: &mut Parts) -> Result<(), InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(m) = e.metadata() else { continue };
        if m.is_dir() {
            parts.notes.push(format!("ignored folder {name}/"));
            continue;
        }
        let f = match std::fs::File::open(&p) {
            Ok(f) => f,
            Err(err) => {
                parts.notes.push(format!("could not read {name}: {err}"));
                continue;
            }
        };
        if let Err(err) = parts.add_file(&name, m.len(), f) {
            parts.notes.push(format!("could not read {name}: {err}"));
        }
    }
    Ok(())
}

/// Read a pasted blob (several kubectl outputs in one text).
pub fn read_paste<R: Read>(reader: R, name: &str) -> Result<Evidence, InputError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_PASTE)
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            path: PathBuf::from(name),
            source,
        })?;
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(InputError::Empty);
    }
    if !crate::text::looks_textual(&bytes) {
        return Err(InputError::Binary);
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut parts = Parts::default();
    if bytes.len() as u64 >= MAX_PASTE {
        parts.notes.push(format!(
            "{name}: only the first {} MiB were read",
            MAX_PASTE >> 20
        ));
    }
    parts.sources.push(name.to_string());
    for s in paste::split(
        name,
        &text,
        FileKind::Logs {
            kind: LogKind::Current,
            container: None,
        },
    ) {
        parts.add_doc(s.kind, s.doc);
    }
    if parts.is_empty() {
        return Err(InputError::NothingUsable {
            path: PathBuf::from(name),
            ignored: vec![],
        });
    }
    Ok(assemble(parts))
}

/// Turn the parts of one folder into pods: gather what each input gave,
/// choose the pods, then give each pod the evidence that is its own or no
/// pod's in particular.
pub fn assemble(mut parts: Parts) -> Evidence {
    let mut notes = std::mem::take(&mut parts.notes);
    let (named, anon, shared) = gather(&mut parts);
    let rows = std::mem::take(&mut parts.rows);
    let mut pods = choose_pods(named, anon, &rows, &parts.logs, &mut notes);
    let others = rows
        .iter()
        .filter(|r| r.unhealthy() && !pods.iter().any(|p| p.name.as_deref() == Some(&*r.name)))
        .count();
    if others > 0 && !pods.is_empty() {
        notes.push(format!(
            "{others} other unhealthy pod(s) in the listing were not analysed"
        ));
    }

    if let Some(runs) = &parts.log_runs {
        notes.extend(bundle::relabel_logs(&mut parts.logs, runs));
    }
    let n_pods = pods.len();
    let rollout = std::sync::Arc::new(std::mem::take(&mut parts.rollout));
    for pod in &mut pods {
        pod.rollout = rollout.clone();
        attach_listing(pod, &rows);
        apply_fragments(pod, &parts.fragments, &rows);
        attach_events(pod, &shared.events);
        attach_templates(pod, &shared.templates);
        if pod.owner.is_none() {
            pod.owner = shared
                .owners
                .iter()
                .find(|o| o.kind != "ReplicaSet")
                .or(shared.owners.first())
                .cloned();
        }
        if pod.owner.is_none()
            && let Some(n) = &pod.name
        {
            pod.owner = infer_owner(n);
        }
        pod.pvcs.extend(shared.pvcs.iter().cloned());
        pod.config_objects
            .extend(shared.config_objects.iter().cloned());
        pod.object_refs.extend(parts.object_refs.iter().cloned());
        pod.node = pod.node.take().or_else(|| shared.nodes.first().cloned());
        pod.usage.extend(parts.usage.iter().cloned());
        attach_logs(pod, &parts.logs, n_pods);
        pod.texts.extend(parts.texts.iter().cloned());
        name_anonymous_containers(pod);
        pod.sources.extend(parts.sources.iter().cloned());
        pod.notes.extend(notes.iter().cloned());
    }
    let collector_missing = parts
        .missing
        .into_iter()
        .map(|m| (String::new(), m))
        .collect();
    Evidence {
        pods,
        notes,
        collector_missing,
    }
}

/// What the inputs gave that is no one pod's: it goes to every pod chosen.
#[derive(Default)]
struct Shared {
    templates: Vec<Container>,
    owners: Vec<Owner>,
    events: Vec<Event>,
    pvcs: Vec<Pvc>,
    config_objects: Vec<ConfigObject>,
    nodes: Vec<Node>,
}

/// The pods named by describe output or objects (one per name, merged), the
/// fragments of pods without a name (merged into one), and what is shared.
fn gather(parts: &mut Parts) -> (Vec<Pod>, Pod, Shared) {
    let mut shared = Shared {
        events: std::mem::take(&mut parts.events),
        pvcs: std::mem::take(&mut parts.pvcs),
        config_objects: std::mem::take(&mut parts.config_objects),
        ..Shared::default()
    };
    let mut incoming: Vec<Pod> = parts.described.drain(..).map(|d| d.pod).collect();
    for o in parts.objects.drain(..) {
        incoming.extend(o.pods);
        shared.templates.extend(o.template_containers);
        shared.owners.extend(o.owners);
        shared.events.extend(o.events);
        shared.pvcs.extend(o.pvcs);
        shared.config_objects.extend(o.config_objects);
        shared.nodes.extend(o.nodes);
    }
    let mut named: Vec<Pod> = Vec::new();
    let mut anon = Pod::default();
    for p in incoming {
        if p.name.is_none() {
            merge_pod(&mut anon, p);
            continue;
        }
        match named.iter_mut().find(|x| x.name == p.name) {
            Some(x) => merge_pod(x, p),
            None => named.push(p),
        }
    }
    (named, anon, shared)
}

/// Which pods: the named ones (the first takes the unnamed fragments), else
/// the unhealthy rows of `get pods` (those a log names first), else its
/// first row, else the fragments as one unnamed pod.
fn choose_pods(
    named: Vec<Pod>,
    anon: Pod,
    rows: &[tables::PodRow],
    logs: &[LogScan],
    notes: &mut Vec<String>,
) -> Vec<Pod> {
    if !named.is_empty() {
        let mut pods = named;
        merge_pod(&mut pods[0], anon);
        return pods;
    }
    let hints: Vec<&String> = logs.iter().filter_map(|l| l.pod_hint.as_ref()).collect();
    let unhealthy: Vec<&tables::PodRow> = rows.iter().filter(|r| r.unhealthy()).collect();
    let hinted: Vec<&tables::PodRow> = unhealthy
        .iter()
        .copied()
        .filter(|r| hints.contains(&&r.name))
        .collect();
    let chosen: Vec<&tables::PodRow> = if !hinted.is_empty() {
        hinted
    } else if !unhealthy.is_empty() {
        unhealthy
    } else {
        rows.iter().take(1).collect()
    };
    if chosen.len() > 1 {
        notes.push(format!(
            "{} unhealthy pods are listed and no other file names one; the evidence not tied to a pod name is read for each",
            chosen.len()
        ));
    }
    if chosen.is_empty() {
        return vec![anon];
    }
    chosen
        .iter()
        .map(|r| {
            let mut p = anon.clone();
            p.name = Some(r.name.clone());
            p
        })
        .collect()
}

/// The pod's row in a `get pods` listing: its STATUS and RESTARTS.
fn attach_listing(pod: &mut Pod, rows: &[tables::PodRow]) {
    if let Some(r) = rows
        .iter()
        .find(|r| Some(r.name.as_str()) == pod.name.as_deref())
    {
        let c = Cite {
            reference: format!("{} STATUS", r.cite.reference),
            ..r.cite.clone()
        };
        pod.listed_status = Some(Field::new(r.status.clone(), c));
        pod.listed_restarts = r.restarts;
    }
}

/// Events about this pod, or about no pod in particular. Events of a
/// sibling pod of the same workload (an earlier ReplicaSet's pod) are kept:
/// siblings fail for the same reason.
fn attach_events(pod: &mut Pod, events: &[Event]) {
    for e in events {
        let about_other_pod = match (&e.object, &pod.name) {
            (Some(o), Some(n)) => o.strip_prefix("pod/").is_some_and(|other| {
                let other = other.split_whitespace().next().unwrap_or(other);
                other != n && !same_workload(other, n)
            }),
            _ => false,
        };
        if !about_other_pod && !pod.events.contains(e) {
            pod.events.push(e.clone());
        }
    }
}

/// The pod template's containers, merged into the pod's by name; with one
/// main container on each side, an unnamed one matches by kind.
fn attach_templates(pod: &mut Pod, templates: &[Container]) {
    let template_mains = templates
        .iter()
        .filter(|x| x.kind == ContainerKind::Main)
        .count();
    for t in templates {
        let pod_mains = pod
            .containers
            .iter()
            .filter(|c| c.kind == ContainerKind::Main)
            .count();
        let single = pod_mains <= 1 && template_mains == 1;
        let all_unnamed =
            !pod.containers.is_empty() && pod.containers.iter().all(|c| c.name.is_empty());
        let found = pod.containers.iter().position(|c| {
            c.name == t.name
                || (single && (c.name.is_empty() || t.name.is_empty()) && c.kind == t.kind)
        });
        match found.or(all_unnamed.then_some(0)) {
            Some(i) => {
                let c = &mut pod.containers[i];
                if c.name.is_empty() {
                    c.name = t.name.clone();
                }
                c.merge(t.clone());
            }
            None => pod.containers.push(t.clone()),
        }
    }
}

/// Every log goes to every pod; `kubectl logs OTHER` pasted beside a single
/// pod's evidence is kept as another pod's log.
fn attach_logs(pod: &mut Pod, logs: &[LogScan], n_pods: usize) {
    for l in logs {
        let mut l = l.clone();
        if l.pod_hint
            .as_ref()
            .is_some_and(|h| Some(h) != pod.name.as_ref())
            && l.kind != LogKind::Other
            && n_pods == 1
        {
            l.kind = LogKind::Other;
        }
        pod.logs.push(l);
    }
}

/// Container states found by key in text, and the status history of
/// `get pods --watch` rows, for a pod whose structured inputs gave none.
fn apply_fragments(pod: &mut Pod, found: &[fragments::Fragment], rows: &[tables::PodRow]) {
    let has_state = |p: &Pod| {
        p.containers
            .iter()
            .any(|c| c.last_termination().is_some() || c.waiting_reason().is_some())
    };
    if has_state(pod) {
        return;
    }
    for f in found {
        let i = match &f.container {
            Some(n) => match pod.containers.iter().position(|c| &c.name == n) {
                Some(i) => i,
                None if pod.containers.len() == 1 && pod.containers[0].name.is_empty() => 0,
                None => {
                    pod.containers.push(Container::named(n.clone()));
                    pod.containers.len() - 1
                }
            },
            None => {
                if pod.containers.is_empty() {
                    pod.containers.push(Container::default());
                }
                0
            }
        };
        let c = &mut pod.containers[i];
        if c.name.is_empty()
            && let Some(n) = &f.container
        {
            c.name = n.clone();
        }
        let slot = if f.last || f.state.kind == StateKind::Terminated && c.state.is_some() {
            &mut c.last_state
        } else {
            &mut c.state
        };
        if slot.is_none() {
            *slot = Some(f.state.clone());
        }
    }
    if !has_state(pod) {
        let mine: Vec<&tables::PodRow> = rows
            .iter()
            .filter(|r| Some(r.name.as_str()) == pod.name.as_deref())
            .collect();
        if let Some((init, st)) = fragments::from_status_history(&mine) {
            let kind = if init {
                ContainerKind::Init
            } else {
                ContainerKind::Main
            };
            // The container of that kind, when the input has one; kubectl's
            // listing does not say which of several it was.
            let of_kind: Vec<usize> = (0..pod.containers.len())
                .filter(|&i| pod.containers[i].kind == kind)
                .collect();
            let i = match of_kind[..] {
                [i] => i,
                _ => {
                    pod.containers.push(Container {
                        kind,
                        ..Default::default()
                    });
                    pod.containers.len() - 1
                }
            };
            let c = &mut pod.containers[i];
            if c.last_state.is_none() {
                c.last_state = Some(st);
            }
        }
    }
}

fn merge_pod(into: &mut Pod, from: Pod) {
    into.name = into.name.take().or(from.name);
    into.namespace = into.namespace.take().or(from.namespace);
    into.owner = into.owner.take().or(from.owner);
    into.phase = into.phase.take().or(from.phase);
    into.reason = into.reason.take().or(from.reason);
    into.message = into.message.take().or(from.message);
    into.node_name = into.node_name.take().or(from.node_name);
    into.restart_policy = into.restart_policy.take().or(from.restart_policy);
    for c in from.containers {
        objects::merge_container(into, c);
    }
    for e in from.events {
        if !into.events.contains(&e) {
            into.events.push(e);
        }
    }
}

/// A log file named for a container gives an unnamed container its name.
fn name_anonymous_containers(pod: &mut Pod) {
    let log_containers: Vec<String> = pod
        .logs
        .iter()
        .filter_map(|l| l.container.clone())
        .collect();
    if let Some(i) = pod.containers.iter().position(|c| c.name.is_empty()) {
        let named: Vec<&str> = pod
            .containers
            .iter()
            .filter(|c| !c.name.is_empty())
            .map(|c| c.name.as_str())
            .collect();
        if named.is_empty() && log_containers.len() == 1 {
            pod.containers[i].name = log_containers[0].clone();
        }
    }
    // Logs without a container name belong to the only container.
    let mains: Vec<String> = pod
        .containers
        .iter()
        .filter(|c| !c.name.is_empty())
        .map(|c| c.name.clone())
        .collect();
    if mains.len() == 1 {
        for l in &mut pod.logs {
            if l.container.is_none() && l.kind != LogKind::Other {
                l.container = Some(mains[0].clone());
            }
        }
    }
}

/// Whether two pod names belong to the same inferred workload.
fn same_workload(a: &str, b: &str) -> bool {
    match (infer_owner(a), infer_owner(b)) {
        (Some(x), Some(y)) => x.kind == y.kind && x.name == y.name,
        _ => false,
    }
}

/// Infer the owner from a pod name: `web-6468f86645-x98pq` is a Deployment's
/// pod, `db-0` a StatefulSet's.
pub fn infer_owner(name: &str) -> Option<Owner> {
    let parts: Vec<&str> = name.rsplitn(3, '-').collect();
    if parts.len() == 3 {
        let (suffix, hash, base) = (parts[0], parts[1], parts[2]);
        let alnum = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        };
        if suffix.len() == 5
            && alnum(suffix)
            && (8..=10).contains(&hash.len())
            && alnum(hash)
            && hash.chars().any(|c| c.is_ascii_digit())
        {
            return Some(Owner {
                kind: "Deployment".into(),
                name: base.to_string(),
                observed: false,
            });
        }
    }
    if let Some((base, ord)) = name.rsplit_once('-')
        && !base.is_empty()
        && ord.chars().all(|c| c.is_ascii_digit())
        && ord.len() <= 3
    {
        return Some(Owner {
            kind: "StatefulSet".into(),
            name: base.to_string(),
            observed: false,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            kind_of_file("logs-previous.zookeeper.txt"),
            Some(FileKind::Logs {
                kind: LogKind::Previous,
                container: Some("zookeeper".into())
            })
        );
        assert_eq!(
            kind_of_file("LOGS.txt"),
            Some(FileKind::Logs {
                kind: LogKind::Current,
                container: None
            })
        );
        assert_eq!(kind_of_file("Describe-Pod.txt"), Some(FileKind::Describe));
        assert_eq!(kind_of_file("notes.md"), None);
    }

    #[test]
    fn owners() {
        assert_eq!(
            infer_owner("hello-kubernetes-custom-6468f86645-x98pq")
                .unwrap()
                .name,
            "hello-kubernetes-custom"
        );
        assert_eq!(infer_owner("keycloak-0").unwrap().kind, "StatefulSet");
        assert_eq!(infer_owner("demo"), None);
    }
    fn row(name: &str, ready: &str, status: &str) -> tables::PodRow {
        tables::PodRow {
            name: name.into(),
            ready: ready.into(),
            status: status.into(),
            restarts: None,
            cite: Cite::new(SourceKind::Status, "pods.txt:1", name),
        }
    }

    fn names_of(pods: &[Pod]) -> Vec<Option<&str>> {
        pods.iter().map(|p| p.name.as_deref()).collect()
    }

    #[test]
    fn the_unhealthy_rows_are_the_pods_when_nothing_names_one() {
        let rows = [
            row("web-1", "1/1", "Running"),
            row("web-2", "0/1", "CrashLoopBackOff"),
            row("web-3", "0/1", "Error"),
        ];
        let mut anon = Pod::default();
        anon.containers.push(Container::named("app"));
        let mut notes = Vec::new();
        let pods = choose_pods(vec![], anon, &rows, &[], &mut notes);
        assert_eq!(names_of(&pods), [Some("web-2"), Some("web-3")]);
        assert!(pods.iter().all(|p| p.containers.len() == 1));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("2 unhealthy pods are listed"));

        // Near miss: all healthy, so the first row, and no note.
        let mut notes = Vec::new();
        let healthy = [
            row("web-1", "1/1", "Running"),
            row("web-2", "1/1", "Running"),
        ];
        let pods = choose_pods(vec![], Pod::default(), &healthy, &[], &mut notes);
        assert_eq!(names_of(&pods), [Some("web-1")]);
        assert!(notes.is_empty());

        // No listing at all: the fragments as one unnamed pod.
        let pods = choose_pods(vec![], Pod::default(), &[], &[], &mut notes);
        assert_eq!(names_of(&pods), [None]);
    }

    #[test]
    fn unnamed_fragments_join_the_first_named_pod() {
        let named = |n: &str| Pod {
            name: Some(n.into()),
            ..Pod::default()
        };
        let mut anon = Pod::default();
        anon.containers.push(Container::named(""));
        let rows = [row("other-1", "0/1", "Error")];
        let mut notes = Vec::new();
        let pods = choose_pods(vec![named("a"), named("b")], anon, &rows, &[], &mut notes);
        assert_eq!(names_of(&pods), [Some("a"), Some("b")]);
        assert_eq!((pods[0].containers.len(), pods[1].containers.len()), (1, 0));
        assert!(notes.is_empty());
    }

    #[test]
    fn a_template_container_merges_by_name_or_as_the_single_main_one() {
        let mut template = Container::named("app");
        template.image = Some("shop:1".into());
        let mut pod = Pod::default();
        pod.containers.push(Container::named(""));
        attach_templates(&mut pod, std::slice::from_ref(&template));
        assert_eq!(pod.containers.len(), 1);
        assert_eq!(pod.containers[0].name, "app");
        assert_eq!(pod.containers[0].image.as_deref(), Some("shop:1"));

        // Near miss: two named main containers, neither the template's.
        let mut pod = Pod::default();
        pod.containers.push(Container::named("a"));
        pod.containers.push(Container::named("b"));
        attach_templates(&mut pod, std::slice::from_ref(&template));
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "app"]);
    }
}
