//! Rollout capacity: whether a rolling update can make progress on the
//! capacity given with `--capacity gpu=8,memory=512Gi`.

use super::{Check, Ctx, Severity};
use crate::Hit;
use crate::k8s::{self, quantity_of};
use crate::locate::Path;
use crashdoc_core::Cause;
use serde_json::Value;

/// An IntOrString of a rolling update, resolved against `replicas` as the
/// deployment controller does (surge rounds up, unavailable rounds down).
fn resolve(v: Option<&Value>, default_pct: u64, replicas: u64, up: bool) -> u64 {
    let pct = |p: u64| {
        let x = replicas * p;
        if up { x.div_ceil(100) } else { x / 100 }
    };
    match v {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse().ok()) {
            Some(p) => pct(p),
            None => s.parse().unwrap_or(0),
        },
        _ => pct(default_pct),
    }
}

/// Per-pod amount of a resource (requests, else limits), summed over containers.
fn per_pod(obj: &crate::input::Object, resource: &str) -> f64 {
    let Some((spec, sp)) = k8s::pod_spec(obj) else {
        return 0.0;
    };
    k8s::containers(spec, &sp, false)
        .iter()
        .map(|c| {
            c.resource("requests", resource)
                .or_else(|| c.resource("limits", resource))
                .and_then(quantity_of)
                .unwrap_or(0.0)
        })
        .sum()
}

fn replicas(obj: &crate::input::Object) -> u64 {
    obj.value
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1)
}

/// The rolling-update finding for `resource` against `capacity`, if it cannot progress.
fn check(
    cx: &Ctx,
    oi: usize,
    resource: &'static str,
    capacity: f64,
    show: &dyn Fn(f64) -> String,
    out: &mut Vec<Hit>,
) {
    let obj = cx.obj(oi);
    if obj.kind != "Deployment" {
        return;
    }
    let g = per_pod(obj, resource);
    if g <= 0.0 {
        return;
    }
    let r = replicas(obj);
    if r == 0 {
        return;
    }
    // Everything else in the input that holds the resource in steady state.
    let total: f64 = *cx.totals.borrow_mut().entry(resource).or_insert_with(|| {
        cx.input
            .objects
            .iter()
            .filter(|o| matches!(o.kind.as_str(), "Deployment" | "StatefulSet"))
            .map(|o| per_pod(o, resource) * replicas(o) as f64)
            .sum()
    });
    let strategy = obj.value.pointer("/spec/strategy");
    if strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate") {
        return;
    }
    let ru = strategy.and_then(|s| s.get("rollingUpdate"));
    let surge = resolve(ru.and_then(|x| x.get("maxSurge")), 25, r, true);
    let unavailable = resolve(ru.and_then(|x| x.get("maxUnavailable")), 25, r, false);
    let path = Path::parse("spec.strategy");
    if total > capacity {
        out.push(Hit {
            path: Path::parse("spec.replicas"),
            container: None,
            message: format!(
                "the input's workloads need {} of {resource} in steady state, more than the {} available: some replicas stay Pending",
                show(total),
                show(capacity)
            ),
            fix: format!("replicas: {}", ((capacity - (total - g * r as f64)) / g).floor().max(0.0) as u64),
        });
        return;
    }
    if unavailable == 0 && surge > 0 && total + g > capacity {
        out.push(Hit {
            path,
            container: None,
            message: format!(
                "a rolling update starts a surge pod first (maxSurge {surge}, maxUnavailable 0) needing {} more of {resource}, but only {} of {} are free: the new pod stays Pending and the rollout never progresses",
                show(g),
                show(capacity - total),
                show(capacity)
            ),
            fix: "strategy:\n  type: RollingUpdate\n  rollingUpdate:\n    maxSurge: 0\n    maxUnavailable: 1   # replace one pod at a time in place".into(),
        });
    }
}

pub static GPU_SURGE: Check = Check {
    id: "rollout/surge-exceeds-gpu-capacity",
    cause: Cause::Unschedulable,
    severity: Severity::Error,
    what: "With `--capacity gpu=N`: a Deployment's rolling update cannot make progress because its surge pod needs GPUs the pool does not have free (maxUnavailable resolves to 0), or the replicas do not fit at all.",
    why: "The deployment controller keeps maxUnavailable old pods at most down; with 0 it must start a new pod first, which needs its own GPUs. On a full pool the new pod stays Pending (`Insufficient nvidia.com/gpu`) and the rollout stalls until its progress deadline: the 9th GPU on an 8-GPU pool.",
    fix: "For GPU workloads on a full pool use maxSurge: 0 and maxUnavailable: 1 (or strategy Recreate), or add capacity for the surge.",
    source: "Kubernetes docs, Deployments: maxSurge (rounded up) and maxUnavailable (rounded down), both 25% by default; pkg/controller/deployment/rolling.go.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 8
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        resources:
          limits: {nvidia.com/gpu: 1}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 8
  strategy:
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        resources:
          limits: {nvidia.com/gpu: 1}
"#,
    fixture_flags: &["capacity=gpu=8"],
    fixture_against: "",
    run: |cx, oi, out| {
        if let Some(cap) = cx.options.capacity.gpu {
            check(
                cx,
                oi,
                "nvidia.com/gpu",
                cap as f64,
                &|x| format!("{x:.0} GPU"),
                out,
            );
        }
    },
};

pub static MEMORY_SURGE: Check = Check {
    id: "rollout/surge-exceeds-memory-capacity",
    cause: Cause::Unschedulable,
    severity: Severity::Error,
    what: "With `--capacity memory=SIZE`: a Deployment's rolling update needs more memory (requests) than the capacity leaves free for its surge pod, with maxUnavailable 0; or the replicas do not fit at all.",
    why: "As for GPUs: the surge pod must be scheduled before any old pod goes; when its memory request does not fit it stays Pending (`Insufficient memory`) and the rollout stalls.",
    fix: "Use maxSurge: 0 and maxUnavailable: 1, lower the request to the measured working set, or add capacity.",
    source: "Kubernetes docs, Deployments (rolling update parameters) and Resource Management (the scheduler places pods by requests).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: cache
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    spec:
      containers:
      - name: cache
        image: ghcr.io/acme/cache:3.0.0
        resources:
          requests: {memory: 64Gi}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: cache
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    spec:
      containers:
      - name: cache
        image: ghcr.io/acme/cache:3.0.0
        resources:
          requests: {memory: 32Gi}
"#,
    fixture_flags: &["capacity=memory=200Gi"],
    fixture_against: "",
    run: |cx, oi, out| {
        if let Some(cap) = cx.options.capacity.memory {
            check(cx, oi, "memory", cap, &|x| k8s::gib(x), out);
        }
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_update_parameters_round_as_the_controller() {
        assert_eq!(resolve(None, 25, 3, false), 0);
        assert_eq!(resolve(None, 25, 3, true), 1);
        assert_eq!(resolve(Some(&Value::from("50%")), 25, 3, false), 1);
        assert_eq!(resolve(Some(&Value::from(2)), 25, 3, false), 2);
    }
}
