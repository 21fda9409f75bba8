#!/usr/bin/env bash
# `crashdoc mcp` with a real MCP client (the Python `mcp` SDK): tests/mcp/client_test.py.
#
#   tests/mcp/run.sh            offline: stdio and streamable HTTP (HTTPS with a bearer token; needs openssl), the shipped examples, errors, secrets
#   tests/mcp/run.sh --live     against the cluster tier's control plane (tests/cluster/run.sh runs it
#                               while the cluster is up; hold /tmp/crashdoc-cluster.lock otherwise)
#
# The client lives in a venv cached in ~/.cache/crashdoc/mcp-venv (PyPI: mcp==$MCP_VERSION).
# CRASHDOC_BIN=path tests another binary than $CARGO_TARGET_DIR/release/crashdoc (built when missing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MCP_VERSION=2.3.0
VENV="${CRASHDOC_MCP_VENV:-$HOME/.cache/crashdoc/mcp-venv}"

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 needs python3-venv for `-m venv`
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION"
fi

BIN="${CRASHDOC_BIN:-}"
if [[ -z "$BIN" ]]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/crashdoc/target}"
  BIN="$CARGO_TARGET_DIR/release/crashdoc"
  [[ -x "$BIN" ]] || (cd "$ROOT" && cargo build --release -p crashdoc)
fi

exec "$VENV/bin/python" "$ROOT/tests/mcp/client_test.py" --bin "$BIN" "$@"
