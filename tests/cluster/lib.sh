# Shared by the tier's scripts (bench-live.sh, regressions.sh, live.sh, lint-live.sh, watch.sh,
# faults.sh, realnode.sh): sourced, not run.

# median: the middle of the numbers on stdin, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# now_ms: milliseconds since the epoch.
now_ms() { date +%s%3N; }
# playbook NS POD: the five kubectl commands of the 2am playbook that
# `crashdoc diagnose` replaces, in sequence, output discarded (kubectl from
# PATH, KUBECONFIG from the environment).
playbook() {
  { kubectl -n "$1" get pod "$2" -o wide
    kubectl -n "$1" describe pod "$2"
    kubectl -n "$1" logs "$2" --previous
    kubectl -n "$1" logs "$2"
    kubectl -n "$1" get events --field-selector "involvedObject.name=$2"; } > /dev/null 2>&1
}

# planted_secret_values DIR: the values under stringData:/data: of every
# Secret in DIR/*.yaml (8 characters or more), one per line, for the scripts
# that check that none reaches crashdoc's output or bundles.
planted_secret_values() {
  awk '
    /^---/ { secret = 0; data = 0 }
    /^kind: Secret/ { secret = 1 }
    secret && /^(stringData|data):/ { data = 1; next }
    secret && data && /^  [A-Za-z0-9_.-]+: / { sub(/^  [A-Za-z0-9_.-]+: */, ""); print; next }
    /^[^ ]/ { data = 0 }
  ' "$1"/*.yaml | grep -E '.{8,}' | sort -u
}

# ENDED_RUNS_JQ: jq definitions for the ground truth of terminations: how many
# runs of a container have ended, by its status, as the kubelet v1.36.3 counts
# and as crashdoc watch numbers them (crates/crashdoc-kube/src/runs.rs). Runs
# are numbered 0.. by the restart count each container was created with (a new
# container gets the newest one's + 1: pkg/kubelet/kuberuntime/
# kuberuntime_container.go startContainer), and restartCount R is the newest
# container's (pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses). So
# runs 0..R have ended when the newest has: state.terminated shows it, the
# status waits in CrashLoopBackOff, or it waits with lastState = the newest
# container (the same containerID, or no IDs); runs 0..R-1 while it runs or has
# not started (ContainerCreating, PodInitializing, created beside another
# lastState). An exit 0 of a container not meant to keep running (an init
# container, a Job's) is work done, not a termination crashdoc counts.
#   ended($pod; $init): for a container status (.), of $pod, an init container's if $init
# shellcheck disable=SC2034,SC2016  # used by the scripts that source this; jq, not shell
ENDED_RUNS_JQ='
def keeps_running($pod; $init):
  .name as $n
  | if $init then any(($pod.spec.initContainers // [])[]; .name == $n and .restartPolicy == "Always")
    else (($pod.spec.restartPolicy // "Always") == "Always") end;
def counts($t; $keeps): (($t.exitCode // 0) != 0) or $keeps;
def ended($pod; $init):
  keeps_running($pod; $init) as $keeps
  | (.restartCount // 0) as $r
  | (.state // {}) as $s
  | (.lastState.terminated // null) as $l
  | if $s.terminated then (if counts($s.terminated; $keeps) then $r + 1 else $r end)
    elif $s.running then $r
    elif ($s.waiting.reason // "") == "CrashLoopBackOff" then $r + 1
    elif $l != null and ((.containerID // "") == "" or ($l.containerID // "") == "" or .containerID == $l.containerID)
      then (if counts($l; $keeps) then $r + 1 else $r end)
    else $r end;
# container_runs: [uid, pod, container, ended runs] of every container of every live pod (. is a PodList)
def container_runs:
  .items[] | select(.metadata.deletionTimestamp == null) | . as $p
  | ((($p.status.initContainerStatuses // [])[] | [., true]), (($p.status.containerStatuses // [])[] | [., false]))
  | . as [$c, $init]
  | [$p.metadata.uid, $p.metadata.name, $c.name, ($c | ended($p; $init))];
'
# check_no_leaks SCENARIO_DIR OUT WHAT: the planted Secret values of
# SCENARIO_DIR/*.yaml appear nowhere under OUT; reports through the calling
# script's ok and fail ("no planted secret value in WHAT ...").
check_no_leaks() {
  local values v leaks=0
  values=$(planted_secret_values "$1")
  while read -r v; do
    [[ -z "$v" ]] && continue
    if grep -rqF -- "$v" "$2"; then fail "secret value ${v:0:6}... appears in $(grep -rlF -- "$v" "$2" | head -3 | tr '\n' ' ')"; leaks=1; fi
  done <<< "$values"
  (( leaks == 0 )) && ok "no planted secret value in $3 ($(grep -c . <<< "$values") values checked)"
}
