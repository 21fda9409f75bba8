//! Probes: what makes the kubelet kill a container that would have started.

use super::{Check, Severity, each_container};
use crate::Hit;
use crate::k8s::{self, ContainerRef};
use crashdoc_core::Cause;
use serde_json::Value;

/// A probe's numbers, with the API defaults (core/v1 Probe: initialDelaySeconds 0,
/// timeoutSeconds 1, periodSeconds 10, failureThreshold 3).
pub(crate) struct Numbers {
    pub initial_delay: u64,
    pub timeout: u64,
    pub period: u64,
    pub failure: u64,
}

pub(crate) fn numbers(p: &Value) -> Numbers {
    let n = |k: &str, d: u64| p.get(k).and_then(Value::as_u64).unwrap_or(d);
    Numbers {
        initial_delay: n("initialDelaySeconds", 0),
        timeout: n("timeoutSeconds", 1),
        period: n("periodSeconds", 10).max(1),
        failure: n("failureThreshold", 3).max(1),
    }
}

impl Numbers {
    /// Seconds after start at which a container that never passes is killed.
    pub fn budget(&self) -> u64 {
        self.initial_delay + self.period * self.failure
    }
}

/// The probe's handler as YAML lines indented by two (for the fixes).
fn handler_yaml(p: &Value) -> String {
    for h in ["httpGet", "tcpSocket", "grpc", "exec"] {
        if let Some(v) = p.get(h) {
            let body = serde_json::to_string(v).unwrap_or_default();
            return format!("  {h}: {body}");
        }
    }
    "  httpGet: {path: /health, port: 8080}".to_string()
}

fn startup_fix(p: &Value, seconds: u64) -> String {
    let period = 10;
    let threshold = seconds.div_ceil(period).max(3);
    format!(
        "startupProbe:\n{}\n  periodSeconds: {period}\n  failureThreshold: {threshold}   # {}s before the liveness probe takes over",
        handler_yaml(p),
        threshold * period
    )
}

pub static LIVENESS_WITHOUT_STARTUP: Check = Check {
    id: "probe/liveness-without-startup",
    cause: Cause::ProbeKill,
    severity: Severity::Error,
    what: "A model server that loads its model before serving (vLLM, TGI, Triton, SGLang, llama.cpp, NIM, ...; not Ollama, which loads on the first request) has a liveness probe, no startupProbe, and a liveness budget (initialDelaySeconds + periodSeconds x failureThreshold) under 10 minutes.",
    why: "A model server answers its health endpoint only once the weights are loaded, which takes minutes (tens of GiB read, then copied to the GPU). The liveness probe fails during the whole load and the kubelet kills the container before it is up, on every start: CrashLoopBackOff with exit 137 or 143 and `Liveness probe failed` events. A startupProbe holds the liveness probe off until the server has started once.",
    fix: "Add a startupProbe on the same endpoint whose budget covers the load: 10 s per GiB of weights (about 100 MB/s from a volume or the hub), at least 10 minutes. Keep the liveness probe for the running server.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes (startupProbe disables the other probes until it succeeds; defaults periodSeconds 10, failureThreshold 3); model servers recognised as in crashdoc-core rules::facts::model_server; weights estimated by rules::facts::weights_size (parameters x bytes per dtype), the knowledge the oom-killed rule uses.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: llm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-70B-Instruct"]
        livenessProbe:
          httpGet: {path: /health, port: 8000}
          initialDelaySeconds: 60
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: llm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "meta-llama/Llama-3.1-70B-Instruct"]
        startupProbe:
          httpGet: {path: /health, port: 8000}
          failureThreshold: 180
        livenessProbe:
          httpGet: {path: /health, port: 8000}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let (Some(live), None) = (c.probe("livenessProbe"), c.probe("startupProbe")) else {
                return;
            };
            let Some(server) = k8s::model_server(c) else {
                return;
            };
            // Ollama serves at once and loads a model on its first request.
            if server == "Ollama" {
                return;
            }
            let n = numbers(live);
            let budget = n.budget();
            let weights = k8s::weights_size(c);
            let need = weights
                .as_ref()
                .map(|(b, _)| (*b as f64 / (1u64 << 30) as f64 * 10.0) as u64)
                .unwrap_or(0)
                .max(600);
            if budget >= 600 {
                return;
            }
            let w = weights
                .map(|(b, how)| {
                    format!(
                        "; its weights are about {:.0} GiB ({how})",
                        b as f64 / (1u64 << 30) as f64
                    )
                })
                .unwrap_or_default();
            out.push(Hit {
                path: c.path.clone().key("livenessProbe"),
                container: Some(c.name.clone()),
                message: format!(
                    "{server} container `{}` has a liveness probe that kills it {budget}s after start ({}s + {}s x {}) and no startupProbe{w}: it is killed while loading the model, on every start",
                    c.name, n.initial_delay, n.period, n.failure
                ),
                fix: startup_fix(live, need),
            });
        });
    },
};

