//! Rules that read the container's termination: reason, exit code, signal.

use super::facts::{self, container_in_event, is_mount_error};
use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::model::*;
use crate::scan::SigKind;
use crate::strength::Strength;
use crate::text::{format_bytes_quantity, parse_bytes};
use crate::time::human_duration;

pub static OOM_KILLED: Rule = Rule {
    cause: Cause::OomKilled,
    doc: RuleDoc {
        what: "A container whose last run ended with reason OOMKilled (exit 137): the kernel's OOM killer stopped it because the container's memory use reached its limit.",
        why: "The kubelet restarts the container, it loads the same data again, reaches the limit again and is killed again; the back-off grows to five minutes between tries.",
        evidence: "lastState.terminated.reason OOMKilled with exit code 137; the memory limit; how long the run lasted (seconds: the limit is too small for startup; hours: memory grows until it hits the limit, a leak); out-of-memory lines in the previous logs (Java heap, Node heap, Python MemoryError) as weaker support.",
        example: "Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137\nLimits:\n  memory: 30Mi",
        fix: "Raise resources.limits.memory above the peak (crashdoc suggests 1.5x the current limit, rounded), or make the program use less: a smaller heap (-Xmx below the limit), fewer workers, a quantized or smaller model. A run that lasted hours points to a leak: profile it rather than only raising the limit.",
        false_positives: "Some runtimes have reported OOMKilled for a container stopped with SIGTERM during a node drain: with exit code 143 the reason is not trusted and `terminated` is reported instead. Exit 137 without OOMKilled is a SIGKILL from elsewhere (a probe, the node) and is not reported as oom-killed with confidence.",
    },
    outranks: &[
        Outrank {
            cause: Cause::ProbeKill,
            why: "OOMKilled is the kernel's record of the kill; probe failures came while memory was at the limit",
            only: None,
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[Place::Log, Place::State, Place::Event],
    check: check_oom,
};

fn check_oom(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &cx.pod.containers {
        let Some(t) = c.last_termination() else {
            continue;
        };
        let name = cx.container_or_focus(Some(c));
        if t.reason_is("OOMKilled") && t.exit() == Some(143) {
            // Reported by the `terminated` rule; kept low here so both are visible.
            out.push(oom_reported_with_sigterm(t, name));
        } else if t.reason_is("OOMKilled") {
            out.push(oom_killed(cx, c, t, name));
        } else if t.exit() == Some(137) {
            out.push(sigkill_without_oom(cx, c, t, name));
        }
    }
    if let Some(f) = cx.from_logs(Cause::OomKilled, |s| {
        format!("the program ran out of memory: {}", s.hit.sig.meaning)
    }) {
        out.push(f.cmd(cx.kubectl(&format!("top pod {} --containers", cx.pod_name()))));
    }
    for e in cx.events_with(|e| {
        e.reason == "OOMKilling" || classes::is("kernel.memcg-oom-kill", &e.message)
    }) {
        out.push(
            Finding::new(
                Cause::OomKilled,
                Strength::Strong.score(),
                "the node's kernel killed a process of this pod for memory",
            )
            .container(cx.focus_name())
            .cite(&e.cite),
        );
    }
    out
}

fn oom_reported_with_sigterm(t: &ContainerState, name: Option<&str>) -> Finding {
    Finding::new(
        Cause::OomKilled,
        Strength::Hint.score(),
        format!(
            "{} is reported OOMKilled but exited 143 (SIGTERM)",
            super::who(name)
        ),
    )
    .container(name)
    .cite_opt(t.reason.as_ref().map(|f| &f.cite))
    .cite_opt(t.exit_code.as_ref().map(|f| &f.cite))
}

/// The runtime's own record: the container was OOMKilled. The summary and
/// the fix grow with what else is known: the limit, the measured use, how
/// long the run lasted, a model server's weights.
fn oom_killed(cx: &Context, c: &Container, t: &ContainerState, name: Option<&str>) -> Finding {
    let mut summary = format!(
        "{} was killed by the kernel for exceeding its memory",
        super::who(name)
    );
    let mut f =
        Finding::new(Cause::OomKilled, Strength::Certain.score(), String::new()).container(name);
    f = f
        .cite_opt(t.reason.as_ref().map(|x| &x.cite))
        .cite_opt(t.exit_code.as_ref().map(|x| &x.cite));
    f = memory_limit_fix(cx, f, &mut summary, c.limits.get("memory"), name);
    if let Some((u, _)) = usage_of(cx, &c.name) {
        summary.push_str(&format!(
            "; last measured memory use {}",
            u.memory.as_deref().unwrap_or("?")
        ));
        f = f.cite(&u.cite);
    }
    if let Some(run) = t.run_seconds() {
        if run >= 3600 {
            summary.push_str(&format!("; the run lasted {} before the kill, so memory grows over time (a leak or unbounded cache) rather than being too small at start", human_duration(run)));
            f = f.fix("profile the memory growth (heap dumps, pprof) before raising the limit again: a leak only moves the crash later");
        } else if run <= 300 {
            summary.push_str(&format!(
                "; it died {} after start, so the limit is too small for startup",
                human_duration(run)
            ));
        }
    }
    if let Some(server) = crate::rules::facts::model_server(cx.pod) {
        summary.push_str(&format!("; {server} loads the model weights into host memory before the GPU: the limit must hold them"));
        if let Some((bytes, how)) = crate::rules::facts::weights_size(cx.pod) {
            let gib = bytes as f64 / (1u64 << 30) as f64;
            summary.push_str(&format!(" (the weights are about {gib:.1} GiB, {how})"));
        }
        if let Some((stage, _)) = crate::rules::facts::death_stage(cx.pod) {
            summary.push_str(&format!("; its log ends while {}", stage.describe()));
        }
        f = f.fix("for a model server, the memory limit must cover the weights being read (safetensors are mapped into host memory) plus the server: size it from the model's size on disk plus a few GiB");
    }
    if !cx.events_with(|e| e.reason == "Unhealthy").is_empty() {
        f = f.why("liveness probe failures were also seen; OOMKilled is the kernel's own record of the kill, so it outranks the probe");
    }
    f.summary = summary;
    f = f
        .cmd(cx.kubectl(&format!("top pod {} --containers", cx.pod_name())))
        .cmd(cx.logs_previous_cmd(name))
        .cmd(cx.describe_cmd());
    f
}

/// The new memory limit, from the old one (1.5x, or a model server's weights
/// plus room when that is more), as a sentence and as YAML.
fn memory_limit_fix(
    cx: &Context,
    mut f: Finding,
    summary: &mut String,
    limit: Option<&Field<String>>,
    name: Option<&str>,
) -> Finding {
    match limit {
        Some(l) => {
            summary.push_str(&format!(" limit of {}", l.value));
            f = f.cite(&l.cite);
            if let Some(b) = parse_bytes(&l.value) {
                // 1.5x the limit, or the weights plus room for the server when that is more.
                let weights = crate::rules::facts::model_server(cx.pod)
                    .and_then(|_| crate::rules::facts::weights_size(cx.pod))
                    .map(|(w, _)| w + (4u64 << 30));
                let target = (b + b / 2).max(weights.unwrap_or(0));
                let suggested = format_bytes_quantity(target);
                let basis = if weights.is_some_and(|w| w > b + b / 2) {
                    "the weights plus 4 GiB for the server"
                } else {
                    "1.5x"
                };
                f = f.fix(format!(
                    "raise the memory limit of {} from {} to about {suggested} ({basis}) and set the request to match, then watch the peak with `kubectl top`",
                    super::who(name),
                    l.value
                ));
                f = f.fix(format!(
                    "resources:\n  requests:\n    memory: {suggested}\n  limits:\n    memory: {suggested}"
                ));
            }
        }
        None => {
            summary.push_str(" (no memory limit is shown: check the limit in the workload spec or a LimitRange default)");
            f = f.fix("set resources.limits.memory above the observed peak; with no limit, the namespace's LimitRange default applies");
        }
    }
    f
}

/// Near miss: SIGKILL without OOMKilled. Weak, so other evidence decides,
/// unless measured use was within 10% of the limit.
fn sigkill_without_oom(
    cx: &Context,
    c: &Container,
    t: &ContainerState,
    name: Option<&str>,
) -> Finding {
    let mut f = Finding::hint(
        Cause::OomKilled,
        format!("{} was killed with SIGKILL (exit 137) but the reason is not OOMKilled: a probe, the node's OOM killer or an external kill", super::who(name)),
    )
    .container(name)
    .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
    .decided_by(cx.kubectl(&format!("top pod {} --containers", cx.pod_name())));
    if let Some(l) = c.limits.get("memory") {
        f = f.cite(&l.cite);
        // Measured usage close to the limit makes the memory explanation likely.
        if let Some((u, used)) = usage_of(cx, &c.name)
            && let Some(limit) = parse_bytes(&l.value)
            && used * 10 >= limit * 9
        {
            f.score = Strength::Moderate.score();
            f.status_only = false;
            f.summary = format!(
                "{} was killed with SIGKILL (exit 137) while its memory use ({}) was within 10% of its limit ({}): most likely an OOM kill the runtime did not report",
                super::who(name),
                u.memory.as_deref().unwrap_or("?"),
                l.value
            );
            f = f.cite(&u.cite);
        }
    }
    f
}

/// A container's measured memory use (`kubectl top` / metrics.k8s.io), in bytes.
fn usage_of<'a>(cx: &'a Context, container: &str) -> Option<(&'a Usage, u64)> {
    cx.pod
        .usage
        .iter()
        .find(|u| {
            u.container
                .as_deref()
                .is_none_or(|c| c == container || container.is_empty())
        })
        .and_then(|u| Some((u, parse_bytes(u.memory.as_deref()?)?)))
}

pub static EXIT_ZERO: Rule = Rule {
    cause: Cause::ExitZero,
    doc: RuleDoc {
        what: "A container that finished successfully (exit 0, reason Completed) in a pod whose controller expects it to keep running: a Deployment, StatefulSet, DaemonSet or ReplicaSet, or restartPolicy Always.",
        why: "With restartPolicy Always the kubelet restarts every container that stops, even after success; a program that does its work and exits (a script, `echo`, a server started in the background) is restarted forever and backs off into CrashLoopBackOff.",
        evidence: "lastState.terminated exit code 0 / reason Completed; the owner (Controlled By) or restartPolicy; the container's command; with no command and no args, the image's default process when it is a shell or an interactive interpreter (busybox, alpine, ubuntu, debian, python, node, ...: catalog/images.yaml), which exits at once with no tty and no stdin; a short previous log that ends with no error when the exit code itself is missing.",
        example: "Command: echo\nArgs: HOSTNAME\nLast State: Terminated\n  Reason: Completed\n  Exit Code: 0",
        fix: "Run the server in the foreground (no `&`, no daemon mode, `exec` the server as PID 1), or, for one-off work, use a Job (restartPolicy OnFailure/Never) or a CronJob.",
        false_positives: "A liveness probe that kills a container which then shuts down cleanly also shows exit 0: when Unhealthy events or a run as long as the probe budget are present, probe-kill ranks first. A program that exits 0 on SIGTERM because its node was shut down or drained is `terminated`, which declares it outranks this then.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::State],
    check: check_exit_zero,
};

fn expects_service(cx: &Context) -> (bool, String) {
    if let Some(o) = &cx.pod.owner {
        if o.expects_service() {
            let how = if o.observed {
                ""
            } else {
                " (inferred from the pod name)"
            };
            return (
                true,
                format!("its owner {}/{}{how} keeps it running", o.kind, o.name),
            );
        }
        if o.kind == "Job" || o.kind == "CronJob" {
            return (false, String::new());
        }
    }
    match cx.pod.restart_policy.as_ref().map(|f| f.value.as_str()) {
        Some("Always") => (true, "restartPolicy Always restarts it".into()),
        Some(_) => (false, String::new()),
        None => (true, "the default restartPolicy Always restarts it".into()),
    }
}

fn check_exit_zero(cx: &Context) -> Vec<Finding> {
    let (service, how) = expects_service(cx);
    if !service {
        return Vec::new();
    }
    let out: Vec<Finding> = cx
        .pod
        .containers
        .iter()
        .filter(|c| c.kind != ContainerKind::Init)
        .filter_map(|c| exited_zero(cx, c, &how))
        .collect();
    // No termination recorded, but the previous run's log ends without any error.
    if out.is_empty()
        && cx.pod.is_restarting()
        && cx
            .pod
            .containers
            .iter()
            .all(|c| c.last_termination().is_none())
    {
        return clean_short_previous_log(cx).into_iter().collect();
    }
    out
}

/// Container `c`'s last run ended with exit 0 (or Completed) under a
/// controller that expects it to keep running.
fn exited_zero(cx: &Context, c: &Container, how: &str) -> Option<Finding> {
    let t = c.last_termination()?;
    let zero = t.exit() == Some(0) || (t.exit().is_none() && t.reason_is("Completed"));
    if !zero {
        return None;
    }
    let name = cx.container_or_focus(Some(c));
    let looping = cx.pod.is_restarting();
    let probe = crate::rules::facts::probe_stopped(cx, c);
    let mut summary = format!("{} exits 0 (Completed) and {how}", super::who(name));
    if !c.command.is_empty() || !c.args.is_empty() {
        let cmd = [c.command.clone(), c.args.clone()].concat().join(" ");
        summary.push_str(&format!(
            "; its command `{}` finishes instead of serving",
            crate::text::clip(&cmd, 60)
        ));
    }
    let mut score = match (&probe, looping) {
        (Some(_), _) => Strength::Weak.score(),
        (None, true) => Strength::Strong.score(),
        (None, false) => Strength::Moderate.score(),
    };
    // No command, no args: the image's default process runs. A shell or
    // an interactive interpreter with no terminal and no stdin reads
    // end-of-file and exits 0 at once (catalog/images.yaml).
    let shell = (c.runs_image_default() == Some(true) && c.interactive() != Some(true))
        .then(|| c.image.as_deref().and_then(crate::images::default_process))
        .flatten();
    if let Some(img) = shell {
        summary.push_str(&format!(
            "; it sets no command or args, so it runs its image's default `{}` ({}), which with no terminal and no stdin reads end-of-file and exits at once",
            img.command_line(),
            img.process.words()
        ));
        if probe.is_none() {
            score = match c.interactive() {
                Some(false) => Strength::Decisive.score(),
                _ => score.max(Strength::Strong.score()),
            };
        }
    }
    let mut f = Finding::new(Cause::ExitZero, score, summary)
        .container(name)
        .cite_opt(t.reason.as_ref().map(|x| &x.cite))
        .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
        .cite_opt(c.restart_count.as_ref().map(|x| &x.cite))
        .cite_opt(cx.pod.restart_policy.as_ref().map(|x| &x.cite))
        .fix("keep the main process in the foreground (exec the server as PID 1, no `&` or daemon mode)")
        .fix("if the work is meant to finish, run it as a Job or CronJob (restartPolicy: OnFailure) instead")
        .cmd(cx.logs_previous_cmd(name))
        .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.spec.containers[*].command}} {{.spec.containers[*].args}}'", cx.pod_name())));
    if let Some(img) = shell {
        f = runs_a_default_shell(f, c, name, img);
    }
    if let Some(p) = probe {
        f = f.why(format!(
            "ranked low: {p}, so exit 0 may be a clean shutdown after the kubelet stopped it"
        ));
    }
    Some(f)
}

