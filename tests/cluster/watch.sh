#!/usr/bin/env bash
# Reliability drills for `crashdoc watch` against the running test cluster.
# Expects `scripts/cluster up` and `scripts/cluster scenarios` (tests/cluster/run.sh
# calls this script after live.sh). Ground truth comes from the real API server
# (the runs each container's status shows ended, before/after: ENDED_RUNS_JQ in
# lib.sh) and from tests/cluster/tools/crashloop-storm, which plays the kubelet:
# one pods/status update per container termination (waiting CrashLoopBackOff,
# lastState.terminated = the crashed run, restartCount unchanged; restartCount+1
# only when the next run starts), paced, counted.
#
#   tests/cluster/watch.sh                  drills basic, apiserver, kill, leader
#   tests/cluster/watch.sh basic kill       only these
#   CRASHDOC_WATCH_STORM=1 tests/cluster/watch.sh     also the storm (5,000 pods, 100/s for 60 s)
#   tests/cluster/watch.sh storm            only the storm
#
# basic      watch crashdoc-e2e, re-create the crash-looping scenario pods: every
#            termination captured once, history lists them, --export bundles give
#            `analyze` the same cause, the restarts counter equals the increase of
#            ended runs (per workload), /healthz and /readyz.
# apiserver  crashdoc SIGSTOPped, terminations, the API server stopped (/healthz 200,
#            /readyz 503 meanwhile) and started again: its watch cache starts at a
#            newer resourceVersion, so crashdoc's resume gets 410 Gone and re-lists;
#            the counter still equals the ended runs' increase, each pod's last
#            termination is captured, no duplicates.
# kill       SIGKILL, terminations while down, restart on the same --db: counted and
#            captured; then a SIGKILL in the middle of a flow of terminations.
# leader     two replicas with --leader-elect on one Lease, separate --db: only the
#            leader records; SIGKILL the leader, the other takes over within the lease
#            duration; the two histories together hold every termination, none twice.
# storm      5,000 watched pods, 100 terminations/s for 60 s: counter total == ground
#            truth; RSS every second (start/peak/end), CPU seconds, capture kinds, lag.
# Finally: the audit log shows only get/list/watch for crashdoc's users, except the
# Lease of the leader drill.
#
# Prints "ok"/"FAIL" lines with figures, then "N passed, M failed"; exits non-zero
# if any failed. Everything it leaves is in target/cluster/watch/.
#
# CRASHDOC_BIN=path uses another crashdoc than target/release/crashdoc.
# STORM_PODS, STORM_RATE, STORM_SECONDS change the storm (default 5000, 100, 60).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
STATE="$ROOT/target/cluster"
OUT="$STATE/watch"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
if [[ -z "${CRASHDOC_BIN:-}" && ! -x "$CRASHDOC" && -n "${CARGO_TARGET_DIR:-}" && -x "$CARGO_TARGET_DIR/release/crashdoc" ]]; then
  CRASHDOC="$CARGO_TARGET_DIR/release/crashdoc"
fi
# shellcheck source=tests/cluster/lib.sh
. "$TESTS/lib.sh"
RO="$STATE/kubeconfig-readonly"      # crashdoc-e2e-reader: get/list/watch only
WATCHER="$STATE/kubeconfig-watcher"  # crashdoc-e2e-watcher: the same, plus the drill Lease
E2E=crashdoc-e2e
DRILL_NS=crashdoc-watch
STORM_NS=crashdoc-storm
LEASE=crashdoc-drill
BASE="${CRASHDOC_CLUSTER_PORT_BASE:-36400}"
eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$STATE/kubeconfig"

passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
check() { # check COND-EXIT-CODE MESSAGE: ok when the previous test succeeded
  if [[ $1 == 0 ]]; then ok "$2"; else fail "$2"; fi
}
info() { echo "     $*"; }
now_ms() { date +%s%3N; }
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }

[[ -x "$CRASHDOC" ]] || { echo "FAIL $CRASHDOC not built"; echo "0 passed, 1 failed"; exit 1; }
if ! "$CRASHDOC" watch --help >/dev/null 2>&1; then
  echo "FAIL $CRASHDOC has no 'watch' command (build a crashdoc with crashdoc watch)"; echo "0 passed, 1 failed"; exit 1
fi
for f in "$RO" "$WATCHER"; do
  [[ -f "$f" ]] || { echo "FAIL no $f (scripts/cluster up writes it)"; echo "0 passed, 1 failed"; exit 1; }
