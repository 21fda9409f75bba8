//! `kubectl describe pod` text, read robustly: any kubectl version, partial
//! pastes, tabs or spaces, indentation mangled by chat tools. Lines are
//! recognised by their keys, not their indentation.

use super::Doc;
use super::tables::parse_event_lines;
use crate::model::*;
use regex::Regex;
use std::sync::LazyLock;

/// Keys that belong to a container block.
const CONTAINER_KEYS: &[&str] = &[
    "container id",
    "image",
    "image id",
    "port",
    "ports",
    "host port",
    "host ports",
    "command",
    "args",
    "state",
    "last state",
    "reason",
    "exit code",
    "signal",
    "message",
    "started",
    "finished",
    "ready",
    "restart count",
    "limits",
    "requests",
    "liveness",
    "readiness",
    "startup",
    "environment",
    "environment variables from",
    "mounts",
    "seccompprofile",
    "restart policy",
    "devices",
    "allocated resources",
];

/// Top-level keys that end a container section.
const POD_KEYS: &[&str] = &[
    "name",
    "namespace",
    "priority",
    "priority class name",
    "runtime class name",
    "service account",
    "node",
    "start time",
    "labels",
    "annotations",
    "status",
    "ip",
    "ips",
    "controlled by",
    "nominated node name",
    "conditions",
    "volumes",
    "qos class",
    "node-selectors",
    "tolerations",
    "events",
    "readiness gates",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Top,
    Containers(ContainerKind),
    Volumes,
    Events,
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sub {
    None,
    Command,
    Args,
    Limits,
    Requests,
    Env,
    Mounts,
    Probe,
    EnvFrom,
}

static KV: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Za-z][A-Za-z0-9 ._/-]*?):(?:\s+(.*?))?\s*$").expect("static regex")
});
static PROBE_PARAMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"delay=(\d+)s\s+timeout=(\d+)s\s+period=(\d+)s\s+#success=(\d+)\s+#failure=(\d+)")
        .expect("static regex")
});
static EVENT_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\S+\s+)?(?:Normal|Warning)\s+[A-Z][A-Za-z]+\b").expect("static regex")
});
static DNS_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$").expect("static regex"));
static ENV_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<set to the key '([^']+)' (?:of|in) (config map|secret) '([^']+)'>(?:\s+Optional:\s+(true|false))?").expect("static regex")
});
static MOUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(/\S*) from (\S+) \((ro|rw)(?:,[^)]*)?\)").expect("static regex")
});

/// What a describe paste contributes to a pod.
#[derive(Debug, Default)]
pub struct Described {
    pub pod: Pod,
    pub saw_events_table: bool,
}