pub static JVM_LIVENESS_WITHOUT_STARTUP: Check = Check {
    id: "probe/jvm-liveness-without-startup",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A JVM server (Spring Boot, Tomcat, Keycloak, Elasticsearch, Kafka, ...) has a liveness probe with a budget under 2 minutes and no startupProbe.",
    why: "JVM servers start in tens of seconds to minutes (class loading, JIT, migrations, cache warm-up), slower still under a CPU limit. A liveness budget shorter than the start kills the container before it serves, on every start.",
    fix: "Add a startupProbe on the same endpoint allowing 5 minutes; keep the liveness probe short for the running server.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes (the startupProbe is the documented protection of slow-starting containers); Spring Boot reference, Kubernetes probes (liveness/readiness groups are separate from startup).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  template:
    spec:
      containers:
      - name: app
        image: eclipse-temurin:21-jre
        command: ["java", "-jar", "/app/orders.jar"]
        livenessProbe:
          httpGet: {path: /actuator/health/liveness, port: 8080}
          initialDelaySeconds: 30
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  template:
    spec:
      containers:
      - name: app
        image: eclipse-temurin:21-jre
        command: ["java", "-jar", "/app/orders.jar"]
        livenessProbe:
          httpGet: {path: /actuator/health/liveness, port: 8080}
          initialDelaySeconds: 150
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let (Some(live), None) = (c.probe("livenessProbe"), c.probe("startupProbe")) else {
                return;
            };
            if k8s::model_server(c).is_some() || !k8s::jvm(c) {
                return;
            }
            let n = numbers(live);
            if n.budget() >= 120 {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("livenessProbe"),
                container: Some(c.name.clone()),
                message: format!(
                    "JVM container `{}` is killed {}s after start if not yet healthy, and has no startupProbe",
                    c.name,
                    n.budget()
                ),
                fix: startup_fix(live, 300),
            });
        });
    },
};

pub static INITIAL_DELAY_AS_STARTUP_GUARD: Check = Check {
    id: "probe/initial-delay-as-startup-guard",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A liveness probe uses a large initialDelaySeconds (60 s or more) instead of a startupProbe.",
    why: "A fixed delay is a guess at the start time: a slower start (a cold cache, a bigger model, a busy node, a CPU limit) is killed when the delay runs out, on every start, while a fast start is left unwatched for the whole delay. A startupProbe waits exactly as long as the start takes.",
    fix: "Replace the delay with a startupProbe whose budget is at least the delay, and drop initialDelaySeconds from the liveness probe.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes, \"Protect slow starting containers with startup probes\".",
    example: r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: search
spec:
  template:
    spec:
      containers:
      - name: indexer
        image: ghcr.io/acme/indexer:2.4.1
        livenessProbe:
          tcpSocket: {port: 9000}
          initialDelaySeconds: 180
"#,
    near_miss: r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: search
spec:
  template:
    spec:
      containers:
      - name: indexer
        image: ghcr.io/acme/indexer:2.4.1
        livenessProbe:
          tcpSocket: {port: 9000}
          initialDelaySeconds: 15
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let (Some(live), None) = (c.probe("livenessProbe"), c.probe("startupProbe")) else {
                return;
            };
            let n = numbers(live);
            if n.initial_delay < 60
                || k8s::model_server(c).is_some()
                || (k8s::jvm(c) && n.budget() < 120)
            {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("livenessProbe").key("initialDelaySeconds"),
                container: Some(c.name.clone()),
                message: format!(
                    "container `{}` guards its start with initialDelaySeconds: {}; a start slower than {}s is killed on every try",
                    c.name,
                    n.initial_delay,
                    n.budget()
                ),
                fix: format!(
                    "{}\nlivenessProbe:\n  initialDelaySeconds: 0",
                    startup_fix(live, n.budget() * 2)
                ),
            });
        });
    },
};

