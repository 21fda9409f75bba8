#!/usr/bin/env bash
# The real-node tier: crash loops on a real kubelet (containerd v2 + runc, the
# node crashdoc-real-0 that `scripts/cluster up` starts beside the kwok nodes),
# one scenario per row of the playbook, each in its own namespace
# crashdoc-real-NAME (tests/cluster/realnode/scenarios/NAME.yaml).
#
# A scenario's header comments say what it is:
#   # expect: KIND/NAME CAUSE    the workload and the cause crashdoc must name
#                                (CAUSE "healthy": nothing to diagnose, and scan lists nothing)
#   # settle: JQ                 true of one of its pods once the kubelet shows the failure
# For each scenario, once it settled:
#   kubectl's view               the five commands an on-call engineer runs, saved as a folder,
#                                then `crashdoc analyze FOLDER` names the cause
#   crashdoc diagnose KIND/NAME  (as the read-only user) names the cause, citing the kubelet's
#                                own fields, events or log lines
#   crashdoc capture             the bundle, then `crashdoc analyze BUNDLE`: the same cause
# then `crashdoc scan -A` lists every failing scenario with its cause, the
# planted Secret value appears in no output, the audit log shows only
# get/list/watch, and one figure: diagnose against the five kubectl commands.
#
# Prints one line per check, then "N passed, M failed"; exits non-zero if any
# failed. Without the real node (scripts/cluster up said "real node: skipped:
# WHY") it prints that reason in one line and "0 passed, 0 failed".
# CRASHDOC_REAL_KEEP=1 leaves the namespaces in place afterwards.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
SCEN="$TESTS/realnode/scenarios"
# shellcheck source=tests/cluster/lib.sh
. "$TESTS/lib.sh"
OUT="$ROOT/target/cluster/realnode-out"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
RO="$ROOT/target/cluster/kubeconfig-readonly"
NODE=crashdoc-real-0
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$ROOT/target/cluster/kubeconfig"

passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
cause_of() { jq -r '.pods[0].diagnoses[0].cause // "none"' "$1" 2>/dev/null || echo "bad-json"; }

if [[ -f "$ROOT/target/cluster/realnode.skipped" ]]; then
  echo "skipped: the real node did not start on this machine: $(cat "$ROOT/target/cluster/realnode.skipped")"
  echo "0 passed, 0 failed"; exit 0
