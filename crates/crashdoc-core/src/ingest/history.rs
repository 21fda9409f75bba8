//! `kubectl rollout history KIND/NAME [--revision=N]` as printed, read back
//! into pod templates that [`crate::changes::diff_templates`] accepts.
//!
//! The printed format, from k8s.io/kubectl v0.36.3:
//! - pkg/cmd/rollout/rollout_history.go: the header `KIND/NAME with revision #N`
//!   (`PrintObj` of the object with the message `with revision #%d\n` + history);
//! - pkg/polymorphichelpers/history.go: without `--revision`, a
//!   `REVISION  CHANGE-CAUSE` table; with it, `printTemplate` =
//!   describe.DescribePodTemplate;
//! - pkg/describe/describe.go `DescribePodTemplate`, `describeContainers`,
//!   `describeContainerBasicInfo` (`Image:`, `Port:`/`Ports:`),
//!   `describeContainerCommand` (`Command:`/`Args:`, one word a line),
//!   `describeResources` (`Limits:`/`Requests:`, `name:\tquantity`),
//!   `describeContainerProbe` + `DescribeProbe` (`Liveness:\thttp-get
//!   http://:8080/healthz delay=0s timeout=1s period=10s #success=1
//!   #failure=3`), `describeContainerEnvVars` (`NAME:\tvalue`, `<set to the
//!   key 'k' in secret 's'>\tOptional: false`, `<set to the key 'k' of config
//!   map 'c'>`, ` (v1:metadata.name)`, `(limits.memory)`),
//!   `describeContainerEnvFrom`, `describeContainerVolumes` (`/path from
//!   vol (ro,path="sub")`), `describeVolumes` (`Type:`/`Name:`/`ClaimName:`/
//!   `SecretName:`), `printLabelsMultiline` (`Node-Selectors:`).
//!
//! The writer prints tabs; pastes often turn them into spaces, so every
//! line is read as `key: value` by its first colon, whatever the spacing.
//! The indentation (containers at 3 spaces, their fields at 4, a field's
//! entries at 6) is what [`describe.PrefixWriter`] writes for LEVEL_1..3
//! with the template's extra space.

use super::Doc;
use crate::model::{Cite, SourceKind};
use serde_json::{Map, Value, json};

/// One revision read from rollout history output.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRevision {
    /// `#N` of the header, or the row of the table.
    pub number: Option<u64>,
    /// `deployment.apps/web` of the header: (resource, name).
    pub workload: Option<(String, String)>,
    /// The pod template (`metadata.labels/annotations` + `spec`), when the
    /// output was of one revision.
    pub template: Option<Value>,
    /// CHANGE-CAUSE of the table (`<none>` dropped).
    pub change_cause: Option<String>,
    pub cite: Cite,
}

/// (resource, name) of `deployment.apps/web`.
type Workload = (String, String);

