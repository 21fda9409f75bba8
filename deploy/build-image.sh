#!/usr/bin/env bash
# Build the crashdoc container image with buildah, with no image registry:
# the image is scratch plus the release binary, the shared libraries it links
# (from the build machine's Debian packages, named in the image) and the CA
# bundle; then prove it with podman (or, where containers cannot run, by
# running the binary chrooted into the image's filesystem).
#
#   deploy/build-image.sh                     build localhost/crashdoc:VERSION, run the checks
#   deploy/build-image.sh --bin PATH          use an already built release binary
#   deploy/build-image.sh --save FILE.tar     also write a docker-archive (podman/docker load -i FILE.tar)
#   deploy/build-image.sh --tag NAME:TAG      another name
#
# deploy/Dockerfile's first stage, `local`, is what this builds (buildah bud
# --target local, with a staged root filesystem as the context); the
# Dockerfile's last stage is the registry build (rust:trixie builder,
# distroless runtime) for machines that reach the registries.
# Needs root (or a user namespace) for buildah; installs buildah and podman
# from Debian's packages when missing. Ends with "N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/Cargo.toml" | head -1)
TAG="localhost/crashdoc:$VERSION" BIN="" SAVE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
    --tag) TAG=${2:?--tag needs NAME:TAG}; shift 2 ;;
    --save) SAVE=${2:?--save needs FILE.tar}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (see deploy/build-image.sh --help)" >&2; exit 2 ;;
  esac
done
PASS=0 FAIL=0
ok()  { PASS=$((PASS + 1)); printf 'ok   %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*"; }
finish() { printf 'deploy/build-image.sh: %ss\n%d passed, %d failed\n' "$(( $(date +%s) - T0 ))" "$PASS" "$FAIL"; [[ $FAIL -eq 0 ]]; exit; }
T0=$(date +%s)

if ! command -v buildah >/dev/null 2>&1 || ! command -v podman >/dev/null 2>&1; then
  echo "installing buildah and podman (apt-get)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah podman >/dev/null; } \
    || { bad "buildah/podman not installed and apt-get failed"; finish; }
fi

# ------------------------------------------------------------------ binary
if [[ -z "$BIN" ]]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/crashdoc/target}"
  t=$(date +%s)
  (cd "$REPO" && cargo build --release --locked -p crashdoc) || { bad "cargo build --release"; finish; }
  BIN="$CARGO_TARGET_DIR/release/crashdoc"
  echo "release build: $(( $(date +%s) - t ))s"
fi
[[ -x "$BIN" ]] || { bad "$BIN is not an executable"; finish; }

# ------------------------------------------------------------------ rootfs
CTX=$(mktemp -d); trap 'rm -rf "$CTX"' EXIT
R="$CTX/rootfs"
mkdir -p "$R/usr/local/bin" "$R/etc/ssl/certs" "$R/tmp" "$R/var/lib/crashdoc" "$R/usr/share/doc/crashdoc"
install -m 0755 "$BIN" "$R/usr/local/bin/crashdoc"
# The release profile keeps line tables for backtraces (most of the size);
# the image drops them (symbols stay, so panics still name functions).
if command -v objcopy >/dev/null 2>&1; then objcopy --strip-debug "$R/usr/local/bin/crashdoc"; fi
# The libraries the dynamic loader resolves for it, at the same paths, and the
# loader itself (the PT_INTERP path, e.g. /lib64/ld-linux-x86-64.so.2).
libs=$(ldd "$BIN" | awk '/=> \// {print $3} /^[[:space:]]*\// {print $1}' | sort -u)
[[ -n "$libs" ]] || { bad "ldd found no libraries (a static binary needs none: fine, but unexpected here)"; }
: > "$R/usr/share/doc/crashdoc/image-packages.txt"
for l in $libs; do
  mkdir -p "$R$(dirname "$l")"
  cp -L "$l" "$R$l"
  real=$(readlink -f "$l")
  pkg=$(dpkg -S "$real" 2>/dev/null | head -1 || dpkg -S "$l" 2>/dev/null | head -1)
  [[ -z "$pkg" ]] && pkg=$(dpkg -S "$l" 2>/dev/null | head -1)
  echo "$l  ${pkg:-unknown package}" >> "$R/usr/share/doc/crashdoc/image-packages.txt"
done
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  cp -L /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/"
  echo "/etc/ssl/certs/ca-certificates.crt  $(dpkg -S /usr/share/ca-certificates 2>/dev/null | cut -d: -f1 | head -1)" >> "$R/usr/share/doc/crashdoc/image-packages.txt"
