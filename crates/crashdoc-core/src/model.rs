//! The evidence model: what crashdoc knows about a pod, each fact carrying
//! the place it was read from so that every finding can cite it.
//!
//! Live collection and every offline input form fill this same model; the
//! rules only ever see a [`Pod`].

use serde::Serialize;
use std::collections::BTreeMap;

/// Where a piece of evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A pod status field (container state, phase, reason).
    Status,
    /// A pod or workload spec field (resources, probes, env, mounts).
    Spec,
    /// A Kubernetes event.
    Event,
    /// A container log line.
    Log,
    /// Node status.
    Node,
    /// A PersistentVolumeClaim, ConfigMap or Secret (key names only).
    Object,
    /// Free text that was none of the above (`other.txt`, command output).
    Other,
}

/// One quoted piece of evidence: the field or line, and its text as it
/// appears in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cite {
    pub source: SourceKind,
    /// A field path (`status.containerStatuses[app].lastState.terminated.reason`)
    /// or a file and line (`logs-previous.txt:212`).
    #[serde(rename = "ref")]
    pub reference: String,
    /// The text quoted from the input.
    pub text: String,
    /// File and line the text was read from, when the reference is a field path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl Cite {
    pub fn new(source: SourceKind, reference: impl Into<String>, text: impl Into<String>) -> Self {
        Cite {
            source,
            reference: reference.into(),
            text: text.into(),
            location: None,
        }
    }

    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

/// A value and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<T> {
    pub value: T,
    pub cite: Cite,
}

impl<T> Field<T> {
    pub fn new(value: T, cite: Cite) -> Self {
        Field { value, cite }
    }
}

/// The role of a container in the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerKind {
    #[default]
    Main,
    /// An init container that must finish before the main containers start.
    Init,
    /// A native sidecar: an init container with `restartPolicy: Always`.
    Sidecar,
    Ephemeral,
}

/// The state of a container run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateKind {
    Waiting,
    Running,
    Terminated,
}

/// `state` or `lastState` of a container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerState {
    pub kind: StateKind,
    pub kind_cite: Cite,
    pub reason: Option<Field<String>>,
    pub exit_code: Option<Field<i32>>,
    pub signal: Option<i32>,
    pub message: Option<Field<String>>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl ContainerState {
    pub fn new(kind: StateKind, kind_cite: Cite) -> Self {
        ContainerState {
            kind,
            kind_cite,
            reason: None,
            exit_code: None,
            signal: None,
            message: None,
            started_at: None,
            finished_at: None,
        }
    }

    pub fn reason_is(&self, r: &str) -> bool {
        self.reason
            .as_ref()
            .is_some_and(|f| f.value.eq_ignore_ascii_case(r))
    }

    pub fn exit(&self) -> Option<i32> {
        self.exit_code.as_ref().map(|f| f.value)
    }

    /// How long the run lasted, when both timestamps can be read.
    pub fn run_seconds(&self) -> Option<i64> {
        let s = crate::time::parse_timestamp(self.started_at.as_deref()?)?;
        let f = crate::time::parse_timestamp(self.finished_at.as_deref()?)?;
        Some(f - s)
    }
}

/// Which probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

impl ProbeKind {
    pub fn field(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "livenessProbe",
            ProbeKind::Readiness => "readinessProbe",
            ProbeKind::Startup => "startupProbe",
        }
    }
}

/// A probe as the kubelet runs it; unset numbers take the API defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub kind: ProbeKind,
    /// `http-get http://:8080/health`, `exec [cat /tmp/ok]`, `tcp-socket :80`.
    pub handler: String,
    pub initial_delay: u32,
    pub timeout: u32,
    pub period: u32,
    pub success: u32,
    pub failure: u32,
    pub cite: Cite,
}

impl Probe {
    pub fn new(kind: ProbeKind, cite: Cite) -> Self {
        Probe {
            kind,
            handler: String::new(),
            initial_delay: 0,
            timeout: 1,
            period: 10,
            success: 1,
            failure: 3,
            cite,
        }
    }

    /// Seconds after start at which the kubelet kills a container that never
    /// passes this probe: the delay plus `failureThreshold` periods.
    pub fn budget(&self) -> u32 {
        self.initial_delay + self.failure.max(1) * self.period.max(1)
    }
}

/// An environment variable as the spec declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    /// The literal value, when the spec holds one (never a Secret's value).
    pub value: Option<String>,
    /// `secret foo key bar`, `config map foo key bar`, `field metadata.name`.
    pub from: Option<EnvSource>,
    pub cite: Cite,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSource {
    pub kind: RefKind,
    pub name: String,
    pub key: Option<String>,
    pub optional: bool,
}

