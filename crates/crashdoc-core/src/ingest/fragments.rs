//! Container states read from any text: a fragment of a pod's, a
//! workload's or a custom resource's YAML or JSON (whole, truncated, or with
//! its indentation lost), `describe`'s `State:` blocks pasted alone, and the
//! rows of `kubectl get pods --watch`, whose STATUS column is the pod's
//! status history.
//!
//! The layout parsers read the same shapes when the input is whole; this
//! reader goes by keys alone (`exitCode`, `reason`, `message`, `terminated`,
//! `waiting`, `lastFailureInfo`, `Exit Code:`), so that a state nested
//! anywhere, or mangled by a chat tool, still counts (shared/spec/inputs.md,
//! "Evidence is read wherever it stands"). What it finds is used only when
//! the structured parsers found no state for the pod.

use super::Doc;
use crate::model::*;
use regex::Regex;
use std::sync::LazyLock;

/// One state found in text, with where each of its fields stood.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    /// The container the state belongs to, when a `name:` came with it.
    pub container: Option<String>,
    pub state: ContainerState,
    /// `lastState` (the run that ended) rather than `state` (now).
    pub last: bool,
}

static KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?ix)^\s*(?:-\s*)?"?(exitCode|exit\ code|reason|message|signal|name|terminated|waiting|running|lastState|last\ state|state|lastFailureInfo)"?\s*[:=]\s*"?([^"\#]*?)"?\s*,?\s*(?:\s\#.*)?$"#,
    )
    .expect("static regex")
});

/// Reasons that only a waiting container has.
const WAITING: &[&str] = &[
    "CrashLoopBackOff",
    "ContainerCreating",
    "PodInitializing",
    "CreateContainerConfigError",
    "CreateContainerError",
    "ImagePullBackOff",
    "ErrImagePull",
    "ErrImageNeverPull",
    "InvalidImageName",
    "RunContainerError",
    "PreCreateHookError",
    "PreStartHookError",
    "PostStartHookError",
];

/// States found by key in a document: by walking it when it is JSON (a
/// compact object holds many keys on one line), else line by line.
pub fn states(doc: &Doc) -> Vec<Fragment> {
    let t = doc.text.trim_start();
    if t.starts_with(['{', '['])
        && let (Some(v), _) = super::objects::parse_tree(t)
    {
        let mut out = Vec::new();
        walk(&v, doc, &mut String::new(), None, &mut out, 0);
        return out;
    }
    by_lines(doc)
}

