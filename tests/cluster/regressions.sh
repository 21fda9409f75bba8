#!/usr/bin/env bash
# Rollout regressions on the real control plane: "what changed" (issue 11).
# Expects `scripts/cluster up` (tests/cluster/run.sh calls it after live.sh).
#
# Each scenario of regressions/workloads.yaml runs a healthy revision 1, then
# is rolled to a failing revision 2 by `kubectl patch` (the change printed
# below), in its own namespace crashdoc-regress on its own tainted nodes
# (regressions/nodes.yaml). Then, as the read-only user:
#   crashdoc diagnose KIND/NAME --format json            (live)
#   crashdoc capture KIND/NAME, crashdoc analyze BUNDLE  (offline)
# and both must give in pods[0].changes:
#   a. regress-image    (Deployment) a new image tag:     coincides, names the image
#   b. regress-env      (Deployment) env to a missing key: coincides, names the env change
#   c. regress-args     (StatefulSet, ControllerRevisions) a bad arg: coincides, names args
#   d. regress-node     (Deployment) the failing pod on another instance type and kernel
#                        (steered by cordon, not by the template): the node difference named
#   e. regress-restart  (Deployment) `kubectl rollout restart` while the failure comes
#                        from elsewhere: nothing-explains, undo null
# plus: the bundle holds the revision files; the read-only user used only
# get/list/watch. Then figures (not judged): requests, waves and latency of
# diagnose with and without the revisions source (CRASHDOC_REVISIONS=0) and
# the playbook's five kubectl commands.
#
# Prints one line per check, then "N passed, M failed"; exits non-zero if any
# failed. Leaves everything in target/cluster/regressions/; deletes its
# namespace and nodes at the end.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
OUT="$ROOT/target/cluster/regressions"
NS=crashdoc-regress
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
RO="$ROOT/target/cluster/kubeconfig-readonly"
RUNS=${RUNS:-5}
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$ROOT/target/cluster/kubeconfig"

passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
t_start=$(date +%s)

