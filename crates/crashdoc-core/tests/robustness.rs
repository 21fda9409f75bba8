//! Robustness: the parsers and the whole paste pipeline never panic, whatever
//! the input. A stable-toolchain stand-in for the cargo-fuzz targets in
//! `fuzz/` (CI has no nightly): realistic seeds, mutated deterministically
//! by a small xorshift PRNG (truncation at every 7th byte, byte flips,
//! indentation removal, CRLF, invalid UTF-8, NULs, splices), fed to
//!
//! * `ingest::describe::parse` (what `fuzz_targets/describe.rs` fuzzes),
//! * `ingest::objects::parse` (`fuzz_targets/objects.rs`),
//! * `ingest::fragments::states` (`fuzz_targets/fragments.rs`),
//! * `ingest::read_paste` + `diagnose_all` + every renderer (`fuzz_targets/paste.rs`),
//! * the log scanner,
//!
//! plus folders on disk read with `ingest::read_path`: empty, binary
//! garbage, truncated pod.yaml / pod.json, mangled describe, empty logs.
//!
//! A panicking input is collected (not fatal at once) so that one run lists
//! every failing entry point with a reproducer, written under the system
//! temporary folder.

use crashdoc_core::diagnose::diagnose_all;
use crashdoc_core::ingest::{self, Doc, Evidence, InputError, describe, objects, read_paste};
use crashdoc_core::render::{self, Style};
use crashdoc_core::scan::{Catalog, LogKind};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- seeds

const DESCRIBE: &str = "Name:             vllm-llama-7d9c8b6f5-x2k4p
Namespace:        ml
Priority:         0
Service Account:  default
Node:             gpu-node-1/10.0.3.7
Start Time:       Thu, 05 Jun 2025 06:10:02 +0000
Labels:           app=vllm
                  pod-template-hash=7d9c8b6f5
Annotations:      <none>
Status:           Running
IP:               10.244.1.17
Controlled By:    ReplicaSet/vllm-llama-7d9c8b6f5
Init Containers:
  fetch-model:
    Container ID:  containerd://aa11
    Image:         busybox:1.36
    State:         Terminated
      Reason:      Completed
      Exit Code:   0
    Ready:         True
    Restart Count: 0
Containers:
  vllm:
    Container ID:  containerd://0f3e
    Image:         vllm/vllm-openai:v0.9.0
    Image ID:      docker.io/vllm/vllm-openai@sha256:deadbeef
    Port:          8000/TCP
    Host Port:     0/TCP
    Command:
      python3
      -m
      vllm.entrypoints.openai.api_server
    Args:
      --model=/models/llama
      --gpu-memory-utilization=0.98
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Thu, 05 Jun 2025 06:17:01 +0000
      Finished:     Thu, 05 Jun 2025 06:18:14 +0000
    Ready:          False
    Restart Count:  7
    Limits:
      memory:          16Gi
      nvidia.com/gpu:  1
    Requests:
      cpu:             4
      memory:          16Gi
    Liveness:   http-get http://:8000/health delay=30s timeout=1s period=10s #success=1 #failure=3
    Startup:    http-get http://:8000/health delay=0s timeout=1s period=10s #success=1 #failure=30
    Environment:
      HF_HOME:         /models/cache
      HF_TOKEN:        <set to the key 'token' in secret 'hf'>  Optional: false
      VLLM_PORT:       <set to the key 'port' of config map 'vllm'>
    Environment Variables from:
      vllm-env    ConfigMap  Optional: false
    Mounts:
      /models from models (ro)
      /dev/shm from shm (rw)
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-x (ro)
Conditions:
  Type              Status
  Initialized       True
  Ready             False
Volumes:
  models:
    Type:       PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)
    ClaimName:  models
    ReadOnly:   true
QoS Class:       Burstable
Node-Selectors:  nvidia.com/gpu.present=true
Tolerations:     node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:
  Type     Reason     Age                   From     Message
  ----     ------     ----                  ----     -------
  Normal   Scheduled  12m                   default-scheduler  Successfully assigned ml/vllm-llama-7d9c8b6f5-x2k4p to gpu-node-1
  Normal   Pulled     3m (x7 over 12m)      kubelet  Container image \"vllm/vllm-openai:v0.9.0\" already present on machine
  Warning  Unhealthy  3m (x20 over 11m)     kubelet  Startup probe failed: Get \"http://10.244.1.17:8000/health\": dial tcp 10.244.1.17:8000: connect: connection refused
  Warning  BackOff    2m (x25 over 10m)     kubelet  Back-off restarting failed container vllm in pod vllm-llama-7d9c8b6f5-x2k4p_ml(1234)
";