/// No command and no args: the image's default process is a shell or an
/// interactive interpreter (catalog/images.yaml); the finding cites the
/// image and leads with the command to set.
fn runs_a_default_shell(
    mut f: Finding,
    c: &Container,
    name: Option<&str>,
    img: &crate::images::DefaultImage,
) -> Finding {
    let image = c.image.as_deref().unwrap_or_default();
    let field = match c.kind {
        ContainerKind::Main => "containers",
        _ => "initContainers",
    };
    let n = name.unwrap_or("app");
    f = f
        .cite(&Cite::new(
            SourceKind::Spec,
            format!("spec.{field}[{n}].image"),
            format!("image: {image} (no command, no args)"),
        ))
        .cite_opt(c.tty.as_ref().map(|t| &t.cite))
        .fix(format!(
            "give {} the command it should run: `{image}` alone only starts `{}`",
            super::who(name),
            img.command_line()
        ))
        .fix(format!(
            "containers:\n- name: {n}\n  image: {image}\n  command: [\"/path/to/your/program\"]   # the server this container exists for\n  # to keep it idle for debugging instead: command: [\"sleep\", \"infinity\"]"
        ))
        .why(format!(
            "{}'s default process is `{}` ({})",
            img.name,
            img.command_line(),
            img.source
        ));
    // The command to set comes before the general advice.
    f.fix.rotate_right(2);
    if c.interactive().is_none() {
        f = f.why("the input does not show tty or stdin (describe prints neither); with `tty: true` or `stdin: true` the process would wait for input instead");
    }
    f
}

