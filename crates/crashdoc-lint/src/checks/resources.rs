//! Resources: memory, GPUs, shared memory, scratch space for models.

use super::{Check, Severity, each_container};
use crate::Hit;
use crate::k8s::{self, ContainerRef, gib, quantity_of};
use crashdoc_core::Cause;
use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;

pub(crate) fn gpus(c: &ContainerRef) -> u64 {
    ["limits", "requests"]
        .iter()
        .filter_map(|s| c.resource(s, "nvidia.com/gpu").and_then(quantity_of))
        .fold(0.0f64, f64::max) as u64
}

pub static NO_MEMORY: Check = Check {
    id: "resources/no-memory",
    cause: Cause::NodePressure,
    severity: Severity::Warning,
    what: "A container sets neither a memory request nor a memory limit.",
    why: "Without a request the scheduler places the pod as if it needed no memory, and without a limit it can take the node's; under memory pressure the kubelet evicts the pods that exceed their requests first (BestEffort before Burstable), and the node's OOM killer picks them: restarts that move from node to node.",
    fix: "Set a memory request near the working set and a limit with headroom (often the same value for predictable services).",
    source: "Kubernetes docs, Node-pressure Eviction (eviction order by usage above requests, QoS classes) and Resource Management for Pods and Containers.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        resources:
          requests: {memory: 256Mi}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            if c.resource("limits", "memory").is_some()
                || c.resource("requests", "memory").is_some()
            {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("resources"),
                container: Some(c.name.clone()),
                message: format!("`{}` has no memory request or limit: first to be evicted or OOM-killed when the node runs short", c.name),
                fix: "resources:\n  requests:\n    memory: 256Mi   # the measured working set\n  limits:\n    memory: 512Mi".into(),
            });
        });
    },
};

pub static MODEL_MEMORY: Check = Check {
    id: "resources/model-memory-below-weights",
    cause: Cause::OomKilled,
    severity: Severity::Error,
    what: "A model server's memory limit is smaller than its model's weights, estimated from the model id's parameter count and dtype.",
    why: "Model servers read the weights through host memory before the GPU (safetensors are mapped into the page cache and copied), so the container's memory cgroup must hold them: below that the kernel OOM-kills the server during the load, on every start (OOMKilled, exit 137).",
    fix: "Set the memory limit (and request) to the weights plus 4 GiB for the server, as the oom-killed rule's fix does.",
    source: "crashdoc-core rules::facts::weights_size (parameters x bytes per dtype: 2 for bf16/fp16, 1 for int8/fp8, 0.5 for AWQ/GPTQ/int4) and the oom-killed rule's sizing (weights + 4 GiB).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
        resources:
          limits: {memory: 8Gi, nvidia.com/gpu: 1}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
        resources:
          limits: {memory: 24Gi, nvidia.com/gpu: 1}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let Some(server) = k8s::model_server(c) else {
                return;
            };
            let Some(limit) = c.resource("limits", "memory").and_then(quantity_of) else {
                return;
            };
            let Some((w, how)) = k8s::weights_size(c) else {
                return;
            };
            let w = w as f64;
            if limit >= w {
                return;
            }
            let target = gib(w + 4.0 * GIB);
            out.push(Hit {
                path: c.path.clone().key("resources").key("limits").key("memory"),
                container: Some(c.name.clone()),
                message: format!(
                    "{server} container `{}` has a memory limit of {:.1} GiB for weights of about {:.1} GiB ({how}): OOM-killed while loading",
                    c.name,
                    limit / GIB,
                    w / GIB
                ),
                fix: format!("resources:\n  requests:\n    memory: {target}\n  limits:\n    memory: {target}   # weights + 4 GiB"),
            });
        });
    },
};

fn tolerates_gpu(spec: &Value) -> bool {
    spec.get("tolerations")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                let key = t.get("key").and_then(Value::as_str);
                let op = t.get("operator").and_then(Value::as_str);
                (key.is_none() && op == Some("Exists"))
                    || key.is_some_and(|k| k.contains("gpu") || k.contains("nvidia"))
            })
        })
}