/// A probe on an endpoint meant for readiness: a path naming `ready`, or an exec command.
fn readiness_endpoint(p: &Value) -> bool {
    p.pointer("/httpGet/path")
        .and_then(Value::as_str)
        .is_some_and(|x| x.to_ascii_lowercase().contains("ready"))
        || p.get("exec").is_some()
}

fn same_handler(a: &Value, b: &Value) -> bool {
    ["httpGet", "tcpSocket", "grpc", "exec"]
        .iter()
        .any(|h| a.get(h).is_some() && a.get(h) == b.get(h))
}

pub static LIVENESS_EQUALS_READINESS: Check = Check {
    id: "probe/liveness-equals-readiness",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "The liveness probe is identical to the readiness probe (same handler and the same numbers) on a readiness endpoint (a path naming `ready`, or an exec command).",
    why: "Readiness answers \"can I take traffic now\" and usually fails while a dependency is down or the server is saturated; that is meant to take the pod out of the Service, not to restart it. An identical liveness probe restarts every replica on the same dependency outage or load spike, which turns a brownout into a crash loop.",
    fix: "Point liveness at a cheap endpoint that only says the process is alive (no dependency checks), with a larger failureThreshold than readiness.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes (liveness restarts the container, readiness removes the pod from Service endpoints).",
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
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 5
        livenessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 5
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
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 5
        livenessProbe:
          httpGet: {path: /livez, port: 8080}
          periodSeconds: 5
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let (Some(live), Some(ready)) = (c.probe("livenessProbe"), c.probe("readinessProbe"))
            else {
                return;
            };
            if live != ready || !same_handler(live, ready) || !readiness_endpoint(live) {
                return;
            }
            let n = numbers(live);
            out.push(Hit {
                path: c.path.clone().key("livenessProbe"),
                container: Some(c.name.clone()),
                message: format!(
                    "container `{}`: liveness is the readiness probe; a dependency outage or overload restarts every replica",
                    c.name
                ),
                fix: format!(
                    "livenessProbe:\n  httpGet: {{path: /livez, port: {}}}   # an endpoint that checks the process only\n  periodSeconds: {}\n  failureThreshold: {}",
                    port_text(live).unwrap_or_else(|| "8080".into()),
                    n.period,
                    (n.failure * 2).max(6)
                ),
            });
        });
    },
};

fn port_of(p: &Value) -> Option<&Value> {
    ["httpGet", "tcpSocket", "grpc"]
        .iter()
        .find_map(|h| p.get(h)?.get("port"))
}

fn port_text(p: &Value) -> Option<String> {
    port_of(p).map(k8s::scalar_string)
}

fn declared_ports(c: &ContainerRef) -> Vec<(Option<String>, u64)> {
    c.v.get("ports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p.get("name").and_then(Value::as_str).map(str::to_string),
                        p.get("containerPort").and_then(Value::as_u64).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const KILLING: [&str; 2] = ["livenessProbe", "startupProbe"];

pub static UNKNOWN_PORT_NAME: Check = Check {
    id: "probe/unknown-port-name",
    cause: Cause::ProbeKill,
    severity: Severity::Error,
    what: "A liveness or startup probe names a port (`port: http`) that no containerPort of the container is named.",
    why: "The API server accepts any valid port name; the kubelet resolves it against the container's ports when it probes, finds none, and the probe fails every time. A failing liveness or startup probe kills the container: it crash-loops although the server is fine.",
    fix: "Name the containerPort as the probe does, or give the probe the port number.",
    source: "Kubernetes source: the kubelet's named-port lookup (ResolveContainerPort: container.Ports searched by Name, else `couldn't find port: %v in %v`); API validation (pkg/apis/core/validation) only checks the name's syntax (IANA_SVC_NAME).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27.2
        ports:
        - containerPort: 80
          name: web
        livenessProbe:
          httpGet: {path: /, port: http}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27.2
        ports:
        - containerPort: 80
          name: http
        livenessProbe:
          httpGet: {path: /, port: http}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let ports = declared_ports(c);
            for kind in KILLING {
                let Some(p) = c.probe(kind) else { continue };
                let Some(Value::String(name)) = port_of(p) else {
                    continue;
                };
                if name.parse::<u64>().is_ok()
                    || ports.iter().any(|(n, _)| n.as_deref() == Some(name))
                {
                    continue;
                }
                let named: Vec<String> = ports
                    .iter()
                    .filter_map(|(n, num)| n.as_ref().map(|n| format!("{n} ({num})")))
                    .collect();
                let fix_port = ports
                    .first()
                    .map(|(_, n)| n.to_string())
                    .unwrap_or_else(|| "8080".into());
                out.push(Hit {
                    path: c.path.clone().key(kind),
                    container: Some(c.name.clone()),
                    message: format!(
                        "the {kind} of `{}` probes port `{name}`, which no containerPort is named ({}): the probe fails every time and kills the container",
                        c.name,
                        if named.is_empty() { "the container names no port".to_string() } else { format!("named: {}", named.join(", ")) }
                    ),
                    fix: format!(
                        "ports:\n- containerPort: {fix_port}\n  name: {name}\n# or, in the probe: port: {fix_port}"
                    ),
                });
            }
        });
    },
};

