#!/usr/bin/env python3
"""`crashdoc mcp` tested with a real MCP client: the Python `mcp` SDK.

Offline (the default): launches `crashdoc mcp` over stdio and once more with
`--http` (streamable HTTP over TLS, a bearer token), lists the tools, calls each one against the
shipped examples (examples/), checks the results, the error conventions
(tool failures as isError results carrying the CLI's hint, an unknown tool as
a protocol error) and that no secret value planted in a Secret, an env var and
log lines reaches any tool result.

Live (`--live`): against the cluster tier's control plane (tests/cluster),
as its read-only user: `diagnose` and `capture` of every scenario of
tests/cluster/scenarios/expected.tsv, `scan` of the namespace, `history` of
what a short `crashdoc watch` recorded, no secret value of the scenarios'
Secrets in any result, and only get/list/watch in the apiserver's audit log.

Prints one line per check ("ok ..." or "FAIL ..."), then "N passed, M failed";
exits non-zero if any failed.
"""

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"analyze", "capture", "diagnose", "explain", "fleet", "history", "lint", "scan"}
EXAMPLES = [
    ("vllm-oom", "oom-killed"),
    ("slow-start-liveness", "probe-kill"),
    ("bundle", "auth-failure"),
    ("missing-secret-key.txt", "config-ref-missing"),
]


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
            print(f"ok   {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {what}", flush=True)
        return ok


def top(v):
    try:
        return v["pods"][0]["diagnoses"][0]["cause"]
    except (KeyError, IndexError, TypeError):
        return "none"


def text_of(r):
    return "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")


def whole(r):
    """Everything a client receives from one tool result, as one string."""
    return json.dumps(r.model_dump(mode="json", by_alias=True))


