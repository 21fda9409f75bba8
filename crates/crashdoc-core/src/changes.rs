//! What changed between two revisions of a workload: a diff of two pod
//! templates by meaning (env entries keyed by name, quantities by value,
//! probes with their defaults, tolerations as a set), and the choice of the
//! failing revision and the last healthy one among a workload's ReplicaSets.
//!
//! Pure: the templates and ReplicaSets come in as parsed JSON/YAML values
//! (`kubectl get ... -o json|yaml`), nothing is read here. [`analyze`]
//! (in `changes/analysis.rs`) joins the revisions, config change times,
//! nodes and first crashes into each pod's `changes` report.
//!
//! Secrets: an env `value` is shown only when its variable's name cannot
//! name a secret (`*KEY*`, `*TOKEN*`, `*PASSWORD*`, `*SECRET*`, ...) and then
//! through [`crate::redact::redact`]; otherwise the change says only that the
//! value changed.

pub mod analysis;
pub mod config;
pub mod nodes;
pub mod pods;
pub mod project;
pub mod revisions;

pub use analysis::{ChangesReport, Verdict, analyze};

use crate::redact::redact;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Whether a field appeared, disappeared or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

/// One difference between the old and the new pod template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The field, with containers, env entries and volumes named:
    /// `spec.containers[app].env[DB_HOST]`, `spec.volumes[cache]`.
    pub path: String,
    pub kind: ChangeKind,
    /// The old value for display, redacted; `None` when absent or hidden.
    pub old: Option<String>,
    /// The new value for display, redacted; `None` when absent or hidden.
    pub new: Option<String>,
    /// False for cosmetic changes (labels, annotations such as
    /// `kubectl.kubernetes.io/restartedAt`) that cannot change how a
    /// container runs.
    pub relevant: bool,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.kind {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        };
        write!(f, "{}: {word}", self.path)?;
        match (&self.old, &self.new) {
            (Some(o), Some(n)) => write!(f, ": {o} -> {n}"),
            (None, Some(n)) => write!(f, ": {n}"),
            (Some(o), None) => write!(f, ": was {o}"),
            (None, None) => Ok(()),
        }
    }
}

/// The pod template inside a workload or ReplicaSet object, or the value
/// itself when it is already a template (`metadata` + `spec`).
pub fn template_of(v: &Value) -> &Value {
    v.pointer("/spec/template").unwrap_or(v)
}

/// Diff two pod templates (`spec.template` of a Deployment, StatefulSet,
/// DaemonSet or ReplicaSet; a whole such object is accepted too).
pub fn diff_templates(old: &Value, new: &Value) -> Vec<Change> {
    let (old, new) = (template_of(old), template_of(new));
    let mut d = Diff::default();
    for part in ["labels", "annotations"] {
        let path = format!("metadata.{part}");
        d.keyed_scalars(
            &path,
            old.pointer(&format!("/metadata/{part}")),
            new.pointer(&format!("/metadata/{part}")),
            false,
        );
    }
    let empty = Value::Object(Map::new());
    let os = old.get("spec").unwrap_or(&empty);
    let ns = new.get("spec").unwrap_or(&empty);
    d.pod_spec(os, ns);
    d.out
}

#[derive(Default)]
struct Diff {
    out: Vec<Change>,
}

const CONTAINER_DONE: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "env",
    "envFrom",
    "volumeMounts",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "securityContext",
];

const POD_DONE: &[&str] = &[
    "containers",
    "initContainers",
    "volumes",
    "securityContext",
    "nodeSelector",
    "affinity",
    "tolerations",
    "serviceAccountName",
    "serviceAccount",
];

impl Diff {
    fn push(
        &mut self,
        path: impl Into<String>,
        kind: ChangeKind,
        old: Option<String>,
        new: Option<String>,
        relevant: bool,
    ) {
        // Compared raw, shown redacted: two different tokens are still a
        // change, and neither is printed.
        let show = |v: Option<String>| v.map(|v| redact(&v).into_owned());
        self.out.push(Change {
            path: path.into(),
            kind,
            old: show(old),
            new: show(new),
            relevant,
        });
    }

    /// Compare two optional display values; `Added`/`Removed`/`Changed`.
    fn values(&mut self, path: &str, old: Option<String>, new: Option<String>, relevant: bool) {
        match (old, new) {
            (None, None) => {}
            (None, Some(n)) => self.push(path, ChangeKind::Added, None, Some(n), relevant),
            (Some(o), None) => self.push(path, ChangeKind::Removed, Some(o), None, relevant),
            (Some(o), Some(n)) if o != n => {
                self.push(path, ChangeKind::Changed, Some(o), Some(n), relevant)
            }
            _ => {}
        }
    }

    /// A map of scalars (labels, annotations, nodeSelector) key by key.
    fn keyed_scalars(&mut self, path: &str, old: Option<&Value>, new: Option<&Value>, rel: bool) {
        let o = scalar_map(old);
        let n = scalar_map(new);
        for k in o.keys().chain(n.keys()).collect::<BTreeSet<_>>() {
            let p = format!("{path}[{k}]");
            self.values(&p, o.get(k).cloned(), n.get(k).cloned(), rel);
        }
    }

