#!/usr/bin/env python3
"""Re-grade without re-running: how long the hub takes to re-score an evaluation of
SAMPLES samples from their stored final states.

    scripts/bench_regrade.py --gateway $CARGO_TARGET_DIR/release/gateway [--samples 10000] [--distinct 1.0]

Starts `gateway hub serve` on a fresh data directory, pushes the bundled helpdesk world
(`gateway bench push`), stores a task (version 1: one assertion), files one evaluation
of SAMPLES samples through the HTTP API (create, batches of 1,000, finalize) and attaches
a final state to every sample (`POST …/evaluations/{id}/states`, then a PUT per state
the hub lacks). The states are the world's compiled snapshot with ticket 101's status
and ticket 102's subject changed per sample — every state its own file (`--distinct
1.0`: 10,000 objects, the worst case), or a share of them repeated (the store keeps a
state once per sha256 and the regrade scores it once).

Then it publishes two new versions of the task and times `POST …/regrade` for each:
version 2, three assertions (in-process, every core), and version 3, a python grader
(every state through one confined worker). Time is the client's wall clock around the
request (the hub's own `seconds` beside it). Prints a Markdown table; no threshold is
asserted anywhere.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

EVALS = "/api/public/benchmark-containers/evaluations"
CHECKS_V1 = [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]
CHECKS_V2 = CHECKS_V1 + [
    {"id": "kept", "entity": "customers", "assert": "count", "count": {"eq": 3}},
    {"id": "no_escalation", "entity": "tickets", "where": {"status": "escalated"}, "assert": "absent"},
]
PYTHON_V3 = """import json, sys
state = json.load(sys.stdin)
t = state["tickets"]
print(json.dumps({"reward": 1.0 if t["101"]["status"] == "solved" else 0.0, "tickets": len(t)}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """A keep-alive HTTP connection to the hub with Basic credentials."""

    def __init__(self, port: int, public: str, secret: str) -> None:
        self.port = port
        self.auth = "Basic " + base64.b64encode(f"{public}:{secret}".encode()).decode()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def request(self, method: str, path: str, body: bytes | None, headers: dict) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: object | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        status, answer = self.request(method, path, data, {"Authorization": self.auth, "Content-Type": "application/json"})
        if status != 200:
            raise SystemExit(f"{method} {path} -> {status}: {answer[:300]!r}")
        return json.loads(answer)

    def put(self, url: str, data: bytes) -> None:
        target = urllib.parse.urlsplit(url)
        status, answer = self.request("PUT", f"{target.path}?{target.query}", data, {"Content-Length": str(len(data))})
        if status != 200:
            raise SystemExit(f"PUT state -> {status}: {answer[:300]!r}")


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_bytes(base: Path, scratch: Path, n: int, solved: bool) -> bytes:
    """The snapshot with ticket 101 solved or not and ticket 102's subject naming `n`."""
    path = scratch / "state.sqlite"
    shutil.copyfile(base, path)
    db = sqlite3.connect(path)
    for key, change in (('[101]', {"status": "solved" if solved else "open"}), ('[102]', {"subject": f"Variant {n}"})):
        (payload,) = db.execute('SELECT payload FROM "tickets" WHERE _key = ?', (key,)).fetchone()
        row = json.loads(payload)
        row.update(change)
        db.execute('UPDATE "tickets" SET payload = ? WHERE _key = ?', (canonical(row), key))
    db.commit()
    db.close()
    data = path.read_bytes()
    path.unlink()
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True, help="the gateway binary (a release build)")
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--distinct", type=float, default=1.0, help="share of samples with a state of their own")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-regrade-"))
    data = work / "hub"
    keys = json.loads(subprocess.run([args.gateway, "hub", "keys", "create", "--data", str(data)],
                                     check=True, capture_output=True, text=True).stdout)
    port = free_port()
    hub = subprocess.Popen([args.gateway, "hub", "serve", "--data", str(data), "--addr", f"127.0.0.1:{port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        env = dict(os.environ, GATEWAY_HOST=f"http://127.0.0.1:{port}", GATEWAY_PUBLIC_KEY=keys["publicKey"],
                   GATEWAY_SECRET_KEY=keys["secretKey"])
        world = work / "helpdesk"
        shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "helpdesk", world)
        subprocess.run([args.gateway, "worlds", "schema", "compile", str(world)], check=True, capture_output=True)
        pushed = json.loads(subprocess.run([args.gateway, "bench", "push", str(world), "--slug", "helpdesk"],
                                           check=True, capture_output=True, text=True, env=env).stdout)
        api = Api(port, keys["publicKey"], keys["secretKey"])
        spec = {"name": "solve-101", "instruction": "Solve ticket 101.", "grader": {"kind": "assertions", "checks": CHECKS_V1}}
        task = api.json("POST", "/api/public/world-tasks", {"spec": spec, "world": "helpdesk"})

        started = time.perf_counter()
        eid = api.json("POST", EVALS, {"versionId": pushed["versionId"], "model": "bench", "rolloutsPerExample": args.samples})["evaluationId"]
        for first in range(0, args.samples, 1000):
            batch = [{"exampleId": "solve-101", "task": "solve-101", "rolloutIndex": i, "reward": float(i % 2),
                      "info": {"callLog": [{"tool": "solve_ticket", "args": {"id": 101}}]}}
                     for i in range(first, min(first + 1000, args.samples))]
            api.json("POST", f"{EVALS}/{eid}/samples", {"samples": batch})
        api.json("POST", f"{EVALS}/{eid}/finalize", {"status": "COMPLETED"})
        base = world / "db" / "state.sqlite"
        scratch = work / "scratch"
        scratch.mkdir()
        distinct = max(1, round(args.samples * args.distinct))
        stored = 0
        for first in range(0, args.samples, 1000):
            entries, files = [], {}
            for i in range(first, min(first + 1000, args.samples)):
                n = i % distinct
                blob = state_bytes(base, scratch, n, solved=n % 2 == 1)
                sha = hashlib.sha256(blob).hexdigest()
                files[sha] = blob
                entries.append({"exampleId": "solve-101", "rolloutIndex": i, "sha256": sha, "bytes": len(blob)})
            answered = api.json("POST", f"{EVALS}/{eid}/states", {"states": entries})
            sent = set()
            for entry, row in zip(entries, answered["states"]):
                if "uploadUrl" in row and entry["sha256"] not in sent:
                    api.put(row["uploadUrl"], files[entry["sha256"]])
                    sent.add(entry["sha256"])
                    stored += 1
        size = len(state_bytes(base, scratch, 0, solved=False))
        print(f"filed {args.samples} samples and {stored} states ({size:,} bytes each) in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)

        rows = []
        versions = [("assertions (3 checks, in-process)", {"kind": "assertions", "checks": CHECKS_V2}),
                    ("python (one confined worker)", {"kind": "python", "source": PYTHON_V3})]
        for number, (label, grader) in enumerate(versions, start=2):
            spec = {"name": "solve-101", "instruction": f"Solve ticket 101 (v{number}).", "grader": grader}
            api.json("PATCH", f"/api/public/world-tasks/{task['id']}", {"spec": spec})
            begun = time.perf_counter()
            answer = api.json("POST", f"{EVALS}/{eid}/regrade", {"task_version": number})
            wall = time.perf_counter() - begun
            assert answer["graded"] == args.samples, answer
            rows.append((label, wall, answer["seconds"], answer["avgReward"]))
        print(f"| regrade of {args.samples:,} samples ({distinct:,} distinct states) | wall | hub | mean reward |")
        print("| --- | ---: | ---: | ---: |")
        for label, wall, seconds, mean in rows:
            print(f"| {label} | {wall:.1f} s | {seconds:.1f} s | {mean:.3f} |")
    finally:
        hub.terminate()
        hub.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
