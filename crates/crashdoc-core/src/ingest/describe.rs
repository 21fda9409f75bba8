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
    let mut parser = Parser::new(doc);
    for (idx, raw) in doc.text.lines().enumerate() {
        parser.line(idx, raw);
    }
    parser.finish()
}

/// One non-empty line of the paste, cleaned, with its `Key: value` split.
struct Line<'l> {
    raw: &'l str,
    trimmed: &'l str,
    /// `file:line`, where a citation points.
    loc: String,
    /// The key as written, when the line is `Key:` or `Key: value`.
    name: Option<&'l str>,
    /// That key, lowercased ("" when the line has none).
    key: String,
    /// Its value ("" when none).
    value: &'l str,
}

impl<'l> Line<'l> {
    fn new(doc: &Doc, idx: usize, raw: &'l str, trimmed: &'l str) -> Self {
        let kv = KV.captures(trimmed);
        let name = kv
            .as_ref()
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().trim());
        let value = kv
            .as_ref()
            .and_then(|c| c.get(2))
            .map_or("", |m| m.as_str().trim());
        Line {
            raw,
            trimmed,
            loc: format!("{}:{}", doc.name, doc.line_offset + idx as u64 + 1),
            name,
            key: name.unwrap_or("").to_ascii_lowercase(),
            value,
        }
    }

    /// A citation of this line itself.
    fn cite(&self, source: SourceKind) -> Cite {
        Cite::new(source, self.loc.clone(), self.trimmed.to_string())
    }

    /// A citation of the object field `reference`, read at this line.
    fn cite_field(&self, source: SourceKind, reference: String) -> Cite {
        Cite::new(source, reference, self.trimmed.to_string()).at(self.loc.clone())
    }

    fn is_container_key(&self) -> bool {
        CONTAINER_KEYS.contains(&self.key.as_str())
    }

    fn is_pod_key(&self) -> bool {
        POD_KEYS.contains(&self.key.as_str()) && !self.is_container_key()
    }

    /// A `NAME:` line with no value, NAME shaped like a DNS label: it opens
    /// a container or a volume.
    fn opening_name(&self) -> Option<&'l str> {
        self.name
            .filter(|n| self.value.is_empty() && DNS_LABEL.is_match(n))
    }

    fn indent(&self) -> usize {
        self.raw.len() - self.raw.trim_start().len()
    }
}

/// Where the parser stands in the paste and what it has gathered. Each line
/// goes through [`Parser::line`], whose steps are tried in order; the first
/// that takes the line ends it.
struct Parser<'d> {
    doc: &'d Doc,
    out: Described,
    section: Section,
    sub: Sub,
    /// The container whose lines follow (an index into `out.pod.containers`).
    current: Option<usize>,
    /// Which state block the Reason / Exit Code lines belong to.
    in_last_state: bool,
    /// Event rows, parsed together at the end.
    event_lines: Vec<(usize, &'d str)>,
    /// The Volumes section: the volume whose lines follow...
    volume: Option<String>,
    /// ...and each volume's source.
    sources: Vec<(String, Field<String>)>,
}

impl<'d> Parser<'d> {
    fn new(doc: &'d Doc) -> Self {
        Parser {
            doc,
            out: Described::default(),
            section: Section::Top,
            sub: Sub::None,
            current: None,
            in_last_state: false,
            event_lines: Vec::new(),
            volume: None,
            sources: Vec::new(),
        }
    }

    fn line(&mut self, idx: usize, raw: &'d str) {
        let cleaned = crate::text::clean_line(raw);
        let trimmed = cleaned.trim();
        if trimmed.is_empty() || trimmed == "..." {
            return;
        }
        if self.section == Section::Events || EVENT_ROW.is_match(trimmed) {
            self.event_lines.push((idx, raw));
            return;
        }
        let line = Line::new(self.doc, idx, raw, trimmed);
        if self.section_header(&line)
            || self.pod_reason(&line)
            || self.volume_line(&line)
            || self.pod_key(&line)
            || matches!(self.section, Section::Volumes | Section::Other)
        {
            return;
        }
        if line.is_container_key() {
            self.container_key(&line);
        } else if !self.sub_list(&line) {
            self.open_container(&line);
        }
    }