/// Parse `kubectl describe pod` output.
pub fn parse(doc: &Doc) -> Described {
    let mut out = Described::default();
    let pod = &mut out.pod;
    let mut section = Section::Top;
    let mut sub = Sub::None;
    let mut current: Option<usize> = None;
    // Which state block the Reason / Exit Code lines belong to.
    let mut in_last_state = false;
    let mut event_lines: Vec<(usize, &str)> = Vec::new();
    // The Volumes section: the volume whose lines follow, and each volume's source.
    let mut volume: Option<String> = None;
    let mut sources: Vec<(String, Field<String>)> = Vec::new();

    for (idx, raw) in doc.text.lines().enumerate() {
        let line = crate::text::clean_line(raw);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed == "..." {
            continue;
        }
        let lineno = doc.line_offset + idx as u64 + 1;
        let loc = format!("{}:{}", doc.name, lineno);
        let cite = |source: SourceKind| Cite::new(source, loc.clone(), trimmed.to_string());

        if section == Section::Events || EVENT_ROW.is_match(trimmed) {
            event_lines.push((idx, raw));
            continue;
        }

        let kv = KV.captures(trimmed);
        let (key, value) = match &kv {
            Some(c) => (
                c[1].trim().to_ascii_lowercase(),
                c.get(2).map(|m| m.as_str().trim()).unwrap_or(""),
            ),
            None => (String::new(), ""),
        };

        // Section headers.
        match key.as_str() {
            "containers" if value.is_empty() => {
                section = Section::Containers(ContainerKind::Main);
                current = None;
                continue;
            }
            "init containers" if value.is_empty() => {
                section = Section::Containers(ContainerKind::Init);
                current = None;
                continue;
            }
            "ephemeral containers" if value.is_empty() => {
                section = Section::Containers(ContainerKind::Ephemeral);
                current = None;
                continue;
            }
            "events" => {
                section = Section::Events;
                out.saw_events_table = true;
                continue;
            }
            "volumes" if value.is_empty() => {
                section = Section::Volumes;
                continue;
            }
            _ => {}
        }

        // Before any container, Reason and Message are the pod's (Evicted).
        if section == Section::Top && current.is_none() && (key == "reason" || key == "message") {
            top_level(pod, &key, value, cite(SourceKind::Status));
            continue;
        }

        let is_container_key = CONTAINER_KEYS.contains(&key.as_str());
        let is_pod_key = POD_KEYS.contains(&key.as_str()) && !is_container_key;
        let indent = raw.len() - raw.trim_start().len();

        // Volumes: `NAME:` opens a volume and its `Type:` names the source
        // (kubectl describe printVolumes: `Type:\tConfigMap (a volume
        // populated by a ConfigMap)`); a ConfigMap volume's `Name:` is the
        // ConfigMap's, not the pod's.
        if section == Section::Volumes && (!is_pod_key || key == "name") {
            if key == "type" {
                if let (Some(v), Some(word)) = (&volume, value.split_whitespace().next()) {
                    let c = cite(SourceKind::Spec);
                    sources.push((v.clone(), Field::new(volume_kind(word), c)));
                }
            } else if value.is_empty()
                && let Some(c) = &kv
                && DNS_LABEL.is_match(c[1].trim())
            {
                volume = Some(c[1].trim().to_string());
            }
            continue;
        }

        // A top-level pod key ends any container section (when the paste kept
        // its indentation, or the key cannot belong to a container).
        if is_pod_key && (indent == 0 || !matches!(section, Section::Containers(_))) {
            if key != "name" || !matches!(section, Section::Containers(_)) {
                section = match key.as_str() {
                    "conditions" | "qos class" | "node-selectors" | "tolerations"
                    | "readiness gates" => Section::Other,
                    _ => Section::Top,
                };
            }
            if section == Section::Top {
                top_level(pod, &key, value, cite(SourceKind::Status));
            }
            sub = Sub::None;
            continue;
        }

        if matches!(section, Section::Volumes | Section::Other) {
            continue;
        }

        // Inside a container block: sub-lists first.
        if !is_container_key {
            if let Some(i) = current {
                let c = &mut pod.containers[i];
                match sub {
                    Sub::Command => {
                        c.command.push(trimmed.to_string());
                        continue;
                    }
                    Sub::Args => {
                        c.args.push(trimmed.to_string());
                        continue;
                    }
                    Sub::Limits | Sub::Requests if !value.is_empty() => {
                        let map = if sub == Sub::Limits {
                            &mut c.limits
                        } else {
                            &mut c.requests
                        };
                        map.insert(
                            key.clone(),
                            Field::new(value.to_string(), cite(SourceKind::Spec)),
                        );
                        continue;
                    }
                    Sub::Env => {
                        if let Some(kvc) = &kv {
                            let name = kvc[1].trim().to_string();
                            let mut var = EnvVar {
                                name,
                                value: None,
                                from: None,
                                cite: cite(SourceKind::Spec),
                            };
                            if let Some(r) = ENV_REF.captures(value) {
                                var.from = Some(EnvSource {
                                    kind: if &r[2] == "secret" {
                                        RefKind::Secret
                                    } else {
                                        RefKind::ConfigMap
                                    },
                                    name: r[3].to_string(),
                                    key: Some(r[1].to_string()),
                                    optional: r.get(4).is_some_and(|m| m.as_str() == "true"),
                                });
                            } else if !value.is_empty() {
                                var.value = Some(value.to_string());
                            }
                            c.env.push(var);
                        }
                        continue;
                    }
                    Sub::Mounts => {
                        if let Some(m) = MOUNT.captures(trimmed) {
                            c.mounts.push(Mount {
                                path: m[1].to_string(),
                                name: m[2].to_string(),
                                read_only: &m[3] == "ro",
                                cite: cite(SourceKind::Spec),
                                source: None,
                            });
                        }
                        continue;
                    }
                    Sub::Probe => {
                        if let Some(p) = c.probes.last_mut() {
                            apply_probe_params(p, trimmed);
                        }
                        continue;
                    }
                    Sub::EnvFrom => continue,
                    _ => {}
                }
            }
            // A new container: `name:` with no value, shaped like a DNS label.
            if let Section::Containers(kind) = section
                && value.is_empty()
                && kv.is_some()
            {
                let name = kv
                    .as_ref()
                    .map(|c| c[1].trim().to_string())
                    .unwrap_or_default();
                if DNS_LABEL.is_match(&name) {
                    let c = pod.container_mut_or_insert(&name);
                    c.kind = kind;
                    current = pod.containers.iter().position(|c| c.name == name);
                    sub = Sub::None;
                    in_last_state = false;
                }
            }
            continue;
        }

        // A container key with no container yet: a partial paste. Use an
        // unnamed container that the assembler matches up later.
        let i = match current {
            Some(i) => i,
            None => {
                pod.container_mut_or_insert("");
                let i = pod
                    .containers
                    .iter()
                    .position(|c| c.name.is_empty())
                    .unwrap_or(0);
                current = Some(i);
                i
            }
        };
        sub = Sub::None;
        let c = &mut pod.containers[i];
        let status_ref = |field: &str, last: bool| {
            let state = if last { "lastState" } else { "state" };
            format!(
                "status.containerStatuses[{}].{state}{field}",
                if c.name.is_empty() { "?" } else { &c.name }
            )
        };
        match key.as_str() {
            "image" => {
                c.image = Some(value.to_string());
                // describe prints Command and Args right after Image when
                // they are set: the container's spec is read.
                c.spec_from = c.spec_from.max(Some(SpecFrom::Describe));
            }
            "command" => {
                sub = Sub::Command;
                if !value.is_empty() {
                    c.command.push(value.to_string());
                }
            }
            "args" => {
                sub = Sub::Args;
                if !value.is_empty() {
                    c.args.push(value.to_string());
                }
            }
            "port" | "ports" => {
                for p in value.split(',') {
                    if let Some(n) = p
                        .trim()
                        .split('/')
                        .next()
                        .and_then(|n| n.parse::<u16>().ok())
                    {
                        c.ports.push(n);
                    }
                }
            }
            "state" | "last state" => {
                in_last_state = key == "last state";
                let kind = match value
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase()
                    .as_str()
                {
                    "waiting" => Some(StateKind::Waiting),
                    "running" => Some(StateKind::Running),
                    "terminated" => Some(StateKind::Terminated),
                    _ => None,
                };
                if let Some(kind) = kind {
                    let r = Cite::new(
                        SourceKind::Status,
                        status_ref("", in_last_state),
                        trimmed.to_string(),
                    )
                    .at(loc.clone());
                    let st = ContainerState::new(kind, r);
                    if in_last_state {
                        c.last_state = Some(st);
                    } else {
                        c.state = Some(st);
                    }
                }
            }
            "reason" | "exit code" | "signal" | "message" | "started" | "finished" => {
                let kind_name = if in_last_state {
                    c.last_state.as_ref()
                } else {
                    c.state.as_ref()
                }
                .map(|s| s.kind);
                let field_path = match kind_name {
                    Some(StateKind::Waiting) => ".waiting",
                    Some(StateKind::Running) => ".running",
                    _ => ".terminated",
                };
                let target = if in_last_state {
                    &mut c.last_state
                } else {
                    &mut c.state
                };
                let st = target.get_or_insert_with(|| {
                    ContainerState::new(
                        StateKind::Terminated,
                        Cite::new(SourceKind::Status, "?", trimmed.to_string()),
                    )
                });
                let f = match key.as_str() {
                    "reason" => ".reason",
                    "exit code" => ".exitCode",
                    "message" => ".message",
                    "signal" => ".signal",
                    "started" => ".startedAt",
                    _ => ".finishedAt",
                };
                let path = format!(
                    "status.containerStatuses[{}].{}{}{}",
                    if c.name.is_empty() { "?" } else { &c.name },
                    if in_last_state { "lastState" } else { "state" },
                    field_path,
                    f
                );
                let fc = Cite::new(SourceKind::Status, path, trimmed.to_string()).at(loc.clone());
                match key.as_str() {
                    "reason" => st.reason = Some(Field::new(value.to_string(), fc)),
                    "exit code" => {
                        if let Ok(n) = value.parse() {
                            st.exit_code = Some(Field::new(n, fc));
                        }
                    }
                    "signal" => st.signal = value.parse().ok(),
                    "message" => st.message = Some(Field::new(value.to_string(), fc)),
                    "started" => st.started_at = Some(value.to_string()),
                    _ => st.finished_at = Some(value.to_string()),
                }
            }
            "ready" => c.ready = Some(value.eq_ignore_ascii_case("true")),
            "restart count" => {
                if let Ok(n) = value.parse() {
                    let path = format!("status.containerStatuses[{}].restartCount", c.name);
                    c.restart_count = Some(Field::new(
                        n,
                        Cite::new(SourceKind::Status, path, trimmed.to_string()).at(loc.clone()),
                    ));
                }
            }
            "limits" => sub = Sub::Limits,
            "requests" => sub = Sub::Requests,
            "environment" => {
                sub = if value.is_empty() {
                    Sub::Env
                } else {
                    Sub::None
                }
            }
            "environment variables from" => sub = Sub::EnvFrom,
            "mounts" => sub = Sub::Mounts,
            "restart policy"
                if value.eq_ignore_ascii_case("always") && c.kind == ContainerKind::Init =>
            {
                c.kind = ContainerKind::Sidecar;
            }
            "liveness" | "readiness" | "startup" => {
                let kind = match key.as_str() {
                    "liveness" => ProbeKind::Liveness,
                    "readiness" => ProbeKind::Readiness,
                    _ => ProbeKind::Startup,
                };
                let path = format!("spec.containers[{}].{}", c.name, kind.field());
                let mut p = Probe::new(
                    kind,
                    Cite::new(SourceKind::Spec, path, trimmed.to_string()).at(loc.clone()),
                );
                p.handler = value
                    .split(" delay=")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                apply_probe_params(&mut p, value);
                c.probes.retain(|x| x.kind != kind);
                c.probes.push(p);
                sub = Sub::Probe;
            }
            _ => {}
        }
    }

    for (idx, raw) in event_lines {
        let sub_doc = Doc {
            name: doc.name.clone(),
            text: raw.to_string(),
            line_offset: doc.line_offset + idx as u64,
        };
        pod.events.extend(parse_event_lines(&sub_doc));
    }
    for c in &mut pod.containers {
        for m in &mut c.mounts {
            if let Some((_, f)) = sources.iter().find(|(v, _)| *v == m.name) {
                m.source = Some(f.clone());
            }
        }
    }
    out
}

