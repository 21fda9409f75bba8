//! Debugging a container safely (issue 11, item 5): when its image has no
//! shell or it dies too fast to exec into, the next commands are an
//! ephemeral debug container that shares its processes, or a copy of the pod
//! whose container sleeps, never a change to the production command.
//!
//! Flags, from k8s.io/kubectl v0.36.3 pkg/cmd/debug/debug.go (`NewCmdDebug`,
//! `addDebugFlags` and its examples): `--image` (the debug container's
//! image), `-i/--stdin`, `-t/--tty`, `--target` ("When using an ephemeral
//! container, target processes in this container name"), `--copy-to`
//! ("Create a copy of the target Pod with this name"), `--container/-c`
//! (with `--copy-to` and a command after `--`, the copy's container whose
//! command is replaced: "kubectl debug mypod -it --copy-to=my-debugger
//! --container=mycontainer -- sh").

use crate::model::{Cite, Pod};
use regex::Regex;
use std::sync::LazyLock;

/// A run shorter than this is too short to `kubectl exec` into.
pub const TOO_FAST_SECONDS: i64 = 5;

/// Why exec will not do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The image is distroless, scratch or static (by its name).
    NoShellImage(String),
    /// The runtime or a log says sh/bash is not there.
    ShellNotFound(Cite),
    /// Its last run lasted this many seconds.
    TooFast(i64),
}

impl Why {
    pub fn sentence(&self, container: &str) -> String {
        match self {
            Why::NoShellImage(i) => format!("the image {i} has no shell to exec into"),
            Why::ShellNotFound(c) => {
                format!("a shell is not found in {container}'s image ({})", c.text)
            }
            Why::TooFast(s) => {
                format!("{container} dies {s}s after it starts, too fast to exec into")
            }
        }
    }
}

static SHELL_NOT_FOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)exec: "(?:/bin/|/usr/bin/)?(?:ba)?sh": (?:executable file not found|stat )|/bin/(?:ba)?sh: no such file or directory|\b(?:ba)?sh: not found"#)
        .expect("static regex")
});

/// Whether an image reference names a shell-less base: a path component or
/// the name is `distroless…`, `scratch`, or `static…` (gcr.io/distroless/static,
/// cgr.dev/chainguard/static). `static-site` of some org is not.
pub fn shellless_image(image: &str) -> bool {
    let no_digest = image.split('@').next().unwrap_or(image);
    let (path, tag) = match no_digest.rsplit_once(':') {
        Some((p, t)) if !t.contains('/') => (p, t),
        _ => (no_digest, ""),
    };
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    parts.iter().any(|p| p.contains("distroless"))
        || name == "scratch"
        || name == "static"
        || name.starts_with("static-debian")
        || tag.contains("distroless")
}

/// Why the container cannot be exec'd into, when the evidence says so.
pub fn why(pod: &Pod, container: &str) -> Option<Why> {
    let c = pod.container(container)?;
    if let Some(i) = c.image.as_deref().filter(|i| shellless_image(i)) {
        return Some(Why::NoShellImage(i.to_string()));
    }
    let messages = [c.last_state.as_ref(), c.state.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|s| s.message.as_ref())
        .map(|m| &m.cite);
    let events = pod.events.iter().map(|e| &e.cite);
    if let Some(cite) = messages
        .chain(events)
        .find(|cite| SHELL_NOT_FOUND.is_match(&cite.text))
    {
        return Some(Why::ShellNotFound(cite.clone()));
    }
    let logs = pod
        .logs
        .iter()
        .filter(|l| l.container.as_deref().is_none_or(|n| n == container))
        .flat_map(|l| l.tail.iter().map(move |x| (l, x)));
    if let Some((l, line)) = logs
        .into_iter()
        .find(|(_, x)| SHELL_NOT_FOUND.is_match(&x.text))
    {
        return Some(Why::ShellNotFound(Cite::new(
            crate::model::SourceKind::Log,
            format!("{}:{}", l.file, line.number),
            crate::redact::redact(&line.text).into_owned(),
        )));
    }
    let run = c.last_termination()?.run_seconds()?;
    (c.restarts() > 0 && (0..=TOO_FAST_SECONDS).contains(&run)).then_some(Why::TooFast(run))
}

