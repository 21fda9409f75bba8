//! GPUs and model servers: GPU memory, GPU availability, and the startup of
//! vLLM, TGI, Triton, Ollama, llama.cpp, SGLang and friends.

use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::model::*;
use crate::scan::{SigKind, Stage};
use crate::strength::{Strength, adjust};
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

fn clock(line: &str) -> Option<i64> {
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

pub static GPU_OOM: Rule = Rule {
    cause: Cause::GpuOom,
    doc: RuleDoc {
        what: "The GPU ran out of memory (not the container's RAM limit): CUDA out of memory, a KV cache that does not fit, CUDA graph capture without room.",
        why: "A model server sizes its KV cache from gpu-memory-utilization and the model's context length; when weights + activations + KV cache + CUDA graphs exceed the GPU, it fails at startup with exit 1 and does the same on every restart.",
        evidence: "`CUDA out of memory`, `torch.OutOfMemoryError`, `CUDA error: out of memory`, `No available memory for the cache blocks`, `The model's max seq len ... is larger than the maximum number of tokens that can be stored in KV cache`, device memory errors of other accelerators; exit 1, not 137.",
        example: "RuntimeError: CUDA error: out of memory (during cudagraph capture)",
        fix: "Lower --gpu-memory-utilization (leaving room for CUDA graphs and other processes), lower --max-model-len or --max-num-seqs, use --enforce-eager to skip CUDA graphs, quantize, or shard across more GPUs (--tensor-parallel-size).",
        false_positives: "A process already holding the GPU (a leftover pod, another container sharing it) causes the same message: check nvidia-smi on the node.",
    },
    outranks: &[
        Outrank {
            cause: Cause::ProbeKill,
            why: "the logs show the GPU memory failure that kept the server from becoming ready; the probe kill that followed is its consequence",
        },
        Outrank {
            cause: Cause::Terminated,
            why: "the logs show the GPU memory failure that kept the server from becoming ready; the SIGTERM that followed is its consequence",
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[Place::Log],
    check: check_gpu_oom,
};

static GPU_UTIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"--gpu[-_]memory[-_]utilization[= ](0?\.\d+|1(?:\.0)?)").expect("static regex")
});
static MAX_TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"maximum number of tokens that can be stored in KV cache \((\d+)\)|estimated maximum model length is (\d+)")
        .expect("static regex")
});

