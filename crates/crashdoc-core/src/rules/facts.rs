//! Facts the rules share (as clippy's lints share `clippy_utils`): which
//! model server a pod runs, how large its weights are, how long its startup
//! took and where it stopped, whether a probe stopped a container, and the
//! small readers of paths and container names in messages. A rule reads
//! these, never another rule's helpers.

use super::Context;
use crate::classes;
use crate::model::*;
use crate::scan::{SigKind, Stage};
use crate::time::human_duration;
use regex::Regex;
use std::sync::LazyLock;

/// The model server a pod runs, recognised from its images, commands and logs.
pub fn model_server(pod: &Pod) -> Option<&'static str> {
    // Most specific first: a NIM image runs vLLM, SGLang's logs mention its
    // triton kernels, KServe's storage-initializer is part of KServe.
    const SERVERS: &[(&str, &str)] = &[
        ("storage-initializer", "KServe storage-initializer"),
        ("nvcr.io/nim", "NIM"),
        ("nim-llm", "NIM"),
        ("nim_llm", "NIM"),
        ("inference microservice", "NIM"),
        ("sglang", "SGLang"),
        ("text-generation-inference", "TGI"),
        ("text-generation-launcher", "TGI"),
        ("text_generation", "TGI"),
        ("tritonserver", "Triton"),
        ("ollama", "Ollama"),
        ("llama-server", "llama.cpp server"),
        ("llama.cpp", "llama.cpp server"),
        ("llama-cpp", "llama.cpp server"),
        ("llama_model_load", "llama.cpp server"),
        ("torchserve", "TorchServe"),
        ("rayproject/ray", "Ray Serve"),
        ("serve run", "Ray Serve"),
        ("servecontroller", "Ray Serve"),
        ("servereplica", "Ray Serve"),
        ("started serve in namespace", "Ray Serve"),
        ("vllm", "vLLM"),
        ("kserve", "KServe"),
        ("triton", "Triton"),
    ];
    let find = |texts: &[String]| {
        SERVERS
            .iter()
            .find(|(k, _)| texts.iter().any(|t| t.contains(k)))
            .map(|(_, name)| *name)
    };
    // What the pod says it runs (images, commands) outranks what its logs mention.
    let mut spec: Vec<String> = Vec::new();
    for c in &pod.containers {
        spec.push(c.image.clone().unwrap_or_default().to_ascii_lowercase());
        spec.push(c.command.join(" ").to_ascii_lowercase());
        spec.push(c.args.join(" ").to_ascii_lowercase());
        spec.push(c.name.to_ascii_lowercase());
    }
    if let Some(s) = find(&spec) {
        return Some(s);
    }
    let mut logs: Vec<String> = Vec::new();
    for l in &pod.logs {
        logs.extend(l.head.iter().take(20).map(|x| x.text.to_ascii_lowercase()));
        logs.extend(l.hits.iter().map(|h| h.line.text.to_ascii_lowercase()));
    }
    find(&logs)
}

/// Whether a catalog entry says the pod went down with its node: graceful
/// node shutdown, a drain, a scale-down or consolidation, an interruption
/// (the family of `catalog/node-lifecycle.yaml`).
pub fn is_node_lifecycle(sig: &crate::scan::Signature) -> bool {
    sig.family == "node-lifecycle"
}

/// The node-lifecycle entry a message matches, if any (an Evicted event
/// whose message is Karpenter's or the autoscaler's is a drain, not node
/// pressure).
pub fn node_lifecycle(message: &str) -> Option<&'static crate::scan::Signature> {
    crate::scan::Catalog::global()
        .classify(message)
        .into_iter()
        .find(|s| is_node_lifecycle(s))
}

/// A tqdm progress bar's `[elapsed<remaining` (`[01:00<05:03`, `[1:02:03<0:10:00`).
static PROGRESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[(\d+):(\d{2})(?::(\d{2}))?<(\d+):(\d{2})(?::(\d{2}))?").expect("static regex")
});

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\d:])(\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?(?:[^\d:]|$)")
        .expect("static regex")
});

static STARTED_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bstarted\b.{0,60}\bin (\d+(?:\.\d+)?) ?(?:s\b|sec|seconds)")
        .expect("static regex")
});

pub fn clock(line: &str) -> Option<i64> {
    let c = CLOCK.captures(line)?;
    let n = |i: usize| c[i].parse::<i64>().ok();
    Some(n(1)? * 3600 + n(2)? * 60 + n(3)?)
}

