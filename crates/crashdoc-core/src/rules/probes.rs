//! Probe kills: liveness and startup probes that kill a container which was
//! still starting or briefly busy.

use super::facts::{probe_events, run_matches_liveness};
use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::model::*;
use crate::scan::SigKind;
use crate::strength::Strength;
use crate::time::human_duration;

pub static PROBE_KILL: Rule = Rule {
    cause: Cause::ProbeKill,
    doc: RuleDoc {
        what: "A liveness or startup probe that kills the container: Unhealthy events followed by Killing, or a run whose length matches the probe's budget, or SIGTERM to a container that restarts in place.",
        why: "The kubelet kills a container after failureThreshold consecutive probe failures. A slow start (a JVM, a model loading weights for minutes), a probe that depends on something else, a wrong path or port, or a 1-second timeout on a busy node fail the probe although the program is fine; it is killed, starts over, and never finishes starting.",
        evidence: "events `Liveness probe failed` / `Startup probe failed` and `Killing ... failed liveness probe`; the probe's delay, period and failureThreshold (its budget) against the measured startup time; exit 137 or 143 without OOMKilled; exit 0 from a program that shuts down cleanly when killed; a SIGTERM line in the logs of a container that restarts in place.",
        example: "Warning  Unhealthy  kubelet  Liveness probe failed: Get \"http://10.0.0.5:8000/health\": connection refused\nNormal   Killing    kubelet  Container vllm failed liveness probe, will be restarted",
        fix: "Add a startupProbe sized from the measured startup (crashdoc computes failureThreshold from it, with margin) so liveness only starts once the program is up; keep liveness for a process that cannot recover, on a cheap local endpoint, with timeoutSeconds of a few seconds; fix the path or port if the probe gets 404 or hits the wrong port.",
        false_positives: "Readiness probe failures never kill a container and are not counted. A probe that fails because the program really hangs is a true kill: the logs before the kill then show what it was stuck on.",
    },
    outranks: &[
        Outrank {
            cause: Cause::ExitZero,
            why: "the exit code records how the program ended after the kubelet stopped it; the probe is why it was stopped",
            only: None,
        },
        Outrank {
            cause: Cause::Terminated,
            why: "the exit code records how the program ended after the kubelet stopped it; the probe is why it was stopped",
            only: None,
        },
        Outrank {
            cause: Cause::OomKilled,
            why: "the exit was a SIGKILL without OOMKilled: the probe, not the memory limit, killed it",
            only: None,
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[Place::Event, Place::State],
    check: check_probe_kill,
};

/// What a probe failure message says about the cause: the meaning of the
/// first message class it belongs to.
fn explain_probe_message(msg: &str) -> Option<&'static str> {
    classes::which(
        &[
            "probe.http-404",
            "probe.connection-refused",
            "probe.timeout",
            "probe.http-5xx",
        ],
        msg,
    )
    .map(|c| c.meaning.as_str())
}

fn check_probe_kill(cx: &Context) -> Vec<Finding> {
    let (unhealthy, killing, cut) = probe_events(cx);
    let name = cx.focus_name();
    let liveness = cx
        .focus
        .and_then(|c| c.probe(ProbeKind::Liveness))
        .or_else(|| {
            cx.pod
                .containers
                .iter()
                .find_map(|c| c.probe(ProbeKind::Liveness))
        });
    let startup = cx.focus.and_then(|c| c.probe(ProbeKind::Startup));

    let mut f = from_events(cx, &unhealthy, &killing, &cut, liveness.is_some());
    if let Some(c) = cx.focus {
        f = ran_for_the_liveness_budget(f, c, name);
    }
    f = sigterm_in_place(cx, f, liveness, startup);
    if f.score <= 0.0 {
        return Vec::new();
    }
    f = startup_probe_fix(cx, f, liveness);
    f = probe_setting_fixes(cx, f, liveness, &unhealthy);
    let container = f.container.clone();
    f = f
        .cmd(cx.kubectl(&format!(
            "get events --field-selector involvedObject.name={},reason=Unhealthy",
            cx.pod_name()
        )))
        .cmd(cx.logs_previous_cmd(container.as_deref()));
    vec![f]
}

/// The kubelet's Unhealthy and Killing events (probe_events): a probe failed
/// and the container was killed for it; Unhealthy events cut off from their
/// Killing event count only beside a liveness probe. Score 0 without them.
fn from_events(
    cx: &Context,
    unhealthy: &[&Event],
    killing: &[&Event],
    cut: &[&Event],
    has_liveness: bool,
) -> Finding {
    let name = cx.focus_name();
    if !unhealthy.is_empty() || !killing.is_empty() {
        let score = if !killing.is_empty() {
            Strength::Certain.score()
        } else {
            Strength::Strong.score()
        };
        let kind = if unhealthy
            .iter()
            .chain(killing.iter())
            .any(|e| classes::is("probe.startup-failed", &e.message))
        {
            "startup"
        } else {
            "liveness"
        };
        let mut summary = format!(
            "the {kind} probe failed and the kubelet killed {}",
            super::who(name)
        );
        if let Some(why) = unhealthy
            .iter()
            .find_map(|e| explain_probe_message(&e.message))
        {
            summary.push_str(&format!(": {why}"));
        }
        let mut f = Finding::new(Cause::ProbeKill, score, summary)
            .container(container_of_events(unhealthy, killing).as_deref().or(name));
        for e in unhealthy.iter().take(2).chain(killing.iter().take(1)) {
            f = f.cite(&e.cite);
        }
        f
    } else if !cut.is_empty() && has_liveness {
        Finding::new(Cause::ProbeKill, 0.8, format!("Unhealthy events and a liveness probe on {}: the probe is failing and restarting it", super::who(name)))
            .container(name)
            .cite(&cut[0].cite)
    } else {
        Finding::new(Cause::ProbeKill, 0.0, String::new()).container(name)
    }
}

/// The run lasted as long as the liveness budget allows: killed by the probe.
fn ran_for_the_liveness_budget(mut f: Finding, c: &Container, name: Option<&str>) -> Finding {
    let (Some((run, p)), Some(t)) = (run_matches_liveness(c), c.last_termination()) else {
        return f;
    };
    let s = format!(
        "{} ran {} before it stopped, which is when a liveness probe with delay {}s, period {}s and failureThreshold {} kills a container that never passes it",
        super::who(name),
        human_duration(run),
        p.initial_delay,
        p.period,
        p.failure
    );
    if f.score < Strength::Strong.score() {
        f.score = Strength::Strong.score();
        f.summary = s;
    } else {
        f = f.why(s);
    }
    f = f
        .cite(&p.cite)
        .cite_opt(t.exit_code.as_ref().map(|x| &x.cite));
    f
}

/// SIGTERM to a container that restarts in place: only a probe does that
/// (read when nothing stronger was found).
fn sigterm_in_place(
    cx: &Context,
    mut f: Finding,
    liveness: Option<&Probe>,
    startup: Option<&Probe>,
) -> Finding {
    if f.score >= Strength::Weak.score() {
        return f;
    }
    let focus = cx.focus;
    let name = cx.focus_name();
    let sigterm_logs = cx.marker_support(SigKind::Sigterm);
    let none = Container::default();
    let c = focus.or(cx.pod.containers.first()).unwrap_or(&none);
    let t = c.last_termination();
    let exit143 = t.is_some_and(|t| t.exit() == Some(143) && !t.reason_is("OOMKilled"));
    let in_place = c.last_state.is_some()
        && c.state
            .as_ref()
            .is_some_and(|s| s.kind != StateKind::Terminated)
        || c.restarts() > 0
        || cx.pod.is_restarting();
    if (exit143 && in_place) || (!sigterm_logs.is_empty() && (in_place || t.is_none())) {
        let has_probe = liveness.is_some() || startup.is_some();
        let score = if exit143 && in_place && has_probe {
            Strength::Moderate.score()
        } else {
            Strength::Weak.score()
        };
        let mut s = format!(
            "{} received SIGTERM{} and the pod was not deleted: the kubelet stops a container in place only when a liveness or startup probe fails",
            super::who(name),
            if exit143 { " (exit 143)" } else { "" }
        );
        if let Some(server) = crate::rules::facts::model_server(cx.pod) {
            s.push_str(&format!("; {server} is slow to start and is typically killed by its probe while still loading"));
        }
        f.score = score;
        f.summary = s;
        f = f.cite_opt(t.and_then(|t| t.exit_code.as_ref().map(|x| &x.cite)));
        if let Some(s) = sigterm_logs.first() {
            f = f.cite(&s.cite());
        }
        if let Some(p) = liveness.or(startup) {
            f = f.cite(&p.cite);
        }
        f = f.why("no rollout, drain or eviction is in the evidence; if the pod was being replaced, this is `terminated` instead");
    }
    f
}

/// The fix: a startupProbe sized from the measured startup time.
fn startup_probe_fix(cx: &Context, f: Finding, liveness: Option<&Probe>) -> Finding {
    let measured = crate::rules::facts::startup_seconds(cx);
    let period = 10u32;
    let (needed, basis) = match (measured, liveness) {
        (Some((secs, what)), _) => (
            secs as u32,
            format!("the measured startup ({what}: {})", human_duration(secs)),
        ),
        (None, Some(p)) => (
            p.budget() * 3,
            format!(
                "three times the current liveness budget of {}s (no startup time could be measured)",
                p.budget()
            ),
        ),
        (None, None) => (
            300,
            "a 5-minute allowance (no startup time could be measured)".to_string(),
        ),
    };
    let allowance = needed + needed / 2 + 30;
    let threshold = allowance.div_ceil(period).max(3);
    let handler = liveness
        .map(|p| probe_handler_yaml(&p.handler))
        .unwrap_or_else(|| "httpGet:\n    path: /health\n    port: 8080".into());
    f.fix(format!(
        "add a startupProbe so the liveness probe only starts once the program is up; it allows {}s, from {basis} plus 50% and 30s:\nstartupProbe:\n  {handler}\n  periodSeconds: {period}\n  failureThreshold: {threshold}",
        threshold * period
    ))
}

/// The probe's own settings that make it kill too early, and a probe path
/// the server does not serve.
fn probe_setting_fixes(
    cx: &Context,
    mut f: Finding,
    liveness: Option<&Probe>,
    unhealthy: &[&Event],
) -> Finding {
    if let Some(p) = liveness {
        if p.timeout <= 1 {
            f = f.fix(format!("raise the liveness timeoutSeconds from {}s to 5s: one slow answer on a busy node should not kill the container", p.timeout));
        }
        if p.failure <= 1 {
            f = f.fix("raise the liveness failureThreshold from 1 to 3: a single failed probe restarts the container");
        }
        if p.handler.contains("health") && crate::rules::facts::model_server(cx.pod).is_some() {
            f = f.why("for a model server, a liveness endpoint that only answers once the model is loaded fails during the whole load; the startupProbe covers that window");
        }
    }
    if unhealthy
        .iter()
        .any(|e| classes::is("probe.http-404", &e.message))
    {
        f = f.fix(
            "point the probe at an endpoint the server actually serves (the probe received 404)",
        );
    }
    f
}

fn container_of_events(a: &[&Event], b: &[&Event]) -> Option<String> {
    for e in b.iter().chain(a.iter()) {
        if let Some(c) = crate::rules::facts::container_in_event(e) {
            return Some(c);
        }
        if let Some(rest) = e.message.strip_prefix("Container ")
            && let Some(name) = rest.split_whitespace().next()
        {
            return Some(name.to_string());
        }
    }
    None
}

/// Turn a describe-style handler (`http-get http://:8000/health`) into YAML.
fn probe_handler_yaml(h: &str) -> String {
    if let Some(rest) = h.strip_prefix("http-get ") {
        let url = rest
            .trim()
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let (hostport, path) = url
            .split_once('/')
            .map(|(a, b)| (a, format!("/{b}")))
            .unwrap_or((url, "/".into()));
        let port = hostport.rsplit(':').next().unwrap_or("8080");
        return format!("httpGet:\n    path: {path}\n    port: {port}");
    }
    if let Some(rest) = h.strip_prefix("tcp-socket ") {
        let port = rest.rsplit(':').next().unwrap_or("8080");
        return format!("tcpSocket:\n    port: {port}");
    }
    if h.starts_with("exec") {
        return "exec:\n    command: [...]  # the same command as the liveness probe".into();
    }
    "httpGet:\n    path: /health\n    port: 8080".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_yaml() {
        assert_eq!(
            probe_handler_yaml("http-get http://:8000/health"),
            "httpGet:\n    path: /health\n    port: 8000"
        );
        assert_eq!(
            probe_handler_yaml("tcp-socket :5432"),
            "tcpSocket:\n    port: 5432"
        );
    }
}
