#!/usr/bin/env python3
"""What the servers' log and span export cost: a session's GET throughput on `gateway
host serve`, measured three ways in one run, interleaved round by round so machine
load falls on all three alike:

* quiet: `GATEWAY_LOG=warn` (no request line, spans disabled);
* lines: the default, one request line per request on stderr (into a file);
* OTLP: the lines, and every span exported over OTLP/HTTP (protobuf) to a collector
  on loopback that accepts and drops them (OTEL_EXPORTER_OTLP_ENDPOINT).

    scripts/bench_tracing.py --ours target/release/gateway [--rows 20000] [--rounds 3] [--seconds 5]
    scripts/bench_tracing.py --ours before=/tmp/a --ours after=/tmp/b …   (builds side by side)
    scripts/bench_tracing.py --instructions --ours target/profiling/gateway [--rows 2000]

`--instructions` counts instead of timing: each mode's host runs under valgrind's callgrind
twice, answering 200 and then 4,200 GETs on one kept-alive connection; the difference over
4,000 is the instructions one request costs, start-up and shutdown cancelled out (what is
left of them — a buffer that grows once or not, depending on thread timing — spread over
4,000 requests). It does not depend on what else the machine runs, where req/s on two
shared cores does; OTLP is left out (its exporter's batches make the count depend on timing).

The world, the session and the wrk load are bench_host.py's (`GET /v2/records/r777`,
2 threads, 16 connections). Beside the throughput, the server's CPU time per request
(its user + system time over the measured seconds, from /proc, divided by the requests
answered): on a machine whose cores wrk shares, that is the steadier measure of what a
line costs. Prints a Markdown table; no threshold is asserted.
"""
from __future__ import annotations

import argparse
import http.client
import http.server
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_host  # noqa: E402  (its world, bundle, control client and wrk driver)

MODES = {
    "quiet (GATEWAY_LOG=warn)": {"GATEWAY_LOG": "warn"},
    "request lines (default)": {},
    "request lines + OTLP export": {"OTEL_EXPORTER_OTLP_ENDPOINT": None},
}