/// The two safe ways in, names filled in.
pub fn commands(pod: &Pod, container: &str) -> [String; 2] {
    let name = pod.name.as_deref().unwrap_or("POD");
    let ns = pod
        .namespace
        .as_ref()
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    [
        format!("kubectl debug {name}{ns} -it --image=busybox --target={container}"),
        format!(
            "kubectl debug {name}{ns} --copy-to={name}-debug --container={container} -- sleep infinity"
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, ContainerState, SourceKind, StateKind};

    fn pod(image: &str, run: Option<(&str, &str)>, message: Option<&str>) -> Pod {
        let mut c = Container::named("app");
        c.image = Some(image.into());
        c.restart_count = Some(crate::model::Field::new(
            4,
            Cite::new(SourceKind::Status, "r", "4"),
        ));
        let mut t = ContainerState::new(
            StateKind::Terminated,
            Cite::new(SourceKind::Status, "s", ""),
        );
        if let Some((s, f)) = run {
            t.started_at = Some(s.into());
            t.finished_at = Some(f.into());
        }
        if let Some(m) = message {
            t.message = Some(crate::model::Field::new(
                m.to_string(),
                Cite::new(SourceKind::Status, "lastState.terminated.message", m),
            ));
        }
        c.last_state = Some(t);
        Pod {
            name: Some("web-1".into()),
            namespace: Some("shop".into()),
            containers: vec![c],
            ..Default::default()
        }
    }

    #[test]
    fn shellless_images_by_name() {
        for i in [
            "gcr.io/distroless/static-debian12:nonroot",
            "gcr.io/distroless/base",
            "cgr.dev/chainguard/static:latest",
            "scratch",
            "registry.example.com/web:1.5.0-distroless",
        ] {
            assert!(shellless_image(i), "{i}");
        }
        for i in [
            "nginx:1.27",
            "example/static-site:1.0",
            "busybox",
            "localhost:5000/web",
        ] {
            assert!(!shellless_image(i), "{i}");
        }
    }

    #[test]
    fn each_reason_and_its_near_miss() {
        let distroless = pod("gcr.io/distroless/static-debian12", None, None);
        assert!(matches!(
            why(&distroless, "app"),
            Some(Why::NoShellImage(_))
        ));
        let no_sh = pod(
            "web:1",
            None,
            Some(
                "failed to create shim task: OCI runtime exec failed: exec: \"sh\": executable file not found in $PATH",
            ),
        );
        assert!(matches!(why(&no_sh, "app"), Some(Why::ShellNotFound(_))));
        let fast = pod(
            "web:1",
            Some(("2026-11-30T10:20:00Z", "2026-11-30T10:20:03Z")),
            None,
        );
        assert_eq!(why(&fast, "app"), Some(Why::TooFast(3)));
        // Near misses: a run of a minute, another binary not found, an image with a shell.
        let slow = pod(
            "web:1",
            Some(("2026-11-30T10:20:00Z", "2026-11-30T10:21:00Z")),
            None,
        );
        assert_eq!(why(&slow, "app"), None);
        let other = pod(
            "web:1",
            None,
            Some("exec: \"/app/server\": executable file not found in $PATH"),
        );
        assert_eq!(why(&other, "app"), None);
        assert_eq!(why(&fast, "sidecar"), None);
    }

    #[test]
    fn commands_have_the_names_filled_in() {
        let p = pod("web:1", None, None);
        assert_eq!(
            commands(&p, "app"),
            [
                "kubectl debug web-1 -n shop -it --image=busybox --target=app".to_string(),
                "kubectl debug web-1 -n shop --copy-to=web-1-debug --container=app -- sleep infinity".to_string(),
            ]
        );
    }
}
