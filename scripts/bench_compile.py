#!/usr/bin/env python3
"""Compile and check timings, ours against the original, measured side by side.

    scripts/bench_compile.py --ours target/release/gateway --ref ~/.cache/gateway-reference/bin/gateway [--runs 5]

For every template the original ships, the original initializes a world; both tools then
compile a fresh copy (artifacts and snapshots removed before each run) and check it.
Prints a Markdown table of median wall times and the ratio original/ours.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

GENERATED = ["schema/lock.json", "schema/runtime.json", "schema/README.md", "db/schema.sql",
             "tool-schemas.json", "db/state.sqlite", "db/state.json"]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stdout[-300:]}{done.stderr[-300:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--templates", nargs="*")
    args = parser.parse_args()
    listed = subprocess.run([args.ref, "worlds", "schema", "templates"], capture_output=True, text=True).stdout.split()
    templates = args.templates or listed
    work = Path(tempfile.mkdtemp(prefix="bench-compile-"))
    rows = []
    totals = {"compile": [0.0, 0.0], "check": [0.0, 0.0]}
    for template in templates:
        base = work / f"{template}-base"
        subprocess.run([args.ref, "worlds", "schema", "init", str(base), "--connector", template, "--name", template],
                       capture_output=True, check=True)
        result = {}
        for label, tool in (("ref", args.ref), ("ours", args.ours)):
            compile_times, check_times = [], []
            for _ in range(args.runs):
                world = work / f"{template}-{label}"
                shutil.rmtree(world, ignore_errors=True)
                shutil.copytree(base, world)
                for name in GENERATED:
                    (world / name).unlink(missing_ok=True)
                compile_times.append(timed([tool, "worlds", "schema", "compile", str(world)]))
                check_times.append(timed([tool, "worlds", "schema", "check", str(world)]))
            result[label] = (statistics.median(compile_times), statistics.median(check_times))
        for i, kind in enumerate(("compile", "check")):
            totals[kind][0] += result["ref"][i]
            totals[kind][1] += result["ours"][i]
        rows.append((template, *result["ref"], *result["ours"]))
    print("| template | compile original | compile ours | ratio | check original | check ours | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for template, rc, rk, oc, ok in rows:
        print(f"| {template} | {rc*1000:.0f} ms | {oc*1000:.1f} ms | {rc/oc:.0f}× | {rk*1000:.0f} ms | {ok*1000:.1f} ms | {rk/ok:.0f}× |")
    for kind, (ref, ours) in totals.items():
        print(f"\n{kind}: original {ref:.2f} s, ours {ours:.3f} s over {len(rows)} templates → {ref/ours:.0f}× faster")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