/// The previous run's log is short and has no error, and the container
/// restarts: a program that ended normally.
fn clean_short_previous_log(cx: &Context) -> Option<Finding> {
    let runs: Vec<_> = cx
        .pod
        .logs
        .iter()
        .filter(|l| l.kind == crate::scan::LogKind::Previous && !l.is_empty())
        .collect();
    let clean = !runs.is_empty()
        && runs.iter().all(|l| {
            l.lines <= 50
                && l.hits.iter().all(|h| {
                    !matches!(
                        h.sig.kind,
                        SigKind::Cause(_) | SigKind::Exception | SigKind::Sigterm
                    )
                })
        });
    if !clean {
        return None;
    }
    let l = runs[0];
    let mut f = Finding::new(
        Cause::ExitZero,
        Strength::Weak.score(),
        format!("the previous run printed {} line(s) with no error and the container restarts: a program that ends normally under a controller that expects a service", l.lines),
    )
    .container(l.container.as_deref().or(cx.focus_name()))
    .fix("keep the main process running in the foreground, or run the task as a Job")
    .cmd(cx.describe_cmd());
    if let Some(last) = l.tail.last() {
        f = f.cite(&Cite::new(
            SourceKind::Log,
            format!("{}:{}", l.file, last.number),
            crate::redact::redact(&last.text).into_owned(),
        ));
    }
    for e in cx
        .events_with(|e| e.reason == "BackOff")
        .into_iter()
        .take(1)
    {
        f = f.cite(&e.cite);
    }
    Some(f.why("no exit code was given; the clean, short log is the evidence"))
}

