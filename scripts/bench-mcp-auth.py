#!/usr/bin/env python3
"""The cost of authentication on an MCP tool call over HTTP.

Starts the real `crashdoc mcp --http` three times on loopback: with a
static token, with JWT access tokens (an RS256 token signed by a key the
openssl CLI makes, checked against --auth-jwks-file), and with
--insecure-no-auth; makes N `explain` calls on one keep-alive connection to
each (interleaved rounds, so all see the same machine load) and prints the
median and mean per call and the differences.

    scripts/bench-mcp-auth.py [--bin target/release/crashdoc] [--calls 400]
"""
import argparse, base64, http.client, json, os, secrets, socket, statistics, subprocess, sys, tempfile, time

def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def rs256_issuer(d, iss, aud):
    """A JWKS file and a token signed by a fresh RSA key (openssl CLI)."""
    key = os.path.join(d, "key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", key], check=True, capture_output=True)
    mod = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"], check=True,
                         capture_output=True, text=True).stdout.strip().split("=", 1)[1]
    n = bytes.fromhex(mod)
    jwks = os.path.join(d, "jwks.json")
    with open(jwks, "w") as f:
        json.dump({"keys": [{"kty": "RSA", "kid": "bench", "alg": "RS256", "use": "sig",
                             "n": b64u(n), "e": b64u((65537).to_bytes(3, "big"))}]}, f)
    head = b64u(json.dumps({"alg": "RS256", "typ": "at+jwt", "kid": "bench"}).encode())
    body = b64u(json.dumps({"iss": iss, "aud": aud, "sub": "bench", "exp": int(time.time()) + 3600}).encode())
    signed = f"{head}.{body}".encode()
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signed, check=True,
                         capture_output=True).stdout
    return jwks, f"{head}.{body}.{b64u(sig)}"

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
    d = tempfile.mkdtemp()
    iss = "https://issuer.bench.invalid"
    jport = free_port()
    aud = f"http://127.0.0.1:{jport}/mcp"
    jwks, jwt = rs256_issuer(d, iss, aud)
    auth, pa = start(a.bin, ["--auth-token-file", f.name])
    jwtd = subprocess.Popen([a.bin, "mcp", "--http", f"127.0.0.1:{jport}", "--auth-issuer", iss,
                             "--auth-audience", aud, "--auth-jwks-file", jwks],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    jwtd.stderr.readline()
    open_, po = start(a.bin, ["--insecure-no-auth"])
    try:
        ca, cj, co = Client(pa, token), Client(jport, jwt), Client(po, None)
        for _ in range(20):
            ca.call(); cj.call(); co.call()
        ta, tj, to = [], [], []
        for _ in range(a.calls):
            ta.append(ca.call()); tj.append(cj.call()); to.append(co.call())
    finally:
        for p in (auth, jwtd, open_):
            p.terminate(); p.wait()
        os.unlink(f.name)
    ms = lambda xs: (statistics.median(xs) * 1e3, statistics.mean(xs) * 1e3)
    (am, aa), (jm, ja), (om, oa) = ms(ta), ms(tj), ms(to)
    print(f"explain over HTTP, {a.calls} calls each on one connection")
    print(f"  with bearer token : median {am:.3f} ms, mean {aa:.3f} ms")
    print(f"  with RS256 JWT    : median {jm:.3f} ms, mean {ja:.3f} ms")
    print(f"  without auth      : median {om:.3f} ms, mean {oa:.3f} ms")
    print(f"  token overhead    : median {am - om:+.3f} ms, mean {aa - oa:+.3f} ms (target: within 1 ms)")
    print(f"  JWT overhead      : median {jm - om:+.3f} ms, mean {ja - oa:+.3f} ms (target: within 1 ms)")
    sys.exit(0 if max(am, jm) - om < 1.0 else 1)

if __name__ == "__main__":
    main()
