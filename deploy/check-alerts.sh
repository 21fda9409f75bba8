#!/usr/bin/env bash
# Unit-tests crashdoc's Prometheus alerts with promtool, and checks that the
# chart's PrometheusRule is those rules.
#
#   deploy/check-alerts.sh
#
#  1. promtool (built from the Go module proxy by scripts/promtool-build, cached
#     under ~/.cache/crashdoc-tools/) `check rules` and `test rules` on
#     helm/crashdoc/files/prometheus-rules.yaml with the chart's default values
#     (deploy/testdata/prometheus-rules.test.yaml: each alert fires, and a near
#     miss does not);
#  2. with helm (HELM, PATH or ~/.cache/crashdoc-tools/helm-v*/helm, as
#     deploy/check.sh finds it): the rendered PrometheusRule's spec is exactly
#     the tested rules; otherwise this step says it skipped.
# The Grafana dashboard and these rules name only metrics crashdoc exports:
# `cargo test -p crashdoc-watch --test dashboards` checks that.
#
# Ends with "N passed, M failed"; exit 1 if anything failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
RULES="$HERE/helm/crashdoc/files/prometheus-rules.yaml"
PASS=0 FAIL=0
ok()  { PASS=$((PASS + 1)); printf 'ok   %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*"; }
T0=$(date +%s)

if ! PROMTOOL=$("$REPO/scripts/promtool-build"); then
  bad "scripts/promtool-build"; printf '%d passed, %d failed\n' "$PASS" "$FAIL"; exit 1
fi
echo "promtool: $PROMTOOL ($("$PROMTOOL" --version 2>&1 | head -1))"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# The chart's defaults for release "crashdoc" in namespace "crashdoc".
sed -e 's/__WINDOW__/15m/g' -e 's/__RESTARTS__/3/g' \
    -e 's|__EXEC__|kubectl -n crashdoc exec deploy/crashdoc --|g' \
    -e 's|__RUNBOOK_URL__|https://example.invalid/crashdoc/blob/main/docs/alerts.md|g' \
    "$RULES" > "$TMP/rules.yaml"
cp "$HERE/testdata/prometheus-rules.test.yaml" "$TMP/"
if grep -q '__[A-Z_]*__' "$TMP/rules.yaml"; then bad "a placeholder left unreplaced: $(grep -o '__[A-Z_]*__' "$TMP/rules.yaml" | sort -u | tr '\n' ' ')"; fi
if out=$(cd "$TMP" && "$PROMTOOL" check rules rules.yaml 2>&1); then ok "promtool check rules: $(grep -o '[0-9]* rules found' <<<"$out")"
else bad "promtool check rules"; sed 's/^/     /' <<<"$out"; fi
alerts=$(grep -c '^      - alert:' "$RULES")
tested=$(grep -o 'alertname: [A-Za-z]*' "$TMP/prometheus-rules.test.yaml" | sort -u | wc -l)
if [[ $tested == "$alerts" ]]; then ok "every alert ($alerts) has a promtool test"; else bad "$alerts alerts, $tested tested"; fi
if out=$(cd "$TMP" && "$PROMTOOL" test rules prometheus-rules.test.yaml 2>&1); then
  ok "promtool test rules: $(grep -c 'eval_time:' "$TMP/prometheus-rules.test.yaml") evaluations in $(grep -c '^  - name:' "$TMP/prometheus-rules.test.yaml") tests"
else bad "promtool test rules"; sed 's/^/     /' <<<"$out"; fi

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
if HELM_BIN=$(find_helm) && python3 -c 'import yaml' 2>/dev/null; then
  export HELM_CACHE_HOME="$TMP/h" HELM_CONFIG_HOME="$TMP/h" HELM_DATA_HOME="$TMP/h"
  if "$HELM_BIN" template crashdoc "$HERE/helm/crashdoc" --namespace crashdoc \
      --set metrics.prometheusRule.enabled=true > "$TMP/chart.yaml" 2> "$TMP/chart.err"; then
    if out=$(python3 - "$TMP/chart.yaml" "$TMP/rules.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "PrometheusRule"]
assert len(docs) == 1, f"{len(docs)} PrometheusRule objects"
want = yaml.safe_load(open(sys.argv[2]))
assert docs[0]["spec"] == want, "the rendered spec differs from the tested rules"
print(docs[0]["metadata"]["name"])
PY
    ); then ok "helm template: PrometheusRule/$out is the tested rules"; else bad "helm template: $out"; fi
    if "$HELM_BIN" template crashdoc "$HERE/helm/crashdoc" | grep -q '^kind: PrometheusRule'; then bad "a PrometheusRule without metrics.prometheusRule.enabled"
    else ok "no PrometheusRule by default"; fi
  else bad "helm template with metrics.prometheusRule.enabled"; sed 's/^/     /' "$TMP/chart.err"; fi
else
  echo "skipped: the chart's rendering (no helm, or python3 without yaml); deploy/check.sh --install-helm builds helm"
fi
printf 'deploy/check-alerts.sh: %ss\n' "$(( $(date +%s) - T0 ))"
printf '%d passed, %d failed\n' "$PASS" "$FAIL"
[[ $FAIL -eq 0 ]]