fn check_gpu_oom(cx: &Context) -> Vec<Finding> {
    let server = model_server(cx.pod);
    let Some(mut f) = cx.from_logs(Cause::GpuOom, |s| {
        let l = &s.hit.line.text;
        let when = if l.contains("cudagraph")
            || l.contains("cuda_graph")
            || l.contains("capture")
            || s.log.is_some_and(|l| {
                l.hits.iter().any(|h| {
                    h.line.text.contains("cuda.graph") || h.line.text.contains("cudagraph")
                })
            }) {
            " while capturing CUDA graphs"
        } else if l.to_ascii_lowercase().contains("kv cache")
            || l.contains("cache blocks")
            || s.log.is_some_and(|l| {
                l.hits.iter().any(|h| {
                    h.line
                        .text
                        .contains("failed to allocate buffer for kv cache")
                })
            })
        {
            " sizing the KV cache"
        } else {
            ""
        };
        format!(
            "the GPU ran out of memory{when} ({}), not the container's RAM limit",
            server.unwrap_or("the program")
        )
    }) else {
        return vec![];
    };
    // The stage the run was in when it failed names the memory that ran out.
    if !f.summary.contains("CUDA graphs")
        && death_stage(cx.pod).is_some_and(|(st, _)| st == Stage::CudaGraphs)
    {
        f.summary = f.summary.replacen(
            "out of memory",
            "out of memory while capturing CUDA graphs",
            1,
        );
    }
    let args: String = cx
        .pod
        .containers
        .iter()
        .map(|c| [c.command.join(" "), c.args.join(" ")].join(" "))
        .collect::<Vec<_>>()
        .join(" ");
    let fits = f.evidence.iter().find_map(|e| {
        MAX_TOKENS
            .captures(&e.text)
            .and_then(|c| c.get(1).or(c.get(2)).map(|m| m.as_str().to_string()))
    });
    match server {
        Some("TGI") => {
            f = f
                .fix("lower --max-batch-prefill-tokens (the warmup allocates for it) and --max-total-tokens / --max-input-tokens so warmup fits the GPU")
                .fix("or shard the model across more GPUs with --num-shard, or quantize it (--quantize)");
        }
        Some("llama.cpp server") => {
            f = f
                .fix("lower the context size (-c / --ctx-size): the KV cache grows with it; or quantize the cache (--cache-type-k q8_0 --cache-type-v q8_0)")
                .fix("or offload fewer layers to the GPU (-ngl) so weights and KV cache fit");
        }
        Some("SGLang") => {
            f = f.fix("raise --mem-fraction-static (the share of GPU memory for weights and KV cache) or lower --context-length / --max-running-requests");
        }
        _ => {
            if let Some(c) = GPU_UTIL.captures(&args) {
                let u: f64 = c[1].parse().unwrap_or(0.9);
                f = f.fix(format!("lower --gpu-memory-utilization from {u} to {:.2}, leaving room for CUDA graphs and activations", (u - 0.1).max(0.5)));
            } else if server == Some("vLLM") || server == Some("NIM") {
                f = f.fix("lower --gpu-memory-utilization (default 0.9) to 0.8, leaving room for CUDA graphs and activations");
            }
            match &fits {
                Some(n) => {
                    f = f.fix(format!(
                        "set --max-model-len {n} (what fits in the KV cache) or less"
                    ))
                }
                None => f = f.fix("lower --max-model-len / --max-num-seqs so the KV cache fits"),
            }
            if f.summary.contains("CUDA graphs") {
                f = f.fix("or run with --enforce-eager to skip CUDA graph capture");
            }
            f = f.fix(
                "or use a quantized model, or shard it across more GPUs (--tensor-parallel-size)",
            );
        }
    }
    let c = f.container.clone();
    vec![
        f.cmd(cx.logs_previous_cmd(c.as_deref()))
            .cmd(cx.kubectl(&format!("exec {} -- nvidia-smi", cx.pod_name()))),
    ]
}

pub static GPU_UNAVAILABLE: Rule = Rule {
    cause: Cause::GpuUnavailable,
    doc: RuleDoc {
        what: "No usable GPU: the container got none, the node's device plugin or driver is broken, or the image's CUDA is newer than the node's driver.",
        why: "CUDA initialisation fails at start (no device, driver too old, NVML not loadable), the same way on every restart on that node.",
        evidence: "`no CUDA-capable device is detected`, `Found no NVIDIA driver`, `CUDA driver version is insufficient for CUDA runtime version`, `The NVIDIA driver on your system is too old`, `Failed to initialize NVML`, `nvidia-container-cli` errors, a driver container failing to build nvidia.ko; a GPU request against a node that advertises 0 GPUs.",
        example: "RuntimeError: The NVIDIA driver on your system is too old (found version 12040).",
        fix: "Use an image whose CUDA version the node's driver supports (or upgrade the driver), request nvidia.com/gpu so the device is mounted, fix the device plugin / GPU operator on the node (a node that advertises nvidia.com/gpu 0 has an unhealthy plugin).",
        false_positives: "A pod Pending for `Insufficient nvidia.com/gpu` is unschedulable first; the GPU shortage is noted as second.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_gpu_unavailable,
};

static FOUND_VERSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"found version (\d{4,5})").expect("static regex"));