@asynccontextmanager
async def stdio_session(binary, args=(), env=None):
    params = StdioServerParameters(
        command=str(binary), args=["mcp", *args], cwd=str(ROOT), env=env
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            yield s


async def call(s, tool, args):
    return await s.call_tool(tool, args)


# ---------------------------------------------------------------- offline


def secret_fixture(d: Path):
    """A folder of kubectl outputs with values planted in a Secret, an env var and log lines."""
    (d / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ledger-db\n  namespace: shop\n"
        "data:\n  password: UGw0bnRlZFNlY3JldFZhbHVlLTljMWY=\n"
        "stringData:\n  api-key: Pl4ntedStringData-77aa\n"
    )
    (d / "describe-pod.txt").write_text(
        "Name:         ledger-6d5c9-x1y2z\nNamespace:    shop\nControlled By:  ReplicaSet/ledger-6d5c9\n"
        "Containers:\n  api:\n    Image:          ledger:1\n    State:          Waiting\n"
        "      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n"
        "      Exit Code:    1\n    Restart Count:  6\n    Environment:\n"
        "      LEDGER_API_TOKEN:  Pl4ntedEnvValue-c0ffee\n"
        "      DB_PASSWORD:       <set to the key 'password' in secret 'ledger-db'>  Optional: false\n"
    )
    (d / "logs-previous.txt").write_text(
        "starting ledger api\n"
        "config: password=Pl4ntedLogPassword-31 pool=10\n"
        "Error: connect ECONNREFUSED 10.0.0.7:5432 postgres://ledger:Pl4ntedUrlPass-42@db.shop:5432/ledger\n"
        'FATAL:  password authentication failed for user "ledger" (password=Pl4ntedLogPassword-31)\n'
        "HTTP 401 Unauthorized for request with Authorization: Bearer Pl4ntedBearerToken0123456789\n"
    )
    return [
        "Pl4ntedSecretValue-9c1f",
        "UGw0bnRlZFNlY3JldFZhbHVlLTljMWY",
        "Pl4ntedStringData-77aa",
        "Pl4ntedEnvValue-c0ffee",
        "Pl4ntedLogPassword-31",
        "Pl4ntedBearerToken0123456789",
        "Pl4ntedUrlPass-42",
    ]


async def offline(binary, c: Checks):
    async with stdio_session(binary, env={"CRASHDOC_DB": "/nonexistent/history.redb"}) as s:
        tools = (await s.list_tools()).tools
        names = {t.name for t in tools}
        c.check(names == TOOLS, f"stdio: tools/list gives {sorted(names)}")
        schema = {t.name: t.input_schema for t in tools}
        props = set(schema.get("diagnose", {}).get("properties", {}))
        c.check(
            {"target", "namespace", "context", "kubeconfig", "log_lines", "log_bytes", "no_secret_keys", "save"}
            <= props and schema["diagnose"].get("required") == ["target"],
            "diagnose's input schema follows the CLI flags (target required; -n, --context, --kubeconfig, --log-lines, --log-bytes, --no-secret-keys, --save)",
        )

        for path, cause in EXAMPLES:
            r = await call(s, "analyze", {"path": f"examples/{path}"})
            v = r.structured_content or {}
            first = text_of(r).splitlines()[0] if text_of(r) else ""
            c.check(
                not r.is_error and v.get("schema") == "crashdoc/v1" and top(v) == cause and f": {cause} (" in first,
                f"analyze examples/{path}: {top(v)} (want {cause}); text: {first[:90]}",
            )

        paste = (ROOT / "examples/missing-secret-key.txt").read_text()
        r = await call(s, "analyze", {"text": paste, "format": "markdown"})
        c.check(
            not r.is_error and top(r.structured_content) == "config-ref-missing" and text_of(r).startswith("#"),
            "analyze pasted text (markdown): config-ref-missing",
        )

        r = await call(s, "explain", {"cause": "oom-killed"})
        v = r.structured_content or {}
        c.check(
            not r.is_error and v.get("cause") == "oom-killed" and len(v.get("sections", [])) == 6
            and text_of(r).startswith("oom-killed — "),
            "explain oom-killed: six documentation sections, the rule's text",
        )

        # lint: a check's documented example (from explain) is flagged, its fix cited
        r = await call(s, "lint", {"list": True})
        checks = (r.structured_content or {}).get("checks", [])
        check = next((x for x in checks if x["id"] == "probe/liveness-without-startup"), None)
        c.check(not r.is_error and check is not None, f"lint list: {len(checks)} checks")
        r = await call(s, "explain", {"cause": "probe/liveness-without-startup"})
        sections = {x["heading"]: x["text"] for x in (r.structured_content or {}).get("sections", [])}
        example = sections.get("Example (flagged)", "")
        r = await call(s, "lint", {"text": example})
        found = [f["check"] for f in (r.structured_content or {}).get("findings", [])]
        c.check(
            not r.is_error and "probe/liveness-without-startup" in found
            and r.structured_content.get("schema") == "crashdoc/lint-v1",
            f"lint of the check's own example (from explain): {found}",
        )
        r = await call(s, "lint", {"text": "just: words\n"})
        c.check(
            r.is_error and "hint: crashdoc lint reads Kubernetes manifests" in text_of(r),
            "lint of text with no Kubernetes object: isError with the CLI's hint",
        )

        # tool failures: isError results with the CLI's error / Caused by / hint
        r = await call(s, "analyze", {"path": "examples/does-not-exist"})
        t = text_of(r)
        c.check(
            r.is_error and t.startswith("error: cannot analyse examples/does-not-exist")
            and "hint: check the path exists and is readable" in t
            and (r.structured_content or {}).get("hint") == "check the path exists and is readable",
            "analyze of a missing path: isError, error/Caused by/hint as the CLI prints them",
        )
        r = await call(s, "explain", {"cause": "oom"})
        c.check(
            r.is_error and "oom-killed" in ((r.structured_content or {}).get("hint") or ""),
            "explain of an unknown cause: isError, the hint lists the cause ids",
        )
        r = await call(s, "diagnose", {"target": "cronjob/x"})
        c.check(
            r.is_error and "hint: targets look like NAME, pod/NAME" in text_of(r),
            "diagnose of a target kubectl would not take: isError with the CLI's hint",
        )
        r = await call(s, "diagnose", {"target": "deploy/web", "kubeconfig": "/nonexistent/kubeconfig"})
        c.check(
            r.is_error and (r.structured_content or {}).get("hint", "").startswith("set KUBECONFIG"),
            "diagnose without a usable kubeconfig: isError with the CLI's hint",
        )
        r = await call(s, "history", {})
        c.check(
            r.is_error and "there is no history at /nonexistent/history.redb" in text_of(r),
            "history without a database (CRASHDOC_DB): isError naming the path",
        )
        try:
            await call(s, "no-such-tool", {})
            c.check(False, "an unknown tool is a protocol error (got a result)")
        except MCPError as e:
            c.check(e.code == -32602, f"an unknown tool is a protocol error ({e.code})")

        with tempfile.TemporaryDirectory() as d:
            planted = secret_fixture(Path(d))
            paste = "\n".join((Path(d) / f).read_text() for f in ["describe-pod.txt", "secret.yaml", "logs-previous.txt"])
            seen = ""
            for args in [{"path": d}, {"text": paste}, {"path": d, "format": "text"}, {"path": d, "format": "markdown"}]:
                seen += whole(await call(s, "analyze", args))
            leaks = [v for v in planted if v in seen]
            quoted = all(q in seen for q in ["Authorization: Bearer [REDACTED]", "postgres://ledger:[REDACTED]@", "password=[REDACTED]"])
            c.check(
                not leaks and quoted,
                f"no planted secret value in any analyze result ({len(planted)} values; the lines that held them are quoted redacted: {quoted}; leaks: {leaks})",
            )

    # streamable HTTP: the same server behind --http
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Over HTTPS (a self-signed certificate made here with the openssl CLI),
    # with a bearer token (from a file, as a mounted Secret gives it), every
    # tool named, paths confined to the repository.
    token = secrets.token_urlsafe(32)
    token_dir = Path(tempfile.mkdtemp())
    token_file = token_dir / "token"
    token_file.write_text(token + "\n")
    cert, key = token_dir / "cert.pem", token_dir / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-addext", "basicConstraints=critical,CA:FALSE", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    url = f"https://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(
        [str(binary), "mcp", "--http", f"127.0.0.1:{port}", "--auth-token-file", str(token_file),
         "--tls-cert", str(cert), "--tls-key", str(key),
         "--tools", ",".join(sorted(TOOLS)), "--root", str(ROOT)],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stderr.readline()
        c.check(url in line, f"--http with --tls-cert: {line.strip()}")
        import ssl
        import urllib.error
        import urllib.request
        tls = ssl.create_default_context(cafile=str(cert))
        try:
            urllib.request.urlopen(urllib.request.Request(
                url, data=b"{}", method="POST",
                headers={"Content-Type": "application/json"}), timeout=5, context=tls)
            status, challenge = 200, ""
        except urllib.error.HTTPError as e:
            status, challenge = e.code, e.headers.get("WWW-Authenticate", "")
        c.check(status == 401 and f'resource_metadata="https://127.0.0.1:{port}/' in challenge,
                f"HTTPS without the token: {status}, WWW-Authenticate: {challenge}")
        # the SDK's HTTP client is httpx2 (mcp 2.x); headers on it reach every MCP request
        import httpx2
        auth = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, verify=str(cert),
                                  timeout=httpx2.Timeout(30, read=300))
        async with auth, streamable_http_client(url, http_client=auth) as (read, write, *_):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                r = await call(s, "analyze", {"path": "examples/vllm-oom"})
                c.check(
                    names == TOOLS and not r.is_error and top(r.structured_content) == "oom-killed",
                    "streamable HTTP over TLS with a bearer token: tools/list and analyze examples/vllm-oom: oom-killed",
                )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    c.check(proc.returncode == 0, f"--http stops cleanly on SIGTERM (exit {proc.returncode})")