done
STORM="$("$TESTS/tools/build.sh")/crashloop-storm" || { echo "FAIL cannot build tests/cluster/tools"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT"

# ------------------------------------------------------------------ helpers
declare -A PID=() PORT=()
next_port=$((BASE + 61))

start_watch() { # start_watch NAME KUBECONFIG DB ARGS...: crashdoc watch in the background
  local name=$1 kc=$2 db=$3; shift 3
  local port=${PORT[$name]:-}
  if [[ -z "$port" ]]; then port=$next_port; next_port=$((next_port + 1)); PORT[$name]=$port; fi
  "$CRASHDOC" -v watch --kubeconfig "$kc" --db "$db" --listen "127.0.0.1:$port" "$@" \
    >> "$OUT/$name.log" 2>&1 < /dev/null &
  PID[$name]=$!
  disown "$!"   # no "Killed" job notices from the shell; stop_watch polls the pid
  echo "---- started pid ${PID[$name]} at $(date -u +%T): watch --db $db --listen 127.0.0.1:$port $*" >> "$OUT/$name.log"
}
alive() { [[ -n "${PID[$1]:-}" ]] && kill -0 "${PID[$1]}" 2>/dev/null; }
stop_watch() { # stop_watch NAME [SIGNAL]: TERM (default) and wait up to 60 s, then KILL
  local name=$1 sig=${2:-TERM} pid=${PID[$1]:-}
  [[ -n "$pid" ]] || return 0
  kill -CONT "$pid" 2>/dev/null
  kill "-$sig" "$pid" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "---- pid $pid did not stop within 60 s of SIG$sig; SIGKILL" >> "$OUT/$name.log"
    kill -KILL "$pid" 2>/dev/null
  fi
  echo "---- pid $pid exited after SIG$sig" >> "$OUT/$name.log"
  PID[$name]=""
}
cleanup() {
  local n
  for n in "${!PID[@]}"; do [[ -n "${PID[$n]}" ]] && { kill -CONT "${PID[$n]}"; kill -KILL "${PID[$n]}"; } 2>/dev/null; done
  # a drill that failed during an API server outage must not leave it down
  [[ -f "$STATE/apiserver.pid" ]] || "$ROOT/scripts/cluster" start-apiserver >/dev/null 2>&1 || true
}
trap cleanup EXIT

http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${PORT[$1]}$2"; }
metrics() { curl -s --max-time 5 "http://127.0.0.1:${PORT[$1]}/metrics"; }
# metric NAME METRIC [LABEL-REGEX]: sum of the samples of METRIC whose labels match
metric() {
  metrics "$1" | awk -v m="$2" -v re="${3:-}" '
    $1 ~ "^" m "({|$)" && (re == "" || $1 ~ re) { s += $NF; n++ }
    END { printf "%d\n", s }'
}
restarts() { metric "$1" crashdoc_container_restarts_total "${2:-}"; }
captures() { metric "$1" crashdoc_captures_total; }
wait_until() { # wait_until SECONDS CMD...: 0 as soon as CMD succeeds, 1 on timeout
  local end=$(( $(date +%s) + $1 )); shift
  until "$@"; do (( $(date +%s) < end )) || return 1; sleep 0.5; done
}
is_ready() { [[ $(http_code "$1" /readyz) == 200 ]]; }
counter_is() { [[ $(restarts "$1") -ge $2 ]]; }
# settled NAME: the queue is empty and every seen termination has a capture outcome
settled() {
  local m; m=$(metrics "$1")
  local q c r
  q=$(awk '$1 == "crashdoc_capture_queue_depth" {print $NF}' <<<"$m")
  c=$(awk '$1 ~ /^crashdoc_captures_total/ {s += $NF} END {print s + 0}' <<<"$m")
  r=$(awk '$1 ~ /^crashdoc_container_restarts_total/ && $1 !~ /reason="Unobserved"/ {s += $NF} END {print s + 0}' <<<"$m")
  [[ "${q:-1}" == 0 && "$c" -ge "$r" ]]
}
wait_settled() { # wait_settled NAME SECONDS: queue empty and counters stable for 2 s
  local name=$1 end=$(( $(date +%s) + $2 )) prev="" cur
  while (( $(date +%s) < end )); do
    cur="$(restarts "$name") $(captures "$name")"
    if settled "$name" && [[ "$cur" == "$prev" ]]; then return 0; fi
    prev=$cur; sleep 2
  done
  return 1
}

# snapshot NS: uid pod container ended-runs owner-kind owner, for every container of every live
# pod. Ended runs, not restartCount: the kubelet counts a restart when it creates the next
# container, so a container backing off after run R's crash shows restartCount R with runs
# 0..R ended, a running one restartCount R with runs 0..R-1 ended (ENDED_RUNS_JQ, lib.sh).
snapshot() {
  kubectl -n "$1" get pods -o json | jq -r "$ENDED_RUNS_JQ"'
    .items[] | select(.metadata.deletionTimestamp == null) | . as $p
    | (($p.metadata.ownerReferences // []) | map(select(.controller)) | first // {}) as $o
    | ($p.metadata.labels["pod-template-hash"] // "") as $h
    | (if $o.kind == "ReplicaSet" and $h != "" and ($o.name | endswith("-" + $h))
       then ["Deployment", ($o.name | .[0:(length - ($h | length) - 1)])] else [($o.kind // ""), ($o.name // "")] end) as $w
    | ((($p.status.initContainerStatuses // [])[] | [., true]), (($p.status.containerStatuses // [])[] | [., false]))
    | . as [$c, $init]
    | [$p.metadata.uid, $p.metadata.name, $c.name, ($c | ended($p; $init)), $w[0], $w[1]] | @tsv'
}
# increase BEFORE AFTER [by-owner]: the increase of ended runs (containers absent before count from 0)
increase() {
  awk -F'\t' -v by="${3:-}" '
    NR == FNR { rc[$1 "/" $3] = $4; next }
    { d = $4 - (($1 "/" $3) in rc ? rc[$1 "/" $3] : 0); t += d; if (by) o[$5 "/" $6] += d }
    END { if (by) { for (k in o) if (o[k]) print k "\t" o[k] } else print t + 0 }' "$1" "$2"
}
# expected terminations BEFORE AFTER: uid pod container N for every termination between two
# snapshots: the runs from..ended-1 (a run's N is the restart count it was created with)
expected_terminations() {
  awk -F'\t' 'NR == FNR { rc[$1 "/" $3] = $4; next }
    { from = ($1 "/" $3) in rc ? rc[$1 "/" $3] : 0; for (n = from; n < $4; n++) print $1 "\t" $2 "\t" $3 "\t" n }' "$1" "$2"
}
history_json() { # history_json DB NAMESPACE > records.json
  "$CRASHDOC" history --db "$1" -n "$2" --format json --limit 1000000
}
# coverage RECORDS.json TRUTH.tsv: JSON figures; TRUTH rows are uid pod container N ...
coverage() {
  jq -c --rawfile t "$2" '
    ([.[] | "\(.pod_uid)/\(.container)/\(.restart_count)"]) as $rec
    | ($rec | map({(.): true}) | add // {}) as $set
    | ($t | split("\n") | map(select(length > 0) | split("\t"))) as $rows
    | ($rows | map("\(.[0])/\(.[2])/\(.[3])")) as $truth
    | ($rows | group_by(.[0] + "/" + .[2]) | map(max_by(.[3] | tonumber) | "\(.[0])/\(.[2])/\(.[3])")) as $last
    | {records: ($rec | length), unique: ($set | length), duplicates: (($rec | length) - ($set | length)),
       truth: ($truth | length), covered: ([$truth[] | select($set[.])] | length),
       last: ($last | length), last_covered: ([$last[] | select($set[.])] | length),
       missing: ([$truth[] | select($set[.] | not)] | .[0:5]),
       kinds: (group_by(.kind) | map({(.[0].kind): length}) | add // {})}' "$1"
}
# lost RECORDS.json TRUTH.tsv: "; lost: POD N=n finishedAt T written at HH:MM:SS.mmm, ..." (first 4), or nothing
lost() {
  jq -r --rawfile t "$2" '([.[] | "\(.pod_uid)/\(.container)/\(.restart_count)"] | map({(.): true}) | add // {}) as $s
    | [$t | split("\n")[] | select(length > 0) | split("\t") | select($s["\(.[0])/\(.[2])/\(.[3])"] | not)
       | "\(.[1]) N=\(.[3]) finishedAt \(.[6]) written at \(.[8] | tonumber / 1000 | strftime("%H:%M:%S")).\(.[8] | tonumber % 1000 | tostring | "00" + . | .[-3:])"]
    | if length > 0 then "; lost: " + (.[0:4] | join(", ")) else "" end' "$1"
}
# dups RECORDS.json: (uid, container, N) appearing more than once
dups() { jq '[.[] | "\(.pod_uid)/\(.container)/\(.restart_count)"] | group_by(.) | map(select(length > 1)) | length' "$1"; }
storm() { "$STORM" "$@"; }
drill_start() { DRILL_T0=$(now_ms); echo "== drill $1"; }
drill_end() { info "drill $1 took $(secs_since "$DRILL_T0") s"; }

want() { # want DRILL: selected on the command line (default: all but storm, storm with CRASHDOC_WATCH_STORM=1)
  if (( ${#DRILLS[@]} )); then [[ " ${DRILLS[*]} " == *" $1 "* ]]; return; fi
  [[ $1 != storm || "${CRASHDOC_WATCH_STORM:-0}" == 1 ]]
}
DRILLS=("$@")
T_ALL=$(now_ms)

# The small namespace of the apiserver/kill/leader drills: 20 running pods in two
# Deployments (kwok starts them; crashloop-storm crashes them), and the Lease
# rights of leader election for the watcher identity.
setup_drill_ns() {
  [[ -n "${DRILL_NS_READY:-}" ]] && return 0
  storm setup -n "$DRILL_NS" --pods 20 --nodes 1 --deployments 2 --timeout 5m > /dev/null 2> "$OUT/setup-$DRILL_NS.log" \
    || { fail "setup of $DRILL_NS: $(tail -n1 "$OUT/setup-$DRILL_NS.log")"; return 1; }
  kubectl -n "$DRILL_NS" apply -f - > /dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: crashdoc-watch-lease}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: crashdoc-watch-lease}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: crashdoc-watch-lease}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: crashdoc-e2e-watcher}]
EOF
  DRILL_NS_READY=1
}

healthy() { [[ $(http_code "$1" /healthz) == 200 ]]; }
not_ready() { [[ $(http_code "$1" /readyz) == 503 ]]; }
leader_is() { [[ $(metric "$1" crashdoc_leader) == "$2" ]]; }
watched_is() { [[ $(metric "$1" crashdoc_watched_pods) == "$2" ]]; }
no_pending() { [[ -z "$("$TESTS/check-scenario.sh" --pending "$KUBECONFIG" "$TESTS/scenarios/expected.tsv" 2>/dev/null)" ]]; }

# ------------------------------------------------------------------ a. basic
drill_basic() {
  drill_start basic
  local d="$OUT/basic" f t names=()
  mkdir -p "$d"
  for f in "$TESTS"/scenarios/*.yaml; do
    grep -qE 'crashdoc\.test/behavior: (crashloop|init-crashloop)$' "$f" && names+=("$(basename "$f" .yaml)")
  done
  t=$(now_ms)
  start_watch basic "$RO" "$d/history.redb" -n "$E2E"
  if wait_until 10 healthy basic; then ok "basic: /healthz 200 $(secs_since "$t") s after start"; else fail "basic: /healthz not 200 within 10 s (see $OUT/basic.log)"; fi
  if wait_until 60 is_ready basic; then ok "basic: /readyz 200 after the initial list ($(secs_since "$t") s)"; else fail "basic: /readyz not 200 within 60 s: $(http_code basic /readyz)"; stop_watch basic; drill_end basic; return; fi

  snapshot "$E2E" > "$d/before.tsv"
  local sel; sel="crashdoc.test/scenario in ($(IFS=,; echo "${names[*]}"))"
  kubectl -n "$E2E" delete pods -l "$sel" --wait=false > /dev/null
  t=$(now_ms)
  if ! wait_until 240 no_pending; then
    fail "basic: the re-created scenario pods did not settle within 240 s: $("$TESTS/check-scenario.sh" --pending "$KUBECONFIG" "$TESTS/scenarios/expected.tsv" | tr '\n' ' ')"
  fi
  info "basic: ${#names[@]} crash-looping scenarios re-created and crashed until settled in $(secs_since "$t") s"
  snapshot "$E2E" > "$d/after.tsv"
  expected_terminations "$d/before.tsv" "$d/after.tsv" > "$d/truth.tsv"
  local want; want=$(increase "$d/before.tsv" "$d/after.tsv")
  wait_until 90 counter_is basic "$want"; wait_settled basic 60
  metrics basic > "$d/metrics.txt"
  local got; got=$(restarts basic)
  [[ $got == "$want" ]]; check $? "basic: crashdoc_container_restarts_total $got == ended runs' increase $want ($(wc -l < "$d/truth.tsv") terminations of ${#names[@]} scenarios)"
  # per workload: the counter's owner label against the pods' owners
  increase "$d/before.tsv" "$d/after.tsv" by-owner | sort > "$d/want-by-owner.tsv"
  awk '$1 ~ /^crashdoc_container_restarts_total/ {
      match($1, /owner_kind="[^"]*"/); k = substr($1, RSTART + 12, RLENGTH - 13)
      match($1, /owner="[^"]*"/); o = substr($1, RSTART + 7, RLENGTH - 8)
      s[k "/" o] += $NF }
    END { for (x in s) if (s[x]) print x "\t" s[x] }' "$d/metrics.txt" | sort > "$d/got-by-owner.tsv"
  if diff -q "$d/want-by-owner.tsv" "$d/got-by-owner.tsv" > /dev/null; then
    ok "basic: the counter per workload matches each workload's ended runs' increase ($(wc -l < "$d/want-by-owner.tsv") workloads)"
  else
    fail "basic: counter per workload differs: $(diff "$d/want-by-owner.tsv" "$d/got-by-owner.tsv" | grep '^[<>]' | head -4 | tr '\n\t' '; ')"
  fi
  local live; live=$(kubectl -n "$E2E" get pods -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null)] | length')
  wait_until 10 watched_is basic "$live"; [[ $(metric basic crashdoc_watched_pods) == "$live" ]]
  check $? "basic: crashdoc_watched_pods $(metric basic crashdoc_watched_pods) == $live pods in $E2E"
  info "basic: captures $(grep '^crashdoc_captures_total' "$d/metrics.txt" | sed 's/crashdoc_captures_total//' | tr '\n' ' '), diagnoses $(awk '$1 ~ /^crashdoc_diagnoses_total/ {s += $NF} END {print s + 0}' "$d/metrics.txt")"

  stop_watch basic
  if ! history_json "$d/history.redb" "$E2E" > "$d/records.json" 2> "$d/history.stderr"; then
    fail "basic: crashdoc history failed: $(head -c 300 "$d/history.stderr")"; drill_end basic; return
  fi
  local cov; cov=$(coverage "$d/records.json" "$d/truth.tsv")
  echo "$cov" > "$d/coverage.json"
  [[ $(jq '.duplicates' <<<"$cov") == 0 && $(jq '.covered == .truth and .records == .truth' <<<"$cov") == true ]]
  check $? "basic: history holds every termination once: $(jq -r '"\(.records) records, \(.unique) distinct, \(.covered)/\(.truth) terminations, kinds \(.kinds | tostring)"' <<<"$cov")$(jq -r 'if .missing != [] then ", missing e.g. \(.missing[0])" else "" end' <<<"$cov")"

  # the last capture of each scenario: exported bundle -> analyze gives the record's cause
  local name id rec_cause exp_cause ana same=0 expok=0 total=0 bad=()
  for name in "${names[@]}"; do
    total=$((total + 1))
    id=$(jq -r --arg n "$name" '[.[] | select(.owner == $n)] | max_by(.restart_count) | .id // empty' "$d/records.json")
    [[ -n "$id" ]] || { bad+=("$name: no record"); continue; }
    rec_cause=$(jq -r --argjson id "$id" '.[] | select(.id == $id) | .cause // "none"' "$d/records.json")
    exp_cause=$(awk -F'\t' -v n="$name" '{split($1, a, "/")} a[2] == n {print $2}' "$TESTS/scenarios/expected.tsv")
    if ! "$CRASHDOC" history --db "$d/history.redb" --export "$id" -o "$d/$name.tar.gz" > /dev/null 2> "$d/$name.export.stderr"; then
      bad+=("$name: export $id failed ($(head -c 120 "$d/$name.export.stderr"))"); continue
    fi
    "$CRASHDOC" analyze "$d/$name.tar.gz" --format json > "$d/$name.analyze.json" 2> "$d/$name.analyze.stderr"
    ana=$(jq -r '.pods[0].diagnoses[0].cause // "none"' "$d/$name.analyze.json" 2>/dev/null || echo bad-json)
    if [[ "$ana" == "$rec_cause" ]]; then same=$((same + 1)); else bad+=("$name: record says $rec_cause, analyze of the export says $ana"); fi
    if [[ "$rec_cause" == "$exp_cause" ]]; then expok=$((expok + 1)); else bad+=("$name: watch diagnosed $rec_cause, expected $exp_cause"); fi
  done
  [[ $same == "$total" ]]; check $? "basic: --export -> analyze gives the recorded cause for $same/$total scenarios' last termination"
  [[ $expok == "$total" ]]; check $? "basic: the recorded cause is the scenario's expected cause for $expok/$total"
  (( ${#bad[@]} )) && printf '     %s\n' "${bad[@]}"
  drill_end basic
}

# list_rv NS: the resourceVersion of a fresh list of the namespace's pods
list_rv() { kubectl get --raw "/api/v1/namespaces/$1/pods?limit=1" | jq -r .metadata.resourceVersion; }
# audit_relists USER NS SINCE-ISO: pod lists (or watch-list streams) of NS by USER after SINCE
audit_relists() {
  local logs=("$STATE/audit.log") f
  for f in "$STATE"/audit-*.log; do [[ -f "$f" ]] && logs+=("$f"); done
  jq -r --arg u "$1" --arg ns "$2" --arg t "$3" '
    select((.stage == "ResponseComplete" or .stage == "ResponseStarted") and .user.username == $u and .objectRef.resource == "pods"
           and (.objectRef.subresource // "") == "" and .objectRef.namespace == $ns
           and .requestReceivedTimestamp > $t
           and (.verb == "list" or (.verb == "watch" and (.requestURI | test("sendInitialEvents=true")))))
    | "\(.requestReceivedTimestamp) \(.verb) \(.responseStatus.code) \(.requestURI)"' "${logs[@]}"
}

# ------------------------------------------------------------------ b. API server restart, 410 Gone
drill_apiserver() {
  drill_start apiserver
  local d="$OUT/apiserver" t
  mkdir -p "$d"
  setup_drill_ns || { drill_end apiserver; return; }
  # storm-1's pods afresh: containers that never terminated, whose first crash comes
  # right after crashdoc's start
  kubectl -n "$DRILL_NS" delete pods -l app=storm-1 --wait=false > /dev/null
  storm setup -n "$DRILL_NS" --pods 20 --nodes 1 --deployments 2 --timeout 5m > /dev/null 2>> "$d/storm.log"
  # start on a second boundary: the first terminations then finish within the second
  # crashdoc started in (finishedAt has whole seconds), and must be reported all the same
  sleep "$(awk -v ms="$(date +%3N)" 'BEGIN {printf "%.3f", (1000 - ms) / 1000 + 0.02}')"
  local started; started=$(date -u +%H:%M:%S.%3N)
  start_watch apiserver "$RO" "$d/history.redb" -n "$DRILL_NS"
  wait_until 60 is_ready apiserver || { fail "apiserver: /readyz not 200 within 60 s"; stop_watch apiserver; drill_end apiserver; return; }
  snapshot "$DRILL_NS" > "$d/s0.tsv"
  # 20 terminations seen live, 2 on each of storm-1's new pods; every second one first
  # shows state.terminated, then the back-off
  storm run -n "$DRILL_NS" -l app=storm-1 --count 20 --rate 10 --terminated-first-every 2 --log "$d/truth1.tsv" > "$d/run1.json" 2>> "$d/storm.log"
  wait_until 15 counter_is apiserver 20
  [[ $(restarts apiserver) == 20 ]]; check $? "apiserver: 20 terminations seen live (storm-1's new pods, from the first second after the start), counter $(restarts apiserver)"
  wait_settled apiserver 30
  # from here on, deltas: a miss above must not fail every later line
  local base1; base1=$(restarts apiserver)
  snapshot "$DRILL_NS" > "$d/s0b.tsv"

  kill -STOP "${PID[apiserver]}"
  local rv0; rv0=$(list_rv "$DRILL_NS")
  storm run -n "$DRILL_NS" --count 60 --rate 20 --terminated-first-every 3 --log "$d/truth2.tsv" > "$d/run2.json" 2>> "$d/storm.log"
  info "apiserver: crashdoc stopped (SIGSTOP) at resourceVersion <= $rv0; $(jq -r '"\(.terminations_produced) terminations produced at \(.rate_achieved | floor)/s"' "$d/run2.json") meanwhile"
  t=$(now_ms)
  "$ROOT/scripts/cluster" stop-apiserver 2> "$d/apiserver-restart.log"
  kill -CONT "${PID[apiserver]}"
  local down_ok=1
  wait_until 5 healthy apiserver || down_ok=0
  local h; h=$(http_code apiserver /healthz)
  wait_until 30 not_ready apiserver || down_ok=0
  local r; r=$(http_code apiserver /readyz)
  [[ $down_ok == 1 ]]; check $? "apiserver: with the API server down, /healthz $h and /readyz $r (want 200 and 503)"
  local restarted_at; restarted_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
  "$ROOT/scripts/cluster" start-apiserver 2>> "$d/apiserver-restart.log"
  info "apiserver: API server down for $(secs_since "$t") s ($(grep -o 'ready after [0-9]* ms' "$d/apiserver-restart.log"))"
  # control: a watch from before the restart must get 410 Gone now
  local ctl; ctl=$(timeout 5 kubectl get --raw "/api/v1/namespaces/$DRILL_NS/pods?watch=1&resourceVersion=$rv0" 2>&1 | head -n1)
  echo "$ctl" > "$d/control-watch.json"
  [[ $(jq -r '.object.code // empty' <<<"$ctl" 2>/dev/null) == 410 ]]
  check $? "apiserver: after the restart a watch from resourceVersion $rv0 gets $(jq -r '"\(.object.code) \(.object.reason): \(.object.message)"' <<<"$ctl" 2>/dev/null || echo "$ctl")"

  t=$(now_ms)
  if wait_until 90 is_ready apiserver; then ok "apiserver: /readyz 200 again $(secs_since "$t") s after the API server came back"; else fail "apiserver: /readyz still $(http_code apiserver /readyz) 90 s after the API server came back"; fi
  wait_until 60 counter_is apiserver $((base1 + 60)); wait_settled apiserver 60
  snapshot "$DRILL_NS" > "$d/s1.tsv"
  local want got unobs
  want=$(increase "$d/s0b.tsv" "$d/s1.tsv"); got=$(( $(restarts apiserver) - base1 )); unobs=$(restarts apiserver 'reason="Unobserved"')
  [[ $got == "$want" && $want == 60 ]]
  check $? "apiserver: counter +$got == ended runs' increase $want of the 60 terminations while crashdoc was stopped ($unobs counted as Unobserved)"
  local relists; relists=$(audit_relists crashdoc-e2e-reader "$DRILL_NS" "$restarted_at")
  echo "$relists" > "$d/relists.txt"
  [[ -n "$relists" ]]; check $? "apiserver: crashdoc re-listed the pods after the restart (audit: $(wc -l <<<"$relists" | tr -d ' ') list(s): $(head -n1 <<<"$relists" | cut -c1-100))"
  info "apiserver: crashdoc's log about the resume: $(grep -i -m2 -E '410|gone|expired|too old|relist|re-list' "$OUT/apiserver.log" | cut -c1-160 | tr '\n' ' ')"
  info "apiserver: captures $(metrics apiserver | grep '^crashdoc_captures_total' | sed 's/crashdoc_captures_total//' | tr '\n' ' '), watch restarts $(metric apiserver crashdoc_watch_restarts_total)"

  # Again, but the API server restarts before the terminations: crashdoc's connection
  # is gone, nothing is buffered for it, so only the re-list after the 410 shows them.
  snapshot "$DRILL_NS" > "$d/s2.tsv"
  local base2; base2=$(restarts apiserver)
  kill -STOP "${PID[apiserver]}"
  restarted_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
  "$ROOT/scripts/cluster" restart-apiserver 2>> "$d/apiserver-restart.log"
  storm run -n "$DRILL_NS" --count 60 --rate 20 --log "$d/truth3.tsv" > "$d/run3.json" 2>> "$d/storm.log"
  kill -CONT "${PID[apiserver]}"
  t=$(now_ms)
  wait_until 90 is_ready apiserver; wait_until 60 counter_is apiserver $((base2 + 60)); wait_settled apiserver 60
  snapshot "$DRILL_NS" > "$d/s3.tsv"
  want=$(increase "$d/s2.tsv" "$d/s3.tsv"); got=$(( $(restarts apiserver) - base2 )); unobs=$(( $(restarts apiserver 'reason="Unobserved"') - unobs ))
  [[ $got == "$want" && $want == 60 ]]
  check $? "apiserver: restarted before 60 terminations (none buffered for crashdoc): counter +$got == ended runs' increase $want ($unobs as Unobserved), $(secs_since "$t") s after SIGCONT"
  relists=$(audit_relists crashdoc-e2e-reader "$DRILL_NS" "$restarted_at")
  [[ -n "$relists" ]]; check $? "apiserver: re-listed after the second restart too ($(wc -l <<<"$relists" | tr -d ' ') list(s)); crashdoc log: $(grep -i -E 'too old|410|expired' "$OUT/apiserver.log" | tail -n1 | cut -c1-120)"

  stop_watch apiserver
  history_json "$d/history.redb" "$DRILL_NS" > "$d/records.json" 2> "$d/history.stderr" || { fail "apiserver: crashdoc history failed: $(head -c 300 "$d/history.stderr")"; drill_end apiserver; return; }
  local c1 c2 c3
  c1=$(coverage "$d/records.json" "$d/truth1.tsv"); c2=$(coverage "$d/records.json" "$d/truth2.tsv"); c3=$(coverage "$d/records.json" "$d/truth3.tsv")
  [[ $(jq .duplicates <<<"$c1") == 0 ]]; check $? "apiserver: no duplicate records ($(jq .records <<<"$c1") records, $(jq .unique <<<"$c1") distinct (uid, container, N))"
  [[ $(jq '.covered == .truth' <<<"$c1") == true ]]
  check $? "apiserver: the 20 live terminations (of containers that never crashed before) all captured ($(jq .covered <<<"$c1")/20; 10 of them shown as state.terminated first; crashdoc started at $started, the first termination written at $(awk -F'\t' 'NR == 1 {printf "%s.%03d", strftime("%H:%M:%S", int($9 / 1000), 1), $9 % 1000}' "$d/truth1.tsv")$(lost "$d/records.json" "$d/truth1.tsv"))"
  [[ $(jq '.last_covered == .last' <<<"$c2") == true ]]
  check $? "apiserver: each pod's last termination while crashdoc was stopped is captured ($(jq -r '"\(.last_covered)/\(.last)"' <<<"$c2"); $(jq .covered <<<"$c2") of the 60 captured individually, from events buffered before the restart)"
  [[ $(jq '.last_covered == .last' <<<"$c3") == true ]]
  check $? "apiserver: ... and with nothing buffered ($(jq -r '"\(.last_covered)/\(.last)"' <<<"$c3"); $(jq .covered <<<"$c3") of the 60 captured)"
  drill_end apiserver
}

# ------------------------------------------------------------------ c. SIGKILL and restart on the same --db
drill_kill() {
  drill_start kill
  local d="$OUT/kill"
  mkdir -p "$d"
  setup_drill_ns || { drill_end kill; return; }
  start_watch kill "$RO" "$d/history.redb" -n "$DRILL_NS"
  wait_until 60 is_ready kill || { fail "kill: /readyz not 200 within 60 s"; stop_watch kill; drill_end kill; return; }
  snapshot "$DRILL_NS" > "$d/s0.tsv"
  # two terminations on each pod of storm-0; storm-1's pods were only seen (the baseline)
  storm run -n "$DRILL_NS" -l app=storm-0 --count 20 --rate 10 --log "$d/truth1.tsv" > /dev/null 2>> "$d/storm.log"
  wait_until 30 counter_is kill 20; wait_settled kill 30
  local first; first=$(restarts kill)
  stop_watch kill KILL
  storm run -n "$DRILL_NS" --count 40 --rate 20 --terminated-first-every 2 --log "$d/truth2.tsv" > /dev/null 2>> "$d/storm.log"
  snapshot "$DRILL_NS" > "$d/s1.tsv"
  local t; t=$(now_ms)
  start_watch kill "$RO" "$d/history.redb" -n "$DRILL_NS"
  wait_until 60 is_ready kill || fail "kill: /readyz not 200 within 60 s of the restart"
  wait_until 30 counter_is kill 40; wait_settled kill 30
  local got0 got1 want0 want1 unobs0 unobs1
  got0=$(restarts kill 'owner="storm-0"'); got1=$(restarts kill 'owner="storm-1"')
  unobs0=$(restarts kill 'owner="storm-0".*reason="Unobserved"'); unobs1=$(restarts kill 'owner="storm-1".*reason="Unobserved"')
  want0=$(awk -F'\t' '$2 ~ /^storm-0-/' "$d/truth2.tsv" | wc -l); want1=$(awk -F'\t' '$2 ~ /^storm-1-/' "$d/truth2.tsv" | wc -l)
  [[ $first == 20 ]]; check $? "kill: before SIGKILL counter $first (20 produced on storm-0's 10 pods; storm-1's 10 pods only seen)"
  [[ $got0 == "$want0" ]]
  check $? "kill: restarted on the same --db: containers the history knows (storm-0): counter $got0 == $want0 produced while down ($unobs0 as Unobserved)"
  [[ $got1 == "$want1" ]]
  check $? "kill: restarted on the same --db: containers seen before the kill that had not crashed while it ran (storm-1): counter $got1 == $want1 produced while down ($unobs1 as Unobserved)"
  local base; base=$(restarts kill)
  storm run -n "$DRILL_NS" --count 20 --rate 10 --log "$d/truth3.tsv" > /dev/null 2>> "$d/storm.log"
  wait_until 30 counter_is kill $((base + 20)); wait_settled kill 30
  [[ $(restarts kill) == $((base + 20)) ]]; check $? "kill: 20 more live terminations after the restart, counter +$(( $(restarts kill) - base ))"

  # SIGKILL in the middle of a flow of terminations, restart at once
  snapshot "$DRILL_NS" > "$d/s2.tsv"
  storm run -n "$DRILL_NS" --count 100 --rate 20 --log "$d/truth4.tsv" > "$d/run4.json" 2>> "$d/storm.log" &
  local gen=$! x
  base=$(restarts kill)
  local before_kill=$base end=$(( $(now_ms) + 2500 ))
  while (( $(now_ms) < end )); do x=$(restarts kill); (( x > before_kill )) && before_kill=$x; sleep 0.2; done
  stop_watch kill KILL
  local proc2=$((before_kill - base))
  start_watch kill "$RO" "$d/history.redb" -n "$DRILL_NS"
  wait "$gen"
  wait_until 60 is_ready kill; wait_until 60 counter_is kill 1; wait_settled kill 60
  snapshot "$DRILL_NS" > "$d/s3.tsv"
  local y; y=$(restarts kill); want=$(increase "$d/s2.tsv" "$d/s3.tsv")
  # counters are per process and the last scrape precedes the kill, so the history is
  # the judge here (below); the counters are figures
  info "kill: SIGKILL during 100 terminations at 20/s: the killed process had counted $proc2 by its last scrape (<= 0.2 s before the kill), the restarted one counted $y ($(restarts kill 'reason="Unobserved"') Unobserved); ended runs' increase $want"

  stop_watch kill
  history_json "$d/history.redb" "$DRILL_NS" > "$d/records.json" 2> "$d/history.stderr" || { fail "kill: crashdoc history failed: $(head -c 300 "$d/history.stderr")"; drill_end kill; return; }
  local n; n=$(dups "$d/records.json")
  [[ $n == 0 ]]; check $? "kill: no duplicate records after two SIGKILLs ($(jq length "$d/records.json") records, $n (uid, container, N) twice)"
  local c
  for x in 1 3; do
    c=$(coverage "$d/records.json" "$d/truth$x.tsv")
    [[ $(jq '.covered == .truth' <<<"$c") == true ]]; check $? "kill: live terminations (batch $x) all captured: $(jq -r '"\(.covered)/\(.truth)"' <<<"$c")"
  done
  for x in storm-0 storm-1; do
    awk -F'\t' -v p="^$x-" '$2 ~ p' "$d/truth2.tsv" > "$d/truth2.$x.tsv"
    c=$(coverage "$d/records.json" "$d/truth2.$x.tsv")
    [[ $(jq '.last_covered == .last' <<<"$c") == true ]]
    check $? "kill: while down, $x: each pod's last termination captured $(jq -r '"\(.last_covered)/\(.last); \(.covered)/\(.truth) captured individually"' <<<"$c")"
  done
  c=$(coverage "$d/records.json" "$d/truth4.tsv")
  [[ $(jq '.last_covered == .last' <<<"$c") == true ]]
  check $? "kill: around the SIGKILL under load: each pod's last termination captured $(jq -r '"\(.last_covered)/\(.last); \(.covered)/\(.truth) captured individually"' <<<"$c")"
  drill_end kill
}

# ------------------------------------------------------------------ d. leader election
lease_holder() { kubectl -n "$DRILL_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
lease_renew_ms() { # the Lease's renewTime in ms since the epoch
  kubectl -n "$DRILL_NS" get lease "$LEASE" -o jsonpath='{.spec.renewTime}' 2>/dev/null \
    | jq -Rr 'capture("^(?<s>[^.Z]+)(\\.(?<f>[0-9]+))?Z$") | ((.s + "Z") | fromdateiso8601) * 1000 + (((.f // "0") + "000")[0:3] | tonumber)'
}
# takeover NEW SECONDS T0: wait until NEW leads; prints the seconds since T0 (ms) or returns 1
takeover() { wait_until "$2" leader_is "$1" 1 || return 1; secs_since "$3"; }
drill_leader() {
  drill_start leader
  local d="$OUT/leader"
  mkdir -p "$d"
  setup_drill_ns || { drill_end leader; return; }
  # A new leader also reports what finished up to lease/3 (5 s) before it took the Lease:
  # let the terminations of the previous drills age past that, so the count is this drill's.
  sleep 6
  kubectl -n "$DRILL_NS" delete lease "$LEASE" --ignore-not-found > /dev/null   # a Lease left by an earlier run
  local le=(-n "$DRILL_NS" --leader-elect --lease-name "$LEASE" --lease-namespace "$DRILL_NS")
  start_watch leader-a "$WATCHER" "$d/a.redb" "${le[@]}"
  if ! wait_until 60 leader_is leader-a 1; then
    fail "leader: replica A did not become leader within 60 s (crashdoc_leader $(metric leader-a crashdoc_leader); see $OUT/leader-a.log)"
    stop_watch leader-a; drill_end leader; return
  fi
  wait_until 60 is_ready leader-a
  start_watch leader-b "$WATCHER" "$d/b.redb" "${le[@]}"
  wait_until 20 healthy leader-b; sleep 3
  local holder dur; holder=$(lease_holder)
  dur=$(kubectl -n "$DRILL_NS" get lease "$LEASE" -o jsonpath='{.spec.leaseDurationSeconds}' 2>/dev/null); dur=${dur:-15}
  [[ $(metric leader-a crashdoc_leader) == 1 && $(metric leader-b crashdoc_leader) == 0 && -n "$holder" ]]
  check $? "leader: A leads (crashdoc_leader 1, Lease holder $holder, ${dur} s), B stands by (crashdoc_leader $(metric leader-b crashdoc_leader), /readyz $(http_code leader-b /readyz))"

  # 1. the leader reports, the standby does not
  storm run -n "$DRILL_NS" --count 20 --rate 10 --log "$d/truth1.tsv" > /dev/null 2>> "$d/storm.log"
  wait_until 30 counter_is leader-a 20; wait_settled leader-a 30
  [[ $(restarts leader-a) == 20 && $(restarts leader-b) == 0 ]]
  check $? "leader: 20 terminations: leader counted $(restarts leader-a), standby $(restarts leader-b)"

  # 2. graceful hand-over: SIGTERM the leader while terminations go on
  storm run -n "$DRILL_NS" --count 20 --rate 4 --log "$d/truth2.tsv" > /dev/null 2>> "$d/storm.log" &
  local gen=$! t0 took
  sleep 1.5; t0=$(now_ms)
  stop_watch leader-a TERM
  info "leader: A stopped (SIGTERM) in $(secs_since "$t0") s"
  if took=$(takeover leader-b 30 "$t0"); then
    awk -v t="$took" -v d="$dur" 'BEGIN {exit !(t <= d)}'
    check $? "leader: graceful hand-over: B leads $took s after A's SIGTERM (lease $dur s; holder $(lease_holder))"
  else
    fail "leader: B not leader 30 s after A's SIGTERM (holder $(lease_holder))"
  fi
  wait "$gen"; wait_until 60 is_ready leader-b; wait_settled leader-b 30
  local handover; handover=$(kubectl -n "$DRILL_NS" get lease "$LEASE" -o jsonpath='{.metadata.annotations.crashdoc\.io/reported-until}' 2>/dev/null)
  handover=$(grep -o 'reporting terminations finished since [^ ]*' "$OUT/leader-b.log" | tail -n1 | awk '{print $NF}')${handover:+ (Lease annotation $handover)}

  # 3. the leader dies: SIGKILL B (no release), terminations go on; A, restarted as standby, takes over
  start_watch leader-a "$WATCHER" "$d/a.redb" "${le[@]}"
  wait_until 20 healthy leader-a; sleep 2
  # 16 s of terminations: they outlast the Lease's expiry, so some finish after the window
  storm run -n "$DRILL_NS" --count 64 --rate 4 --log "$d/truth3.tsv" > /dev/null 2>> "$d/storm.log" &
  gen=$!
  sleep 3; t0=$(now_ms)
  stop_watch leader-b KILL
  local renew; renew=$(lease_renew_ms)
  if took=$(takeover leader-a $((dur + 30)) "$t0"); then
    awk -v t="$took" -v d="$dur" 'BEGIN {exit !(t <= d + 3)}'
    check $? "leader: after B's SIGKILL, A leads $took s later (lease $dur s, renewed $(( (t0 - renew) / 1000 )) s before the kill; holder $(lease_holder))"
  else
    fail "leader: A not leader $((dur + 30)) s after B's SIGKILL (holder $(lease_holder))"
  fi
  wait "$gen"; wait_until 60 is_ready leader-a

  # 4. the new leader reports
  storm run -n "$DRILL_NS" --count 20 --rate 10 --log "$d/truth4.tsv" > /dev/null 2>> "$d/storm.log"
  wait_until 30 counter_is leader-a 20; wait_settled leader-a 30
  info "leader: A's second term counted $(restarts leader-a) ($(restarts leader-a 'reason="Unobserved"') Unobserved)"
  stop_watch leader-a

  history_json "$d/a.redb" "$DRILL_NS" > "$d/a.json" 2> "$d/history-a.stderr" || echo '[]' > "$d/a.json"
  history_json "$d/b.redb" "$DRILL_NS" > "$d/b.json" 2> "$d/history-b.stderr" || echo '[]' > "$d/b.json"
  jq -s 'add' "$d/a.json" "$d/b.json" > "$d/all.json"
  cat "$d"/truth[1-4].tsv > "$d/truth.tsv"
  local both; both=$(jq -n --slurpfile a "$d/a.json" --slurpfile b "$d/b.json" '
    ($b[0] | map({("\(.pod_uid)/\(.container)/\(.restart_count)"): true}) | add // {}) as $y
    | [$a[0][] | "\(.pod_uid)/\(.container)/\(.restart_count)" | select($y[.])] | length')
  local c1 c2 c4 call
  c1=$(coverage "$d/a.json" "$d/truth1.tsv"); c2=$(coverage "$d/all.json" "$d/truth2.tsv")
  c4=$(coverage "$d/a.json" "$d/truth4.tsv"); call=$(coverage "$d/all.json" "$d/truth.tsv")
  [[ $both == 0 && $(jq .duplicates <<<"$call") == 0 ]]
  check $? "leader: no termination reported twice ($both in both histories; A $(jq length "$d/a.json") records, B $(jq length "$d/b.json"))"
  [[ $(jq '.covered == .truth' <<<"$c1") == true && $(jq '.covered == .truth' <<<"$c4") == true ]]
  check $? "leader: each leader captured the terminations of its term: A's first $(jq -r '"\(.covered)/\(.truth)"' <<<"$c1"), A's second $(jq -r '"\(.covered)/\(.truth)"' <<<"$c4")"
  [[ $(jq '.covered == .truth' <<<"$c2") == true ]]
  check $? "leader: graceful hand-over: $(jq -r '"\(.covered)/\(.truth)"' <<<"$c2") terminations around A's SIGTERM reported ($(coverage "$d/a.json" "$d/truth2.tsv" | jq .covered) by A, $(coverage "$d/b.json" "$d/truth2.tsv" | jq .covered) by B; hand-over instant $handover)$(lost "$d/all.json" "$d/truth2.tsv")"
  # After a crash, the documented window: what finished after (expiry - lease/3) must be
  # reported; earlier terminations (back to the leader's death) may be lost by design. The
  # instant the new leader says it reports from (its log) is the judge; how it compares
  # with the Lease's expiry - lease/3 is a figure.
  local doc_thr=$(( renew + dur * 1000 - dur * 1000 / 3 )) thr since
  since=$(grep -o 'reporting terminations finished since [^ ]*' "$OUT/leader-a.log" | tail -n1 | awk '{print $NF}')
  thr=$(jq -rn --arg s "$since" '$s | capture("^(?<s>[^.Z]+)(\\.(?<f>[0-9]+))?Z$") | ((.s + "Z") | fromdateiso8601) * 1000 + (((.f // "0") + "000")[0:3] | tonumber)' 2>/dev/null)
  [[ -n "$thr" ]] || thr=$doc_thr
  info "leader: after the crash A reports terminations finished since $since: $(( thr - doc_thr )) ms after the Lease's expiry - lease/3, $(( thr - t0 )) ms after the kill"
  local gap; gap=$(jq -c --rawfile t "$d/truth3.tsv" --argjson thr "$thr" --argjson kill "$t0" '
    ([.[] | "\(.pod_uid)/\(.container)/\(.restart_count)"] | map({(.): true}) | add // {}) as $set
    | ($t | split("\n") | map(select(length > 0) | split("\t") | {k: "\(.[0])/\(.[2])/\(.[3])", done: (.[7] | tonumber)})) as $rows
    | {total: ($rows | length),
       settled: ([$rows[] | select(.done <= $kill - 2000)] | length),
       settled_reported: ([$rows[] | select(.done <= $kill - 2000 and $set[.k])] | length),
       before_kill: ([$rows[] | select(.done > $kill - 2000 and .done <= $kill)] | length),
       before_kill_reported: ([$rows[] | select(.done > $kill - 2000 and .done <= $kill and $set[.k])] | length),
       window: ([$rows[] | select(.done > $kill and .done <= $thr)] | length),
       window_reported: ([$rows[] | select(.done > $kill and .done <= $thr and $set[.k])] | length),
       after: ([$rows[] | select(.done > $thr)] | length),
       after_reported: ([$rows[] | select(.done > $thr and $set[.k])] | length)}' "$d/all.json")
  echo "$gap" > "$d/crash-window.json"
  [[ $(jq '.after == .after_reported and .settled == .settled_reported' <<<"$gap") == true ]]
  check $? "leader: leader crash: reported $(jq -r '"\(.settled_reported)/\(.settled) finished more than 2 s before the kill, \(.before_kill_reported)/\(.before_kill) in the last 2 s, \(.window_reported)/\(.window) in the window (kill .. the instant A reports from, may be lost), \(.after_reported)/\(.after) after it"' <<<"$gap")$(lost "$d/all.json" <(awk -F'\t' -v t="$thr" '$8 > t' "$d/truth3.tsv"))"
  info "leader: all four phases: $(jq -r '"\(.covered)/\(.truth) terminations reported, \(.records) records"' <<<"$call")"
  drill_end leader
}

# ------------------------------------------------------------------ e. storm
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null; }
drill_storm() {
  drill_start storm
  local d="$OUT/storm" pods=${STORM_PODS:-5000} rate=${STORM_RATE:-100} secs=${STORM_SECONDS:-60}
  mkdir -p "$d"
  local t; t=$(now_ms)
  if ! storm setup -n "$STORM_NS" --pods "$pods" --nodes $(( (pods + 499) / 500 )) --deployments 10 --timeout 30m > "$d/setup.json" 2> "$d/setup.log"; then
    fail "storm: setup of $pods pods failed: $(tail -n1 "$d/setup.log")"; drill_end storm; return
  fi
  info "storm: $pods pods in 10 Deployments running after $(secs_since "$t") s"
  t=$(now_ms)
  start_watch storm "$RO" "$d/history.redb" -n "$STORM_NS"
  local pid=${PID[storm]}
  wait_until 300 is_ready storm || { fail "storm: /readyz not 200 within 300 s"; stop_watch storm; drill_end storm; return; }
  wait_until 60 watched_is storm "$pods"
  info "storm: crashdoc ready after $(secs_since "$t") s, watching $(metric storm crashdoc_watched_pods) pods, RSS $(( $(rss_kib "$pid") / 1024 )) MiB, CPU $(cpu_secs "$pid") s so far"
  snapshot "$STORM_NS" > "$d/s0.tsv"
  local cpu0; cpu0=$(cpu_secs "$pid")
  # RSS and the queue every second, from the storm's start until the captures drain
  ( while kill -0 "$pid" 2>/dev/null; do
      printf '%s\t%s\t%s\t%s\t%s\n' "$(now_ms)" "$(rss_kib "$pid")" "$(metric storm crashdoc_capture_queue_depth)" \
        "$(restarts storm)" "$(captures storm)"
      sleep 1
    done ) > "$d/samples.tsv" 2>/dev/null &
  local sampler=$!
  t=$(now_ms)
  storm run -n "$STORM_NS" --rate "$rate" --duration "${secs}s" --workers 64 --log "$d/truth.tsv" > "$d/run.json" 2> "$d/run.log"
  local storm_end; storm_end=$(now_ms)
  local produced; produced=$(jq .terminations_produced "$d/run.json" 2>/dev/null || echo 0)
  info "storm: generator: $(jq -r '"\(.terminations_produced) terminations (\(.by_reason | tostring)) in \(.duration_seconds | . * 10 | floor / 10) s = \(.rate_achieved | . * 10 | floor / 10)/s (target \(.target_rate)), ended runs +\(.ended_runs_increase), restartCount +\(.restart_count_increase) for \(.restarts_to_running) restarts, exact \(.exact), patch p50 \(.patch_latency_ms.p50) ms p99 \(.patch_latency_ms.p99) ms"' "$d/run.json" 2>/dev/null || tail -n1 "$d/run.log")"
  local drained=1
  wait_until 600 counter_is storm "$produced" || drained=0
  wait_settled storm 600 || drained=0
  info "storm: captures drained $(secs_since "$storm_end") s after the last termination$([[ $drained == 0 ]] && echo " (NOT drained: gave up)")"
  local cpu1; cpu1=$(cpu_secs "$pid")
  sleep 2; kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  metrics storm > "$d/metrics.txt"
  snapshot "$STORM_NS" > "$d/s1.tsv"
  local want got; want=$(increase "$d/s0.tsv" "$d/s1.tsv"); got=$(restarts storm)
  [[ $got == "$want" && $want == "$produced" ]]
  check $? "storm: counter total $got == ended runs' increase $want == terminations produced $produced ($(restarts storm 'reason="Unobserved"') Unobserved)"
  local start_rss peak_rss end_rss
  start_rss=$(awk -F'\t' 'NR == 1 {print int($2 / 1024)}' "$d/samples.tsv")
  peak_rss=$(awk -F'\t' '$2 > m {m = $2} END {print int(m / 1024)}' "$d/samples.tsv")
  end_rss=$(awk -F'\t' '$2 {v = $2} END {print int(v / 1024)}' "$d/samples.tsv")
  local peak_q; peak_q=$(awk -F'\t' '$3 > m {m = $3} END {print m + 0}' "$d/samples.tsv")
  (( peak_rss - start_rss <= 128 ))
  check $? "storm: RSS start $start_rss MiB, peak $peak_rss MiB, end $end_rss MiB ($(wc -l < "$d/samples.tsv") samples, 1/s; flat = peak within 128 MiB of start); peak queue depth $peak_q"
  info "storm: CPU $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.1f", b - a}') s during the storm and the drain ($cpu1 s since start); captures $(grep '^crashdoc_captures_total' "$d/metrics.txt" | sed 's/crashdoc_captures_total//' | tr '\n' ' ')"
  info "storm: capture duration mean $(awk '$1 == "crashdoc_capture_duration_seconds_sum" {s = $NF} $1 == "crashdoc_capture_duration_seconds_count" {n = $NF} END {if (n) printf "%.0f ms over %d captures", s / n * 1000, n; else print "n/a"}' "$d/metrics.txt")"
  stop_watch storm
  if history_json "$d/history.redb" "$STORM_NS" > "$d/records.json" 2> "$d/history.stderr"; then
    local cov; cov=$(coverage "$d/records.json" "$d/truth.tsv")
    echo "$cov" > "$d/coverage.json"
    [[ $(jq .duplicates <<<"$cov") == 0 ]]
    check $? "storm: history $(jq -r '"\(.records) records, \(.duplicates) duplicates, \(.covered)/\(.truth) terminations recorded, each pod'"'"'s last \(.last_covered)/\(.last), kinds \(.kinds | tostring)"' <<<"$cov")"
    # lag: when crashdoc observed each termination (observed_at) after the generator's write
    jq -r --rawfile t "$d/truth.tsv" '
      ($t | split("\n") | map(select(length > 0) | split("\t")) | map({key: "\(.[0])/\(.[2])/\(.[3])", value: (.[8] | tonumber)}) | from_entries) as $done
      | .[] | "\(.pod_uid)/\(.container)/\(.restart_count)" as $k | select($done[$k])
      | (.observed_at | capture("^(?<s>[^.Z]+)(\\.(?<f>[0-9]+))?Z$")) as $o
      | ((($o.s + "Z") | fromdateiso8601) * 1000 + ((($o.f // "0") + "000")[0:3] | tonumber)) - $done[$k]' "$d/records.json" \
      | sort -n > "$d/lag-ms.txt"
    if [[ -s "$d/lag-ms.txt" ]]; then
      info "storm: observation lag (observed_at - write) over $(wc -l < "$d/lag-ms.txt") records: $(awk '{a[NR] = $1} END {printf "p50 %d ms, p90 %d ms, p99 %d ms, max %d ms", a[int(NR * .5) + 1], a[int(NR * .9) + 1], a[int(NR * .99) + 1], a[NR]}' "$d/lag-ms.txt")"
    fi
  else
    fail "storm: crashdoc history failed: $(head -c 300 "$d/history.stderr")"
  fi
  drill_end storm
}

# ------------------------------------------------------------------ audit
audit_check() {
  local logs=("$STATE/audit.log") f
  for f in "$STATE"/audit-*.log; do [[ -f "$f" ]] && logs+=("$f"); done
  local reader bad
  reader=$(jq -r 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-reader") | .verb' "${logs[@]}" \
    | sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $2, $1}')
  bad=$(jq -r 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-reader" and (.verb | IN("get", "list", "watch") | not))
      | "\(.verb) \(.requestURI) \(.responseStatus.code)"' "${logs[@]}" | sort | uniq -c | head -3 | tr '\n' ';')
  if [[ -z "$reader" ]]; then
    # Only drills run as the watcher identity (e.g. `watch.sh leader`): nothing to judge.
    echo "     audit: crashdoc-e2e-reader made no request (no drill ran as it)"
  else
    [[ -z "$bad" ]]
    check $? "audit: crashdoc-e2e-reader (watch without --leader-elect) used only get/list/watch: ${reader%, }${bad:+; other: $bad}"
  fi
  if want leader; then
    local watcher
    watcher=$(jq -r 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-watcher") | "\(.verb) \(.objectRef.resource // .requestURI)"' "${logs[@]}" \
      | sort | uniq -c | sort -rn | awk '{printf "%s %s %s, ", $2, $3, $1}')
    bad=$(jq -r --arg ns "$DRILL_NS" --arg l "$LEASE" 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-watcher"
        and (.verb | IN("get", "list", "watch") | not)
        and (.objectRef.resource != "leases" or .objectRef.namespace != $ns or (.objectRef.name // $l) != $l))
      | "\(.verb) \(.requestURI) \(.responseStatus.code)"' "${logs[@]}" | sort | uniq -c | head -3 | tr '\n' ';')
    [[ -z "$bad" && -n "$watcher" ]]
    check $? "audit: crashdoc-e2e-watcher (--leader-elect) wrote only its Lease $DRILL_NS/$LEASE: ${watcher%, }${bad:+; other writes: $bad}"
  fi
}

# ------------------------------------------------------------------ main
for drill in basic apiserver kill leader storm; do
  want "$drill" && "drill_$drill"
done
audit_check
info "all drills took $(secs_since "$T_ALL") s"
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
