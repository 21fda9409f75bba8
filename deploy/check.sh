#!/usr/bin/env bash
# Validates deploy/ for real: the Helm chart, its renderings, the plain
# manifests, and what the service account may do on a real API server.
#
#   deploy/check.sh                 everything below; skips (exit 0) without helm
#   deploy/check.sh --install-helm  first `go install` helm into ~/.cache/crashdoc-tools/
#
#  1. helm lint --strict, default values and each variant in VARIANTS
#  2. helm template of each variant, and static checks on it (check_render.py):
#     hardening, probes, read-only verbs, secrets rule only when opted in,
#     Lease rights only with leader election, StatefulSet with persistence, ...
#  3. values that must be refused (schema typos, replicas without leader election)
#  4. deploy/manifests/crashdoc-watch.yaml is what generate-manifests.sh writes
#  5. the repository's test control plane (scripts/cluster; kwok as kubelet):
#     kubectl apply --dry-run=server --validate=strict of every variant and of
#     the plain manifests; then a real `kubectl apply` of the plain manifests
#     and real `helm install`s (HA with persistence, secrets, webhook,
#     ServiceMonitor; single namespace) into namespaces enforcing the Pod
#     Security "restricted" profile, pods created; `kubectl auth can-i` matrix
#     for each service account; the Lease written as the service account.
#
# Environment:
#   HELM=PATH                       helm binary (default: PATH, then ~/.cache/crashdoc-tools/helm-v*/helm)
#   CRASHDOC_CLUSTER_DIR=DIR        checkout whose scripts/cluster to use (default: this one);
#                                   a running cluster there is reused and left running
#   CRASHDOC_CLUSTER_PORT_BASE=N    ports of a cluster this script starts (scripts/cluster)
#   CRASHDOC_DEPLOY_CLUSTER=0       skip step 5
#   CRASHDOC_DEPLOY_REQUIRE_CLUSTER=1  fail instead of skipping step 5 when the
#                                   cluster binaries are not built (scripts/cluster-build)
#   CRASHDOC_BIN=PATH               6. also run `crashdoc capture` of every crash scenario
#                                   (scripts/cluster scenarios, applied if absent) with a token
#                                   of the default and the secretKeyChecks service accounts:
#                                   nothing may be missing but what each is denied on purpose
#
# Ends with "N passed, M failed"; exit 1 if anything failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
CHART="$HERE/helm/crashdoc"
HELM_PIN=v3.22.0
# The Kubernetes version lint and template assume: the test cluster's.
KUBE_VERSION=${CRASHDOC_DEPLOY_KUBE_VERSION:-1.36.3}
T0=$(date +%s)