# ---------------------------------------------------------------- live


def scenario_secret_values():
    """The values under stringData:/data: of every Secret in the scenarios (as live.sh reads them)."""
    values = set()
    for f in sorted((ROOT / "tests/cluster/scenarios").glob("*.yaml")):
        secret = data = False
        for line in f.read_text().splitlines():
            if line.startswith("---"):
                secret = data = False
            if line.startswith("kind: Secret"):
                secret = True
            if secret and re.match(r"^(stringData|data):", line):
                data = True
                continue
            m = re.match(r"^  [A-Za-z0-9_.-]+: *(.*)$", line)
            if secret and data and m:
                if len(m.group(1)) >= 8:
                    values.add(m.group(1).strip().strip('"'))
                continue
            if re.match(r"^[^ ]", line):
                data = False
    return sorted(values)


PLANTED_MANIFEST = """\
apiVersion: v1
kind: Secret
metadata: {name: mcp-planted}
stringData:
  db-password: mcp-planted-secret-Qz81Lx
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: mcp-planted}
spec:
  replicas: 1
  selector: {matchLabels: {app: mcp-planted}}
  template:
    metadata:
      labels: {app: mcp-planted}
      annotations:
        crashdoc.test/behavior: crashloop
        crashdoc.test/exit-code: "1"
        crashdoc.test/reason: Error
        crashdoc.test/logs: mcp-planted.log
    spec:
      nodeSelector: {kubernetes.io/hostname: kwok-cpu-0}
      containers:
      - name: api
        image: registry.example.com/ledger-api:3.14.0
        env:
        - name: LEDGER_API_TOKEN
          value: mcp-planted-env-Vk27Hd
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: mcp-planted, key: db-password}}
"""
PLANTED_LOG = [
    "starting ledger api",
    "config: password=mcp-planted-logpw-Tt90 pool=10",
    "Error: connect ECONNREFUSED 10.0.0.7:5432 postgres://ledger:mcp-planted-url-Jr55@db:5432/ledger",
    'FATAL:  password authentication failed for user "ledger" (password=mcp-planted-logpw-Tt90)',
    "HTTP 401 Unauthorized for request with Authorization: Bearer mcpplantedbearer0123456789",
]
PLANTED_VALUES = ["mcp-planted-secret-Qz81Lx", "bWNwLXBsYW50ZWQtc2VjcmV0LVF6ODFMeA", "mcp-planted-env-Vk27Hd",
                  "mcp-planted-logpw-Tt90", "mcp-planted-url-Jr55", "mcpplantedbearer0123456789"]


