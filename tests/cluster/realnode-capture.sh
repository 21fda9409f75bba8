#!/usr/bin/env bash
# The capture claim, measured on the real node: `crashdoc watch` must keep each
# crashed run's own output, before the next crash overwrites it.
#
# tests/cluster/realnode/scenarios-capture/token-loop.yaml runs four replicas
# whose every run prints a token of its own (crashprog token), then fails to
# reach a Service with no endpoints and exits 1, under the kubelet's default
# back-off. While they crash:
#   - crashdoc watch (as the read-only watcher user) follows the namespace;
#   - the truth is taken on the node itself: a loop copies the kubelet's own
#     log files (podLogsDir/NS_POD_UID/CONTAINER/N.log, one per run N) before
#     the kubelet deletes them, so each run's token is known independently.
# Then, for every crash of the truth (run N of a container, ended):
#   - a capture exists for (pod uid, container, N);
#   - the bundle's log of that run (history's logs.file) holds run N's token and
#     no other run's token;
#   - the capture was complete D s after the run's finishedAt, against its
#     back-off window (run N+1's start minus run N's end).
# Then the Deployment is deleted: `crashdoc history` still names the cause, and
# `crashdoc analyze` of an exported bundle does too.
#
# Prints one line per check and the figures, then "N passed, M failed".
# CRASHDOC_CAPTURE_CRASHES (default 20): the crashes to wait for.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
# shellcheck source=tests/cluster/lib.sh
. "$TESTS/lib.sh"
STATE="$ROOT/target/cluster"
OUT="$STATE/realnode-capture"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
WATCHER="$STATE/kubeconfig-watcher"
NS=crashdoc-real-capture
BASE="${CRASHDOC_CLUSTER_PORT_BASE:-36400}"
PORT=$((BASE + 55))
WANT=${CRASHDOC_CAPTURE_CRASHES:-20}
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$STATE/kubeconfig"