fi
# Users as distroless names them: the chart runs as 65532 (nonroot).
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$R/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$R/etc/group"
printf 'hosts: files dns\n' > "$R/etc/nsswitch.conf"
chmod 1777 "$R/tmp"
chown 65532:65532 "$R/var/lib/crashdoc"
: > "$CTX/.containerignore"   # the whole staged context goes in
ok "root filesystem: the binary, $(wc -w <<<"$libs") libraries, CA bundle ($(du -sh "$R" | cut -f1))"
sed 's/^/     /' "$R/usr/share/doc/crashdoc/image-packages.txt"

# ------------------------------------------------------------------ build
t=$(date +%s)
if out=$(buildah bud --target local --layers=false -f "$HERE/Dockerfile" \
    --build-arg VERSION="$VERSION" -t "$TAG" "$CTX" 2>&1); then
  ok "buildah bud --target local -f deploy/Dockerfile: $TAG ($(( $(date +%s) - t ))s)"
else
  bad "buildah bud"; tail -15 <<<"$out" | sed 's/^/     /'; finish
fi
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$TAG" 2>/dev/null)
entry=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$TAG" 2>/dev/null)
if [[ "$user" == "65532:65532" && "$entry" == "[/usr/local/bin/crashdoc]" ]]; then ok "image config: user $user, entrypoint $entry"
else bad "image config: user '$user', entrypoint '$entry'"; fi

# ------------------------------------------------------------------ run
want_version="crashdoc $VERSION"
# podman's defaults first; then what a sandboxed VM needs: runc (crun refuses
# a hybrid cgroup v1/v2 layout) and rlimits no higher than the VM lets a
# container set (podman asks for 1048576 open files as root).
RUN=(podman run --rm --network=none)
if ! v=$("${RUN[@]}" "$TAG" --version 2>&1) || [[ "$v" != "$want_version" ]]; then
  echo "note: podman run with its defaults failed: $(tail -1 <<<"$v")"
  if ! command -v runc >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc >/dev/null; } 2>/dev/null || true
  fi
  RUN=(podman --runtime runc run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
  echo "note: retrying as ${RUN[*]}"
  v=$("${RUN[@]}" "$TAG" --version 2>&1)
fi
if [[ "$v" == "$want_version" ]]; then
  ok "${RUN[*]} $TAG --version: $v"
  if h=$("${RUN[@]}" "$TAG" watch --help 2>&1) && grep -q 'Usage: crashdoc watch' <<<"$h"; then
    ok "podman run $TAG watch --help: $(grep -c . <<<"$h") lines, $(grep -m1 'Usage:' <<<"$h")"
  else bad "podman run $TAG watch --help"; head -5 <<<"$h" | sed 's/^/     /'; fi
  if a=$("${RUN[@]}" -v "$REPO/examples:/examples:ro" "$TAG" analyze /examples/vllm-oom --format json 2>&1) \
     && grep -q '"cause": "oom-killed"' <<<"$a"; then ok "podman run $TAG analyze /examples/vllm-oom (as uid 65532): oom-killed"
  else bad "podman run $TAG analyze /examples/vllm-oom"; head -5 <<<"$a" | sed 's/^/     /'; fi
  if "${RUN[@]}" --entrypoint /bin/sh "$TAG" -c true >/dev/null 2>&1; then bad "the image has a shell"
  else ok "no shell in the image (/bin/sh cannot start)"; fi
else
  echo "note: podman cannot run the image here ($(tail -1 <<<"$v")); proving the image's filesystem instead"
  c=$(buildah from "$TAG") && mnt=$(buildah mount "$c") || { bad "buildah from/mount $TAG"; finish; }
  if v=$(chroot --userspec=65532:65532 "$mnt" /usr/local/bin/crashdoc --version 2>&1) && [[ "$v" == "$want_version" ]]; then ok "chroot into the image: crashdoc --version: $v"
  else bad "chroot into the image: --version: $v"; fi
  if h=$(chroot --userspec=65532:65532 "$mnt" /usr/local/bin/crashdoc watch --help 2>&1) && grep -q 'Usage: crashdoc watch' <<<"$h"; then ok "chroot into the image: crashdoc watch --help"
  else bad "chroot into the image: watch --help"; fi
  buildah umount "$c" >/dev/null; buildah rm "$c" >/dev/null
fi

if [[ -n "$SAVE" ]]; then
  rm -f "$SAVE"
  if buildah push -q "$TAG" "docker-archive:$SAVE:$TAG" >/dev/null 2>&1; then ok "saved $SAVE ($(du -h "$SAVE" | cut -f1)): podman load -i / docker load -i"
  else bad "buildah push docker-archive:$SAVE"; fi
fi
size=$(podman image inspect --format '{{.Size}}' "$TAG" 2>/dev/null || echo 0)
echo "image $TAG: $(( size / 1024 / 1024 )) MiB"
finish