    fn pod_spec(&mut self, o: &Value, n: &Value) {
        let sa = |s: &Value| {
            s.get("serviceAccountName")
                .or_else(|| s.get("serviceAccount"))
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string()
        };
        self.values("spec.serviceAccountName", Some(sa(o)), Some(sa(n)), true);

        self.containers("spec.containers", o.get("containers"), n.get("containers"));
        self.containers(
            "spec.initContainers",
            o.get("initContainers"),
            n.get("initContainers"),
        );

        // Volumes by name, each source compared whole.
        let ov = named(o.get("volumes"));
        let nv = named(n.get("volumes"));
        for k in ov.keys().chain(nv.keys()).collect::<BTreeSet<_>>() {
            self.values(
                &format!("spec.volumes[{k}]"),
                ov.get(k).map(|v| volume_source(v)),
                nv.get(k).map(|v| volume_source(v)),
                true,
            );
        }

        self.flat(
            "spec.securityContext",
            o.get("securityContext"),
            n.get("securityContext"),
        );
        self.keyed_scalars(
            "spec.nodeSelector",
            o.get("nodeSelector"),
            n.get("nodeSelector"),
            true,
        );
        self.values(
            "spec.affinity",
            o.get("affinity").filter(|v| !is_empty(v)).map(compact),
            n.get("affinity").filter(|v| !is_empty(v)).map(compact),
            true,
        );
        // Tolerations are a set: order does not matter.
        let ot = set_of(o.get("tolerations"));
        let nt = set_of(n.get("tolerations"));
        for t in ot.difference(&nt) {
            self.push(
                "spec.tolerations",
                ChangeKind::Removed,
                Some(t.clone()),
                None,
                true,
            );
        }
        for t in nt.difference(&ot) {
            self.push(
                "spec.tolerations",
                ChangeKind::Added,
                None,
                Some(t.clone()),
                true,
            );
        }
        self.rest("spec", o, n, POD_DONE);
    }