/// One stage seen in a run's log, with its offset from the run's first
/// timestamped line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StageMark {
    pub stage: Stage,
    pub line: u64,
    pub at_seconds: Option<i64>,
}

/// The startup timeline of each log: the stages reached, in order.
pub fn timeline(log: &crate::scan::LogScan) -> Vec<StageMark> {
    let t0 = log.head.iter().find_map(|l| clock(&l.text));
    let mut out: Vec<StageMark> = Vec::new();
    for h in &log.hits {
        let SigKind::Stage(stage) = h.sig.kind else {
            continue;
        };
        let at = match (t0, clock(&h.line.text)) {
            (Some(a), Some(b)) => Some((b - a + 86400) % 86400),
            _ => None,
        };
        if !out.iter().any(|m| m.stage == stage) {
            out.push(StageMark {
                stage,
                line: h.line.number,
                at_seconds: at,
            });
        }
    }
    out
}

/// How long startup took, measured from the logs: a "started in N seconds"
/// line, or the time from the first line to the server listening.
pub fn startup_seconds(cx: &Context) -> Option<(i64, String)> {
    for l in &cx.pod.logs {
        for h in &l.hits {
            if let Some(c) = STARTED_IN.captures(&h.line.text)
                && let Ok(s) = c[1].parse::<f64>()
            {
                return Some((
                    s.ceil() as i64,
                    format!("`{}`", crate::text::clip(h.line.text.trim(), 80)),
                ));
            }
        }
        let tl = timeline(l);
        if let Some(m) = tl.iter().find(|m| m.stage == Stage::Listening)
            && let Some(at) = m.at_seconds
            && at > 0
        {
            return Some((at, format!("{} line {} reached serving", l.file, m.line)));
        }
        // Died before serving: the run lasted at least this long (its log's
        // span, or the status' start and finish), and a progress bar may say
        // how much loading was left.
        let first = l.head.iter().find_map(|x| clock(&x.text));
        let last = l.tail.iter().rev().find_map(|x| clock(&x.text));
        let span = match (first, last) {
            (Some(a), Some(b)) => {
                Some((b - a + 86400) % 86400).filter(|s| *s > 0 && *s < 86400 / 2)
            }
            _ => None,
        };
        let run = cx
            .focus
            .and_then(|c| c.last_termination())
            .and_then(|t| t.run_seconds())
            .filter(|r| *r > 0);
        let ran = span.into_iter().chain(run).max();
        let stage = tl.last().map(|m| m.stage.describe()).unwrap_or("starting");
        let remaining = l.tail.iter().rev().find_map(|x| {
            PROGRESS.captures(&x.text).map(|c| {
                let n = |i: usize| {
                    c.get(i)
                        .and_then(|m| m.as_str().parse::<i64>().ok())
                        .unwrap_or(0)
                };
                if c.get(6).is_some() {
                    n(4) * 3600 + n(5) * 60 + n(6)
                } else {
                    n(4) * 60 + n(5)
                }
            })
        });
        match (ran, remaining) {
            (Some(r), Some(left)) if left > 0 => {
                return Some((
                    r + left,
                    format!(
                        "{} ran {r}s and its progress bar still showed about {left}s of loading left",
                        l.file
                    ),
                ));
            }
            (Some(r), _) => {
                return Some((
                    r * 2,
                    format!(
                        "{} ran {r}s and was still {stage} when it ended; startup needs more than that, so twice it",
                        l.file
                    ),
                ));
            }
            _ => {}
        }
    }
    None
}

static WEIGHTS_GIB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:loading weights took|model loading took|model weights take|weights (?:took|take)|loaded model weights.{0,20}?)\s*([\d.]+)\s*GiB|([\d.]+)\s*GiB\s+(?:of )?(?:model )?weights").expect("static regex")
});

static PARAMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[-_/ ])(\d{1,3}(?:\.\d)?)[Bb](?:[-_/ .]|$)").expect("static regex")
});

