//! Causes read mainly from the container's own output.

use super::{Context, Finding, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::scan::SigKind;
use crate::strength::Strength;
use regex::Regex;
use std::sync::LazyLock;

pub static MISSING_FILE: Rule = Rule {
    cause: Cause::MissingFile,
    doc: RuleDoc {
        what: "A model, config, weights, module or script path that does not exist in the container.",
        why: "The program opens the path at start and exits; the image or the volume does not change between restarts. Common shapes: a volume mounted over the directory that held the app, a model path that differs from the mountPath, a module missing from the image.",
        evidence: "`No such file or directory`, `FileNotFoundError`, `ENOENT`, `Cannot find module`, `No module named`, `does not appear to have a file named config.json`, `Could not find base path`; the container's volumeMounts against the path.",
        example: "Error: Cannot find module '/build/main.js'",
        fix: "Make the path exist where the program looks: mount the volume at that path (or point the program at the mountPath), don't mount a volume over the directory that holds the app (use subPath), add the file or module to the image.",
        false_positives: "`exec: ... no such file or directory` from the runtime is the entrypoint itself: bad-command.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_missing_file,
};

fn check_missing_file(cx: &Context) -> Vec<Finding> {
    let Some(mut f) = cx.from_logs(Cause::MissingFile, |s| {
        let paths = crate::rules::facts::paths_in(&s.hit.line.text);
        match paths.first() {
            Some(p) => format!("{p} does not exist in the container: {}", s.hit.sig.meaning),
            None => format!(
                "the program cannot find what it loads: {}",
                s.hit.sig.meaning
            ),
        }
    }) else {
        return vec![];
    };
    let line = f
        .evidence
        .first()
        .map(|e| e.text.clone())
        .unwrap_or_default();
    let paths = crate::rules::facts::paths_in(&line);
    let mounts: Vec<&crate::model::Mount> = cx
        .pod
        .containers
        .iter()
        .flat_map(|c| c.mounts.iter())
        .collect();
    if let Some(p) = paths.first() {
        if let Some(m) = mounts.iter().find(|m| p.starts_with(m.path.as_str())) {
            f = f.cite(&m.cite).why(format!("{p} is under the volume mounted at {}: the volume does not hold it (or hides what the image had there)", m.path));
            f = f.fix(format!("check what volume {} holds at {}; a volume mounted over an image directory hides the image's files (use subPath)", m.name, m.path));
        } else if !mounts.is_empty() {
            f = f.fix(format!("{p} is not under any volumeMount ({}): mount the data there or point the program at the mountPath", mounts.iter().map(|m| m.path.as_str()).collect::<Vec<_>>().join(", ")));
        }
    }
    let all_text: String = f
        .evidence
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    if classes::is("file.hf-offline-cache", &all_text) {
        f = f
            .fix("offline mode (HF_HUB_OFFLINE=1) needs the model in the cache: pre-load it into the cache volume (HF_HOME) with an init container or a Job, or unset HF_HUB_OFFLINE so the server can download it")
            .why("the server was told not to download and the cache it reads is empty or points elsewhere (check HF_HOME / the mountPath)");
    } else if classes::is("file.incomplete-weights", &all_text) {
        f = f
            .fix("a weights file is incomplete: delete the partial files from the cache and download again, and give the cache volume room for the whole model")
            .why("a download cut short (a killed pod, a full volume) leaves a truncated shard that every later start fails to read");
    }
    f = f.fix("make the path exist where the program opens it: in the image, or on a volume mounted at that path");
    let c = f.container.clone();
    vec![
        f.cmd(cx.logs_previous_cmd(c.as_deref()))
            .cmd(cx.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.containers[*].volumeMounts}}'",
                cx.pod_name()
            ))),
    ]
}

pub static DEPENDENCY_UNREACHABLE: Rule = Rule {
    cause: Cause::DependencyUnreachable,
    doc: RuleDoc {
        what: "A backend the program needs at start is down, not ready, or misnamed: connection refused, DNS failure, no route, timeout.",
        why: "Programs that connect to their database, broker or API at start and exit on failure crash-loop until the dependency answers; a wrong host name never answers.",
        evidence: "`Connection refused`, `ECONNREFUSED`, `no such host`, `Name or service not known`, `could not translate host name`, `Temporary failure in name resolution`, `network is unreachable`, `EHOSTUNREACH`, `i/o timeout` with the host:port.",
        example: "psycopg2.OperationalError: could not translate host name \"postgres\" to address: Name or service not known",
        fix: "Check the host name against the Services in the namespace (a missing Service, a wrong namespace suffix), that the Service has endpoints (its pods ready), and NetworkPolicies; make the program retry with back-off instead of exiting.",
        false_positives: "`connection refused` in a liveness probe event is the probe failing, not a dependency (probe-kill).",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_dependency,
};

static HOSTPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:host name |host |dial tcp |connect to |lookup |address |\()?["']?([a-z0-9][a-z0-9.-]*[a-z0-9])["']?(?::(\d{2,5})|, (\d{2,5})\))"#).expect("static regex")
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:host name|lookup|resolve host:?|host)\s+["']?([a-z0-9][a-z0-9.-]*[a-z0-9])["']?"#,
    )
    .expect("static regex")
});

