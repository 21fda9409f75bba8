//! Kubernetes objects as YAML or JSON: whole objects, lists, and the
//! fragments people paste (a `containerStatuses` block, a bare
//! `lastState.terminated`). Read into a generic tree, then walked by key, so
//! that any fragment that names the fields is understood.
//!
//! Secret values are never kept: only key names and decoded sizes.

use super::Doc;
use crate::model::*;
use serde_json::{Map, Value};

/// What objects in one document contribute.
#[derive(Debug, Default)]
pub struct Objects {
    /// Pods (or pod fragments) in document order.
    pub pods: Vec<Pod>,
    /// Container facts from workload templates (Deployment, ...), keyed by
    /// container name; merged into the pod by the assembler.
    pub template_containers: Vec<Container>,
    pub owners: Vec<Owner>,
    pub events: Vec<Event>,
    pub pvcs: Vec<Pvc>,
    pub config_objects: Vec<ConfigObject>,
    pub nodes: Vec<Node>,
    /// Set when the text was not valid YAML/JSON and only part was read.
    pub partial: Option<String>,
}

/// Parse YAML or JSON text into a tree. Falls back to a tolerant reader for
/// truncated or mangled YAML, and says so.
pub fn parse_tree(text: &str) -> (Option<Value>, Option<String>) {
    let t = skip_command_line(text.trim_start_matches('\u{feff}'));
    if t.trim_start().starts_with(['{', '[']) {
        match serde_json::from_str::<Value>(t) {
            Ok(v) => return (Some(v), None),
            Err(e) => {
                let v = super::tolerant::parse(t);
                return (
                    v,
                    Some(format!("not valid JSON ({e}); read what could be read")),
                );
            }
        }
    }
    match serde_saphyr::from_str::<Value>(t) {
        Ok(v) => (Some(v), None),
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            (
                super::tolerant::parse(t),
                Some(format!("not valid YAML ({first}); read what could be read")),
            )
        }
    }
}

/// A paste's section starts with the `$ kubectl get ... -o json|yaml` line
/// that printed it: the objects are what follows.
fn skip_command_line(t: &str) -> &str {
    let first = t.trim_start().lines().next().unwrap_or("");
    let cmd = first
        .trim_start_matches(['$', '#', '>'])
        .split_whitespace()
        .next();
    if matches!(cmd, Some("kubectl" | "oc" | "k" | "kc")) && first.contains(" get ") {
        let start = t.len() - t.trim_start().len() + first.len();
        return t.get(start..).unwrap_or(t);
    }
    t
}

/// Read every object in a YAML or JSON document.
pub fn parse(doc: &Doc) -> Objects {
    let (tree, partial) = parse_tree(&doc.text);
    let mut out = Objects {
        partial,
        ..Default::default()
    };
    if let Some(v) = tree {
        let mut w = Walker {
            doc,
            out: &mut out,
            depth: 0,
        };
        w.value(&v);
    }
    out
}

struct Walker<'a> {
    doc: &'a Doc,
    out: &'a mut Objects,
    depth: usize,
}

/// Kubernetes objects nest a few levels; anything deeper is skipped.
const MAX_WALK_DEPTH: usize = 48;

