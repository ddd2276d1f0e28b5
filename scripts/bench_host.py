#!/usr/bin/env python3
"""The World Host side by side with the original's, on one machine, in one run.

    scripts/bench_host.py --ours target/release/gateway \
        --ref ~/.cache/gateway-reference/bin/python [--rows 20000] [--sessions 1000]

Both hosts speak the same control plane (hub_api.md §10.1), so one driver measures
both: it builds the acme-crm conformance world with ROWS records (the world
perf_serve.py builds), compiles it, tars it as a hub bundle and serves the tarball
over loopback; then, for each host in turn (ours: `gateway host serve`; the
original: `python -m gatewaysdk.environment.schema.host`):

* open: p50/p90 of `POST /__host/sessions` on a warm version (the first open,
  which fetches and prepares the version, is reported on its own);
* reset: p50/p90 of `POST /__host/sessions/<sid>/reset`;
* grade: p50/p90 of `POST /__host/sessions/<sid>/grade` with an assertions grader;
* fork (ours only: the original has no fork): p50/p90 of `POST /__host/sessions/<sid>/fork`,
  each after a write to the parent (so its WAL holds something the copy must carry);
* throughput: requests/s of `GET /v2/records/r777` on one session's data plane
  (wrk, 2 threads, 16 connections, Host-header routing, the session token);
* many sessions: opens SESSIONS sessions and reads the host's RSS (VmRSS of the
  host and of its child processes), its open file descriptors, and the disk its
  files take (the host root and the process's temporary directory, where session
  databases live: allocated blocks) before and with all of them open.

Worlds of any size: `--rows 2000000` builds a 2M-row world (minutes: the compile and
the bundle's gzip dominate); `--seconds 0` skips the wrk read.

Prints a Markdown table. No threshold is asserted anywhere: figures move with
machine load; the ratios are what docs/PERFORMANCE.md records.
"""
from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

CONFORMANCE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance"
SECRET = "bench-secret"
DOMAIN = "worlds.local"
TASK = {
    "name": "bench-grade",
    "instruction": "Keep records r777 and r778 as they are.",
    "grader": {
        "kind": "assertions",
        "checks": [
            {"id": "kept", "entity": "records", "where": {"id": "r777"}, "assert": "all", "field": "id", "value": "r777"},
            {"id": "named", "entity": "records", "where": {"id": "r778"}, "assert": "any", "field": "name", "op": "contains", "value": "Name"},
            {"id": "gone", "entity": "records", "where": {"id": "r-none"}, "assert": "absent"},
        ],
    },
}
# A grader that reads a quarter of the table: every lead counted.
TASK_SCAN = {
    "name": "bench-grade-scan",
    "instruction": "Keep the leads.",
    "grader": {
        "kind": "assertions",
        "checks": [{"id": "leads", "entity": "records", "where": {"kind": "lead"}, "assert": "count", "count": {"gte": 1}}],
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def disk_bytes(*roots: Path) -> int:
    """Blocks allocated under the roots (sparse and unwritten space not counted)."""
    total = 0
    for root in roots:
        for directory, _, files in os.walk(root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(directory, name)).st_blocks * 512
                except OSError:
                    pass
    return total


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def rss_kib(pid: int) -> int:
    """VmRSS of a process and of every descendant (the original's version workers)."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(c) for c in children)
    return total


class Control:
    """A keep-alive client of one host's control plane."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, float]:
        payload = json.dumps(body or {}).encode()
        headers = {"X-Host-Secret": SECRET, "Content-Type": "application/json", "Host": f"127.0.0.1:{self.port}"}
        began = time.perf_counter()
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=payload if method != "GET" else None, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.HTTPException, OSError):
                # The original's server may close a kept-alive connection; reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                if attempt:
                    raise
        elapsed = (time.perf_counter() - began) * 1000
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = {"raw": raw[:200].decode(errors="replace")}
        return response.status, answer, elapsed


def build_bundle(rows: int, work: Path, compiler: list[str]) -> Path:
    sys.path.insert(0, str(CONFORMANCE))
    import perf_serve  # noqa: E402  (the same world the serving benchmark builds)

    world = perf_serve.build_world(rows, work)
    subprocess.run(compiler + ["worlds", "schema", "compile", str(world)], check=True, capture_output=True)
    # What a hub version of a connector world holds: its api bundle.
    tree = work / "api-bundle"
    subprocess.run(compiler + ["worlds", "schema", "api-bundle", str(world), "--out", str(tree)], check=True, capture_output=True)
    bundle = work / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        for path in sorted(tree.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(tree)), recursive=False)
    return bundle


