#!/usr/bin/env bash
# check-scenario.sh --pending KUBECONFIG EXPECTED_TSV
#   prints the names of scenarios whose pod does not show its failure yet
#   (one per line; nothing when all are settled). Used by `scripts/cluster scenarios`.
#
# A scenario "name" (from kind/name in expected.tsv) is the pod label
# crashdoc.test/scenario=name; what "settled" means follows the pod's
# crashdoc.test/behavior annotation (see kwok/*.yaml):
#   crashloop       main container waiting CrashLoopBackOff after crashdoc.test/restarts restarts (default 3)
#   init-crashloop  the same for the first init container
#   config-error    waiting CreateContainerConfigError
#   image-pull      waiting ImagePullBackOff
#   evicted         phase Failed, reason Evicted
#   (none)          PodScheduled=False reason Unschedulable (a real scheduler decision)
set -euo pipefail
[[ "${1:-}" == "--pending" ]] || { echo "usage: $0 --pending KUBECONFIG EXPECTED_TSV" >&2; exit 2; }
kubeconfig=$2 tsv=$3
settled=$(kubectl --kubeconfig "$kubeconfig" -n crashdoc-e2e get pods -l crashdoc.test/scenario -o json | jq -r '
  def restarts: ((.metadata.annotations["crashdoc.test/restarts"] // "3") | tonumber);
  .items[]
  | . as $p
  | (.metadata.annotations["crashdoc.test/behavior"] // "") as $b
  | select(
      if $b == "crashloop" then
        ((.status.containerStatuses // [])[0] // {}) as $c
        | ($c.state.waiting.reason == "CrashLoopBackOff") and (($c.restartCount // 0) >= ($p | restarts))
      elif $b == "init-crashloop" then
        ((.status.initContainerStatuses // [])[0] // {}) as $c
        | ($c.state.waiting.reason == "CrashLoopBackOff") and (($c.restartCount // 0) >= ($p | restarts))
      elif $b == "config-error" then
        ((.status.containerStatuses // [])[0].state.waiting.reason // "") == "CreateContainerConfigError"
      elif $b == "image-pull" then
        ((.status.containerStatuses // [])[0].state.waiting.reason // "") == "ImagePullBackOff"
      elif $b == "evicted" then
        .status.phase == "Failed" and .status.reason == "Evicted"
      else
        any((.status.conditions // [])[]; .type == "PodScheduled" and .reason == "Unschedulable")
      end)
  | .metadata.labels["crashdoc.test/scenario"]' | sort -u)
while IFS=$'\t' read -r ref _cause; do
  [[ -z "$ref" || "$ref" == \#* ]] && continue
  name=${ref#*/}
  grep -qxF "$name" <<<"$settled" || echo "$name"
done < "$tsv"