pub static BAD_COMMAND: Rule = Rule {
    cause: Cause::BadCommand,
    doc: RuleDoc {
        what: "A container whose entrypoint cannot be started: the command does not exist in the image, is not executable, or is built for another CPU architecture.",
        why: "The runtime fails before the program runs (exit 127 or 126, RunContainerError / StartError), every restart fails the same way.",
        evidence: "exit code 126/127; waiting or terminated reason RunContainerError, StartError, ContainerCannotRun; event or log text `executable file not found in $PATH`, `exec format error`, `exec: \"/path\": stat /path: no such file or directory`, `command not found`.",
        example: "Warning  Failed  kubelet  Error: failed to start container \"app\": exec: \"/usr/bin/xray\": stat /usr/bin/xray: no such file or directory",
        fix: "Fix command/args to a path that exists in the image (check with `docker run --entrypoint sh IMAGE -c 'ls -l PATH'`), make scripts executable, or use an image built for the node's architecture (a multi-arch image, or a nodeSelector on kubernetes.io/arch).",
        false_positives: "A shell script that itself runs a missing tool exits 127 too: the log line names the missing command, which is then the thing to fix.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_bad_command,
};

const START_REASONS: &[&str] = &[
    "RunContainerError",
    "StartError",
    "ContainerCannotRun",
    "CreateContainerError",
];

fn check_bad_command(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &cx.pod.containers {
        let name = cx.container_or_focus(Some(c));
        if let Some(t) = c.last_termination()
            && let Some(code @ (126 | 127)) = t.exit()
        {
            let what = if code == 127 {
                "the command was not found"
            } else {
                "the command is not executable"
            };
            out.push(
                Finding::new(Cause::BadCommand, 0.85, format!("{} exited {code}: {what}", super::who(name)))
                    .container(name)
                    .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
                    .fix("check the command and args against the image: the path must exist and be executable")
                    .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.spec.containers[*].command}} {{.spec.containers[*].args}}'", cx.pod_name()))),
            );
        }
        for st in [c.state.as_ref(), c.last_state.as_ref()]
            .into_iter()
            .flatten()
        {
            if let Some(r) = &st.reason
                && START_REASONS.contains(&r.value.as_str())
            {
                let msg = st.message.as_ref().map(|m| m.value.as_str()).unwrap_or("");
                if is_mount_error(msg) {
                    continue;
                }
                let strong = classes::is("start.entrypoint-missing", msg);
                out.push(
                    Finding::new(
                        Cause::BadCommand,
                        if strong {
                            Strength::Certain.score()
                        } else {
                            Strength::Weak.score()
                        },
                        format!("{} could not be started ({})", super::who(name), r.value),
                    )
                    .container(name)
                    .cite(&r.cite)
                    .cite_opt(st.message.as_ref().map(|m| &m.cite)),
                );
            }
        }
    }
    let start_events = cx.events_with(|e| {
        e.reason == "Failed" && classes::is("start.entrypoint-failed", &e.message)
    });
    if let Some(e) = start_events.first() {
        let arch = classes::is("runtime.exec-format-error", &e.message);
        let mut f = Finding::new(
            Cause::BadCommand,
            Strength::Certain.score(),
            if arch {
                "the image's entrypoint is built for another CPU architecture (exec format error)"
                    .to_string()
            } else {
                "the container's command does not exist in the image".to_string()
            },
        )
        .container(container_in_event(e).as_deref().or(cx.focus_name()))
        .cite(&e.cite)
        .cmd(cx.kubectl(&format!(
            "get pod {} -o jsonpath='{{.spec.containers[*].command}}'",
            cx.pod_name()
        )));
        f = if arch {
            f.fix("use an image built for the node's architecture (multi-arch), or pin the pod to matching nodes with nodeSelector kubernetes.io/arch")
        } else {
            f.fix("point command/args at a binary that exists in the image; list it with `kubectl debug` or by running the image with a shell")
        };
        out.push(f);
    }
    if let Some(mut f) = cx.from_logs(Cause::BadCommand, |s| {
        format!("the entrypoint cannot run: {}", s.hit.sig.meaning)
    }) {
        let arch = f
            .evidence
            .iter()
            .any(|e| classes::is("runtime.exec-format-error", &e.text));
        if arch {
            f = f
                .fix("use an image built for the node's architecture (check `kubectl get node -L kubernetes.io/arch` against the image's platforms)")
                .cmd(cx.kubectl("get nodes -L kubernetes.io/arch"));
        } else {
            f = f.fix("point command/args at a binary that exists in the image");
        }
        out.push(f);
    }
    out
}

