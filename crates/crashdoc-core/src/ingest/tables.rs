//! Tables as kubectl prints them: events, `get pods`, `get pvc`, and the
//! `Data` block of `describe secret` (key names and sizes only).

use super::Doc;
use crate::model::*;
use regex::Regex;
use std::sync::LazyLock;

static EVENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:.*?\s)?(Normal|Warning)\s+([A-Z][A-Za-z]+)(?:\s+(.*))?$")
        .expect("static regex")
});
static AGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:<unknown>|<invalid>|\d+[smhdy][\dsmhdy]*)?\s*(?:\(x(\d+) over [^)]+\))?\s*")
        .expect("static regex")
});
static FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:kubelet(?:,\s*\S+)?|default-scheduler|[a-z0-9-]+-(?:controller|scheduler|manager)|[a-z0-9-]+/[a-z0-9.-]+|taint-controller|node-controller|attachdetach-controller|persistentvolume-controller|replicaset-controller|deployment-controller|statefulset-controller|job-controller|cronjob-controller|endpoint-controller)\s{2,}").expect("static regex")
});
static OBJECT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([a-z][a-z.]*/[a-z0-9][a-z0-9.-]*)\s+").expect("static regex"));

/// Parse event rows from a `kubectl get events` table or the Events block
/// of a describe. Rows cut short keep what they have.
pub fn parse_event_lines(doc: &Doc) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    // The row the previous line belonged to, for a message wrapped over
    // several lines (an indented line that is not a row of its own).
    let mut open = false;
    for (i, raw) in doc.text.lines().enumerate() {
        let line = crate::text::clean_line(raw);
        let t = line.trim();
        let Some(c) = EVENT.captures(t) else {
            let wrapped = open
                && !t.is_empty()
                && raw.starts_with([' ', '\t'])
                && !t.starts_with("----")
                && !t.ends_with(':');
            match out.last_mut() {
                Some(e) if wrapped => {
                    e.message.push(' ');
                    e.message.push_str(t);
                    e.cite.text.push(' ');
                    e.cite.text.push_str(t);
                }
                _ => open = false,
            }
            continue;
        };
        open = true;
        // Header rows ("Type Reason Age From Message") do not match: their
        // type column is the word "Type".
        let kind = c[1].to_string();
        let reason = c[2].to_string();
        let mut rest = c.get(3).map_or("", |m| m.as_str()).trim();
        let mut object = None;
        if let Some(o) = OBJECT.captures(rest) {
            object = Some(o[1].to_string());
            rest = rest[o.get(0).map_or(0, |m| m.end())..].trim_start();
        }
        let mut count = None;
        if let Some(a) = AGE.captures(rest) {
            count = a.get(1).and_then(|m| m.as_str().parse().ok());
            rest = rest[a.get(0).map_or(0, |m| m.end())..].trim_start();
        }
        if let Some(f) = FROM.find(rest) {
            rest = rest[f.end()..].trim_start();
        } else if let Some(stripped) = rest.strip_prefix("kubelet ") {
            rest = stripped.trim_start();
        }
        let number = doc.line_offset + i as u64 + 1;
        out.push(Event {
            kind,
            reason,
            message: rest.to_string(),
            object,
            count,
            cite: Cite::new(
                SourceKind::Event,
                format!("{}:{}", doc.name, number),
                t.to_string(),
            ),
        });
    }
    out
}

/// One row of `kubectl get pods`.
#[derive(Debug, Clone)]
pub struct PodRow {
    pub name: String,
    pub ready: String,
    pub status: String,
    pub restarts: Option<u32>,
    pub cite: Cite,
}

impl PodRow {
    /// Whether the row shows a pod in trouble.
    pub fn unhealthy(&self) -> bool {
        let s = self.status.as_str();
        let healthy = matches!(s, "Running" | "Completed" | "Succeeded") && {
            let mut parts = self.ready.split('/');
            let (a, b) = (parts.next(), parts.next());
            a == b || s != "Running"
        };
        !healthy || (s == "Running" && self.restarts.unwrap_or(0) > 0 && !self.ready_all())
    }

