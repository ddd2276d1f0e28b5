#!/usr/bin/env python3
"""Rows into a hub world, measured: `gateway worlds data import <slug>` of N rows
(upload, then the hub's apply), `data publish` of the result, side by side with a
local `data import --dry-run` of the same rows (the same engine, on a directory:
a directory import itself takes at most 5,000 rows), and an upload killed with
SIGKILL part-way then finished with `--resume`.

    python3 scripts/bench_hub_data.py --ours target/release/gateway --rows 1000000 \
        [--ref ~/.cache/gateway-reference/bin/gateway]

With --ref the original CLI also imports the same rows into our hub.

The world is examples/helpdesk (customers with a declared unique email, tickets
referencing them); a fifth of the rows are customers. Wall times include process
start-up; peak memory is the process's max RSS (the hub's is read from /proc).
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import base64
import threading
import urllib.request
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
    return customers, n - customers


class Child:
    """A child whose max RSS is read from /proc while it runs (VmHWM)."""

    def __init__(self, argv, cwd, env, **kw):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, **kw)

    def hwm(self):
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0


def run_measured(argv, cwd, env):
    """(seconds, exit code, stdout, stderr, peak RSS MiB) with the RSS sampled from /proc."""
    started = time.perf_counter()
    child = Child(argv, cwd, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0

    def sample():
        nonlocal peak
        while child.proc.poll() is None:
            peak = max(peak, child.hwm())
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = child.proc.communicate()
    elapsed = time.perf_counter() - started
    sampler.join()
    return elapsed, child.proc.returncode, out, err, peak


def get(host, path, keys):
    auth = base64.b64encode(f"{keys[0]}:{keys[1]}".encode()).decode()
    req = urllib.request.Request(host + path, headers={"Authorization": f"Basic {auth}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def wait_state(host, slug, batch, keys, poll=0.1):
    while True:
        status = get(host, f"/api/public/worlds/{slug}/data/batches/{batch}", keys)
        if status["state"] in ("applied", "refused", "published", "failed"):
            return status
        time.sleep(poll)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", default=str(ROOT / "target/release/gateway"))
    parser.add_argument("--ref", default=None, help="the original CLI: it imports the same rows into our hub too")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--resume-chunk-bytes", default="8MiB", help="chunk size of the killed-and-resumed upload")
    parser.add_argument("--hub-log", default=None, help="write the hub's stderr here (with GATEWAY_TIMING=1: its steps)")
    args = parser.parse_args()
    ours = str(Path(args.ours).resolve())
    with tempfile.TemporaryDirectory(prefix="bench-hub-data-") as scratch:
        scratch = Path(scratch)
        data = scratch / "data"
        keys_out = subprocess.run([ours, "hub", "keys", "create", "--project", "bench", "--data", str(data)],
                                  capture_output=True, text=True, check=True).stdout
        keys = json.loads(keys_out)
        keys = (keys["publicKey"], keys["secretKey"])
        hub = Child([ours, "hub", "serve", "--addr", "127.0.0.1:0", "--data", str(data)], scratch, None,
                    stderr=subprocess.PIPE, text=True)
        host = None
        for _ in range(20):
            line = hub.proc.stderr.readline()
            found = re.match(r"gateway hub listening on (\S+)", line)
            if found:
                host = found.group(1)
                break
        if host is None:
            sys.exit("the hub did not start")
        log = open(args.hub_log, "w") if args.hub_log else None

        def drain():
            for line in hub.proc.stderr:
                if log:
                    log.write(line)
                    log.flush()

        threading.Thread(target=drain, daemon=True).start()
        env = dict(os.environ, GATEWAY_HOST=host, GATEWAY_PUBLIC_KEY=keys[0], GATEWAY_SECRET_KEY=keys[1])
        try:
            src = scratch / "src"
            shutil.copytree(ROOT / "examples/helpdesk", src / "helpdesk")
            subprocess.run([ours, "worlds", "schema", "compile", "helpdesk"], cwd=src, capture_output=True, check=True)
            subprocess.run([ours, "bench", "push", "helpdesk", "--slug", "helpdesk"], cwd=src, env=env,
                           capture_output=True, check=True)
            cli = scratch / "cli"
            cli.mkdir()
            rows = scratch / "rows.jsonl"
            customers, tickets = rows_helpdesk(args.rows, rows)
            size = rows.stat().st_size
            print(f"{args.rows:,} rows ({customers:,} customers, {tickets:,} tickets), {size / 2**20:.0f} MiB of JSONL")

            # Hub: upload (the CLI returns after `complete` with --no-wait), then the apply.
            t, code, out, err, peak = run_measured(
                [ours, "worlds", "data", "import", "helpdesk", str(rows), "--publish", "later", "--no-wait",
                 "--parallel", str(args.parallel)], cli, env)
            if code != 0:
                sys.exit(f"import failed: {err}")
            batch = json.loads(out)["batchId"]
            started = time.perf_counter()
            status = wait_state(host, "helpdesk", batch, keys)
            applied = time.perf_counter() - started
            assert status["state"] == "applied", status
            chunks = status["progress"]["chunks"]
            print(f"hub import: upload {t:.2f} s ({chunks} chunks, client peak {peak:.0f} MiB), "
                  f"apply {applied:.2f} s, total {t + applied:.2f} s = {args.rows / (t + applied):,.0f} rows/s; "
                  f"hub peak {hub.hwm():.0f} MiB; counts {status['entityCounts']}")
            t, code, out, err, _ = run_measured([ours, "worlds", "data", "publish", "helpdesk"], cli, env)
            if code != 0:
                sys.exit(f"publish failed: {err}")
            print(f"data publish (the data-only version: bundle of the snapshot): {t:.2f} s")

            # Local: the same engine on a directory (a directory import refuses > 5,000 rows).
            local = scratch / "local"
            shutil.copytree(ROOT / "examples/helpdesk", local / "helpdesk")
            subprocess.run([ours, "worlds", "schema", "compile", "helpdesk"], cwd=local, capture_output=True, check=True)
            t, code, out, err, peak = run_measured(
                [ours, "worlds", "data", "import", "helpdesk", str(rows), "--dry-run"], local, env)
            assert code == 0, err
            print(f"local `data import --dry-run` (stage, references, apply decided; nothing written): "
                  f"{t:.2f} s = {args.rows / t:,.0f} rows/s, peak {peak:.0f} MiB")

            # Resume after SIGKILL: a fresh world, smaller chunks, killed a third of the way.
            subprocess.run([ours, "bench", "push", "helpdesk", "--slug", "helpdesk-resume"], cwd=src, env=env,
                           capture_output=True, check=True)
            resume_cli = scratch / "resume"
            resume_cli.mkdir()
            argv = [ours, "worlds", "data", "import", "helpdesk-resume", str(rows), "--chunk-bytes",
                    args.resume_chunk_bytes, "--parallel", "2"]
            started = time.perf_counter()
            child = subprocess.Popen(argv, cwd=resume_cli, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            expected = max(1, size // (int(re.sub(r"\D", "", args.resume_chunk_bytes)) * 2**20))
            recorded = 0
            while child.poll() is None:
                manifests = list((resume_cli / ".gateway/imports").glob("*.json"))
                if manifests:
                    try:
                        recorded = len(json.loads(manifests[0].read_text())["chunks"])
                    except (ValueError, OSError):
                        pass
                if recorded >= max(1, expected // 3):
                    break
                time.sleep(0.02)
            before_kill = time.perf_counter() - started
            child.send_signal(signal.SIGKILL)
            child.wait()
            t, code, out, err, _ = run_measured(argv + ["--resume"], resume_cli, env)
            assert code == 0, err
            status = json.loads(out)
            print(f"resume after SIGKILL: killed at {before_kill:.2f} s with {recorded} of "
                  f"{status['progress']['chunks']} chunks recorded; `--resume` finished in {t:.2f} s "
                  f"(upload of the rest + apply + publish); counts {status['entityCounts']}, "
                  f"appliedRows {status['appliedRows']:,}")

            if args.ref:
                ref_cli = scratch / "ref"
                ref_cli.mkdir()
                subprocess.run([ours, "bench", "push", "helpdesk", "--slug", "helpdesk-ref"], cwd=src, env=env,
                               capture_output=True, check=True)
                t, code, out, err, peak = run_measured(
                    [args.ref, "worlds", "data", "import", "helpdesk-ref", str(rows), "--publish", "later", "--no-wait"],
                    ref_cli, env)
                assert code == 0, err
                batch = json.loads(out)["batchId"]
                started = time.perf_counter()
                wait_state(host, "helpdesk-ref", batch, keys)
                applied = time.perf_counter() - started
                print(f"the original CLI into our hub: upload {t:.2f} s (peak {peak:.0f} MiB), apply {applied:.2f} s")
        finally:
            hub.proc.terminate()
            try:
                hub.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                hub.proc.kill()


if __name__ == "__main__":
    main()