/// Every revision in the text (several pastes may follow one another).
pub fn parse(doc: &Doc) -> Vec<HistoryRevision> {
    let lines: Vec<&str> = doc.text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut header: Option<(usize, Option<u64>, Option<Workload>)> = None;
    while i < lines.len() {
        let t = lines[i].trim();
        if let Some(h) = parse_header(t) {
            header = Some((i, h.1, h.0));
            i += 1;
            continue;
        }
        if t == "Pod Template:" {
            let end = (i + 1..lines.len())
                .find(|&j| {
                    let l = lines[j];
                    !l.trim().is_empty() && !l.starts_with([' ', '\t'])
                })
                .unwrap_or(lines.len());
            let (at, number, workload) = header.take().unwrap_or((i, None, None));
            let template = template(&lines[i + 1..end]);
            let line = doc.line_offset + at as u64 + 1;
            out.push(HistoryRevision {
                number,
                workload,
                template: Some(template),
                change_cause: None,
                cite: Cite::new(
                    SourceKind::Spec,
                    format!("{}:{line}", doc.name),
                    lines[at].trim().to_string(),
                ),
            });
            i = end;
            continue;
        }
        if t.starts_with("REVISION") && t.contains("CHANGE-CAUSE") {
            let (_, _, workload) = header.take().unwrap_or((i, None, None));
            let mut j = i + 1;
            while j < lines.len() {
                let row = lines[j].trim();
                let mut w = row.splitn(2, char::is_whitespace);
                let Some(n) = w.next().and_then(|n| n.parse::<u64>().ok()) else {
                    break;
                };
                let cause = w
                    .next()
                    .map(str::trim)
                    .filter(|c| !c.is_empty() && *c != "<none>");
                let line = doc.line_offset + j as u64 + 1;
                out.push(HistoryRevision {
                    number: Some(n),
                    workload: workload.clone(),
                    template: None,
                    change_cause: cause.map(str::to_string),
                    cite: Cite::new(SourceKind::Spec, format!("{}:{line}", doc.name), row),
                });
                j += 1;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// `deployment.apps/web with revision #3` -> (resource/name, 3); a bare
/// `deployment.apps/web` (the table's header line) too.
fn parse_header(t: &str) -> Option<(Option<Workload>, Option<u64>)> {
    let (obj, n) = match t.split_once(" with revision #") {
        Some((o, n)) => (o.trim(), n.trim().parse::<u64>().ok()),
        None => (t, None),
    };
    let (kind, name) = obj.split_once('/')?;
    let simple = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    };
    if !simple(kind) || !simple(name) || obj.contains(' ') {
        return None;
    }
    let n = if t.contains(" with revision #") {
        Some(n?)
    } else {
        None
    };
    Some((Some((kind.to_string(), name.to_string())), n))
}

/// Indentation in columns (a tab counts as the step it stands for).
fn indent(l: &str) -> usize {
    l.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// `key: value` by the first colon; `None` when the line has no colon.
fn kv(l: &str) -> Option<(&str, &str)> {
    let (k, v) = l.trim().split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// The lines under `Pod Template:` into a template value.
fn template(lines: &[&str]) -> Value {
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut spec = Map::new();
    let mut node_selector = Map::new();
    let mut tolerations: Vec<Value> = Vec::new();
    let base = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap_or(2);
    let mut i = 0;
    // Which multi-line map the next bare `k=v` line belongs to.
    let mut current: Option<&str> = None;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        if t.is_empty() {
            i += 1;
            continue;
        }
        let top = indent(l) <= base;
        if !top {
            // A continuation of Labels/Annotations/Node-Selectors/Tolerations.
            match current {
                Some("Labels") => put_pair(&mut labels, t, '='),
                Some("Node-Selectors") => put_pair(&mut node_selector, t, '='),
                Some("Annotations") => put_pair(&mut annotations, t, ':'),
                Some("Tolerations") => tolerations.push(json!({ "printed": t })),
                _ => {}
            }
            i += 1;
            continue;
        }
        let (k, v) = kv(t).unwrap_or((t, ""));
        current = None;
        match k {
            "Labels" | "Node-Selectors" | "Annotations" | "Tolerations" => {
                current = Some(match k {
                    "Labels" => "Labels",
                    "Node-Selectors" => "Node-Selectors",
                    "Annotations" => "Annotations",
                    _ => "Tolerations",
                });
                if v != "<none>" && !v.is_empty() {
                    match k {
                        "Labels" => put_pair(&mut labels, v, '='),
                        "Node-Selectors" => put_pair(&mut node_selector, v, '='),
                        "Annotations" => put_pair(&mut annotations, v, ':'),
                        _ => tolerations.push(json!({ "printed": v })),
                    }
                }
                i += 1;
            }
            "Service Account" => {
                spec.insert("serviceAccountName".into(), json!(v));
                i += 1;
            }
            "Priority Class Name" => {
                spec.insert("priorityClassName".into(), json!(v));
                i += 1;
            }
            "Containers" | "Init Containers" | "Volumes" => {
                let end = block_end(lines, i, base);
                let body = &lines[i + 1..end];
                let (field, value) = match k {
                    "Containers" => ("containers", Value::Array(containers(body))),
                    "Init Containers" => ("initContainers", Value::Array(containers(body))),
                    _ => ("volumes", Value::Array(volumes(body))),
                };
                spec.insert(field.into(), value);
                i = end;
            }
            _ => i += 1,
        }
    }
    if !node_selector.is_empty() {
        spec.insert("nodeSelector".into(), Value::Object(node_selector));
    }
    if !tolerations.is_empty() {
        spec.insert("tolerations".into(), Value::Array(tolerations));
    }
    json!({
        "metadata": { "labels": labels, "annotations": annotations },
        "spec": spec,
    })
}

/// The first line after `start` indented no deeper than `base`.
fn block_end(lines: &[&str], start: usize, base: usize) -> usize {
    (start + 1..lines.len())
        .find(|&j| !lines[j].trim().is_empty() && indent(lines[j]) <= base)
        .unwrap_or(lines.len())
}

fn put_pair(m: &mut Map<String, Value>, s: &str, sep: char) {
    if let Some((k, v)) = s.split_once(sep) {
        m.insert(k.trim().to_string(), json!(v.trim()));
    }
}

/// Items of a block (`   name:` at the shallowest indentation, fields below).
fn items<'a>(body: &[&'a str]) -> Vec<(String, Vec<&'a str>)> {
    let depth = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap_or(0);
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for l in body {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) == depth && l.trim().ends_with(':') {
            out.push((l.trim().trim_end_matches(':').to_string(), Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push(l);
        }
    }
    out
}

fn containers(body: &[&str]) -> Vec<Value> {
    items(body)
        .into_iter()
        .map(|(name, fields)| container(&name, &fields))
        .collect()
}

fn container(name: &str, fields: &[&str]) -> Value {
    let mut c = Map::new();
    c.insert("name".into(), json!(name));
    let depth = fields.iter().map(|l| indent(l)).min().unwrap_or(0);
    let mut i = 0;
    while i < fields.len() {
        let l = fields[i];
        let end = (i + 1..fields.len())
            .find(|&j| indent(fields[j]) <= depth)
            .unwrap_or(fields.len());
        let sub: Vec<&str> = fields[i + 1..end].iter().map(|s| s.trim()).collect();
        let (k, v) = kv(l).unwrap_or((l.trim(), ""));
        match k {
            "Image" => {
                c.insert("image".into(), json!(v));
            }
            "Port" | "Ports" if v != "<none>" => {
                let ports: Vec<Value> = v.split(", ").filter_map(port).collect();
                if !ports.is_empty() {
                    c.insert("ports".into(), Value::Array(ports));
                }
            }
            "Command" | "Args" => {
                c.insert(k.to_ascii_lowercase(), json!(sub));
            }
            "Limits" | "Requests" => {
                let mut m = Map::new();
                for s in &sub {
                    put_pair(&mut m, s, ':');
                }
                let r = c
                    .entry("resources")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(r) = r.as_object_mut() {
                    r.insert(k.to_ascii_lowercase(), Value::Object(m));
                }
            }
            "Liveness" | "Readiness" | "Startup" => {
                let field = format!("{}Probe", k.to_ascii_lowercase());
                c.insert(field, probe(v));
            }
            "Environment" => {
                let env: Vec<Value> = sub.iter().filter_map(|s| env(s)).collect();
                if !env.is_empty() {
                    c.insert("env".into(), Value::Array(env));
                }
            }
            "Environment Variables from" => {
                let from: Vec<Value> = sub.iter().filter_map(|s| env_from(s)).collect();
                if !from.is_empty() {
                    c.insert("envFrom".into(), Value::Array(from));
                }
            }
            "Mounts" => {
                let m: Vec<Value> = sub.iter().filter_map(|s| mount(s)).collect();
                if !m.is_empty() {
                    c.insert("volumeMounts".into(), Value::Array(m));
                }
            }
            _ => {}
        }
        i = end;
    }
    Value::Object(c)
}

/// `8080/TCP` or `8080/TCP (http)`.
fn port(s: &str) -> Option<Value> {
    let (num, rest) = s.trim().split_once('/')?;
    let n: u64 = num.trim().parse().ok()?;
    let (proto, name) = match rest.split_once(" (") {
        Some((p, n)) => (p.trim(), Some(n.trim_end_matches(')'))),
        None => (rest.trim(), None),
    };
    let mut p = json!({ "containerPort": n, "protocol": proto });
    if let Some(name) = name {
        p["name"] = json!(name);
    }
    Some(p)
}

/// `http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3`.
fn probe(s: &str) -> Value {
    let mut p = Map::new();
    let attrs = [
        ("delay=", "initialDelaySeconds"),
        ("timeout=", "timeoutSeconds"),
        ("period=", "periodSeconds"),
        ("#success=", "successThreshold"),
        ("#failure=", "failureThreshold"),
    ];
    let mut handler: Vec<&str> = Vec::new();
    for w in s.split_whitespace() {
        match attrs.iter().find(|(pre, _)| w.starts_with(pre)) {
            Some((pre, field)) => {
                if let Ok(n) = w[pre.len()..].trim_end_matches('s').parse::<u64>() {
                    p.insert((*field).into(), json!(n));
                }
            }
            None => handler.push(w),
        }
    }
    match handler.split_first() {
        Some((&"http-get", rest)) => {
            let url = rest.first().copied().unwrap_or("");
            let (scheme, after) = url.split_once("://").unwrap_or(("http", url));
            let (hostport, path) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, ""));
            let mut h = json!({ "path": path, "port": port_value(port), "scheme": scheme.to_ascii_uppercase() });
            if !host.is_empty() {
                h["host"] = json!(host);
            }
            p.insert("httpGet".into(), h);
        }
        Some((&"tcp-socket", rest)) => {
            let hp = rest.first().copied().unwrap_or("");
            let (host, port) = hp.rsplit_once(':').unwrap_or(("", hp));
            let mut h = json!({ "port": port_value(port) });
            if !host.is_empty() {
                h["host"] = json!(host);
            }
            p.insert("tcpSocket".into(), h);
        }
        Some((&"exec", rest)) => {
            let words = rest.join(" ");
            let inner = words.trim_start_matches('[').trim_end_matches(']');
            let cmd: Vec<&str> = inner.split_whitespace().collect();
            p.insert("exec".into(), json!({ "command": cmd }));
        }
        Some((&"grpc", rest)) => {
            let port = rest
                .first()
                .and_then(|s| s.rsplit_once(':'))
                .map(|(_, p)| port_value(p))
                .unwrap_or(Value::Null);
            p.insert("grpc".into(), json!({ "port": port }));
        }
        _ => {
            p.insert("printed".into(), json!(handler.join(" ")));
        }
    }
    Value::Object(p)
}

fn port_value(p: &str) -> Value {
    p.parse::<u64>()
        .map(Value::from)
        .unwrap_or_else(|_| json!(p))
}

/// One `Environment:` entry.
fn env(s: &str) -> Option<Value> {
    let (name, rest) = s.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let rest = rest.trim();
    let optional = rest.contains("Optional: true");
    let quoted = |after: &str| -> Option<String> {
        let i = rest.find(after)? + after.len();
        let tail = &rest[i..];
        let end = tail.find('\'')?;
        Some(tail[..end].to_string())
    };
    let from = if rest.starts_with("<set to the key '") {
        let key = quoted("<set to the key '")?;
        if let Some(secret) = quoted("in secret '") {
            Some(json!({ "secretKeyRef": { "name": secret, "key": key, "optional": optional } }))
        } else {
            quoted("of config map '").map(
                |cm| json!({ "configMapKeyRef": { "name": cm, "key": key, "optional": optional } }),
            )
        }
    } else if rest.ends_with(')') && rest.contains('(') {
        let inner = &rest[rest.rfind('(')? + 1..rest.len() - 1];
        match inner.split_once(':') {
            Some((api, path)) if api.starts_with('v') => {
                Some(json!({ "fieldRef": { "apiVersion": api, "fieldPath": path } }))
            }
            _ if inner.starts_with("limits.") || inner.starts_with("requests.") => {
                Some(json!({ "resourceFieldRef": { "resource": inner } }))
            }
            _ => None,
        }
    } else {
        None
    };
    Some(match from {
        Some(f) => json!({ "name": name, "valueFrom": f }),
        None => json!({ "name": name, "value": rest }),
    })
}

/// `NAME\tConfigMap\tOptional: false`, `NAME\tSecret with prefix 'P_'\t...`.
fn env_from(s: &str) -> Option<Value> {
    let mut w = s.split_whitespace();
    let name = w.next()?;
    let kind = w.next()?;
    let optional = s.contains("Optional: true");
    let field = match kind {
        "ConfigMap" => "configMapRef",
        "Secret" => "secretRef",
        _ => return None,
    };
    let mut v = json!({ field: { "name": name, "optional": optional } });
    if let Some(i) = s.find("with prefix '") {
        let tail = &s[i + "with prefix '".len()..];
        if let Some(end) = tail.find('\'') {
            v["prefix"] = json!(&tail[..end]);
        }
    }
    Some(v)
}

/// `/etc/app from config (ro)`, `/data from cache (rw,path="sub")`.
fn mount(s: &str) -> Option<Value> {
    let (path, rest) = s.split_once(" from ")?;
    let (name, flags) = match rest.split_once(" (") {
        Some((n, f)) => (n.trim(), f.trim_end_matches(')')),
        None => (rest.trim(), ""),
    };
    let mut m = json!({ "mountPath": path.trim(), "name": name });
    for f in flags.split(',') {
        if f == "ro" {
            m["readOnly"] = json!(true);
        } else if let Some(p) = f.strip_prefix("path=") {
            m["subPath"] = json!(p.trim_matches('"'));
        }
    }
    Some(m)
}

fn volumes(body: &[&str]) -> Vec<Value> {
    items(body)
        .into_iter()
        .map(|(name, fields)| {
            let mut f = Map::new();
            for l in &fields {
                if let Some((k, v)) = kv(l) {
                    f.insert(k.to_string(), json!(v));
                }
            }
            let get = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let ty = get("Type");
            let optional = get("Optional") == "true";
            let source = if ty.starts_with("ConfigMap") {
                json!({ "configMap": { "name": get("Name"), "optional": optional } })
            } else if ty.starts_with("Secret") {
                json!({ "secret": { "secretName": get("SecretName"), "optional": optional } })
            } else if ty.starts_with("EmptyDir") {
                let mut e = Map::new();
                if !get("Medium").is_empty() {
                    e.insert("medium".into(), json!(get("Medium")));
                }
                let limit = get("SizeLimit");
                if !limit.is_empty() && limit != "<unset>" {
                    e.insert("sizeLimit".into(), json!(limit));
                }
                json!({ "emptyDir": e })
            } else if ty.starts_with("PersistentVolumeClaim") {
                json!({ "persistentVolumeClaim": { "claimName": get("ClaimName") } })
            } else {
                json!({ "printed": { "type": ty } })
            };
            let mut v = json!({ "name": name });
            if let (Some(o), Some(s)) = (v.as_object_mut(), source.as_object()) {
                for (k, x) in s {
                    o.insert(k.clone(), x.clone());
                }
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        Doc {
            name: "rollout-history.txt".into(),
            text: text.into(),
            line_offset: 0,
        }
    }

    /// As kubectl v0.36.3 prints it (tabs from the PrefixWriter).
    const REV3: &str = "deployment.apps/web with revision #3\nPod Template:\n  Labels:\tapp=web\n\tpod-template-hash=7d9c6b5f8\n  Annotations:\tkubectl.kubernetes.io/restartedAt: 2026-11-30T10:00:00Z\n  Service Account:\tweb\n  Containers:\n   app:\n    Image:\tregistry.example.com/web:1.5.0\n    Port:\t8080/TCP\n    Host Port:\t0/TCP\n    Command:\n      /app/server\n    Args:\n      --port=8080\n    Limits:\n      memory:\t256Mi\n    Requests:\n      cpu:\t100m\n    Liveness:\thttp-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3\n    Environment Variables from:\n      web-env\tConfigMap\tOptional: false\n    Environment:\n      LOG_LEVEL:\tinfo\n      DB_PASSWORD:\t<set to the key 'password' in secret 'db'>\tOptional: false\n      POD_NAME:\t (v1:metadata.name)\n    Mounts:\n      /etc/app from config (ro)\n  Volumes:\n   config:\n    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\tweb-config\n    Optional:\tfalse\n  Node-Selectors:\tpool=general\n  Tolerations:\t<none>\n";

    #[test]
    fn a_revision_reads_into_a_template() {
        let r = parse(&doc(REV3));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].number, Some(3));
        assert_eq!(
            r[0].workload,
            Some(("deployment.apps".into(), "web".into()))
        );
        let t = r[0].template.as_ref().unwrap();
        assert_eq!(t["metadata"]["labels"]["pod-template-hash"], "7d9c6b5f8");
        let c = &t["spec"]["containers"][0];
        assert_eq!(c["name"], "app");
        assert_eq!(c["image"], "registry.example.com/web:1.5.0");
        assert_eq!(c["command"][0], "/app/server");
        assert_eq!(c["args"][0], "--port=8080");
        assert_eq!(c["resources"]["limits"]["memory"], "256Mi");
        assert_eq!(c["resources"]["requests"]["cpu"], "100m");
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], 8080);
        assert_eq!(c["livenessProbe"]["failureThreshold"], 3);
        assert_eq!(c["env"][0]["value"], "info");
        assert_eq!(c["env"][1]["valueFrom"]["secretKeyRef"]["key"], "password");
        assert_eq!(
            c["env"][2]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name"
        );
        assert_eq!(c["envFrom"][0]["configMapRef"]["name"], "web-env");
        assert_eq!(c["volumeMounts"][0]["readOnly"], true);
        assert_eq!(t["spec"]["volumes"][0]["configMap"]["name"], "web-config");
        assert_eq!(t["spec"]["nodeSelector"]["pool"], "general");
        assert_eq!(t["spec"]["serviceAccountName"], "web");
    }

    #[test]
    fn two_pasted_revisions_diff_by_meaning() {
        let rev2 = REV3
            .replace("#3", "#2")
            .replace("web:1.5.0", "web:1.4.0")
            .replace("7d9c6b5f8", "6d4cf56db6");
        // Spaces instead of tabs, as a paste into a ticket turns them.
        let text = format!("{}\n{}", rev2.replace('\t', "  "), REV3);
        let r = parse(&doc(&text));
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].number, Some(2));
        let changes = crate::changes::diff_templates(
            r[0].template.as_ref().unwrap(),
            r[1].template.as_ref().unwrap(),
        );
        let relevant: Vec<String> = changes
            .iter()
            .filter(|c| c.relevant)
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            relevant,
            [
                "spec.containers[app].image: changed: registry.example.com/web:1.4.0 -> registry.example.com/web:1.5.0"
            ]
        );
    }

    #[test]
    fn the_table_gives_numbers_and_causes() {
        let r = parse(&doc(
            "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         kubectl set image deploy/web app=web:1.4.0\n",
        ));
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].number, Some(1));
        assert_eq!(r[0].change_cause, None);
        assert_eq!(
            r[1].change_cause.as_deref(),
            Some("kubectl set image deploy/web app=web:1.4.0")
        );
        assert!(r[1].template.is_none());
    }

    #[test]
    fn text_that_is_not_history_gives_nothing() {
        assert!(parse(&doc("Name: web-1\nContainers:\n  app:\n    Image: x\n")).is_empty());
        assert!(parse(&doc("error: unable to find the specified revision\n")).is_empty());
    }

    #[test]
    fn every_truncation_and_mangling_reads_without_panic() {
        for cut in (0..REV3.len()).filter(|&i| REV3.is_char_boundary(i)) {
            let _ = parse(&doc(&REV3[..cut]));
            let _ = parse(&doc(&REV3[cut..]));
        }
        let odd = "x/y with revision #9\nPod Template:\n\t\t:\n  Containers:\n   :\n    Liveness:\thttp-get\n    Environment:\n      A:\t<set to the key '\n      B:\t(\n    Mounts:\n       from \n  Volumes:\n   v:\n";
        let r = parse(&doc(odd));
        assert_eq!(r.len(), 1);
    }
}
