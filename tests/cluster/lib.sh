# Shared by the tier's scripts (bench-live.sh, regressions.sh, live.sh, lint-live.sh): sourced, not run.

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