fi
kubectl get node "$NODE" >/dev/null 2>&1 || { echo "FAIL no node $NODE (scripts/cluster up with CRASHDOC_REAL_NODE=0?)"; echo "0 passed, 1 failed"; exit 1; }
[[ -x "$CRASHDOC" ]] || { echo "FAIL $CRASHDOC not built"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT"

# scenario table: name, ref, cause, settle
declare -a NAMES=()
declare -A REF=() CAUSE=() SETTLE=()
for f in "$SCEN"/*.yaml; do
  n=$(basename "$f" .yaml)
  read -r ref cause < <(sed -n 's/^# expect: //p' "$f")
  NAMES+=("$n"); REF[$n]=$ref; CAUSE[$n]=$cause
  SETTLE[$n]=$(sed -n 's/^# settle: //p' "$f")
done

# --- apply: Secrets, ConfigMaps and Services first (the kubelet sets a Service's
# env vars only for a pod created after it), then the workloads
t_apply=$(now_ms)
for n in "${NAMES[@]}"; do
  kubectl create namespace "crashdoc-real-$n" >/dev/null 2>&1
done
for n in "${NAMES[@]}"; do
  wait_sa=0
  until kubectl -n "crashdoc-real-$n" get serviceaccount default >/dev/null 2>&1; do
    sleep 0.5; wait_sa=$((wait_sa + 1)); (( wait_sa < 60 )) || break
  done
  kubectl -n "crashdoc-real-$n" apply -f "$SCEN/$n.yaml" -l '!app.kubernetes.io/name' >/dev/null 2>"$OUT/$n.apply.err"
done
for n in "${NAMES[@]}"; do
  kubectl -n "crashdoc-real-$n" apply -f "$SCEN/$n.yaml" -l 'app.kubernetes.io/name' >/dev/null 2>>"$OUT/$n.apply.err" \
    || fail "apply $n: $(head -c 300 "$OUT/$n.apply.err")"
done

# --- settle: the kubelet shows each failure (a scenario's pod: the newest one
# for which its settle expression holds)
declare -A POD=()
deadline=$(( $(date +%s) + ${CRASHDOC_REAL_SETTLE_TIMEOUT:-300} ))
while :; do
  pending=()
  for n in "${NAMES[@]}"; do
    [[ -n "${POD[$n]:-}" ]] && continue
    p=$(kubectl -n "crashdoc-real-$n" get pods -l "crashdoc.test/scenario=$n" -o json 2>/dev/null \
      | jq -r '[.items[] | select(.metadata.deletionTimestamp == null)]
          | sort_by(.metadata.creationTimestamp) | reverse
          | map(select(try ('"${SETTLE[$n]}"') catch false)) | .[0].metadata.name // empty')
    if [[ -n "$p" ]]; then POD[$n]=$p; else pending+=("$n"); fi
  done
  (( ${#pending[@]} == 0 )) && break
  if (( $(date +%s) >= deadline )); then
    for n in "${pending[@]}"; do
      fail "settle $n: the kubelet did not show the failure in time ($(kubectl -n "crashdoc-real-$n" get pods --no-headers 2>&1 | head -2 | tr -s ' ' | tr '\n' ';'))"
    done
    break
  fi
  sleep 2
done
echo "# settled in $(( ($(now_ms) - t_apply) / 1000 )) s"

# --- each scenario: kubectl's view, diagnose, capture
for n in "${NAMES[@]}"; do
  pod=${POD[$n]:-}; [[ -z "$pod" ]] && continue
  ns="crashdoc-real-$n" ref=${REF[$n]} want=${CAUSE[$n]} dir="$OUT/$n/kubectl"
  mkdir -p "$dir"
  kubectl -n "$ns" describe pod "$pod" > "$dir/describe-pod.txt" 2>>"$OUT/$n/kubectl.err"
  kubectl -n "$ns" get pod "$pod" -o yaml > "$dir/pod.yaml" 2>>"$OUT/$n/kubectl.err"
  kubectl -n "$ns" get events --field-selector "involvedObject.name=$pod" > "$dir/events.txt" 2>>"$OUT/$n/kubectl.err"
  for c in $(kubectl -n "$ns" get pod "$pod" -o jsonpath='{range .spec.initContainers[*]}{.name}{"\n"}{end}{range .spec.containers[*]}{.name}{"\n"}{end}'); do
    # what kubectl answers is kept as it is, errors too (the kubelet's own words), beside the logs
    kubectl -n "$ns" logs "$pod" -c "$c" --previous > "$dir/logs-previous.$c.txt" 2> "$OUT/$n/logs-previous.$c.err" \
      && [[ -s "$dir/logs-previous.$c.txt" ]] || rm -f "$dir/logs-previous.$c.txt"
    kubectl -n "$ns" logs "$pod" -c "$c" > "$dir/logs.$c.txt" 2> "$OUT/$n/logs.$c.err" \
      && [[ -s "$dir/logs.$c.txt" ]] || rm -f "$dir/logs.$c.txt"
  done

  if [[ $want == healthy ]]; then
    "$CRASHDOC" diagnose "$ref" -n "$ns" --kubeconfig "$RO" --format json > "$OUT/$n/diagnose.json" 2> "$OUT/$n/diagnose.stderr"
    code=$?
    npods=$(jq -r '.pods | length' "$OUT/$n/diagnose.json" 2>/dev/null || echo "?")
    if [[ $code == 0 && $npods == 0 ]] || grep -qi 'no failing pod\|healthy\|nothing to diagnose' "$OUT/$n/diagnose.stderr" "$OUT/$n/diagnose.json" 2>/dev/null; then
      ok "diagnose $ref: healthy ($(head -c 120 "$OUT/$n/diagnose.stderr" | tr '\n' ' '))"
    else fail "diagnose $ref: a healthy workload got exit $code, $npods pod(s): $(jq -c '[.pods[].diagnoses[0].cause]' "$OUT/$n/diagnose.json" 2>/dev/null) $(head -c 200 "$OUT/$n/diagnose.stderr")"; fi
    continue
  fi

  "$CRASHDOC" analyze "$dir" --format json > "$OUT/$n/analyze-kubectl.json" 2> "$OUT/$n/analyze-kubectl.stderr"
  got=$(cause_of "$OUT/$n/analyze-kubectl.json")
  if [[ $got == "$want" ]]; then ok "kubectl's view of $n -> analyze: $got"
  else fail "kubectl's view of $n -> analyze: want $want, got $got (see $OUT/$n/analyze-kubectl.json)"; fi

  t0=$(now_ms)
  "$CRASHDOC" diagnose "$ref" -n "$ns" --kubeconfig "$RO" --format json --save "$OUT/$n/bundle.tar.gz" \
    > "$OUT/$n/diagnose.json" 2> "$OUT/$n/diagnose.stderr"
  ms=$(( $(now_ms) - t0 ))
  got=$(cause_of "$OUT/$n/diagnose.json")
  # the evidence behind the first cause: what it cites (status fields, events, log lines)
  cites=$(jq -r '[.pods[0].diagnoses[0].evidence[]? | .source + ":" + .ref] | join(", ")' "$OUT/$n/diagnose.json" 2>/dev/null)
  if [[ $got == "$want" && -n "$cites" ]]; then ok "diagnose $ref: $got (${ms} ms), cites ${cites:0:160}"
  elif [[ $got == "$want" ]]; then fail "diagnose $ref: $got but cites no evidence"
  else fail "diagnose $ref: want $want, got $got (see $OUT/$n/diagnose.json)"; fi

  "$CRASHDOC" analyze "$OUT/$n/bundle.tar.gz" --format json > "$OUT/$n/analyze-bundle.json" 2> "$OUT/$n/analyze-bundle.stderr"
  again=$(cause_of "$OUT/$n/analyze-bundle.json")
  if [[ $again == "$want" ]]; then ok "capture -> analyze $ref: $again"
  else fail "capture -> analyze $ref: want $want, the bundle says $again"; fi
done

# --- scan -A: every failing scenario's workload with its cause; the healthy Job not listed
"$CRASHDOC" scan -A --kubeconfig "$RO" --format json > "$OUT/scan.json" 2> "$OUT/scan.stderr"
for n in "${NAMES[@]}"; do
  want=${CAUSE[$n]}
  got=$(jq -r --arg ns "crashdoc-real-$n" '[.pods[] | select(.namespace == $ns) | .diagnoses[0].cause] | first // "missing"' "$OUT/scan.json" 2>/dev/null)
  if [[ $want == healthy ]]; then
    if [[ $got == missing ]]; then ok "scan -A: $n not listed (healthy)"; else fail "scan -A: healthy $n listed as $got"; fi
  elif [[ $got == "$want" ]]; then ok "scan -A: $n $got"
  else fail "scan -A: $n want $want, got $got"; fi
done

# --- no planted Secret value in any output or bundle
mkdir -p "$OUT/untarred"
for t in "$OUT"/*/bundle.tar.gz; do
  [[ -f "$t" ]] || continue
  d="$OUT/untarred/$(basename "$(dirname "$t")")"; mkdir -p "$d"; tar -xzf "$t" -C "$d"
done
check_no_leaks "$SCEN" "$OUT" "any output or bundle"

# --- read-only: the audit log shows only get/list/watch by crashdoc's user
if audit=$("$TESTS/audit-verbs.sh" crashdoc-e2e-reader 2>&1); then
  ok "audit log: the read-only user used only get/list/watch ($(awk '{s+=$1} END {print s}' <<< "$audit") requests)"
else
  fail "audit log: $audit"
fi

# --- the kubelet's own API through the API server, as on any cluster (kubectl as
# the admin: exec and debug write, crashdoc never does)
if [[ -n "${POD[port-taken]:-}" ]]; then
  ns=crashdoc-real-port-taken pod=${POD[port-taken]}
  e=$(timeout 30 kubectl -n "$ns" exec "$pod" -c web -- /bin/sh -c 'cat /proc/1/cmdline | tr "\0" " "' 2>&1)
  timeout 60 kubectl -n "$ns" debug "$pod" --image=crashdoc.test/crash:1 --image-pull-policy=IfNotPresent \
    --target=web -c debugger -- /bin/sh -c 'echo debugger-ran' > "$OUT/debug.out" 2>&1
  d=""
  for _ in $(seq 1 20); do d=$(kubectl -n "$ns" logs "$pod" -c debugger 2>/dev/null); [[ -n "$d" ]] && break; sleep 1; done
  if [[ "$e" == "/crashprog bind --port 9090 " && "$d" == debugger-ran ]]; then
    ok "kubectl exec and kubectl debug reach the real kubelet through the API server"
  else fail "kubectl exec: '${e:0:100}', kubectl debug: '${d:0:100}' ($(head -c 200 "$OUT/debug.out"))"; fi
fi

# --- the figure: diagnose of one real-node pod against the five kubectl commands,
# median of 5 each, in this run (the OOM spike's pod)
fig=oom-spike
if [[ -n "${POD[$fig]:-}" ]]; then
  ns="crashdoc-real-$fig"; pod=${POD[$fig]}
  d_ms=() k_ms=()
  for _ in 1 2 3 4 5; do
    t0=$(now_ms); "$CRASHDOC" diagnose "$pod" -n "$ns" --kubeconfig "$RO" --format json > /dev/null 2>&1; d_ms+=($(( $(now_ms) - t0 )))
    t0=$(now_ms); playbook "$ns" "$pod"; k_ms+=($(( $(now_ms) - t0 )))
  done
  d=$(printf '%s\n' "${d_ms[@]}" | median) k=$(printf '%s\n' "${k_ms[@]}" | median)
  echo "# figure: diagnose of pod $pod: median $d ms; the five kubectl commands: median $k ms; ratio $(awk -v a="$d" -v b="$k" 'BEGIN {printf "%.2f", a / b}')"
fi

if [[ "${CRASHDOC_REAL_KEEP:-}" != 1 ]]; then
  for n in "${NAMES[@]}"; do kubectl delete namespace "crashdoc-real-$n" --wait=false >/dev/null 2>&1; done
fi
echo "$passed passed, $failed failed"
(( failed == 0 ))
