# shellcheck shell=bash
# Sourced by every script that builds a test tool from the Go module proxy:
# scripts/promtool-build, scripts/helm-build, scripts/cluster-build and
# tests/cluster/tools/build.sh.
#
# Their binaries are cached under ~/.cache. What go needs to make them is not:
# each tool's module downloads and build cache (0.3-4 GiB) go to a scratch
# GOMODCACHE and GOCACHE that are removed when the build ends, so a run's disk
# peak is one tool's build, not the sum of every tool's (a CI run once ran out
# of disk in the fifth build, with go's default caches holding all of them).
#
#   go_scratch NAME MIB   check that MIB MiB are free where the scratch goes,
#                         then point GOMODCACHE/GOCACHE at it; sets an EXIT
#                         trap that removes it
#   go_scratch_report     one line: the scratch's size now (call before exit)
#   go_scratch_cleanup    remove it now (a script that builds several tools
#                         calls it between them)
#
# CRASHDOC_GO_KEEP_CACHES=1 keeps go's own caches instead (a developer who
# builds the tools often). CRASHDOC_GO_SCRATCH sets where the scratch goes
# (default ~/.cache/crashdoc-tools/.go-scratch).

GO_SCRATCH_DIR=""

go_scratch_free_mib() {
  local dir=$1
  while [[ ! -d "$dir" ]]; do dir=$(dirname "$dir"); done
  df -Pm "$dir" | awk 'NR == 2 { print $4 }'
}

go_scratch() {
  local name=$1 need=$2
  export GOTOOLCHAIN=local CGO_ENABLED=0
  # -modcacherw: the module cache is written read-only by default, which
  # `rm -rf` cannot remove.
  export GOFLAGS="-buildvcs=false -modcacherw"
  if [[ "${CRASHDOC_GO_KEEP_CACHES:-0}" == 1 ]]; then return 0; fi
  local base="${CRASHDOC_GO_SCRATCH:-${CRASHDOC_TOOLS_CACHE:-$HOME/.cache/crashdoc-tools}/.go-scratch}"
  mkdir -p "$base"
  local free; free=$(go_scratch_free_mib "$base")
  if [[ -n "$free" ]] && (( free < need )); then
    printf 'error: building %s needs about %d MiB of free disk under %s; %d MiB are free\n' \
      "$name" "$need" "$base" "$free" >&2
    printf 'hint: free some space, or set CRASHDOC_GO_SCRATCH to a larger filesystem\n' >&2
    return 1
  fi
  go_scratch_cleanup
  GO_SCRATCH_DIR=$(mktemp -d "$base/$name.XXXXXX")
  export GOMODCACHE="$GO_SCRATCH_DIR/mod" GOCACHE="$GO_SCRATCH_DIR/build"
  trap 'go_scratch_cleanup' EXIT
}

go_scratch_report() {
  [[ -n "$GO_SCRATCH_DIR" && -d "$GO_SCRATCH_DIR" ]] || return 0
  printf '%s MiB of module downloads and build cache (removed)\n' \
    "$(du -sm "$GO_SCRATCH_DIR" 2>/dev/null | cut -f1)"
}

go_scratch_cleanup() {
  if [[ -n "$GO_SCRATCH_DIR" && -d "$GO_SCRATCH_DIR" ]]; then
    chmod -R u+w "$GO_SCRATCH_DIR" 2>/dev/null || true
    rm -rf "$GO_SCRATCH_DIR"
  fi
  GO_SCRATCH_DIR=""
}