/// A ConfigMap or a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RefKind {
    ConfigMap,
    Secret,
}

impl RefKind {
    pub fn word(self) -> &'static str {
        match self {
            RefKind::ConfigMap => "configmap",
            RefKind::Secret => "secret",
        }
    }
}

/// A volume mount of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub name: String,
    pub path: String,
    /// The volumeMount's `readOnly` (describe's `(ro)`).
    pub read_only: bool,
    pub cite: Cite,
    /// The kind of the volume mounted, as the pod's `volumes[]` name its
    /// source (`configMap`, `secret`, `projected`, `downwardAPI`,
    /// `emptyDir`, `persistentVolumeClaim`, ...; describe's `Type:` is
    /// read as the same word), when the input has the volume.
    pub source: Option<Field<String>>,
}

/// The volume sources the kubelet always mounts read-only, whatever the
/// volumeMount says: their mounter's `GetAttributes()` returns `ReadOnly:
/// true`, and `makeMounts` mounts `mount.ReadOnly || mustMountRO`
/// (kubernetes v1.36.3 pkg/kubelet/kubelet_pods.go makeMounts;
/// pkg/volume/configmap/configmap.go, secret/secret.go,
/// downwardapi/downwardapi.go, projected/projected.go GetAttributes; since
/// v1.10, kubernetes#58720).
pub const ALWAYS_READ_ONLY_SOURCES: &[&str] = &["configMap", "secret", "downwardAPI", "projected"];

impl Mount {
    /// Whether `path` is the mount's path or lies under it.
    pub fn covers(&self, path: &str) -> bool {
        let root = self.path.trim_end_matches('/');
        root.is_empty()
            || path == root
            || path
                .strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('/'))
    }

    /// The volume's source when the kubelet mounts it read-only whatever
    /// `readOnly` says (a ConfigMap, Secret, downwardAPI or projected volume).
    pub fn kubelet_read_only(&self) -> Option<&Field<String>> {
        self.source
            .as_ref()
            .filter(|s| ALWAYS_READ_ONLY_SOURCES.contains(&s.value.as_str()))
    }

    /// Whether the container sees this mount read-only: `readOnly: true`,
    /// or a source the kubelet always mounts read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only || self.kubelet_read_only().is_some()
    }
}

/// One container of the pod: spec and status together.
#[derive(Debug, Clone, Default)]
pub struct Container {
    pub name: String,
    pub kind: ContainerKind,
    pub image: Option<String>,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub state: Option<ContainerState>,
    pub last_state: Option<ContainerState>,
    pub ready: Option<bool>,
    pub restart_count: Option<Field<u32>>,
    pub limits: BTreeMap<String, Field<String>>,
    pub requests: BTreeMap<String, Field<String>>,
    pub probes: Vec<Probe>,
    pub env: Vec<EnvVar>,
    pub mounts: Vec<Mount>,
    pub ports: Vec<u16>,
    pub run_as_non_root: Option<Field<bool>>,
    pub run_as_user: Option<Field<i64>>,
    /// The container's `securityContext.readOnlyRootFilesystem`, read only
    /// from a container spec (so its `volumeMounts` were read too; the
    /// pod's securityContext has no such field, and `kubectl describe` does
    /// not print it): `None` when the input does not say.
    pub read_only_root: Option<Field<bool>>,
    /// Devices the kubelet reports unhealthy (`allocatedResourcesStatus`).
    pub unhealthy_devices: Vec<Field<String>>,
    /// Where the container's spec (its image, command and args) was read:
    /// `None` when only its status was, so an empty `command` says nothing.
    pub spec_from: Option<SpecFrom>,
    /// `tty: true` / `stdin: true` in the container spec (read only from a
    /// pod or workload object; `kubectl describe` prints neither).
    pub tty: Option<Field<bool>>,
    pub stdin: Option<Field<bool>>,
}

/// Where a container's spec was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpecFrom {
    /// `kubectl describe pod`: it prints Command and Args when they are
    /// set, never tty or stdin.
    Describe,
    /// A pod or workload object (YAML or JSON): every field is there.
    Object,
}

