#!/usr/bin/env bash
# lint-live.sh: `crashdoc lint --live -n crashdoc-e2e` against the real
# control plane, as the read-only user, with the scenarios applied
# (tests/cluster/run.sh runs it; or: scripts/cluster up && scripts/cluster scenarios).
#
# Checks that:
#   the scenarios whose crash loop a manifest check can prevent are flagged
#   with a finding leading to their expected cause (probe kill, OOM of a model
#   server, missing Secret key), and the same findings come from the offline
#   manifests (tests/cluster/scenarios/*.yaml);
#   the lint of a TARGET (deploy/NAME) lints that workload only;
#   with no --capacity the rollout capacity comes from the nodes' allocatable
#   (a list of nodes), and the output says so;
#   no Secret value planted in the scenarios appears in any output;
#   the audit log shows the read-only user used only get and list for it.
# Ends with "N passed, M failed"; exit 1 if anything failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
# shellcheck source=tests/cluster/lib.sh
. "$TESTS/lib.sh"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
RO="$ROOT/target/cluster/kubeconfig-readonly"
AUDIT="$ROOT/target/cluster/audit.log"
NS=crashdoc-e2e
OUT="$ROOT/target/cluster/lint-live"
rm -rf "$OUT"; mkdir -p "$OUT"
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
[[ -x "$CRASHDOC" && -f "$RO" ]] || { echo "FAIL no $CRASHDOC or no $RO (start the cluster first)"; echo "0 passed, 1 failed"; exit 1; }

before=$( [[ -f "$AUDIT" ]] && wc -l < "$AUDIT" || echo 0)
"$CRASHDOC" lint --live -n "$NS" --kubeconfig "$RO" --format json > "$OUT/live.json" 2> "$OUT/live.err"
code=$?
if [[ $code == 1 ]]; then ok "lint --live -n $NS: exit 1 (errors found), $(jq '.objects' "$OUT/live.json") objects"
else fail "lint --live -n $NS: exit $code: $(head -c 300 "$OUT/live.err")"; fi
"$CRASHDOC" lint --live -n "$NS" --kubeconfig "$RO" > "$OUT/live.txt" 2>&1

# No --capacity: the nodes' allocatable, said in the JSON and the text.
src=$(jq -r '.capacity.source // empty' "$OUT/live.json" 2>/dev/null)
if [[ "$src" == *"(from the allocatable of "* ]] && grep -q '^rollout capacity: .*allocatable of' "$OUT/live.txt"; then
  ok "lint --live: rollout capacity from the nodes: $src"
else
  fail "lint --live: rollout capacity not from the nodes (${src:-none}): $(grep -m1 'cannot list nodes' "$OUT/live.err")"
fi
"$CRASHDOC" lint --live -n "$NS" --kubeconfig "$RO" --capacity gpu=3 --format json > "$OUT/capacity.json" 2>/dev/null
src=$(jq -r '.capacity.source // empty' "$OUT/capacity.json" 2>/dev/null)
if [[ "$src" == "3 GPU (from --capacity)" ]]; then ok "lint --live --capacity gpu=3: the flag wins over the nodes"
else fail "lint --live --capacity gpu=3: capacity ${src:-none}"; fi
"$CRASHDOC" lint "$TESTS"/scenarios/*.yaml --format json > "$OUT/offline.json" 2>&1

# The preventable scenarios: workload, the check, the cause it leads to.
while read -r workload check cause; do
  got=$(jq -r --arg w "$workload" --arg c "$check" \
    '.findings[] | select(.object.kind + "/" + .object.name == $w and .check == $c) | .cause' "$OUT/live.json" | head -n1)
  if [[ "$got" == "$cause" ]]; then ok "live: $workload flagged by $check (leads to $cause)"
  else fail "live: $workload not flagged by $check"; fi
  off=$(jq -r --arg w "$workload" --arg c "$check" \
    '[.findings[] | select(.object.kind + "/" + .object.name == $w and .check == $c)] | length' "$OUT/offline.json")
  if [[ "$off" -ge 1 ]]; then ok "offline manifest: $workload flagged by $check too"
  else fail "offline manifest: $workload not flagged by $check"; fi
done <<'EOF'
Deployment/vllm-slow-start probe/liveness-without-startup probe-kill
Deployment/vllm-oom resources/model-memory-below-weights oom-killed
Deployment/chat-gateway ref/missing-key config-ref-missing
EOF

# A TARGET narrows the workloads, not the ConfigMaps and Secrets they use.
"$CRASHDOC" lint --live deploy/chat-gateway -n "$NS" --kubeconfig "$RO" --format json > "$OUT/target.json" 2> "$OUT/target.err"
others=$(jq '[.findings[] | select(.object.name != "chat-gateway")] | length' "$OUT/target.json" 2>/dev/null || echo x)
mine=$(jq '[.findings[] | select(.check == "ref/missing-key")] | length' "$OUT/target.json" 2>/dev/null || echo 0)
if [[ "$others" == 0 && "$mine" -ge 1 ]]; then ok "lint --live deploy/chat-gateway: that workload only, its missing key found"
else fail "lint --live deploy/chat-gateway: $others findings on other objects, $mine missing-key: $(head -c 200 "$OUT/target.err")"; fi

# Secret values planted in the scenarios must appear nowhere.
check_no_leaks "$TESTS/scenarios" "$OUT" "any lint output"

# Only get and list, by the read-only user, since this script started.
if [[ -f "$AUDIT" ]]; then
  sleep 2  # the audit backend writes batches
  tail -n +"$((before + 1))" "$AUDIT" > "$OUT/audit.log"
  verbs=$(jq -r 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-reader") | .verb' "$OUT/audit.log" | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd ' ' -)
  if [[ -n "$verbs" ]] && ! jq -r 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-reader") | .verb' "$OUT/audit.log" | grep -qvxE 'get|list'; then
    ok "audit log: lint --live used only get/list ($verbs)"
  else
    fail "audit log: lint --live verbs: ${verbs:-none seen}"
  fi
else
  fail "no audit log at $AUDIT"
fi

echo "$passed passed, $failed failed"
(( failed == 0 ))