passed=0 failed=0
# secs_between T1 T2: T2 - T1 in seconds (RFC 3339 times, GNU date)
secs_between() { awk -v a="$(date -d "$1" +%s.%N)" -v b="$(date -d "$2" +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

if [[ -f "$STATE/realnode.skipped" ]]; then
  echo "skipped: the real node did not start on this machine: $(cat "$STATE/realnode.skipped")"
  echo "0 passed, 0 failed"; exit 0
fi
kubectl get node crashdoc-real-0 >/dev/null 2>&1 || { echo "FAIL no real node"; echo "0 passed, 1 failed"; exit 1; }
[[ -x "$CRASHDOC" ]] || { echo "FAIL $CRASHDOC not built"; echo "0 passed, 1 failed"; exit 1; }
LOGDIR=$(awk '$1 == "podLogsDir:" {print $2}' "$STATE/realnode/kubelet.yaml")
[[ -d "$LOGDIR" ]] || { echo "FAIL no podLogsDir in $STATE/realnode/kubelet.yaml"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT/truth"

WATCH_PID="" TRUTH_PID=""
cleanup() {
  [[ -n "$WATCH_PID" ]] && kill "$WATCH_PID" 2>/dev/null
  [[ -n "$TRUTH_PID" ]] && kill "$TRUTH_PID" 2>/dev/null
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
}
trap cleanup EXIT

kubectl delete namespace "$NS" --wait=true --timeout=60s >/dev/null 2>&1
kubectl create namespace "$NS" >/dev/null
# the watcher identity is read-only; watch.sh grants it its Lease, we need none here
"$CRASHDOC" -v watch -n "$NS" --kubeconfig "$WATCHER" --db "$OUT/history.redb" --listen "127.0.0.1:$PORT" \
  > "$OUT/watch.log" 2>&1 < /dev/null &
WATCH_PID=$!
for _ in $(seq 1 60); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/readyz") == 200 ]] && break
  sleep 0.5
done

# the truth: every 0.2 s, the kubelet's log file of every run, copied while it exists
(
  while :; do
    for f in "$LOGDIR/${NS}"_*/*/*.log; do
      [[ -f "$f" ]] || continue
      rel=${f#"$LOGDIR/"}; mkdir -p "$OUT/truth/$(dirname "$rel")"
      cp -f "$f" "$OUT/truth/$rel" 2>/dev/null
    done
    sleep 0.2
  done
) &
TRUTH_PID=$!

kubectl -n "$NS" apply -f "$TESTS/realnode/scenarios-capture/" -l '!app.kubernetes.io/name' >/dev/null
kubectl -n "$NS" apply -f "$TESTS/realnode/scenarios-capture/" -l 'app.kubernetes.io/name' >/dev/null
t0=$(now_ms)
restarts() { kubectl -n "$NS" get pods -o json | jq '[.items[].status.containerStatuses[]?.restartCount] | add // 0'; }
deadline=$(( $(date +%s) + ${CRASHDOC_CAPTURE_TIMEOUT:-420} ))
while (( $(restarts) < WANT )) && (( $(date +%s) < deadline )); do sleep 3; done
got_restarts=$(restarts)
echo "# $got_restarts restarts after $(( ($(now_ms) - t0) / 1000 )) s (wanted $WANT)"
sleep 8   # the last crash's capture
kubectl -n "$NS" get pods -o json > "$OUT/pods.json"

# truth.tsv: uid pod container N token start(RFC3339) for every run file copied;
# a run ended when a later run of the same container exists, or the status shows it terminated
for f in "$OUT/truth/${NS}"_*/*/*.log; do
  [[ -f "$f" ]] || continue
  d=$(basename "$(dirname "$(dirname "$f")")")   # NS_POD_UID
  uid=${d##*_}; rest=${d#"${NS}_"}; pod=${rest%_*}
  c=$(basename "$(dirname "$f")"); n=$(basename "$f" .log)
  tok=$(grep -o 'crashdoc-token [0-9a-f]*' "$f" | head -1 | awk '{print $2}')
  start=$(grep -o 'crashdoc-token [0-9a-f]* run-started [^ ]*' "$f" | head -1 | awk '{print $4}')
  # the run's end: the CRI timestamp of its last line (it exits right after printing it)
  end=$(tail -n1 "$f" | awk '{print $1}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$uid" "$pod" "$c" "$n" "$tok" "$start" "$end"
done | sort -k1,1 -k3,3 -k4,4n > "$OUT/truth.tsv"

"$CRASHDOC" history --db "$OUT/history.redb" -n "$NS" --format json --limit 1000000 > "$OUT/history.json" 2> "$OUT/history.stderr"

# crashes of the truth: every run N with a run N+1 copied (it ended and restarted)
crashes=$(awk -F'\t' '{key = $1 "/" $3; n[key "/" $4] = 1; row[key "/" $4] = $0}
  END {for (k in row) {split(k, a, "/"); if ((a[1] "/" a[2] "/" (a[3] + 1)) in n) print row[k]}}' "$OUT/truth.tsv" | sort)
ncrash=$(grep -c . <<< "$crashes")
right=0 wrong=0 nocap=0 other=()
delays=() backoffs=() kept=() within=0 late=()
mkdir -p "$OUT/bundles"
while IFS=$'\t' read -r uid pod c n tok start end; do
  [[ -z "$uid" ]] && continue
  rec=$(jq -c --arg u "$uid" --arg c "$c" --argjson n "$n" \
    '[.[] | select(.pod_uid == $u and .container == $c and .restart_count == $n)] | first // empty' "$OUT/history.json")
  if [[ -z "$rec" ]]; then nocap=$((nocap + 1)); other+=("$pod/$c run $n: no capture"); continue; fi
  id=$(jq -r '.id' <<< "$rec")
  b="$OUT/bundles/$id"
  if [[ ! -d "$b" ]]; then
    mkdir -p "$b"
    "$CRASHDOC" history --db "$OUT/history.redb" --export "$id" -o "$b.tar.gz" >/dev/null 2>&1 && tar -xzf "$b.tar.gz" -C "$b"
  fi
  file=$(jq -r '.logs.file // empty' <<< "$rec")
  log=$(find "$b" -path "*/$pod/${file:-logs-previous.$c.txt}" 2>/dev/null | head -1)
  toks=$( [[ -n "$log" ]] && grep -o 'crashdoc-token [0-9a-f]*' "$log" | awk '{print $2}' | sort -u)
  if [[ "$toks" == "$tok" && -n "$tok" ]]; then right=$((right + 1))
  else wrong=$((wrong + 1)); other+=("$pod/$c run $n: ${file:-?} holds token(s) [$(tr '\n' ' ' <<< "$toks")] want $tok (matched=$(jq -r '.logs.matched // "?"' <<< "$rec"))"); fi
  # delay: the capture complete (captured_at) after the run's end (its last log line);
  # back-off: the next run's start after it; kept: the next run's end after it (the
  # kubelet deletes a dead run's container, and its log, when the next run dies:
  # kubelet.go's podContainerDeletor keeps one dead container per name)
  # watch records capture_delay_ms from finishedAt (whole seconds) to the capture's end:
  # their sum is when the capture was complete
  fin=$(jq -r '.finished_at // empty' <<< "$rec"); dms=$(jq -r '.capture_delay_ms // empty' <<< "$rec")
  cap=""
  [[ -n "$fin" && -n "$dms" ]] && cap=$(date -u -d "@$(awk -v a="$(date -d "$fin" +%s)" -v d="$dms" 'BEGIN {printf "%.3f", a + d / 1000}')" +%Y-%m-%dT%H:%M:%S.%3NZ)
  read -r nstart nend < <(awk -F'\t' -v u="$uid" -v c="$c" -v m=$((n + 1)) '$1 == u && $3 == c && $4 == m {print $6, $7}' "$OUT/truth.tsv")
  if [[ -n "$cap" && -n "$end" ]]; then
    dl=$(secs_between "$end" "$cap"); delays+=("$dl")
    if [[ -n "${nstart:-}" ]]; then
      bo=$(secs_between "$end" "$nstart"); backoffs+=("$bo")
      if awk -v d="$dl" -v b="$bo" 'BEGIN {exit !(d < b)}'; then within=$((within + 1))
      elif (( n > 0 )); then late+=("$pod/$c run $n: complete ${dl} s after, back-off ${bo} s"); fi
    fi
    # the next run's end is known only if it ended (a later run exists)
    if awk -F'\t' -v u="$uid" -v c="$c" -v m=$((n + 2)) '$1 == u && $3 == c && $4 == m {f = 1} END {exit !f}' "$OUT/truth.tsv"; then
      kept+=("$(secs_between "$end" "$nend")")
    fi
  fi
done <<< "$crashes"

echo "# capture figure: $right/$ncrash crashes captured with their own run's token ($wrong with another run's output or none, $nocap without a capture)"
for o in "${other[@]:0:6}"; do echo "#   $o"; done
if (( ncrash >= WANT * 3 / 4 && right == ncrash )); then ok "every crash's capture holds its own run's output: $right/$ncrash"
else fail "captures holding their own run's output: $right/$ncrash (want all, and at least $((WANT * 3 / 4)) crashes)"; fi
if (( ${#delays[@]} )); then
  dmax=$(printf '%s\n' "${delays[@]}" | sort -n | tail -1); dmed=$(printf '%s\n' "${delays[@]}" | median)
  bmin=$(printf '%s\n' "${backoffs[@]:-0}" | sort -n | head -1); bmed=$(printf '%s\n' "${backoffs[@]:-0}" | median)
  kmin=$(printf '%s\n' "${kept[@]:-0}" | sort -n | head -1)
  echo "# capture complete after the crash (its last log line): median ${dmed} s, max ${dmax} s, over ${#delays[@]} captures"
  echo "# back-off (the next run's start after the crash): median ${bmed} s, min ${bmin} s (the kubelet restarts a first crash at once); $within of ${#backoffs[@]} captures complete within it"
  echo "# the crashed run's log is kept until the next run ends: min ${kmin} s, over ${#kept[@]} crashes"
  # A first crash (run 0) is restarted at once (kuberuntime_manager.go doBackOff: no
  # back-off entry yet), so no capture can finish within its back-off: its output is
  # read with --previous while the next run lives. Every later crash has a back-off,
  # and its capture must be complete within it.
  if (( ${#late[@]} == 0 )); then
    ok "every capture of a crash with a back-off (run 1 and later) complete within it; first crashes: read from --previous during the next run"
  else fail "captures complete after their back-off: ${late[*]:0:3}"; fi
else
  fail "no capture delays (history.json has no capture_delay_ms)"
fi

# the evidence outlives the pods
kubectl -n "$NS" delete deployment token-loop --wait=true --timeout=60s >/dev/null 2>&1
for _ in $(seq 1 30); do [[ $(kubectl -n "$NS" get pods --no-headers 2>/dev/null | wc -l) == 0 ]] && break; sleep 1; done
"$CRASHDOC" history deploy/token-loop -n "$NS" --db "$OUT/history.redb" --format json --limit 1000 > "$OUT/history-after.json" 2>&1
causes=$(jq -r '[.[].cause] | group_by(.) | map("\(.[0]) x\(length)") | join(", ")' "$OUT/history-after.json" 2>/dev/null)
top=$(jq -r '[.[].cause] | group_by(.) | max_by(length) | .[0] // "none"' "$OUT/history-after.json" 2>/dev/null)
if [[ $(kubectl -n "$NS" get pods --no-headers 2>/dev/null | wc -l) == 0 && $top == dependency-unreachable ]]; then
  ok "pods deleted; crashdoc history deploy/token-loop still names the cause: $causes"
else fail "after deleting the pods, history says: ${causes:-nothing} ($(head -c 200 "$OUT/history-after.json"))"; fi
id=$(jq -r '.[0].id // empty' "$OUT/history-after.json" 2>/dev/null)
if [[ -n "$id" ]] && "$CRASHDOC" history --db "$OUT/history.redb" --export "$id" -o "$OUT/after.tar.gz" >/dev/null 2>&1; then
  got=$("$CRASHDOC" analyze "$OUT/after.tar.gz" --format json 2>/dev/null | jq -r '.pods[0].diagnoses[0].cause // "none"')
  if [[ $got == dependency-unreachable ]]; then ok "analyze of capture $id's bundle, its pod gone: $got"
  else fail "analyze of capture $id's bundle: $got"; fi
else fail "cannot export a capture after the pods were deleted"; fi

# read-only: the watcher's requests in the audit log are get, list and watch only, the
# Lease aside (watch.sh's leader-election drills, earlier in the same cluster, write one)
if audit=$(CRASHDOC_AUDIT_LEASES=1 "$TESTS/audit-verbs.sh" crashdoc-e2e-watcher 2>&1); then
  ok "audit log: crashdoc watch's user used only get/list/watch, leases aside ($(awk '{s+=$1} END {print s}' <<< "$audit") requests)"
else fail "audit log: $audit"; fi

echo "$passed passed, $failed failed"
(( failed == 0 ))