PASS=0 FAIL=0
ok()   { PASS=$((PASS + 1)); printf 'ok   %s\n' "$*"; }
bad()  { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*"; }
step() { printf '\n== %s (at %ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }
finish() {
  printf '\ndeploy/check.sh: %ss\n' "$(( $(date +%s) - T0 ))"
  printf '%d passed, %d failed\n' "$PASS" "$FAIL"
  [[ $FAIL -eq 0 ]]
}

# ------------------------------------------------------------------ helm
find_helm() {
  if [[ -n "${HELM:-}" ]]; then echo "$HELM"; return; fi
  if command -v helm >/dev/null 2>&1; then command -v helm; return; fi
  local h
  for h in $(ls -d "$HOME"/.cache/crashdoc-tools/helm-v*/helm 2>/dev/null | sort -V -r); do
    [[ -x "$h" ]] && { echo "$h"; return; }
  done
  return 1
}
if [[ "${1:-}" == "--install-helm" ]] && ! find_helm >/dev/null; then
  # helm from the Go module proxy (no binary download); ~2-6 min on 2 cores.
  echo "installing helm $HELM_PIN with go install into ~/.cache/crashdoc-tools/helm-$HELM_PIN" >&2
  CRASHDOC_HELM_VERSION=$HELM_PIN "$HERE/../scripts/helm-build" >/dev/null \
    || { echo "deploy/check.sh: scripts/helm-build $HELM_PIN failed" >&2; exit 1; }
fi
if ! HELM_BIN=$(find_helm); then
  echo "SKIP deploy/check.sh: helm not found (not on PATH, HELM unset, nothing in ~/.cache/crashdoc-tools/)."
  echo "     Install it with: deploy/check.sh --install-helm   (go install helm.sh/helm/v3/cmd/helm@$HELM_PIN)"
  exit 0
fi
export HELM_BIN
echo "helm: $HELM_BIN ($("$HELM_BIN" version --template '{{.Version}}'))"
# Keep helm's own state out of the user's home.
HTMP=$(mktemp -d)
export HELM_CACHE_HOME="$HTMP/cache" HELM_CONFIG_HOME="$HTMP/config" HELM_DATA_HOME="$HTMP/data"
OUT="$HTMP/out"; mkdir -p "$OUT"

# A shared PostgreSQL history: the password and the CA from Secrets.
DB="history.database.url=postgres://crashdoc@db.example.internal:5432/crashdoc?sslmode=verify-full"
DB+=",history.database.passwordSecret.name=crashdoc-db,history.database.caSecret.name=crashdoc-db-ca"
# name -> --set list (comma-separated; "" for defaults). Names are the words
# check_render.py understands, joined with "+".
VARIANTS=(
  "default|"
  "ha|replicaCount=2"
  "leader|leaderElection.enabled=true"
  "persistence|persistence.enabled=true"
  "ha+persistence|replicaCount=3,persistence.enabled=true,persistence.storageClass=-,persistence.claimRetentionPolicy.whenDeleted=Delete"
  "secrets|secretKeyChecks=true"
  "namespaced|watch.namespace=team-a"
  "namespaced+nonodes|watch.namespace=team-a,rbac.readNodes=false,rbac.readPodMetrics=false"
  "servicemonitor|metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=kube-prometheus-stack"
  "prometheusrule|metrics.prometheusRule.enabled=true,metrics.prometheusRule.labels.release=kube-prometheus-stack"
  "webhook|notifications.webhook.existingSecret=crashdoc-webhook,notifications.webhook.format=slack,notifications.webhook.notifyInterval=30m"
  "misc|metrics.listenAddress=::,image.digest=sha256:0000000000000000000000000000000000000000000000000000000000000000,watch.labelSelector=team=ml,watch.verbose=true,watch.extraArgs[0]=--capture-existing,emptyDir.sizeLimit="
  "database|$DB"
  "database+clustername+ha+persistence|$DB,history.database.clusterName=prod-eu-1,replicaCount=2,persistence.enabled=true,history.database.spool.maxCaptures=500,history.database.spool.maxMiB=64"
  "database+namespaced|$DB,watch.namespace=team-a"
  "database+namespaced+nonodes+clustername|$DB,watch.namespace=team-a,rbac.readNodes=false,history.database.clusterName=prod-eu-1"
  "mcp|mcp.enabled=true,mcp.tokenSecret.name=crashdoc-mcp"
  "mcp+jwks+tls|mcp.enabled=true,mcp.tokenSecret.name=crashdoc-mcp,mcp.jwks.configMap=issuer-jwks,mcp.authIssuer=https://login.example.com,mcp.authAudience=https://crashdoc-mcp.example.com/mcp,mcp.tls.secretName=crashdoc-mcp-tls,mcp.allowHosts[0]=crashdoc-mcp.example.com"
  "mcp+jwks+jwksonly|mcp.enabled=true,mcp.jwks.configMap=issuer-jwks,mcp.authIssuer=https://login.example.com,mcp.authAudience=https://crashdoc-mcp.example.com/mcp"
  "all|replicaCount=2,persistence.enabled=true,secretKeyChecks=true,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.prometheusRule.labels.release=kube-prometheus-stack,notifications.webhook.existingSecret=crashdoc-webhook"
)
set_args() { [[ -n "$1" ]] && printf -- '--set\n%s\n' "$1"; }
render() { # render NAME SETS RELEASE NAMESPACE -> file
  local f="$OUT/$1.$3.yaml" a=()
  mapfile -t a < <(set_args "$2")
  "$HELM_BIN" template "$3" "$CHART" --kube-version "$KUBE_VERSION" --namespace "$4" "${a[@]}" > "$f" 2> "$f.err" || return 1
  echo "$f"
}

# ------------------------------------------------------------------ 1-2
step "helm lint, helm template, static checks"
for v in "${VARIANTS[@]}"; do
  name=${v%%|*} sets=${v#*|}
  mapfile -t a < <(set_args "$sets")
  if lint=$("$HELM_BIN" lint --strict --kube-version "$KUBE_VERSION" "$CHART" "${a[@]}" 2>&1); then ok "helm lint --strict [$name]"
  else bad "helm lint --strict [$name]"; echo "$lint" | sed 's/^/     /'; fi
  if f=$(render "$name" "$sets" crashdoc crashdoc); then
    ok "helm template [$name]: $(grep -c '^kind:' "$f") objects"
    if python3 -c 'import yaml' 2>/dev/null; then
      if r=$(python3 "$HERE/check_render.py" "$name" "$f"); then ok "static checks [$name]: $(grep -c '^ok' <<<"$r")"
      else bad "static checks [$name]"; grep '^FAIL' <<<"$r" | sed 's/^/     /'; fi
    fi
  else bad "helm template [$name]"; sed 's/^/     /' "$OUT/$name.crashdoc.yaml.err"; fi
done
python3 -c 'import yaml' 2>/dev/null || echo "note: static checks skipped (python3 cannot import yaml: pip install pyyaml)"

# ------------------------------------------------------------------ 3
step "values the chart must refuse"
refuse() { # refuse DESC EXPECTED-ERROR-SUBSTRING helm-template-args...
  local desc=$1 want=$2 out; shift 2
  if out=$("$HELM_BIN" template crashdoc "$CHART" --kube-version "$KUBE_VERSION" "$@" 2>&1); then bad "refused: $desc (rendered)"
  elif grep -qi -- "$want" <<<"$out"; then ok "refused: $desc"
  else bad "refused: $desc (other error)"; echo "$out" | head -5 | sed 's/^/     /'; fi
}
refuse "replicaCount=2 with leaderElection.enabled=false" "every replica would capture" \
  --set replicaCount=2 --set leaderElection.enabled=false
refuse "a misspelt key (replicas)" "additional properties" --set replicas=2
refuse "retention 2weeks" "retention" --set history.retention=2weeks
refuse "webhook format teams" "format" --set notifications.webhook.format=teams
refuse "ServiceMonitor without the Service" "needs metrics.service.enabled" \
  --set metrics.serviceMonitor.enabled=true --set metrics.service.enabled=false
refuse "privileged metrics port 80" "port" --set metrics.port=80
refuse "alert window 15minutes" "window" --set metrics.prometheusRule.window=15minutes
# The password is a placeholder: the refusal's message quotes the URL.
refuse "a database URL with a password in it" "history/database/url" \
  --set history.database.url=postgres://crashdoc:PLACEHOLDER@db:5432/crashdoc --set history.database.passwordSecret.name=crashdoc-db
refuse "a database URL with a password= parameter" "history/database/url" \
  --set 'history.database.url=postgres://crashdoc@db:5432/crashdoc?sslmode=require&password=PLACEHOLDER' \
  --set history.database.passwordSecret.name=crashdoc-db
refuse "a database URL that is not postgres://" "history/database/url" \
  --set history.database.url=mysql://crashdoc@db:3306/crashdoc --set history.database.passwordSecret.name=crashdoc-db
refuse "a database URL without passwordSecret.name" "passwordSecret.name is empty" \
  --set history.database.url=postgres://crashdoc@db:5432/crashdoc
refuse "mcp without a token or a key set" "needs mcp.tokenSecret.name" --set mcp.enabled=true
refuse "mcp JWTs without the audience" "needs mcp.authIssuer and mcp.authAudience" \
  --set mcp.enabled=true --set mcp.jwks.configMap=issuer-jwks --set mcp.authIssuer=https://login.example.com

# ------------------------------------------------------------------ 4
step "plain manifests"
if HELM="$HELM_BIN" "$HERE/generate-manifests.sh" "$OUT/plain.yaml" 2>/dev/null \
   && diff -u <(grep -v '^# (helm ' "$HERE/manifests/crashdoc-watch.yaml") <(grep -v '^# (helm ' "$OUT/plain.yaml") > "$OUT/plain.diff"; then
  ok "deploy/manifests/crashdoc-watch.yaml is up to date with the chart"
else
  bad "deploy/manifests/crashdoc-watch.yaml is stale: run deploy/generate-manifests.sh"; head -20 "$OUT/plain.diff" | sed 's/^/     /'
fi

# ------------------------------------------------------------------ 5
step "a real API server: server-side dry-run, install, RBAC"
CL="${CRASHDOC_CLUSTER_DIR:-$REPO}"
if [[ "${CRASHDOC_DEPLOY_CLUSTER:-1}" == 0 ]]; then
  echo "skipped (CRASHDOC_DEPLOY_CLUSTER=0)"; finish; exit
fi
bindir=$("$CL/scripts/cluster-build" --print | cut -d' ' -f1)
if [[ ! -x "$bindir/kube-apiserver" ]]; then
  msg="the test control plane is not built ($bindir); scripts/cluster-build builds it (15-40 min)"
  if [[ "${CRASHDOC_DEPLOY_REQUIRE_CLUSTER:-0}" == 1 ]]; then bad "$msg"; else echo "SKIP cluster checks: $msg"; fi
  finish; exit
fi
STARTED=0
if ! "$CL/scripts/cluster" status >/dev/null 2>&1; then
  t=$(date +%s)
  if "$CL/scripts/cluster" up > "$OUT/cluster-up.log" 2>&1; then STARTED=1; ok "scripts/cluster up ($(( $(date +%s) - t ))s)"
  else bad "scripts/cluster up"; tail -5 "$OUT/cluster-up.log" | sed 's/^/     /'; "$CL/scripts/cluster" down >/dev/null 2>&1; finish; exit; fi
else echo "reusing the running cluster of $CL"; fi
eval "$("$CL/scripts/cluster" env)"
export KUBECONFIG PATH
K=(kubectl --request-timeout=30s)
NAMESPACES=(crashdoc crashdoc-ha crashdoc-ns crashdoc-dry team-a)
cleanup() {
  "$HELM_BIN" uninstall crashdoc-ha -n crashdoc-ha >/dev/null 2>&1
  "$HELM_BIN" uninstall crashdoc-ns -n crashdoc-ns >/dev/null 2>&1
  "${K[@]}" delete -f "$HERE/manifests/crashdoc-watch.yaml" --ignore-not-found --wait=false >/dev/null 2>&1
  "${K[@]}" delete namespace "${NAMESPACES[@]}" --ignore-not-found --wait=false >/dev/null 2>&1
  "${K[@]}" delete crd -l crashdoc.test/stand-in=true --ignore-not-found >/dev/null 2>&1
  if [[ $STARTED == 1 ]]; then "$CL/scripts/cluster" down >/dev/null 2>&1; fi
  rm -rf "$HTMP"
}
trap cleanup EXIT
# A leftover from an interrupted run would turn creates into updates.
"${K[@]}" delete namespace "${NAMESPACES[@]}" --ignore-not-found --wait=true >/dev/null 2>&1
"${K[@]}" delete clusterrole,clusterrolebinding -l 'app.kubernetes.io/instance in (crashdoc,crashdoc-ha,crashdoc-ns)' --ignore-not-found >/dev/null 2>&1

# The ServiceMonitor stand-in CRD (testdata/servicemonitor-crd.yaml), unless the real one is there.
if ! "${K[@]}" get crd servicemonitors.monitoring.coreos.com >/dev/null 2>&1; then
  "${K[@]}" apply -f "$HERE/testdata/servicemonitor-crd.yaml" >/dev/null \
    && "${K[@]}" wait --for=condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com >/dev/null
fi
# Likewise the PrometheusRule stand-in (testdata/prometheusrule-crd.yaml).
if ! "${K[@]}" get crd prometheusrules.monitoring.coreos.com >/dev/null 2>&1; then
  "${K[@]}" apply -f "$HERE/testdata/prometheusrule-crd.yaml" >/dev/null \
    && "${K[@]}" wait --for=condition=Established --timeout=60s crd/prometheusrules.monitoring.coreos.com >/dev/null
fi
for ns in crashdoc-ha crashdoc-ns crashdoc-dry team-a; do
  "${K[@]}" create namespace "$ns" >/dev/null
  # Pods that break the "restricted" Pod Security profile are refused here.
  "${K[@]}" label namespace "$ns" pod-security.kubernetes.io/enforce=restricted \
    pod-security.kubernetes.io/warn=restricted >/dev/null
done

dry() { # dry DESC FILE
  local out
  if out=$("${K[@]}" apply --dry-run=server --validate=strict -f "$2" 2>&1) && ! grep -qi warning <<<"$out"; then
    ok "dry-run=server [$1]: $(grep -c 'created (server dry run)\|configured (server dry run)\|unchanged (server dry run)' <<<"$out") objects accepted"
  else bad "dry-run=server [$1]"; echo "$out" | grep -v '(server dry run)' | head -8 | sed 's/^/     /'; fi
}
for v in "${VARIANTS[@]}"; do
  name=${v%%|*} sets=${v#*|}
  f=$(render "$name" "$sets" crashdoc-dry crashdoc-dry) && dry "$name" "$f"
done
# The plain manifests carry their own Namespace: a dry run cannot create it,
# so it is applied for real first (it is applied for real below anyway).
"${K[@]}" apply -f <(awk 'BEGIN{RS="---\n"} /kind: Namespace/ {print; exit}' "$HERE/manifests/crashdoc-watch.yaml") >/dev/null
dry "deploy/manifests/crashdoc-watch.yaml" "$HERE/manifests/crashdoc-watch.yaml"

# Real installs.
if out=$("${K[@]}" apply --validate=strict -f "$HERE/manifests/crashdoc-watch.yaml" 2>&1); then ok "kubectl apply deploy/manifests/crashdoc-watch.yaml"
else bad "kubectl apply deploy/manifests/crashdoc-watch.yaml"; echo "$out" | sed 's/^/     /'; fi
"${K[@]}" -n crashdoc-ha create secret generic crashdoc-webhook --from-literal=url=https://hooks.example.invalid/x >/dev/null
if out=$("$HELM_BIN" install crashdoc-ha "$CHART" -n crashdoc-ha --set replicaCount=2,persistence.enabled=true,secretKeyChecks=true \
      --set metrics.serviceMonitor.enabled=true,notifications.webhook.existingSecret=crashdoc-webhook 2>&1); then
  ok "helm install crashdoc-ha (2 replicas, leader election, StatefulSet, secretKeyChecks, webhook, ServiceMonitor)"
else bad "helm install crashdoc-ha"; echo "$out" | tail -5 | sed 's/^/     /'; fi
if out=$("$HELM_BIN" install crashdoc-ns "$CHART" -n crashdoc-ns --set watch.namespace=team-a 2>&1); then
  ok "helm install crashdoc-ns (watch.namespace=team-a)"
else bad "helm install crashdoc-ns"; echo "$out" | tail -5 | sed 's/^/     /'; fi
pods_created() { # NS INSTANCE WANT: the controllers created the pods (Pod Security admitted them)
  local n=0
  for _ in $(seq 1 60); do
    n=$("${K[@]}" -n "$1" get pods -l "app.kubernetes.io/instance=$2" --no-headers 2>/dev/null | wc -l)
    [[ $n -ge $3 ]] && break; sleep 1
  done
  if [[ $n -ge $3 ]]; then ok "$1: $n pod(s) of $2 created under Pod Security \"restricted\""
  else bad "$1: $n/$3 pods of $2 created"
    "${K[@]}" -n "$1" get events --field-selector reason=FailedCreate -o custom-columns=MSG:.message --no-headers 2>/dev/null | head -3 | sed 's/^/     /'; fi
}
pods_created crashdoc crashdoc 1
pods_created crashdoc-ha crashdoc-ha 2
pods_created crashdoc-ns crashdoc-ns 1
claims=$("${K[@]}" -n crashdoc-ha get pvc -l app.kubernetes.io/instance=crashdoc-ha -o name 2>/dev/null | sort | tr '\n' ' ')
[[ "$claims" == "persistentvolumeclaim/data-crashdoc-ha-0 persistentvolumeclaim/data-crashdoc-ha-1 " ]] \
  && ok "one claim per replica: $claims" || bad "claims per replica: '$claims'"

# RBAC, as each service account.
can() { # can yes|no SA-NS SA VERB RESOURCE [kubectl flags...]
  local want=$1 sans=$2 sa=$3; shift 3
  local got; got=$("${K[@]}" auth can-i "$@" --as="system:serviceaccount:$sans:$sa" 2>/dev/null)
  local desc; desc="can-i $* as $sans/$sa"
  [[ "$got" == "$want" ]] && ok "$desc: $got" || bad "$desc: $got (want $want)"
}
# metrics.k8s.io is not served by the test cluster (no metrics-server), and
# `kubectl auth can-i` cannot resolve a resource of an unserved group: ask the
# authorizer directly with a SubjectAccessReview.
sar() { # sar yes|no SA-NS SA VERB GROUP RESOURCE NAMESPACE
  local want=$1 sans=$2 sa=$3 verb=$4 group=$5 res=$6 ns=$7 got
  got=$(printf '%s\n' "apiVersion: authorization.k8s.io/v1" "kind: SubjectAccessReview" "spec:" \
    "  user: system:serviceaccount:$sans:$sa" \
    "  groups: [system:serviceaccounts, system:serviceaccounts:$sans, system:authenticated]" \
    "  resourceAttributes: {verb: $verb, group: $group, resource: $res, namespace: $ns}" \
    | "${K[@]}" create -o jsonpath='{.status.allowed}' -f - 2>/dev/null)
  [[ "$got" == true ]] && got=yes || got=no
  local desc="SubjectAccessReview $verb $res.$group -n $ns as $sans/$sa"
  [[ "$got" == "$want" ]] && ok "$desc: $got" || bad "$desc: $got (want $want)"
}
SA=(crashdoc crashdoc)            # the plain manifests = chart defaults
can yes "${SA[@]}" list pods -A
can yes "${SA[@]}" watch pods -n crashdoc-e2e
can yes "${SA[@]}" get pods --subresource=log -n crashdoc-e2e
can yes "${SA[@]}" watch events -A
can yes "${SA[@]}" list events.events.k8s.io -A
can yes "${SA[@]}" get nodes
can yes "${SA[@]}" get replicasets.apps -n crashdoc-e2e
can yes "${SA[@]}" get cronjobs.batch -n crashdoc-e2e
can yes "${SA[@]}" get configmaps -n crashdoc-e2e
sar yes "${SA[@]}" get metrics.k8s.io pods crashdoc-e2e
can no  "${SA[@]}" get secrets -n crashdoc-e2e
can no  "${SA[@]}" list secrets -A
can no  "${SA[@]}" create leases.coordination.k8s.io -n crashdoc
can no  "${SA[@]}" delete pods -n crashdoc-e2e
can no  "${SA[@]}" create pods --subresource=exec -n crashdoc-e2e
can no  "${SA[@]}" create pods --subresource=eviction -n crashdoc-e2e
can no  "${SA[@]}" update deployments.apps -n crashdoc-e2e
can no  "${SA[@]}" patch deployments.apps -n crashdoc-e2e
can no  "${SA[@]}" create configmaps -n crashdoc
HA=(crashdoc-ha crashdoc-ha)      # leader election, secretKeyChecks
can yes "${HA[@]}" create leases.coordination.k8s.io -n crashdoc-ha
can yes "${HA[@]}" get leases.coordination.k8s.io/crashdoc-ha -n crashdoc-ha
can yes "${HA[@]}" update leases.coordination.k8s.io/crashdoc-ha -n crashdoc-ha
can yes "${HA[@]}" patch leases.coordination.k8s.io/crashdoc-ha -n crashdoc-ha
can no  "${HA[@]}" update leases.coordination.k8s.io/kube-scheduler -n crashdoc-ha
can no  "${HA[@]}" delete leases.coordination.k8s.io/crashdoc-ha -n crashdoc-ha
can no  "${HA[@]}" list leases.coordination.k8s.io -n crashdoc-ha
can no  "${HA[@]}" create leases.coordination.k8s.io -n default
can no  "${HA[@]}" create leases.coordination.k8s.io -n kube-system
can yes "${HA[@]}" get secrets -n crashdoc-e2e
can no  "${HA[@]}" list secrets -n crashdoc-e2e
can no  "${HA[@]}" watch secrets -A
can no  "${HA[@]}" delete pods -n crashdoc-e2e
can no  "${HA[@]}" update deployments.apps -n crashdoc-e2e
NS=(crashdoc-ns crashdoc-ns)      # watch.namespace=team-a
can yes "${NS[@]}" list pods -n team-a
can yes "${NS[@]}" get pods --subresource=log -n team-a
can yes "${NS[@]}" get nodes
can no  "${NS[@]}" list pods -A
can no  "${NS[@]}" list pods -n crashdoc-e2e
can no  "${NS[@]}" get secrets -n team-a
can no  "${NS[@]}" create leases.coordination.k8s.io -n crashdoc-ns

# The Lease for real, as the HA service account: created by name from the
# body, renewed, but no other Lease touched and nothing deleted.
as=(--as=system:serviceaccount:crashdoc-ha:crashdoc-ha -n crashdoc-ha)
lease() { printf 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: %s\nspec:\n  holderIdentity: crashdoc-ha-0\n  leaseDurationSeconds: 15\n' "$1"; }
try() { # try yes|no DESC CMD...
  local want=$1 desc=$2 out; shift 2
  if out=$("$@" 2>&1); then [[ $want == yes ]] && ok "$desc" || bad "$desc: allowed"
  elif [[ $want == no ]] && grep -q Forbidden <<<"$out"; then ok "$desc: Forbidden"
  else bad "$desc: $(head -1 <<<"$out")"; fi
}
try yes "as crashdoc-ha: create Lease crashdoc-ha" "${K[@]}" "${as[@]}" create -f <(lease crashdoc-ha)
try yes "as crashdoc-ha: renew it (patch)" "${K[@]}" "${as[@]}" patch lease crashdoc-ha --type=merge \
  -p "{\"spec\":{\"renewTime\":\"$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)\"}}"
try yes "as crashdoc-ha: hand it over (update)" "${K[@]}" "${as[@]}" replace -f <(lease crashdoc-ha | sed 's/crashdoc-ha-0/crashdoc-ha-1/')
"${K[@]}" -n crashdoc-ha create -f <(lease someone-else) >/dev/null
try no "as crashdoc-ha: patch another Lease" "${K[@]}" "${as[@]}" patch lease someone-else --type=merge -p '{"spec":{"holderIdentity":"x"}}'
try no "as crashdoc-ha: delete its Lease" "${K[@]}" "${as[@]}" delete lease crashdoc-ha
try no "as crashdoc-ha: create a Lease in default" "${K[@]}" --as=system:serviceaccount:crashdoc-ha:crashdoc-ha -n default create -f <(lease crashdoc-ha)


# ------------------------------------------------------------------ 6
# With CRASHDOC_BIN: crashdoc itself, as the chart's service accounts, against
# the crash scenarios (applied here if absent: ~45 s): every capture must read
# all the evidence but what the account is meant not to read.
if [[ -n "${CRASHDOC_BIN:-}" ]]; then
  step "crashdoc capture as the service accounts ($CRASHDOC_BIN)"
  if ! "${K[@]}" -n crashdoc-e2e get pods --no-headers 2>/dev/null | grep -q .; then
    "$CL/scripts/cluster" scenarios > "$OUT/scenarios.log" 2>&1 || { bad "scripts/cluster scenarios"; tail -3 "$OUT/scenarios.log"; }
  fi
  sa_kubeconfig() { # NS SA OUT: a kubeconfig with a token of that service account
    local tok server ca
    tok=$("${K[@]}" -n "$1" create token "$2" --duration=10m) || return 1
    server=$("${K[@]}" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
    ca=$("${K[@]}" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
    printf '%s\n' "apiVersion: v1" "kind: Config" \
      "clusters: [{name: c, cluster: {server: \"$server\", certificate-authority-data: \"$ca\"}}]" \
      "users: [{name: u, user: {token: \"$tok\"}}]" \
      "contexts: [{name: c, context: {cluster: c, user: u, namespace: crashdoc-e2e}}]" \
      "current-context: c" > "$3"
  }
  captures() { # DESC KUBECONFIG ALLOWED-MISSING-REGEX
    local dir="$OUT/cap-$1" w n k missing
    mkdir -p "$dir"
    for w in $("${K[@]}" -n crashdoc-e2e get deploy,sts,job -o name); do
      n=${w#*/} k=${w%%/*}; k=${k%%.*}
      KUBECONFIG=$2 "$CRASHDOC_BIN" capture "$k/$n" -n crashdoc-e2e -o "$dir/$n" >/dev/null 2>"$dir/$n.err" \
        || bad "[$1] crashdoc capture $k/$n: $(tail -1 "$dir/$n.err")"
    done
    missing=$(cat "$dir"/*/pods/*/*/missing.json 2>/dev/null | jq -r '.[]? | "\(.what): \(.why)"' | grep -v -E "$3" | sort | uniq -c)
    if [[ -z "$missing" ]]; then ok "[$1] $(ls -d "$dir"/*/ | wc -l) captures read all their evidence (allowed gaps: $3)"
    else bad "[$1] evidence missing:"; sed 's/^/     /' <<<"$missing"; fi
  }
  sa_kubeconfig crashdoc crashdoc "$OUT/kc-default" && captures defaults "$OUT/kc-default" \
    '^usage: the cluster does not serve metrics|^secret [^:]*: forbidden'
  sa_kubeconfig crashdoc-ha crashdoc-ha "$OUT/kc-ha" && captures secretKeyChecks "$OUT/kc-ha" \
    '^usage: the cluster does not serve metrics'
fi

finish
