#!/usr/bin/env python3
"""The cost of the bearer token on an MCP tool call over HTTP.

Starts the real `crashdoc mcp --http` twice on loopback, with a token and
with --insecure-no-auth, makes N `explain` calls on one keep-alive
connection to each (interleaved rounds, so both see the same machine load)
and prints the median and mean per call and the difference.

    scripts/bench-mcp-auth.py [--bin target/release/crashdoc] [--calls 400]
"""
import argparse, http.client, json, os, secrets, socket, statistics, subprocess, sys, tempfile, time

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def start(binary, args):
    port = free_port()
    p = subprocess.Popen([binary, "mcp", "--http", f"127.0.0.1:{port}", *args],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    p.stderr.readline()
    return p, port

def read_answer(r):
    body = r.read().decode()
    for line in body.splitlines():
        if line.startswith("data:") and "{" in line:
            return json.loads(line[5:])
    return json.loads(body) if body.strip() else None

class Client:
    def __init__(self, port, token):
        self.c = http.client.HTTPConnection("127.0.0.1", port)
        self.c.connect()
        # http.client writes headers and body apart: without this, Nagle
        # and delayed ACKs add 40-200 ms to every call.
        self.c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token:
            self.h["Authorization"] = f"Bearer {token}"
        r = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        self.h["Mcp-Session-Id"] = r.getheader("mcp-session-id")
        self.h["Mcp-Protocol-Version"] = "2025-06-18"
        read_answer(r)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).read()
        self.n = 1

    def post(self, body):
        self.c.request("POST", "/mcp", json.dumps(body), self.h)
        return self.c.getresponse()

    def call(self):
        self.n += 1
        t = time.perf_counter()
        a = read_answer(self.post({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                                   "params": {"name": "explain", "arguments": {"cause": "oom-killed"}}}))
        d = time.perf_counter() - t
        assert a and "result" in a, a
        return d

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "crashdoc"))
    ap.add_argument("--calls", type=int, default=400)
    a = ap.parse_args()
    token = secrets.token_urlsafe(32)
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(token)
    auth, pa = start(a.bin, ["--auth-token-file", f.name])
    open_, po = start(a.bin, ["--insecure-no-auth"])
    try:
        ca, co = Client(pa, token), Client(po, None)
        for _ in range(20):
            ca.call(); co.call()
        ta, to = [], []
        for _ in range(a.calls):
            ta.append(ca.call()); to.append(co.call())
    finally:
        for p in (auth, open_):
            p.terminate(); p.wait()
        os.unlink(f.name)
    ms = lambda xs: (statistics.median(xs) * 1e3, statistics.mean(xs) * 1e3)
    (am, aa), (om, oa) = ms(ta), ms(to)
    print(f"explain over HTTP, {a.calls} calls each on one connection")
    print(f"  with bearer token : median {am:.3f} ms, mean {aa:.3f} ms")
    print(f"  without auth      : median {om:.3f} ms, mean {oa:.3f} ms")
    print(f"  overhead          : median {am - om:+.3f} ms, mean {aa - oa:+.3f} ms (target: within 1 ms)")
    sys.exit(0 if am - om < 1.0 else 1)

if __name__ == "__main__":
    main()