pub static PORT_NOT_DECLARED: Check = Check {
    id: "probe/port-not-declared",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A liveness or startup probe targets a port number that is not among the container's declared containerPorts (when it declares some).",
    why: "containerPort is informational, so this is not always wrong; but a probe on another port than the ones the container says it serves is most often a leftover of a port change, and a probe on a closed port fails every time and kills the container.",
    fix: "Probe one of the declared ports, or declare the port the server really listens on.",
    source: "Kubernetes API reference, Container.ports (\"primarily informational\"); probe semantics from the Kubernetes probes documentation.",
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
        ports:
        - containerPort: 8080
        livenessProbe:
          httpGet: {path: /livez, port: 8081}
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
        ports:
        - containerPort: 8080
        - containerPort: 8081
        livenessProbe:
          httpGet: {path: /livez, port: 8081}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let ports = declared_ports(c);
            if ports.is_empty() {
                return;
            }
            for kind in KILLING {
                let Some(p) = c.probe(kind) else { continue };
                let Some(n) =
                    port_of(p).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                else {
                    continue;
                };
                if ports.iter().any(|(_, num)| *num == n) {
                    continue;
                }
                let nums: Vec<String> = ports.iter().map(|(_, n)| n.to_string()).collect();
                out.push(Hit {
                    path: c.path.clone().key(kind),
                    container: Some(c.name.clone()),
                    message: format!(
                        "the {kind} of `{}` probes port {n}, but the container declares {}",
                        c.name,
                        nums.join(", ")
                    ),
                    fix: format!(
                        "{kind}:\n  # probe a port the server listens on\n  port: {}",
                        nums[0]
                    ),
                });
            }
        });
    },
};

fn heavy(c: &ContainerRef) -> Option<&'static str> {
    k8s::model_server(c).or_else(|| k8s::jvm(c).then_some("JVM"))
}

pub static SHORT_TIMEOUT_HEAVY: Check = Check {
    id: "probe/short-timeout-heavy",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A liveness probe keeps timeoutSeconds at 1 (the default) on a heavy server: a model server or a JVM.",
    why: "A model server busy with a batch (Python's event loop held by tokenisation or scheduling) or a JVM in a garbage-collection pause answers its health endpoint late; with a 1-second timeout, three slow answers in a row kill a healthy, loaded server, and it then pays its whole start again.",
    fix: "Raise timeoutSeconds to 5 or more and failureThreshold to 3 or more.",
    source: "Kubernetes probes documentation (timeoutSeconds defaults to 1); model servers as recognised by crashdoc-core rules::facts::model_server, the same fix the probe-kill rule gives.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4.0
        startupProbe:
          httpGet: {path: /health, port: 80}
          failureThreshold: 120
        livenessProbe:
          httpGet: {path: /health, port: 80}
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4.0
        startupProbe:
          httpGet: {path: /health, port: 80}
          failureThreshold: 120
        livenessProbe:
          httpGet: {path: /health, port: 80}
          timeoutSeconds: 5
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let Some(live) = c.probe("livenessProbe") else {
                return;
            };
            if live.get("exec").is_some() {
                return;
            }
            let Some(what) = heavy(c) else { return };
            let n = numbers(live);
            if n.timeout > 1 {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("livenessProbe"),
                container: Some(c.name.clone()),
                message: format!(
                    "{what} container `{}`: its liveness probe gives up after {}s; a busy server misses it and is killed",
                    c.name, n.timeout
                ),
                fix: format!(
                    "livenessProbe:\n  timeoutSeconds: 5\n  failureThreshold: {}",
                    n.failure.max(3)
                ),
            });
        });
    },
};