const DESCRIBE_PARTIAL: &str = "    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Mon, 01 Jan 2024 00:00:00 +0000
      Finished:     Mon, 01 Jan 2024 00:00:05 +0000
    Ready:          False
    Restart Count:  12
    Environment:
      DB_URL:  <set to the key 'url' in secret 'db'>  Optional: true
    Mounts:
      /app/config from config (rw,path=\"app.yaml\")
";

const POD_YAML: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web-6468f86645-x98pq
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    kind: ReplicaSet
    name: web-6468f86645
    controller: true
spec:
  restartPolicy: Always
  nodeName: node-a
  containers:
  - name: web
    image: shop/web:1.4.2
    command: [\"node\", \"/build/main.js\"]
    ports:
    - containerPort: 8080
    env:
    - name: DB_PASSWORD
      valueFrom:
        secretKeyRef:
          name: db
          key: password
    - name: MODE
      value: production
    envFrom:
    - configMapRef:
        name: web-config
    resources:
      limits:
        memory: 256Mi
        cpu: 500m
      requests:
        memory: 128Mi
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
      initialDelaySeconds: 5
      periodSeconds: 10
      failureThreshold: 3
    volumeMounts:
    - name: data
      mountPath: /build
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: web-data
status:
  phase: Running
  containerStatuses:
  - name: web
    ready: false
    restartCount: 9
    image: shop/web:1.4.2
    state:
      waiting:
        reason: CrashLoopBackOff
        message: back-off 5m0s restarting failed container=web
    lastState:
      terminated:
        exitCode: 1
        reason: Error
        startedAt: \"2025-01-14T08:41:17Z\"
        finishedAt: \"2025-01-14T08:41:38Z\"
";

const POD_JSON: &str = r#"{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {
      "apiVersion": "v1",
      "kind": "Pod",
      "metadata": {"name": "db-0", "namespace": "data",
        "ownerReferences": [{"kind": "StatefulSet", "name": "db", "controller": true}]},
      "spec": {
        "containers": [{"name": "postgres", "image": "postgres:16",
          "resources": {"limits": {"memory": "30Mi"}},
          "readinessProbe": {"exec": {"command": ["pg_isready"]}, "timeoutSeconds": 1}}],
        "initContainers": [{"name": "perms", "image": "busybox", "command": ["chown", "-R", "999", "/data"]}]
      },
      "status": {
        "phase": "Running",
        "initContainerStatuses": [{"name": "perms", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
        "containerStatuses": [{"name": "postgres", "restartCount": 4,
          "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": "2025-01-14T08:41:17Z", "finishedAt": "2025-01-14T08:41:38Z"}}}]
      }
    },
    {
      "apiVersion": "v1",
      "kind": "Event",
      "involvedObject": {"kind": "Pod", "name": "db-0"},
      "type": "Warning", "reason": "BackOff", "count": 12,
      "message": "Back-off restarting failed container postgres",
      "lastTimestamp": "2025-01-14T08:45:00Z"
    },
    {
      "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
      "data": {"password": "c2VjcmV0", "user": ""}
    }
  ]
}
"#;

const DEPLOYMENT_YAML: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  template:
    spec:
      securityContext:
        runAsNonRoot: true
        fsGroup: 1000
      containers:
      - name: web
        image: shop/web:latest
        args: [\"--port=$(PORT)\", --verbose]
        startupProbe:
          tcpSocket: {port: 8080}
          failureThreshold: 3
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: web-data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Pending}
";

const LOG: &str = "2025-06-05T06:17:02.123456789Z stdout F INFO 06-05 06:17:02 [api_server.py:1043] vLLM API server version 0.9.0
INFO 06-05 06:17:05 [config.py:823] This model supports multiple tasks: {'generate'}. Defaulting to 'generate'.
INFO 06-05 06:17:09 [weight_utils.py:292] Using model weights format ['*.safetensors']
INFO 06-05 06:17:09 [default_loader.py:272] Loading weights took 12.41 seconds
INFO 06-05 06:17:30 [gpu_model_runner.py:1595] Model loading took 14.9 GiB and 13.1 seconds
INFO 06-05 06:17:41 [kv_cache_utils.py:716] GPU KV cache size: 104,384 tokens
{\"level\":\"warn\",\"ts\":1717567061.5,\"msg\":\"slow request\",\"path\":\"/v1/completions\",\"ms\":1530}
{\"level\":\"error\",\"ts\":1717567062.1,\"msg\":\"dial tcp 10.0.0.5:5432: connect: connection refused\"}
Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)
\tat com.example.Cache.load(Cache.java:88)
Caused by: java.io.FileNotFoundException: /etc/app/app.yaml (No such file or directory)
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c]
goroutine 1 [running]:
main.main()
\t/src/main.go:42 +0x1d
Traceback (most recent call last):
  File \"/usr/local/lib/python3.10/site-packages/torch/cuda/graphs.py\", line 84, in capture_end
    super().capture_end()