impl Container {
    pub fn named(name: impl Into<String>) -> Self {
        Container {
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn probe(&self, kind: ProbeKind) -> Option<&Probe> {
        self.probes.iter().find(|p| p.kind == kind)
    }

    /// The most recent termination: `lastState.terminated`, or `state.terminated`.
    pub fn last_termination(&self) -> Option<&ContainerState> {
        self.last_state
            .as_ref()
            .filter(|s| s.kind == StateKind::Terminated)
            .or(self
                .state
                .as_ref()
                .filter(|s| s.kind == StateKind::Terminated))
    }

    pub fn waiting_reason(&self) -> Option<&Field<String>> {
        self.state
            .as_ref()
            .filter(|s| s.kind == StateKind::Waiting)
            .and_then(|s| s.reason.as_ref())
    }

    pub fn restarts(&self) -> u32 {
        self.restart_count.as_ref().map_or(0, |f| f.value)
    }

    /// Merge facts about the same container read from another input.
    pub fn merge(&mut self, other: Container) {
        if self.kind == ContainerKind::Main && other.kind != ContainerKind::Main {
            self.kind = other.kind;
        }
        self.image = self.image.take().or(other.image);
        if self.command.is_empty() {
            self.command = other.command;
        }
        if self.args.is_empty() {
            self.args = other.args;
        }
        self.state = self.state.take().or(other.state);
        self.last_state = self.last_state.take().or(other.last_state);
        self.ready = self.ready.or(other.ready);
        self.restart_count = self.restart_count.take().or(other.restart_count);
        for (k, v) in other.limits {
            self.limits.entry(k).or_insert(v);
        }
        for (k, v) in other.requests {
            self.requests.entry(k).or_insert(v);
        }
        for p in other.probes {
            if self.probe(p.kind).is_none() {
                self.probes.push(p);
            }
        }
        for e in other.env {
            if !self.env.iter().any(|x| x.name == e.name) {
                self.env.push(e);
            }
        }
        for m in other.mounts {
            match self.mounts.iter_mut().find(|x| x.path == m.path) {
                Some(x) => x.source = x.source.take().or(m.source),
                None => self.mounts.push(m),
            }
        }
        for p in other.ports {
            if !self.ports.contains(&p) {
                self.ports.push(p);
            }
        }
        self.run_as_non_root = self.run_as_non_root.take().or(other.run_as_non_root);
        self.run_as_user = self.run_as_user.take().or(other.run_as_user);
        self.read_only_root = self.read_only_root.take().or(other.read_only_root);
        self.unhealthy_devices.extend(other.unhealthy_devices);
        self.spec_from = self.spec_from.max(other.spec_from);
        self.tty = self.tty.take().or(other.tty);
        self.stdin = self.stdin.take().or(other.stdin);
    }

    /// Whether the container keeps a terminal or stdin open (`tty: true` or
    /// `stdin: true`), so a shell or REPL as its process waits for input
    /// instead of exiting: `Some(false)` only when the spec was read from an
    /// object, where an absent field means false.
    pub fn interactive(&self) -> Option<bool> {
        let set = |f: &Option<Field<bool>>| f.as_ref().is_some_and(|f| f.value);
        if set(&self.tty) || set(&self.stdin) {
            return Some(true);
        }
        (self.spec_from == Some(SpecFrom::Object)).then_some(false)
    }

    /// The spec sets neither `command` nor `args`, as far as the input shows
    /// (`None` when the container's spec was not read at all).
    pub fn runs_image_default(&self) -> Option<bool> {
        self.spec_from?;
        Some(self.command.is_empty() && self.args.is_empty())
    }
}

/// A Kubernetes event about the pod (or a table row of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `Normal` or `Warning` (empty when the paste cut it).
    pub kind: String,
    pub reason: String,
    pub message: String,
    /// `pod/NAME`, `spec.containers{app}` or the like, when given.
    pub object: Option<String>,
    pub count: Option<u32>,
    pub cite: Cite,
}

impl Event {
    pub fn is_warning(&self) -> bool {
        self.kind.eq_ignore_ascii_case("warning")
    }
}

/// What the owner chain says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    pub kind: String,
    pub name: String,
    /// True when read from the object; false when inferred from the pod's name.
    pub observed: bool,
}

impl Owner {
    /// Whether this controller expects its pods to run forever.
    pub fn expects_service(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "ReplicaSet" | "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicationController"
        )
    }
}

/// A PersistentVolumeClaim as `kubectl get pvc` or its YAML shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pvc {
    pub name: String,
    pub phase: Option<String>,
    pub capacity: Option<String>,
    pub storage_class: Option<String>,
    pub cite: Cite,
}