pub static NATIVE_CRASH: Rule = Rule {
    cause: Cause::NativeCrash,
    doc: RuleDoc {
        what: "A process killed by a signal it raised itself: SIGSEGV (exit 139), SIGABRT (134), SIGILL (132), SIGTRAP (133), SIGBUS (135), SIGFPE (136).",
        why: "Native code crashed: a segfault in a C/C++/Rust library, an abort after a failed assertion or allocation, or an instruction the CPU does not have (an image built for AVX/AVX-512 on an older CPU, a 4K-page allocator on a 16K-page kernel). It crashes the same way on every start.",
        evidence: "exit code 128+signal; log lines `Segmentation fault`, `Illegal instruction (core dumped)`, `Aborted`, `double free`, `<jemalloc>: Unsupported system page size`.",
        example: "Illegal instruction (core dumped)",
        fix: "Match the image to the node: CPU features (AVX), page size (arm64 16K pages), architecture. Otherwise upgrade the crashing library and collect a core dump.",
        false_positives: "Go programs print `[signal SIGSEGV: segmentation violation]` in a panic and exit 2: that is an application panic (app-crash), not a native crash.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_native,
};

pub fn signal_name(code: i32) -> Option<&'static str> {
    Some(match code {
        132 => "SIGILL",
        133 => "SIGTRAP",
        134 => "SIGABRT",
        135 => "SIGBUS",
        136 => "SIGFPE",
        139 => "SIGSEGV",
        _ => return None,
    })
}