const RUNTIMES: &[&str] = &[
    "python", "python3", "python2", "java", "node", "ruby", "php", "perl", "dotnet", "npm", "npx",
    "bundle", "rails", "pwsh", "Rscript", "julia",
];

/// The runtime an exec command starts, looking through `sh -c`.
fn runtime_of(cmd: &[String]) -> Option<String> {
    let mut words: Vec<&str> = cmd.iter().map(String::as_str).collect();
    if words.len() >= 3
        && matches!(words[0].rsplit('/').next(), Some("sh" | "bash" | "ash"))
        && words[1] == "-c"
    {
        words = words[2].split_whitespace().collect();
    }
    let first = words.first()?.rsplit('/').next()?;
    RUNTIMES
        .iter()
        .find(|r| {
            first == **r
                || first.starts_with(&format!("{r}3."))
                || first.starts_with(&format!("{r}2."))
        })
        .map(|r| r.to_string())
}

pub static SINGLE_FAILURE: Check = Check {
    id: "probe/liveness-single-failure",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A liveness probe has failureThreshold: 1 with a timeoutSeconds of 2 or less: one slow answer restarts the container.",
    why: "With failureThreshold 1 a single probe that misses its timeout (a GC pause, a busy node, a CPU limit, a slow disk for an exec probe) kills the container; under load this repeats, and a healthy server crash-loops (often exit 0 or 143 after a clean shutdown).",
    fix: "Give the probe room: failureThreshold 3 or more and timeoutSeconds of a few seconds.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes (failureThreshold: consecutive failures before the kubelet restarts the container; default 3); the probe-kill rule of crashdoc-core gives the same fix.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: provider
spec:
  template:
    spec:
      containers:
      - name: provider
        image: ghcr.io/acme/provider:0.6.1
        livenessProbe:
          exec:
            command: ["sh", "-c", "grep -q ready /var/log/provider.log"]
          periodSeconds: 10
          failureThreshold: 1
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: provider
spec:
  template:
    spec:
      containers:
      - name: provider
        image: ghcr.io/acme/provider:0.6.1
        livenessProbe:
          exec:
            command: ["sh", "-c", "grep -q ready /var/log/provider.log"]
          periodSeconds: 10
          timeoutSeconds: 10
          failureThreshold: 3
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let Some(live) = c.probe("livenessProbe") else {
                return;
            };
            let n = numbers(live);
            if n.failure > 1 || n.timeout > 2 {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("livenessProbe").key("failureThreshold"),
                container: Some(c.name.clone()),
                message: format!(
                    "the liveness probe of `{}` restarts it after one answer slower than {}s",
                    c.name, n.timeout
                ),
                fix: "livenessProbe:\n  timeoutSeconds: 5\n  failureThreshold: 3".into(),
            });
        });
    },
};

