#!/usr/bin/env bash
# Scale figures on kwok nodes (a benchmark, not a test: it prints numbers and
# judges nothing; opt-in, not part of .ci/run). Needs `scripts/cluster up`.
#
#   tests/cluster/bench-scale.sh [PODS ...]     default: 20000
#
# For each size in order (ascending: the fleet only grows), the fleet is
# brought to PODS pods and measured:
#
# - the fleet: FLEET_NODES (200) kwok nodes kwok-fleet-<i>, FLEET_NAMESPACES
#   (50) namespaces crashdoc-fleet-<k>, FLEET_FAILING (2,000) failing pods
#   spread evenly over them (half crash-looping OOMKilled with logs, a
#   quarter ImagePullBackOff, a quarter CreateContainerConfigError: the
#   kwok stages of tests/cluster/kwok/), the rest healthy (4 Deployments per
#   namespace, each pinned to one node: no scheduling work; growing the
#   fleet scales them).
# - scan: `crashdoc scan -A --format json` against one `kubectl get pods -A
#   -o json`, alternated, RUNS (3) each, median wall time and peak RSS
#   (/usr/bin/time), and the ratio.
# - watch: `crashdoc watch -A` (a throwaway --db) from start to /readyz 200
#   and `crashdoc_watched_pods` = every pod; VmRSS and CPU sampled each
#   second: at ready, peak (VmHWM), steady (median over WATCH_IDLE_SECONDS,
#   60), and through CHURN_SECONDS (30) of CHURN_RATE (20)/s terminations
#   written by tests/cluster/tools/crashloop-storm into one namespace's
#   healthy pods (captured as usual), then 15 s more.
#
# CRASHDOC_COMPARE="NAME=BINARY ..." also measures other builds' scan in the same
# runs (e.g. the build before a change). FLEET_KEEP=1 leaves the fleet in place at
# the end (default: deleted). SKIP_WATCH=1 measures scan only.
# Everything it writes is in target/cluster/bench-scale/.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$ROOT/target/cluster/kubeconfig"
RO="$ROOT/target/cluster/kubeconfig-readonly"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
NODES=${FLEET_NODES:-200}
NSS=${FLEET_NAMESPACES:-50}
FAILING=${FLEET_FAILING:-2000}
RUNS=${RUNS:-3}
IDLE=${WATCH_IDLE_SECONDS:-60}
CHURN_SECONDS=${CHURN_SECONDS:-30}
CHURN_RATE=${CHURN_RATE:-20}
SETTLE_TIMEOUT=${FLEET_TIMEOUT:-2400}
PORT=$(( ${CRASHDOC_CLUSTER_PORT_BASE:-36400} + 61 ))
OUT="$ROOT/target/cluster/bench-scale"
mkdir -p "$OUT"
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"
SIZES=("$@"); (( ${#SIZES[@]} )) || SIZES=(20000)
say() { echo "[$(date -u +%T)] $*"; }
ns_name() { printf 'crashdoc-fleet-%02d' "$1"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ------------------------------------------------------------------ the fleet
nodes_yaml() {
  local i
  for i in $(seq 0 $((NODES - 1))); do
    cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-fleet-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, crashdoc.test/fleet: "true", kubernetes.io/hostname: kwok-fleet-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
spec:
  taints: [{key: crashdoc.test/fleet, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "1000", memory: 4000Gi, pods: "1000"}
  capacity: {cpu: "1000", memory: 4000Gi, pods: "1000"}
YAML
  done
}
# deploy NS NAME REPLICAS NODE KIND [ANNOTATIONS]: a Deployment pinned to a node, a pod
# template of ordinary size (labels, env, ports, probes, resources). KIND healthy|failing;
# failing pods carry crashdoc.test/scenario, which keeps kwok's default stages away.
deploy_yaml() {
  local ns=$1 name=$2 replicas=$3 node=$4 kind=$5 ann=${6:-}
  local extra=""
  [[ $kind == failing ]] && extra=", crashdoc.test/scenario: fleet-$name"
  cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $name
  namespace: $ns
  labels: {app.kubernetes.io/name: $name, crashdoc.test/fleet: $kind}
spec:
  replicas: $replicas
  revisionHistoryLimit: 2
  selector: {matchLabels: {app.kubernetes.io/name: $name}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: $name, app.kubernetes.io/part-of: fleet, crashdoc.test/fleet: $kind$extra}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "9090"$ann}
    spec:
      nodeName: kwok-fleet-$node
      tolerations: [{key: crashdoc.test/fleet, operator: Exists}]
      terminationGracePeriodSeconds: 0
      containers:
      - name: app
        image: registry.example.com/fleet/$name:1.8.3
        args: [--port=8080, --metrics-port=9090, --log-format=json]
        env:
        - {name: MODEL_ID, value: meta-llama/Llama-3.1-8B-Instruct}
        - {name: LOG_LEVEL, value: info}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        ports: [{name: http, containerPort: 8080}, {name: metrics, containerPort: 9090}]
        readinessProbe: {httpGet: {path: /health, port: http}, periodSeconds: 10}
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {memory: 256Mi}
YAML
}
# fleet_yaml PODS: the namespaces and Deployments for PODS pods
fleet_yaml() {
  local pods=$1 k j
  local healthy_per_ns=$(( (pods - FAILING) / NSS )) fail_per_ns=$(( FAILING / NSS ))
  local oom=$(( fail_per_ns / 2 )) pull=$(( fail_per_ns / 4 ))
  local cfg=$(( fail_per_ns - oom - pull ))
  for k in $(seq 0 $((NSS - 1))); do
    local ns; ns=$(ns_name "$k")
    printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {crashdoc.test/fleet: "true"}}\n' "$ns"
    for j in 0 1 2 3; do
      local r=$(( healthy_per_ns / 4 + (j < healthy_per_ns % 4 ? 1 : 0) ))
      deploy_yaml "$ns" "web-$j" "$r" $(( (k * 4 + j) % NODES )) healthy
    done
    deploy_yaml "$ns" inference "$oom" $(( (k * 4) % NODES )) failing \
      ', crashdoc.test/behavior: crashloop, crashdoc.test/exit-code: "137", crashdoc.test/reason: OOMKilled, crashdoc.test/restarts: "1", crashdoc.test/run-seconds: "30", crashdoc.test/logs: vllm-oom.log'
    deploy_yaml "$ns" tagger "$pull" $(( (k * 4 + 1) % NODES )) failing \
      ', crashdoc.test/behavior: image-pull, crashdoc.test/message: "rpc error: code = NotFound desc = failed to pull and unpack image \"registry.example.com/fleet/tagger:1.8.3\": manifest unknown"'
    deploy_yaml "$ns" gateway "$cfg" $(( (k * 4 + 2) % NODES )) failing \
      ', crashdoc.test/behavior: config-error, crashdoc.test/message: "couldn'"'"'t find key api-key in Secret '"$ns"'/gateway-credentials"'
  done
}
healthy_ready() {
  kubectl get deploy -A -l crashdoc.test/fleet=healthy -o json 2>/dev/null \
    | jq '[.items[].status.readyReplicas // 0] | add // 0'
}
# failing pods whose failure is final (kwok's scrub stage removed the hints)
failing_settled() {
  kubectl get pods -A -l crashdoc.test/fleet=failing -o json 2>/dev/null \
    | jq '[.items[] | select(.metadata.deletionTimestamp == null and (.metadata.annotations["crashdoc.test/behavior"] == null))] | length'
}
grow() { # grow PODS: apply the fleet for PODS pods and wait until it settles
  local pods=$1 t0; t0=$(date +%s)
  # --force-conflicts: the node controller co-owns the ttl annotation once a node exists
  nodes_yaml | kubectl apply --server-side --force-conflicts -f - > /dev/null || return 1
  fleet_yaml "$pods" | kubectl apply --server-side --force-conflicts -f - > /dev/null || return 1
  local want_healthy=$(( (pods - FAILING) / NSS * NSS )) want_failing=$(( FAILING / NSS * NSS ))
  local h f last=0
  while :; do
    h=$(healthy_ready); f=$(failing_settled)
    (( h >= want_healthy && f >= want_failing )) && break
    if (( $(date +%s) - t0 > SETTLE_TIMEOUT )); then
      say "fleet: not settled after $SETTLE_TIMEOUT s: $h/$want_healthy healthy ready, $f/$want_failing failing settled"
      return 1
    fi
    if (( $(date +%s) - last >= 60 )); then
      say "fleet: $h/$want_healthy healthy ready, $f/$want_failing failing settled ($(( $(date +%s) - t0 )) s, load $(load))"
      last=$(date +%s)
    fi
    sleep 10
  done
  say "fleet: $((h + f)) pods ($h healthy ready, $f failing settled) after $(( $(date +%s) - t0 )) s"
}

# ------------------------------------------------------------------ scan
bench_scan() {
  local pods=$1 d="$OUT/$1" label bin
  local -a labels=(crashdoc) bins=("$CRASHDOC")
  # CRASHDOC_COMPARE="NAME=BINARY ...": other builds measured in the same runs
  for x in ${CRASHDOC_COMPARE:-}; do labels+=("${x%%=*}"); bins+=("${x#*=}"); done
  : > "$d/kubectl.times"
  for label in "${labels[@]}"; do : > "$d/scan-$label.times"; done
  for _ in $(seq "$RUNS"); do
    for i in "${!labels[@]}"; do
      label=${labels[$i]} bin=${bins[$i]}
      /usr/bin/time -f "%e %M" -o "$d/scan.time" "$bin" -v scan -A --kubeconfig "$RO" --format json > "$d/scan-$label.json" 2> "$d/scan-$label.stderr"
      cat "$d/scan.time" >> "$d/scan-$label.times"
    done
    /usr/bin/time -f "%e %M" -o "$d/kubectl.time" kubectl --kubeconfig "$RO" get pods -A -o json > "$d/kubectl.json"
    cat "$d/kubectl.time" >> "$d/kubectl.times"
  done
  local kw km listed
  kw=$(awk '{print $1}' "$d/kubectl.times" | median); km=$(awk '{print int($2 / 1024)}' "$d/kubectl.times" | median)
  listed=$(jq '.items | length' "$d/kubectl.json")
  say "scan -A ($RUNS runs each, alternated, median; load $(load)):"
  echo "  kubectl get pods -A -o json: ${kw} s, peak RSS ${km} MiB, $listed pods, $(( $(stat -c %s "$d/kubectl.json") / 1048576 )) MiB of JSON (runs: $(awk '{printf "%s s/%d MiB ", $1, $2 / 1024}' "$d/kubectl.times"))"
  for label in "${labels[@]}"; do
    local sw sm
    sw=$(awk '{print $1}' "$d/scan-$label.times" | median); sm=$(awk '{print int($2 / 1024)}' "$d/scan-$label.times" | median)
    echo "  $label scan -A: ${sw} s, peak RSS ${sm} MiB (runs: $(awk '{printf "%s s/%d MiB ", $1, $2 / 1024}' "$d/scan-$label.times"))"
    echo "    $(grep -o 'scanned [0-9]* pods, .*' "$d/scan-$label.stderr" | tail -n1); causes: $(jq -r '[.groups[] | "\(.cause) \(.count)"] | join(", ")' "$d/scan-$label.json" 2>/dev/null)"
    awk -v a="$sw" -v b="$kw" -v c="$sm" -v e="$km" 'BEGIN {printf "    ratio scan/kubectl: time %.2f (target <= 0.5), memory %.2f\n", a / b, c / e}'
  done
  rm -f "$d/kubectl.json"
}

# ------------------------------------------------------------------ watch
proc_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null; }
metric() {
  curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 ~ "^" m "({|$)" { s += $NF } END { printf "%d\n", s }'
}
bench_watch() {
  local pods=$1 d="$OUT/$1"
  rm -f "$d/watch.redb"
  local t0; t0=$(now_ms)
  "$CRASHDOC" -v watch -A --kubeconfig "$RO" --db "$d/watch.redb" --listen "127.0.0.1:$PORT" > "$d/watch.log" 2>&1 < /dev/null &
  local pid=$!
  ( while kill -0 "$pid" 2>/dev/null; do
      printf '%s\t%s\t%s\t%s\n' "$(now_ms)" "$(proc_kib "$pid" VmRSS)" "$(proc_kib "$pid" VmHWM)" "$(cpu_secs "$pid")"
      sleep 1
    done ) > "$d/watch-samples.tsv" 2>/dev/null &
  local sampler=$!
  local ready="" code
  while kill -0 "$pid" 2>/dev/null && (( $(now_ms) - t0 < 600000 )); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/readyz")
    [[ $code == 200 ]] && { ready=$(( $(now_ms) - t0 )); break; }
    sleep 0.1
  done
  if [[ -z "$ready" ]]; then
    say "watch: not ready within 600 s (see $d/watch.log)"; kill "$pid" "$sampler" 2>/dev/null; return 1
  fi
  local rss_ready cpu_ready watched
  rss_ready=$(( $(proc_kib "$pid" VmRSS) / 1024 )); cpu_ready=$(cpu_secs "$pid"); watched=$(metric crashdoc_watched_pods)
  local t_idle; t_idle=$(now_ms)
  sleep "$IDLE"
  local cpu_idle; cpu_idle=$(cpu_secs "$pid")
  local churn=""
  local storm; storm="$("$ROOT/tests/cluster/tools/build.sh" 2> "$d/tools-build.log")/crashloop-storm"
  local t_churn; t_churn=$(now_ms)
  if (( CHURN_SECONDS > 0 )) && [[ -x "$storm" ]]; then
    "$storm" run -n "$(ns_name 0)" -l crashdoc.test/fleet=healthy --rate "$CHURN_RATE" --duration "${CHURN_SECONDS}s" \
      --workers 16 > "$d/churn.json" 2> "$d/churn.log"
    sleep 15
    churn=$(jq -r '"\(.terminations_produced) terminations at \(.rate_achieved | . * 10 | floor / 10)/s"' "$d/churn.json" 2>/dev/null)
  fi
  local cpu_end; cpu_end=$(cpu_secs "$pid")
  local restarts captures; restarts=$(metric crashdoc_container_restarts_total); captures=$(metric crashdoc_captures_total)
  kill -TERM "$pid"; wait "$pid" 2>/dev/null
  # The churned pods crash-loop now: their ReplicaSets re-create them healthy,
  # so that the next size settles and its scan sees FLEET_FAILING failing pods.
  if [[ -n "$churn" ]]; then
    kubectl -n "$(ns_name 0)" delete pods -l crashdoc.test/fleet=healthy --wait=false > /dev/null
  fi
  sleep 1; kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  local s="$d/watch-samples.tsv"
  local peak steady after_churn
  peak=$(awk -F'\t' '$3 > m {m = $3} END {print int(m / 1024)}' "$s")
  steady=$(awk -F'\t' -v a="$t_idle" -v b="$t_churn" '$1 >= a && $1 < b && $2 {print int($2 / 1024)}' "$s" | median)
  after_churn=$(awk -F'\t' -v a="$t_churn" '$1 >= a && $2 > m {m = $2} END {print int(m / 1024)}' "$s")
  say "watch -A (load $(load)):"
  echo "  ready after $(awk -v r="$ready" 'BEGIN {printf "%.1f", r / 1000}') s, watching $watched pods; RSS at ready $rss_ready MiB, CPU to ready $cpu_ready s"
  echo "  RSS steady ${steady} MiB (median over ${IDLE} s idle, CPU $(awk -v a="$cpu_ready" -v b="$cpu_idle" 'BEGIN {printf "%.1f", b - a}') s), peak (VmHWM) ${peak} MiB"
  [[ -n "$churn" ]] && echo "  churn: $churn; counted $restarts, captures $captures; RSS max ${after_churn} MiB; CPU $(awk -v a="$cpu_idle" -v b="$cpu_end" 'BEGIN {printf "%.1f", b - a}') s (churn + 15 s)"
  echo "  CPU total $cpu_end s"
}

# ------------------------------------------------------------------ main
[[ -x "$CRASHDOC" ]] || { echo "no $CRASHDOC: cargo build --release -p crashdoc"; exit 1; }
say "machine: $(nproc) cores, load $(load); crashdoc $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null)"
for pods in "${SIZES[@]}"; do
  mkdir -p "$OUT/$pods"
  say "== $pods pods over $NODES kwok nodes, $FAILING failing across $NSS namespaces"
  grow "$pods" || { say "stops at $pods pods: the fleet did not settle"; break; }
  bench_scan "$pods"
  [[ "${SKIP_WATCH:-0}" == 1 ]] || bench_watch "$pods"
done
if [[ "${FLEET_KEEP:-0}" != 1 ]]; then
  for k in $(seq 0 $((NSS - 1))); do ns_name "$k"; echo; done | xargs kubectl delete namespace --wait=false > /dev/null 2>&1
  kubectl delete nodes -l crashdoc.test/fleet=true --wait=false > /dev/null 2>&1
fi