async def live_planted(s, ns, c: Checks):
    """A crash-looping Deployment of our own with values planted in a Secret, an env var and its log lines."""
    admin = str(ROOT / "target/cluster/kubeconfig")
    now = time.time()
    with open(ROOT / "target/cluster/cri-logs/mcp-planted.log", "w") as f:
        for i, line in enumerate(PLANTED_LOG):
            ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 1 + i * 0.04))
            f.write(f"{ts}.000000000Z stdout F {line}\n")
    kubectl = ["kubectl", "--kubeconfig", admin, "-n", ns]
    subprocess.run(kubectl + ["apply", "-f", "-"], input=PLANTED_MANIFEST, text=True, check=True,
                   stdout=subprocess.DEVNULL)
    try:
        restarted = False
        for _ in range(90):
            out = subprocess.run(kubectl + ["get", "pods", "-l", "app=mcp-planted", "-o",
                                            "jsonpath={.items[*].status.containerStatuses[*].restartCount}"],
                                 capture_output=True, text=True).stdout.split()
            if out and int(out[0]) >= 1:
                restarted = True
                break
            await asyncio.sleep(1)
        seen = ""
        r = await call(s, "diagnose", {"target": "deploy/mcp-planted"})
        seen += whole(r)
        with tempfile.TemporaryDirectory() as d:
            for args in [{"target": "deploy/mcp-planted", "format": "text"},
                         {"target": "deploy/mcp-planted", "format": "markdown"}]:
                seen += whole(await call(s, "diagnose", args))
            seen += whole(await call(s, "capture", {"target": "deploy/mcp-planted", "output": str(Path(d) / "b.tar.gz")}))
            seen += whole(await call(s, "scan", {}))
        leaks = [v for v in PLANTED_VALUES if v in seen]
        c.check(restarted and not r.is_error and top(r.structured_content) != "none" and not leaks,
                f"live: no value planted in a Secret, an env var or log lines of deploy/mcp-planted in any "
                f"diagnose/capture/scan result (cause {top(r.structured_content)}; {len(PLANTED_VALUES)} values; "
                f"leaks: {leaks})")
        # the log lines' redaction can be judged only when kwok serves them for this pod
        pod = subprocess.run(kubectl + ["get", "pods", "-l", "app=mcp-planted", "-o", "jsonpath={.items[0].metadata.name}"],
                             capture_output=True, text=True).stdout.strip()
        served = "password=" in subprocess.run(kubectl + ["logs", pod, "--previous"], capture_output=True, text=True).stdout
        if served:
            quoted = [q for q in ["Authorization: Bearer [REDACTED]", "postgres://ledger:[REDACTED]@", "password=[REDACTED]"]
                      if q in seen]
            c.check(len(quoted) == 3, f"live: the planted log lines are quoted redacted ({len(quoted)}/3)")
        else:
            print("note: kwok served no logs for deploy/mcp-planted, so the log lines' redaction was judged offline only")
    finally:
        subprocess.run(kubectl + ["delete", "deployment,secret", "mcp-planted", "--wait=true", "--timeout=60s"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def live(binary, ns, kubeconfig, c: Checks):
    expected = []
    known = {}  # expected.tsv's third column "known: ...": a known failure of crashdoc, printed, not counted
    for line in (ROOT / "tests/cluster/scenarios/expected.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ref, cause, *mark = line.split("\t")
            expected.append((ref, cause))
            if mark and mark[0].strip():
                known[ref] = mark[0].removeprefix("known: ")
    seen = ""
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "history.redb"
        async with stdio_session(binary, ["--kubeconfig", kubeconfig, "-n", ns, "--db", str(db)]) as s:
            for ref, cause in expected:
                start = time.monotonic()
                r = await call(s, "diagnose", {"target": ref})
                ms = int((time.monotonic() - start) * 1000)
                seen += whole(r)
                got = top(r.structured_content) if not r.is_error else "error: " + text_of(r)[:120]
                if got != cause and ref in known:
                    print(f"KNOWN mcp diagnose {ref}: {got} (want {cause}; {known[ref]})", flush=True)
                    continue
                c.check(got == cause, f"mcp diagnose {ref}: {got} (want {cause}; {ms} ms)")
            ref, cause = expected[0]
            out = Path(d) / "capture.tar.gz"
            r = await call(s, "capture", {"target": ref, "output": str(out)})
            seen += whole(r)
            again = await call(s, "analyze", {"path": str(out)})
            seen += whole(again)
            c.check(
                not r.is_error and out.is_file() and top(r.structured_content) == cause and top(again.structured_content) == cause,
                f"mcp capture {ref} -> analyze the bundle: {top(again.structured_content)}",
            )
            r = await call(s, "scan", {})
            seen += whole(r)
            v = r.structured_content or {}
            pods = v.get("pods", [])
            missing = []
            for ref, cause in expected:
                name = ref.split("/", 1)[1]
                got = next((p["diagnoses"][0]["cause"] for p in pods if (p.get("name") or "").startswith(name + "-")), "missing")
                if got != cause and ref in known:
                    print(f"KNOWN mcp scan {ref}: {got} (want {cause}; {known[ref]})", flush=True)
                elif got != cause:
                    missing.append(f"{ref}: {got}")
            c.check(
                not r.is_error and not missing and v.get("groups") and v.get("scanned", 0) >= len(expected),
                f"mcp scan -n {ns}: {len(pods)} unhealthy of {v.get('scanned')}, every scenario with its cause {missing or ''}",
            )

            # history: what a short `crashdoc watch --capture-existing` recorded
            watch = subprocess.Popen(
                [str(binary), "watch", "--kubeconfig", kubeconfig, "-n", ns, "--db", str(db),
                 "--listen", "127.0.0.1:0", "--capture-existing"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            try:
                captures = []
                for _ in range(60):
                    await asyncio.sleep(1)
                    r = await call(s, "history", {})
                    if not r.is_error:
                        captures = (r.structured_content or {}).get("captures", [])
                        if len(captures) >= 3:
                            break
            finally:
                watch.send_signal(signal.SIGTERM)
                try:
                    watch.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    watch.kill()
            seen += whole(r)
            c.check(
                len(captures) >= 3 and all(x.get("namespace") == ns for x in captures),
                f"mcp history: {len(captures)} captures `crashdoc watch` recorded in {ns}",
            )
            if captures:
                wid = captures[0]["id"]
                r = await call(s, "history", {"export": wid, "output": str(Path(d) / "export.tar.gz")})
                seen += whole(r)
                c.check(not r.is_error and r.structured_content.get("exported") == wid,
                        f"mcp history export {wid}: {top(r.structured_content)}")

        async with stdio_session(binary, ["--kubeconfig", kubeconfig, "-n", ns]) as s:
            await live_planted(s, ns, c)

    # read-only by construction: the apiserver's audit log shows only get/list/watch for the
    # read-only user, MCP calls included (tests/cluster/audit-verbs.sh)
    audit = subprocess.run([str(ROOT / "tests/cluster/audit-verbs.sh"), "crashdoc-e2e-reader"],
                           capture_output=True, text=True)
    verbs = sorted({line.split()[1] for line in audit.stdout.splitlines() if len(line.split()) > 1})
    c.check(audit.returncode == 0, f"audit log: the read-only user, MCP calls included, used only {verbs} "
            f"({audit.stderr.strip()[:120]})")

    values = scenario_secret_values()
    leaks = [v[:6] + "..." for v in values if v in seen]
    c.check(bool(values) and not leaks,
            f"no secret value of the scenarios' Secrets in any live tool result ({len(values)} values checked; leaks: {leaks})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the crashdoc binary")
    ap.add_argument("--live", action="store_true", help="also test against the cluster tier's control plane")
    ap.add_argument("--namespace", default="crashdoc-e2e")
    ap.add_argument("--kubeconfig", default=str(ROOT / "target/cluster/kubeconfig-readonly"))
    a = ap.parse_args()
    c = Checks()
    if a.live:
        asyncio.run(live(Path(a.bin), a.namespace, a.kubeconfig, c))
    else:
        asyncio.run(offline(Path(a.bin), c))
    print(f"{c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
