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

Beside the creates, each of our builds answers `GET /healthz` under the same load in
the same rounds — the cheapest route it has, no world touched: the most requests per
second this machine carries through HTTP with wrk on the same cores, hence the ceiling
any create ratio can reach (a create's ratio ≤ that rate ÷ the original's creates).
"""
from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", required=True, help="the original's gateway command")
    parser.add_argument("--ours", action="append", required=True, metavar="LABEL=PATH")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--conformance", type=Path, default=CONFORMANCE, help="where perf_serve.py is")
    args = parser.parse_args()
    sys.path.insert(0, str(args.conformance))
    import perf_serve  # noqa: E402  (its world, server start and wrk driver)

    if shutil.which("wrk") is None:
        raise SystemExit("wrk is required (apt-get install wrk)")
    servers = [("original", args.ref)] + [tuple(spec.split("=", 1)) for spec in args.ours]
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
