"""The Python side of `gateway worlds run` on a Harbor task tree (a legacy world).

Run by gateway-runner (crates/runner/src/harbor_world.rs) as
`python3 -u -c <this> run <bridge.py source>`: the agent resolver is bridge.py's,
executed here as a module of its own, so both bridges refuse an agent alike and
record its end alike (`_act`).

What one run does, as `gatewaysdk.worlds` (0.3.2) does it in-process:

  1. read one JSON line {agent, variant, world: {slug, branch, versionId,
     fileBlock, bundleDir}} on stdin;
  2. pick the task: `tasks/*/task.toml` in name order, the first when no variant
     is asked for, else the one whose `[metadata] variant` is it, else the first
     whose directory name contains it;
  3. build its world: a fresh SQLite file from `environment/schema.sql` (+
     `seed.sql`), the first `environment/tools/*.py` (not `_`-prefixed) exposing a
     dict `TOOLS`, its `DB_ENV_VAR` (default GATEWAY_WORLD_DB) pointed at the file;
  4. say {"op": "loaded", task, variant, instruction} and wait for {"ok": true};
  5. call fn(world), grade with `environment/grade.py` (GRADE_OUT, DRIVE_DB and the
     tools' variable set; `reward.json` read back), and say
     {"op": "done", completion, agentError, callLog, calls, grade | gradeError}.

Anything refused on the way (no such task, no schema, no tools) is
{"op": "refused", message}. Fds 1 and 0 are handed to stderr and /dev/null once
the protocol has its own copies, so the agent's prints never reach the wire.
"""

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import types
from pathlib import Path

try:
    import tomllib
except ImportError:  # python < 3.11: the regex below reads the variant
    tomllib = None


class Refusal(Exception):
    pass


def load_bridge(source):
    module = types.ModuleType("gateway_agent_bridge")
    exec(compile(source, "bridge.py", "exec"), module.__dict__)
    return module


def declared_variant(task_dir):
    path = task_dir / "task.toml"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if tomllib is not None:
        try:
            found = (tomllib.loads(text).get("metadata") or {}).get("variant")
            return str(found) if found else None
        except Exception:  # noqa: BLE001 - an unparsable file falls back to the regex
            pass
    match = re.search(r'^\s*variant\s*=\s*"([^"]+)"', text, re.M)
    return match.group(1) if match else None


def choose_task(bundle, variant):
    root = bundle / "tasks"
    candidates = sorted(p for p in root.iterdir() if (p / "task.toml").is_file()) if root.is_dir() else []
    if not candidates:
        raise Refusal(f"{bundle} has no tasks/*/task.toml — not a harbor world")
    if variant is None:
        return candidates[0]
    for task_dir in candidates:
        if declared_variant(task_dir) == variant:
            return task_dir
    for task_dir in candidates:
        if variant in task_dir.name:
            return task_dir
    have = ", ".join(f"{t.name} (variant={declared_variant(t) or '—'})" for t in candidates)
    raise Refusal(f"no task matches variant {variant!r}; have: {have}")


def tools_module(task_dir):
    folder = task_dir / "environment" / "tools"
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"gateway_harbor_tools_{path.stem}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if isinstance(getattr(module, "TOOLS", None), dict):
            return module
    raise Refusal(f"{task_dir.name} serves no tools module (environment/tools/*.py exposing TOOLS)")


def world_class(bridge):
    """The Harbor-style world's ``World``, on the bridge's tool surface (so
    ``over``/``wrap``/``override`` and the call log behave as for every world)."""

    class World(bridge.ToolSurface):
        """One variant of a Harbor world, materialized: the original `World`'s
        attributes (``slug``, ``branch``, ``version_id``, ``variant``,
        ``file_block``, ``bundle_dir``, ``task_dir``, ``db_path``, ``tools``,
        ``call_log``) and methods (``over``, ``wrap``, ``override``, ``grade``),
        plus the task's ``instruction``."""

        def __init__(self, info, task_dir, variant, scratch):
            self.bundle_dir = Path(info["bundleDir"])
            self.task_dir = task_dir
            self.variant = variant
            self.slug = info.get("slug")
            self.branch = info.get("branch")
            self.version_id = info.get("versionId")
            self.file_block = info.get("fileBlock")
            self.call_log = []
            instruction = task_dir / "instruction.md"
            self.instruction = instruction.read_text(encoding="utf-8") if instruction.is_file() else ""

            env_dir = task_dir / "environment"
            schema = env_dir / "schema.sql"
            if not schema.is_file():
                raise Refusal(f"{task_dir.name} has no environment/schema.sql to materialize")
            self.db_path = str(Path(scratch) / "world.db")
            conn = sqlite3.connect(self.db_path)
            try:
                conn.executescript(schema.read_text(encoding="utf-8"))
                seed = env_dir / "seed.sql"
                if seed.is_file():
                    conn.executescript(seed.read_text(encoding="utf-8"))
                conn.commit()
            finally:
                conn.close()
            self._scratch = scratch
            self._module = tools_module(task_dir)
            self._db_env_var = getattr(self._module, "DB_ENV_VAR", "GATEWAY_WORLD_DB")
            os.environ[self._db_env_var] = self.db_path
            self.tools = {name: self._record(name, fn) for name, fn in self._module.TOOLS.items()}

        def __repr__(self):
            return f"World({(self.slug or self.bundle_dir.name)!r}, variant={self.variant!r})"

        def _enter_tool(self):
            os.environ[self._db_env_var] = self.db_path

        def grade(self):
            grader = self.task_dir / "environment" / "grade.py"
            if not grader.is_file():
                raise bridge.WorldError(f"{self.task_dir.name} ships no environment/grade.py")
            out_dir = tempfile.mkdtemp(prefix="grade-", dir=self._scratch)
            env = dict(os.environ)
            env[self._db_env_var] = self.db_path
            env.setdefault("DRIVE_DB", self.db_path)
            env["GRADE_OUT"] = out_dir
            proc = subprocess.run([sys.executable, str(grader)], env=env, capture_output=True, text=True, timeout=120)
            reward = Path(out_dir) / "reward.json"
            if proc.returncode != 0 or not reward.is_file():
                raise bridge.WorldError(f"grader failed (exit {proc.returncode}): {proc.stderr.strip()[:400]}")
            return json.loads(reward.read_text(encoding="utf-8"))

    return World


def run(bridge_source):
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    inp = os.fdopen(os.dup(0), "r", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)

    def send(message):
        out.write(json.dumps(message, default=str) + "\n")
        out.flush()

    start = json.loads(inp.readline())
    bridge = load_bridge(bridge_source)
    scratch = tempfile.mkdtemp(prefix="gateway-world-")
    try:
        try:
            fn = bridge._resolve_agent_callable(start["agent"])
            task_dir = choose_task(Path(start["world"]["bundleDir"]), start.get("variant"))
            variant = start.get("variant") or declared_variant(task_dir) or task_dir.name
            world = world_class(bridge)(start["world"], task_dir, variant, scratch)
        except (Refusal, bridge._Refused) as refused:
            send({"op": "refused", "message": str(refused)})
            return 0
        send({"op": "loaded", "task": task_dir.name, "variant": variant, "instruction": world.instruction})
        if not inp.readline():
            return 3  # the runner went away
        done = bridge._act(fn, world)
        try:
            done["grade"] = world.grade()
        except (bridge.WorldError, subprocess.TimeoutExpired, ValueError) as exc:
            done["gradeError"] = str(exc)
        send(done)
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    sys.exit(run(sys.argv[2]))
