#!/usr/bin/env python3
"""Rollouts per second of the built-in model runner (`gateway worlds run --agent builtin`).

    scripts/bench_runner.py [--gateway $CARGO_TARGET_DIR/release/gateway] [-c 32]
                            [--turns 10] [--seconds 10] [--rollouts N]

A fake OpenAI-compatible server on loopback (asyncio, HTTP/1.1 keep-alive) answers
every chat-completions request instantly with a scripted tool call: `get_ticket` on
turns 1..T-1, `solve_ticket` on turn T, then a final answer without a tool call. So
a rollout is T tool calls and T+1 model requests, and the task's grader (ticket 101
solved) gives it reward 1 — every rollout is checked to have finished and scored.

It runs the bundled helpdesk example with one task, first a short calibration run,
then enough rollouts to last about SECONDS, at `-c` sessions in parallel, and
reports tool calls/s and rollouts/s over the server-side span (first model request
to last), the wall clock including the command's start-up, and the CPU seconds of
the runner and of the fake model (this process). The world, not the model, is what
is measured: the goal is that it is never the bottleneck.

Nothing is asserted: figures move with machine load. docs/PERFORMANCE.md records them.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = {
    "name": "bench-solve",
    "instruction": "Ticket 101 is fixed: look at it, then solve it.",
    "grader": {
        "kind": "assertions",
        "checks": [
            {"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "op": "eq", "value": "solved"}
        ],
    },
}


class FakeModel:
    """The scripted model: which turn a request is = how many tool answers it carries."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.requests = 0
        self.tool_calls = 0
        self.first = None
        self.last = None
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.ready = threading.Event()

    def answer(self, body: bytes) -> bytes:
        done = body.count(b'"role": "tool"') + body.count(b'"role":"tool"')
        now = time.perf_counter()
        self.first = self.first or now
        self.last = now
        self.requests += 1
        if done >= self.turns:
            message = {"role": "assistant", "content": "Ticket 101 is solved."}
        else:
            self.tool_calls += 1
            name = "solve_ticket" if done == self.turns - 1 else "get_ticket"
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": '{"id": 101}'}}],
            }
        return json.dumps(
            {"id": "chatcmpl-bench", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        ).encode()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                payload = self.answer(body)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + str(len(payload)).encode()
                    + b"\r\n\r\n"
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0, backlog=512))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    def start(self) -> None:
        threading.Thread(target=self.serve, daemon=True).start()
        self.ready.wait()

    def reset(self) -> None:
        self.requests = self.tool_calls = 0
        self.first = self.last = None


def world(root: Path, gateway: str) -> Path:
    dst = root / "helpdesk"
    shutil.copytree(ROOT / "examples" / "helpdesk", dst)
    (dst / "tasks").mkdir(exist_ok=True)
    (dst / "tasks" / "bench-solve.json").write_text(json.dumps(TASK))
    subprocess.run([gateway, "worlds", "schema", "compile", str(dst)], check=True, capture_output=True)
    return dst


def run(gateway: str, path: Path, model: FakeModel, rollouts: int, concurrency: int, turns: int) -> dict:
    model.reset()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "OPENAI_", "OPENROUTER_"))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours_before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    done = subprocess.run(
        [gateway, "worlds", "run", "--path", str(path), "--variant", "bench-solve", "--agent", "builtin", "-m", "fake",
         "--base-url", f"http://127.0.0.1:{model.port}/v1", "--api-key", "bench", "--no-file",
         "-r", str(rollouts), "-c", str(concurrency), "--max-turns", str(turns + 2)],
        capture_output=True, text=True, env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours_after = resource.getrusage(resource.RUSAGE_SELF)
    if done.returncode != 0:
        sys.exit(f"gateway worlds run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    samples = result.get("samples", 1)
    avg = result.get("metrics", {}).get("avg_reward", result.get("reward"))
    if samples != rollouts or avg != 1.0:
        sys.exit(f"not every rollout finished and scored: samples={samples} avg_reward={avg}\n{done.stdout[-2000:]}")
    if model.tool_calls != rollouts * turns:
        sys.exit(f"expected {rollouts * turns} tool calls, the model issued {model.tool_calls}")
    span = (model.last - model.first) if model.first else wall
    return {
        "rollouts": rollouts,
        "tool_calls": model.tool_calls,
        "requests": model.requests,
        "span": span,
        "wall": wall,
        "runner_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "model_cpu": (ours_after.ru_utime - ours_before.ru_utime) + (ours_after.ru_stime - ours_before.ru_stime),
        "peak_rss_mb": after.ru_maxrss / 1024,
    }


def main() -> None:
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gateway", default=str(Path(target) / "release" / "gateway"))
    parser.add_argument("-c", "--concurrency", type=int, default=32)
    parser.add_argument("--turns", type=int, default=10, help="tool calls per rollout")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the measured run should last")
    parser.add_argument("--rollouts", type=int, help="rollouts of the measured run (default: calibrated)")
    args = parser.parse_args()

    model = FakeModel(args.turns)
    model.start()
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        path = world(Path(tmp), args.gateway)
        rollouts = args.rollouts
        if rollouts is None:
            probe = run(args.gateway, path, model, args.concurrency * 2, args.concurrency, args.turns)
            rate = probe["rollouts"] / max(probe["span"], 1e-3)
            rollouts = max(args.concurrency, int(rate * args.seconds))
            print(f"calibration: {probe['rollouts']} rollouts in {probe['span']:.2f} s -> {rollouts} rollouts", file=sys.stderr)
        r = run(args.gateway, path, model, rollouts, args.concurrency, args.turns)
    print(f"| rollouts | tool calls | model requests | span s | tool calls/s | rollouts/s | wall s (with start-up) | runner CPU s | fake model CPU s | runner peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {r['rollouts']} | {r['tool_calls']} | {r['requests']} | {r['span']:.2f} | {r['tool_calls'] / r['span']:.0f} | "
        f"{r['rollouts'] / r['span']:.1f} | {r['wall']:.2f} | {r['runner_cpu']:.2f} | {r['model_cpu']:.2f} | {r['peak_rss_mb']:.0f} |"
    )
    print(f"\n{args.concurrency} sessions in parallel, {args.turns} tool calls per rollout, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
