//! What the checks read from an object: its pod template, containers,
//! quantities; and the model-server knowledge shared with the diagnosis
//! (crashdoc-core's `rules::facts::model_server` and `weights_size`).

use crate::input::Object;
use crate::locate::Path;
use serde_json::Value;

/// The pod spec of an object and its path: a Pod, a workload's template, a CronJob's job template.
pub fn pod_spec(obj: &Object) -> Option<(&Value, Path)> {
    let p = match obj.kind.as_str() {
        "Pod" => "spec",
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "ReplicationController"
        | "Job" => "spec.template.spec",
        "CronJob" => "spec.jobTemplate.spec.template.spec",
        _ => return None,
    };
    let path = Path::parse(p);
    let v = get(&obj.value, &path)?;
    v.is_object().then_some((v, path))
}

/// Workloads whose controller restarts a container that exits, whatever its code.
pub fn expects_service(kind: &str) -> bool {
    matches!(
        kind,
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "ReplicationController"
    )
}

/// Whether whatever the object's containers do, they are restarted when
/// they exit: a controller that expects a service, or a bare Pod whose
/// restartPolicy is (or defaults to) Always.
pub fn restarts_on_exit(kind: &str, v: &Value) -> bool {
    expects_service(kind)
        || kind == "Pod"
            && v.pointer("/spec/restartPolicy")
                .and_then(Value::as_str)
                .is_none_or(|p| p == "Always")
}

pub fn get<'a>(v: &'a Value, path: &Path) -> Option<&'a Value> {
    let mut cur = v;
    for s in &path.0 {
        cur = match s {
            crate::locate::Seg::Key(k) => cur.get(k.as_str())?,
            crate::locate::Seg::Index(i) => cur.get(*i)?,
        };
    }
    Some(cur)
}

/// One container of a pod spec, with its path.
pub struct ContainerRef<'a> {
    pub v: &'a Value,
    pub path: Path,
    pub name: String,
    pub init: bool,
}

impl ContainerRef<'_> {
    pub fn str(&self, k: &str) -> Option<&str> {
        self.v.get(k).and_then(Value::as_str)
    }
    pub fn strings(&self, k: &str) -> Vec<String> {
        self.v
            .get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().map(scalar_string).collect())
            .unwrap_or_default()
    }
    pub fn image(&self) -> &str {
        self.str("image").unwrap_or("")
    }
    /// command + args, joined.
    pub fn command_line(&self) -> String {
        let mut v = self.strings("command");
        v.extend(self.strings("args"));
        v.join(" ")
    }
    pub fn probe(&self, kind: &str) -> Option<&Value> {
        self.v.get(kind).filter(|p| p.is_object())
    }
    pub fn resource(&self, section: &str, name: &str) -> Option<&Value> {
        self.v.get("resources")?.get(section)?.get(name)
    }
    pub fn env_value(&self, name: &str) -> Option<String> {
        self.v
            .get("env")?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
            .get("value")
            .map(scalar_string)
    }
}

pub fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The containers of a pod spec (init containers first when `with_init`).
pub fn containers<'a>(spec: &'a Value, spec_path: &Path, with_init: bool) -> Vec<ContainerRef<'a>> {
    let mut out = Vec::new();
    let fields: &[&str] = if with_init {
        &["initContainers", "containers"]
    } else {
        &["containers"]
    };
    for f in fields {
        if let Some(a) = spec.get(*f).and_then(Value::as_array) {
            for (i, c) in a.iter().enumerate() {
                out.push(ContainerRef {
                    v: c,
                    path: spec_path.clone().key(f).index(i),
                    name: c
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    init: *f == "initContainers",
                });
            }
        }
    }
    out
}

/// A Kubernetes quantity in base units (`16Gi` → bytes, `500m` → 0.5).
pub use crashdoc_core::text::quantity;

pub fn quantity_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => quantity(s),
        _ => None,
    }
}

/// Bytes as a Kubernetes quantity, rounded up to whole GiB (`34Gi`).
pub fn gib(bytes: f64) -> String {
    format!("{}Gi", (bytes / (1u64 << 30) as f64).ceil() as u64)
}

/// Facts about one container computed once per run: the checks ask for
/// them many times. Keyed by the container's address in the input, which
/// does not move while `crate::lint` runs; `clear_cache` empties it.
#[derive(Default, Clone)]
struct Facts {
    server: Option<Option<&'static str>>,
    weights: Option<Option<(u64, String)>>,
}