RuntimeError: CUDA error: out of memory
OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use
Error: Cannot find module '/build/main.js'
KeyError: 'DB_URL'
thread 'main' panicked at src/main.rs:10:5:
called `Result::unwrap()` on an `Err` value: Os { code: 13, kind: PermissionDenied, message: \"Permission denied\" }
\u{1b}[31mERROR\u{1b}[0m mkdir /data/pgdata: read-only file system
Received SIGTERM, shutting down
";

const GET_PODS: &str = "NAME                         READY   STATUS             RESTARTS        AGE
vllm-llama-7d9c8b6f5-x2k4p   0/1     CrashLoopBackOff   7 (2m ago)      12m
web-6468f86645-x98pq         1/1     Running            0               3d
db-0                         0/1     OOMKilled          4               1h
";

const EVENTS: &str = "LAST SEEN   TYPE      REASON             OBJECT                           MESSAGE
2m          Warning   BackOff            pod/vllm-llama-7d9c8b6f5-x2k4p   Back-off restarting failed container
5m          Warning   FailedScheduling   pod/vllm-llama-7d9c8b6f5-abcde   0/3 nodes are available: 3 Insufficient nvidia.com/gpu.
1m          Warning   Evicted            pod/web-6468f86645-x98pq         The node was low on resource: ephemeral-storage.
";

/// A paste as people post it: several commands and their outputs.
fn paste_seed() -> String {
    format!(
        "user@host:~$ kubectl get pods -n ml\n{GET_PODS}\n$ kubectl describe pod vllm-llama-7d9c8b6f5-x2k4p -n ml\n{DESCRIBE}\n$ kubectl logs vllm-llama-7d9c8b6f5-x2k4p -n ml --previous -c vllm\n{LOG}\n$ kubectl get pod web-6468f86645-x98pq -o yaml\n{POD_YAML}\n$ kubectl get events -n ml\n{EVENTS}\nPS C:\\> kubectl top pod\nNAME  CPU(cores)  MEMORY(bytes)\nvllm  12m  15800Mi\n"
    )
}

/// The seeds, each with the entry points it is fed to first.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("describe", DESCRIBE.as_bytes().to_vec()),
        ("describe-partial", DESCRIBE_PARTIAL.as_bytes().to_vec()),
        ("pod-yaml", POD_YAML.as_bytes().to_vec()),
        ("pod-json", POD_JSON.as_bytes().to_vec()),
        ("deployment-yaml", DEPLOYMENT_YAML.as_bytes().to_vec()),
        ("log", LOG.as_bytes().to_vec()),
        ("get-pods", GET_PODS.as_bytes().to_vec()),
        ("events", EVENTS.as_bytes().to_vec()),
        ("paste", paste_seed().into_bytes()),
    ]
}

// ---------------------------------------------------------------- PRNG and mutations

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that matter to the parsers: structure, whitespace, invalid UTF-8.
const INTERESTING: &[u8] = b"\0\n\r\t :-\"'{}[],#|>&*!%@`\\\x1b\xff\xfe\xc3\xe2\x80";

const INTERESTING_STRINGS: &[&str] = &[
    "\n",
    "\r\n",
    "\t",
    "    ",
    ": ",
    ":",
    "- ",
    "---\n",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "&anchor ",
    "*anchor",
    "!!binary ",
    "? ",
    "|\n",
    ">-\n",
    "\u{feff}",
    "\u{1b}[31m",
    "Containers:\n",
    "Init Containers:\n",
    "Events:\n",
    "Last State:     Terminated\n",
    "Exit Code:    ",
    "Reason:       OOMKilled\n",
    "Name:         x\n",
    "$ kubectl logs p --previous -c c\n",
    "$ kubectl describe pod p\n",
    "$ kubectl get pod p -o json\n",
    "apiVersion: v1\n",
    "kind: Pod\n",
    "\"apiVersion\"",
    "containerStatuses:\n",
    "lastState:\n  terminated:\n    exitCode: ",
    "99999999999999999999999",
    "-1",
    "1e400",
    "NaN",
    "Traceback (most recent call last):\n",
    "RuntimeError: CUDA error: out of memory\n",
    "  Warning  BackOff  1m  kubelet  Back-off\n",
    "é",
    "😀",
    "\u{0}",
];

fn truncations(seed: &[u8]) -> Vec<Vec<u8>> {
    (0..seed.len())
        .step_by(7)
        .map(|n| seed[..n].to_vec())
        .collect()
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// Whole-input transformations people's tools apply.
fn transforms(seed: &[u8]) -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = seed.split(|&b| b == b'\n').collect();
    let join = |ls: Vec<Vec<u8>>, sep: &[u8]| ls.join(sep);
    let trim_start = |l: &[u8]| -> Vec<u8> {
        let n = l.iter().take_while(|b| b.is_ascii_whitespace()).count();
        l[n..].to_vec()
    };
    vec![
        // Indentation removed (chat tools).
        join(lines.iter().map(|l| trim_start(l)).collect(), b"\n"),
        // Indentation as tabs.
        replace_all(seed, b"  ", b"\t"),
        // Indentation doubled.
        join(
            lines
                .iter()
                .map(|l| [b"  ".as_slice(), l].concat())
                .collect(),
            b"\n",
        ),
        // CRLF, and lone CR.
        replace_all(seed, b"\n", b"\r\n"),
        replace_all(seed, b"\n", b"\r"),
        // No newline at all / blank lines between every line.
        replace_all(seed, b"\n", b" "),
        replace_all(seed, b"\n", b"\n\n"),
        // NULs (UTF-16 as read by a byte-oriented tool).
        seed.iter().flat_map(|&b| [b, 0]).collect(),
        // Latin-1 / invalid UTF-8 everywhere.
        replace_all(seed, b" ", b"\xa0"),
        replace_all(seed, b":", b"\xff:"),
        // Reversed line order.
        join(lines.iter().rev().map(|l| l.to_vec()).collect(), b"\n"),
        // Every line repeated (very long documents of the same shape).
        join(
            lines
                .iter()
                .flat_map(|l| [l.to_vec(), l.to_vec(), l.to_vec()])
                .collect(),
            b"\n",
        ),
        // One very long line.
        seed.iter()
            .copied()
            .filter(|&b| b != b'\n')
            .cycle()
            .take(20_000)
            .collect(),
    ]
}

fn mutate(rng: &mut Rng, seed: &[u8], all: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seed.to_vec();
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        let len = v.len();
        match rng.below(11) {
            // Flip a bit.
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            // Overwrite with an interesting byte.
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            // Insert an interesting string.
            2 => {
                let i = rng.below(len + 1);
                let s = INTERESTING_STRINGS[rng.below(INTERESTING_STRINGS.len())];
                v.splice(i..i, s.bytes());
            }
            // Delete a range.
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                v.drain(i..i + n);
            }
            // Duplicate a range.
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(256));
                let chunk = v[i..i + n].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, chunk);
            }
            // Splice in a piece of another seed.
            5 => {
                let other = &all[rng.below(all.len())];
                if !other.is_empty() {
                    let i = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - i).min(512));
                    let at = rng.below(len + 1);
                    v.splice(at..at, other[i..i + n].iter().copied());
                }
            }
            // Truncate anywhere.
            6 => v.truncate(rng.below(len + 1)),
            // Remove the indentation of one line.
            7 if len > 0 => {
                let i = rng.below(len);
                let start = v[..i]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let n = v[start..]
                    .iter()
                    .take_while(|&&b| b == b' ' || b == b'\t')
                    .count();
                v.drain(start..start + n);
            }
            // Invalid UTF-8: a lone continuation byte, a cut multibyte char.
            8 => {
                let i = rng.below(len + 1);
                let bad: &[u8] = [
                    b"\x80".as_slice(),
                    b"\xc3",
                    b"\xe2\x82",
                    b"\xf0\x9f\x98",
                    b"\xed\xa0\x80",
                    b"\xff\xfe",
                ][rng.below(6)];
                v.splice(i..i, bad.iter().copied());
            }
            // A run of NULs.
            9 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                v.splice(i..i, std::iter::repeat_n(0u8, n));
            }
            // Change a digit into a huge number.
            _ => {
                if let Some(i) = (0..len)
                    .map(|k| (k + rng.below(len.max(1))) % len.max(1))
                    .take(32)
                    .find(|&k| v.get(k).is_some_and(u8::is_ascii_digit))
                {
                    v.splice(i..i + 1, b"18446744073709551616".iter().copied());
                }
            }
        }
    }
    v
}