/// The size of the model's weights: from the server's own log line, or
/// estimated from the parameter count in the model's name and its dtype.
pub fn weights_size(pod: &Pod) -> Option<(u64, String)> {
    for l in &pod.logs {
        for line in l
            .hits
            .iter()
            .map(|h| &h.line)
            .chain(l.tail.iter())
            .chain(l.head.iter())
        {
            if let Some(c) = WEIGHTS_GIB.captures(&line.text)
                && let Some(g) = c
                    .get(1)
                    .or(c.get(2))
                    .and_then(|m| m.as_str().parse::<f64>().ok())
            {
                return Some((
                    (g * (1u64 << 30) as f64) as u64,
                    format!("{} line {}", l.file, line.number),
                ));
            }
        }
    }
    // Estimate: parameters x bytes per parameter.
    let mut texts: Vec<String> = Vec::new();
    for c in &pod.containers {
        texts.push([c.command.join(" "), c.args.join(" ")].join(" "));
        texts.extend(c.env.iter().filter_map(|e| e.value.clone()));
    }
    for l in &pod.logs {
        texts.extend(l.head.iter().take(10).map(|x| x.text.clone()));
    }
    let all = texts.join(" ");
    let lower = all.to_ascii_lowercase();
    let bytes_per = if lower.contains("awq")
        || lower.contains("gptq")
        || lower.contains("int4")
        || lower.contains("q4_")
    {
        0.5
    } else if lower.contains("int8") || lower.contains("fp8") || lower.contains("q8_") {
        1.0
    } else if lower.contains("float32") || lower.contains("fp32") {
        4.0
    } else {
        2.0
    };
    let params: f64 = PARAMS
        .captures_iter(&all)
        .filter_map(|c| c[1].parse::<f64>().ok())
        .find(|p| *p >= 0.5 && *p <= 1000.0)?;
    let bytes = params * 1e9 * bytes_per;
    Some((
        bytes as u64,
        format!("estimated from {params}B parameters at {bytes_per} bytes each"),
    ))
}

/// The startup stage the crashed run was in when its log ends.
pub fn death_stage(pod: &Pod) -> Option<(Stage, Option<i64>)> {
    let log = pod
        .logs
        .iter()
        .find(|l| l.kind == crate::scan::LogKind::Previous)
        .or(pod.logs.first())?;
    let tl = timeline(log);
    // The stage of the latest stage line, not of the latest first occurrence.
    let latest = log.hits.iter().rev().find_map(|h| match h.sig.kind {
        SigKind::Stage(s) => Some(s),
        _ => None,
    })?;
    let last = tl.iter().find(|m| m.stage == latest)?;
    if last.stage == Stage::Listening {
        return None;
    }
    let t0 = log.head.iter().find_map(|l| clock(&l.text));
    let end = log.tail.iter().rev().find_map(|l| clock(&l.text));
    let at = match (t0, end) {
        (Some(a), Some(b)) => Some((b - a + 86400) % 86400),
        _ => last.at_seconds,
    };
    Some((last.stage, at))
}

/// Paths in a line (`/mnt/models/cache`).
pub fn paths_in(line: &str) -> Vec<&str> {
    line.split(|c: char| {
        c.is_whitespace() || matches!(c, '\'' | '"' | '(' | ')' | ',' | '`' | '[' | ']')
    })
    .map(|w| w.trim_end_matches([':', '.', ';']))
    .filter(|w| w.starts_with('/') && w.len() > 1)
    .collect()
}

/// The operations that create the directory they name, as the message puts
/// the operation before the path: Go's `*fs.PathError` (`mkdir /var/lib:
/// read-only file system`: Op, Path, Err; golang/go src/io/fs/fs.go
/// PathError.Error, os.Mkdir and os.MkdirAll's Op "mkdir"), Node's system
/// errors (`EROFS: read-only file system, mkdir '/app/cache'`; nodejs/node
/// lib/internal/errors.js uvException: `${code}: ${desc}, ${syscall}
/// '${path}'`), coreutils mkdir (`cannot create directory '/x'`;
/// coreutils/coreutils src/mkdir.c).
const CREATES_DIRECTORY: &[&str] = &["mkdir", "mkdirat", "create directory"];

/// The directory a failed write in `line` wrote into, for `path` (one of
/// `paths_in(line)`): the path itself when the failed operation was
/// creating it (a mkdir), else the directory that holds it. `None` for the
/// root.
pub fn directory_written<'a>(line: &str, path: &'a str) -> Option<&'a str> {
    let before = line
        .find(path)
        .map(|i| line[..i].trim_end_matches(['\'', '"', '`', ' ']))
        .unwrap_or("");
    let creates = CREATES_DIRECTORY.iter().any(|op| {
        let n = before.len().saturating_sub(op.len());
        before
            .get(n..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(op))
            && before[..n]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric())
    });
    let path = path.trim_end_matches('/');
    let dir = if creates {
        path
    } else {
        &path[..path.rfind('/').unwrap_or(0)]
    };
    (!dir.is_empty()).then_some(dir)
}