    /// `Containers:`, `Init Containers:`, `Ephemeral Containers:`, `Events:`,
    /// `Volumes:`.
    fn section_header(&mut self, line: &Line) -> bool {
        let containers = |kind| (Section::Containers(kind), true);
        let (section, resets_container) = match line.key.as_str() {
            "containers" if line.value.is_empty() => containers(ContainerKind::Main),
            "init containers" if line.value.is_empty() => containers(ContainerKind::Init),
            "ephemeral containers" if line.value.is_empty() => containers(ContainerKind::Ephemeral),
            "events" => {
                self.out.saw_events_table = true;
                (Section::Events, false)
            }
            "volumes" if line.value.is_empty() => (Section::Volumes, false),
            _ => return false,
        };
        self.section = section;
        if resets_container {
            self.current = None;
        }
        true
    }

    /// Before any container, Reason and Message are the pod's (Evicted).
    fn pod_reason(&mut self, line: &Line) -> bool {
        let takes = self.section == Section::Top
            && self.current.is_none()
            && (line.key == "reason" || line.key == "message");
        if takes {
            top_level(
                &mut self.out.pod,
                &line.key,
                line.value,
                line.cite(SourceKind::Status),
            );
        }
        takes
    }

    /// Volumes: `NAME:` opens a volume and its `Type:` names the source
    /// (kubectl describe printVolumes: `Type:\tConfigMap (a volume
    /// populated by a ConfigMap)`); a ConfigMap volume's `Name:` is the
    /// ConfigMap's, not the pod's.
    fn volume_line(&mut self, line: &Line) -> bool {
        if self.section != Section::Volumes || (line.is_pod_key() && line.key != "name") {
            return false;
        }
        if line.key == "type" {
            if let (Some(v), Some(word)) = (&self.volume, line.value.split_whitespace().next()) {
                let source = Field::new(volume_kind(word), line.cite(SourceKind::Spec));
                self.sources.push((v.clone(), source));
            }
        } else if let Some(name) = line.opening_name() {
            self.volume = Some(name.to_string());
        }
        true
    }

    /// A top-level pod key ends any container section (when the paste kept
    /// its indentation, or the key cannot belong to a container).
    fn pod_key(&mut self, line: &Line) -> bool {
        let in_containers = matches!(self.section, Section::Containers(_));
        if !line.is_pod_key() || (line.indent() != 0 && in_containers) {
            return false;
        }
        if line.key != "name" || !in_containers {
            self.section = match line.key.as_str() {
                "conditions" | "qos class" | "node-selectors" | "tolerations"
                | "readiness gates" => Section::Other,
                _ => Section::Top,
            };
        }
        if self.section == Section::Top {
            top_level(
                &mut self.out.pod,
                &line.key,
                line.value,
                line.cite(SourceKind::Status),
            );
        }
        self.sub = Sub::None;
        true
    }

    /// A line of the sub-list the last container key opened (Command, Args,
    /// Limits, Requests, Environment, Mounts, a probe's parameters).
    fn sub_list(&mut self, line: &Line) -> bool {
        let Some(i) = self.current else {
            return false;
        };
        let c = &mut self.out.pod.containers[i];
        match self.sub {
            Sub::Command => c.command.push(line.trimmed.to_string()),
            Sub::Args => c.args.push(line.trimmed.to_string()),
            Sub::Limits | Sub::Requests if !line.value.is_empty() => {
                let map = if self.sub == Sub::Limits {
                    &mut c.limits
                } else {
                    &mut c.requests
                };
                let value = Field::new(line.value.to_string(), line.cite(SourceKind::Spec));
                map.insert(line.key.clone(), value);
            }
            Sub::Env => {
                if let Some(name) = line.name {
                    c.env.push(env_var(name, line));
                }
            }
            Sub::Mounts => {
                if let Some(m) = MOUNT.captures(line.trimmed) {
                    c.mounts.push(Mount {
                        path: m[1].to_string(),
                        name: m[2].to_string(),
                        read_only: &m[3] == "ro",
                        cite: line.cite(SourceKind::Spec),
                        source: None,
                    });
                }
            }
            Sub::Probe => {
                if let Some(p) = c.probes.last_mut() {
                    apply_probe_params(p, line.trimmed);
                }
            }
            Sub::EnvFrom => {}
            Sub::None | Sub::Limits | Sub::Requests => return false,
        }
        true
    }