fn check_dependency(cx: &Context) -> Vec<Finding> {
    let Some(mut f) = cx.from_logs(Cause::DependencyUnreachable, |s| {
        let target = target_of(&s.hit.line.text);
        match target {
            Some(t) => format!("the program cannot reach {t}: {}", s.hit.sig.meaning),
            None => format!(
                "the program cannot reach a dependency: {}",
                s.hit.sig.meaning
            ),
        }
    }) else {
        return vec![];
    };
    let line = f
        .evidence
        .first()
        .map(|e| e.text.clone())
        .unwrap_or_default();
    if let Some(t) = target_of(&line) {
        let host = t.split(':').next().unwrap_or(&t).to_string();
        // A live collection looked the Service up.
        let short = host.split('.').next().unwrap_or(&host);
        if let Some(r) = cx
            .pod
            .object_refs
            .iter()
            .find(|r| r.kind == "Service" && r.name.split('.').next() == Some(short))
        {
            match r.exists {
                Some(false) => {
                    f.score = f.score.max(Strength::Decisive.score());
                    f.summary = format!(
                        "the program cannot reach {t}: there is no Service {} in the namespace",
                        r.name
                    );
                    f = f.cite(&r.cite).fix(format!(
                        "create Service {} or point the program at the right host name",
                        r.name
                    ));
                }
                Some(true) => {
                    f = f.cite(&r.cite).why(format!("Service {} exists: check that it has ready endpoints and the port is right", r.name));
                }
                None => {}
            }
        }
        let is_ip = host.chars().all(|c| c.is_ascii_digit() || c == '.');
        if is_ip {
            f = f.cmd(cx.kubectl("get endpoints -o wide")).fix(format!("find what should answer at {t} (a Service's ClusterIP or a pod) and whether it is up and ready"));
        } else {
            let short = host.split('.').next().unwrap_or(&host).to_string();
            f = f
                .cmd(cx.kubectl(&format!("get service {short}")))
                .cmd(cx.kubectl(&format!("get endpoints {short}")))
                .fix(format!("check that Service {short} exists in the namespace the program expects (use {short}.NAMESPACE.svc for another namespace) and has ready endpoints"));
        }
    }
    vec![f.fix("make the program retry the connection with back-off rather than exit, so it survives its dependency starting later")]
}

pub fn target_of(line: &str) -> Option<String> {
    if let Some(c) = HOSTPORT.captures(line) {
        let host = &c[1];
        if host.contains('.') || host.len() > 2 {
            let port = c.get(2).or(c.get(3)).map(|m| m.as_str());
            return Some(match port {
                Some(p) => format!("{host}:{p}"),
                None => host.to_string(),
            });
        }
    }
    HOSTNAME
        .captures(line)
        .map(|c| c[1].to_string())
        .filter(|h| h != "not" && h != "name")
}

pub static PORT_CONFLICT: Rule = Rule {
    cause: Cause::PortConflict,
    doc: RuleDoc {
        what: "The server cannot bind its port because something else already listens on it.",
        why: "Two containers of the pod (they share one network namespace) use the same port, or a hostNetwork pod collides with a process on the node (kube-proxy, another ingress controller); the bind fails at every start.",
        evidence: "`address already in use`, `EADDRINUSE`, `Port 80 is already in use`, `Errno 98`.",
        example: "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8080): address already in use",
        fix: "Give each container of the pod its own port; for hostNetwork, move the server to a free port or stop the other listener; check `ss -ltnp` on the node.",
        false_positives: "A restart of the same process while the old one still holds the port shows this briefly, once.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_port,
};

static PORT_NUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)port\s*:?\s*(\d{2,5})|:(\d{2,5})\b|', (\d{2,5})\)").expect("static regex")
});