// ---------------------------------------------------------------- entry points

fn run_describe(bytes: &[u8]) {
    let doc = Doc {
        name: "describe-pod.txt".into(),
        text: String::from_utf8_lossy(bytes).into_owned(),
        line_offset: 0,
    };
    let _ = describe::parse(&doc);
}

fn run_objects(bytes: &[u8]) {
    let doc = Doc {
        name: "pod.yaml".into(),
        text: String::from_utf8_lossy(bytes).into_owned(),
        line_offset: 0,
    };
    let _ = objects::parse(&doc);
}

/// What `fuzz_targets/fragments.rs` fuzzes: container states by key.
fn run_fragments(bytes: &[u8]) {
    let doc = Doc {
        name: "other.txt".into(),
        text: String::from_utf8_lossy(bytes).into_owned(),
        line_offset: 0,
    };
    for f in crashdoc_core::ingest::fragments::states(&doc) {
        assert!(f.state.reason.is_some() || f.state.exit_code.is_some());
    }
}

fn render_all(ev: &Evidence) {
    let report = diagnose_all(ev);
    let j = render::json(&report);
    assert!(
        serde_json::from_str::<serde_json::Value>(&j).is_ok(),
        "render::json gave invalid JSON"
    );
    let _ = render::terminal(&report, Style::plain());
    let _ = render::terminal(
        &report,
        Style {
            color: true,
            all: true,
        },
    );
    let _ = render::markdown(&report);
}

fn run_paste(bytes: &[u8]) {
    if let Ok(ev) = read_paste(bytes, "fuzz") {
        render_all(&ev);
    }
}

fn run_scan(bytes: &[u8]) {
    let s = Catalog::global()
        .scan(bytes, "logs-previous.txt", LogKind::Previous, None)
        .expect("reading from a slice cannot fail");
    assert_eq!(s.bytes, bytes.len() as u64, "scan counted the wrong size");
    assert!(
        s.hits
            .windows(2)
            .all(|w| w[0].line.number <= w[1].line.number),
        "hits out of order"
    );
    assert!(
        s.hits
            .iter()
            .all(|h| h.line.number >= 1 && h.line.number <= s.lines.max(1)),
        "hit line number out of range"
    );
}

