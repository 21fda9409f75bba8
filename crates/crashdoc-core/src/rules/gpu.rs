//! GPUs and model servers: GPU memory, GPU availability, and the startup of
//! vLLM, TGI, Triton, Ollama, llama.cpp, SGLang and friends.

use super::facts::{death_stage, model_server};
use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::scan::Stage;
use crate::strength::{Strength, adjust};
use regex::Regex;
use std::sync::LazyLock;

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
            only: None,
        },
        Outrank {
            cause: Cause::Terminated,
            why: "the logs show the GPU memory failure that kept the server from becoming ready; the SIGTERM that followed is its consequence",
            only: None,
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
        let when = if classes::is("gpu-oom.cuda-graphs", l)
            || s.log_has("gpu-oom.cuda-graphs-in-log")
        {
            " while capturing CUDA graphs"
        } else if classes::is("gpu-oom.kv-cache", l) || s.log_has("ms.llamacpp-kv-cache-alloc") {
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
            Finding::new(Cause::GpuUnavailable, Strength::Strong.score(), format!("the pod requests nvidia.com/gpu but node {} advertises none: its device plugin is missing or unhealthy", n.name))
                .container(cx.focus_name())
                .cite(&g.cite)
                .fix(format!("check the NVIDIA device plugin (or GPU operator) pod on node {}: restart it, then delete the rejected pod so it is scheduled again", n.name))
                .cmd(format!("kubectl describe node {}", n.name))
                .cmd("kubectl get pods -A -o wide | grep -i -E 'nvidia-device-plugin|gpu-operator'".to_string()),
        );
    }
    if let Some(e) = cx
        .events_with(|e| e.reason == "FailedScheduling" && classes::is("schedule.gpu", &e.message))
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
                Finding::new(Cause::GpuUnavailable, Strength::Decisive.score(), format!("the kubelet reports the device allocated to {} as unhealthy ({})", super::who(Some(&c.name)), d.value))
                    .container(Some(&c.name))
                    .cite(&d.cite)
                    .fix("move the pod off the node (cordon it) and have the GPU checked; the device plugin marks a GPU unhealthy after XID errors or a lost device")
                    .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.status.containerStatuses[*].allocatedResourcesStatus}}'", cx.pod_name()))),
            );
        }
    }
    if let Some(e) = cx
        .events_with(|e| classes::is("admission.device-allocate-failed", &e.message))
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
