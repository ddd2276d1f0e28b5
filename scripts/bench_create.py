#!/usr/bin/env python3
"""Creates per second on `worlds serve`, several servers side by side in one run:
the original and one or more builds of ours, interleaved round by round so machine
load falls on all of them alike.

    scripts/bench_create.py --ref ~/.cache/gateway-reference/bin/gateway \\
        --ours before=/tmp/gateway-before --ours after=target/release/gateway \\
        [--rows 20000] [--rounds 3] [--seconds 5]

The world, the create request and the wrk load (2 threads, 16 connections) are
../shared/conformance/perf_serve.py's: the acme-crm conformance world with ROWS
records, `POST /v2/records` with a new lead. Each round starts every server on a
fresh copy of the world. Prints a Markdown table (median and range of the rounds,
and each build's ratio to the original); no threshold is asserted.

Each of our builds' CPU per create is printed too: the server process's user and
system time over the create run (from /proc) divided by the creates answered — less
at the mercy of what else the machine does than requests per second.

`--instructions` counts instead of timing, for our builds only (no --ref needed): each
build serves the world under valgrind's callgrind twice, answering 200 and then 4,200
creates from one client on one kept-alive connection; the difference over 4,000 is the
instructions one create costs, start-up and shutdown cancelled out. One client means
each create is its own group commit (under wrk's 16 connections a group holds several),
so it is the cost of a create alone; but it does not depend on what else the machine
runs, where req/s and CPU time on two shared cores move by ±10 % from run to run:

    scripts/bench_create.py --instructions --ours before=/tmp/a --ours after=/tmp/b

Beside the creates, each of our builds answers `GET /healthz` under the same load in
the same rounds — the cheapest route it has, no world touched: the most requests per
second this machine carries through HTTP with wrk on the same cores, hence the ceiling
any create ratio can reach (a create's ratio ≤ that rate ÷ the original's creates).
"""
from __future__ import annotations

import argparse
import http.client
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def cpu_seconds(pid: int) -> float:
    """User and system time of process `pid` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def instructions(perf_serve, builds: list[tuple[str, str]], rows: int) -> None:
    """Instructions per create of each build, counted under callgrind (see the module doc)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is required (apt-get install valgrind)")
    work = Path(tempfile.mkdtemp(prefix="bench-create-instructions-"))
    body = perf_serve.CREATE_LUA.split("wrk.body = '", 1)[1].split("'", 1)[0]
    headers = {"Content-Type": "application/json", "Authorization": "Bearer t"}
    per_create: dict[str, float] = {}
    try:
        for label, command in builds:
            counts = {}
            for creates in (200, 4200):
                world = perf_serve.build_world(rows, work / f"{label}-{creates}")
                out = work / f"callgrind-{label}-{creates}.out"
                wrapped = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *shlex.split(command)]
                proc, port = perf_serve.start(wrapped, world, work / f"{label}.log")
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    for _ in range(creates):
                        conn.request("POST", "/v2/records", body=body, headers=headers)
                        response = conn.getresponse()
                        response.read()
                        if response.status not in (200, 201):
                            raise SystemExit(f"{label}: a create answered {response.status}")
                    conn.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=300)
                summary = [line for line in out.read_text().splitlines() if line.startswith("summary:")]
                counts[creates] = int(summary[0].split()[1])
                shutil.rmtree(world, ignore_errors=True)
            per_create[label] = (counts[4200] - counts[200]) / 4000
            print(f"{label}: {per_create[label]:,.0f} instructions per create", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first = next(iter(per_create.values()))
    print(f"| create, {rows:,} rows, one client | instructions per create | vs {builds[0][0]} |")
    print("| --- | ---: | ---: |")
    for label, count in per_create.items():
        print(f"| {label} | {count:,.0f} | {100 * (count / first - 1):+.1f} % |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", help="the original's gateway command (required unless --instructions)")
    parser.add_argument("--instructions", action="store_true",
                        help="count our builds' instructions per create under callgrind instead of timing")
    parser.add_argument("--ours", action="append", required=True, metavar="LABEL=PATH")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--conformance", type=Path, default=CONFORMANCE, help="where perf_serve.py is")
    args = parser.parse_args()
    sys.path.insert(0, str(args.conformance))
    import perf_serve  # noqa: E402  (its world, server start and wrk driver)

    ours = [tuple(spec.split("=", 1)) for spec in args.ours]
    if args.instructions:
        instructions(perf_serve, ours, args.rows)
        return 0
    if not args.ref:
        raise SystemExit("--ref is required (the original's gateway command)")

    if shutil.which("wrk") is None:
        raise SystemExit("wrk is required (apt-get install wrk)")
    servers = [("original", args.ref)] + ours
    work = Path(tempfile.mkdtemp(prefix="bench-create-"))
    script = work / "create.lua"
    script.write_text(perf_serve.CREATE_LUA)
    results: dict[str, list[float]] = {label: [] for label, _ in servers}
    ceiling: dict[str, list[float]] = {label: [] for label, _ in servers[1:]}
    cpu: dict[str, list[float]] = {label: [] for label, _ in servers[1:]}
    try:
        for round_ in range(args.rounds):
            for label, command in servers:
                world = perf_serve.build_world(args.rows, work / f"{label}-{round_}")
                proc, port = perf_serve.start(shlex.split(command), world, work / f"{label}.log")
                try:
                    began, cpu_before = time.monotonic(), cpu_seconds(proc.pid)
                    results[label].append(perf_serve.wrk(port, "/v2/records", args.seconds, script))
                    if label in cpu:
                        creates = results[label][-1] * (time.monotonic() - began)
                        cpu[label].append(1e6 * (cpu_seconds(proc.pid) - cpu_before) / max(creates, 1.0))
                    if label in ceiling:
                        ceiling[label].append(perf_serve.wrk(port, "/healthz", args.seconds))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
                shutil.rmtree(world, ignore_errors=True)
                print(f"round {round_ + 1}: {label} {results[label][-1]:,.1f} req/s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(results["original"])
    print(f"| create, {args.rows:,} rows | median req/s of {args.rounds} (range) | vs the original |")
    print("| --- | ---: | ---: |")
    for label, values in results.items():
        median = statistics.median(values)
        ratio = "—" if label == "original" else f"{median / base:,.0f}×"
        print(f"| {label} | {median:,.1f} ({min(values):,.1f}–{max(values):,.1f}) | {ratio} |")
    for label, values in cpu.items():
        print(f"| {label}: server CPU per create | {statistics.median(values):,.1f} µs ({min(values):,.1f}–{max(values):,.1f}) | |")
    for label, values in ceiling.items():
        median = statistics.median(values)
        print(f"| {label}: `GET /healthz` (the ceiling) | {median:,.1f} ({min(values):,.1f}–{max(values):,.1f}) "
              f"| {median / base:,.0f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