type Entry = (&'static str, fn(&[u8]));
const ENTRIES: &[Entry] = &[
    ("describe", run_describe),
    ("objects", run_objects),
    ("fragments", run_fragments),
    ("paste", run_paste),
    ("scan", run_scan),
];

// ---------------------------------------------------------------- harness

struct Failure {
    entry: &'static str,
    origin: String,
    message: String,
    input: Vec<u8>,
}

/// Runs inputs through an entry point, catching panics.
struct Harness {
    failures: Mutex<Vec<Failure>>,
    runs: AtomicU64,
    slowest: Mutex<(Duration, &'static str, String)>,
}

impl Harness {
    fn new() -> Harness {
        // Keep the output readable: panics are collected and reported at the end.
        std::panic::set_hook(Box::new(|_| {}));
        Harness {
            failures: Mutex::new(Vec::new()),
            runs: AtomicU64::new(0),
            slowest: Mutex::new((Duration::ZERO, "", String::new())),
        }
    }

    fn feed(&self, entry: &Entry, origin: &str, input: &[u8]) {
        let (name, f) = *entry;
        self.runs.fetch_add(1, Ordering::Relaxed);
        if std::env::var_os("ROBUSTNESS_TRACE").is_some() {
            // For aborts (stack overflow) that catch_unwind cannot catch.
            eprintln!("robustness: {name} <- {origin}");
        }
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| f(input)));
        let el = t.elapsed();
        if std::env::var_os("ROBUSTNESS_TRACE").is_some() {
            eprintln!("robustness: {name} <- {origin}: {el:?}");
        }
        {
            let mut s = self.slowest.lock().unwrap();
            if el > s.0 {
                *s = (el, name, origin.to_string());
            }
        }
        if let Err(p) = r {
            let message = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".into());
            let mut fs = self.failures.lock().unwrap();
            // One reproducer per entry point and message is enough; keep the shortest.
            match fs
                .iter_mut()
                .find(|x| x.entry == name && x.message == message)
            {
                Some(x) if input.len() < x.input.len() => {
                    x.input = input.to_vec();
                    x.origin = origin.to_string();
                }
                Some(_) => {}
                None => fs.push(Failure {
                    entry: name,
                    origin: origin.to_string(),
                    message,
                    input: input.to_vec(),
                }),
            }
        }
    }

    fn finish(self, what: &str) {
        let _ = std::panic::take_hook();
        let runs = self.runs.load(Ordering::Relaxed);
        let (el, entry, origin) = self.slowest.into_inner().unwrap();
        eprintln!("{what}: {runs} runs; slowest input {el:?} ({entry}, {origin})");
        let fs = self.failures.into_inner().unwrap();
        if fs.is_empty() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("crashdoc-robustness-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let mut report = format!("{} panicking input(s):\n", fs.len());
        for (i, f) in fs.iter().enumerate() {
            let path = dir.join(format!("{}-{i}.bin", f.entry));
            let _ = std::fs::write(&path, &f.input);
            let shown: String = String::from_utf8_lossy(&f.input[..f.input.len().min(300)])
                .escape_debug()
                .collect();
            report.push_str(&format!(
                "- {} ({}): {}\n  input ({} bytes, saved to {}): \"{}\"\n",
                f.entry,
                f.origin,
                f.message,
                f.input.len(),
                path.display(),
                shown
            ));
        }
        panic!("{report}");
    }
}

/// The entry points each seed goes to (a seed is fed to the parser it was
/// written for, and always to the paste pipeline and the scanner).
fn entries_for(seed: &str) -> Vec<&'static Entry> {
    let primary = match seed {
        "describe" | "describe-partial" => "describe",
        "pod-yaml" | "pod-json" | "deployment-yaml" => "objects",
        _ => "",
    };
    ENTRIES
        .iter()
        .filter(|(n, _)| *n == primary || matches!(*n, "paste" | "scan" | "fragments"))
        .collect()
}

#[test]
fn seeds_parse_and_diagnose() {
    // The seeds are realistic: the pipeline must understand them, not only survive.
    let d = describe::parse(&Doc {
        name: "describe-pod.txt".into(),
        text: DESCRIBE.into(),
        line_offset: 0,
    });
    let c = d.pod.container("vllm").expect("vllm container");
    assert!(c.last_termination().unwrap().reason_is("OOMKilled"));
    let o = objects::parse(&Doc {
        name: "pod.json".into(),
        text: POD_JSON.into(),
        line_offset: 0,
    });
    assert!(o.partial.is_none(), "{:?}", o.partial);
    assert_eq!(o.pods.len(), 1);
    let o = objects::parse(&Doc {
        name: "pod.yaml".into(),
        text: POD_YAML.into(),
        line_offset: 0,
    });
    assert!(o.partial.is_none(), "{:?}", o.partial);
    assert_eq!(o.pods.len(), 1);
    let ev = read_paste(paste_seed().as_bytes(), "paste").expect("paste");
    assert!(!ev.pods.is_empty());
    render_all(&ev);
}