pub static GPU_TOLERATION: Check = Check {
    id: "resources/gpu-without-toleration",
    cause: Cause::Unschedulable,
    severity: Severity::Warning,
    what: "A pod requests `nvidia.com/gpu` but tolerates no GPU taint (`nvidia.com/gpu`, or any key naming gpu).",
    why: "GPU node pools are usually tainted (`nvidia.com/gpu=present:NoSchedule` on GKE, the NVIDIA GPU Operator's and EKS's recommended `nvidia.com/gpu:NoSchedule`) so that other pods stay off them; a GPU pod without the toleration stays Pending (`had untolerated taint {nvidia.com/gpu: ...}`) unless the cluster adds it for you (the ExtendedResourceToleration admission plugin).",
    fix: "Add a toleration for the GPU pool's taint.",
    source: "Kubernetes docs, Taints and Tolerations (example: dedicated GPU nodes, ExtendedResourceToleration); GKE and NVIDIA GPU Operator docs on the nvidia.com/gpu taint.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      containers:
      - name: trainer
        image: ghcr.io/acme/trainer:1.0.0
        resources:
          limits: {nvidia.com/gpu: 1, memory: 32Gi}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      containers:
      - name: trainer
        image: ghcr.io/acme/trainer:1.0.0
        resources:
          limits: {nvidia.com/gpu: 1, memory: 32Gi}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let mut first = None;
        each_container(cx, oi, true, |_, spec, sp, c| {
            if first.is_none() && gpus(c) > 0 && !tolerates_gpu(spec) {
                first = Some((sp.clone(), c.name.clone()));
            }
        });
        if let Some((sp, name)) = first {
            out.push(Hit {
                path: sp,
                container: Some(name.clone()),
                message: format!("`{name}` requests a GPU, but the pod tolerates no GPU taint: Pending on tainted GPU nodes"),
                fix: "tolerations:\n- key: nvidia.com/gpu\n  operator: Exists\n  effect: NoSchedule".into(),
            });
        }
    },
};

fn has_memory_shm(spec: &Value, c: &ContainerRef) -> bool {
    let vols = spec.get("volumes").and_then(Value::as_array);
    let mem_vol = |name: &str| {
        vols.is_some_and(|vs| {
            vs.iter().any(|v| {
                v.get("name").and_then(Value::as_str) == Some(name)
                    && (v.pointer("/emptyDir/medium").and_then(Value::as_str) == Some("Memory")
                        || v.pointer("/hostPath/path").and_then(Value::as_str) == Some("/dev/shm"))
            })
        })
    };
    c.v.get("volumeMounts")
        .and_then(Value::as_array)
        .is_some_and(|ms| {
            ms.iter().any(|m| {
                m.get("mountPath")
                    .and_then(Value::as_str)
                    .map(|p| p.trim_end_matches('/'))
                    == Some("/dev/shm")
                    && m.get("name").and_then(Value::as_str).is_some_and(mem_vol)
            })
        })
        || spec.get("hostIPC").and_then(Value::as_bool) == Some(true)
}

/// `--tensor-parallel-size 4`, `--tp 2`, `--num-shard 2` (TGI), `--tp-size` (SGLang).
fn parallel(c: &ContainerRef) -> u64 {
    let words: Vec<String> = c
        .command_line()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut n = 1;
    for (i, w) in words.iter().enumerate() {
        let (flag, val) = match w.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (w.as_str(), words.get(i + 1).cloned()),
        };
        if matches!(
            flag,
            "--tensor-parallel-size"
                | "-tp"
                | "--tp"
                | "--tp-size"
                | "--num-shard"
                | "--pipeline-parallel-size"
        ) {
            n = n.max(val.and_then(|v| v.parse().ok()).unwrap_or(1));
        }
    }
    if let Some(v) = c.env_value("NUM_SHARD").and_then(|v| v.parse().ok()) {
        n = n.max(v);
    }
    n
}

