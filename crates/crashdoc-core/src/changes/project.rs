//! The fields `kubectl rollout history --revision=N` prints of a pod
//! template (k8s.io/kubectl v0.36.3 pkg/describe/describe.go
//! `DescribePodTemplate`, read back by `ingest::history`), for comparing a
//! printed revision with one read as JSON: both sides are cut to what the
//! printout can show, so that a field it never prints (imagePullPolicy,
//! terminationMessagePath, a volume's defaultMode) is not taken for a change.

use serde_json::{Map, Value, json};

fn pick(v: &Value, fields: &[&str]) -> Map<String, Value> {
    let mut m = Map::new();
    for f in fields {
        if let Some(x) = v.get(*f).filter(|x| !x.is_null()) {
            m.insert((*f).to_string(), x.clone());
        }
    }
    m
}

fn probe(p: &Value) -> Value {
    let mut m = pick(
        p,
        &[
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ],
    );
    if let Some(h) = p.get("httpGet") {
        let mut g = pick(h, &["path", "port", "host"]);
        let scheme = h.get("scheme").and_then(Value::as_str).unwrap_or("HTTP");
        g.insert("scheme".into(), json!(scheme.to_ascii_uppercase()));
        g.entry("path").or_insert(json!(""));
        m.insert("httpGet".into(), Value::Object(g));
    } else if let Some(t) = p.get("tcpSocket") {
        m.insert(
            "tcpSocket".into(),
            Value::Object(pick(t, &["port", "host"])),
        );
    } else if let Some(e) = p.get("exec") {
        m.insert("exec".into(), Value::Object(pick(e, &["command"])));
    } else if let Some(g) = p.get("grpc") {
        m.insert("grpc".into(), Value::Object(pick(g, &["port"])));
    }
    Value::Object(m)
}

fn optional(r: &Value) -> bool {
    r.get("optional").and_then(Value::as_bool) == Some(true)
}

fn env(e: &Value) -> Value {
    let name = e.get("name").cloned().unwrap_or(Value::Null);
    let Some(from) = e.get("valueFrom") else {
        return json!({ "name": name, "value": e.get("value").cloned().unwrap_or(json!("")) });
    };
    let s = |r: &Value, f: &str| r.get(f).cloned().unwrap_or(json!(""));
    let v = if let Some(r) = from.get("secretKeyRef") {
        json!({ "secretKeyRef": { "name": s(r, "name"), "key": s(r, "key"), "optional": optional(r) } })
    } else if let Some(r) = from.get("configMapKeyRef") {
        json!({ "configMapKeyRef": { "name": s(r, "name"), "key": s(r, "key"), "optional": optional(r) } })
    } else if let Some(r) = from.get("fieldRef") {
        let api = r.get("apiVersion").cloned().unwrap_or(json!("v1"));
        json!({ "fieldRef": { "apiVersion": api, "fieldPath": s(r, "fieldPath") } })
    } else if let Some(r) = from.get("resourceFieldRef") {
        json!({ "resourceFieldRef": { "resource": s(r, "resource") } })
    } else {
        from.clone()
    };
    json!({ "name": name, "valueFrom": v })
}

fn env_from(e: &Value) -> Value {
    let mut m = Map::new();
    for f in ["configMapRef", "secretRef"] {
        if let Some(r) = e.get(f) {
            m.insert(
                f.into(),
                json!({ "name": r.get("name").cloned().unwrap_or(json!("")), "optional": optional(r) }),
            );
        }
    }
    if let Some(p) = e
        .get("prefix")
        .filter(|p| p.as_str().is_some_and(|s| !s.is_empty()))
    {
        m.insert("prefix".into(), p.clone());
    }
    Value::Object(m)
}

fn container(c: &Value) -> Value {
    let mut m = pick(c, &["name", "image", "command", "args"]);
    let list = |f: &str| {
        c.get(f)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let ports: Vec<Value> = list("ports")
        .iter()
        .map(|p| {
            let mut x = pick(p, &["containerPort", "name"]);
            x.insert(
                "protocol".into(),
                p.get("protocol").cloned().unwrap_or(json!("TCP")),
            );
            Value::Object(x)
        })
        .collect();
    if !ports.is_empty() {
        m.insert("ports".into(), Value::Array(ports));
    }
    if let Some(r) = c.get("resources") {
        let r = pick(r, &["limits", "requests"]);
        if !r.is_empty() {
            m.insert("resources".into(), Value::Object(r));
        }
    }
    for f in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get(f) {
            m.insert(f.into(), probe(p));
        }
    }
    let e: Vec<Value> = list("env").iter().map(env).collect();
    if !e.is_empty() {
        m.insert("env".into(), Value::Array(e));
    }
    let ef: Vec<Value> = list("envFrom").iter().map(env_from).collect();
    if !ef.is_empty() {
        m.insert("envFrom".into(), Value::Array(ef));
    }
    let mounts: Vec<Value> = list("volumeMounts")
        .iter()
        .map(|v| {
            let mut x = pick(v, &["mountPath", "name", "subPath"]);
            if v.get("readOnly").and_then(Value::as_bool) == Some(true) {
                x.insert("readOnly".into(), json!(true));
            }
            Value::Object(x)
        })
        .collect();
    if !mounts.is_empty() {
        m.insert("volumeMounts".into(), Value::Array(mounts));
    }
    Value::Object(m)
}