    fn ready_all(&self) -> bool {
        let mut parts = self.ready.split('/');
        parts.next() == parts.next()
    }
}

static POD_ROW: LazyLock<Regex> = LazyLock::new(|| {
    // A name is a DNS label, or one with placeholders a person typed in
    // (`<name>-0`, `web-<hash>`) where the real one was left out.
    Regex::new(r"^(?:pod/)?((?:[a-z0-9]|<[^<>\s]+>)(?:[a-z0-9.-]|<[^<>\s]+>)*)\s+(\d+/\d+)\s+([A-Za-z][\w:.-]*)(?:\s+(\d+))?")
        .expect("static regex")
});

/// Parse pod rows from `kubectl get pods` output (any columns after STATUS,
/// header or not, `pod/` prefixes, other kinds' tables skipped).
pub fn parse_pod_rows(doc: &Doc) -> Vec<PodRow> {
    let mut out = Vec::new();
    for (i, raw) in doc.text.lines().enumerate() {
        let line = crate::text::clean_line(raw);
        let t = line.trim();
        if t.contains(".apps/") || t.starts_with("NAME") {
            continue;
        }
        let t = t.strip_prefix("$ ").unwrap_or(t);
        if let Some(c) = POD_ROW.captures(t) {
            let number = doc.line_offset + i as u64 + 1;
            out.push(PodRow {
                name: c[1].to_string(),
                ready: c[2].to_string(),
                status: c[3].to_string(),
                restarts: c.get(4).and_then(|m| m.as_str().parse().ok()),
                cite: Cite::new(
                    SourceKind::Status,
                    format!("{}:{}", doc.name, number),
                    t.to_string(),
                ),
            });
        }
    }
    out
}

static PVC_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([a-z0-9][a-z0-9.-]*)\s+(Pending|Bound|Lost)\b(?:\s+(\S+))?(?:\s+(\d+(?:\.\d+)?[KMGTPE]i?))?").expect("static regex")
});
static KEYVAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(Status|Capacity|StorageClass|Name):\s+(\S+)").expect("static regex")
});
static BARE_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9.-]*$").expect("static regex"));

/// Parse PVCs from `kubectl get pvc` (or a `describe pvc` paste).
pub fn parse_pvcs(doc: &Doc) -> Vec<Pvc> {
    let mut out: Vec<Pvc> = Vec::new();
    for (i, raw) in doc.text.lines().enumerate() {
        let t = raw.trim();
        let number = doc.line_offset + i as u64 + 1;
        let cite = Cite::new(
            SourceKind::Object,
            format!("{}:{}", doc.name, number),
            t.to_string(),
        );
        if let Some(c) = PVC_ROW.captures(t) {
            out.push(Pvc {
                name: c[1].to_string(),
                phase: Some(c[2].to_string()),
                capacity: c.get(4).map(|m| m.as_str().to_string()),
                storage_class: None,
                cite,
            });
        } else if let Some(c) = KEYVAL.captures(t) {
            if &c[1] == "Name" {
                out.push(Pvc {
                    name: c[2].to_string(),
                    phase: None,
                    capacity: None,
                    storage_class: None,
                    cite,
                });
            } else if let Some(p) = out.last_mut() {
                match &c[1] {
                    "Status" => p.phase = Some(c[2].to_string()),
                    "Capacity" => p.capacity = Some(c[2].to_string()),
                    _ => p.storage_class = Some(c[2].to_string()),
                }
            }
        } else if BARE_NAME.is_match(t) && t.contains('-') {
            out.push(Pvc {
                name: t.to_string(),
                phase: None,
                capacity: None,
                storage_class: None,
                cite,
            });
        }
    }
    out
}

static SECRET_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([\w.-]+):\s+(\d+) bytes\s*$").expect("static regex"));
static DESCRIBE_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Name:\s+(\S+)").expect("static regex"));