    /// Containers keyed by name; an added or removed init container that is
    /// a sidecar (`restartPolicy: Always`) says so.
    fn containers(&mut self, path: &str, o: Option<&Value>, n: Option<&Value>) {
        let oc = named(o);
        let nc = named(n);
        for k in oc.keys().chain(nc.keys()).collect::<BTreeSet<_>>() {
            let p = format!("{path}[{k}]");
            match (oc.get(k), nc.get(k)) {
                (Some(a), Some(b)) => self.container(&p, a, b),
                (a, b) => {
                    let show = |c: &Value| {
                        let image = c.get("image").and_then(Value::as_str).unwrap_or("?");
                        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
                            format!("sidecar {image}")
                        } else {
                            image.to_string()
                        }
                    };
                    self.values(&p, a.map(|c| show(c)), b.map(|c| show(c)), true);
                }
            }
        }
    }

    fn container(&mut self, p: &str, o: &Value, n: &Value) {
        let image = |c: &Value| c.get("image").and_then(Value::as_str).map(str::to_string);
        let (oi, ni) = (image(o), image(n));
        if normalize_image(oi.as_deref()) != normalize_image(ni.as_deref()) {
            self.values(&format!("{p}.image"), oi, ni, true);
        }
        for f in ["command", "args"] {
            let words = |c: &Value| {
                c.get(f)
                    .and_then(Value::as_array)
                    .filter(|a| !a.is_empty())
                    .map(|a| a.iter().map(scalar).collect::<Vec<_>>())
            };
            let (ow, nw) = (words(o), words(n));
            if ow != nw {
                let join = |w: Vec<String>| format!("{w:?}");
                self.values(&format!("{p}.{f}"), ow.map(join), nw.map(join), true);
            }
        }
        self.env(p, o.get("env"), n.get("env"));

        let ef = |c: &Value| -> BTreeSet<String> {
            c.get("envFrom")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(env_from).collect())
                .unwrap_or_default()
        };
        let (oe, ne) = (ef(o), ef(n));
        for e in oe.difference(&ne) {
            self.push(
                format!("{p}.envFrom"),
                ChangeKind::Removed,
                Some(e.clone()),
                None,
                true,
            );
        }
        for e in ne.difference(&oe) {
            self.push(
                format!("{p}.envFrom"),
                ChangeKind::Added,
                None,
                Some(e.clone()),
                true,
            );
        }

        // Mounts keyed by mount path.
        let mounts = |c: &Value| -> BTreeMap<String, String> {
            c.get("volumeMounts")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|m| {
                            let path = m.get("mountPath").and_then(Value::as_str)?;
                            Some((path.to_string(), mount(m)))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (om, nm) = (mounts(o), mounts(n));
        for k in om.keys().chain(nm.keys()).collect::<BTreeSet<_>>() {
            self.values(
                &format!("{p}.volumeMounts[{k}]"),
                om.get(k).cloned(),
                nm.get(k).cloned(),
                true,
            );
        }

        for part in ["requests", "limits", "claims"] {
            let q = |c: &Value| c.pointer(&format!("/resources/{part}")).cloned();
            let (oq, nq) = (q(o), q(n));
            if part == "claims" {
                self.values(
                    &format!("{p}.resources.claims"),
                    oq.filter(|v| !is_empty(v)).map(|v| compact(&v)),
                    nq.filter(|v| !is_empty(v)).map(|v| compact(&v)),
                    true,
                );
                continue;
            }
            let (om, nm) = (scalar_map(oq.as_ref()), scalar_map(nq.as_ref()));
            for k in om.keys().chain(nm.keys()).collect::<BTreeSet<_>>() {
                let (a, b) = (om.get(k), nm.get(k));
                if let (Some(a), Some(b)) = (a, b)
                    && let (Some(x), Some(y)) = (crate::text::quantity(a), crate::text::quantity(b))
                    && same_quantity(x, y)
                {
                    continue;
                }
                self.values(
                    &format!("{p}.resources.{part}[{k}]"),
                    a.cloned(),
                    b.cloned(),
                    true,
                );
            }
        }

        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            let (a, b) = (o.get(probe), n.get(probe));
            let pp = format!("{p}.{probe}");
            match (a, b) {
                (Some(a), Some(b)) => {
                    self.flat(&pp, Some(&probe_defaults(a)), Some(&probe_defaults(b)))
                }
                (None, None) => {}
                (a, b) => self.values(&pp, a.map(compact), b.map(compact), true),
            }
        }
        self.flat(
            &format!("{p}.securityContext"),
            o.get("securityContext"),
            n.get("securityContext"),
        );
        self.rest(p, o, n, CONTAINER_DONE);
    }

    /// Env entries keyed by name, so that reordering is no change.
    fn env(&mut self, p: &str, o: Option<&Value>, n: Option<&Value>) {
        let (oe, ne) = (named(o), named(n));
        for k in oe.keys().chain(ne.keys()).collect::<BTreeSet<_>>() {
            let path = format!("{p}.env[{k}]");
            let secret = secret_name(k);
            let (a, b) = (
                oe.get(k).map(|v| env_source(v)),
                ne.get(k).map(|v| env_source(v)),
            );
            match (a, b) {
                (None, None) => {}
                (Some(a), Some(b)) if a == b => {}
                (Some(EnvSrc::Value(x)), Some(EnvSrc::Value(y)))
                    if secret || redact(&x) != x || redact(&y) != y =>
                {
                    self.push(path, ChangeKind::Changed, None, None, true)
                }
                (a, b) => {
                    let show = |s: EnvSrc| s.display(secret);
                    self.values(&path, a.map(show), b.map(show), true)
                }
            }
        }
    }

    /// Leaf by leaf, for nested objects such as a securityContext or a probe.
    fn flat(&mut self, p: &str, o: Option<&Value>, n: Option<&Value>) {
        let mut om = BTreeMap::new();
        let mut nm = BTreeMap::new();
        if let Some(o) = o {
            flatten(p, o, &mut om);
        }
        if let Some(n) = n {
            flatten(p, n, &mut nm);
        }
        for k in om.keys().chain(nm.keys()).collect::<BTreeSet<_>>() {
            self.values(k, om.get(k).cloned(), nm.get(k).cloned(), true);
        }
    }

    /// Every field not compared above, leaf by leaf (ports, lifecycle,
    /// terminationGracePeriodSeconds...), so that no change goes unsaid.
    fn rest(&mut self, p: &str, o: &Value, n: &Value, done: &[&str]) {
        let keep = |v: &Value| -> Value {
            let mut m = v.as_object().cloned().unwrap_or_default();
            m.retain(|k, _| !done.contains(&k.as_str()));
            Value::Object(m)
        };
        self.flat(p, Some(&keep(o)), Some(&keep(n)));
    }
}

/// How an env var gets its value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EnvSrc {
    Value(String),
    From(String),
}

impl EnvSrc {
    fn display(self, secret: bool) -> String {
        match self {
            EnvSrc::Value(_) if secret => "value (hidden)".to_string(),
            EnvSrc::Value(v) => {
                let r = redact(&v);
                if r != v {
                    "value (hidden)".to_string()
                } else {
                    format!("value {v:?}")
                }
            }
            EnvSrc::From(s) => s,
        }
    }
}

fn env_source(e: &Value) -> EnvSrc {
    let Some(from) = e.get("valueFrom") else {
        return EnvSrc::Value(e.get("value").map(scalar).unwrap_or_default());
    };
    let s = |r: &Value, f: &str| r.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let optional = |r: &Value| {
        if r.get("optional").and_then(Value::as_bool) == Some(true) {
            " (optional)"
        } else {
            ""
        }
    };
    if let Some(r) = from.get("configMapKeyRef") {
        EnvSrc::From(format!(
            "configMap {} key {}{}",
            s(r, "name"),
            s(r, "key"),
            optional(r)
        ))
    } else if let Some(r) = from.get("secretKeyRef") {
        EnvSrc::From(format!(
            "secret {} key {}{}",
            s(r, "name"),
            s(r, "key"),
            optional(r)
        ))
    } else if let Some(r) = from.get("fieldRef") {
        EnvSrc::From(format!("field {}", s(r, "fieldPath")))
    } else if let Some(r) = from.get("resourceFieldRef") {
        let c = s(r, "containerName");
        let c = if c.is_empty() {
            String::new()
        } else {
            format!(" of {c}")
        };
        EnvSrc::From(format!("resource {}{c}", s(r, "resource")))
    } else {
        EnvSrc::From(format!("valueFrom {}", compact(from)))
    }
}