fn check_native(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &cx.pod.containers {
        let Some(t) = c.last_termination() else {
            continue;
        };
        let Some(code) = t.exit() else { continue };
        let Some(sig) = signal_name(code) else {
            continue;
        };
        let name = cx.container_or_focus(Some(c));
        let hint = match code {
            132 => "an instruction the CPU lacks (an image built for AVX/AVX-512 or another CPU)",
            133 => {
                "a trap (a Rust/C abort, an allocator refusing the system, a debugger breakpoint)"
            }
            134 => "an abort (failed assertion, uncaught C++ exception, allocation failure)",
            139 => "a segmentation fault in native code",
            _ => "a fatal signal from native code",
        };
        out.push(
            Finding::new(Cause::NativeCrash, 0.8, format!("{} died from {sig} (exit {code}): {hint}", super::who(name)))
                .container(name)
                .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
                .cite_opt(t.reason.as_ref().map(|x| &x.cite))
                .fix("compare the node's CPU flags, page size and architecture with what the image was built for (`kubectl get node NODE -o wide`, `getconf PAGESIZE`)")
                .cmd(cx.logs_previous_cmd(name)),
        );
    }
    if let Some(f) = cx.from_logs(Cause::NativeCrash, |s| {
        format!("the process crashed in native code: {}", s.hit.sig.meaning)
    }) {
        out.push(f.fix("run the image on a node whose CPU, page size and architecture match the build, or upgrade the crashing library").cmd(cx.logs_previous_cmd(cx.focus_name())));
    }
    out
}

