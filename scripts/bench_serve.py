#!/usr/bin/env python3
"""Serving figures for ours alone: requests/s, p50/p99 latency and memory, on the
four routes of ../shared/conformance/perf_serve.py (whose side-by-side run gives
the ratios against the original).

    scripts/bench_serve.py --ours target/release/gateway [--rows 20000] [--seconds 5]

Builds the same world perf_serve.py builds (acme-crm with ROWS records in
data/initial.json), compiles it (snapshot), starts `gateway worlds serve`, drives
each route with wrk --latency (2 threads, 16 connections) and reads the server's
peak RSS from /proc. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int, field: str = "VmHWM") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def wrk(port: int, path: str, seconds: int, script: Path | None) -> tuple[float, str, str]:
    argv = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "--timeout", "30s", "-H", "Authorization: Bearer t"]
    if script:
        argv += ["-s", str(script)]
    out = subprocess.run(argv + [f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"50%\s+(\S+)", out).group(1)
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    return rps, p50, p99


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(CONFORMANCE))
    import perf_serve  # noqa: E402  (the same world the side-by-side run builds)

    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    world = perf_serve.build_world(args.rows, work)
    began = time.time()
    subprocess.run([args.ours, "worlds", "schema", "compile", str(world)], check=True, capture_output=True)
    compiled = time.time() - began
    port = free_port()
    env = {**os.environ, "GATEWAY_WORLD_CLOCK": "1767225600"}
    began = time.time()
    proc = subprocess.Popen([args.ours, "worlds", "serve", str(world), "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
            break
        except OSError:
            time.sleep(0.05)
    ready = time.time() - began
    idle = rss_kib(proc.pid, "VmRSS")
    create = work / "create.lua"
    create.write_text(perf_serve.CREATE_LUA)
    routes = [
        ("get by id", "/v2/records/r777", None),
        ("filtered page", "/v2/records?kind=lead&limit=50", None),
        ("contains filter", "/v2/records?q=grace&limit=20", None),
        ("create", "/v2/records", create),
    ]
    print(f"rows={args.rows}: compile {compiled:.2f} s, serve ready in {ready:.2f} s, idle RSS {idle / 1024:.0f} MiB")
    print("| route | requests/s | p50 | p99 |")
    print("| --- | ---: | ---: | ---: |")
    try:
        for name, path, script in routes:
            rps, p50, p99 = wrk(port, path, args.seconds, script)
            print(f"| {name} | {rps:,.0f} | {p50} | {p99} |")
        print(f"peak RSS {rss_kib(proc.pid) / 1024:.0f} MiB")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