/// A name that could hold a credential: its value is never shown.
pub fn secret_name(name: &str) -> bool {
    let u = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "SECRET",
        "CREDENTIAL",
        "AUTH",
        "PRIVATE",
        "CERT",
        "DSN",
        "PASS",
    ]
    .iter()
    .any(|w| u.contains(w))
}

fn env_from(e: &Value) -> String {
    let prefix = e
        .get("prefix")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(|p| format!(" prefix {p}"))
        .unwrap_or_default();
    for (field, word) in [("configMapRef", "configMap"), ("secretRef", "secret")] {
        if let Some(r) = e.get(field) {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            let opt = if r.get("optional").and_then(Value::as_bool) == Some(true) {
                " (optional)"
            } else {
                ""
            };
            return format!("{word} {name}{prefix}{opt}");
        }
    }
    compact(e)
}

fn mount(m: &Value) -> String {
    let mut s = format!(
        "volume {}",
        m.get("name").and_then(Value::as_str).unwrap_or("?")
    );
    if let Some(sp) = m
        .get("subPath")
        .and_then(Value::as_str)
        .filter(|x| !x.is_empty())
    {
        s.push_str(&format!(" subPath {sp}"));
    }
    if let Some(sp) = m
        .get("subPathExpr")
        .and_then(Value::as_str)
        .filter(|x| !x.is_empty())
    {
        s.push_str(&format!(" subPathExpr {sp}"));
    }
    if m.get("readOnly").and_then(Value::as_bool) == Some(true) {
        s.push_str(" read-only");
    }
    s
}

/// A volume's source in a few words: `configMap app-config`, `emptyDir`,
/// then the rest of its settings in compact JSON.
fn volume_source(v: &Value) -> String {
    let Some(m) = v.as_object() else {
        return compact(v);
    };
    let mut parts = Vec::new();
    for (k, src) in m.iter().filter(|(k, _)| k.as_str() != "name") {
        let name = src
            .get("name")
            .or_else(|| src.get("secretName"))
            .or_else(|| src.get("claimName"))
            .and_then(Value::as_str);
        let mut rest = src.as_object().cloned().unwrap_or_default();
        for f in ["name", "secretName", "claimName"] {
            rest.remove(f);
        }
        let mut s = k.clone();
        if let Some(n) = name {
            s.push(' ');
            s.push_str(n);
        }
        if !rest.is_empty() {
            s.push(' ');
            s.push_str(&compact(&Value::Object(rest)));
        }
        parts.push(s);
    }
    parts.sort();
    parts.join(", ")
}

/// Probe fields with the API's defaults filled in, so that an explicit
/// `periodSeconds: 10` is the same as none. Source: kubernetes v1.36.3
/// pkg/apis/core/v1/defaults.go (`SetDefaults_Probe`: timeoutSeconds 1,
/// periodSeconds 10, successThreshold 1, failureThreshold 3; an unset
/// initialDelaySeconds is 0).
fn probe_defaults(p: &Value) -> Value {
    let mut m = p.as_object().cloned().unwrap_or_default();
    for (k, d) in [
        ("initialDelaySeconds", 0),
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        m.entry(k.to_string()).or_insert(Value::from(d));
    }
    Value::Object(m)
}

/// `nginx`, `docker.io/library/nginx` and `nginx:latest` are one image.
fn normalize_image(i: Option<&str>) -> Option<String> {
    let i = i?.trim();
    let (name, digest) = match i.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (i, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let (repo, tag) = match last.rsplit_once(':') {
        Some((_, t)) => (&name[..name.len() - t.len() - 1], Some(t)),
        None => (name, None),
    };
    let repo = match repo.split_once('/') {
        None => format!("docker.io/library/{repo}"),
        Some((host, _)) if host.contains('.') || host.contains(':') || host == "localhost" => {
            repo.to_string()
        }
        Some(_) => format!("docker.io/{repo}"),
    };
    let repo = repo.replacen("index.docker.io/", "docker.io/", 1);
    Some(match (tag, digest) {
        (_, Some(d)) => format!("{repo}@{d}"),
        (Some(t), None) => format!("{repo}:{t}"),
        (None, None) => format!("{repo}:latest"),
    })
}

fn same_quantity(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-9)
}

/// A list of objects keyed by their `name` (containers, env, volumes).
fn named(v: Option<&Value>) -> BTreeMap<String, &Value> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|e| Some((e.get("name")?.as_str()?.to_string(), e)))
                .collect()
        })
        .unwrap_or_default()
}

fn scalar_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), scalar(v))).collect())
        .unwrap_or_default()
}

fn set_of(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(compact).collect())
        .unwrap_or_default()
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => compact(other),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Compact JSON with keys sorted (whatever the map's order). Raw: for
/// comparison; [`Diff::push`] redacts what is shown.
fn compact(v: &Value) -> String {
    canonical(v).to_string()
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            let mut out = Map::new();
            for (k, v) in sorted {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Objects into `path.key` leaves; arrays and scalars are leaves. Empty
/// objects and nulls count as absent.
fn flatten(path: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&format!("{path}.{k}"), x, out);
            }
        }
        x if is_empty(x) => {}
        x => {
            out.insert(path.to_string(), scalar(x));
        }
    }
}