pub static MULTI_GPU_SHM: Check = Check {
    id: "resources/multi-gpu-without-shm",
    cause: Cause::DiskFull,
    severity: Severity::Error,
    what: "A container serves on several GPUs (2+ nvidia.com/gpu, or a tensor-parallel / shard flag above 1) without a memory-backed /dev/shm (an emptyDir with medium: Memory mounted there, or hostIPC).",
    why: "A container's /dev/shm is 64 MiB. NCCL and PyTorch's worker processes exchange tensors through shared memory; with several GPUs they run out of it at start (`No space left on device`, NCCL `unhandled system error`, a bus error) and the server exits, on every start.",
    fix: "Mount an emptyDir with medium: Memory at /dev/shm, with a sizeLimit (a few GiB, counted against the memory limit).",
    source: "vLLM docs, Using Kubernetes / Docker (shared memory for tensor parallel: `--ipc=host` or `--shm-size`); NCCL docs, troubleshooting shared memory in containers; crashdoc-core's disk-full rule reads the same failure.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "Qwen/Qwen2.5-72B-Instruct", "--tensor-parallel-size", "4"]
        resources:
          limits: {nvidia.com/gpu: 4}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      volumes:
      - name: shm
        emptyDir: {medium: Memory, sizeLimit: 16Gi}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "Qwen/Qwen2.5-72B-Instruct", "--tensor-parallel-size", "4"]
        resources:
          limits: {nvidia.com/gpu: 4}
        volumeMounts:
        - {name: shm, mountPath: /dev/shm}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, spec, _, c| {
            let n = gpus(c).max(parallel(c));
            if n < 2 || has_memory_shm(spec, c) {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("resources"),
                container: Some(c.name.clone()),
                message: format!("`{}` uses {n} GPUs with the default 64 MiB /dev/shm: NCCL runs out of shared memory at start", c.name),
                fix: "volumes:\n- name: shm\n  emptyDir:\n    medium: Memory\n    sizeLimit: 16Gi\n# in the container:\nvolumeMounts:\n- name: shm\n  mountPath: /dev/shm".into(),
            });
        });
    },
};

const CACHE_PATHS: &[&str] = &[
    "/root/.cache",
    "/.cache",
    "/data",
    "/models",
    "/model",
    "/mnt/models",
    "/huggingface",
    "/cache",
    "/home",
];

