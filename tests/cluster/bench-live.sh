#!/usr/bin/env bash
# Figures for the live commands (a benchmark, not a test: it prints numbers
# and judges nothing). Needs `scripts/cluster up` and `scripts/cluster scenarios`.
#
# 1. diagnose of one pod: API requests, sequential waves and wall time, against
#    the playbook's five kubectl commands run in sequence on the same pod.
# 2. scan of a namespace with SCALE_PODS pods of which SCALE_FAILING fail:
#    wall time and peak memory, against `kubectl get pods -A -o json`.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$ROOT/target/cluster/kubeconfig"
RO="$ROOT/target/cluster/kubeconfig-readonly"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
NS=crashdoc-e2e
RUNS=${RUNS:-5}
SCALE_PODS=${SCALE_PODS:-5000}
SCALE_FAILING=${SCALE_FAILING:-200}
OUT="$ROOT/target/cluster/bench"
mkdir -p "$OUT"
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"

pod=$(kubectl -n "$NS" get pods -l crashdoc.test/scenario=vllm-oom -o jsonpath='{.items[0].metadata.name}')
echo "== diagnose pod/$pod ($RUNS runs each, median)"
: > "$OUT/crashdoc.ms"; : > "$OUT/kubectl.ms"
for _ in $(seq "$RUNS"); do
  t=$(now_ms)
  "$CRASHDOC" -v diagnose "pod/$pod" -n "$NS" --kubeconfig "$RO" --format json > /dev/null 2> "$OUT/diagnose.stderr"
  echo $(( $(now_ms) - t )) >> "$OUT/crashdoc.ms"
  t=$(now_ms)
  playbook "$NS" "$pod"
  echo $(( $(now_ms) - t )) >> "$OUT/kubectl.ms"
done
c=$(median < "$OUT/crashdoc.ms"); k=$(median < "$OUT/kubectl.ms")
echo "crashdoc diagnose: ${c} ms ($(grep -o '[0-9]* API requests in [0-9]* sequential waves' "$OUT/diagnose.stderr"))"
echo "five kubectl commands in sequence: ${k} ms"
awk -v c="$c" -v k="$k" 'BEGIN {printf "ratio crashdoc/kubectl: %.2f (target < 0.5)\n", c / k}'

echo "== scan: $SCALE_PODS pods, $SCALE_FAILING failing"
NODES=$(( (SCALE_PODS + 499) / 500 ))
for i in $(seq 0 $((NODES - 1))); do
  cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-scale-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, crashdoc.test/scale: "true", kubernetes.io/hostname: kwok-scale-$i}
spec:
  taints: [{key: crashdoc.test/scale, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "1000", memory: 4000Gi, pods: "600"}
  capacity: {cpu: "1000", memory: 4000Gi, pods: "600"}
YAML
done | kubectl apply -f - > /dev/null
kubectl create namespace crashdoc-scale --dry-run=client -o yaml | kubectl apply -f - > /dev/null
deploy() { # name replicas annotations extra-labels
  cat <<YAML | kubectl -n crashdoc-scale apply -f - > /dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata:
      labels: {app: $1$4}
      annotations: {$3}
    spec:
      nodeSelector: {crashdoc.test/scale: "true"}
      tolerations: [{key: crashdoc.test/scale, operator: Exists}]
      containers: [{name: app, image: registry.example.com/app:1.0, resources: {limits: {memory: 256Mi}}}]
YAML
}
# Healthy pods carry no crashdoc.test/scenario label, so kwok's default stages run them.
deploy healthy $((SCALE_PODS - SCALE_FAILING)) '' ''
deploy failing "$SCALE_FAILING" 'crashdoc.test/behavior: crashloop, crashdoc.test/exit-code: "137", crashdoc.test/reason: OOMKilled, crashdoc.test/run-seconds: "30", crashdoc.test/logs: vllm-oom.log' ', crashdoc.test/scenario: failing'
t0=$(date +%s)
while :; do
  total=$(kubectl -n crashdoc-scale get pods --no-headers 2>/dev/null | wc -l)
  crashing=$(kubectl -n crashdoc-scale get pods -l app=failing --no-headers 2>/dev/null | grep -c -E 'CrashLoopBackOff|Error|OOMKilled')
  running=$(kubectl -n crashdoc-scale get pods -l app=healthy --no-headers 2>/dev/null | grep -c Running)
  (( total >= SCALE_PODS && crashing >= SCALE_FAILING && running >= SCALE_PODS - SCALE_FAILING )) && break
  (( $(date +%s) - t0 > 900 )) && { echo "the scale namespace did not settle in 900 s: $total pods, $running running, $crashing crashing"; break; }
  sleep 10
done
echo "namespace ready after $(( $(date +%s) - t0 )) s: $total pods"
for _ in 1 2 3; do
  /usr/bin/time -f "%e %M" -o "$OUT/scan.time" "$CRASHDOC" -v scan -n crashdoc-scale --kubeconfig "$RO" --format json > "$OUT/scan.json" 2> "$OUT/scan.stderr"
  cat "$OUT/scan.time" >> "$OUT/scan.times"
  /usr/bin/time -f "%e %M" -o "$OUT/kubectl.time" kubectl get pods -A -o json > /dev/null
  cat "$OUT/kubectl.time" >> "$OUT/kubectl.times"
done
found=$(jq '[.pods[] | select(.diagnoses[0].cause == "oom-killed")] | length' "$OUT/scan.json")
sw=$(awk '{print $1}' "$OUT/scan.times" | median); sm=$(awk '{print $2}' "$OUT/scan.times" | median)
kw=$(awk '{print $1}' "$OUT/kubectl.times" | median); km=$(awk '{print $2}' "$OUT/kubectl.times" | median)
echo "crashdoc scan: ${sw} s, peak RSS ${sm} KiB, $found of $SCALE_FAILING failing pods diagnosed oom-killed ($(jq .scanned "$OUT/scan.json") pods scanned)"
echo "kubectl get pods -A -o json: ${kw} s, peak RSS ${km} KiB"
awk -v a="$sw" -v b="$kw" -v c="$sm" -v d="$km" 'BEGIN {printf "ratio scan/kubectl: time %.2f, memory %.2f (target < 2)\n", a / b, c / d}'
rm -f "$OUT/scan.times" "$OUT/kubectl.times"
kubectl delete namespace crashdoc-scale --wait=false > /dev/null
kubectl delete nodes -l crashdoc.test/scale=true --wait=false > /dev/null