fn check_port(cx: &Context) -> Vec<Finding> {
    let Some(mut f) = cx.from_logs(Cause::PortConflict, |s| {
        let port = PORT_NUM.captures(&s.hit.line.text).and_then(|c| c.get(1).or(c.get(2)).or(c.get(3)).map(|m| m.as_str().to_string()));
        match port {
            Some(p) => format!("port {p} is already in use: another process (another container of the pod, or the node with hostNetwork) holds it"),
            None => "the server's port is already in use".to_string(),
        }
    }) else {
        return vec![];
    };
    let ports: Vec<(String, u16)> = cx
        .pod
        .containers
        .iter()
        .flat_map(|c| c.ports.iter().map(move |p| (c.name.clone(), *p)))
        .collect();
    for (i, (a, p)) in ports.iter().enumerate() {
        if let Some((b, _)) = ports[i + 1..].iter().find(|(b, q)| q == p && b != a) {
            f = f.why(format!("containers {a} and {b} both declare port {p}; containers of a pod share one network namespace"));
        }
    }
    vec![f
        .fix("give each container of the pod its own port; with hostNetwork, choose a port nothing on the node uses")
        .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.spec.hostNetwork}} {{.spec.containers[*].ports}}'", cx.pod_name())))]
}

pub static APP_CRASH: Rule = Rule {
    cause: Cause::AppCrash,
    doc: RuleDoc {
        what: "The application itself failed: an exception, panic or assertion in its own code that none of the other causes explains.",
        why: "A bug on the start path (a nil dereference, an unhandled case in the data it reads at start) crashes the same way on every restart.",
        evidence: "the decisive line of a stack trace in the previous logs: the final `SomeError: message` of a Python traceback, `panic:` in Go, `Exception in thread` / the last `Caused by:` in Java, `thread 'main' panicked at` in Rust, `Error:` followed by `at` frames in Node; exit 1 or 2.",
        example: "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x170142d]",
        fix: "Read the stack trace's top frame in the program's own code; upgrade to a release that fixes it or work around the input that triggers it. Report it upstream with the trace.",
        false_positives: "Exceptions that carry a more specific cause (connection refused, file not found, out of memory) are reported as that cause.",
    },
    outranks: &[],
    reads: &[],
    check: check_app_crash,
};

fn check_app_crash(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    // The decisive line: the last exception/panic line of the latest run.
    let ex = cx.marker_support(SigKind::Exception);
    let best = ex.iter().filter(|s| s.hit.decisive).max_by(|a, b| {
        let rank = |s: &&&super::Support| (s.kind == Some(crate::scan::LogKind::Previous)) as u8;
        rank(a).cmp(&rank(b)).then_with(|| {
            // A Go panic's first line, else the last exception line.
            let go =
                |s: &&&super::Support| s.hit.line.text.trim_start().starts_with("panic:") as u8;
            go(a).cmp(&go(b)).then(if go(a) == 1 {
                b.hit.line.number.cmp(&a.hit.line.number)
            } else {
                a.hit.line.number.cmp(&b.hit.line.number)
            })
        })
    });
    if let Some(s) = best.or(ex.first()) {
        let text = crate::text::strip_log_prefix(&s.hit.line.text)
            .trim()
            .to_string();
        let lang = if classes::is("crash.go-panic", &text) || s.log_has("crash.go-panic") {
            "a Go panic"
        } else if classes::is("crash.rust-panic", &text) {
            "a Rust panic"
        } else if s.log_has("crash.python-traceback") || classes::is("crash.named-exception", &text)
        {
            "an unhandled exception"
        } else {
            "an unhandled error"
        };
        let mut f = Finding::new(
            Cause::AppCrash,
            s.score.min(Strength::Moderate.score()),
            format!(
                "the application crashed with {lang}: {}",
                crate::text::clip(&text, 160)
            ),
        )
        .container(s.container.as_deref().or(cx.focus_name()))
        .cite(&s.cite());
        if classes::is("crash.nil-dereference", &text) {
            f = f.why("a nil/None dereference: the program met data it did not expect (often an object missing a field); the stack's top frame in the program's own package says where");
        }
        let c = f.container.clone();
        f = f.fix("read the stack trace's top frame in the program's own code; upgrade to a release with the fix, or change the input that triggers it").cmd(cx.logs_previous_cmd(c.as_deref()));
        out.push(f);
    }
    // Exit 1/2 with nothing else to go on.
    for c in &cx.pod.containers {
        let Some(t) = c.last_termination() else {
            continue;
        };
        if let Some(code @ (1 | 2)) = t.exit() {
            let name = cx.container_or_focus(Some(c));
            let mut f = Finding::hint(
                Cause::AppCrash,
                format!(
                    "{} exited with code {code}: the program stopped on an error",
                    super::who(name)
                ),
            )
            .container(name)
            .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
            .cmd(cx.logs_previous_cmd(name))
            .decided_by(cx.logs_previous_cmd(name));
            if !cx.pod.has_previous_logs() {
                f = f.why(
                    "the previous run's logs are not in the input; they would say why it exited",
                );
            }
            out.push(f);
        }
    }
    out
}