pub static MODEL_CACHE_EMPTYDIR: Check = Check {
    id: "resources/model-cache-emptydir-unbounded",
    cause: Cause::NodePressure,
    severity: Severity::Warning,
    what: "A model server keeps its model cache on an emptyDir without a sizeLimit and the container sets no ephemeral-storage limit.",
    why: "The weights (tens to hundreds of GiB) land on the node's disk, unaccounted: the node reaches DiskPressure and the kubelet evicts pods, this one included, and the next node downloads them again. With a sizeLimit and an ephemeral-storage request the scheduler places the pod where the space is.",
    fix: "Give the emptyDir a sizeLimit above the weights and request that much ephemeral-storage, or put the cache on a PVC.",
    source: "Kubernetes docs, Local ephemeral storage (emptyDir sizeLimit, ephemeral-storage requests/limits, eviction on DiskPressure); weights from crashdoc-core rules::facts::weights_size.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    spec:
      volumes:
      - name: cache
        emptyDir: {}
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4.0
        env:
        - {name: MODEL_ID, value: meta-llama/Llama-3.1-70B-Instruct}
        volumeMounts:
        - {name: cache, mountPath: /data}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    spec:
      volumes:
      - name: cache
        emptyDir: {sizeLimit: 200Gi}
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4.0
        env:
        - {name: MODEL_ID, value: meta-llama/Llama-3.1-70B-Instruct}
        volumeMounts:
        - {name: cache, mountPath: /data}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, spec, sp, c| {
            let Some(server) = k8s::model_server(c) else {
                return;
            };
            if c.resource("limits", "ephemeral-storage").is_some()
                || c.resource("requests", "ephemeral-storage").is_some()
            {
                return;
            }
            let hf_home = c
                .env_value("HF_HOME")
                .or_else(|| c.env_value("HUGGINGFACE_HUB_CACHE"));
            let Some(vols) = spec.get("volumes").and_then(Value::as_array) else {
                return;
            };
            let Some(mounts) = c.v.get("volumeMounts").and_then(Value::as_array) else {
                return;
            };
            for m in mounts {
                let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
                let name = m.get("name").and_then(Value::as_str).unwrap_or("");
                let cachey = CACHE_PATHS.iter().any(|p| path.starts_with(p))
                    || hf_home
                        .as_deref()
                        .is_some_and(|h| h.starts_with(path) && !path.is_empty());
                if !cachey {
                    continue;
                }
                let Some((vi, v)) = vols
                    .iter()
                    .enumerate()
                    .find(|(_, v)| v.get("name").and_then(Value::as_str) == Some(name))
                else {
                    continue;
                };
                let Some(ed) = v.get("emptyDir") else {
                    continue;
                };
                if ed.get("sizeLimit").is_some()
                    || ed.get("medium").and_then(Value::as_str) == Some("Memory")
                {
                    continue;
                }
                let w = k8s::weights_size(c)
                    .map(|(b, _)| b as f64)
                    .unwrap_or(50.0 * GIB);
                let size = gib(w * 1.2 + 10.0 * GIB);
                out.push(Hit {
                    path: sp.clone().key("volumes").index(vi).key("emptyDir"),
                    container: Some(c.name.clone()),
                    message: format!(
                        "{server} container `{}` caches its model on emptyDir `{name}` ({path}) with no sizeLimit and no ephemeral-storage request: the weights (about {:.0} GiB) fill the node's disk unaccounted",
                        c.name,
                        w / GIB
                    ),
                    fix: format!("emptyDir:\n  sizeLimit: {size}\n# and in the container:\nresources:\n  requests:\n    ephemeral-storage: {size}"),
                });
                return;
            }
        });
    },
};

/// The storage a PersistentVolumeClaim of the input requests, by claim name
/// as seen from `ns` (a claim with no namespace, a chart render's, matches any).
fn claim_storage(cx: &super::Ctx, ns: Option<&str>, claim: &str) -> Option<f64> {
    cx.input
        .objects
        .iter()
        .filter(|o| o.kind == "PersistentVolumeClaim" && o.name == claim)
        .filter(|o| ns.is_none() || o.namespace.is_none() || o.namespace.as_deref() == ns)
        .find_map(|o| {
            o.value
                .pointer("/spec/resources/requests/storage")
                .and_then(quantity_of)
        })
}

pub static MODEL_CACHE_PVC_SMALL: Check = Check {
    id: "resources/model-cache-pvc-too-small",
    cause: Cause::DiskFull,
    severity: Severity::Error,
    what: "A model server keeps its model cache (or weights) on a PersistentVolumeClaim, of the input, of the cluster with `--live`, or a StatefulSet's volumeClaimTemplate, whose requested storage is below the weights (estimated from the model id's parameter count and dtype) plus 10%.",
    why: "The server downloads the weights into the cache before it loads them (Hugging Face's hub cache keeps every file under blobs/, written whole, then links it from snapshots/). On a volume smaller than the weights the download stops with `No space left on device` (OSError errno 28), the server exits, and the next start finds the same full volume: a crash loop that no restart fixes.",
    fix: "Request storage for the weights plus room for the server's other files: the weights x 1.2 + 10 GiB, as the emptyDir check sizes it.",
    source: "huggingface_hub docs, Understand caching (blobs/ holds the files, snapshots/ symlinks to them, downloads complete before they are linked); Kubernetes docs, Persistent Volumes (spec.resources.requests.storage is the claim's size); weights from crashdoc-core rules::facts::weights_size; crashdoc-core's disk-full rule reads the failure.",
    example: r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: models
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 50Gi}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      volumes:
      - name: cache
        persistentVolumeClaim: {claimName: models}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-70B-Instruct"]
        volumeMounts:
        - {name: cache, mountPath: /root/.cache/huggingface}