[[ -x "$CRASHDOC" ]] || { echo "FAIL $CRASHDOC not built"; echo "0 passed, 1 failed"; exit 1; }
[[ -f "$RO" ]] || { echo "FAIL no read-only kubeconfig at $RO"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT"

cleanup() {
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl delete -f "$TESTS/regressions/nodes.yaml" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---------------------------------------------------------------- revision 1
# A previous run on the same cluster: start from nothing.
kubectl delete namespace "$NS" --ignore-not-found --timeout=90s >/dev/null 2>&1
kubectl delete -f "$TESTS/regressions/nodes.yaml" --ignore-not-found >/dev/null 2>&1
kubectl apply -f "$TESTS/regressions/nodes.yaml" >/dev/null
kubectl wait --for=condition=Ready node -l crashdoc.test/regress --timeout=60s >/dev/null \
  || fail "regression nodes not Ready"
kubectl apply -n "$NS" -f "$TESTS/regressions/workloads.yaml" >/dev/null
SCENARIOS=(deployment/regress-image deployment/regress-env statefulset/regress-args deployment/regress-node deployment/regress-restart)
for ref in "${SCENARIOS[@]}"; do
  if kubectl -n "$NS" rollout status "$ref" --timeout=90s >/dev/null 2>&1; then
    ok "revision 1 of $ref healthy ($(kubectl -n "$NS" get pods -l "app.kubernetes.io/name=${ref#*/}" --no-headers | awk '$3 == "Running"' | wc -l) pods Running)"
  else
    fail "revision 1 of $ref did not become healthy"
  fi
done

# ---------------------------------------------------------------- revision 2
# steer NAME KEY=VALUE...: the template metadata kwok needs to fail the pods.
steer() {
  local name=$1; shift
  jq -cn --arg n "$name" --args '{labels: {"crashdoc.test/scenario": $n},
    annotations: ([$ARGS.positional[] | capture("(?<k>[^=]+)=(?<v>.*)") | {key: ("crashdoc.test/" + .k), value: .v}] | from_entries)}' "$@"
}
# roll KIND/NAME METADATA SPEC: one strategic-merge patch of the template.
roll() {
  local patch
  patch=$(jq -cn --argjson m "$2" --argjson s "$3" '{spec: {template: ({metadata: $m} + (if $s == {} then {} else {spec: $s} end))}}')
  echo "$1: kubectl patch $patch" >> "$OUT/rollouts.txt"
  kubectl -n "$NS" patch "$1" --type strategic -p "$patch" >/dev/null || fail "patch $1"
}
: > "$OUT/rollouts.txt"
roll deployment/regress-image \
  "$(steer regress-image behavior=crashloop exit-code=255 reason=Error restarts=2 run-seconds=1 logs=tokenizer-svc.log)" \
  '{"containers": [{"name": "api", "image": "registry.example.com/search/tokenizer:2.4.0"}]}'
roll deployment/regress-env \
  "$(steer regress-env behavior=config-error "message=couldn't find key model_name in ConfigMap $NS/regress-env-config")" \
  '{"containers": [{"name": "embed", "env": [{"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "regress-env-config", "key": "model_name"}}}]}]}'
roll statefulset/regress-args \
  "$(steer regress-args behavior=crashloop exit-code=2 reason=Error restarts=2 run-seconds=4 logs=vllm-bad-flag.log)" \
  '{"containers": [{"name": "vllm", "args": ["--model=Qwen/Qwen2.5-7B-Instruct", "--max-model-length=8192", "--port=8000"]}]}'
# e: what `kubectl rollout restart` writes (kubectl v0.36.3,
# pkg/polymorphichelpers/objectrestarter.go: the restartedAt annotation, RFC 3339).
restart=$(steer regress-restart behavior=crashloop exit-code=1 reason=Error restarts=2 run-seconds=3 logs=rag-indexer.log \
  | jq -c --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '.annotations["kubectl.kubernetes.io/restartedAt"] = $t')
roll deployment/regress-restart "$restart" '{}'
# d: the harness (admin) moves scheduling to the other node, then the rollout
# changes nothing but kwok's steering.
kubectl cordon regress-node-0 >/dev/null && kubectl uncordon regress-node-1 >/dev/null
roll deployment/regress-node \
  "$(steer regress-node behavior=crashloop exit-code=132 reason=Error restarts=2 run-seconds=2 logs=llama-cpp-cpu.log)" '{}'

# Settled: kwok's scrub stage removed the steering annotations of the failing pod.
settled() {
  kubectl -n "$NS" get pods -l "crashdoc.test/scenario=$1" -o json 2>/dev/null | jq -e '
    [.items[] | select(.metadata.deletionTimestamp == null)
      | select((.metadata.annotations // {}) | has("crashdoc.test/behavior") | not)
      | select((.status.containerStatuses // [])[0].state.waiting.reason // "" | . != "")] | length > 0' >/dev/null
}
for ref in "${SCENARIOS[@]}"; do
  name=${ref#*/} t0=$(date +%s)
  until settled "$name"; do
    (( $(date +%s) - t0 > 90 )) && break
    sleep 1
  done
  if settled "$name"; then
    pod=$(kubectl -n "$NS" get pods -l "crashdoc.test/scenario=$name" -o jsonpath='{.items[0].metadata.name} on {.items[0].spec.nodeName}: {.items[0].status.containerStatuses[0].state.waiting.reason}')
    ok "revision 2 of $ref fails ($pod, $(( $(date +%s) - t0 )) s)"
  else
    fail "revision 2 of $ref did not settle in 90 s"
  fi
done
kubectl -n "$NS" get pods -o wide > "$OUT/pods.txt" 2>&1
kubectl -n "$NS" get rs,controllerrevisions > "$OUT/revisions.txt" 2>&1

# ---------------------------------------------------------------- crashdoc
# expect FILE LABEL CHECK...: each CHECK is a jq filter over .pods[0].changes
# that must be true; the first false one is reported with what changes says.
expect() {
  local file=$1 label=$2 f; shift 2
  if ! jq -e '.pods[0].changes | type == "object"' "$file" >/dev/null 2>&1; then
    fail "$label: no pods[0].changes in $file"; return
  fi
  for f in "$@"; do
    if ! jq -e ".pods[0].changes | $f" "$file" >/dev/null 2>&1; then
      fail "$label: not ($f): $(jq -c '.pods[0].changes | {verdict, coinciding, failing: .revisions.failing.number, last_healthy: .revisions.last_healthy.number, undo}' "$file" 2>/dev/null | cut -c1-400)"
      return
    fi
  done
  ok "$label: $(jq -r '.pods[0].changes | .verdict + ": " + ([.coinciding[]?] | join("; ")) + (if .undo then " | " + .undo else "" end)' "$file" | cut -c1-240)"
}
coinciding() { echo "([.coinciding[]?] | join(\" \") | test(\"$1\"; \"i\"))"; }
revs='.revisions.failing.number == 2 and .revisions.last_healthy.number == 1'
undo1() { echo "(.undo // \"\" | test(\"rollout undo $1\") and test(\"--to-revision=1\"))"; }

check() { # check KIND/NAME JSON LABEL
  local ref=$1 file=$2 label=$3 name=${1#*/}
  case $name in
    regress-image) expect "$file" "$label" '.verdict == "coincides"' "$(coinciding 'image')" "$(coinciding '2\\.4\\.0')" "$revs" "$(undo1 "deployment/$name")" ;;
    regress-env) expect "$file" "$label" '.verdict == "coincides"' "$(coinciding 'env|MODEL')" "$(coinciding 'model_name')" "$revs" "$(undo1 "deployment/$name")" ;;
    regress-args) expect "$file" "$label" '.verdict == "coincides"' "$(coinciding 'arg')" "$(coinciding 'max-model-length')" "$revs" "$(undo1 "statefulset/$name")" ;;
    regress-node) expect "$file" "$label" '.verdict != "no-comparison"' "$(coinciding 'c5a\\.2xlarge')" "$(coinciding 'c7i\\.2xlarge')" "$(coinciding '5\\.10\\.235')" "$revs" ;;
    regress-restart) expect "$file" "$label" '.verdict == "nothing-explains"' '.undo == null' '[.coinciding[]?] | length == 0' "$revs" ;;
  esac
}

for ref in "${SCENARIOS[@]}"; do
  name=${ref#*/}
  "$CRASHDOC" -v diagnose "$ref" -n "$NS" --kubeconfig "$RO" --format json \
    > "$OUT/$name.diagnose.json" 2> "$OUT/$name.diagnose.stderr"
  check "$ref" "$OUT/$name.diagnose.json" "diagnose $ref"
  "$CRASHDOC" capture "$ref" -n "$NS" --kubeconfig "$RO" -o "$OUT/$name.tar.gz" \
    > /dev/null 2> "$OUT/$name.capture.stderr"
  files=$(tar -tzf "$OUT/$name.tar.gz" 2>/dev/null | awk -F/ '{print $NF}' | sort -u | tr '\n' ' ')
  want="workload-pods.json nodes.json $([[ ${ref%%/*} == statefulset ]] && echo controllerrevisions.json || echo replicasets.json)"
  missing_files=""
  for f in $want; do [[ " $files " == *" $f "* ]] || missing_files+="$f "; done
  if [[ -z "$missing_files" ]]; then ok "capture $ref: the bundle holds $want"; else fail "capture $ref: the bundle lacks $missing_files(has: $files)"; fi
  "$CRASHDOC" analyze "$OUT/$name.tar.gz" --format json > "$OUT/$name.analyze.json" 2> "$OUT/$name.analyze.stderr"
  check "$ref" "$OUT/$name.analyze.json" "capture -> analyze $ref"
done

# ---------------------------------------------------------------- watch: key history
# crashdoc watch keeps the key names of each capture's ConfigMaps: two rounds
# of regress-restart crashes (its failing pod deleted, the ReplicaSet makes
# another), PGUSER removed from regress-restart-config in between;
# `crashdoc history` must place the disappearance between the two rounds.
BASE="${CRASHDOC_CLUSTER_PORT_BASE:-36400}"
DB="$OUT/history.redb"
history_count() {
  "$CRASHDOC" history deploy/regress-restart -n "$NS" --db "$DB" --format json 2>/dev/null | jq 'length' 2>/dev/null || echo 0
}
wait_captures() { # wait_captures N: until the history holds N captures of regress-restart (90 s)
  local t0; t0=$(date +%s)
  until (( $(history_count) >= $1 )); do (( $(date +%s) - t0 > 90 )) && return 1; sleep 1; done
}
"$CRASHDOC" watch -n "$NS" --kubeconfig "$RO" --db "$DB" --listen "127.0.0.1:$((BASE + 75))" > "$OUT/watch.log" 2>&1 &
wpid=$!
t0=$(date +%s)
until curl -fsS "http://127.0.0.1:$((BASE + 75))/readyz" >/dev/null 2>&1; do (( $(date +%s) - t0 > 20 )) && break; sleep 0.5; done
kubectl -n "$NS" delete pod -l crashdoc.test/scenario=regress-restart --wait=false >/dev/null
if wait_captures 2; then
  first=$(history_count)
  cut_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl -n "$NS" patch configmap regress-restart-config --type json -p '[{"op": "remove", "path": "/data/PGUSER"}]' >/dev/null
  kubectl -n "$NS" delete pod -l crashdoc.test/scenario=regress-restart --wait=false >/dev/null
  wait_captures $((first + 2)) || fail "watch: no second round of captures"
else
  fail "watch: no capture of regress-restart in 90 s (see $OUT/watch.log)"
fi
kill -TERM "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
"$CRASHDOC" history deploy/regress-restart -n "$NS" --db "$DB" > "$OUT/history.txt" 2>&1
"$CRASHDOC" history deploy/regress-restart -n "$NS" --db "$DB" --format json > "$OUT/history.json" 2>&1
line=$(grep -F 'ConfigMap crashdoc-regress/regress-restart-config (Deployment/regress-restart): key PGUSER disappeared between capture' "$OUT/history.txt")
# The change lies between the last capture before the patch and the first after it.
between=$(jq -r --arg cut "${cut_at:-}" '
  [.[] | {id, at: .observed_at}] as $all
  | [.[] | .config_key_changes[]? | select(.removed == ["PGUSER"] and .added == [] and .kind == "ConfigMap")] as $c
  | if ($c | length) != 1 then "changes: \($c | length)"
    else $c[0] as $x
      | ([$all[] | select(.at < $cut) | .id] | max) as $before
      | ([$all[] | select(.at >= $cut) | .id] | min) as $after
      | if $x.before_id == $before and $x.after_id == $after then "ok \($x.before_id) \($x.after_id)"
        else "between \($x.before_id) and \($x.after_id), expected \($before) and \($after)" end end' "$OUT/history.json" 2>/dev/null)
keys_kept=$(jq '[.[] | .config_keys[]? | select(.name == "regress-restart-config")] | length' "$OUT/history.json" 2>/dev/null)
if [[ -n "$line" && "$between" == ok* ]]; then
  ok "watch -> history: $(sed 's/ (Deployment[^)]*)//' <<<"$line" | cut -c1-200) ($keys_kept captures kept its key names)"
else
  fail "watch -> history: line '${line:-none}', json: ${between:-unreadable} (see $OUT/history.txt)"
fi
# Key names only: no "KEY": "value" of the ConfigMap anywhere in the history's JSON.
if grep -qE '"PG(USER|DATABASE)"[[:space:]]*:' "$OUT/history.json"; then
  fail "watch -> history: a ConfigMap value is in the history"
fi

if audit=$("$TESTS/audit-verbs.sh" crashdoc-e2e-reader 2>&1); then
  ok "audit log: the read-only user used only get/list/watch ($(awk '{s+=$1} END {print s}' <<< "$audit") requests so far)"
else
  fail "audit log: $audit"
fi

# ---------------------------------------------------------------- figures
# Not judged: the cost of the revisions source for one Deployment pod (the
# failing pod of regress-image, 3 pods on one node), pod and workload target.
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"
pod=$(kubectl -n "$NS" get pods -l crashdoc.test/scenario=regress-image -o jsonpath='{.items[0].metadata.name}')
echo "== figures: diagnose of pod/$pod and deploy/regress-image, $RUNS runs each, median"
for target in "pod/$pod" deploy/regress-image; do
  for variant in before now; do
    : > "$OUT/bench.ms"
    for _ in $(seq "$RUNS"); do
      t=$(now_ms)
      if [[ $variant == before ]]; then
        CRASHDOC_REVISIONS=0 "$CRASHDOC" -v diagnose "$target" -n "$NS" --kubeconfig "$RO" --format json > /dev/null 2> "$OUT/bench.stderr"
      else
        "$CRASHDOC" -v diagnose "$target" -n "$NS" --kubeconfig "$RO" --format json > /dev/null 2> "$OUT/bench.stderr"
      fi
      echo $(( $(now_ms) - t )) >> "$OUT/bench.ms"
    done
    ms=$(median < "$OUT/bench.ms")
    echo "$ms" > "$OUT/bench.$variant.${target%%/*}"
    echo "diagnose $target, $variant (revisions source $([[ $variant == before ]] && echo off || echo on)): ${ms} ms, $(grep -o '[0-9]* API requests in [0-9]* sequential waves' "$OUT/bench.stderr") ($(grep -E '^ +(resolve|wave)' "$OUT/bench.stderr" | tr -s ' ' | sed 's/^ //' | paste -sd ';' - | sed 's/;/; /g'), last run)"
  done
done
: > "$OUT/kubectl.ms"
for _ in $(seq "$RUNS"); do
  t=$(now_ms)
  playbook "$NS" "$pod"
  echo $(( $(now_ms) - t )) >> "$OUT/kubectl.ms"
done
k=$(median < "$OUT/kubectl.ms")
echo "five kubectl commands in sequence: ${k} ms"
awk -v b="$(cat "$OUT/bench.before.pod")" -v n="$(cat "$OUT/bench.now.pod")" -v k="$k" \
  'BEGIN {printf "ratio diagnose/kubectl: before %.2f, now %.2f (target < 0.5); now/before %.2f\n", b / k, n / k, n / b}'

echo "regressions.sh took $(( $(date +%s) - t_start )) s"
echo "$passed passed, $failed failed"
(( failed == 0 ))