/// The measured startup of an object (its annotation, or its pod template's).
fn measured_startup(obj: &crate::input::Object) -> Option<(u64, String)> {
    let get = |k: &str| {
        obj.annotation(k).or_else(|| {
            obj.value
                .pointer("/spec/template/metadata/annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
        })
    };
    let secs = get(crate::STARTUP_ANNOTATION)?
        .trim()
        .trim_end_matches('s')
        .parse()
        .ok()?;
    Some((
        secs,
        get(crate::STARTUP_SOURCE_ANNOTATION)
            .unwrap_or("the crashdoc.io/startup-seconds annotation")
            .to_string(),
    ))
}

pub static BUDGET_BELOW_STARTUP: Check = Check {
    id: "probe/budget-below-measured-startup",
    cause: Cause::ProbeKill,
    severity: Severity::Error,
    what: "The time the probes allow before killing a container that is still starting (the startupProbe's budget, else the liveness probe's) is shorter than the startup measured for this workload (`crashdoc.io/startup-seconds`, which `crashdoc lint --evidence` sets from a bundle's or a paste's logs, or set from `crashdoc history`).",
    why: "The kubelet kills the container at initialDelaySeconds + periodSeconds x failureThreshold if it has not passed; a workload that needs longer than that to start is killed before it is up, on every start.",
    fix: "Size the startupProbe from the measurement: the measured startup plus 50% and 30 s, in periods of 10 s.",
    source: "Kubernetes probes documentation (the kill budget); the measurement is crashdoc-core rules::facts::startup_seconds, the one the probe-kill rule sizes its fix from (the same allowance: +50% and 30 s).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: search
  annotations:
    crashdoc.io/startup-seconds: "240"
spec:
  template:
    spec:
      containers:
      - name: search
        image: ghcr.io/acme/search:4.0.2
        livenessProbe:
          httpGet: {path: /livez, port: 9200}
          initialDelaySeconds: 30
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: search
  annotations:
    crashdoc.io/startup-seconds: "240"
spec:
  template:
    spec:
      containers:
      - name: search
        image: ghcr.io/acme/search:4.0.2
        startupProbe:
          httpGet: {path: /livez, port: 9200}
          failureThreshold: 40
        livenessProbe:
          httpGet: {path: /livez, port: 9200}
          initialDelaySeconds: 30
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let Some((need, how)) = measured_startup(cx.obj(oi)) else {
            return;
        };
        each_container(cx, oi, false, |_, _, _, c| {
            let (kind, p) = match (c.probe("startupProbe"), c.probe("livenessProbe")) {
                (Some(s), _) => ("startupProbe", s),
                (None, Some(l)) => ("livenessProbe", l),
                _ => return,
            };
            let budget = numbers(p).budget();
            if budget >= need {
                return;
            }
            let allowance = need + need / 2 + 30;
            out.push(Hit {
                path: c.path.clone().key(kind),
                container: Some(c.name.clone()),
                message: format!(
                    "the {kind} of `{}` kills it {budget}s after start, but it was measured to need {need}s ({how})",
                    c.name
                ),
                fix: startup_fix(p, allowance),
            });
        });
    },
};

pub static EXEC_STARTS_RUNTIME: Check = Check {
    id: "probe/exec-starts-runtime",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "A liveness or startup exec probe starts a language runtime (python, java, node, ruby, php, ...) with timeoutSeconds of 2 or less.",
    why: "Starting an interpreter or a JVM and importing its modules takes longer than a second under a CPU limit or on a busy node; the kubelet enforces exec probe timeouts (since 1.20), so the probe times out, fails and kills a healthy container. Each probe also forks a whole runtime inside the container's memory limit.",
    fix: "Probe an HTTP or TCP endpoint of the server instead, or raise timeoutSeconds to 10.",
    source: "Kubernetes docs, Configure Liveness, Readiness and Startup Probes (exec probe timeouts are enforced since 1.20, feature ExecProbeTimeout).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  template:
    spec:
      containers:
      - name: worker
        image: ghcr.io/acme/worker:3.1.0
        livenessProbe:
          exec:
            command: ["python", "-c", "import worker; worker.ping()"]
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  template:
    spec:
      containers:
      - name: worker
        image: ghcr.io/acme/worker:3.1.0
        livenessProbe:
          exec:
            command: ["cat", "/tmp/healthy"]
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            for kind in KILLING {
                let Some(p) = c.probe(kind) else { continue };
                let Some(cmd) = p.pointer("/exec/command").and_then(Value::as_array) else {
                    continue;
                };
                let cmd: Vec<String> = cmd.iter().map(k8s::scalar_string).collect();
                let Some(rt) = runtime_of(&cmd) else { continue };
                let n = numbers(p);
                if n.timeout > 2 {
                    continue;
                }
                out.push(Hit {
                    path: c.path.clone().key(kind).key("exec"),
                    container: Some(c.name.clone()),
                    message: format!(
                        "the {kind} of `{}` starts `{rt}` with a {}s timeout: a slow interpreter start fails the probe and kills the container",
                        c.name, n.timeout
                    ),
                    fix: format!("{kind}:\n  timeoutSeconds: 10\n  # better: httpGet or tcpSocket on the server's port"),
                });
            }
        });
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_through_a_shell() {
        let s = |v: &[&str]| runtime_of(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            s(&["/bin/sh", "-c", "python3 /probe.py"]).as_deref(),
            Some("python3")
        );
        assert_eq!(s(&["/usr/bin/java", "-cp", "x"]).as_deref(), Some("java"));
        assert_eq!(s(&["pg_isready", "-U", "postgres"]), None);
        assert_eq!(s(&["sh", "-c", "nodetool status"]), None);
    }
}
