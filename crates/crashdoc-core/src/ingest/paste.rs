//! Splits a pasted blob (several kubectl outputs, as people paste them into
//! tickets) into sections, by the `$ kubectl ...` lines between them or,
//! without those, by the shape of the text.

use super::{Doc, FileKind};
use crate::scan::LogKind;
use regex::Regex;
use std::sync::LazyLock;

/// One section of a paste, with the kind it was recognised as.
#[derive(Debug, Clone)]
pub struct Section {
    pub kind: FileKind,
    pub doc: Doc,
}

static PROMPT_CMD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\S*[@:]\S*[$#]\s*|[$#>]\s*|PS [^>]*>\s*)?((?:kubectl|oc|kc|k|sudo|df|ls|cat|lsof|netstat|nvidia-smi|helm)\b.*)$").expect("static regex")
});
static BARE_PROMPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:\S+@\S*[:~][^$#]*[$#]|\$)\s+\S").expect("static regex"));
static DESCRIBE_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Name:\s+\S+\s*$").expect("static regex"));
/// A partial `describe pod` paste starts at one of its blocks.
static DESCRIBE_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:Init Containers|Containers|Controlled By|Last State|QoS Class|Node-Selectors|Tolerations|Mounts):(?:\s|$)").expect("static regex")
});
static PODS_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^NAME\s+READY\s+STATUS").expect("static regex"));
static EVENTS_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:LAST SEEN\s+TYPE|TYPE\s+REASON|Type\s+Reason\s+Age|Events:)")
        .expect("static regex")
});
static EVENT_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\s)(?:Normal|Warning)\s+[A-Z][A-Za-z]+").expect("static regex")
});
/// The header `kubectl rollout history KIND/NAME --revision=N` prints
/// (k8s.io/kubectl v0.36.3 pkg/cmd/rollout/rollout_history.go).
static HISTORY_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9.-]+/[a-z0-9.-]+ with revision #\d+$").expect("static regex")
});
static PVC_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^NAME\s+STATUS\s+VOLUME").expect("static regex"));

/// What a command line says the following output is.
fn kind_of_command(cmd: &str) -> FileKind {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let output_obj = words.iter().any(|w| {
        matches!(
            *w,
            "-oyaml"
                | "-ojson"
                | "yaml"
                | "json"
                | "-o=yaml"
                | "-o=json"
                | "--output=yaml"
                | "--output=json"
        )
    }) && !cmd.contains("| yq")
        && !cmd.contains("| jq");
    let tool = words.first().copied().unwrap_or("");
    if !matches!(tool, "kubectl" | "oc" | "kc" | "k") {
        return FileKind::Other;
    }
    if has("logs") || has("log") {
        let previous = has("--previous") || has("-p") || has("--previous=true");
        let container = words
            .iter()
            .position(|w| *w == "-c" || *w == "--container")
            .and_then(|i| words.get(i + 1))
            .map(|s| s.to_string());
        return FileKind::Logs {
            kind: if previous {
                LogKind::Previous
            } else {
                LogKind::Current
            },
            container,
        };
    }
    if has("rollout") && has("history") {
        return FileKind::Rollout(super::rollout::RolloutFile::History);
    }
    if has("describe") {
        if words
            .iter()
            .any(|w| w.starts_with("po") && !w.starts_with("pvc"))
        {
            return FileKind::Describe;
        }
        if words
            .iter()
            .any(|w| w.starts_with("secret") || w.starts_with("configmap") || *w == "cm")
        {
            return FileKind::DescribeData;
        }
        if words
            .iter()
            .any(|w| w.starts_with("pvc") || w.starts_with("persistentvolumeclaim"))
        {
            return FileKind::Pvc;
        }
        if words.iter().any(|w| w.starts_with("node") || *w == "no") {
            return FileKind::Node;
        }
        return FileKind::Other;
    }
    if has("get") {
        if output_obj {
            return FileKind::Objects;
        }
        if words.iter().any(|w| w.starts_with("event") || *w == "ev") {
            return FileKind::Events;
        }
        if words
            .iter()
            .any(|w| w.starts_with("pvc") || w.starts_with("persistentvolumeclaim"))
        {
            return FileKind::Pvc;
        }
        if words.iter().any(|w| w.starts_with("po") || *w == "all") {
            return FileKind::GetPods;
        }
    }
    if has("top") {
        return FileKind::Top;
    }
    FileKind::Other
}