/// Key names and sizes from `kubectl describe secret|configmap` output. The
/// values themselves are never read (describe does not print them).
pub fn parse_describe_data(doc: &Doc) -> Vec<ConfigObject> {
    let mut out: Vec<ConfigObject> = Vec::new();
    let mut name = String::new();
    let mut kind = RefKind::Secret;
    for (i, raw) in doc.text.lines().enumerate() {
        let t = raw.trim();
        if let Some(c) = DESCRIBE_NAME.captures(t) {
            name = c[1].to_string();
            continue;
        }
        if t.starts_with("$ ") || t.starts_with("kubectl") {
            kind = if t.contains("configmap") || t.contains(" cm ") {
                RefKind::ConfigMap
            } else {
                RefKind::Secret
            };
        }
        if let Some(c) = SECRET_KEY.captures(t) {
            let number = doc.line_offset + i as u64 + 1;
            let cite = Cite::new(
                SourceKind::Object,
                format!("{}:{}", doc.name, number),
                t.to_string(),
            );
            let size = c[2].parse().ok();
            match out.iter_mut().find(|o| o.name == name) {
                Some(o) => o.keys.push((c[1].to_string(), size)),
                None => out.push(ConfigObject {
                    kind,
                    name: name.clone(),
                    keys: vec![(c[1].to_string(), size)],
                    cite,
                }),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        Doc {
            name: "events.txt".into(),
            text: text.into(),
            line_offset: 0,
        }
    }

    #[test]
    fn event_shapes() {
        let ev = parse_event_lines(&doc(
            "  Type     Reason     Age                  From               Message
  ----     ------     ----                 ----               -------
  Warning  Failed     34m (x12 over 36m)   kubelet, minikube  Error: configmap \"autotune-config-key\" not found
19m   Warning   Failed   pod/external-secrets-765bc54796-26fgp   Error: container has runAsNonRoot and image has non-numeric user (node)
  Warning  Failed       kubelet  \"vllm\": executable file not found in $PATH: unknown
  Warning  Unhealthy
Warning   Unhealthy   pod/stirling-pdf    Liveness probe failed: connect: connection refused
  Normal   Killing                13s                kubelet, kubernetes-node1  Killing container with id docker://es-data:Container failed liveness probe.. Container will be killed and recreated.",
        ));
        assert_eq!(ev.len(), 6);
        assert_eq!(
            ev[0].message,
            "Error: configmap \"autotune-config-key\" not found"
        );
        assert_eq!(ev[0].count, Some(12));
        assert_eq!(ev[0].cite.reference, "events.txt:3");
        assert_eq!(
            ev[1].object.as_deref(),
            Some("pod/external-secrets-765bc54796-26fgp")
        );
        assert!(
            ev[1]
                .message
                .starts_with("Error: container has runAsNonRoot")
        );
        assert_eq!(
            ev[2].message,
            "\"vllm\": executable file not found in $PATH: unknown"
        );
        assert_eq!(ev[3].reason, "Unhealthy");
        assert_eq!(ev[3].message, "");
        assert_eq!(
            ev[4].message,
            "Liveness probe failed: connect: connection refused"
        );
        assert!(ev[5].message.starts_with("Killing container with id"));
    }

    #[test]
    fn pod_rows() {
        let rows = parse_pod_rows(&doc(
            "NAME                    READY     STATUS             RESTARTS   AGE
pod/demo                    0/1       CrashLoopBackOff   24         1h
deployment.apps/x   0/1     1            0           20m
minio-667cf4c867-x6b6t   0/1     Init:CrashLoopBackOff   4 (3m53s ago)   15m
ok-1   1/1   Running   0   1d",
        ));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "demo");
        assert_eq!(rows[0].restarts, Some(24));
        assert_eq!(rows[1].status, "Init:CrashLoopBackOff");
        assert!(rows[1].unhealthy());
        assert!(!rows[2].unhealthy());
    }

    #[test]
    fn secret_sizes() {
        let objs = parse_describe_data(&doc(
            "$ kubectl describe secret aws\nName:         aws\nData\n====\nAWS_ACCESS_KEY_ID:      0 bytes\nREGION:  9 bytes\n",
        ));
        assert_eq!(objs.len(), 1);
        assert_eq!(
            objs[0].keys,
            vec![
                ("AWS_ACCESS_KEY_ID".to_string(), Some(0)),
                ("REGION".to_string(), Some(9))
            ]
        );
    }
}
