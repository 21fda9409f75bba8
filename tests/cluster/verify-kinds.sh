#!/usr/bin/env bash
# crashdoc verify against the real controllers: a StatefulSet and a DaemonSet
# (and a Deployment) rolled out, then updated, verified with the read-only
# user; the new revision verify names must be the one the controller set
# (status.updateRevision; the DaemonSet's newest ControllerRevision), and the
# update's old pods must be counted. Needs the cluster up (scripts/cluster up):
#
#   flock /tmp/crashdoc-cluster.lock bash -c 'scripts/cluster up && tests/cluster/verify-kinds.sh; scripts/cluster down'
#
# CRASHDOC_BIN=path picks the binary (default target/release/crashdoc).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CRASHDOC="${CRASHDOC_BIN:-$ROOT/target/release/crashdoc}"
export KUBECONFIG="$ROOT/target/cluster/kubeconfig"
RO="$ROOT/target/cluster/kubeconfig-readonly"
NS=crashdoc-verify
OUT="$ROOT/target/cluster/verify-kinds"
mkdir -p "$OUT"
pass=0 failed=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

kubectl create namespace "$NS" > /dev/null 2>&1
cat <<'YAML' | kubectl -n "$NS" apply -f - > /dev/null
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {kubernetes.io/hostname: kwok-cpu-0}
      containers: [{name: db, image: "postgres:16"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/hostname: kwok-cpu-0}
      containers: [{name: agent, image: "fluent-bit:3.0"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: kwok-cpu-0}
      containers: [{name: web, image: "nginx:1.27"}]
YAML

# verify KIND/NAME FILE: exit 0; the JSON and stderr kept under $OUT.
verify() {
  local target=$1 file=$2
  if "$CRASHDOC" verify "$target" -n "$NS" --kubeconfig "$RO" --stable 5s --timeout 120s \
      --format json > "$OUT/$file.json" 2> "$OUT/$file.stderr"; then
    ok "verify $target ($file): held; $(grep '^restarts:' "$OUT/$file.stderr")"
  else
    fail "verify $target ($file): exit $? ($(tail -n 3 "$OUT/$file.stderr" | tr '\n' ' '))"
  fi
}
new_revision() { jq -r '.revisions.new.revision' "$OUT/$1.json" 2>/dev/null; }
same() {
  if [[ -n "$2" && "$2" == "$3" ]]; then ok "$1: $2"; else fail "$1: crashdoc says '$2', the controller '$3'"; fi
}
controllers() {
  want_sts=$(kubectl -n "$NS" get statefulset db -o jsonpath='{.status.updateRevision}')
  want_ds=$(kubectl -n "$NS" get controllerrevisions -l app=agent -o json |
    jq -r '[.items[] | select(.metadata.ownerReferences[0].name == "agent")] | max_by(.revision) | .metadata.labels["controller-revision-hash"]')
  local rev
  rev=$(kubectl -n "$NS" get deployment web -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')
  want_deploy=$(kubectl -n "$NS" get replicasets -l app=web -o json |
    jq -r --arg rev "$rev" '.items[] | select(.metadata.annotations["deployment.kubernetes.io/revision"] == $rev) | .metadata.name')
}

for phase in created updated; do
  if [[ $phase == updated ]]; then
    kubectl -n "$NS" set image statefulset/db db=postgres:17 > /dev/null
    kubectl -n "$NS" set image daemonset/agent agent=fluent-bit:3.1 > /dev/null
    kubectl -n "$NS" set image deployment/web web=nginx:1.28 > /dev/null
  fi
  verify sts/db "sts-$phase"
  verify ds/agent "ds-$phase"
  verify deploy/web "deploy-$phase"
  controllers
  same "sts/db $phase: the new revision is status.updateRevision" "$(new_revision "sts-$phase")" "$want_sts"
  same "ds/agent $phase: the new revision is the newest ControllerRevision's hash" "$(new_revision "ds-$phase")" "$want_ds"
  same "deploy/web $phase: the new revision is the current ReplicaSet" "$(new_revision "deploy-$phase")" "$want_deploy"
done
# Other kinds are refused before anything is read.
if "$CRASHDOC" verify job/x -n "$NS" --kubeconfig "$RO" > /dev/null 2> "$OUT/job.stderr"; then
  fail "verify job/x: exit 0"
else
  code=$?; [[ $code == 2 ]] && ok "verify job/x: exit 2" || fail "verify job/x: exit $code"
fi
kubectl delete namespace "$NS" --wait=false > /dev/null 2>&1
echo "$pass passed, $failed failed"
[[ $failed == 0 ]]