/// A ConfigMap or Secret: key names only, and for Secrets the size of each
/// value (never the value itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigObject {
    pub kind: RefKind,
    pub name: String,
    pub keys: Vec<(String, Option<u64>)>,
    pub cite: Cite,
}

/// Another object the pod depends on (a Service its logs fail to reach, its
/// ServiceAccount), and whether it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    pub name: String,
    pub exists: Option<bool>,
    pub cite: Cite,
}

/// Node facts that matter for a crash loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    pub name: String,
    pub conditions: Vec<Field<String>>,
    pub allocatable: BTreeMap<String, String>,
    pub taints: Vec<String>,
}

/// Memory or CPU usage from `kubectl top` or metrics.k8s.io.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    pub container: Option<String>,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub cite: Cite,
}

/// Evidence that is absent, and what it would have told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Missing {
    pub what: String,
    pub why: String,
    /// What would let crashdoc read it (an RBAC rule), apart from why it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Everything known about one pod.
#[derive(Debug, Clone, Default)]
pub struct Pod {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub owner: Option<Owner>,
    pub phase: Option<Field<String>>,
    pub reason: Option<Field<String>>,
    pub message: Option<Field<String>>,
    /// The STATUS column of `kubectl get pods` (`Init:CrashLoopBackOff`, ...).
    pub listed_status: Option<Field<String>>,
    pub listed_restarts: Option<u32>,
    pub node_name: Option<String>,
    pub restart_policy: Option<Field<String>>,
    pub containers: Vec<Container>,
    pub events: Vec<Event>,
    pub logs: Vec<crate::scan::LogScan>,
    /// The text of structured inputs (describe output, YAML, event tables),
    /// scanned line by line like a log, so that evidence outside the layout
    /// its parser expects is still seen. Not a container's output.
    pub texts: Vec<crate::scan::LogScan>,
    pub pvcs: Vec<Pvc>,
    pub config_objects: Vec<ConfigObject>,
    pub object_refs: Vec<ObjectRef>,
    pub node: Option<Node>,
    pub usage: Vec<Usage>,
    /// Input files that fed this pod.
    pub sources: Vec<String>,
    /// Things the reader noticed that are not evidence (ignored files, ...).
    pub notes: Vec<String>,
    /// What the revision comparison reads: the workload's revisions, its
    /// other pods, their nodes, config change times (shared by the pods of
    /// one folder; empty when the input has none).
    pub rollout: std::sync::Arc<crate::ingest::rollout::RolloutInput>,
}

impl Pod {
    pub fn container(&self, name: &str) -> Option<&Container> {
        self.containers.iter().find(|c| c.name == name)
    }

    pub fn container_mut_or_insert(&mut self, name: &str) -> &mut Container {
        if let Some(i) = self.containers.iter().position(|c| c.name == name) {
            &mut self.containers[i]
        } else {
            self.containers.push(Container::named(name));
            let last = self.containers.len() - 1;
            &mut self.containers[last]
        }
    }

    /// `namespace/name` or what is known of it.
    pub fn display_name(&self) -> String {
        match (&self.namespace, &self.name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}"),
            (None, Some(n)) => n.clone(),
            _ => "(unnamed pod)".to_string(),
        }
    }

    pub fn status_is(&self, s: &str) -> bool {
        self.listed_status
            .as_ref()
            .is_some_and(|f| f.value.eq_ignore_ascii_case(s))
    }

    pub fn status_contains(&self, s: &str) -> bool {
        self.listed_status.as_ref().is_some_and(|f| {
            f.value
                .to_ascii_lowercase()
                .contains(&s.to_ascii_lowercase())
        })
    }

    pub fn phase_is(&self, p: &str) -> bool {
        self.phase
            .as_ref()
            .is_some_and(|f| f.value.eq_ignore_ascii_case(p))
    }

    pub fn has_previous_logs(&self) -> bool {
        self.logs
            .iter()
            .any(|l| l.kind == crate::scan::LogKind::Previous)
    }

    /// Whether any container restarted or the pod is in a crash loop.
    pub fn is_restarting(&self) -> bool {
        self.listed_restarts.unwrap_or(0) > 0
            || self.status_contains("CrashLoopBackOff")
            || self
                .containers
                .iter()
                .any(|c| c.restarts() > 0 || c.last_state.is_some())
            || self.containers.iter().any(|c| {
                c.waiting_reason()
                    .is_some_and(|r| r.value == "CrashLoopBackOff")
            })
            || self
                .events
                .iter()
                .any(|e| e.reason == "BackOff" && e.message.contains("restarting"))
    }
}