"#,
    near_miss: r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: models
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 200Gi}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      volumes:
      - name: cache
        persistentVolumeClaim: {claimName: models}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-70B-Instruct"]
        volumeMounts:
        - {name: cache, mountPath: /root/.cache/huggingface}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        let templates = obj
            .value
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array);
        each_container(cx, oi, false, |obj, spec, sp, c| {
            let Some(server) = k8s::model_server(c) else {
                return;
            };
            let Some((w, how)) = k8s::weights_size(c) else {
                return;
            };
            let w = w as f64;
            let hf_home = c
                .env_value("HF_HOME")
                .or_else(|| c.env_value("HUGGINGFACE_HUB_CACHE"));
            let Some(mounts) = c.v.get("volumeMounts").and_then(Value::as_array) else {
                return;
            };
            let vols = spec.get("volumes").and_then(Value::as_array);
            for m in mounts {
                let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
                let name = m.get("name").and_then(Value::as_str).unwrap_or("");
                let cachey = CACHE_PATHS.iter().any(|p| path.starts_with(p))
                    || hf_home
                        .as_deref()
                        .is_some_and(|h| h.starts_with(path) && !path.is_empty());
                if !cachey || name.is_empty() {
                    continue;
                }
                // A pod volume backed by a claim, or a StatefulSet's claim template.
                let volume = vols.and_then(|vs| {
                    vs.iter()
                        .enumerate()
                        .find(|(_, v)| v.get("name").and_then(Value::as_str) == Some(name))
                });
                let (size, field, what) = match volume {
                    Some((vi, v)) => {
                        let Some(claim) = v
                            .pointer("/persistentVolumeClaim/claimName")
                            .and_then(Value::as_str)
                        else {
                            continue;
                        };
                        let Some(size) = claim_storage(cx, obj.namespace.as_deref(), claim) else {
                            continue;
                        };
                        (
                            size,
                            sp.clone().key("volumes").index(vi),
                            format!("PersistentVolumeClaim `{claim}`"),
                        )
                    }
                    None => {
                        let Some((ti, size)) = templates.and_then(|ts| {
                            ts.iter().enumerate().find_map(|(ti, t)| {
                                (t.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                                    .then(|| {
                                        t.pointer("/spec/resources/requests/storage")
                                            .and_then(quantity_of)
                                            .map(|s| (ti, s))
                                    })
                                    .flatten()
                            })
                        }) else {
                            continue;
                        };
                        (
                            size,
                            crate::locate::Path::parse("spec.volumeClaimTemplates")
                                .index(ti)
                                .key("spec")
                                .key("resources")
                                .key("requests")
                                .key("storage"),
                            format!("volumeClaimTemplate `{name}`"),
                        )
                    }
                };
                if size >= w * 1.1 {
                    continue;
                }
                let want = gib(w * 1.2 + 10.0 * GIB);
                out.push(Hit {
                    path: field,
                    container: Some(c.name.clone()),
                    message: format!(
                        "{server} container `{}` keeps its model cache ({path}) on {what} of {:.0} GiB, for weights of about {:.0} GiB ({how}): the download fills the volume and the server exits, on every start",
                        c.name,
                        size / GIB,
                        w / GIB
                    ),
                    fix: format!(
                        "resources:\n  requests:\n    storage: {want}   # weights x 1.2 + 10 GiB (a bound claim grows only if its StorageClass sets allowVolumeExpansion)"
                    ),
                });
                return;
            }
        });
    },
};