/// `ROBUSTNESS_SCALE=N` runs N times the mutations and every truncation of
/// every seed on every entry point (the default keeps a debug build's run
/// within seconds).
fn scale() -> usize {
    std::env::var("ROBUSTNESS_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

#[test]
fn truncations_and_transforms_never_panic() {
    let h = Harness::new();
    let seeds = seeds();
    let full = scale() > 1;
    for (name, seed) in &seeds {
        let entries = entries_for(name);
        // Truncation at every 7th byte for the parser a seed is written for;
        // the scanner and the paste pipeline (diagnose and three renderers,
        // the costly one) get every 70th / 35th byte, every 84th for the
        // big paste seed, unless ROBUSTNESS_SCALE is set.
        for (k, t) in truncations(seed).iter().enumerate() {
            for e in &entries {
                let every = match (e.0, *name) {
                    _ if full => 1,
                    ("paste", "paste") => 12,
                    ("paste", _) => 5,
                    ("scan", "log") => 1,
                    ("scan", _) => 10,
                    _ => 1,
                };
                if k % every == 0 {
                    h.feed(e, &format!("{name} truncated at {}", t.len()), t);
                }
            }
        }
        for (k, t) in transforms(seed).iter().enumerate() {
            for e in &entries {
                h.feed(e, &format!("{name} transform #{k}"), t);
            }
            // Transforms of truncations too (a cut CRLF, a cut tab).
            for cut in [t.len() / 3, t.len() / 2, t.len() - t.len() / 7] {
                for e in &entries {
                    h.feed(e, &format!("{name} transform #{k} cut at {cut}"), &t[..cut]);
                }
            }
        }
    }
    h.finish("truncations and transforms");
}

#[test]
fn random_mutations_never_panic() {
    let h = Harness::new();
    let seeds = seeds();
    let all: Vec<Vec<u8>> = seeds.iter().map(|(_, s)| s.clone()).collect();
    let mut rng = Rng::new(0x00c0_ffee);
    // Keep the whole test within a few seconds of a debug build.
    let per_seed = 40 * scale();
    for (name, seed) in &seeds {
        let entries = entries_for(name);
        for i in 0..per_seed {
            let m = mutate(&mut rng, seed, &all);
            for e in &entries {
                h.feed(e, &format!("{name} mutation #{i} (rng seed 0xc0ffee)"), &m);
            }
        }
    }
    // Pure noise, and noise with structure.
    for i in 0..100 * scale() {
        let n = rng.below(2048);
        let noise: Vec<u8> = if i % 2 == 0 {
            (0..n).map(|_| rng.next() as u8).collect()
        } else {
            (0..n)
                .map(|_| INTERESTING[rng.below(INTERESTING.len())])
                .collect()
        };
        for e in ENTRIES {
            h.feed(e, &format!("noise #{i}"), &noise);
        }
    }
    h.finish("random mutations");
}

#[test]
fn pathological_inputs_never_panic() {
    let h = Harness::new();
    let big_nested_json = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    // Deeper YAML overflows the stack today: see `deep_yaml_does_not_overflow_the_stack`.
    let big_nested_yaml = nested_yaml(100);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("whitespace", b" \n\t\r\n ".to_vec()),
        ("one NUL", vec![0]),
        ("only newlines", vec![b'\n'; 10_000]),
        ("BOM only", "\u{feff}".as_bytes().to_vec()),
        ("deep JSON", big_nested_json.into_bytes()),
        ("unclosed deep JSON", "[{\"a\":".repeat(3_000).into_bytes()),
        ("deep YAML", big_nested_yaml.into_bytes()),
        ("YAML alias bomb", b"a: &a [x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n".to_vec()),
        ("key without container", b"Exit Code: 137\nExit Code: 1\nReason: OOMKilled\n".to_vec()),
        ("container names only", b"Containers:\n a:\n b:\n c:\nInit Containers:\n a:\n".to_vec()),
        ("huge exit code", b"Containers:\n  x:\n    Last State: Terminated\n      Exit Code: 99999999999999999999\n      Signal: -99999999999\n".to_vec()),
        ("long line", "Error: ".repeat(2_000).into_bytes()),
        ("long keyword run", "out of memory ".repeat(5_000).into_bytes()),
        ("many commands", "$ kubectl logs x\n".repeat(300).into_bytes()),
        ("many describes", format!("{DESCRIBE}\n").repeat(5).into_bytes()),
        ("json numbers", br#"{"kind":"Pod","status":{"containerStatuses":[{"name":"x","restartCount":1e400,"lastState":{"terminated":{"exitCode":-9223372036854775809}}}]}}"#.to_vec()),
        ("json wrong types", br#"{"kind":"Pod","metadata":[],"spec":{"containers":"x"},"status":{"containerStatuses":{"name":7}}}"#.to_vec()),
        ("yaml wrong types", b"kind: Pod\nmetadata: 7\nspec:\n  containers: [1, [2], {name: [x]}]\nstatus:\n  containerStatuses: [null, ~, {state: 5, lastState: {terminated: [1]}}]\n".to_vec()),
        ("utf16le", "Name: x\nContainers:\n".encode_utf16().flat_map(|u| u.to_le_bytes()).collect()),
    ];
    for (name, input) in &cases {
        for e in ENTRIES {
            h.feed(e, name, input);
        }
    }
    h.finish("pathological inputs");
}

/// `a:` mappings nested `depth` deep (quadratic size: depth 1000 is 500 KB).
fn nested_yaml(depth: usize) -> String {
    (0..depth)
        .map(|i| format!("{}a:\n", " ".repeat(i)))
        .collect()
}

/// Known bug, found by this suite: YAML nested deeper than serde-saphyr's
/// depth budget (65) makes `objects::parse_tree` fall back to
/// `tolerant::parse`, which has no depth limit, and the recursive
/// `Walker::object` -> `Walker::value` (objects.rs, the fragment branch)
/// then overflows the stack: an abort, not a panic, that kills the CLI and
/// cannot be caught. ~300 levels overflow a 2 MiB test thread in a debug
/// build; 3000 levels (a 4.5 MB pod.yaml) abort `crashdoc analyze` (debug
/// build) and the ASan release fuzz build on an 8 MiB main thread. Input:
/// `fuzz/regressions/objects/stack-overflow-nested-yaml-depth3000.yaml.gz`.
/// Run here on an 8 MiB stack, the size of a main thread. Un-ignore once
/// both recursions are bounded.
#[test]
fn deep_yaml_does_not_overflow_the_stack() {
    let t = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            for depth in [1_000, 3_000, 10_000] {
                let doc = Doc {
                    name: "pod.yaml".into(),
                    text: nested_yaml(depth),
                    line_offset: 0,
                };
                let _ = objects::parse(&doc);
                let _ = read_paste(
                    format!("$ kubectl get pod x -o yaml\n{}", doc.text).as_bytes(),
                    "paste",
                );
            }
        })
        .unwrap();
    t.join().unwrap();
}

/// A long line full of keywords is reported once, whichever first pass
/// runs: each pass resumes at the next line after a hit, which is what
/// keeps the scan linear in the line's length (the bug this suite once
/// found searched back to the line start for every match). The time it
/// takes is measured by `benches/scan.rs` ("one 1024 KiB line with a
/// keyword every 28 bytes"), not here: a timed test fails on a busy machine.
#[test]
fn a_long_line_full_of_keywords_is_one_candidate() {
    let unit = b"{\"id\":1234,\"error\":\"dial tcp 10.0.0.7:5432: connect: connection refused\"},";
    let mut line: Vec<u8> = unit.iter().copied().cycle().take(1 << 20).collect();
    line.push(b'\n');
    let cat = Catalog::global();
    cat.build_dfa_now();
    let mut walks = Vec::new();
    cat.candidate_lines_walks::<4>(&line, &mut walks);
    assert_eq!(walks, [0], "the DFA walks report the line once");
    let mut nfa = Vec::new();
    cat.candidate_lines_nfa(&line, &mut nfa);
    assert_eq!(nfa, [0], "the NFA search reports the line once");
    // Two lines: each once, in order.
    let mut two = line.clone();
    two.extend_from_slice(&line);
    let mut v = Vec::new();
    cat.candidate_lines(&two, &mut v);
    assert_eq!(v, [0, line.len()]);
    run_scan(&line);
}

// ---------------------------------------------------------------- folders on disk

static DIR_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        let n = DIR_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!(
            "crashdoc-robustness-{label}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    fn with(label: &str, files: &[(&str, &[u8])]) -> TempDir {
        let d = TempDir::new(label);
        for (name, bytes) in files {
            std::fs::write(d.0.join(name), bytes).expect("write temp file");
        }
        d
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Read a path; a panic fails the test with the case's name; a report is
/// rendered whenever evidence comes back.
fn read(case: &str, path: &Path) -> Result<Evidence, InputError> {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let r = ingest::read_path(path);
        if let Ok(ev) = &r {
            render_all(ev);
        }
        r
    }));
    match r {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("read_path panicked on case {case:?}: {msg}");
        }
    }
}

fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next() as u8).collect()
}

fn all_notes(ev: &Evidence) -> String {
    ev.notes
        .iter()
        .chain(ev.pods.iter().flat_map(|p| p.notes.iter()))
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn empty_folder_is_a_clear_error() {
    let d = TempDir::new("empty");
    match read("empty folder", d.path()) {
        Err(InputError::NothingUsable { .. }) => {}
        other => panic!("empty folder: {other:?}"),
    }
}

#[test]
fn missing_path_is_a_clear_error() {
    let d = TempDir::new("missing");
    match read("missing path", &d.path().join("no-such-thing")) {
        Err(InputError::Io { .. }) => {}
        other => panic!("missing path: {other:?}"),
    }
}

#[test]
fn folder_of_binary_garbage_is_a_clear_error() {
    let g = garbage(64 << 10, 7);
    let d = TempDir::with("garbage", &[("core.bin", &g), ("image.png", &g[..1000])]);
    match read("unknown binary files", d.path()) {
        Err(InputError::NothingUsable { ignored, .. }) => {
            assert!(
                ignored.iter().any(|n| n.contains("core.bin")),
                "{ignored:?}"
            );
        }
        other => panic!("binary garbage: {other:?}"),
    }
    // Garbage under the names crashdoc reads: the structured files are
    // skipped as not text, the folder holds nothing usable.
    let d = TempDir::with(
        "garbage-named",
        &[
            ("describe-pod.txt", &g),
            ("pod.yaml", &g[..5000]),
            ("pod.json", &g[5000..9000]),
            ("events.txt", &g[100..400]),
        ],
    );
    match read("binary under known names", d.path()) {
        Err(InputError::NothingUsable { ignored, .. }) => {
            assert!(
                ignored.iter().any(|n| n.contains("not text")),
                "{ignored:?}"
            );
        }
        other => panic!("binary under known names: {other:?}"),
    }
    // A binary log is streamed (logs are not checked for text): a partial
    // analysis, never a panic.
    let d = TempDir::with("garbage-log", &[("logs-previous.txt", &g)]);
    if let Ok(ev) = read("binary log", d.path()) {
        assert!(
            all_notes(&ev).contains("invalid UTF-8"),
            "{}",
            all_notes(&ev)
        );
    }
    // A single binary file given as the path is read like a paste.
    let f = d.path().join("blob.dat");
    std::fs::write(&f, &g).unwrap();
    match read("binary single file", &f) {
        Err(InputError::Binary) => {}
        other => panic!("binary single file: {other:?}"),
    }
}

#[test]
fn truncated_objects_give_partial_analysis() {
    for cut in [POD_YAML.len() / 2, POD_YAML.len() - 9, 40] {
        let d = TempDir::with("trunc-yaml", &[("pod.yaml", &POD_YAML.as_bytes()[..cut])]);
        match read(&format!("pod.yaml cut at {cut}"), d.path()) {
            Ok(ev) => assert!(!ev.pods.is_empty()),
            Err(InputError::NothingUsable { .. }) => {}
            Err(e) => panic!("truncated pod.yaml at {cut}: {e:?}"),
        }
    }
    for cut in [POD_JSON.len() / 2, POD_JSON.len() - 3, 30, 1] {
        let d = TempDir::with("trunc-json", &[("pod.json", &POD_JSON.as_bytes()[..cut])]);
        match read(&format!("pod.json cut at {cut}"), d.path()) {
            Ok(ev) => {
                assert!(!ev.pods.is_empty());
                assert!(
                    all_notes(&ev).contains("not valid JSON"),
                    "truncated JSON read without a note: {}",
                    all_notes(&ev)
                );
            }
            Err(InputError::NothingUsable { .. }) => {}
            Err(e) => panic!("truncated pod.json at {cut}: {e:?}"),
        }
    }
    // Truncated in the middle of the status: the part before the cut is read.
    let cut = POD_JSON.find("\"lastState\"").unwrap() + 40;
    let d = TempDir::with(
        "trunc-json-status",
        &[("pod.json", &POD_JSON.as_bytes()[..cut])],
    );
    let ev = read("pod.json cut in lastState", d.path()).expect("partial analysis");
    assert_eq!(
        ev.pods[0].name.as_deref(),
        Some("db-0"),
        "{:?}",
        ev.pods[0].name
    );
}

#[test]
fn mangled_describe_is_still_read() {
    // Tabs for indentation, indentation lost on some lines, CRLF.
    let mangled: String = DESCRIBE
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let t = l.trim_start();
            let indent = l.len() - t.len();
            match i % 3 {
                0 => format!("{}{t}\r\n", "\t".repeat(indent / 2)),
                1 => format!("{t}\r\n"),
                _ => format!("{l}\r\n"),
            }
        })
        .collect();
    let d = TempDir::with("mangled", &[("describe-pod.txt", mangled.as_bytes())]);
    let ev = read("mangled describe", d.path()).expect("a mangled describe is still evidence");
    assert_eq!(ev.pods.len(), 1);
    let p = &ev.pods[0];
    assert_eq!(p.name.as_deref(), Some("vllm-llama-7d9c8b6f5-x2k4p"));
    assert!(
        p.containers.iter().any(|c| c
            .last_termination()
            .is_some_and(|t| t.reason_is("OOMKilled"))),
        "OOMKilled lost in the mangled describe: {:#?}",
        p.containers
    );
}

