#!/usr/bin/env python3
"""Timings of `crashdoc mcp` through the Python `mcp` SDK's client (prints numbers, checks nothing).

    ~/.cache/crashdoc/mcp-venv/bin/python tests/mcp/bench.py --bin target/release/crashdoc

Measures: starting the server and the initialize handshake, tools/list, and
N `analyze` calls per shipped example over stdio (p50/p95), against the same
analysis run as a fresh `crashdoc analyze --format json` process each time.
"""

import argparse
import asyncio
import statistics
import subprocess
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["vllm-oom", "slow-start-liveness", "bundle", "missing-secret-key.txt"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def bench(binary, n):
    t0 = time.perf_counter()
    params = StdioServerParameters(command=str(binary), args=["mcp"], cwd=str(ROOT))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            t1 = time.perf_counter()
            await s.list_tools()
            t2 = time.perf_counter()
            print(f"start + initialize: {(t1 - t0) * 1000:.1f} ms; tools/list: {(t2 - t1) * 1000:.1f} ms")
            for ex in EXAMPLES:
                mcp_ms = []
                for _ in range(n):
                    a = time.perf_counter()
                    r = await s.call_tool("analyze", {"path": f"examples/{ex}"})
                    mcp_ms.append((time.perf_counter() - a) * 1000)
                    assert not r.is_error
                cli_ms = []
                for _ in range(n):
                    a = time.perf_counter()
                    subprocess.run([str(binary), "analyze", f"examples/{ex}", "--format", "json"],
                                   cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
                    cli_ms.append((time.perf_counter() - a) * 1000)
                print(f"analyze examples/{ex}: mcp call p50 {statistics.median(mcp_ms):.1f} ms, "
                      f"p95 {pct(mcp_ms, 95):.1f} ms; cli process p50 {statistics.median(cli_ms):.1f} ms, "
                      f"p95 {pct(cli_ms, 95):.1f} ms ({n} each)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("-n", type=int, default=30)
    a = ap.parse_args()
    asyncio.run(bench(Path(a.bin).resolve(), a.n))


if __name__ == "__main__":
    main()
