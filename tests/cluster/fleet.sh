#!/usr/bin/env bash
# The fleet tier: two `crashdoc watch` processes under different cluster names
# (--cluster), each with its own local spool (--spool) and its own Lease, writing
# to ONE real PostgreSQL (scripts/postgres), through a termination storm
# (tests/cluster/tools/crashloop-storm) during which PostgreSQL is SIGKILLed,
# kept down, and started again (crash recovery).
#
# Expects `scripts/cluster up` (tests/cluster/run.sh calls it after watch.sh).
# Uses the running PostgreSQL of `scripts/postgres` (.ci/run starts it before the
# store suite) or starts one and stops it at the end. When PostgreSQL cannot be
# had (scripts/postgres exit 3), or crashdoc has no fleet store yet, it prints
# "skipped: <why>" and exits 0; under CRASHDOC_REQUIRE_PG=1 a missing PostgreSQL
# is a failure instead.
#
# Checks, for each cluster name: the records of the storm's namespace in the
# database are exactly the terminations the storm produced (ground truth: the
# runs the API server shows ended before and after, lib.sh ENDED_RUNS_JQ; each
# (pod uid, container, run) once: none missing, none extra, none twice), the
# restarts counter equals them, the spool rose while PostgreSQL was down and
# drained to 0 with nothing dropped; `crashdoc history --cluster` and
# `--group-by cluster` read the same back; the database password (and the wrong
# password of a deliberately failing run) appears in no log, no /metrics output,
# no history output, no error, no spool file; the watcher identity wrote only
# its two Leases.
#
# Prints "ok"/"FAIL" lines with figures (N per cluster, the spools' peak depth),
# then "N passed, M failed". Everything it leaves is in target/cluster/fleet/.
#
# CRASHDOC_BIN=path uses another crashdoc than target/release/crashdoc.
# FLEET_PODS (40), FLEET_COUNT (400), FLEET_RATE (10/s), FLEET_KILL_AFTER (10 s into
# the storm), FLEET_DOWN (15 s) change the storm and the outage; FLEET_SPOOL_MAX=N passes
# --spool-max-captures N (a spool too small for the outage must make the test fail).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS="$ROOT/tests/cluster"
STATE="$ROOT/target/cluster"
OUT="$STATE/fleet"
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
if [[ -z "${CRASHDOC_BIN:-}" && ! -x "$CRASHDOC" && -n "${CARGO_TARGET_DIR:-}" && -x "$CARGO_TARGET_DIR/release/crashdoc" ]]; then
  CRASHDOC="$CARGO_TARGET_DIR/release/crashdoc"
fi
# shellcheck source=tests/cluster/lib.sh
. "$TESTS/lib.sh"
PG="$ROOT/scripts/postgres"
WATCHER="$STATE/kubeconfig-watcher"  # crashdoc-e2e-watcher: get/list/watch, plus the Leases granted below
NS=crashdoc-fleet
BASE="${CRASHDOC_CLUSTER_PORT_BASE:-36400}"
PODS=${FLEET_PODS:-40} COUNT=${FLEET_COUNT:-400} RATE=${FLEET_RATE:-10}
KILL_AFTER=${FLEET_KILL_AFTER:-10} DOWN=${FLEET_DOWN:-15}
# run-unique cluster names: a database kept up across runs holds no record of them yet
RUN=$(date +%s)
NAMES=(east west)
declare -A CLUSTER=([east]="east-$RUN" [west]="west-$RUN") PORT=([east]=$((BASE + 86)) [west]=$((BASE + 87))) PID=()

passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
check() { if [[ $1 == 0 ]]; then ok "$2"; else fail "$2"; fi; }
info() { echo "     $*"; }
skip() { echo "skipped: $*"; echo "0 passed, 0 failed"; exit 0; }
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }
die() { echo "FAIL $*"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

# ------------------------------------------------------------------ preconditions
[[ -x "$CRASHDOC" ]] || die "$CRASHDOC not built"
whelp=$("$CRASHDOC" watch --help 2>&1) hhelp=$("$CRASHDOC" history --help 2>&1)
absent=()
for f in --spool --cluster --db-password-file --lease-name; do grep -q -- "$f" <<<"$whelp" || absent+=("watch $f"); done
for f in --group-by --cluster --db-password-file; do grep -q -- "$f" <<<"$hhelp" || absent+=("history $f"); done
(( ${#absent[@]} == 0 )) || skip "crashdoc has no fleet store yet (no ${absent[*]})"
[[ -f "$WATCHER" ]] || die "no $WATCHER (scripts/cluster up writes it)"

mkdir -p "$STATE"; rm -rf "$OUT"; mkdir -p "$OUT"
pg_started=0
if ! "$PG" status > /dev/null 2>&1; then
  pg_rc=0
  "$PG" up > /dev/null 2> "$OUT/postgres-up.log" || pg_rc=$?
  if (( pg_rc == 3 )); then
    why=$(grep -m1 '^skipped: ' "$OUT/postgres-up.log" | cut -d' ' -f2-)
    [[ "${CRASHDOC_REQUIRE_PG:-}" == 1 ]] && die "PostgreSQL required (CRASHDOC_REQUIRE_PG=1) but cannot be had: $why"
    skip "no PostgreSQL: $why"
  fi
  (( pg_rc == 0 )) || die "scripts/postgres up failed (exit $pg_rc): $(tail -n2 "$OUT/postgres-up.log" | tr '\n' ' ')"
  pg_started=1
fi
eval "$("$PG" env)" || die "scripts/postgres env failed"
URL=$CRASHDOC_TEST_PG_URL PWF=$CRASHDOC_TEST_PG_PASSWORD_FILE
PASSWORD=$(cat "$PWF") || die "cannot read $PWF"
[[ ${#PASSWORD} -ge 16 ]] || die "the password in $PWF is too short to be a canary"
# the URL with the password inside, for the watcher that takes it that way
URL_WITH_PW="postgres://crashdoc:$PASSWORD@${URL#postgres://crashdoc@}"
PG_LOG="$(cat "$ROOT/target/postgres/server-dir")/postgres.log"

eval "$("$ROOT/scripts/cluster" env)"
export KUBECONFIG="$STATE/kubeconfig"
STORM="$("$TESTS/tools/build.sh")/crashloop-storm" || die "cannot build tests/cluster/tools"

cleanup() {
  local n
  for n in "${!PID[@]}"; do [[ -n "${PID[$n]}" ]] && kill -KILL "${PID[$n]}" 2>/dev/null; done
  # a failure during the outage must not leave PostgreSQL down (or up, if we started it)
  if (( pg_started )); then "$PG" down > /dev/null 2>&1
  else "$PG" status > /dev/null 2>&1 || "$PG" start > /dev/null 2>&1; fi
}
trap cleanup EXIT

psql_q() { "$PG" psql -d crashdoc -X -q -At -v ON_ERROR_STOP=1 "$@"; }
url() { echo "http://127.0.0.1:${PORT[$1]}$2"; }
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(url "$1" "$2")"; }
metrics() { curl -s --max-time 5 "$(url "$1" /metrics)"; }
metric() { # metric NAME METRIC [LABEL-REGEX]: the sum of the matching samples (integer part)
  metrics "$1" | awk -v m="$2" -v re="${3:-}" '$1 ~ "^" m "({|$)" && (re == "" || $1 ~ re) { s += $NF } END { printf "%d\n", s }'
}
has_metric() { metrics "$1" | grep -q "^$2[{ ]"; }
restarts() { metric "$1" crashdoc_container_restarts_total "namespace=\"$NS\""; }
wait_until() { local end=$(( $(date +%s) + $1 )); shift; until "$@"; do (( $(date +%s) < end )) || return 1; sleep 0.5; done; }
is_ready() { [[ $(http_code "$1" /readyz) == 200 ]]; }
is_leader() { [[ $(metric "$1" crashdoc_leader) == 1 ]]; }
# drained NAME: spool empty, capture queue empty, the counter at the storm's total
drained() {
  local m; m=$(metrics "$1")
  awk -v want="$2" -v ns="namespace=\"$NS\"" '
    $1 == "crashdoc_history_spool_depth" { s = $NF; seen = 1 }
    $1 == "crashdoc_capture_queue_depth" { q = $NF }
    $1 ~ /^crashdoc_container_restarts_total/ && index($1, ns) { r += $NF }
    END { exit !(seen && s == 0 && q + 0 == 0 && r >= want) }' <<<"$m"
}

start_watch() { # start_watch NAME [DB-ARGS...]: crashdoc watch -A under cluster name CLUSTER[NAME]
  local name=$1; shift
  "$CRASHDOC" -v watch -A --kubeconfig "$WATCHER" "$@" --cluster "${CLUSTER[$name]}" \
    --spool "$OUT/$name-spool.redb" ${FLEET_SPOOL_MAX:+--spool-max-captures "$FLEET_SPOOL_MAX"} --listen "127.0.0.1:${PORT[$name]}" \
    --leader-elect --lease-name "crashdoc-watch-$name" --lease-namespace "$NS" \
    >> "$OUT/$name.log" 2>&1 < /dev/null &
  PID[$name]=$!
  disown "$!"
  echo "---- started pid ${PID[$name]} at $(date -u +%T) as cluster ${CLUSTER[$name]}" >> "$OUT/$name.log"
}
stop_watch() {
  local pid=${PID[$1]:-}
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null
  PID[$1]=""
}
snapshot() { # uid pod container ended-runs, for every container of every live pod of NS
  kubectl -n "$NS" get pods -o json | jq -r "$ENDED_RUNS_JQ"' container_runs | @tsv'
}
hist() { # hist ARGS...: crashdoc history against the database, password from the file
  timeout 120 "$CRASHDOC" history --db "$URL" --db-password-file "$PWF" "$@"
}

T_ALL=$(now_ms)
info "PostgreSQL: $("$PG" status); $URL (password from $PWF)$( (( pg_started )) && echo "; started by this script")"

# ------------------------------------------------------------------ namespace, pods, Leases
# a fresh namespace: pods left from an earlier run would carry terminations of their own
if kubectl get ns "$NS" > /dev/null 2>&1; then
  kubectl delete ns "$NS" --wait=true --timeout=180s > /dev/null 2>&1 || die "namespace $NS from an earlier run not deleted within 180 s"
fi
t=$(now_ms)
"$STORM" setup -n "$NS" --pods "$PODS" --nodes 1 --deployments 2 --timeout 5m > /dev/null 2> "$OUT/setup.log" \
  || die "setup of $PODS pods in $NS: $(tail -n1 "$OUT/setup.log")"
kubectl -n "$NS" apply -f - > /dev/null <<EOF || die "cannot grant the watcher its Leases in $NS"
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
info "$PODS pods in $NS running after $(secs_since "$t") s"

# ------------------------------------------------------------------ the two watchers
AUDIT_FROM=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
t=$(now_ms)
start_watch east --db "$URL" --db-password-file "$PWF"   # the password from a file
start_watch west --db "$URL_WITH_PW"                     # the password inside the URL
for n in "${NAMES[@]}"; do
  if wait_until 90 is_ready "$n" && wait_until 60 is_leader "$n"; then
    ok "$n: cluster ${CLUSTER[$n]} ready and leader of its own Lease $NS/crashdoc-watch-$n (holder $(kubectl -n "$NS" get lease "crashdoc-watch-$n" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)) $(secs_since "$t") s after start"
  else
    fail "$n: not ready and leader within 150 s (/readyz $(http_code "$n" /readyz), crashdoc_leader $(metric "$n" crashdoc_leader); see $OUT/$n.log)"
  fi
done
for n in "${NAMES[@]}"; do
  for m in crashdoc_history_spool_depth crashdoc_history_spool_oldest_age_seconds crashdoc_history_spool_dropped_total; do
    has_metric "$n" "$m" || fail "$n: /metrics has no $m"
  done
done
info "TLS: $(psql_q -c "select count(*) || ' connections of crashdoc, ' || count(*) filter (where s.ssl) || ' over TLS (' || string_agg(distinct s.version, ',') || ')' from pg_stat_activity a join pg_stat_ssl s using (pid) where a.usename = 'crashdoc'" 2>&1)"

# ------------------------------------------------------------------ the storm, PostgreSQL killed in the middle
snapshot > "$OUT/s0.tsv"
# spool depth, its oldest entry's age and the counters, every 0.5 s
( while :; do
    row="$(now_ms)"
    for n in "${NAMES[@]}"; do
      m=$(metrics "$n")
      row+=$'\t'$(awk -v ns="namespace=\"$NS\"" '$1 == "crashdoc_history_spool_depth" {d = $NF} $1 == "crashdoc_history_spool_oldest_age_seconds" {a = $NF}
        $1 ~ /^crashdoc_container_restarts_total/ && index($1, ns) {r += $NF} END {printf "%d\t%s\t%d", d, a + 0, r}' <<<"$m")
    done
    echo "$row"; sleep 0.5
  done ) > "$OUT/samples.tsv" 2>/dev/null &
sampler=$!
t_storm=$(now_ms)
"$STORM" run -n "$NS" --count "$COUNT" --rate "$RATE" --terminated-first-every 4 --log "$OUT/truth.tsv" \
  > "$OUT/run.json" 2> "$OUT/run.log" &
gen=$!
sleep "$KILL_AFTER"
t_kill=$(now_ms)
"$PG" kill 2>> "$OUT/postgres-kill.log"; kill_rc=$?
"$PG" status > /dev/null 2>&1; status_rc=$?
[[ $kill_rc == 0 && $status_rc != 0 ]]
check $? "PostgreSQL SIGKILLed (postmaster and backends) $(awk -v a="$t_storm" -v b="$t_kill" 'BEGIN {printf "%.1f", (b - a) / 1000}') s into the storm: $(tail -n1 "$OUT/postgres-kill.log" | sed 's/^\[postgres\] //')"
sleep "$DOWN"
for n in "${NAMES[@]}"; do
  info "$n during the outage: /healthz $(http_code "$n" /healthz), /readyz $(http_code "$n" /readyz), spool depth $(metric "$n" crashdoc_history_spool_depth), oldest $(metric "$n" crashdoc_history_spool_oldest_age_seconds) s"
done
t_up=$(now_ms)
"$PG" start 2>> "$OUT/postgres-kill.log"
check $? "PostgreSQL started again after $(awk -v a="$t_kill" -v b="$t_up" 'BEGIN {printf "%.1f", (b - a) / 1000}') s down (crash recovery: $(grep -c 'database system was interrupted\|redo done' "$PG_LOG") recovery lines in its log)"
wait "$gen"; gen_rc=$?
t_storm_end=$(now_ms)
produced=$(jq -r .terminations_produced "$OUT/run.json" 2>/dev/null)
[[ $gen_rc == 0 && $(jq -r .exact "$OUT/run.json" 2>/dev/null) == true && $produced == "$COUNT" ]]
check $? "storm: $(jq -r '"\(.terminations_produced) terminations in \(.duration_seconds | . * 10 | floor / 10) s (\(.rate_achieved | . * 10 | floor / 10)/s, target \(.target_rate)), ended runs +\(.ended_runs_increase), exact \(.exact)"' "$OUT/run.json" 2>/dev/null || tail -n1 "$OUT/run.log")"
produced=${produced:-0}

declare -A T_DRAIN=() EMPTIED=()
for n in "${NAMES[@]}"; do
  if wait_until 300 drained "$n" "$produced"; then T_DRAIN[$n]=$(secs_since "$t_up"); else T_DRAIN[$n]="NOT drained within 300 s"; fi
done
sleep 3   # counters and spools stable
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
snapshot > "$OUT/s1.tsv"
# the ground truth: every run that ended between the snapshots, as uid/container/N
awk -F'\t' 'NR == FNR { rc[$1 "/" $3] = $4; next }
  { from = ($1 "/" $3) in rc ? rc[$1 "/" $3] : 0; for (n = from; n < $4; n++) print $1 "/" $3 "/" n }' \
  "$OUT/s0.tsv" "$OUT/s1.tsv" | sort > "$OUT/truth-keys.txt"
N=$(wc -l < "$OUT/truth-keys.txt")
[[ $N == "$produced" ]]
check $? "ground truth: $N runs ended in $NS between before and after (the API server's view) == $produced terminations the storm produced"

# ------------------------------------------------------------------ per cluster: the database, the counter, the spool
col=2
for n in "${NAMES[@]}"; do
  c=${CLUSTER[$n]}
  metrics "$n" > "$OUT/$n-metrics.txt"
  peak=$(awk -F'\t' -v k="$col" '$k > m {m = $k} END {print m + 0}' "$OUT/samples.tsv")
  oldest=$(awk -F'\t' -v k="$((col + 1))" '$k > m {m = $k} END {printf "%.1f", m}' "$OUT/samples.tsv")
  # the spool emptied: the first sample after the restart with depth 0
  emptied=$(awk -F'\t' -v k="$col" -v up="$t_up" '$1 > up && $k == 0 {printf "%.1f", ($1 - up) / 1000; exit}' "$OUT/samples.tsv")
  EMPTIED[$n]=${emptied:-never}
  col=$((col + 3))
  dropped=$(awk '$1 ~ /^crashdoc_history_spool_dropped_total/ {s += $NF} END {print s + 0}' "$OUT/$n-metrics.txt")
  depth=$(awk '$1 == "crashdoc_history_spool_depth" {print $NF}' "$OUT/$n-metrics.txt")
  through=$(awk '$1 ~ /^crashdoc_history_spool_drained_total/ {s += $NF} END {print s + 0}' "$OUT/$n-metrics.txt")
  (( peak > 0 )) && [[ $depth == 0 && $dropped == 0 ]]
  check $? "$n: spool rose to a peak depth of $peak (oldest entry $oldest s) while PostgreSQL was down, empty ${EMPTIED[$n]} s after the restart, depth ${depth:-?} once settled ($through captures written from the spool), $dropped dropped"
  if psql_q -F $'\t' -c "select pod_uid, container, restart_count from crashdoc_history.captures where cluster = '$c' and namespace = '$NS'" \
       > "$OUT/$n-db.tsv" 2> "$OUT/$n-db.err"; then
    awk -F'\t' '{print $1 "/" $2 "/" $3}' "$OUT/$n-db.tsv" | sort > "$OUT/$n-db-keys.txt"
    rows=$(wc -l < "$OUT/$n-db-keys.txt")
    distinct=$(sort -u "$OUT/$n-db-keys.txt" | wc -l)
    missing=$(comm -23 "$OUT/truth-keys.txt" <(sort -u "$OUT/$n-db-keys.txt") | wc -l)
    extra=$(comm -13 "$OUT/truth-keys.txt" <(sort -u "$OUT/$n-db-keys.txt") | wc -l)
    [[ $rows == "$N" && $distinct == "$N" && $missing == 0 && $extra == 0 && $N -gt 0 ]]
    check $? "$n: N=$N terminations under a PostgreSQL kill mid-storm -> $rows records of cluster $c in $NS, $distinct distinct (pod uid, container, run), $((rows - distinct)) duplicates, $missing missing, $extra not in the ground truth$( ((missing)) && echo " (first missing: $(comm -23 "$OUT/truth-keys.txt" <(sort -u "$OUT/$n-db-keys.txt") | head -n3 | tr '\n' ' '))")"
  else
    fail "$n: psql on crashdoc_history.captures failed: $(head -c 300 "$OUT/$n-db.err")"
  fi
  got=$(awk -v ns="namespace=\"$NS\"" '$1 ~ /^crashdoc_container_restarts_total/ && index($1, ns) {s += $NF} END {print s + 0}' "$OUT/$n-metrics.txt")
  [[ $got == "$N" ]]
  check $? "$n: crashdoc_container_restarts_total{namespace=\"$NS\"} $got == $N"
done

# ------------------------------------------------------------------ fleet reads: history --cluster, --group-by cluster
for n in "${NAMES[@]}"; do
  c=${CLUSTER[$n]}
  if hist --cluster "$c" -n "$NS" --format json --limit 1000000 > "$OUT/$n-history.json" 2> "$OUT/$n-history.stderr"; then
    r=$(jq -c --rawfile t "$OUT/truth-keys.txt" --arg c "$c" '
      ($t | split("\n") | map(select(length > 0)) | map({(.): true}) | add // {}) as $truth
      | [.[] | "\(.pod_uid)/\(.container)/\(.restart_count)"] as $k
      | {records: length, distinct: ($k | unique | length), in_truth: ([$k | unique | .[] | select($truth[.])] | length),
         other_cluster: ([.[] | select(.cluster != $c)] | length)}' "$OUT/$n-history.json")
    [[ $(jq --argjson n "$N" '.records == $n and .distinct == $n and .in_truth == $n and .other_cluster == 0' <<<"$r") == true ]]
    check $? "$n: history --cluster $c -n $NS --format json: $(jq -r '"\(.records) records, \(.distinct) distinct, \(.in_truth) of the ground truth, \(.other_cluster) of another cluster"' <<<"$r") (N=$N)"
  else
    fail "$n: history --cluster $c --format json failed: $(head -c 300 "$OUT/$n-history.stderr")"
  fi
  hist --cluster "$c" -n "$NS" --limit 1000000 > "$OUT/$n-history.txt" 2>> "$OUT/$n-history.stderr" \
    || fail "$n: history --cluster $c (text) failed: $(head -c 300 "$OUT/$n-history.stderr")"
done
if hist -n "$NS" --group-by cluster --format json > "$OUT/group-by-cluster.json" 2> "$OUT/group-by.stderr"; then
  hist -n "$NS" --group-by cluster > "$OUT/group-by-cluster.txt" 2>> "$OUT/group-by.stderr"
  # count_of NAME: the number beside NAME in the grouped output, whatever the field names
  g=""; gok=1
  for n in "${NAMES[@]}"; do
    cnt=$(jq --arg c "${CLUSTER[$n]}" '[.. | objects | select(any(.[]; . == $c))] | first
      | if . == null then null else (.count // .captures // .terminations // .records // ([.[] | numbers] | first)) end' "$OUT/group-by-cluster.json" 2>/dev/null)
    g+="${CLUSTER[$n]} ${cnt:-none}, "
    [[ $cnt == "$N" ]] || gok=0
  done
  (( gok )); check $? "history -n $NS --group-by cluster --format json: ${g%, } (N=$N each)"
else
  fail "history --group-by cluster failed: $(head -c 300 "$OUT/group-by.stderr")"
fi

# ------------------------------------------------------------------ wrong passwords
WRONG=$(openssl rand -base64 48 | tr -dc 'A-Za-z0-9' | head -c 24)
WRONG_FILE="$OUT/wrong-password"; (umask 077; printf '%s' "$WRONG" > "$WRONG_FILE")
wrong_ok=1 wrong_msgs=""
for how in file env url none; do
  case $how in
    none) env -u PGPASSWORD timeout 60 "$CRASHDOC" history --db "$URL" --format json > "$OUT/wrong-$how.out" 2> "$OUT/wrong-$how.err" < /dev/null ;;
    file) timeout 60 "$CRASHDOC" history --db "$URL" --db-password-file "$WRONG_FILE" --format json > "$OUT/wrong-$how.out" 2> "$OUT/wrong-$how.err" ;;
    env) PGPASSWORD="$WRONG" timeout 60 "$CRASHDOC" history --db "$URL" --format json > "$OUT/wrong-$how.out" 2> "$OUT/wrong-$how.err" ;;
    url) timeout 60 "$CRASHDOC" history --db "postgres://crashdoc:$WRONG@${URL#postgres://crashdoc@}" --format json > "$OUT/wrong-$how.out" 2> "$OUT/wrong-$how.err" ;;
  esac
  rc=$?
  (( rc != 0 )) || { wrong_ok=0; wrong_msgs+="$how: exit 0; "; }
  wrong_msgs+="$how: exit $rc '$(head -n1 "$OUT/wrong-$how.err" | cut -c1-120)'; "
done
(( wrong_ok )); check $? "a wrong password (or none) fails (${wrong_msgs%; })"
# and a watcher started with a wrong password in its URL, for 8 s
CLUSTER[wrong]="wrong-$RUN" PORT[wrong]=$((BASE + 88))
start_watch wrong --db "postgres://crashdoc:$WRONG@${URL#postgres://crashdoc@}"
sleep 8
metrics wrong > "$OUT/wrong-metrics.txt"
stop_watch wrong
# the right password inside the URL, for history too
history_url_rc=0
timeout 120 "$CRASHDOC" history --db "$URL_WITH_PW" -n "$NS" --cluster "${CLUSTER[west]}" --format json --limit 1000000 \
  > "$OUT/url-history.json" 2> "$OUT/url-history.stderr" || history_url_rc=$?
PGPASSWORD="$PASSWORD" timeout 120 "$CRASHDOC" history --db "$URL" -n "$NS" --group-by cluster \
  > "$OUT/env-group-by.txt" 2> "$OUT/env-group-by.stderr" || history_url_rc=$?
[[ $history_url_rc == 0 && $(jq length "$OUT/url-history.json" 2>/dev/null) == "$N" ]]
check $? "the password inside the URL and in PGPASSWORD work for history ($(jq length "$OUT/url-history.json" 2>/dev/null) records of ${CLUSTER[west]})"

# ------------------------------------------------------------------ the canary: no password anywhere
for n in "${NAMES[@]}"; do metrics "$n" > "$OUT/$n-metrics-end.txt"; done
stop_watch east; stop_watch west
canary() { # canary VALUE WHAT: VALUE in no file under OUT (spools included) nor in PostgreSQL's log
  local hits
  hits=$( { grep -rlaF --exclude=wrong-password -- "$1" "$OUT"; grep -laF -- "$1" "$PG_LOG"; } 2>/dev/null | sed "s|^$ROOT/||" | tr '\n' ' ')
  [[ -z "$hits" ]]
  check $? "canary: $2 in none of $(find "$OUT" -type f ! -name wrong-password | wc -l) files (watcher logs, /metrics, history text/json/group-by, wrong-password errors, spools) nor PostgreSQL's log${hits:+: FOUND in $hits}"
}
canary "$PASSWORD" "the database password ($(( ${#PASSWORD} )) characters, given by file, URL and PGPASSWORD)"
canary "$WRONG" "the wrong password of the failing runs"

# ------------------------------------------------------------------ audit: the watcher wrote only its Leases
logs=("$STATE/audit.log")
bad=$(jq -r --arg from "$AUDIT_FROM" --arg ns "$NS" 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-watcher"
    and .requestReceivedTimestamp >= $from and (.verb | IN("get", "list", "watch") | not)
    and (.objectRef.resource != "leases" or .objectRef.namespace != $ns or ((.objectRef.name // "crashdoc-watch-east") | IN("crashdoc-watch-east", "crashdoc-watch-west", "crashdoc-watch-wrong") | not)))
  | "\(.verb) \(.requestURI) \(.responseStatus.code)"' "${logs[@]}" 2>/dev/null | sort | uniq -c | head -3 | tr '\n' ';')
writes=$(jq -r --arg from "$AUDIT_FROM" 'select(.stage == "ResponseComplete" and .user.username == "crashdoc-e2e-watcher"
    and .requestReceivedTimestamp >= $from and (.verb | IN("get", "list", "watch") | not)) | .verb' "${logs[@]}" 2>/dev/null | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
[[ -z "$bad" ]]
check $? "audit: the watchers wrote only their Leases in $NS (${writes%, })${bad:+; other writes: $bad}"

info "figures: N=$N per cluster (${CLUSTER[east]}, ${CLUSTER[west]}); spool peak depth east $(awk -F'\t' '$2 > m {m = $2} END {print m + 0}' "$OUT/samples.tsv"), west $(awk -F'\t' '$5 > m {m = $5} END {print m + 0}' "$OUT/samples.tsv"); PostgreSQL down $(awk -v a="$t_kill" -v b="$t_up" 'BEGIN {printf "%.1f", (b - a) / 1000}') s; spool empty after the restart in east ${EMPTIED[east]} s, west ${EMPTIED[west]} s; all settled east ${T_DRAIN[east]} s, west ${T_DRAIN[west]} s after it; storm ended $(awk -v a="$t_up" -v b="$t_storm_end" 'BEGIN {printf "%.1f", (b - a) / 1000}') s after the restart"
info "fleet.sh took $(secs_since "$T_ALL") s"
echo "$passed passed, $failed failed"
(( failed == 0 ))