/// Recognise a section with no command line by its first lines.
fn kind_of_shape(line: &str) -> Option<FileKind> {
    let t = line.trim();
    if HISTORY_HEADER.is_match(t) {
        return Some(FileKind::Rollout(super::rollout::RolloutFile::History));
    }
    if DESCRIBE_START.is_match(t) || DESCRIBE_PART.is_match(t) {
        return Some(FileKind::Describe);
    }
    if PODS_HEADER.is_match(t) {
        return Some(FileKind::GetPods);
    }
    if PVC_HEADER.is_match(t) {
        return Some(FileKind::Pvc);
    }
    if EVENTS_HEADER.is_match(t) || EVENT_ROW.is_match(t) && !t.contains("Traceback") {
        return Some(FileKind::Events);
    }
    if t.starts_with("apiVersion:")
        || t.starts_with("kind: ")
        || t.starts_with("{") && t.len() < 3
        || t.starts_with("\"apiVersion\"")
    {
        return Some(FileKind::Objects);
    }
    None
}

/// Split text into sections. `default` is the kind of text with no
/// recognisable shape (a log for a paste, `Other` for `other.txt`).
pub fn split(name: &str, text: &str, default: FileKind) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut cur_kind: Option<FileKind> = None;
    let mut cur_start = 0usize;
    let mut cur_lines: Vec<&str> = Vec::new();
    let mut from_command = false;
    let mut in_describe_events = false;

    let flush =
        |out: &mut Vec<Section>, kind: Option<FileKind>, start: usize, lines: &mut Vec<&str>| {
            if lines.iter().any(|l| !l.trim().is_empty()) {
                let kind = kind.unwrap_or_else(|| default.clone());
                out.push(Section {
                    kind,
                    doc: Doc {
                        name: name.to_string(),
                        text: lines.join("\n"),
                        line_offset: start as u64,
                    },
                });
            }
            lines.clear();
        };

    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        // An explicit command starts a section of the kind it names.
        if let Some(c) = PROMPT_CMD.captures(line)
            && (line.trim_start().starts_with(['$', '#'])
                || line.contains("$ ")
                || line.contains("# ")
                || t.starts_with("kubectl ")
                || t.starts_with("oc "))
        {
            flush(&mut out, cur_kind.take(), cur_start, &mut cur_lines);
            cur_kind = Some(kind_of_command(&c[1]));
            from_command = true;
            cur_start = i;
            cur_lines.push(line);
            continue;
        }
        if BARE_PROMPT.is_match(line) {
            flush(&mut out, cur_kind.take(), cur_start, &mut cur_lines);
            cur_kind = Some(FileKind::Other);
            from_command = true;
            cur_start = i;
            cur_lines.push(line);
            continue;
        }
        // A new shape starts a section, unless it belongs to the current one.
        if let Some(k) = kind_of_shape(line) {
            let same = match (&cur_kind, &k) {
                (Some(FileKind::Describe), FileKind::Events) => true,
                (Some(a), b) => std::mem::discriminant(a) == std::mem::discriminant(b),
                (None, _) => false,
            };
            let in_object =
                matches!(cur_kind, Some(FileKind::Objects)) && !DESCRIBE_START.is_match(t);
            // A rollout history's template is describe-like; only a line at
            // the margin (a describe's `Name:`) or another header ends it.
            let in_history = matches!(cur_kind, Some(FileKind::Rollout(_)))
                && (line.starts_with([' ', '\t']) || t == "Pod Template:")
                && !matches!(k, FileKind::Rollout(_));
            let in_object = in_object || in_history;
            if !(same || in_object || from_command && cur_lines.len() <= 1) {
                flush(&mut out, cur_kind.take(), cur_start, &mut cur_lines);
                cur_start = i;
                from_command = false;
                cur_kind = Some(k);
            } else if cur_kind.is_none() {
                cur_kind = Some(k);
            }
        } else if in_describe_events
            && !t.is_empty()
            && !t.starts_with("----")
            && !t.starts_with("<none>")
        {
            // The Events block ends a describe; what follows is something else.
            flush(&mut out, cur_kind.take(), cur_start, &mut cur_lines);
            cur_start = i;
            in_describe_events = false;
            from_command = false;
        } else if matches!(cur_kind, Some(FileKind::Events) | Some(FileKind::GetPods))
            && !t.is_empty()
            && !from_command
        {
            // A table ends at the first line that is not a row of it.
            let is_row = match cur_kind {
                Some(FileKind::Events) => {
                    EVENT_ROW.is_match(t)
                        || t.starts_with("----")
                        || t.starts_with("Type")
                        // A message wrapped onto an indented line.
                        || line.starts_with([' ', '\t']) && !t.ends_with(':')
                }
                _ => t.split_whitespace().nth(1).is_some_and(|w| w.contains('/')),
            };
            if !is_row {
                flush(&mut out, cur_kind.take(), cur_start, &mut cur_lines);
                cur_start = i;
            }
        }
        if cur_lines.is_empty() {
            cur_start = i;
        }
        if matches!(cur_kind, Some(FileKind::Describe)) && t.starts_with("Events:") {
            in_describe_events = true;
        } else if !matches!(cur_kind, Some(FileKind::Describe)) {
            in_describe_events = false;
        }
        cur_lines.push(line);
    }
    flush(&mut out, cur_kind, cur_start, &mut cur_lines);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paste split with current logs as the default kind.
    fn split_paste(text: &str) -> Vec<Section> {
        split(
            "paste",
            text,
            FileKind::Logs {
                kind: LogKind::Current,
                container: None,
            },
        )
    }

    #[test]
    fn commands_split_sections() {
        let text = "$ kubectl get pods -n ml\nNAME READY STATUS RESTARTS AGE\nvllm-1 0/1 CrashLoopBackOff 3 5m\n\n$ kubectl logs vllm-1 -n ml --previous -c server\nINFO loading\nRuntimeError: CUDA error: out of memory\n$ kubectl describe pod vllm-1\nName: vllm-1\n";
        let s = split_paste(text);
        assert_eq!(s.len(), 3);
        assert!(matches!(s[0].kind, FileKind::GetPods));
        match &s[1].kind {
            FileKind::Logs { kind, container } => {
                assert_eq!(*kind, LogKind::Previous);
                assert_eq!(container.as_deref(), Some("server"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s[1].doc.line_offset, 4);
        assert!(matches!(s[2].kind, FileKind::Describe));
    }

    #[test]
    fn shapes_split_sections_without_commands() {
        let text = "Name:         web-1\nNamespace:    default\nContainers:\n  web:\n    State: Waiting\nEvents:\n  Type  Reason  Age  From  Message\n  Warning  BackOff  1m  kubelet  Back-off restarting failed container\nTraceback (most recent call last):\n  File \"app.py\", line 1\nKeyError: 'DB_URL'\n";
        let s = split_paste(text);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(matches!(s[0].kind, FileKind::Describe));
        assert!(matches!(s[1].kind, FileKind::Logs { .. }));
        assert!(s[1].doc.text.starts_with("Traceback"));
    }

    #[test]
    fn rollout_history_is_one_section_until_the_next_command() {
        use crate::ingest::rollout::RolloutFile;
        let text = "$ kubectl rollout history deploy/web --revision=2\ndeployment.apps/web with revision #2\nPod Template:\n  Labels:\tapp=web\n  Containers:\n   app:\n    Image:\tweb:1.4.0\n  Volumes:\n   config:\n    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\tweb-config\n$ kubectl describe pod web-1\nName:         web-1\nContainers:\n  app:\n    Image: web:1.5.0\n";
        let s = split_paste(text);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].kind, FileKind::Rollout(RolloutFile::History));
        assert!(s[0].doc.text.contains("Name:\tweb-config"));
        assert!(matches!(s[1].kind, FileKind::Describe));
        // Without the command line, the header starts the section.
        let bare = &text[text.find("deployment.apps").unwrap()..];
        let s = split("paste", bare, FileKind::Other);
        assert_eq!(s[0].kind, FileKind::Rollout(RolloutFile::History));
        assert!(s[0].doc.text.contains("Image:\tweb:1.4.0"));
    }
}