thread_local! {
    static FACTS: std::cell::RefCell<std::collections::HashMap<usize, Facts>> = Default::default();
}

/// Forget the facts of the previous run (called by `crate::lint` before and after).
pub(crate) fn clear_cache() {
    FACTS.with(|f| f.borrow_mut().clear());
}

fn key(c: &ContainerRef) -> usize {
    c.v as *const Value as usize
}

/// The model server a container runs, as the diagnosis recognises it.
pub fn model_server(c: &ContainerRef) -> Option<&'static str> {
    if let Some(s) = FACTS.with(|f| f.borrow().get(&key(c)).and_then(|x| x.server)) {
        return s;
    }
    let s = model_server_uncached(c);
    FACTS.with(|f| f.borrow_mut().entry(key(c)).or_default().server = Some(s));
    s
}

fn model_server_uncached(c: &ContainerRef) -> Option<&'static str> {
    let server = crashdoc_core::rules::facts::model_server(&core_pod(c))?;
    // An explicit command that names no model server runs another program
    // of the image (a cache server, a tool shipped beside vLLM).
    if !c.strings("command").is_empty() {
        let mut only = core_pod(c);
        for k in &mut only.containers {
            k.image = None;
            k.name.clear();
            k.env.clear();
        }
        crashdoc_core::rules::facts::model_server(&only)?;
    }
    Some(server)
}

/// The size of the container's model weights, estimated from the model id's
/// parameter count and dtype, as the OOM rule does.
pub fn weights_size(c: &ContainerRef) -> Option<(u64, String)> {
    if let Some(w) = FACTS.with(|f| f.borrow().get(&key(c)).and_then(|x| x.weights.clone())) {
        return w;
    }
    let w = crashdoc_core::rules::facts::weights_size(&core_pod(c));
    FACTS.with(|f| f.borrow_mut().entry(key(c)).or_default().weights = Some(w.clone()));
    w
}

fn core_pod(c: &ContainerRef) -> crashdoc_core::model::Pod {
    use crashdoc_core::model::{Cite, Container, EnvVar, Pod, SourceKind};
    let mut k = Container::named(c.name.clone());
    k.image = c.str("image").map(str::to_string);
    k.command = c.strings("command");
    k.args = c.strings("args");
    if let Some(env) = c.v.get("env").and_then(Value::as_array) {
        for e in env {
            k.env.push(EnvVar {
                name: e
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                value: e.get("value").map(scalar_string),
                from: None,
                cite: Cite::new(SourceKind::Spec, "manifest", ""),
            });
        }
    }
    Pod {
        containers: vec![k],
        ..Default::default()
    }
}

/// A JVM server, from its image, command or JVM options.
pub fn jvm(c: &ContainerRef) -> bool {
    let image = c.image().to_ascii_lowercase();
    let cmd = c.command_line().to_ascii_lowercase();
    const IMAGES: &[&str] = &[
        "openjdk",
        "eclipse-temurin",
        "amazoncorretto",
        "tomcat",
        "jetty",
        "wildfly",
        "keycloak",
        "elasticsearch",
        "opensearch",
        "logstash",
        "kafka",
        "zookeeper",
        "cassandra",
        "jenkins",
        "sonarqube",
        "nexus",
        "spring",
        "solr",
        "flink",
        "spark",
        "trino",
        "neo4j",
        "/jre",
        "-jre",
        "/jdk",
        "-jdk",
        "gradle",
        "maven",
    ];
    IMAGES.iter().any(|i| image.contains(i))
        || cmd.starts_with("java ")
        || cmd.contains("java -")
        || cmd.contains(".jar")
        || ["JAVA_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"]
            .iter()
            .any(|e| c.env_value(e).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(quantity("16Gi"), Some(16.0 * 1073741824.0));
        assert_eq!(quantity("500M"), Some(5e8));
        assert_eq!(quantity("1e9"), Some(1e9));
        assert_eq!(quantity("250m"), Some(0.25));
        assert_eq!(quantity("12"), Some(12.0));
        assert_eq!(quantity("12Qi"), None);
        assert_eq!(gib(33.2 * 1073741824.0), "34Gi");
    }
}
