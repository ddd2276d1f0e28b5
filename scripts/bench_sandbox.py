#!/usr/bin/env python3
"""The cost of confining world code (issue 24), measured side by side in one run.

`gateway worlds serve` on the bundled example, once confined (the default: the
handler worker in bubblewrap, under prlimit and a uid of its own) and once with
`--unconfined` (the original's way), alternating rounds so that both see the same
machine. Two figures each, median (and p90) over the rounds:

  start    the server started until its first handler call is answered: what the
           first session of a version pays on a host (the worker is spawned once
           per version; later sessions share it);
  call     one handler call (GET /api/v2/tickets/stats) on a warm worker.

    scripts/bench_sandbox.py [--gateway target/release/gateway] [--rounds 15] [--calls 400]
"""

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def serve(gateway, world, unconfined):
    args = [gateway, "worlds", "serve", str(world), "--port", "0"]
    if unconfined:
        args.append("--unconfined")
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        if "http://127.0.0.1:" in line:
            port = int(line.split("http://127.0.0.1:")[1].split()[0].split("/")[0])
            break
    if port is None:
        proc.kill()
        sys.exit("the server did not start")
    return proc, port, started


def get(conn, path):
    conn.request("GET", path, headers={"Authorization": "Bearer bench"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"{path}: {response.status} {body[:200]!r}")


def round_of(gateway, world, unconfined, calls):
    proc, port, started = serve(gateway, world, unconfined)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        get(conn, "/api/v2/tickets/stats")
        start = time.perf_counter() - started
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            get(conn, "/api/v2/tickets/stats")
            times.append(time.perf_counter() - t)
        return start, statistics.median(times)
    finally:
        proc.kill()
        proc.wait()


def summary(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return f"{statistics.median(values) * 1000:8.2f} ms (p90 {p90 * 1000:.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gateway", default=str(ROOT / "target/release/gateway"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "helpdesk"
        shutil.copytree(ROOT / "examples/helpdesk", world)
        subprocess.run([args.gateway, "worlds", "schema", "compile", str(world)], check=True, stdout=subprocess.DEVNULL)
        results = {False: ([], []), True: ([], [])}
        for _ in range(args.rounds):
            for unconfined in (False, True):
                start, call = round_of(args.gateway, world, unconfined, args.calls)
                results[unconfined][0].append(start)
                results[unconfined][1].append(call)
    print(f"{'':12} {'start to first handler answer':>34} {'handler call':>30}")
    for unconfined, name in ((True, "unconfined"), (False, "confined")):
        starts, calls = results[unconfined]
        print(f"{name:12} {summary(starts):>34} {summary(calls):>30}")


if __name__ == "__main__":
    main()