fn s(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(x) => Some(x.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Walker<'_> {
    /// Cite a field: the path, the quoted `key: value` line, and where it is.
    fn cite(&self, source: SourceKind, path: String, key: &str, value: &str) -> Cite {
        let text = format!("{key}: {value}");
        let mut c = Cite::new(source, path, text);
        if let Some(n) = self.find_line(key, value) {
            c.text = self
                .doc
                .text
                .lines()
                .nth(n)
                .unwrap_or("")
                .trim()
                .to_string();
            c.location = Some(format!(
                "{}:{}",
                self.doc.name,
                self.doc.line_offset + n as u64 + 1
            ));
        }
        c
    }

    fn find_line(&self, key: &str, value: &str) -> Option<usize> {
        self.doc.text.lines().position(|l| {
            let l = l.trim().trim_start_matches("- ");
            (l.starts_with(&format!("{key}:")) || l.starts_with(&format!("\"{key}\":")))
                && l.contains(value)
        })
    }

    fn value(&mut self, v: &Value) {
        if self.depth > MAX_WALK_DEPTH {
            return;
        }
        self.depth += 1;
        match v {
            Value::Array(items) => {
                for i in items {
                    self.value(i);
                }
            }
            Value::Object(m) => self.object(v, m),
            _ => {}
        }
        self.depth -= 1;
    }

    fn object(&mut self, v: &Value, m: &Map<String, Value>) {
        let kind = s(v, "kind").unwrap_or_default();
        match kind.as_str() {
            "List"
            | "PodList"
            | "EventList"
            | "ReplicaSetList"
            | "DeploymentList"
            | "NodeList"
            | "PersistentVolumeClaimList"
            | "ConfigMapList"
            | "SecretList" => {
                if let Some(items) = m.get("items") {
                    self.value(items);
                }
            }
            "Pod" => {
                let pod = self.pod(v);
                self.out.pods.push(pod);
            }
            "Event" => self.event(v),
            "Deployment"
            | "ReplicaSet"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "CronJob"
            | "ReplicationController" => {
                if let Some(name) = v.pointer("/metadata/name").and_then(Value::as_str) {
                    self.out.owners.push(Owner {
                        kind: kind.clone(),
                        name: name.to_string(),
                        observed: true,
                    });
                }
                let spec = v
                    .pointer("/spec/template/spec")
                    .or_else(|| v.pointer("/spec/jobTemplate/spec/template/spec"));
                if let Some(spec) = spec {
                    let mut p = Pod::default();
                    self.pod_spec(spec, &mut p);
                    self.out.template_containers.extend(p.containers);
                }
            }
            "ConfigMap" | "Secret" => self.config_object(v, &kind),
            "PersistentVolumeClaim" => {
                let name = v
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let phase = v
                    .pointer("/status/phase")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let cite = self.cite(
                    SourceKind::Object,
                    format!("pvc/{name}.status.phase"),
                    "phase",
                    phase.as_deref().unwrap_or(""),
                );
                self.out.pvcs.push(Pvc {
                    name,
                    phase,
                    capacity: v
                        .pointer("/status/capacity/storage")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    storage_class: v
                        .pointer("/spec/storageClassName")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    cite,
                });
            }
            "Node" => self.node(v),
            _ => {
                // A fragment: recognise it by its keys.
                let looks_like_pod = m.contains_key("containerStatuses")
                    || m.contains_key("initContainerStatuses")
                    || m.contains_key("containers")
                    || m.contains_key("lastState")
                    || m.contains_key("state")
                    || m.contains_key("exitCode")
                    || m.contains_key("mountPath")
                    || m.contains_key("securityContext")
                    || m.contains_key("livenessProbe")
                    || (m.contains_key("status") && m.contains_key("spec"))
                    || (m.contains_key("metadata")
                        && (m.contains_key("spec") || m.contains_key("status")));
                if looks_like_pod {
                    let pod = self.pod(v);
                    self.out.pods.push(pod);
                } else {
                    for (_, child) in m {
                        self.value(child);
                    }
                }
            }
        }
    }

    fn pod(&mut self, v: &Value) -> Pod {
        let mut pod = Pod::default();
        let meta = v.get("metadata").unwrap_or(&Value::Null);
        pod.name = s(meta, "name");
        pod.namespace = s(meta, "namespace");
        if let Some(owners) = meta.get("ownerReferences").and_then(Value::as_array)
            && let Some(o) = owners
                .iter()
                .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
                .or(owners.first())
        {
            pod.owner = Some(Owner {
                kind: s(o, "kind").unwrap_or_default(),
                name: s(o, "name").unwrap_or_default(),
                observed: true,
            });
        }
        // Whole object, or a spec/status fragment, or the fragment itself.
        let spec = v.get("spec").unwrap_or(v);
        self.pod_spec(spec, &mut pod);
        let status = v.get("status").unwrap_or(v);
        self.pod_status(status, &mut pod);
        // A bare container status (`lastState:` or `exitCode:` at the top).
        if v.get("containerStatuses").is_none() && v.get("status").is_none() {
            if v.get("lastState").is_some() || v.get("state").is_some() {
                let c = self.container_status(v, "containerStatuses", ContainerKind::Main);
                merge_container(&mut pod, c);
            } else if v.get("exitCode").is_some() {
                let mut c = Container::named(s(v, "name").unwrap_or_default());
                c.last_state = Some(self.state(v, "terminated", &c.name.clone(), "lastState"));
                merge_container(&mut pod, c);
            }
        }
        if let Some(mounts) = v
            .get("mountPath")
            .map(|_| vec![v.clone()])
            .or_else(|| v.as_array().cloned())
        {
            let mut c = Container::named("");
            self.mounts(&Value::Array(mounts), &mut c);
            if !c.mounts.is_empty() {
                merge_container(&mut pod, c);
            }
        }
        pod
    }

    fn pod_spec(&mut self, spec: &Value, pod: &mut Pod) {
        if let Some(rp) = s(spec, "restartPolicy") {
            let cite = self.cite(
                SourceKind::Spec,
                "spec.restartPolicy".into(),
                "restartPolicy",
                &rp,
            );
            pod.restart_policy = Some(Field::new(rp, cite));
        }
        if let Some(n) = s(spec, "nodeName") {
            pod.node_name = Some(n);
        }
        let pod_sc = spec.get("securityContext");
        let sources = self.volume_sources(spec);
        for (key, kind) in [
            ("initContainers", ContainerKind::Init),
            ("containers", ContainerKind::Main),
            ("ephemeralContainers", ContainerKind::Ephemeral),
        ] {
            let Some(list) = spec.get(key).and_then(Value::as_array) else {
                continue;
            };
            for cv in list {
                let mut c = self.container_spec(cv, key, kind);
                // A container entry with its image is the container's spec:
                // an absent command, args, tty or stdin is unset.
                if c.image.is_some() {
                    c.spec_from = Some(SpecFrom::Object);
                }
                if let Some(sc) = pod_sc {
                    self.security(sc, "spec.securityContext", &mut c);
                }
                for m in &mut c.mounts {
                    m.source = sources.get(&m.name).cloned();
                }
                merge_container(pod, c);
            }
        }
        // A securityContext fragment with no container around it.
        if spec.get("containers").is_none() && spec.get("initContainers").is_none() {
            if let Some(sc) = pod_sc {
                let mut c = Container::named("");
                self.security(sc, "spec.securityContext", &mut c);
                if c.run_as_non_root.is_some() || c.run_as_user.is_some() {
                    merge_container(pod, c);
                }
            }
            if spec.get("livenessProbe").is_some() || spec.get("resources").is_some() {
                let c = self.container_spec(spec, "containers", ContainerKind::Main);
                merge_container(pod, c);
            }
        }
    }

    fn container_spec(&mut self, cv: &Value, list: &str, kind: ContainerKind) -> Container {
        let name = s(cv, "name").unwrap_or_default();
        let mut c = Container::named(name.clone());
        c.kind = kind;
        if kind == ContainerKind::Init && s(cv, "restartPolicy").as_deref() == Some("Always") {
            c.kind = ContainerKind::Sidecar;
        }
        c.image = s(cv, "image");
        let strings = |k: &str| -> Vec<String> {
            cv.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        c.command = strings("command");
        c.args = strings("args");
        let base = format!("spec.{list}[{name}]");
        for key in ["tty", "stdin"] {
            if let Some(b) = cv.get(key).and_then(Value::as_bool) {
                let cite = self.cite(
                    SourceKind::Spec,
                    format!("{base}.{key}"),
                    key,
                    &b.to_string(),
                );
                let field = Some(Field::new(b, cite));
                if key == "tty" {
                    c.tty = field;
                } else {
                    c.stdin = field;
                }
            }
        }
        self.resources(cv, &base, &mut c);
        for pk in [
            ProbeKind::Liveness,
            ProbeKind::Readiness,
            ProbeKind::Startup,
        ] {
            if let Some(pv) = cv.get(pk.field()) {
                c.probes.push(self.probe(pv, pk, &base));
            }
        }
        if let Some(env) = cv.get("env").and_then(Value::as_array) {
            for e in env {
                c.env.push(self.env_var(e, &base));
            }
        }
        if let Some(m) = cv.get("volumeMounts") {
            self.mounts(m, &mut c);
        }
        if let Some(ports) = cv.get("ports").and_then(Value::as_array) {
            c.ports.extend(
                ports
                    .iter()
                    .filter_map(|p| p.get("containerPort").and_then(Value::as_u64))
                    .map(|p| p as u16),
            );
        }
        if let Some(sc) = cv.get("securityContext") {
            self.security(sc, &format!("{base}.securityContext"), &mut c);
            // A container's field only (PodSecurityContext has none).
            if let Some(b) = sc.get("readOnlyRootFilesystem").and_then(Value::as_bool) {
                let cite = self.cite(
                    SourceKind::Spec,
                    format!("{base}.securityContext.readOnlyRootFilesystem"),
                    "readOnlyRootFilesystem",
                    &b.to_string(),
                );
                c.read_only_root = Some(Field::new(b, cite));
            }
        }
        c
    }

    /// `resources.limits` and `resources.requests`, each value cited.
    fn resources(&mut self, cv: &Value, base: &str, c: &mut Container) {
        for (rk, target) in [("limits", true), ("requests", false)] {
            if let Some(m) = cv
                .pointer(&format!("/resources/{rk}"))
                .and_then(Value::as_object)
            {
                for (k, v) in m {
                    let val = match v {
                        Value::String(x) => x.clone(),
                        other => other.to_string(),
                    };
                    let cite = self.cite(
                        SourceKind::Spec,
                        format!("{base}.resources.{rk}.{k}"),
                        k,
                        &val,
                    );
                    let map = if target {
                        &mut c.limits
                    } else {
                        &mut c.requests
                    };
                    map.insert(k.clone(), Field::new(val, cite));
                }
            }
        }
    }

    /// A liveness, readiness or startup probe with Kubernetes' defaults for
    /// what it leaves out (timeout 1 s, period 10 s, thresholds 1 and 3).
    fn probe(&mut self, pv: &Value, pk: ProbeKind, base: &str) -> Probe {
        let path = format!("{base}.{}", pk.field());
        let mut p = Probe::new(
            pk,
            Cite::new(SourceKind::Spec, path.clone(), format!("{}:", pk.field())),
        );
        if let Some(n) = self.find_line(pk.field(), "") {
            p.cite.location = Some(format!(
                "{}:{}",
                self.doc.name,
                self.doc.line_offset + n as u64 + 1
            ));
        }
        let num = |k: &str, d: u32| pv.get(k).and_then(Value::as_u64).map_or(d, |n| n as u32);
        p.initial_delay = num("initialDelaySeconds", 0);
        p.timeout = num("timeoutSeconds", 1);
        p.period = num("periodSeconds", 10);
        p.success = num("successThreshold", 1);
        p.failure = num("failureThreshold", 3);
        p.handler = probe_handler(pv);
        p.cite.text = format!(
            "{}: initialDelaySeconds={} periodSeconds={} failureThreshold={} timeoutSeconds={}",
            pk.field(),
            p.initial_delay,
            p.period,
            p.failure,
            p.timeout
        );
        p
    }

    /// One `env` entry: a literal value (in the spec for all to see) or a
    /// ConfigMap/Secret key reference (a Secret's value is never fetched).
    fn env_var(&mut self, e: &Value, base: &str) -> EnvVar {
        let ename = s(e, "name").unwrap_or_default();
        let from = e.get("valueFrom").and_then(|vf| {
            let (kind, r) = if let Some(r) = vf.get("secretKeyRef") {
                (RefKind::Secret, r)
            } else {
                (RefKind::ConfigMap, vf.get("configMapKeyRef")?)
            };
            Some(EnvSource {
                kind,
                name: s(r, "name").unwrap_or_default(),
                key: s(r, "key"),
                optional: r.get("optional").and_then(Value::as_bool).unwrap_or(false),
            })
        });
        let cite = self.cite(
            SourceKind::Spec,
            format!("{base}.env[{ename}]"),
            "name",
            &ename,
        );
        // Literal values are kept (they are in the spec for all to see);
        // Secret-sourced values are never fetched.
        EnvVar {
            name: ename,
            value: s(e, "value"),
            from,
            cite,
        }
    }

    /// The source kind of each of the pod's volumes (`volumes[].configMap`,
    /// `.emptyDir`, ...: the one key beside `name`), by volume name.
    fn volume_sources(&mut self, spec: &Value) -> std::collections::HashMap<String, Field<String>> {
        let mut out = std::collections::HashMap::new();
        for v in spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(m)) = (s(v, "name"), v.as_object()) else {
                continue;
            };
            let Some(kind) = m.keys().find(|k| *k != "name") else {
                continue;
            };
            let cite = self.cite(
                SourceKind::Spec,
                format!("spec.volumes[{name}].{kind}"),
                kind,
                "",
            );
            out.insert(name, Field::new(kind.clone(), cite));
        }
        out
    }

    fn mounts(&mut self, m: &Value, c: &mut Container) {
        let Some(list) = m.as_array() else { return };
        for mv in list {
            let Some(path) = s(mv, "mountPath") else {
                continue;
            };
            let name = s(mv, "name").unwrap_or_default();
            let read_only = mv.get("readOnly").and_then(Value::as_bool).unwrap_or(false);
            let cite = self.cite(
                SourceKind::Spec,
                format!("spec.containers[{}].volumeMounts[{name}]", c.name),
                "mountPath",
                &path,
            );
            c.mounts.push(Mount {
                name,
                path,
                read_only,
                cite,
                source: None,
            });
        }
    }

    fn security(&mut self, sc: &Value, path: &str, c: &mut Container) {
        if let Some(b) = sc.get("runAsNonRoot").and_then(Value::as_bool) {
            let cite = self.cite(
                SourceKind::Spec,
                format!("{path}.runAsNonRoot"),
                "runAsNonRoot",
                &b.to_string(),
            );
            c.run_as_non_root.get_or_insert(Field::new(b, cite));
        }
        if let Some(u) = sc.get("runAsUser").and_then(Value::as_i64) {
            let cite = self.cite(
                SourceKind::Spec,
                format!("{path}.runAsUser"),
                "runAsUser",
                &u.to_string(),
            );
            c.run_as_user.get_or_insert(Field::new(u, cite));
        }
    }

    fn pod_status(&mut self, st: &Value, pod: &mut Pod) {
        for (k, target) in [("phase", 0), ("reason", 1), ("message", 2)] {
            // `reason` at the top of a bare termination fragment is not the pod's.
            if st.get("exitCode").is_some() {
                break;
            }
            if let Some(val) = s(st, k) {
                let cite = self.cite(SourceKind::Status, format!("status.{k}"), k, &val);
                let f = Some(Field::new(val, cite));
                match target {
                    0 => pod.phase = f,
                    1 => pod.reason = f,
                    _ => pod.message = f,
                }
            }
        }
        for (key, kind) in [
            ("initContainerStatuses", ContainerKind::Init),
            ("containerStatuses", ContainerKind::Main),
            ("ephemeralContainerStatuses", ContainerKind::Ephemeral),
        ] {
            let Some(list) = st.get(key).and_then(Value::as_array) else {
                continue;
            };
            for cs in list {
                let c = self.container_status(cs, key, kind);
                merge_container(pod, c);
            }
        }
    }

    fn container_status(&mut self, cs: &Value, list: &str, kind: ContainerKind) -> Container {
        let name = s(cs, "name").unwrap_or_default();
        let mut c = Container::named(name.clone());
        c.kind = kind;
        c.image = s(cs, "image");
        c.ready = cs.get("ready").and_then(Value::as_bool);
        for rs in cs
            .get("allocatedResourcesStatus")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let resource = s(rs, "name").unwrap_or_default();
            for r in rs
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let health = s(r, "health").unwrap_or_default();
                if health != "Healthy" {
                    let id = s(r, "resourceID").unwrap_or_default();
                    let cite = self.cite(
                        SourceKind::Status,
                        format!("status.{list}[{name}].allocatedResourcesStatus[{resource}]"),
                        "health",
                        &health,
                    );
                    c.unhealthy_devices
                        .push(Field::new(format!("{resource} {id} {health}"), cite));
                }
            }
        }
        if let Some(n) = cs.get("restartCount").and_then(Value::as_u64) {
            let cite = self.cite(
                SourceKind::Status,
                format!("status.{list}[{name}].restartCount"),
                "restartCount",
                &n.to_string(),
            );
            c.restart_count = Some(Field::new(n as u32, cite));
        }
        for (k, last) in [("state", false), ("lastState", true)] {
            let Some(sv) = cs.get(k).and_then(Value::as_object) else {
                continue;
            };
            for (sk, inner) in sv {
                if !matches!(sk.as_str(), "waiting" | "running" | "terminated") {
                    continue;
                }
                let st = self.state(inner, sk, &name, &format!("{list}[{name}].{k}"));
                if last {
                    c.last_state = Some(st);
                } else {
                    c.state = Some(st);
                }
            }
        }
        c
    }

    fn state(&mut self, inner: &Value, kind: &str, _name: &str, base: &str) -> ContainerState {
        let base = if base.starts_with("lastState") {
            format!("containerStatuses[{_name}].{base}")
        } else {
            base.to_string()
        };
        let sk = match kind {
            "waiting" => StateKind::Waiting,
            "running" => StateKind::Running,
            _ => StateKind::Terminated,
        };
        let mut st = ContainerState::new(
            sk,
            Cite::new(
                SourceKind::Status,
                format!("status.{base}.{kind}"),
                format!("{kind}:"),
            ),
        );
        if let Some(r) = s(inner, "reason") {
            let cite = self.cite(
                SourceKind::Status,
                format!("status.{base}.{kind}.reason"),
                "reason",
                &r,
            );
            st.reason = Some(Field::new(r, cite));
        }
        if let Some(m) = s(inner, "message") {
            let cite = self.cite(
                SourceKind::Status,
                format!("status.{base}.{kind}.message"),
                "message",
                &crate::text::clip(&m, 60),
            );
            st.message = Some(Field::new(m, cite));
        }
        if let Some(code) = inner.get("exitCode").and_then(Value::as_i64) {
            let cite = self.cite(
                SourceKind::Status,
                format!("status.{base}.{kind}.exitCode"),
                "exitCode",
                &code.to_string(),
            );
            st.exit_code = Some(Field::new(code as i32, cite));
        }
        st.signal = inner
            .get("signal")
            .and_then(Value::as_i64)
            .map(|x| x as i32);
        st.started_at = s(inner, "startedAt");
        st.finished_at = s(inner, "finishedAt");
        st
    }

    fn event(&mut self, v: &Value) {
        let reason = s(v, "reason").unwrap_or_default();
        let message = s(v, "message").or_else(|| s(v, "note")).unwrap_or_default();
        let object = v
            .get("involvedObject")
            .or_else(|| v.get("regarding"))
            .map(|o| {
                let kind = s(o, "kind").unwrap_or_default().to_ascii_lowercase();
                let name = s(o, "name").unwrap_or_default();
                match s(o, "fieldPath") {
                    Some(fp) => format!("{kind}/{name} {fp}"),
                    None => format!("{kind}/{name}"),
                }
            });
        // `events.json:12` where the message's line can be found, else the
        // item's index; the text is the event as kubectl prints it.
        let index = self.out.events.len();
        let line = self
            .doc
            .text
            .lines()
            .position(|l| l.contains("\"message\"") || l.trim_start().starts_with("message:"))
            .and(
                self.doc
                    .text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| {
                        l.contains("\"message\"") || l.trim_start().starts_with("message:")
                    })
                    .nth(index)
                    .map(|(n, _)| n),
            );
        let reference = match line {
            Some(n) => format!("{}:{}", self.doc.name, self.doc.line_offset + n as u64 + 1),
            None => format!("{}[{index}]", self.doc.name),
        };
        let kind_word = s(v, "type").unwrap_or_default();
        let cite = Cite::new(
            SourceKind::Event,
            reference,
            format!("{kind_word} {reason}: {message}")
                .trim()
                .to_string(),
        );
        self.out.events.push(Event {
            kind: s(v, "type").unwrap_or_default(),
            reason,
            message,
            object,
            count: v.get("count").and_then(Value::as_u64).map(|n| n as u32),
            cite,
        });
    }

    fn config_object(&mut self, v: &Value, kind: &str) {
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let rk = if kind == "Secret" {
            RefKind::Secret
        } else {
            RefKind::ConfigMap
        };
        let mut keys = Vec::new();
        for field in ["data", "stringData", "binaryData"] {
            if let Some(m) = v.get(field).and_then(Value::as_object) {
                for (k, val) in m {
                    // Sizes only: base64 length -> decoded bytes. The value is dropped here.
                    let size = val.as_str().map(|x| {
                        if field == "data" && rk == RefKind::Secret {
                            (x.trim().len() as u64 * 3 / 4)
                                .saturating_sub(x.matches('=').count() as u64)
                        } else {
                            x.len() as u64
                        }
                    });
                    keys.push((k.clone(), size));
                }
            }
        }
        let cite = self.cite(
            SourceKind::Object,
            format!("{}/{name}", rk.word()),
            "name",
            &name,
        );
        self.out.config_objects.push(ConfigObject {
            kind: rk,
            name,
            keys,
            cite,
        });
    }

    fn node(&mut self, v: &Value) {
        let mut n = Node {
            name: v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            ..Default::default()
        };
        if let Some(conds) = v.pointer("/status/conditions").and_then(Value::as_array) {
            for c in conds {
                let t = s(c, "type").unwrap_or_default();
                let st = s(c, "status").unwrap_or_default();
                if (t == "Ready" && st != "True") || (t != "Ready" && st == "True") {
                    let cite = self.cite(
                        SourceKind::Node,
                        format!("node/{}.status.conditions[{t}]", n.name),
                        "type",
                        &t,
                    );
                    n.conditions.push(Field::new(format!("{t}={st}"), cite));
                }
            }
        }
        if let Some(a) = v.pointer("/status/allocatable").and_then(Value::as_object) {
            for (k, val) in a {
                n.allocatable.insert(
                    k.clone(),
                    val.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| val.to_string()),
                );
            }
        }
        if let Some(t) = v.pointer("/spec/taints").and_then(Value::as_array) {
            for taint in t {
                n.taints.push(format!(
                    "{}={}:{}",
                    s(taint, "key").unwrap_or_default(),
                    s(taint, "value").unwrap_or_default(),
                    s(taint, "effect").unwrap_or_default()
                ));
            }
        }
        self.out.nodes.push(n);
    }
}