/// Every `terminated` / `waiting` / `lastFailureInfo` object nested in a
/// JSON tree, with the container name of the nearest enclosing object.
fn walk(
    v: &serde_json::Value,
    doc: &Doc,
    path: &mut String,
    name: Option<&str>,
    out: &mut Vec<Fragment>,
    depth: usize,
) {
    use serde_json::Value;
    if depth > 64 {
        return;
    }
    match v {
        Value::Object(m) => {
            let name = m.get("name").and_then(Value::as_str).or(name);
            for (k, child) in m {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                let last = k == "lastState" || k == "lastFailureInfo";
                let st = match k.as_str() {
                    "terminated" => Some(StateKind::Terminated),
                    "waiting" => Some(StateKind::Waiting),
                    "lastFailureInfo" => Some(StateKind::Terminated),
                    _ => None,
                };
                if let (Some(kind), Some(obj)) = (st, child.as_object()) {
                    let cite = |field: &str, text: String| {
                        Cite::new(
                            SourceKind::Status,
                            format!("{}: {}.{field}", doc.name, path.trim_start_matches('.')),
                            text,
                        )
                    };
                    let mut state = ContainerState::new(kind, cite("", k.clone()));
                    if let Some(r) = obj
                        .get("reason")
                        .and_then(Value::as_str)
                        .filter(|r| is_reason(r))
                    {
                        state.reason = Some(Field::new(
                            r.to_string(),
                            cite("reason", format!("reason: {r}")),
                        ));
                    }
                    if let Some(c) = obj.get("exitCode").and_then(Value::as_i64) {
                        state.exit_code = Some(Field::new(
                            c as i32,
                            cite("exitCode", format!("exitCode: {c}")),
                        ));
                    }
                    if let Some(msg) = obj.get("message").and_then(Value::as_str) {
                        state.message = Some(Field::new(
                            msg.to_string(),
                            cite("message", msg.to_string()),
                        ));
                    }
                    if state.reason.is_some() || state.exit_code.is_some() {
                        let parent_last = path.contains(".lastState.");
                        out.push(Fragment {
                            container: name.map(str::to_string),
                            state,
                            last: last || parent_last,
                        });
                    }
                }
                walk(child, doc, path, name, out, depth + 1);
                path.truncate(len);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(child, doc, path, name, out, depth + 1);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// States found by key, line by line.
fn by_lines(doc: &Doc) -> Vec<Fragment> {
    let mut out: Vec<Fragment> = Vec::new();
    // What the keys seen so far say about the state being read.
    let mut last = false;
    let mut kind: Option<StateKind> = None;
    let mut container: Option<String> = None;
    let mut cur: Option<(ContainerState, usize)> = None;
    let cite_at = |i: usize, text: &str| {
        Cite::new(
            SourceKind::Status,
            format!("{}:{}", doc.name, doc.line_offset + i as u64 + 1),
            text.trim().to_string(),
        )
    };
    let flush = |out: &mut Vec<Fragment>,
                 cur: &mut Option<(ContainerState, usize)>,
                 container: &Option<String>,
                 last: bool| {
        if let Some((st, _)) = cur.take()
            && (st.reason.is_some() || st.exit_code.is_some())
        {
            out.push(Fragment {
                container: container.clone(),
                state: st,
                last,
            });
        }
    };
    for (i, line) in doc.text.lines().enumerate() {
        let Some(c) = KEY.captures(line) else {
            continue;
        };
        let key = c[1].to_ascii_lowercase();
        let value = c[2].trim();
        // A state's fields stand within a few lines of each other.
        if cur.as_ref().is_some_and(|(_, at)| i > at + 8) {
            flush(&mut out, &mut cur, &container, last);
        }
        match key.as_str() {
            "laststate" | "last state" | "lastfailureinfo" => {
                flush(&mut out, &mut cur, &container, last);
                last = true;
                kind = state_word(value);
            }
            "state" => {
                flush(&mut out, &mut cur, &container, last);
                last = false;
                kind = state_word(value);
            }
            "terminated" | "waiting" | "running" => {
                flush(&mut out, &mut cur, &container, last);
                kind = state_word(&key);
            }
            "name" if !value.is_empty() && !value.contains(' ') => {
                if cur.is_some() {
                    flush(&mut out, &mut cur, &container, last);
                }
                container = Some(value.to_string());
            }
            "exitcode" | "exit code" => {
                let Ok(code) = value.parse::<i32>() else {
                    continue;
                };
                let st = cur.get_or_insert_with(|| {
                    (
                        ContainerState::new(
                            kind.unwrap_or(StateKind::Terminated),
                            cite_at(i, line),
                        ),
                        i,
                    )
                });
                if st.0.exit_code.is_some() {
                    continue;
                }
                st.0.kind = StateKind::Terminated;
                st.0.exit_code = Some(Field::new(code, cite_at(i, line)));
                st.1 = i;
            }
            "reason" if is_reason(value) => {
                let waiting = WAITING.contains(&value);
                if cur.as_ref().is_some_and(|(s, _)| s.reason.is_some()) {
                    flush(&mut out, &mut cur, &container, last);
                }
                let st = cur.get_or_insert_with(|| {
                    let k = if waiting {
                        StateKind::Waiting
                    } else {
                        kind.unwrap_or(StateKind::Terminated)
                    };
                    (ContainerState::new(k, cite_at(i, line)), i)
                });
                if waiting {
                    st.0.kind = StateKind::Waiting;
                }
                st.0.reason = Some(Field::new(value.to_string(), cite_at(i, line)));
                st.1 = i;
            }
            "message" if !value.is_empty() => {
                if let Some(st) = cur.as_mut() {
                    st.0.message = Some(Field::new(value.to_string(), cite_at(i, line)));
                    st.1 = i;
                }
            }
            "signal" => {
                if let (Some(st), Ok(s)) = (cur.as_mut(), value.parse::<i32>()) {
                    st.0.signal = Some(s);
                }
            }
            _ => {}
        }
    }
    flush(&mut out, &mut cur, &container, last);
    out
}

fn state_word(v: &str) -> Option<StateKind> {
    let v = v.to_ascii_lowercase();
    if v.starts_with("terminated") {
        Some(StateKind::Terminated)
    } else if v.starts_with("waiting") {
        Some(StateKind::Waiting)
    } else if v.starts_with("running") {
        Some(StateKind::Running)
    } else {
        None
    }
}

/// A container reason is one CamelCase word (`OOMKilled`, `Error`,
/// `CrashLoopBackOff`).
fn is_reason(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 40
        && v.chars().all(|c| c.is_ascii_alphanumeric())
        && v.starts_with(|c: char| c.is_ascii_uppercase())
}

/// Statuses of `kubectl get pods` that record how a run ended: a
/// container's `state.terminated.reason` as the printer shows it.
const ENDED: &[&str] = &[
    "OOMKilled",
    "Error",
    "Completed",
    "ContainerCannotRun",
    "StartError",
    "DeadlineExceeded",
    "ContainerStatusUnknown",
    "Evicted",
];

/// A run's end as a STATUS of `kubectl get pods` shows it, and whether it
/// is an init container's. kubectl's printer (kubernetes
/// pkg/printers/internalversion/printers.go, printPod) writes a failed init
/// container's terminated state as `Init:REASON`, or `Init:Signal:N` /
/// `Init:ExitCode:N` when the runtime gave no reason, and a container's
/// as `REASON`, `Signal:N` or `ExitCode:N`.
pub fn listed_end(status: &str, cite: &Cite) -> Option<(bool, ContainerState)> {
    let (init, v) = match status.strip_prefix("Init:") {
        Some(v) => (true, v),
        None => (false, status),
    };
    let mut st = ContainerState::new(StateKind::Terminated, cite.clone());
    if let Some(n) = v.strip_prefix("ExitCode:") {
        st.exit_code = Some(Field::new(n.parse().ok()?, cite.clone()));
    } else if let Some(n) = v.strip_prefix("Signal:") {
        let signal: i32 = n.parse().ok()?;
        st.signal = Some(signal);
        // The runtime's exit code for a signal death (128 + N).
        st.exit_code = Some(Field::new(128 + signal, cite.clone()));
    } else if ENDED.contains(&v) {
        st.reason = Some(Field::new(v.to_string(), cite.clone()));
    } else {
        return None;
    }
    Some((init, st))
}

/// The last status of the rows of a pod (`get pods --watch` prints one row
/// per change) that records how a run ended, as a terminated state, and
/// whether it is an init container's.
pub fn from_status_history(rows: &[&super::tables::PodRow]) -> Option<(bool, ContainerState)> {
    rows.iter().rev().find_map(|r| {
        let cite = Cite {
            reference: format!("{} STATUS", r.cite.reference),
            ..r.cite.clone()
        };
        listed_end(&r.status, &cite)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        Doc {
            name: "other.txt".into(),
            text: text.into(),
            line_offset: 0,
        }
    }

    #[test]
    fn yaml_fragment_without_its_top() {
        let f = states(&doc(
            "status:\n  containerStatuses:\n  - name: zookeeper\n    lastState:\n      terminated:\n        exitCode: 143\n        reason: OOMKilled\n",
        ));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].container.as_deref(), Some("zookeeper"));
        assert!(f[0].last);
        assert_eq!(f[0].state.exit_code.as_ref().unwrap().value, 143);
        assert_eq!(f[0].state.reason.as_ref().unwrap().value, "OOMKilled");
        assert_eq!(
            f[0].state.reason.as_ref().unwrap().cite.reference,
            "other.txt:7"
        );
    }

    #[test]
    fn flattened_and_json() {
        let f = states(&doc(
            "state:\nwaiting:\nreason: CrashLoopBackOff\nlastState:\nterminated:\nexitCode: 1\nreason: Error\nmessage: boom\n",
        ));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].state.kind, StateKind::Waiting);
        assert!(!f[0].last);
        assert!(f[1].last);
        assert_eq!(f[1].state.message.as_ref().unwrap().value, "boom");
        // Compact JSON: the tree is walked.
        let j = states(&doc(
            r#"{"status": {"modelStatus": {"lastFailureInfo": {"exitCode": 137, "reason": "OOMKilled"}}}}"#,
        ));
        assert_eq!(j.len(), 1, "{j:?}");
        assert!(j[0].last);
        assert_eq!(
            j[0].state.reason.as_ref().unwrap().cite.reference,
            "other.txt: status.modelStatus.lastFailureInfo.reason"
        );
        let j = states(&doc(
            "\"lastFailureInfo\": {\n  \"exitCode\": 137,\n  \"reason\": \"OOMKilled\"\n}",
        ));
        assert_eq!(j.len(), 1, "{j:?}");
        assert!(j[0].last);
    }

    #[test]
    fn near_miss_prose_is_not_a_state() {
        assert!(states(&doc("The reason: we ran out of time\nexit code: unknown\n")).is_empty());
    }
}