def collector() -> tuple[http.server.ThreadingHTTPServer, str, list[int]]:
    """An OTLP/HTTP sink: 200 to every POST; counts the bytes it was sent."""
    received = [0, 0]

    class Sink(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - the stdlib's name
            length = int(self.headers.get("content-length", 0))
            self.rfile.read(length)
            received[0] += 1
            received[1] += length
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", received


def cpu_seconds(pid: int) -> float:
    """User + system time of a process, all its threads, so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(binary: str | list[str], root: Path, port: int, env_extra: dict, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "GATEWAY_LOG"}
    env.update({"WORLDS_HOST_SECRET": bench_host.SECRET, "WORLDS_INGRESS_DOMAIN": bench_host.DOMAIN,
                "WORLDS_HOST_PLAIN_HTTP": "1", "GATEWAY_WORLD_CLOCK": "1767225600"})
    env.update(env_extra)
    argv = ([binary] if isinstance(binary, str) else binary) + ["host", "serve", "--addr", f"127.0.0.1:{port}", "--root", str(root),
            "--secret", bench_host.SECRET, "--domain", bench_host.DOMAIN]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)
    deadline = time.time() + (60 if isinstance(binary, str) else 600)  # valgrind starts slowly
    while time.time() < deadline:
        try:
            if bench_host.Control(port).call("GET", "/__host/stats")[0] == 200:
                return proc
        except OSError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"the host exited: see {log}")
        time.sleep(0.1)
    raise SystemExit("the host did not answer within 60 s")


def open_session(port: int, bundle_url: str) -> bench_host.Control:
    """Open the session `first` on the host at `port`; its control client."""
    control = bench_host.Control(port)
    body = {"sessionId": "first", "versionId": "bench-v1", "bundleUrl": bundle_url,
            "token": "tok-first", "taskSpec": bench_host.TASK}
    status, answer, _ = control.call("POST", "/__host/sessions", body)
    if status != 200:
        raise SystemExit(f"open answered {status}: {answer}")
    return control


def instructions(binary: str, rows: int, work: Path) -> int:
    """Instructions per request, each mode counted under callgrind (see the module doc)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    bundle = bench_host.build_bundle(rows, work, [binary])
    files, bundle_url = bench_host.serve_file(bundle)
    counts: dict[str, dict[int, int]] = {}
    try:
        for mode, extra in MODES.items():
            if "OTEL_EXPORTER_OTLP_ENDPOINT" in extra:
                continue
            counts[mode] = {}
            for requests in (200, 4200):
                root = work / f"root-{len(counts)}-{requests}"
                root.mkdir()
                out = work / f"callgrind-{len(counts)}-{requests}.out"
                port = bench_host.free_port()
                wrapped = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary]
                proc = start(wrapped, root, port, extra, work / "host.log")
                try:
                    control = open_session(port, bundle_url)
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    headers = {"Host": f"w-first-api.{bench_host.DOMAIN}", "Authorization": "Bearer tok-first"}
                    for _ in range(requests):
                        conn.request("GET", "/v2/records/r777", headers=headers)
                        response = conn.getresponse()
                        response.read()
                        if response.status != 200:
                            raise SystemExit(f"GET answered {response.status}")
                    conn.close()
                    control.call("DELETE", "/__host/sessions/first")
                finally:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=300)
                totals = [line for line in out.read_text().splitlines() if line.startswith("summary:")]
                counts[mode][requests] = int(totals[0].split()[1])
                shutil.rmtree(root, ignore_errors=True)
    finally:
        files.shutdown()
    print(f"| GET /v2/records/r777 on one session, {rows} rows | instructions per request | vs quiet |")
    print("| --- | ---: | ---: |")
    quiet = None
    for mode, by_requests in counts.items():
        per = (by_requests[4200] - by_requests[200]) / 4000
        quiet = quiet or per
        print(f"| {mode} | {per:,.0f} | {100 * (per - quiet) / quiet:+.1f}% |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per request under callgrind instead of timing")
    parser.add_argument("--ours", action="append", required=True, metavar="[LABEL=]PATH")
    parser.add_argument("--rows", type=int, help="rows in the world (20,000; 2,000 with --instructions)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if args.instructions:
        work = Path(tempfile.mkdtemp(prefix="bench-tracing-"))
        try:
            binary = args.ours[0].split("=", 1)[-1]
            return instructions(binary, args.rows or 2000, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="bench-tracing-"))
    sink, sink_url, received = collector()
    try:
        builds = [tuple(spec.split("=", 1)) if "=" in spec else ("ours", spec) for spec in args.ours]
        args.rows = args.rows or 20000
        bundle = bench_host.build_bundle(args.rows, work, [builds[0][1]])
        files, bundle_url = bench_host.serve_file(bundle)
        results: dict[str, list[float]] = {f"{label}: {mode}": [] for label, _ in builds for mode in MODES}
        cpu: dict[str, list[float]] = {key: [] for key in results}
        for round_ in range(args.rounds):
            for (label, binary), (mode, extra) in [(b, m) for b in builds for m in MODES.items()]:
                extra = {k: (sink_url if v is None else v) for k, v in extra.items()}
                if "OTEL_EXPORTER_OTLP_ENDPOINT" in extra:
                    extra["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
                key = f"{label}: {mode}"
                root = work / f"root-{round_}-{len(results[key])}-{abs(hash(key))}"
                root.mkdir()
                port = bench_host.free_port()
                proc = start(binary, root, port, extra, work / "host.log")
                try:
                    control = open_session(port, bundle_url)
                    bench_host.wrk(port, "first", 1)  # warm
                    before = cpu_seconds(proc.pid)
                    rate = bench_host.wrk(port, "first", args.seconds)
                    spent = cpu_seconds(proc.pid) - before
                    results[key].append(rate)
                    cpu[key].append(1e6 * spent / max(rate * args.seconds, 1.0))
                    control.call("DELETE", "/__host/sessions/first")
                finally:
                    # SIGTERM drains (the host waits for open sessions): closed above.
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                shutil.rmtree(root, ignore_errors=True)
        files.shutdown()
    finally:
        sink.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print(f"| GET /v2/records/r777 on one session, {args.rows} rows | median req/s of {args.rounds} | vs quiet "
          "| server CPU µs per request | vs quiet |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key, values in results.items():
        label = key.split(": ", 1)[0]
        quiet = f"{label}: quiet (GATEWAY_LOG=warn)"
        base, median = statistics.median(results[quiet]), statistics.median(values)
        base_cpu, median_cpu = statistics.median(cpu[quiet]), statistics.median(cpu[key])
        shown = key if len(builds) > 1 else key.split(": ", 1)[1]
        print(f"| {shown} | {median:,.0f} | {100 * (median - base) / base:+.1f}% "
              f"| {median_cpu:.2f} | {100 * (median_cpu - base_cpu) / base_cpu:+.1f}% |")
    print(f"\nthe collector received {received[0]} exports, {received[1]:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
