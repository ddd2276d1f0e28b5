#!/usr/bin/env python3
"""Does `gateway worlds serve --state DIR` lose an acknowledged write?

    scripts/write_loss.py --ours target/release/gateway [--seconds 60] [--kill-at 30] [--writers 16]

Serves a copy of examples/helpdesk with a durable state directory and drives it with
WRITERS threads, each creating, updating and deleting its own tickets (one request
per connection) for SECONDS. With --kill-at T the server gets SIGKILL T seconds in
and is restarted on the same directory; the writers stop at the kill. Then every
ticket is read back: each write answered 2xx must be there (a write cut off by the
kill may or may not be). Prints the counts; exits 1 on a lost write or any 5xx.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start(binary: str, world: Path, state: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [binary, "worlds", "serve", str(world), "--port", "0", "--state", str(state)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    port = int(re.search(r":(\d+)\s*$", line).group(1))
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, port


def call(port: int, method: str, path: str, body: dict | None = None):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        data = json.dumps(body) if body is not None else None
        conn.request(method, path, body=data, headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, answer.read().decode()
    except OSError:
        return None


def writer(port: int, n: int, stop: threading.Event, out: dict, errors: list) -> None:
    tickets: dict[int, dict] = {}
    step = 0
    counts = {"create": 0, "update": 0, "delete": 0}
    while not stop.is_set():
        step += 1
        live = [i for i, k in tickets.items() if k["subject"] is not None]
        target = live[step % len(live)] if live else None
        subject = f"w{n} s{step}"
        if step % 5 == 3 and target is not None:
            kind, answer = "update", call(port, "PATCH", f"/api/v2/tickets/{target}", {"subject": subject})
        elif step % 5 == 4 and target is not None:
            kind, answer, subject = "delete", call(port, "DELETE", f"/api/v2/tickets/{target}"), None
        else:
            kind, answer = "create", call(port, "POST", "/api/v2/tickets", {"customer_id": "C1", "subject": subject})
        if answer is None:
            if kind != "create":
                tickets[target]["uncertain"] = True
            break
        status, text = answer
        if status >= 500:
            errors.append(f"{status} {kind}: {text[:200]}")
            continue
        if not 200 <= status < 300:
            errors.append(f"unexpected {status} {kind}: {text[:200]}")
            continue
        ident = json.loads(text)["id"] if kind == "create" else target
        tickets[ident] = {"subject": subject, "uncertain": False}
        counts[kind] += 1
    out[n] = (tickets, counts)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--kill-at", type=float, default=None)
    parser.add_argument("--writers", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="write-loss-"))
    try:
        world = work / "helpdesk"
        shutil.copytree(ROOT / "examples/helpdesk", world)
        state = work / "state"
        proc, port = start(args.ours, world, state)
        stop, out, errors = threading.Event(), {}, []
        threads = [threading.Thread(target=writer, args=(port, n, stop, out, errors)) for n in range(args.writers)]
        began = time.time()
        for t in threads:
            t.start()
        run_for = args.kill_at if args.kill_at is not None else args.seconds
        time.sleep(run_for)
        if args.kill_at is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.time() - began
        if args.kill_at is None:
            proc.terminate()
            proc.wait()
        proc, port = start(args.ours, world, state)
        lost, checked, uncertain = [], 0, 0
        totals = {"create": 0, "update": 0, "delete": 0}
        for tickets, counts in out.values():
            for key in totals:
                totals[key] += counts[key]
            for ident, known in tickets.items():
                status, text = call(port, "GET", f"/api/v2/tickets/{ident}")
                if known["subject"] is None:
                    holds = status == 404
                else:
                    holds = status == 200 and json.loads(text).get("subject") == known["subject"]
                checked += 1
                if known["uncertain"]:
                    uncertain += 1
                elif not holds:
                    lost.append((ident, known, status))
        proc.terminate()
        proc.wait()
        acknowledged = sum(totals.values())
        print(
            f"{args.writers} writers, {elapsed:.1f} s{' then SIGKILL and restart' if args.kill_at is not None else ', restart'}: "
            f"{acknowledged} acknowledged writes ({totals['create']} creates, {totals['update']} updates, "
            f"{totals['delete']} deletes; {acknowledged / elapsed:.0f}/s), {checked} tickets checked, "
            f"{uncertain} cut off mid-write, {len(lost)} lost, {len(errors)} 5xx/unexpected"
        )
        for item in lost[:10] + errors[:10]:
            print("  ", item)
        return 1 if lost or errors else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
