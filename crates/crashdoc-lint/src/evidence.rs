//! A pod spec rebuilt from crashdoc-core's evidence model: what `kubectl
//! describe pod` (or a saved pod.yaml) shows of the spec, as a manifest the
//! checks can read. Used to lint what a diagnosis saw (the prevention
//! figure: would lint have flagged this pod before it crashed?).
//!
//! Only what the evidence holds is written: images, commands, probes, env
//! references, mounts, resources, ports, the security context's user
//! fields, the controller. Secret values are never in the evidence model.

use crashdoc_core::model::{ContainerKind, Pod, Probe, ProbeKind, RefKind};
use serde_json::{Map, Value, json};

fn port_value(p: &str) -> Value {
    p.parse::<u64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::from(p))
}

/// `http-get http://:8000/health`, `http-get :8080/x`, `tcp-socket :80`, `exec [cat /tmp/ok]`.
fn handler(h: &str) -> Option<(&'static str, Value)> {
    if let Some(rest) = h.strip_prefix("http-get ") {
        let rest = rest
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let after_host = rest.split_once(':').map_or(rest, |(_, r)| r);
        let (port, path) = match after_host.find('/') {
            Some(i) => (&after_host[..i], &after_host[i..]),
            None => (after_host, "/"),
        };
        return Some(("httpGet", json!({"path": path, "port": port_value(port)})));
    }
    if let Some(rest) = h.strip_prefix("tcp-socket ") {
        let port = rest.rsplit(':').next().unwrap_or(rest);
        return Some(("tcpSocket", json!({"port": port_value(port)})));
    }
    if let Some(rest) = h.strip_prefix("exec ") {
        let rest = rest.trim().trim_start_matches('[').trim_end_matches(']');
        let cmd: Vec<&str> = rest.split_whitespace().collect();
        return Some(("exec", json!({"command": cmd})));
    }
    if let Some(rest) = h.strip_prefix("grpc ") {
        let port = rest.rsplit(':').next().unwrap_or(rest);
        return Some(("grpc", json!({"port": port_value(port)})));
    }
    None
}

fn probe(p: &Probe) -> Value {
    let mut m = Map::new();
    if let Some((k, v)) = handler(&p.handler) {
        m.insert(k.into(), v);
    }
    m.insert("initialDelaySeconds".into(), p.initial_delay.into());
    m.insert("timeoutSeconds".into(), p.timeout.into());
    m.insert("periodSeconds".into(), p.period.into());
    m.insert("successThreshold".into(), p.success.into());
    m.insert("failureThreshold".into(), p.failure.into());
    Value::Object(m)
}

