#!/usr/bin/env bash
# check-scenario.sh --pending KUBECONFIG EXPECTED_TSV
#   prints the names of scenarios whose pod does not show its failure yet
#   (one per line; nothing when all are settled). Used by `scripts/cluster scenarios`.
#
# A scenario "name" (from kind/name in expected.tsv) is the pod label
# crashdoc.test/scenario=name. A pod is settled when
#   - kwok's crashdoc-scrub stage (kwok/50-scrub.yaml) has removed its
#     crashdoc.test/* annotations, which it does once the failure is final, or
#   - it never had a crashdoc.test/behavior and the real scheduler marked it
#     Unschedulable.
set -euo pipefail
[[ "${1:-}" == "--pending" ]] || { echo "usage: $0 --pending KUBECONFIG EXPECTED_TSV" >&2; exit 2; }
kubeconfig=$2 tsv=$3
settled=$(kubectl --kubeconfig "$kubeconfig" -n crashdoc-e2e get pods -l crashdoc.test/scenario -o json | jq -r '
  .items[]
  | select(.metadata.deletionTimestamp == null)
  | select((.metadata.annotations // {}) | has("crashdoc.test/behavior") | not)
  | select((.spec.nodeName // "") != ""
           or any((.status.conditions // [])[]; .type == "PodScheduled" and .reason == "Unschedulable"))
  | .metadata.labels["crashdoc.test/scenario"]' | sort -u)
while IFS=$'\t' read -r ref _cause; do
  [[ -z "$ref" || "$ref" == \#* ]] && continue
  name=${ref#*/}
  grep -qxF "$name" <<<"$settled" || echo "$name"
done < "$tsv"