#[test]
fn empty_log_is_a_partial_analysis() {
    // A 0-byte logs-previous.txt alone.
    let d = TempDir::with("empty-log", &[("logs-previous.txt", b"")]);
    match read("0-byte logs-previous.txt alone", d.path()) {
        Ok(ev) => assert!(
            all_notes(&ev).contains("empty"),
            "no note about the empty log: {}",
            all_notes(&ev)
        ),
        Err(InputError::NothingUsable { .. } | InputError::Empty) => {}
        Err(e) => panic!("0-byte log: {e:?}"),
    }
    // Beside a describe: the describe carries the analysis.
    let d = TempDir::with(
        "empty-log-describe",
        &[
            ("logs-previous.txt", b""),
            ("describe-pod.txt", DESCRIBE.as_bytes()),
        ],
    );
    let ev = read("0-byte log beside a describe", d.path()).expect("partial analysis");
    assert_eq!(ev.pods.len(), 1);
    assert!(all_notes(&ev).contains("empty"), "{}", all_notes(&ev));
    // Every known file name, all of them empty.
    let names = [
        "describe-pod.txt",
        "get-pods.txt",
        "pod.yaml",
        "pod.json",
        "events.txt",
        "events.json",
        "logs.txt",
        "logs-previous.app.txt",
        "describe-node.txt",
        "get-pvc.txt",
        "describe-secret.txt",
        "top-pod.txt",
        "other.txt",
        "references.json",
        "missing.json",
    ];
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (*n, b"".as_slice())).collect();
    let d = TempDir::with("all-empty", &files);
    let _ = read("every known file empty", d.path());
    // A 0-byte file given directly.
    let f = d.path().join("paste.txt");
    std::fs::write(&f, b"").unwrap();
    match read("0-byte single file", &f) {
        Err(InputError::Empty) => {}
        other => panic!("0-byte single file: {other:?}"),
    }
    let _ = read(
        "0-byte logs-previous.txt as a file",
        &d.path().join("logs-previous.app.txt"),
    );
}

#[test]
fn broken_bundles_and_dumps_never_panic() {
    let g = garbage(4096, 11);
    // Not a gzip at all; a gzip header then garbage.
    let d = TempDir::with(
        "bundle",
        &[
            ("a.tar.gz", &g),
            ("b.tgz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]),
        ],
    );
    for n in ["a.tar.gz", "b.tgz"] {
        match read(n, &d.path().join(n)) {
            Err(_) => {}
            Ok(ev) => panic!("{n}: garbage read as a bundle: {ev:?}"),
        }
    }
    // A bundle folder whose manifest is garbage, truncated, or names pods that are not there.
    for (label, manifest) in [
        ("garbage", g.clone()),
        ("truncated", br#"{"format": "crashdoc-bundle", "version": 1, "pods": [{"na"#.to_vec()),
        ("wrong version", br#"{"format": "crashdoc-bundle", "version": 99, "pods": []}"#.to_vec()),
        ("absent pods", br#"{"format": "crashdoc-bundle", "version": 1, "pods": [{"namespace": "a", "name": "b", "dir": "pods/../../x"}]}"#.to_vec()),
    ] {
        let d = TempDir::with("bundle-dir", &[("manifest.json", &manifest)]);
        let _ = read(&format!("bundle manifest {label}"), d.path());
    }
    // A dump tree with broken JSON.
    let d = TempDir::with(
        "dump",
        &[("nodes.json", b"{\"kind\": \"NodeList\", \"items\": [")],
    );
    std::fs::create_dir_all(d.path().join("ns1")).unwrap();
    std::fs::write(
        d.path().join("ns1/pods.json"),
        &POD_JSON.as_bytes()[..POD_JSON.len() / 2],
    )
    .unwrap();
    std::fs::write(d.path().join("ns1/events.json"), &g[..100]).unwrap();
    let _ = read("dump with broken JSON", d.path());
}