/// A volume as the printout tells it; `None` for a type it prints only as
/// text (hostPath, projected, CSI...), left out of both sides.
fn volume(v: &Value) -> Option<Value> {
    let name = v.get("name").cloned().unwrap_or(Value::Null);
    let src = if let Some(c) = v.get("configMap") {
        json!({ "configMap": { "name": c.get("name").cloned().unwrap_or(json!("")), "optional": optional(c) } })
    } else if let Some(s) = v.get("secret") {
        json!({ "secret": { "secretName": s.get("secretName").cloned().unwrap_or(json!("")), "optional": optional(s) } })
    } else if let Some(e) = v.get("emptyDir") {
        json!({ "emptyDir": pick(e, &["medium", "sizeLimit"]) })
    } else if let Some(p) = v.get("persistentVolumeClaim") {
        json!({ "persistentVolumeClaim": pick(p, &["claimName"]) })
    } else {
        return None;
    };
    let mut out = json!({ "name": name });
    if let (Some(o), Some(s)) = (out.as_object_mut(), src.as_object()) {
        o.extend(s.clone());
    }
    Some(out)
}

/// The template cut to the fields the rollout history printout shows.
pub fn printed_view(t: &Value) -> Value {
    let t = super::template_of(t);
    let spec = t.get("spec").cloned().unwrap_or(Value::Null);
    let mut s = pick(
        &spec,
        &["serviceAccountName", "priorityClassName", "nodeSelector"],
    );
    for f in ["containers", "initContainers"] {
        if let Some(a) = spec.get(f).and_then(Value::as_array) {
            s.insert(f.into(), Value::Array(a.iter().map(container).collect()));
        }
    }
    if let Some(a) = spec.get("volumes").and_then(Value::as_array) {
        s.insert(
            "volumes".into(),
            Value::Array(a.iter().filter_map(volume).collect()),
        );
    }
    let meta = t
        .get("metadata")
        .map(|m| pick(m, &["labels", "annotations"]))
        .unwrap_or_default();
    json!({ "metadata": meta, "spec": s })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::diff_templates;
    use crate::ingest::{Doc, history};

    const PRINTED: &str = "deployment.apps/web with revision #2\nPod Template:\n  Labels:\tapp=web\n  Containers:\n   app:\n    Image:\tweb:1.4.0\n    Port:\t8080/TCP\n    Host Port:\t0/TCP\n    Limits:\n      memory:\t256Mi\n    Liveness:\thttp-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3\n    Environment:\n      DB_PASSWORD:\t<set to the key 'password' in secret 'db'>\tOptional: false\n    Mounts:\n      /etc/web from config (ro)\n  Volumes:\n   config:\n    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\tweb-config\n    Optional:\tfalse\n   host:\n    Type:\tHostPath (bare host directory volume)\n    Path:\t/var/log\n";

    fn json_template(image: &str) -> Value {
        json!({"metadata":{"labels":{"app":"web"}},"spec":{"dnsPolicy":"ClusterFirst","terminationGracePeriodSeconds":30,
            "containers":[{"name":"app","image":image,"imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log",
                "ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"memory":"268435456"}},
                "livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
                "env":[{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"db","key":"password"}}}],
                "volumeMounts":[{"name":"config","mountPath":"/etc/web","readOnly":true}]}],
            "volumes":[{"name":"config","configMap":{"name":"web-config","defaultMode":420}},{"name":"host","hostPath":{"path":"/var/log","type":""}}]}})
    }

    #[test]
    fn a_printed_revision_and_its_json_are_the_same_template() {
        let doc = Doc {
            name: "rollout-history.txt".into(),
            text: PRINTED.into(),
            line_offset: 0,
        };
        let printed = history::parse(&doc)[0].template.clone().unwrap();
        let same = diff_templates(
            &printed_view(&printed),
            &printed_view(&json_template("web:1.4.0")),
        );
        assert!(same.is_empty(), "{same:?}");
        // Near miss: the JSON revision's image differs, and only that is said.
        let d = diff_templates(
            &printed_view(&printed),
            &printed_view(&json_template("web:1.5.0")),
        );
        let paths: Vec<&str> = d.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["spec.containers[app].image"]);
    }
}