    /// A new container: `name:` with no value, shaped like a DNS label,
    /// inside a containers section.
    fn open_container(&mut self, line: &Line) {
        let Section::Containers(kind) = self.section else {
            return;
        };
        let Some(name) = line.opening_name() else {
            return;
        };
        let pod = &mut self.out.pod;
        pod.container_mut_or_insert(name).kind = kind;
        self.current = pod.containers.iter().position(|c| c.name == name);
        self.sub = Sub::None;
        self.in_last_state = false;
    }

    /// The container the next key belongs to. A container key with no
    /// container yet is a partial paste: an unnamed container, which the
    /// assembler matches up later.
    fn current_container(&mut self) -> &mut Container {
        let pod = &mut self.out.pod;
        let i = match self.current {
            Some(i) => i,
            None => {
                pod.container_mut_or_insert("");
                let i = pod
                    .containers
                    .iter()
                    .position(|c| c.name.is_empty())
                    .unwrap_or(0);
                self.current = Some(i);
                i
            }
        };
        &mut pod.containers[i]
    }

    fn container_key(&mut self, line: &Line) {
        self.sub = Sub::None;
        let value = line.value;
        let key = line.key.as_str();
        if matches!(key, "state" | "last state") {
            self.in_last_state = key == "last state";
        }
        let last = self.in_last_state;
        let c = self.current_container();
        let sub = match key {
            "image" => {
                c.image = Some(value.to_string());
                // describe prints Command and Args right after Image when
                // they are set: the container's spec is read.
                c.spec_from = c.spec_from.max(Some(SpecFrom::Describe));
                Sub::None
            }
            "command" => {
                c.command
                    .extend((!value.is_empty()).then(|| value.to_string()));
                Sub::Command
            }
            "args" => {
                c.args
                    .extend((!value.is_empty()).then(|| value.to_string()));
                Sub::Args
            }
            "port" | "ports" => {
                c.ports.extend(
                    value
                        .split(',')
                        .filter_map(|p| p.trim().split('/').next()?.parse::<u16>().ok()),
                );
                Sub::None
            }
            "state" | "last state" => {
                open_state(c, last, line);
                Sub::None
            }
            "reason" | "exit code" | "signal" | "message" | "started" | "finished" => {
                state_field(c, last, line);
                Sub::None
            }
            "ready" => {
                c.ready = Some(value.eq_ignore_ascii_case("true"));
                Sub::None
            }
            "restart count" => {
                if let Ok(n) = value.parse() {
                    let path = format!("status.containerStatuses[{}].restartCount", c.name);
                    c.restart_count =
                        Some(Field::new(n, line.cite_field(SourceKind::Status, path)));
                }
                Sub::None
            }
            "limits" => Sub::Limits,
            "requests" => Sub::Requests,
            "environment" if value.is_empty() => Sub::Env,
            "environment variables from" => Sub::EnvFrom,
            "mounts" => Sub::Mounts,
            "restart policy" => {
                if value.eq_ignore_ascii_case("always") && c.kind == ContainerKind::Init {
                    c.kind = ContainerKind::Sidecar;
                }
                Sub::None
            }
            "liveness" | "readiness" | "startup" => {
                probe(c, line);
                Sub::Probe
            }
            _ => Sub::None,
        };
        self.sub = sub;
    }