/// The volume source field describe's `Type:` word stands for: `ConfigMap`
/// is `configMap`, `DownwardAPI` `downwardAPI`, `NFS` `nfs`.
fn volume_kind(word: &str) -> String {
    if word.chars().all(|c| !c.is_ascii_lowercase()) {
        return word.to_ascii_lowercase();
    }
    let mut cs = word.chars();
    cs.next()
        .map(|f| f.to_ascii_lowercase().to_string() + cs.as_str())
        .unwrap_or_default()
}

fn apply_probe_params(p: &mut Probe, text: &str) {
    if let Some(m) = PROBE_PARAMS.captures(text) {
        let n = |i: usize| m[i].parse::<u32>().unwrap_or(0);
        p.initial_delay = n(1);
        p.timeout = n(2);
        p.period = n(3);
        p.success = n(4);
        p.failure = n(5);
        if !p.cite.text.contains("delay=") {
            p.cite.text = format!("{} {}", p.cite.text, m.get(0).map_or("", |m| m.as_str()));
        }
    }
}

fn top_level(pod: &mut Pod, key: &str, value: &str, cite: Cite) {
    if value.is_empty() || value == "<none>" {
        return;
    }
    let v = value.to_string();
    match key {
        "name" => pod.name = Some(v),
        "namespace" => pod.namespace = Some(v),
        "node" => pod.node_name = Some(v.split('/').next().unwrap_or("").to_string()),
        "status" => {
            let c = Cite {
                reference: "status.phase".into(),
                location: Some(cite.reference.clone()),
                ..cite
            };
            pod.phase = Some(Field::new(v, c));
        }
        "reason" => {
            let c = Cite {
                reference: "status.reason".into(),
                location: Some(cite.reference.clone()),
                ..cite
            };
            pod.reason = Some(Field::new(v, c));
        }
        "message" => {
            let c = Cite {
                reference: "status.message".into(),
                location: Some(cite.reference.clone()),
                ..cite
            };
            pod.message = Some(Field::new(v, c));
        }
        "controlled by" => {
            if let Some((kind, name)) = value.split_once('/') {
                pod.owner = Some(Owner {
                    kind: kind.to_string(),
                    name: name.to_string(),
                    observed: true,
                });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        Doc {
            name: "describe-pod.txt".into(),
            text: text.into(),
            line_offset: 0,
        }
    }

    const FULL: &str = "Name:         vllm-7d9f-abcde
Namespace:    llm
Node:         gpu-1/10.0.0.5
Status:       Running
Controlled By:  ReplicaSet/vllm-7d9f
Init Containers:
  fetch:
    Image:  busybox
    State:          Terminated
      Reason:       Completed
      Exit Code:    0
    Ready:          True
    Restart Count:  0
Containers:
  vllm:
    Image:          vllm/vllm-openai:v0.6.3
    Port:           8000/TCP
    Args:
      --model
      /models/llama
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 01 Jan 2024 10:00:00 +0000
      Finished:     Mon, 01 Jan 2024 10:03:10 +0000
    Ready:          False
    Restart Count:  4
    Limits:
      memory:          16Gi
      nvidia.com/gpu:  1
    Liveness:   http-get http://:8000/health delay=30s timeout=1s period=10s #success=1 #failure=3
    Environment:
      HF_TOKEN:  <set to the key 'token' in secret 'hf'>  Optional: false
      MODE:      serve
    Mounts:
      /models from models (ro)
Conditions:
  Type              Status
  Ready             False
Events:
  Type     Reason     Age                From     Message
  ----     ------     ----               ----     -------
  Warning  BackOff    2m (x10 over 8m)   kubelet  Back-off restarting failed container vllm in pod vllm-7d9f-abcde
";

    #[test]
    fn full_describe() {
        let d = parse(&doc(FULL));
        let p = d.pod;
        assert_eq!(p.name.as_deref(), Some("vllm-7d9f-abcde"));
        assert_eq!(p.namespace.as_deref(), Some("llm"));
        assert_eq!(p.node_name.as_deref(), Some("gpu-1"));
        assert_eq!(p.owner.as_ref().unwrap().kind, "ReplicaSet");
        assert_eq!(p.containers.len(), 2);
        let init = &p.containers[0];
        assert_eq!(init.kind, ContainerKind::Init);
        let c = p.container("vllm").unwrap();
        assert_eq!(c.kind, ContainerKind::Main);
        let t = c.last_termination().unwrap();
        assert!(t.reason_is("OOMKilled"));
        assert_eq!(t.exit(), Some(137));
        assert_eq!(t.run_seconds(), Some(190));
        assert_eq!(
            t.reason.as_ref().unwrap().cite.reference,
            "status.containerStatuses[vllm].lastState.terminated.reason"
        );
        assert_eq!(
            t.reason.as_ref().unwrap().cite.location.as_deref(),
            Some("describe-pod.txt:24")
        );
        assert_eq!(c.restarts(), 4);
        assert_eq!(c.limits["memory"].value, "16Gi");
        assert_eq!(c.args, vec!["--model", "/models/llama"]);
        let probe = c.probe(ProbeKind::Liveness).unwrap();
        assert_eq!(
            (probe.initial_delay, probe.period, probe.failure),
            (30, 10, 3)
        );
        assert_eq!(c.env.len(), 2);
        assert_eq!(c.env[0].from.as_ref().unwrap().name, "hf");
        assert_eq!(c.mounts[0].path, "/models");
        assert!(c.mounts[0].read_only);
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].reason, "BackOff");
        assert_eq!(p.events[0].count, Some(10));
    }

    #[test]
    fn mangled_indentation_still_parses() {
        let flat: String = FULL
            .lines()
            .map(|l| l.trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let p = parse(&doc(&flat)).pod;
        let c = p.container("vllm").unwrap();
        assert!(c.last_termination().unwrap().reason_is("OOMKilled"));
        assert_eq!(c.limits["memory"].value, "16Gi");
        assert_eq!(p.events.len(), 1);
    }

    #[test]
    fn partial_paste_without_container_header() {
        let p = parse(&doc("    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n")).pod;
        assert_eq!(p.containers.len(), 1);
        assert_eq!(p.containers[0].name, "");
        assert_eq!(
            p.containers[0].last_termination().unwrap().exit(),
            Some(137)
        );
    }

    /// The Volumes section gives each mount its volume's source; a
    /// ConfigMap volume's `Name:` is the ConfigMap's, never the pod's.
    #[test]
    fn volumes_name_the_source_of_each_mount() {
        let text = "Name:         web-5f7c8d9b6-q2xlm
Namespace:    shop
Containers:
  web:
    Image:          registry.example.com/shop/web:2.4.1
    Mounts:
      /etc/web from settings (rw)
      /srv/uploads from uploads (rw)
Volumes:
  settings:
    Type:      ConfigMap (a volume populated by a ConfigMap)
    Name:      web-settings
    Optional:  false
  uploads:
    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)
    Medium:
    SizeLimit:  <unset>
QoS Class:       BestEffort
";
        let p = parse(&doc(text)).pod;
        assert_eq!(p.name.as_deref(), Some("web-5f7c8d9b6-q2xlm"));
        let c = p.container("web").unwrap();
        let kind = |path: &str| {
            let m = c.mounts.iter().find(|m| m.path == path).unwrap();
            m.source.as_ref().map(|s| s.value.clone())
        };
        assert_eq!(kind("/etc/web").as_deref(), Some("configMap"));
        assert_eq!(kind("/srv/uploads").as_deref(), Some("emptyDir"));
        assert!(
            c.mounts[0].is_read_only(),
            "the kubelet mounts a ConfigMap read-only"
        );
        assert!(!c.mounts[1].is_read_only());
        // describe does not print readOnlyRootFilesystem.
        assert!(c.read_only_root.is_none());
        // It prints the spec (Image, and Command and Args when set), never tty.
        assert_eq!(c.spec_from, Some(SpecFrom::Describe));
        assert_eq!(c.interactive(), None);
    }

    #[test]
    fn garbage_gives_nothing() {
        let p = parse(&doc("\u{0}\u{1}binary\nnot: a describe\n")).pod;
        assert!(p.containers.is_empty());
    }
}