/// The manifest of a pod as the evidence shows it: a Pod, or the workload
/// that owns it (a ReplicaSet's pod as a Deployment) with the pod as its template.
pub fn manifest(pod: &Pod) -> Value {
    let mut init = Vec::new();
    let mut main = Vec::new();
    for c in &pod.containers {
        let mut m = Map::new();
        m.insert("name".into(), c.name.clone().into());
        if let Some(i) = &c.image {
            m.insert("image".into(), i.clone().into());
        }
        if !c.command.is_empty() {
            m.insert("command".into(), c.command.clone().into());
        }
        if !c.args.is_empty() {
            m.insert("args".into(), c.args.clone().into());
        }
        for (key, f) in [("tty", &c.tty), ("stdin", &c.stdin)] {
            if let Some(f) = f {
                m.insert(key.into(), f.value.into());
            }
        }
        if !c.ports.is_empty() {
            m.insert(
                "ports".into(),
                c.ports
                    .iter()
                    .map(|p| json!({"containerPort": p}))
                    .collect(),
            );
        }
        let res = |x: &std::collections::BTreeMap<String, crashdoc_core::model::Field<String>>| {
            x.iter()
                .map(|(k, v)| (k.clone(), Value::from(v.value.clone())))
                .collect::<Map<_, _>>()
        };
        m.insert(
            "resources".into(),
            json!({"limits": res(&c.limits), "requests": res(&c.requests)}),
        );
        for p in &c.probes {
            let f = match p.kind {
                ProbeKind::Liveness => "livenessProbe",
                ProbeKind::Readiness => "readinessProbe",
                ProbeKind::Startup => "startupProbe",
            };
            m.insert(f.into(), probe(p));
        }
        let env: Vec<Value> = c
            .env
            .iter()
            .map(|e| match &e.from {
                Some(f) if f.key.is_some() => {
                    let sel = match f.kind {
                        RefKind::ConfigMap => "configMapKeyRef",
                        RefKind::Secret => "secretKeyRef",
                    };
                    json!({"name": e.name, "valueFrom": {sel: {"name": f.name, "key": f.key, "optional": f.optional}}})
                }
                _ => json!({"name": e.name, "value": e.value}),
            })
            .collect();
        if !env.is_empty() {
            m.insert("env".into(), env.into());
        }
        if !c.mounts.is_empty() {
            m.insert(
                "volumeMounts".into(),
                c.mounts
                    .iter()
                    .map(|x| json!({"name": x.name, "mountPath": x.path, "readOnly": x.read_only}))
                    .collect(),
            );
        }
        let mut sc = Map::new();
        if let Some(f) = &c.run_as_non_root {
            sc.insert("runAsNonRoot".into(), f.value.into());
        }
        if let Some(f) = &c.run_as_user {
            sc.insert("runAsUser".into(), f.value.into());
        }
        if !sc.is_empty() {
            m.insert("securityContext".into(), Value::Object(sc));
        }
        match c.kind {
            ContainerKind::Init => init.push(Value::Object(m)),
            ContainerKind::Sidecar => {
                m.insert("restartPolicy".into(), "Always".into());
                init.push(Value::Object(m));
            }
            ContainerKind::Main => main.push(Value::Object(m)),
            ContainerKind::Ephemeral => {}
        }
    }
    let mut spec = Map::new();
    spec.insert("containers".into(), main.into());
    if !init.is_empty() {
        spec.insert("initContainers".into(), init.into());
    }
    let name = pod.name.clone().unwrap_or_else(|| "pod".into());
    let mut meta = json!({"name": name});
    // The startup the evidence measured (the log's serving line, or how long
    // the run lasted plus the loading its progress bar still showed), for
    // probe/budget-below-measured-startup.
    let cx = crashdoc_core::rules::Context::new(pod);
    if let Some((secs, how)) = crashdoc_core::rules::facts::startup_seconds(&cx) {
        meta["annotations"] = json!({
            crate::STARTUP_ANNOTATION: secs.to_string(),
            crate::STARTUP_SOURCE_ANNOTATION: how,
        });
    }
    // Containers seen only in the status: their command is not known.
    let unread: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| c.spec_from.is_none() && !c.name.is_empty())
        .map(|c| c.name.as_str())
        .collect();
    if !unread.is_empty() {
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][crate::SPEC_UNREAD_ANNOTATION] = unread.join(",").into();
    }
    if let Some(ns) = &pod.namespace {
        meta["namespace"] = ns.clone().into();
    }
    let kind = match pod.owner.as_ref().map(|o| o.kind.as_str()) {
        Some("ReplicaSet" | "Deployment") => "Deployment",
        Some(k @ ("StatefulSet" | "DaemonSet" | "Job")) => match k {
            "StatefulSet" => "StatefulSet",
            "DaemonSet" => "DaemonSet",
            _ => "Job",
        },
        _ => "Pod",
    };
    if kind == "Pod" {
        if let Some(r) = &pod.restart_policy {
            spec.insert("restartPolicy".into(), r.value.clone().into());
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    } else {
        if let Some(o) = &pod.owner {
            // A ReplicaSet is named DEPLOYMENT-HASH.
            let name = match o.kind.as_str() {
                "ReplicaSet" => o.name.rsplit_once('-').map_or(o.name.as_str(), |(d, _)| d),
                _ => o.name.as_str(),
            };
            meta["name"] = name.into();
        }
        json!({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"template": {"spec": spec}}})
    }
}

/// The ConfigMaps and Secrets the evidence shows (key names only).
pub fn config_objects(pod: &Pod) -> Vec<Value> {
    pod.config_objects
        .iter()
        .map(|o| {
            let kind = match o.kind {
                RefKind::ConfigMap => "ConfigMap",
                RefKind::Secret => "Secret",
            };
            let data: Map<String, Value> = o
                .keys
                .iter()
                .map(|(k, _)| (k.clone(), Value::Null))
                .collect();
            let mut meta = json!({"name": o.name});
            if let Some(ns) = &pod.namespace {
                meta["namespace"] = ns.clone().into();
            }
            json!({"apiVersion": "v1", "kind": kind, "metadata": meta, "data": data})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_from_describe_and_objects() {
        assert_eq!(
            handler("http-get http://:8000/health").unwrap().1,
            json!({"path": "/health", "port": 8000})
        );
        assert_eq!(
            handler("http-get :http/ready").unwrap().1,
            json!({"path": "/ready", "port": "http"})
        );
        assert_eq!(
            handler("tcp-socket :5432").unwrap().1,
            json!({"port": 5432})
        );
        assert_eq!(
            handler("exec [cat /tmp/ok]").unwrap().1,
            json!({"command": ["cat", "/tmp/ok"]})
        );
    }
}
