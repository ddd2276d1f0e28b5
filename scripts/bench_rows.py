#!/usr/bin/env python3
"""`data check` throughput: ours against the original, side by side.

Generates N tagged-JSONL rows for a world (default: examples/helpdesk — customers
and tickets referencing them; or --world acme-crm style worlds with a single
`records` entity), runs `gateway worlds data check` with both binaries on scratch
copies of the world and prints rows/s, peak memory (max RSS) and the ratio.

    python3 scripts/bench_rows.py --ours target/release/gateway \
        --ref ~/.cache/gateway-reference/bin/gateway --rows 20000 200000

The original is skipped for row counts above --ref-max (default 200,000).

With --updates (records worlds), the world's seed first holds the N records and the rows
file changes every one of them: every row is an update of a stored row.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rows_helpdesk(n, out):
    customers = max(1, n // 5)
    with open(out, "w", encoding="utf-8") as f:
        for i in range(customers):
            row = {"id": f"B{i}", "name": f"Customer {i}", "email": f"c{i}@example.com", "tier": "pro",
                   "created_at": "2026-01-02T09:00:00Z"}
            f.write(json.dumps({"entity": "customers", "row": row}) + "\n")
        for i in range(n - customers):
            row = {"id": 100000 + i, "customer_id": f"B{i % customers}", "subject": f"Ticket {i}", "status": "open",
                   "priority": 1 + i % 4, "tags": ["bench", f"t{i % 7}"], "assignee": None,
                   "opened_at": "2026-03-01T10:00:00Z"}
            f.write(json.dumps({"entity": "tickets", "row": row}) + "\n")


def record(i, name="Record", updated_at="2026-01-01T00:00:00Z"):
    return {"id": f"b{i}", "kind": "lead", "name": f"{name} {i}", "attributes": {"tier": i % 3}, "updated_at": updated_at}


def rows_records(n, out, **changes):
    with open(out, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"entity": "records", "row": record(i, **changes)}) + "\n")


def rows_records_updated(n, out):
    rows_records(n, out, name="Renamed", updated_at="2026-02-01T00:00:00Z")


def seeded(world, n, into):
    """A copy of a records world whose seed batch also holds records b0..b(n-1)."""
    shutil.copytree(world, into)
    path = into / "data" / "initial.json"
    for p in [into, *into.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    batch = json.loads(path.read_text())
    for i in range(n):
        batch["mutations"].append({"entity": "records", "op": "insert", "source": {"record": f"bench:{i}"}, "value": record(i)})
    path.write_text(json.dumps(batch, indent=2))
    return into


def run(binary, world, rows_file, repeat=1):
    """The median wall time of `repeat` checks (after one untimed warm-up when repeating)."""
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as scratch:
        copy = Path(scratch) / "world"
        shutil.copytree(world, copy)
        # Snapshot built once outside the timing (both binaries build it on first use).
        subprocess.run([binary, "worlds", "schema", "compile", str(copy)], capture_output=True, check=False)
        argv = [binary, "worlds", "data", "check", str(copy), str(rows_file)]
        if repeat > 1:
            subprocess.run(argv, capture_output=True)
        times = []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(repeat):
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
        elapsed = sorted(times)[len(times) // 2]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):
        sys.exit(f"{binary} failed ({done.returncode}): {done.stderr[:500]}")
    result = json.loads(done.stdout)
    return elapsed, result, max(after.ru_maxrss, before.ru_maxrss)


def peak_rss_kib(binary, world, rows_file):
    """Max RSS of one run, measured alone (getrusage of children is a running maximum)."""
    code = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:],capture_output=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as scratch:
        copy = Path(scratch) / "world"
        shutil.copytree(world, copy)
        subprocess.run([binary, "worlds", "schema", "compile", str(copy)], capture_output=True, check=False)
        out = subprocess.run([sys.executable, "-c", code, binary, "worlds", "data", "check", str(copy), str(rows_file)],
                             capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ours", default=str(ROOT / "target/release/gateway"))
    parser.add_argument("--ref", default=os.path.expanduser("~/.cache/gateway-reference/bin/gateway"))
    parser.add_argument("--world", default=str(ROOT / "examples/helpdesk"))
    parser.add_argument("--rows", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--ref-max", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=3,
                        help="median of this many runs (after a warm-up) for row counts up to 20,000, both binaries")
    parser.add_argument("--updates", action="store_true", help="every row updates a stored record (records worlds)")
    args = parser.parse_args()
    world = Path(args.world)
    schema = json.loads((world / "schema/world.json").read_text())
    entities = set(schema["x-gateway"]["entities"])
    generate = rows_helpdesk if "tickets" in entities else rows_records
    if args.updates:
        generate = rows_records_updated
    print(f"world: {world.name}  entities: {', '.join(sorted(entities))}{'  (every row an update)' if args.updates else ''}")
    print(f"{'rows':>9} {'ours s':>8} {'ours rows/s':>12} {'ours MiB':>9} {'ref s':>8} {'ref rows/s':>11} {'ref MiB':>8} {'ratio':>7}")
    with tempfile.TemporaryDirectory(prefix="bench-rows-input-") as tmp:
        for n in args.rows:
            rows_file = Path(tmp) / f"rows-{n}.jsonl"
            generate(n, rows_file)
            if args.updates:
                world = seeded(Path(args.world), n, Path(tmp) / f"world-{n}")
            repeat = args.repeat if n <= 20000 else 1
            ours_s, ours, _ = run(args.ours, world, rows_file, repeat)
            ours_mem = peak_rss_kib(args.ours, world, rows_file) / 1024
            line = f"{n:>9} {ours_s:>8.2f} {n / ours_s:>12,.0f} {ours_mem:>9.1f}"
            if args.ref and Path(args.ref).exists() and n <= args.ref_max:
                ref_s, ref, _ = run(args.ref, world, rows_file, repeat)
                ref_mem = peak_rss_kib(args.ref, world, rows_file) / 1024 if n <= 20000 else float("nan")
                same = (ours["refusalCount"], ours["entityCounts"]) == (ref["refusalCount"], ref["entityCounts"])
                line += f" {ref_s:>8.2f} {n / ref_s:>11,.0f} {ref_mem:>8.1f} {ref_s / ours_s:>6.0f}x"
                if not same:
                    line += "  (outputs differ!)"
            else:
                line += f" {'-':>8} {'-':>11} {'-':>8} {'-':>7}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