    fn finish(self) -> Described {
        let Parser {
            doc,
            mut out,
            event_lines,
            sources,
            ..
        } = self;
        let pod = &mut out.pod;
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
}

/// `status.containerStatuses[NAME].state` or `.lastState`, then `tail`.
fn status_path(c: &Container, last: bool, tail: &str) -> String {
    format!(
        "status.containerStatuses[{}].{}{tail}",
        if c.name.is_empty() { "?" } else { &c.name },
        if last { "lastState" } else { "state" },
    )
}

/// An `Environment:` entry: `NAME: value` or `NAME: <set to the key 'K' of
/// secret 'S'>`.
fn env_var(name: &str, line: &Line) -> EnvVar {
    let mut var = EnvVar {
        name: name.to_string(),
        value: None,
        from: None,
        cite: line.cite(SourceKind::Spec),
    };
    if let Some(r) = ENV_REF.captures(line.value) {
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
    } else if !line.value.is_empty() {
        var.value = Some(line.value.to_string());
    }
    var
}

/// `State:` / `Last State:` `Waiting|Running|Terminated`: opens that block.
fn open_state(c: &mut Container, last: bool, line: &Line) {
    let word = line.value.split_whitespace().next().unwrap_or("");
    let kind = match word.to_ascii_lowercase().as_str() {
        "waiting" => StateKind::Waiting,
        "running" => StateKind::Running,
        "terminated" => StateKind::Terminated,
        _ => return,
    };
    let cite = line.cite_field(SourceKind::Status, status_path(c, last, ""));
    let st = ContainerState::new(kind, cite);
    if last {
        c.last_state = Some(st);
    } else {
        c.state = Some(st);
    }
}

/// Reason, Exit Code, Signal, Message, Started, Finished of the state block
/// open (a terminated one when the paste starts inside it).
fn state_field(c: &mut Container, last: bool, line: &Line) {
    let block = if last { &c.last_state } else { &c.state };
    let kind_path = match block.as_ref().map(|s| s.kind) {
        Some(StateKind::Waiting) => ".waiting",
        Some(StateKind::Running) => ".running",
        _ => ".terminated",
    };
    let key = line.key.as_str();
    let field = match key {
        "reason" => ".reason",
        "exit code" => ".exitCode",
        "message" => ".message",
        "signal" => ".signal",
        "started" => ".startedAt",
        _ => ".finishedAt",
    };
    let fc = line.cite_field(
        SourceKind::Status,
        status_path(c, last, &format!("{kind_path}{field}")),
    );
    let target = if last {
        &mut c.last_state
    } else {
        &mut c.state
    };
    let st = target.get_or_insert_with(|| {
        ContainerState::new(
            StateKind::Terminated,
            Cite::new(SourceKind::Status, "?", line.trimmed.to_string()),
        )
    });
    let value = line.value;
    match key {
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

/// `Liveness:` / `Readiness:` / `Startup:` `HANDLER delay=…s timeout=…s …`.
fn probe(c: &mut Container, line: &Line) {
    let kind = match line.key.as_str() {
        "liveness" => ProbeKind::Liveness,
        "readiness" => ProbeKind::Readiness,
        _ => ProbeKind::Startup,
    };
    let path = format!("spec.containers[{}].{}", c.name, kind.field());
    let mut p = Probe::new(kind, line.cite_field(SourceKind::Spec, path));
    p.handler = line
        .value
        .split(" delay=")
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    apply_probe_params(&mut p, line.value);
    c.probes.retain(|x| x.kind != kind);
    c.probes.push(p);
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
    fn evicted_pod_a_native_sidecar_and_sub_lists_that_end() {
        let text = "Name:         web-1\nNamespace:    shop\nStatus:       Failed\n\
Reason:       Evicted\nMessage:      The node was low on resource: ephemeral-storage.\n\
Init Containers:\n  proxy:\n    Image:          envoy\n    Ports:          8080/TCP, 9901/TCP\n\
    Restart Policy: Always\n    State:          Running\n\
Containers:\n  app:\n    Image:          shop:1\n    State:          Waiting\n\
      Reason:       CrashLoopBackOff\n    Limits:\n      cpu:     500m\n\
    Requests:\n      memory:  64Mi\n    Environment:    <none>\n\
QoS Class:        Burstable\nEvents:           <none>\n";
        let p = parse(&doc(text)).pod;
        let reason = p.reason.as_ref().unwrap();
        assert_eq!(reason.value, "Evicted");
        assert_eq!(reason.cite.reference, "status.reason");
        assert_eq!(reason.cite.location.as_deref(), Some("describe-pod.txt:4"));
        let proxy = p.container("proxy").unwrap();
        assert_eq!(proxy.kind, ContainerKind::Sidecar);
        assert_eq!(proxy.ports, vec![8080, 9901]);
        let app = p.container("app").unwrap();
        assert_eq!(app.kind, ContainerKind::Main);
        let waiting = app.state.as_ref().unwrap().reason.as_ref().unwrap();
        assert_eq!(waiting.value, "CrashLoopBackOff");
        assert_eq!(
            waiting.cite.reference,
            "status.containerStatuses[app].state.waiting.reason"
        );
        assert_eq!(app.limits.len(), 1);
        assert_eq!(app.limits["cpu"].value, "500m");
        assert_eq!(app.requests["memory"].value, "64Mi");
        assert!(app.env.is_empty());
        assert!(app.last_state.is_none());
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
