#!/usr/bin/env bash
# Build the Go test tools of the cluster tier (tests/cluster/tools/*/main.go)
# into ~/.cache/crashdoc-cluster/tools-<hash of the sources>/bin, once per
# source version, and print the bin directory. Same cache and build settings
# as scripts/cluster-build (CRASHDOC_CLUSTER_CACHE overrides the cache).
#
#   tests/cluster/tools/build.sh            build what is missing, print the bin dir
#   tests/cluster/tools/build.sh --print    only print it
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CRASHDOC_CLUSTER_CACHE:-$HOME/.cache/crashdoc-cluster}"
# shellcheck source=../../../scripts/lib/go-scratch.sh
source "$HERE/../../../scripts/lib/go-scratch.sh"
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -modcacherw" CGO_ENABLED=0
hash=$(cd "$HERE" && find . -name '*.go' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
OUT="$CACHE/tools-$hash/bin"
[[ "${1:-}" == "--print" ]] && { echo "$OUT"; exit 0; }
tools=()
for d in "$HERE"/*/; do [[ -f "$d/main.go" ]] && tools+=("$(basename "$d")"); done
missing=0
for t in "${tools[@]}"; do [[ -x "$OUT/$t" ]] || missing=1; done
if (( missing )); then
  go_scratch cluster-tools 1000
  mkdir -p "$OUT"
  start=$(date +%s)
  for t in "${tools[@]}"; do
    printf '[tools-build] go build %s\n' "$t" >&2
    (cd "$HERE" && nice -n 19 go build -trimpath -ldflags "-s -w" -o "$OUT/$t" "./$t")
  done
  printf '[tools-build] built in %ss into %s; %s\n' "$(( $(date +%s) - start ))" "$OUT" "$(go_scratch_report)" >&2
fi
echo "$OUT"