def serve_file(path: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    directory = str(path.parent)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, *args):  # noqa: D401 - silence the access log
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/{path.name}"


def start_host(kind: str, args, root: Path, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "WORLDS_HOST_SECRET": SECRET,
        "WORLDS_INGRESS_DOMAIN": DOMAIN,
        "WORLDS_HOST_OBJECT_STORE": "any",
        "WORLDS_HOST_MAX_SESSIONS": str(args.sessions + 100),
        "WORLDS_HOST_PLAIN_HTTP": "1",
        "GATEWAY_WORLD_CLOCK": "1767225600",
    }
    if kind == "ours":
        argv = [args.ours, "host", "serve", "--addr", f"127.0.0.1:{port}", "--root", str(root), "--secret", SECRET,
                "--domain", DOMAIN, "--max-sessions", str(args.sessions + 100)]
    else:
        argv = [args.ref, "-m", "gatewaysdk.environment.schema.host", "--cache-root", str(root), "--port", str(port)]
    log = open(root.parent / f"{kind}-host.log", "w")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            status, _, _ = Control(port).call("GET", "/__host/stats")
            if status == 200:
                return proc
        except OSError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"{kind} host exited: see {log.name}")
        time.sleep(0.1)
    raise SystemExit(f"{kind} host did not answer within 60 s")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wrk(port: int, sid: str, seconds: int) -> float:
    argv = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--timeout", "30s",
            "-H", f"Host: w-{sid}-api.{DOMAIN}", "-H", f"Authorization: Bearer tok-{sid}",
            f"http://127.0.0.1:{port}/v2/records/r777"]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if non_2xx:
        print(f"  warning: {non_2xx.group(1)} non-2xx answers", file=sys.stderr)
    return float(found.group(1)) if found else 0.0