fn check_gpu_unavailable(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(mut f) = cx.from_logs(Cause::GpuUnavailable, |s| {
        let mut m = s.hit.sig.meaning.to_string();
        if let Some(c) = FOUND_VERSION.captures(&s.hit.line.text)
            && let Ok(v) = c[1].parse::<u32>()
        {
            m.push_str(&format!(
                " (the driver supports CUDA up to {}.{})",
                v / 1000,
                v % 1000 / 10
            ));
        }
        m
    }) {
        let image = cx.pod.containers.iter().find_map(|c| c.image.clone());
        if f.summary.contains("older") {
            f = f.fix(format!(
                "use an image built for a CUDA version the node's driver supports{}, or upgrade the node's driver",
                image.map(|i| format!(" (the image is {i})")).unwrap_or_default()
            ));
        } else if f.summary.contains("kernel driver") {
            f = f.fix("use a driver version (or precompiled driver image) that supports the node's kernel; the GPU operator's driver container must match the kernel");
        } else {
            f = f.fix("request nvidia.com/gpu in the container's limits so the device plugin mounts the GPU, and check the device plugin on the node");
        }
        // A pod that assumes a GPU it never asked for.
        let spec_known = cx
            .pod
            .containers
            .iter()
            .any(|c| !c.limits.is_empty() || !c.requests.is_empty() || c.image.is_some());
        let asks_gpu = cx.pod.containers.iter().any(|c| {
            c.limits
                .keys()
                .chain(c.requests.keys())
                .any(|k| k.contains("gpu"))
        });
        if spec_known && !asks_gpu && f.summary.contains("no GPU") {
            f.summary
                .push_str("; the pod requests no nvidia.com/gpu, so no GPU is mounted into it");
            f = f.fix("add `nvidia.com/gpu: 1` to the container's resources.limits (and a toleration for the GPU nodes' taint if they have one)");
            f.score = (f.score + adjust::REPEATED).min(adjust::CEILING);
        }
        if let Some(n) = &cx.pod.node_name {
            f = f.cmd(format!("kubectl describe node {n} | grep -i -A3 nvidia"));
        }
        out.push(f.cmd(cx.kubectl("get pods -A -l app=nvidia-device-plugin-daemonset")));
    }
    // A GPU request on a node that advertises none.
    let wants_gpu = cx
        .pod
        .containers
        .iter()
        .find_map(|c| c.limits.get("nvidia.com/gpu"));
    if let (Some(g), Some(n)) = (wants_gpu, &cx.pod.node)
        && n.allocatable.get("nvidia.com/gpu").is_none_or(|v| v == "0")
    {
        out.push(
            Finding::new(Cause::GpuUnavailable, 0.8, format!("the pod requests nvidia.com/gpu but node {} advertises none: its device plugin is missing or unhealthy", n.name))
                .container(cx.focus_name())
                .cite(&g.cite)
                .fix(format!("check the NVIDIA device plugin (or GPU operator) pod on node {}: restart it, then delete the rejected pod so it is scheduled again", n.name))
                .cmd(format!("kubectl describe node {}", n.name))
                .cmd("kubectl get pods -A -o wide | grep -i -E 'nvidia-device-plugin|gpu-operator'".to_string()),
        );
    }
    if let Some(e) = cx
        .events_with(|e| e.reason == "FailedScheduling" && e.message.contains("nvidia.com/gpu"))
        .first()
    {
        out.push(
            Finding::new(
                Cause::GpuUnavailable,
                Strength::Weak.score(),
                "no node has a free nvidia.com/gpu for the pod",
            )
            .container(cx.focus_name())
            .cite(&e.cite),
        );
    }
    for c in &cx.pod.containers {
        if let Some(d) = c.unhealthy_devices.first() {
            out.push(
                Finding::new(Cause::GpuUnavailable, 0.88, format!("the kubelet reports the device allocated to {} as unhealthy ({})", super::who(Some(&c.name)), d.value))
                    .container(Some(&c.name))
                    .cite(&d.cite)
                    .fix("move the pod off the node (cordon it) and have the GPU checked; the device plugin marks a GPU unhealthy after XID errors or a lost device")
                    .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.status.containerStatuses[*].allocatedResourcesStatus}}'", cx.pod_name()))),
            );
        }
    }
    if let Some(e) = cx
        .events_with(|e| {
            e.message.contains("UnexpectedAdmissionError")
                || e.message.contains("Allocate failed due to")
        })
        .first()
    {
        out.push(
            Finding::new(
                Cause::GpuUnavailable,
                Strength::Strong.score(),
                "the kubelet could not allocate the GPU to the pod (device plugin error)",
            )
            .container(cx.focus_name())
            .cite(&e.cite)
            .fix("check/restart the NVIDIA device plugin (or GPU operator) on that node, then delete the rejected pod so its controller recreates it")
            .cmd("kubectl get pods -A -o wide | grep -i -E 'nvidia-device-plugin|gpu-operator'".to_string()),
        );
    }
    out
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
