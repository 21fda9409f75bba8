#!/usr/bin/env bash
# Regenerate deploy/manifests/crashdoc-watch.yaml from the Helm chart's default
# values (release "crashdoc", namespace "crashdoc"), for `kubectl apply -f`
# users. deploy/check.sh fails when the committed file differs from this output.
#
#   deploy/generate-manifests.sh            rewrite deploy/manifests/crashdoc-watch.yaml
#   deploy/generate-manifests.sh OUT.yaml   write elsewhere (check.sh does)
#
# helm: $HELM, else `helm` on PATH, else ~/.cache/crashdoc-tools/helm-v*/helm.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE/manifests/crashdoc-watch.yaml}"

find_helm() {
  if [[ -n "${HELM:-}" ]]; then echo "$HELM"; return; fi
  if command -v helm >/dev/null 2>&1; then command -v helm; return; fi
  local h
  for h in $(ls -d "$HOME"/.cache/crashdoc-tools/helm-v*/helm 2>/dev/null | sort -V -r); do
    [[ -x "$h" ]] && { echo "$h"; return; }
  done
  return 1
}
HELM_BIN=$(find_helm) || { echo "generate-manifests: helm not found (set HELM, or see deploy/README.md)" >&2; exit 2; }
HELM_VERSION=$("$HELM_BIN" version --template '{{.Version}}')

tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
{
  cat <<HDR
# crashdoc watch: plain manifests, equivalent to the Helm chart's defaults.
#
# GENERATED: do not edit. deploy/generate-manifests.sh writes this file from
#   helm template crashdoc deploy/helm/crashdoc --namespace crashdoc
# (helm $HELM_VERSION), adds the Namespace, and drops the two Helm-only labels
# (helm.sh/chart, app.kubernetes.io/managed-by). deploy/check.sh fails when it
# is stale.
#
#   kubectl apply -f deploy/manifests/crashdoc-watch.yaml
#
# Then set the image: no image is published yet (deploy/Dockerfile, deploy/README.md):
#   kubectl -n crashdoc set image deployment/crashdoc crashdoc=REGISTRY/crashdoc:0.1.0
#
# What it creates: Namespace crashdoc (Pod Security "restricted" enforced),
# ServiceAccount, ClusterRole + ClusterRoleBinding (get/list/watch only, no
# Secrets), Service (metrics on 9464), Deployment (1 replica, no leader
# election, history on an emptyDir). For more replicas, persistence, a single
# namespace, Secret key checks or a webhook, use the chart.
---
apiVersion: v1
kind: Namespace
metadata:
  name: crashdoc
  labels:
    app.kubernetes.io/part-of: crashdoc
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/warn-version: latest
HDR
  # --kube-version: only checked against the chart's kubeVersion; pinned so a
  # helm built without its version ldflags (which assumes 1.20) works too.
  "$HELM_BIN" template crashdoc "$HERE/helm/crashdoc" --namespace crashdoc --kube-version 1.36.3 \
    | grep -v -E '^[[:space:]]*(helm\.sh/chart|app\.kubernetes\.io/managed-by):'
} > "$tmp"
mkdir -p "$(dirname "$OUT")"
mv "$tmp" "$OUT"
trap - EXIT
echo "wrote $OUT (helm $HELM_VERSION)" >&2