/// The score of a finding that names more than the generic catalog line it
/// rests on (the volume mount, or the read-only root filesystem, a write
/// failed on): at least `base`, and just above that line's `line_score`.
pub fn above_its_line(base: crate::strength::Strength, line_score: f32) -> f32 {
    use crate::strength::adjust;
    base.score()
        .max((line_score + adjust::MORE_SPECIFIC).min(adjust::SPECIFIC_CEILING))
}

/// A runtime start error that is about mounting a volume, not the entrypoint.
pub fn is_mount_error(msg: &str) -> bool {
    classes::is("start.mount-error", msg)
}

/// `spec.containers{name}` or `"name":` in an event message.
pub fn container_in_event(e: &Event) -> Option<String> {
    let m = &e.message;
    if let Some(i) = m.find("containers{") {
        let rest = &m[i + 11..];
        return rest.split('}').next().map(str::to_string);
    }
    if let Some(rest) = m.strip_prefix('"') {
        return rest.split('"').next().map(str::to_string);
    }
    if let Some(o) = &e.object
        && let Some(i) = o.find("containers{")
    {
        return o[i + 11..].split('}').next().map(str::to_string);
    }
    None
}

pub fn probe_events<'a>(cx: &Context<'a>) -> (Vec<&'a Event>, Vec<&'a Event>, Vec<&'a Event>) {
    let unhealthy = cx.events_with(|e| {
        e.reason == "Unhealthy" && classes::is("probe.liveness-or-startup-failed", &e.message)
    });
    let killing = cx.events_with(|e| {
        (e.reason == "Killing" || e.reason == "Unhealthy")
            && classes::is("probe.restart-after-failure", &e.message)
    });
    let cut = cx.events_with(|e| e.reason == "Unhealthy" && e.message.trim().is_empty());
    (unhealthy, killing, cut)
}

/// Seconds the last run lasted, when that matches the window in which a
/// liveness probe that never passes kills the container.
pub fn run_matches_liveness(c: &Container) -> Option<(i64, &Probe)> {
    let p = c.probe(ProbeKind::Liveness)?;
    let t = c.last_termination()?;
    if t.reason_is("OOMKilled") || !matches!(t.exit(), Some(0) | Some(137) | Some(143) | None) {
        return None;
    }
    let run = t.run_seconds()?;
    let first_kill = (p.initial_delay + p.failure.saturating_sub(1) * p.period) as i64;
    let last_kill = (p.budget() + p.period + 30) as i64;
    (run >= first_kill && run <= last_kill).then_some((run, p))
}

/// Why a probe, rather than the program, may have stopped this container.
pub fn probe_stopped(cx: &Context, c: &Container) -> Option<String> {
    let (unhealthy, killing, cut) = probe_events(cx);
    if !unhealthy.is_empty() || !killing.is_empty() {
        return Some("liveness/startup probe failures are in the events".into());
    }
    if !cut.is_empty() && c.probe(ProbeKind::Liveness).is_some() {
        return Some(
            "Unhealthy events are in the events and the container has a liveness probe".into(),
        );
    }
    run_matches_liveness(c).map(|(run, _)| {
        format!(
            "the run lasted {}, the time a failing liveness probe takes to kill it",
            human_duration(run)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_a_write_wrote_into() {
        fn w(line: &str) -> Option<&str> {
            let p = *paths_in(line).last().expect("a path");
            directory_written(line, p)
        }
        // A mkdir names the directory it creates.
        assert_eq!(
            w("failed to persist: mkdir /opt/agent/run: read-only file system"),
            Some("/opt/agent/run")
        );
        assert_eq!(
            w("Error: EROFS: read-only file system, mkdir '/srv/app/.cache'"),
            Some("/srv/app/.cache")
        );
        // Any other operation writes into the directory that holds the path.
        assert_eq!(
            w("open /etc/agent/agent.lock: read-only file system"),
            Some("/etc/agent")
        );
        assert_eq!(
            w("OSError: [Errno 30] Read-only file system: '/home/app/.config/tool'"),
            Some("/home/app/.config")
        );
        // Never the root, and `somemkdir` is not a mkdir.
        assert_eq!(w("open /agent.pid: read-only file system"), None);
        assert_eq!(w("remkdir /opt/x/y: read-only file system"), Some("/opt/x"));
    }
}