/// A ReplicaSet as the revision choice needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaSetInfo {
    pub name: String,
    /// `deployment.kubernetes.io/revision` (kubernetes v1.36.3
    /// pkg/controller/deployment/util/deployment_util.go, `RevisionAnnotation`).
    pub revision: u64,
    /// `metadata.creationTimestamp`, as written.
    pub created: Option<String>,
    /// `spec.replicas` (the API's default 1 when absent).
    pub replicas: u64,
    /// `status.readyReplicas` (0 when absent).
    pub ready: u64,
}

impl ReplicaSetInfo {
    /// Read one ReplicaSet object; `None` without a name or a numeric
    /// revision annotation.
    pub fn from_json(rs: &Value) -> Option<ReplicaSetInfo> {
        let md = rs.get("metadata")?;
        let revision = md
            .pointer("/annotations/deployment.kubernetes.io~1revision")
            .and_then(Value::as_str)?
            .trim()
            .parse()
            .ok()?;
        Some(ReplicaSetInfo {
            name: md.get("name")?.as_str()?.to_string(),
            revision,
            created: md
                .get("creationTimestamp")
                .and_then(Value::as_str)
                .map(str::to_string),
            replicas: rs
                .pointer("/spec/replicas")
                .and_then(Value::as_u64)
                .unwrap_or(1),
            ready: rs
                .pointer("/status/readyReplicas")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    }

    /// Every ReplicaSet with a revision in a `kind: List` (or a bare array).
    pub fn from_list(list: &Value) -> Vec<ReplicaSetInfo> {
        list.get("items")
            .or(Some(list))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(ReplicaSetInfo::from_json).collect())
            .unwrap_or_default()
    }

    fn fully_ready(&self) -> bool {
        self.replicas > 0 && self.ready >= self.replicas
    }
}

/// Why the chosen revision counts as the last healthy one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealthyBasis {
    /// It still has ready pods now.
    StillReady,
    /// It is scaled to zero; it is the newest revision before the failing
    /// one, which a rollout replaced. Its health is inferred, not observed.
    Previous,
}

/// The failing revision and the last healthy one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revisions {
    pub failing: ReplicaSetInfo,
    pub last_healthy: Option<(ReplicaSetInfo, HealthyBasis)>,
}