/// Merge a container into the pod by name (an unnamed one into the only one).
pub fn merge_container(pod: &mut Pod, c: Container) {
    if c.name.is_empty() && pod.containers.len() == 1 {
        pod.containers[0].merge(c);
        return;
    }
    if !c.name.is_empty()
        && let Some(i) = pod.containers.iter().position(|x| x.name.is_empty())
        && pod.containers.len() == 1
    {
        let mut named = c;
        let anon = pod.containers.remove(i);
        named.merge(anon);
        pod.containers.push(named);
        return;
    }
    match pod.containers.iter_mut().find(|x| x.name == c.name) {
        Some(x) => x.merge(c),
        None => pod.containers.push(c),
    }
}

/// How a probe checks: `http-get :PORT/PATH`, `exec [...]`, `tcp-socket :PORT`.
fn probe_handler(pv: &Value) -> String {
    if let Some(h) = pv.get("httpGet") {
        format!(
            "http-get :{}{}",
            h.get("port")
                .map(|x| x.to_string().trim_matches('"').to_string())
                .unwrap_or_default(),
            s(h, "path").unwrap_or_default()
        )
    } else if let Some(e) = pv.pointer("/exec/command") {
        format!("exec {e}")
    } else if let Some(t) = pv.get("tcpSocket") {
        format!(
            "tcp-socket :{}",
            t.get("port").map(|x| x.to_string()).unwrap_or_default()
        )
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::doc;

    #[test]
    fn full_pod_yaml() {
        let o = parse(&doc(
            "pod.yaml",
            "apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: prod
  ownerReferences:
  - kind: ReplicaSet
    name: web-6468f86645
    controller: true
spec:
  containers:
  - name: web
    image: web:1
    resources:
      limits:
        memory: 30Mi
    livenessProbe:
      httpGet: {path: /health, port: 8080}
      initialDelaySeconds: 5
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: s, key: token}
status:
  phase: Running
  containerStatuses:
  - name: web
    restartCount: 3
    lastState:
      terminated:
        exitCode: 137
        reason: OOMKilled
        startedAt: \"2025-01-14T08:41:17Z\"
        finishedAt: \"2025-01-14T08:41:38Z\"
    state:
      waiting: {reason: CrashLoopBackOff}
",
        ));
        assert!(o.partial.is_none());
        let p = &o.pods[0];
        assert_eq!(p.name.as_deref(), Some("web-1"));
        assert_eq!(p.owner.as_ref().unwrap().name, "web-6468f86645");
        let c = p.container("web").unwrap();
        assert_eq!(c.limits["memory"].value, "30Mi");
        let t = c.last_termination().unwrap();
        assert_eq!(t.exit(), Some(137));
        assert_eq!(t.run_seconds(), Some(21));
        let r = t.reason.as_ref().unwrap();
        assert_eq!(
            r.cite.reference,
            "status.containerStatuses[web].lastState.terminated.reason"
        );
        assert_eq!(r.cite.location.as_deref(), Some("pod.yaml:32"));
        assert_eq!(c.waiting_reason().unwrap().value, "CrashLoopBackOff");
        assert_eq!(c.probe(ProbeKind::Liveness).unwrap().initial_delay, 5);
        assert_eq!(
            c.env[0].from.as_ref().unwrap().key.as_deref(),
            Some("token")
        );
    }

    /// readOnlyRootFilesystem is a container's field: read from the
    /// container's securityContext with its place, never from the pod's;
    /// each mount carries its volume's source.
    #[test]
    fn read_only_root_and_volume_sources() {
        let o = parse(&doc(
            "pod.yaml",
            "apiVersion: v1
kind: Pod
metadata:
  name: agent-0
spec:
  securityContext:
    runAsUser: 2000
  containers:
  - name: agent
    image: agent:3
    securityContext:
      readOnlyRootFilesystem: true
    volumeMounts:
    - name: conf
      mountPath: /etc/agent
    - name: spool
      mountPath: /var/spool/agent
  - name: shipper
    image: shipper:1
  volumes:
  - name: conf
    configMap:
      name: agent-conf
  - name: spool
    emptyDir: {}
",
        ));
        let p = &o.pods[0];
        let c = p.container("agent").unwrap();
        let ro = c.read_only_root.as_ref().expect("read from the container");
        assert!(ro.value);
        assert_eq!(
            ro.cite.reference,
            "spec.containers[agent].securityContext.readOnlyRootFilesystem"
        );
        assert_eq!(ro.cite.location.as_deref(), Some("pod.yaml:12"));
        assert!(p.container("shipper").unwrap().read_only_root.is_none());
        // An object's container spec: an absent tty/stdin is unset.
        assert_eq!(c.spec_from, Some(SpecFrom::Object));
        assert_eq!(c.interactive(), Some(false));
        let conf = c.mounts.iter().find(|m| m.name == "conf").unwrap();
        let source = conf.source.as_ref().unwrap();
        assert_eq!(source.value, "configMap");
        assert_eq!(source.cite.reference, "spec.volumes[conf].configMap");
        assert!(conf.is_read_only() && !conf.read_only);
        let spool = c.mounts.iter().find(|m| m.name == "spool").unwrap();
        assert_eq!(spool.source.as_ref().unwrap().value, "emptyDir");
        assert!(!spool.is_read_only());
        assert!(spool.covers("/var/spool/agent/q1") && !spool.covers("/var/spool/agentx"));
        // The same from JSON (`kubectl get -o json`, a bundle's pod.json).
        let o = parse(&doc(
            "pod.json",
            r#"{"kind":"Pod","metadata":{"name":"agent-0"},"spec":{"containers":[{"name":"agent","securityContext":{"readOnlyRootFilesystem":true},"volumeMounts":[{"name":"conf","mountPath":"/etc/agent"}]}],"volumes":[{"name":"conf","secret":{"secretName":"agent-tls"}}]}}"#,
        ));
        let c = o.pods[0].container("agent").unwrap();
        assert_eq!(c.read_only_root.as_ref().map(|f| f.value), Some(true));
        assert_eq!(
            c.mounts[0].kubelet_read_only().map(|s| s.value.as_str()),
            Some("secret")
        );
    }

    #[test]
    fn bare_termination_fragment() {
        let o = parse(&doc(
            "pod.yaml",
            "exitCode: 137\nreason: OOMKilled\nstartedAt: \"2025-12-17T10:56:35Z\"\n",
        ));
        let c = &o.pods[0].containers[0];
        assert!(c.last_termination().unwrap().reason_is("OOMKilled"));
        assert!(o.pods[0].reason.is_none());
    }

    #[test]
    fn indented_status_fragment() {
        let o = parse(&doc(
            "pod.yaml",
            "  containerStatuses:\n  - name: m\n    lastState:\n      terminated:\n        exitCode: 137\n        reason: OOMKilled\n",
        ));
        assert_eq!(
            o.pods[0].containers[0].last_termination().unwrap().exit(),
            Some(137)
        );
    }

    #[test]
    fn secret_values_are_not_kept() {
        let o = parse(&doc(
            "secret.yaml",
            "kind: Secret\nmetadata: {name: s}\ndata:\n  password: c3VwZXJzZWNyZXQ=\n",
        ));
        let obj = &o.config_objects[0];
        assert_eq!(obj.keys, vec![("password".to_string(), Some(11))]);
        assert!(!format!("{obj:?}").contains("c3VwZXJzZWNyZXQ"));
    }

    #[test]
    fn truncated_yaml_is_partial() {
        let o = parse(&doc(
            "pod.yaml",
            "status:\n  containerStatuses:\n  - name: m\n    lastState:\n      terminated:\n        exitCode: 137\n        reason: [unclosed\n",
        ));
        assert!(o.partial.is_some());
        assert_eq!(
            o.pods[0].containers[0].last_termination().unwrap().exit(),
            Some(137)
        );
    }

    #[test]
    fn a_pasted_get_command_line_is_not_part_of_the_objects() {
        let (v, partial) = parse_tree(
            "$ kubectl get pod web-1 -n shop -o json\n{\"kind\": \"Pod\", \"metadata\": {\"name\": \"web-1\"}}\n",
        );
        assert_eq!(partial, None);
        assert_eq!(v.unwrap()["metadata"]["name"], "web-1");
        let (v, partial) =
            parse_tree("kubectl get rs -o yaml\nkind: ReplicaSet\nmetadata:\n  name: web-a\n");
        assert_eq!(partial, None);
        assert_eq!(v.unwrap()["metadata"]["name"], "web-a");
        // Near miss: a line that is no get command stays (and breaks the JSON).
        let (_, partial) = parse_tree("$ kubectl logs web-1\n{\"kind\": \"Pod\"}\n");
        assert!(partial.is_some());
    }
}