def measure(kind: str, args, bundle_url: str, work: Path) -> dict:
    root = work / f"{kind}-root"
    root.mkdir()
    port = free_port()
    proc = start_host(kind, args, root, port)
    control = Control(port)
    figures: dict = {}
    try:
        def open_session(sid: str, task: dict = TASK) -> float:
            body = {"sessionId": sid, "versionId": "bench-v1", "bundleUrl": bundle_url, "token": f"tok-{sid}", "taskSpec": task}
            status, answer, ms = control.call("POST", "/__host/sessions", body)
            if status != 200:
                raise SystemExit(f"{kind}: open {sid} answered {status}: {answer}")
            return ms

        figures["first open"] = open_session("first")
        opens = [open_session(f"o{i}") for i in range(args.samples)]
        figures["open"] = opens
        resets = []
        grades = []
        for i in range(args.samples):
            status, answer, ms = control.call("POST", "/__host/sessions/first/reset")
            assert status == 200, answer
            resets.append(ms)
            status, answer, ms = control.call("POST", "/__host/sessions/first/grade")
            assert status == 200 and answer.get("reward") == 1.0, answer
            grades.append(ms)
        figures["reset"] = resets
        figures["grade"] = grades
        open_session("scan", TASK_SCAN)
        scans = []
        for i in range(args.samples):
            status, answer, ms = control.call("POST", "/__host/sessions/scan/grade")
            assert status == 200 and answer.get("reward") == 1.0, answer
            scans.append(ms)
        figures["grade scan"] = scans
        if kind == "ours":
            forks = []
            for i in range(args.samples):
                body = {"tool": "update_record", "args": {"path": {"id": "r777"}, "body": {"name": f"Name 777 fork {i}"}}}
                status, answer, _ = control.call("POST", "/__host/sessions/first/call", body)
                assert status == 200 and answer.get("status") == 200, answer
                status, answer, ms = control.call("POST", "/__host/sessions/first/fork", {"sessionId": f"k{i}", "token": f"tok-k{i}"})
                assert status == 200 and answer.get("forkedFrom") == "first", answer
                forks.append(ms)
            figures["fork"] = forks
            for i in range(args.samples):
                control.call("DELETE", f"/__host/sessions/k{i}")
        control.call("DELETE", "/__host/sessions/scan")
        for i in range(args.samples):
            control.call("DELETE", f"/__host/sessions/o{i}")
        figures["throughput"] = wrk(port, "first", args.seconds) if args.seconds > 0 else 0.0
        scratch = Path(tempfile.gettempdir()) / f"gateway-proc-{proc.pid}"
        disk_before = disk_bytes(root, scratch)
        rss_before = rss_kib(proc.pid)
        began = time.time()
        for i in range(args.sessions):
            open_session(f"m{i}")
        figures["many open s"] = time.time() - began
        time.sleep(1)
        figures["many rss kib"] = rss_kib(proc.pid)
        figures["rss before kib"] = rss_before
        figures["many extra disk"] = disk_bytes(root, scratch) - disk_before
        figures["many fds"] = open_fds(proc.pid)
        status, stats, _ = control.call("GET", "/__host/stats")
        figures["stats"] = stats
    finally:
        # The whole process group: the original's version workers too.
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return figures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--ref", required=True, help="the original's python (its venv has gatewaysdk)")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--only", choices=["ours", "original"], help="measure one host only")
    parser.add_argument("--bundle", type=Path, help="a bundle.tar.gz an earlier run of the same --rows built (kept, not rebuilt)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="bench-host-"))
    bundle = args.bundle or build_bundle(args.rows, work, [args.ours])
    server, url = serve_file(bundle)
    kinds = [args.only] if args.only else ["original", "ours"]
    results = {}
    for kind in kinds:
        print(f"measuring {kind} …", file=sys.stderr, flush=True)
        results[kind] = measure(kind, args, url, work)
    server.shutdown()

    def cell(kind: str, key: str) -> str:
        value = results.get(kind, {}).get(key)
        if value is None:
            return "–"
        if isinstance(value, list):
            return f"{statistics.median(value):.2f} ms (p90 {pct(value, 0.9):.2f})"
        return f"{value:.1f} ms"

    def ratio(key: str, higher_is_better: bool = False) -> str:
        if len(results) < 2:
            return "–"
        a, b = results["original"][key], results["ours"][key]
        a = statistics.median(a) if isinstance(a, list) else a
        b = statistics.median(b) if isinstance(b, list) else b
        if not a or not b:
            return "–"
        return f"{(b / a) if higher_is_better else (a / b):,.0f}×"

    print(f"\n{args.rows:,} rows; {args.samples} samples per figure; {args.sessions:,} sessions held at once.\n")
    print("| figure | original | ours | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| first open (fetch + prepare the version) | {cell('original', 'first open')} | {cell('ours', 'first open')} | {ratio('first open')} |")
    labels = {"open": "open p50", "reset": "reset p50", "grade": "grade p50, 3 checks naming rows by id",
              "grade scan": f"grade p50, a count over the ~{args.rows // 4:,} leads"}
    for key, label in labels.items():
        print(f"| {label} | {cell('original', key)} | {cell('ours', key)} | {ratio(key)} |")
    print(f"| fork p50 (beyond the original) | – | {cell('ours', 'fork')} | – |")
    tput = {k: f"{v['throughput']:,.0f} req/s" for k, v in results.items()}
    print(f"| one session's `GET /v2/records/r777` | {tput.get('original', '–')} | {tput.get('ours', '–')} | {ratio('throughput', True)} |")
    opened = {k: f"{v['many open s']:.1f} s" for k, v in results.items()}
    print(f"| open {args.sessions:,} sessions | {opened.get('original', '–')} | {opened.get('ours', '–')} | {ratio('many open s')} |")
    rss = {k: f"{v['many rss kib'] / 1024:,.0f} MiB" for k, v in results.items()}
    print(f"| RSS with {args.sessions:,} sessions open | {rss.get('original', '–')} | {rss.get('ours', '–')} | {ratio('many rss kib')} |")
    before = {k: f"{v['rss before kib'] / 1024:,.0f} MiB" for k, v in results.items()}
    print(f"| RSS before them | {before.get('original', '–')} | {before.get('ours', '–')} | – |")
    disk = {k: f"{v['many extra disk'] / 2**20:,.1f} MiB" for k, v in results.items()}
    print(f"| extra disk with {args.sessions:,} sessions open | {disk.get('original', '–')} | {disk.get('ours', '–')} | – |")
    fds = {k: f"{v['many fds']:,}" for k, v in results.items()}
    print(f"| open file descriptors then | {fds.get('original', '–')} | {fds.get('ours', '–')} | – |")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