/// The failing revision is the newest one (highest revision, then newest
/// creation) when it is not fully ready; `None` when it is, or when there
/// is no revision. The last healthy is the newest older revision with ready
/// pods, else the newest older one.
pub fn pick_revisions(sets: &[ReplicaSetInfo]) -> Option<Revisions> {
    let mut sorted: Vec<&ReplicaSetInfo> = sets.iter().collect();
    sorted.sort_by(|a, b| {
        (b.revision, b.created.as_deref()).cmp(&(a.revision, a.created.as_deref()))
    });
    let (failing, older) = sorted.split_first()?;
    if failing.fully_ready() {
        return None;
    }
    let older: Vec<&&ReplicaSetInfo> = older
        .iter()
        .filter(|r| r.revision < failing.revision)
        .collect();
    let last_healthy = older
        .iter()
        .find(|r| r.ready > 0)
        .map(|r| ((**r).clone(), HealthyBasis::StillReady))
        .or_else(|| {
            older
                .first()
                .map(|r| ((**r).clone(), HealthyBasis::Previous))
        });
    Some(Revisions {
        failing: (*failing).clone(),
        last_healthy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
metadata:
  labels:
    app: web
    pod-template-hash: 6d4cf56db6
  annotations:
    kubectl.kubernetes.io/restartedAt: "2026-11-30T10:00:00Z"
spec:
  serviceAccountName: web
  nodeSelector:
    pool: general
  tolerations:
  - key: gpu
    operator: Exists
    effect: NoSchedule
  - key: spot
    operator: Equal
    value: "true"
  volumes:
  - name: config
    configMap:
      name: web-config
  - name: cache
    emptyDir: {}
  securityContext:
    runAsNonRoot: true
  initContainers:
  - name: migrate
    image: registry.example.com/web:1.4.0
    command: ["/app/migrate"]
  containers:
  - name: app
    image: registry.example.com/web:1.4.0
    command: ["/app/server"]
    args: ["--port=8080"]
    env:
    - name: LOG_LEVEL
      value: info
    - name: API_TOKEN
      value: tok-old-0000
    - name: DB_HOST
      valueFrom:
        configMapKeyRef:
          name: web-config
          key: db_host
    envFrom:
    - configMapRef:
        name: web-env
    volumeMounts:
    - name: config
      mountPath: /etc/web
      readOnly: true
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
      limits:
        memory: 1Gi
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 10
    securityContext:
      readOnlyRootFilesystem: true
"#;

    fn yaml(s: &str) -> Value {
        serde_saphyr::from_str(s).expect("test yaml")
    }

    /// The base template with one edit applied at a JSON pointer.
    fn edit(pointer: &str, v: Value) -> Value {
        let mut t = yaml(BASE);
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        match t.pointer_mut(parent).expect("parent in base") {
            Value::Object(m) => {
                m.insert(key.to_string(), v);
            }
            Value::Array(a) => a[key.parse::<usize>().expect("index")] = v,
            other => panic!("not a container: {other}"),
        }
        t
    }

    fn diff_with(pointer: &str, v: Value) -> Vec<Change> {
        diff_templates(&yaml(BASE), &edit(pointer, v))
    }

    fn relevant(c: &[Change]) -> Vec<&Change> {
        c.iter().filter(|c| c.relevant).collect()
    }

    fn one(c: &[Change]) -> &Change {
        let r = relevant(c);
        assert_eq!(r.len(), 1, "{c:#?}");
        r[0]
    }

    #[test]
    fn identical_templates_have_no_change() {
        assert_eq!(diff_templates(&yaml(BASE), &yaml(BASE)), vec![]);
    }

    #[test]
    fn image_tag_and_digest() {
        let c = diff_with(
            "/spec/containers/0/image",
            "registry.example.com/web:1.5.0".into(),
        );
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].image");
        assert_eq!(c.kind, ChangeKind::Changed);
        assert_eq!(c.old.as_deref(), Some("registry.example.com/web:1.4.0"));
        assert_eq!(c.new.as_deref(), Some("registry.example.com/web:1.5.0"));
        let d = diff_with(
            "/spec/containers/0/image",
            "registry.example.com/web@sha256:abcd".into(),
        );
        assert_eq!(
            one(&d).new.as_deref(),
            Some("registry.example.com/web@sha256:abcd")
        );
    }

    #[test]
    fn same_image_spelled_differently_is_no_change() {
        let a = edit("/spec/containers/0/image", "nginx:latest".into());
        for b in ["nginx:latest", "nginx", "docker.io/library/nginx:latest"] {
            let b = edit("/spec/containers/0/image", b.into());
            assert_eq!(diff_templates(&a, &b), vec![], "{b}");
        }
        let b = edit("/spec/containers/0/image", "nginx:1.27".into());
        assert_eq!(
            one(&diff_templates(&a, &b)).path,
            "spec.containers[app].image"
        );
    }

    #[test]
    fn command_and_args() {
        let c = diff_with(
            "/spec/containers/0/args",
            serde_json::json!(["--port=9090"]),
        );
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].args");
        assert_eq!(c.new.as_deref(), Some(r#"["--port=9090"]"#));
        let c = diff_with(
            "/spec/containers/0/command",
            serde_json::json!(["/app/server2"]),
        );
        assert_eq!(one(&c).path, "spec.containers[app].command");
    }

    #[test]
    fn args_with_a_credential_are_redacted() {
        let c = diff_with(
            "/spec/containers/0/args",
            serde_json::json!(["--password=hunter2hunter2"]),
        );
        let new = one(&c).new.clone().unwrap_or_default();
        assert!(!new.contains("hunter2"), "{new}");
        assert!(new.contains("[REDACTED]"), "{new}");
    }

    #[test]
    fn token_like_values_still_count_as_changed() {
        let a = edit(
            "/spec/containers/0/env/0/value",
            "Bearer abcdefghijklmnop111".into(),
        );
        let b = edit(
            "/spec/containers/0/env/0/value",
            "Bearer abcdefghijklmnop222".into(),
        );
        let c = diff_templates(&a, &b);
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].env[LOG_LEVEL]");
        assert!(!format!("{c:?}").contains("abcdefghijklmnop"), "{c:?}");
        let a = edit(
            "/spec/containers/0/args",
            serde_json::json!(["--token=aaaaaaaaaaaa"]),
        );
        let b = edit(
            "/spec/containers/0/args",
            serde_json::json!(["--token=bbbbbbbbbbbb"]),
        );
        let c = diff_templates(&a, &b);
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].args");
        assert!(!format!("{c:?}").contains("bbbb"), "{c:?}");
    }

    #[test]
    fn env_value_change_shows_a_plain_value() {
        let c = diff_with("/spec/containers/0/env/0/value", "debug".into());
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].env[LOG_LEVEL]");
        assert_eq!(c.old.as_deref(), Some(r#"value "info""#));
        assert_eq!(c.new.as_deref(), Some(r#"value "debug""#));
    }

    #[test]
    fn secret_named_env_value_change_shows_neither_value() {
        let c = diff_with("/spec/containers/0/env/1/value", "tok-new-1111".into());
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].env[API_TOKEN]");
        assert_eq!(c.kind, ChangeKind::Changed);
        assert_eq!((c.old.as_deref(), c.new.as_deref()), (None, None));
        let text = format!("{c:?} {c}");
        assert!(!text.contains("tok-"), "{text}");
        assert_eq!(
            c.to_string(),
            "spec.containers[app].env[API_TOKEN]: changed"
        );
    }

    #[test]
    fn env_source_switch_to_a_renamed_key() {
        let c = diff_with(
            "/spec/containers/0/env/2/valueFrom/configMapKeyRef/key",
            "database_host".into(),
        );
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].env[DB_HOST]");
        assert_eq!(c.old.as_deref(), Some("configMap web-config key db_host"));
        assert_eq!(
            c.new.as_deref(),
            Some("configMap web-config key database_host")
        );
    }

    #[test]
    fn env_added_and_removed() {
        let mut t = yaml(BASE);
        let env = t
            .pointer_mut("/spec/containers/0/env")
            .and_then(Value::as_array_mut)
            .expect("env");
        env.remove(0);
        env.push(serde_json::json!({"name": "DB_PASSWORD", "value": "s3cr3t-value"}));
        let c = diff_templates(&yaml(BASE), &t);
        let r = relevant(&c);
        assert_eq!(r.len(), 2, "{c:#?}");
        assert_eq!(r[0].path, "spec.containers[app].env[DB_PASSWORD]");
        assert_eq!(r[0].kind, ChangeKind::Added);
        assert_eq!(r[0].new.as_deref(), Some("value (hidden)"));
        assert_eq!(r[1].path, "spec.containers[app].env[LOG_LEVEL]");
        assert_eq!(r[1].kind, ChangeKind::Removed);
    }

    #[test]
    fn reordered_env_is_no_change() {
        let mut t = yaml(BASE);
        let env = t
            .pointer_mut("/spec/containers/0/env")
            .and_then(Value::as_array_mut)
            .expect("env");
        env.reverse();
        assert_eq!(diff_templates(&yaml(BASE), &t), vec![]);
    }

    #[test]
    fn env_from() {
        let c = diff_with(
            "/spec/containers/0/envFrom/0",
            serde_json::json!({"secretRef": {"name": "web-env"}}),
        );
        let r = relevant(&c);
        assert_eq!(r.len(), 2, "{c:#?}");
        assert_eq!(r[0].kind, ChangeKind::Removed);
        assert_eq!(r[0].old.as_deref(), Some("configMap web-env"));
        assert_eq!(r[1].kind, ChangeKind::Added);
        assert_eq!(r[1].new.as_deref(), Some("secret web-env"));
    }

    #[test]
    fn volumes_and_mounts() {
        let c = diff_with("/spec/volumes/0/configMap/name", "web-config-v2".into());
        let c = one(&c);
        assert_eq!(c.path, "spec.volumes[config]");
        assert_eq!(c.new.as_deref(), Some("configMap web-config-v2"));
        let c = diff_with("/spec/containers/0/volumeMounts/0/readOnly", false.into());
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].volumeMounts[/etc/web]");
        assert_eq!(c.old.as_deref(), Some("volume config read-only"));
        assert_eq!(c.new.as_deref(), Some("volume config"));
    }

    #[test]
    fn resources_by_quantity() {
        let c = diff_with("/spec/containers/0/resources/limits/memory", "512Mi".into());
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].resources.limits[memory]");
        assert_eq!(
            (c.old.as_deref(), c.new.as_deref()),
            (Some("1Gi"), Some("512Mi"))
        );
        // Same quantity, other spelling: no change.
        let c = diff_with(
            "/spec/containers/0/resources/limits/memory",
            "1024Mi".into(),
        );
        assert_eq!(c, vec![]);
        let c = diff_with("/spec/containers/0/resources/requests/cpu", "0.5".into());
        assert_eq!(c, vec![]);
    }

    #[test]
    fn probes_with_defaults() {
        let c = diff_with("/spec/containers/0/livenessProbe/periodSeconds", 5.into());
        let c = one(&c);
        assert_eq!(c.path, "spec.containers[app].livenessProbe.periodSeconds");
        assert_eq!(
            (c.old.as_deref(), c.new.as_deref()),
            (Some("10"), Some("5"))
        );
        // An explicit default is the same as none.
        let c = diff_with(
            "/spec/containers/0/livenessProbe/failureThreshold",
            3.into(),
        );
        let mut t = yaml(BASE);
        if let Some(p) = t
            .pointer_mut("/spec/containers/0/livenessProbe")
            .and_then(Value::as_object_mut)
        {
            p.insert("failureThreshold".into(), 3.into());
        }
        assert_eq!(c, vec![]);
        assert_eq!(diff_templates(&yaml(BASE), &t), vec![]);
        let c = diff_with(
            "/spec/containers/0/startupProbe",
            serde_json::json!({"httpGet": {"path": "/healthz", "port": 8080}}),
        );
        assert_eq!(one(&c).path, "spec.containers[app].startupProbe");
        assert_eq!(one(&c).kind, ChangeKind::Added);
    }

    #[test]
    fn security_context() {
        let c = diff_with("/spec/securityContext/runAsNonRoot", false.into());
        assert_eq!(one(&c).path, "spec.securityContext.runAsNonRoot");
        let c = diff_with(
            "/spec/containers/0/securityContext/readOnlyRootFilesystem",
            false.into(),
        );
        assert_eq!(
            one(&c).path,
            "spec.containers[app].securityContext.readOnlyRootFilesystem"
        );
    }

    #[test]
    fn scheduling() {
        let c = diff_with("/spec/nodeSelector/pool", "gpu".into());
        assert_eq!(one(&c).path, "spec.nodeSelector[pool]");
        let c = diff_with(
            "/spec/affinity",
            serde_json::json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}),
        );
        assert_eq!(one(&c).path, "spec.affinity");
        assert_eq!(one(&c).kind, ChangeKind::Added);
        let c = diff_with("/spec/tolerations/1/value", "false".into());
        let r = relevant(&c);
        assert_eq!(r.len(), 2, "{c:#?}");
        assert!(r.iter().all(|c| c.path == "spec.tolerations"));
    }

    #[test]
    fn reordered_tolerations_are_no_change() {
        let mut t = yaml(BASE);
        if let Some(a) = t
            .pointer_mut("/spec/tolerations")
            .and_then(Value::as_array_mut)
        {
            a.reverse();
        }
        assert_eq!(diff_templates(&yaml(BASE), &t), vec![]);
    }

    #[test]
    fn service_account() {
        let c = diff_with("/spec/serviceAccountName", "web-v2".into());
        let c = one(&c);
        assert_eq!(c.path, "spec.serviceAccountName");
        assert_eq!(
            (c.old.as_deref(), c.new.as_deref()),
            (Some("web"), Some("web-v2"))
        );
    }

    #[test]
    fn init_containers_and_sidecars() {
        let mut t = yaml(BASE);
        if let Some(a) = t
            .pointer_mut("/spec/initContainers")
            .and_then(Value::as_array_mut)
        {
            a.clear();
            a.push(serde_json::json!({"name": "proxy", "image": "envoy:1.30", "restartPolicy": "Always"}));
        }
        let c = diff_templates(&yaml(BASE), &t);
        let r = relevant(&c);
        assert_eq!(r.len(), 2, "{c:#?}");
        assert_eq!(r[0].path, "spec.initContainers[migrate]");
        assert_eq!(r[0].kind, ChangeKind::Removed);
        assert_eq!(r[1].path, "spec.initContainers[proxy]");
        assert_eq!(r[1].kind, ChangeKind::Added);
        assert_eq!(r[1].new.as_deref(), Some("sidecar envoy:1.30"));
    }

    #[test]
    fn cosmetic_metadata_is_not_relevant() {
        let mut t = yaml(BASE);
        if let Some(m) = t
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            m.insert(
                "kubectl.kubernetes.io/restartedAt".into(),
                "2026-12-01T09:00:00Z".into(),
            );
        }
        if let Some(m) = t
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            m.insert("pod-template-hash".into(), "7f8b9c".into());
        }
        let c = diff_templates(&yaml(BASE), &t);
        assert_eq!(c.len(), 2, "{c:#?}");
        assert!(c.iter().all(|c| !c.relevant), "{c:#?}");
        assert!(relevant(&c).is_empty());
    }

    #[test]
    fn other_fields_are_not_missed() {
        let c = diff_with(
            "/spec/containers/0/ports",
            serde_json::json!([{"containerPort": 8080}]),
        );
        assert_eq!(one(&c).path, "spec.containers[app].ports");
    }

    #[test]
    fn a_whole_deployment_is_accepted() {
        let d = serde_json::json!({"kind": "Deployment", "spec": {"template": yaml(BASE)}});
        assert_eq!(diff_templates(&d, &yaml(BASE)), vec![]);
    }

    const RS: &str = r#"