pub static TERMINATED: Rule = Rule {
    cause: Cause::Terminated,
    doc: RuleDoc {
        what: "A container stopped on request with SIGTERM (exit 143), by a rollout, scale-down, drain or preStop, rather than crashing.",
        why: "Nothing is wrong with the program; the restarts or failures come from whoever stops it. When the container restarts in place after SIGTERM, that is a failed liveness/startup probe (probe-kill), not this.",
        evidence: "exit code 143 (128+15), a log line saying SIGTERM was received, Killing events with `Stopping container`, a pod terminated as a whole (state, not lastState); a pod that went down with its node: the kubelet's node shutdown message, kubectl drain's output, Karpenter's and cluster-autoscaler's eviction events, an interruption notice (catalog/node-lifecycle.yaml).",
        example: "state:\n  terminated:\n    exitCode: 143\n    reason: OOMKilled   # misreported: 143 is SIGTERM",
        fix: "Nothing to fix in the program; find who stopped it (rollout, HPA, drain). Make the program exit quickly on SIGTERM and set terminationGracePeriodSeconds to cover its shutdown.",
        false_positives: "A liveness or startup probe also ends in SIGTERM: with Unhealthy events, or a container that restarts in place with a probe configured, probe-kill ranks first.",
    },
    outranks: &[
        Outrank {
            cause: Cause::OomKilled,
            why: "exit 143 means SIGTERM; an OOM kill is always SIGKILL (137), so the OOMKilled reason is not trusted",
            only: None,
        },
        Outrank {
            cause: Cause::ProbeKill,
            why: "the node the pod ran on was shut down, drained or removed (the kubelet's node shutdown manager, a drain, an autoscaler or an interruption handler says so); probes fail while a node goes down, and the kubelet stopped the container because the node went, not because of them",
            only: Some(NODE_LIFECYCLE),
        },
        Outrank {
            cause: Cause::ExitZero,
            why: "the node the pod ran on was shut down, drained or removed; a program that handles SIGTERM exits 0 when it is stopped with its node, which is a clean shutdown, not a program that ends on its own",
            only: Some(NODE_LIFECYCLE),
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[Place::Event, Place::State],
    check: check_terminated,
};

/// The basis of a `terminated` finding that rests on a node-lifecycle
/// message (catalog/node-lifecycle.yaml): the pod went down with its node.
const NODE_LIFECYCLE: &str = "node-lifecycle";

/// The pod went down with its node: a message of the kubelet's node
/// shutdown manager, kubectl drain, Karpenter, cluster-autoscaler or an
/// interruption handler, on the pod's events or status (strong) or only in
/// other text of the input: the node's events, a tool's output, a runner's
/// log that relays the pod's status (moderate).
fn node_lifecycle_finding(cx: &Context) -> Option<Finding> {
    let sup: Vec<_> = cx
        .catalog_support(Cause::Terminated)
        .into_iter()
        .filter(|s| facts::is_node_lifecycle(s.hit.sig))
        .collect();
    let best = sup.first()?;
    let own = sup
        .iter()
        .any(|s| matches!(s.at, Place::Event | Place::State));
    let mut f = cx.finding_from(Cause::Terminated, &sup, |s| {
        format!("the pod went down with its node: {}", s.hit.sig.meaning)
    })?;
    let strength = best.hit.sig.strength;
    let floor = if own && strength >= Strength::Strong {
        Some(Strength::Strong)
    } else {
        (strength >= Strength::Moderate).then_some(Strength::Moderate)
    };
    if let Some(floor) = floor {
        f.score = f.score.max(floor.score());
    }
    let mut f = f
        .on(NODE_LIFECYCLE)
        .fix("nothing to fix in the program: the node was shut down, drained or removed, and the controller starts the pod elsewhere")
        .fix("if losing the pod hurt, give the workload more than one replica and a PodDisruptionBudget, make shutdown on SIGTERM fast, and set terminationGracePeriodSeconds to cover it")
        .cmd(cx.kubectl("get events --sort-by=.lastTimestamp"));
    if let Some(n) = &cx.pod.node_name {
        f = f.cmd(format!("kubectl get events -A --field-selector involvedObject.kind=Node,involvedObject.name={n}"));
    }
    Some(f.why(format!(
        "a node-lifecycle message ({}) says why the container stopped",
        best.hit.sig.id
    )))
}

fn check_terminated(cx: &Context) -> Vec<Finding> {
    let mut out: Vec<Finding> = node_lifecycle_finding(cx).into_iter().collect();
    for c in &cx.pod.containers {
        let Some(t) = c.last_termination() else {
            continue;
        };
        if t.exit() != Some(143) {
            continue;
        }
        let name = cx.container_or_focus(Some(c));
        let in_place = c.last_state.is_some()
            && (c.restarts() > 0
                || c.state
                    .as_ref()
                    .is_some_and(|s| s.kind != StateKind::Terminated));
        if t.reason_is("OOMKilled") {
            let mut f = Finding::new(
                Cause::Terminated,
                Strength::Strong.score(),
                format!(
                    "{} exited 143 (SIGTERM) although the reason says OOMKilled: the OOM killer sends SIGKILL (137), so the container was stopped (drain, eviction or rollout) and the reason is misreported",
                    super::who(name)
                ),
            )
            .container(name)
            .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
            .cite_opt(t.reason.as_ref().map(|x| &x.cite))
            .fix("look for who stopped the pod (node drain, eviction, rollout) in the events and node history; the memory limit is not the problem")
            .cmd(cx.kubectl("get events --sort-by=.lastTimestamp"));
            if !c.limits.contains_key("memory") {
                f.summary
                    .push_str("; it has no memory limit, so it could not exceed its own");
                if let Some(r) = c.requests.get("memory") {
                    f = f.cite(&r.cite);
                }
            }
            out.push(f.why(
                "exit code 143 (SIGTERM) contradicts OOMKilled, which always ends in SIGKILL (137)",
            ));
            continue;
        }
        let score = if in_place {
            Strength::Weak.score()
        } else {
            Strength::Moderate.score()
        };
        out.push(
            Finding::new(Cause::Terminated, score, format!("{} was stopped with SIGTERM (exit 143)", super::who(name)))
                .container(name)
                .cite_opt(t.exit_code.as_ref().map(|x| &x.cite))
                .fix("find who stopped it (rollout, scale-down, drain); make shutdown on SIGTERM fast and clean")
                .cmd(cx.kubectl("get events --sort-by=.lastTimestamp")),
        );
    }
    let stops =
        cx.events_with(|e| e.reason == "Killing" && classes::is("container.stopping", &e.message));
    let probe_events = cx.events_with(|e| {
        e.reason == "Unhealthy" || classes::is("probe.restart-after-failure", &e.message)
    });
    let evicted =
        cx.events_with(|e| e.reason == "Evicted" && facts::node_lifecycle(&e.message).is_none());
    if let Some(e) = stops.first()
        && probe_events.is_empty()
        && evicted.is_empty()
    {
        out.push(
            Finding::new(
                Cause::Terminated,
                Strength::Weak.score(),
                "the kubelet stopped the container on request (not after a probe failure)",
            )
            .container(cx.focus_name())
            .cite(&e.cite),
        );
    }
    if let Some(s) = cx.marker_support(SigKind::Sigterm).first() {
        out.push(
            Finding::new(
                Cause::Terminated,
                Strength::Weak.score(),
                "the program logged that it received SIGTERM: it was asked to stop",
            )
            .container(s.container.as_deref().or(cx.focus_name()))
            .cite(&s.cite()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::causes::Cause;
    use crate::diagnose::{Confidence, Diagnosis, diagnose};
    use crate::ingest::{Doc, FileKind, Parts, assemble};

    /// A ReplicaSet's pod whose container `box` (with `extra` spec lines)
    /// exited 0 six times.
    fn diagnosed(image: &str, extra: &str, owner: &str) -> Vec<Diagnosis> {
        let pod = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box-1\n  ownerReferences:\n  - {{kind: {owner}, name: box-6b7c9d8f5e, controller: true}}\nspec:\n  containers:\n  - name: box\n    image: {image}\n{extra}status:\n  containerStatuses:\n  - name: box\n    restartCount: 6\n    lastState:\n      terminated: {{exitCode: 0, reason: Completed}}\n    state:\n      waiting: {{reason: CrashLoopBackOff}}\n"
        );
        let mut parts = Parts::default();
        parts.add_doc(
            FileKind::Objects,
            Doc {
                name: "pod.yaml".into(),
                text: pod,
                line_offset: 0,
            },
        );
        diagnose(&assemble(parts).pods[0], &[]).diagnoses
    }

    fn cites_the_image(d: &Diagnosis) -> bool {
        d.evidence.iter().any(|e| e.text.contains("no command"))
    }

    #[test]
    fn an_image_whose_default_is_a_shell_is_decisive_with_no_command_and_no_tty() {
        let ds = diagnosed("busybox:1.36", "", "ReplicaSet");
        assert_eq!(ds[0].cause, Cause::ExitZero, "{ds:#?}");
        assert_eq!(ds[0].confidence, Confidence::High);
        assert!(cites_the_image(&ds[0]), "{ds:#?}");
        assert!(ds[0].summary.contains("`sh`"), "{}", ds[0].summary);
        assert!(
            ds[0].fix[0].contains("the command it should run"),
            "{:?}",
            ds[0].fix
        );
        assert!(ds[0].fix[1].contains("command: ["), "{:?}", ds[0].fix);
    }

    #[test]
    fn a_command_a_tty_or_an_image_without_a_default_shell_is_not_the_image() {
        for (image, extra) in [
            (
                "busybox:1.36",
                "    command: [\"sh\", \"-c\", \"echo ready\"]\n",
            ),
            ("busybox:1.36", "    args: [\"echo\", \"ready\"]\n"),
            ("busybox:1.36", "    tty: true\n"),
            ("python:3.12", "    stdin: true\n"),
            ("registry.example.com/team/web:1.0", ""),
        ] {
            let ds = diagnosed(image, extra, "ReplicaSet");
            let ez = ds.iter().find(|d| d.cause == Cause::ExitZero);
            let ez = ez.unwrap_or_else(|| panic!("{image} {extra}: {ds:#?}"));
            assert!(!cites_the_image(ez), "{image} {extra}: {ez:#?}");
            assert!(ez.confidence < Confidence::High, "{image} {extra}: {ez:#?}");
        }
        // Under a Job, exit 0 is the work being done.
        let ds = diagnosed("busybox:1.36", "", "Job");
        assert!(ds.iter().all(|d| d.cause != Cause::ExitZero), "{ds:#?}");
    }
}
