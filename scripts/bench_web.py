#!/usr/bin/env python3
"""The web pages on a hub holding many evaluations: how fast the evaluations page paints.

    scripts/bench_web.py --gateway $CARGO_TARGET_DIR/release/gateway [--evaluations 1000] [--samples 5] [--runs 20]

Starts `gateway hub serve` on a fresh data directory, pushes a small world in five
versions (`gateway bench push`), files N evaluations across them through the HTTP API
(create, one batch of samples, finalize), then measures the evaluations page
(`/ui/w/<slug>/evaluations`: the chart over every sample and the newest page of
evaluations):
- over HTTP with Basic credentials: time to the complete response (median, p95), and the
  same for the oldest page (`?before=` cursor walked to the end) and a rollout's page;
- in headless Chromium (signed in with the form, driven over the DevTools pipe): the
  navigation's responseEnd, domContentLoadedEventEnd and loadEventEnd (medians);
- the seed diff page of the bundled helpdesk world grown to `--seed-rows` tickets (two
  versions: a tenth of the rows changed, 500 removed, 500 added).
Prints a Markdown table. Needs python3 only (and `chromium` for the browser rows).
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """A keep-alive HTTP connection to the hub with Basic credentials."""

    def __init__(self, port: int, public: str, secret: str) -> None:
        self.port = port
        self.auth = "Basic " + base64.b64encode(f"{public}:{secret}".encode()).decode()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method: str, path: str, body: object | None = None) -> tuple[int, bytes]:
        headers = {"Authorization": self.auth, "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: object | None = None) -> dict:
        status, data = self.request(method, path, body)
        if status != 200:
            raise SystemExit(f"{method} {path} -> {status}: {data[:300]!r}")
        return json.loads(data)


def timed_get(api: Api, path: str, runs: int) -> tuple[float, float, int]:
    times = []
    size = 0
    for _ in range(runs):
        start = time.perf_counter()
        status, body = api.request("GET", path)
        times.append(time.perf_counter() - start)
        if status != 200:
            raise SystemExit(f"GET {path} -> {status}")
        size = len(body)
    times.sort()
    return statistics.median(times) * 1000, times[min(len(times) - 1, int(len(times) * 0.95))] * 1000, size


class Chromium:
    """Headless Chromium over the DevTools pipe (fd 3 commands in, fd 4 replies out)."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="bench-web-chromium-")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def wire() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "--window-size=1280,900", "about:blank"],
            preexec_fn=wire, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        self.events: list[dict] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})
        self.session = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable", {})

    def receive(self) -> dict:
        while b"\0" not in self.buffer:
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                raise SystemExit("Chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def loaded(self) -> None:
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == "Page.loadEventFired":
                    del self.events[: i + 1]
                    return
            self.events.append(self.receive())

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise SystemExit(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.loaded()

    def close(self) -> None:
        try:
            self.session = None
            os.write(self.cmd_w, json.dumps({"id": 0, "method": "Browser.close", "params": {}}).encode() + b"\0")
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def seed_world(gateway: str, env: dict, work: Path, rows: int) -> str:
    """The bundled helpdesk world with `rows` tickets, pushed twice: v2 changes every tenth
    ticket's status, drops the last 500 and adds 500 new ones. Returns its slug."""
    world = work / "seedworld"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "helpdesk", world)
    initial_path = world / "data" / "initial.json"
    initial = json.loads(initial_path.read_text())
    customers = [m for m in initial["mutations"] if m["entity"] == "customers"]

    def ticket(i: int, status: str) -> dict:
        return {"entity": "tickets", "op": "insert", "source": {"record": f"bench:ticket:{i}"},
                "value": {"id": i, "customer_id": f"C{1 + i % 3}", "subject": f"Ticket number {i}", "status": status,
                          "priority": 1 + i % 4, "tags": [f"t{i % 5}"], "assignee": None, "opened_at": "2026-11-20T10:00:00Z"}}

    for version, ids in enumerate([range(1, rows + 1), range(1, rows + 501)]):
        tickets = [ticket(i, "pending" if version and i % 10 == 0 else "open") for i in ids if not (version and rows - 500 < i <= rows)]
        initial["mutations"] = customers + tickets
        initial_path.write_text(json.dumps(initial, indent=1) + "\n")
        subprocess.run([gateway, "worlds", "schema", "compile", str(world)], check=True, capture_output=True)
        subprocess.run([gateway, "bench", "push", str(world), "-m", f"seed v{version + 1}"], check=True, capture_output=True, env=env)
    return "seedworld"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True, help="the gateway binary (a release build)")
    parser.add_argument("--evaluations", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=5, help="samples per evaluation")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    parser.add_argument("--seed-rows", type=int, default=20000, help="tickets in the seed-diff world (0: skip)")
    args = parser.parse_args()
    random.seed(7)
    work = Path(tempfile.mkdtemp(prefix="bench-web-"))
    data = work / "hub"
    keys = json.loads(subprocess.run([args.gateway, "hub", "keys", "create", "--data", str(data)],
                                     check=True, capture_output=True, text=True).stdout)
    port = free_port()
    hub = subprocess.Popen([args.gateway, "hub", "serve", "--data", str(data), "--addr", f"127.0.0.1:{port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = None
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        env = dict(os.environ, GATEWAY_HOST=f"http://127.0.0.1:{port}", GATEWAY_PUBLIC_KEY=keys["publicKey"],
                   GATEWAY_SECRET_KEY=keys["secretKey"])
        world = work / "bench-world"
        world.mkdir()
        (world / "pyproject.toml").write_text('[project]\nname = "bench-world"\nversion = "0.1.0"\n')
        versions = []
        for i in range(5):
            (world / "main.py").write_text(f"print({i})\n")
            flags = ["--auto-bump"] if i else []
            pushed = subprocess.run([args.gateway, "bench", "push", str(world), "-m", f"push {i}", *flags],
                                    check=True, capture_output=True, text=True, env=env).stdout
            versions.append(json.loads(pushed)["versionId"])
        api = Api(port, keys["publicKey"], keys["secretKey"])
        evals = "/api/public/benchmark-containers/evaluations"
        started = time.perf_counter()
        first = None
        for n in range(args.evaluations):
            version = versions[n * len(versions) // args.evaluations]
            eid = api.json("POST", evals, {"versionId": version, "model": f"model-{n % 3}", "runId": f"run-{n}"})["evaluationId"]
            first = first or eid
            scale = 0.5 + versions.index(version) * 0.1
            samples = [{"exampleId": f"ex-{k}", "task": f"task-{k % 4}", "rolloutIndex": 0,
                        "reward": round(random.random() * scale, 3) if k % 7 else None,
                        "prompt": f"prompt {k}", "completion": f"completion {k}",
                        "info": {"callLog": [{"tool": "get_ticket", "args": {"id": k}, "result": {"id": k}}]}}
                       for k in range(args.samples)]
            api.json("POST", f"{evals}/{eid}/samples", {"samples": samples})
            api.json("POST", f"{evals}/{eid}/finalize", {"status": "COMPLETED", "metrics": {"avg_reward": 0.5}})
        fill_s = time.perf_counter() - started
        print(f"filled {args.evaluations} evaluations × {args.samples} samples in {fill_s:.1f} s", file=sys.stderr)

        page = "/ui/w/bench-world/evaluations"
        rows = [("evaluations page (chart + newest 50)", *timed_get(api, page, args.runs))]
        # Walk the cursor to the oldest page.
        path, pages = page, 1
        while True:
            status, body = api.request("GET", path)
            marker = body.decode().split("evaluations?before=")
            if len(marker) < 2:
                break
            path = f"{page}?before={marker[1].split(chr(34))[0]}"
            pages += 1
        rows.append((f"oldest page (page {pages}, `?before=`)", *timed_get(api, path, args.runs)))
        rows.append(("one evaluation's rollouts", *timed_get(api, f"{page}/{first}", args.runs)))
        if args.seed_rows:
            slug = seed_world(args.gateway, env, work, args.seed_rows)
            rows.append((f"seed diff, {args.seed_rows:,} tickets (500 added, 500 removed, {args.seed_rows // 10:,} changed)",
                         *timed_get(api, f"/ui/w/{slug}/diff", max(3, args.runs // 4))))
            rows.append(("the same, 1,000 rows of each kind shown",
                         *timed_get(api, f"/ui/w/{slug}/diff?entity=tickets&limit=1000", max(3, args.runs // 4))))
        print(f"| page ({args.evaluations} evaluations, {args.evaluations * args.samples} samples) | median | p95 | bytes |")
        print("| --- | ---: | ---: | ---: |")
        for name, median, p95, size in rows:
            print(f"| {name} | {median:.1f} ms | {p95:.1f} ms | {size:,} |")

        if not args.chromium:
            print("NOTICE: no chromium; the browser figures are skipped", file=sys.stderr)
            return
        browser = Chromium(args.chromium)
        base = f"http://127.0.0.1:{port}"
        browser.open(f"{base}/ui/login?next={page}")
        browser.events.clear()
        browser.eval(f"document.getElementById('public_key').value = {json.dumps(keys['publicKey'])};"
                     f"document.getElementById('secret_key').value = {json.dumps(keys['secretKey'])};"
                     "document.querySelector('form.login').submit()")
        browser.loaded()
        assert browser.eval("location.pathname") == page, browser.eval("location.href")
        timings = {"responseEnd": [], "domContentLoadedEventEnd": [], "loadEventEnd": []}
        for _ in range(max(3, args.runs // 4)):
            browser.open(f"{base}{page}")
            nav = json.loads(browser.eval("JSON.stringify(performance.getEntriesByType('navigation')[0])"))
            for name in timings:
                timings[name].append(nav[name])
        print()
        print("| Chromium, evaluations page | median |")
        print("| --- | ---: |")
        for name, values in timings.items():
            print(f"| {name} | {statistics.median(values):.1f} ms |")
    finally:
        if browser:
            browser.close()
        hub.terminate()
        hub.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