items:
- metadata:
    name: web-5c9
    creationTimestamp: "2026-11-01T10:00:00Z"
    annotations: {deployment.kubernetes.io/revision: "1"}
  spec: {replicas: 0}
  status: {replicas: 0}
- metadata:
    name: web-6d4
    creationTimestamp: "2026-11-20T10:00:00Z"
    annotations: {deployment.kubernetes.io/revision: "2"}
  spec: {replicas: 0}
  status: {replicas: 0}
- metadata:
    name: web-7f8
    creationTimestamp: "2026-12-01T09:00:00Z"
    annotations: {deployment.kubernetes.io/revision: "3"}
  spec: {replicas: 3}
  status: {replicas: 3, readyReplicas: 0}
- metadata:
    name: no-revision
  spec: {replicas: 1}
"#;

    #[test]
    fn picks_failing_and_previous_revision() {
        let sets = ReplicaSetInfo::from_list(&yaml(RS));
        assert_eq!(sets.len(), 3);
        let r = pick_revisions(&sets).expect("failing");
        assert_eq!(
            (r.failing.name.as_str(), r.failing.revision),
            ("web-7f8", 3)
        );
        let (h, basis) = r.last_healthy.expect("healthy");
        assert_eq!(
            (h.name.as_str(), h.revision, basis),
            ("web-6d4", 2, HealthyBasis::Previous)
        );
    }

    #[test]
    fn prefers_an_older_revision_still_ready() {
        let mut sets = ReplicaSetInfo::from_list(&yaml(RS));
        // Mid-rollout: revision 1 still serves, revision 2 never became ready.
        sets[0].replicas = 2;
        sets[0].ready = 2;
        let r = pick_revisions(&sets).expect("failing");
        let (h, basis) = r.last_healthy.expect("healthy");
        assert_eq!((h.revision, basis), (1, HealthyBasis::StillReady));
    }

    #[test]
    fn a_ready_newest_revision_is_not_failing() {
        let mut sets = ReplicaSetInfo::from_list(&yaml(RS));
        sets[2].ready = 3;
        assert_eq!(pick_revisions(&sets), None);
        assert_eq!(pick_revisions(&[]), None);
        // One revision only: failing, nothing to compare with.
        let one = vec![sets[2].clone()];
        let mut one = one;
        one[0].ready = 1;
        let r = pick_revisions(&one).expect("failing");
        assert_eq!(r.last_healthy, None);
    }
}
