#!/usr/bin/env bash
# audit-verbs.sh [USER] [AUDIT_LOG]
#   Summarises what USER (default crashdoc-e2e-reader, the user of
#   target/cluster/kubeconfig-readonly) did according to the apiserver's audit
#   log (default target/cluster/audit.log): one line per verb, resource and
#   response code, with a count. Exits 1 if the user used any verb other than
#   get, list or watch, 2 if the user made no request at all.
#   CRASHDOC_AUDIT_LEASES=1 also allows any verb on leases (watch's leader
#   election: the one object crashdoc writes).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
user=${1:-crashdoc-e2e-reader}
log=${2:-$ROOT/target/cluster/audit.log}
[[ -f "$log" ]] || { echo "no audit log at $log" >&2; exit 2; }
summary=$(jq -r --arg u "$user" '
  select(.stage == "ResponseComplete" and .user.username == $u)
  | [.verb, ((.objectRef.resource // .requestURI) + (if .objectRef.subresource then "/" + .objectRef.subresource else "" end)),
     (.responseStatus.code // 0 | tostring)] | @tsv' "$log" | sort | uniq -c | sort -rn)
[[ -n "$summary" ]] || { echo "no requests by $user in $log" >&2; exit 2; }
echo "$summary"
if awk -v l="${CRASHDOC_AUDIT_LEASES:-0}" '!(l == 1 && $3 ~ /^leases/) {print $2}' <<<"$summary" | grep -qvxE 'get|list|watch'; then
  echo "$user used verbs other than get/list/watch" >&2
  exit 1
fi
