"""The Python side of `gateway worlds run --agent file.py[:fn]|module:fn`.

Run by gateway-runner (crates/runner/src/bridge.rs) as `python3 -c <this> MODE`:

  check SPEC   resolve the agent callable the way the original CLI does
               (`_resolve_agent_callable`); exit 0, or print why not and exit 1.
  run          read one JSON line {agent, world} on stdin, call fn(world) with a
               `World` honouring the original's `gatewaysdk.worlds.World` contract
               as far as a schema/api world needs it, and speak JSON lines with the
               runner: {"op": "call"|"grade", ...} out, {"ok", "result"|"error"} in,
               then {"op": "done", completion, agentError, callLog, calls}.

The protocol keeps the process's original stdout and stdin for itself; fds 1 and 0
then point at stderr and /dev/null, so whatever the agent prints (or its children
print) never corrupts a line. It is not the world: every tool call is answered by
the session on the runner's World Host.
"""

import functools
import importlib
import importlib.util
import json
import os
import re
import sys
import types
from pathlib import Path


class WorldError(RuntimeError):
    pass


class _Refused(Exception):
    pass


def _resolve_agent_callable(spec):
    """``file.py[:fn]`` or ``module.path[:fn]``; the attr defaults to ``agent``."""
    target, _, attr = spec.partition(":")
    attr = attr or "agent"
    looks_like_file = target.endswith(".py") or os.sep in target
    if looks_like_file or Path(target).is_file():
        file_path = Path(target).resolve()
        if not file_path.is_file():
            raise _Refused(f"agent file not found: {target}")
        module_spec = importlib.util.spec_from_file_location(file_path.stem, file_path)
        if module_spec is None or module_spec.loader is None:
            raise _Refused(f"could not load agent file: {target}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise _Refused(f"could not import agent module '{target}': {exc}")
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise _Refused(
            f"'{spec}' does not expose a callable '{attr}' — point --agent at "
            "a function taking the world (file.py:fn or module:fn; fn "
            "defaults to 'agent')"
        )
    return fn


class _Wire:
    def __init__(self, out, inp):
        self._out = out
        self._in = inp

    def send(self, message):
        self._out.write(json.dumps(message, default=str) + "\n")
        self._out.flush()

    def exchange(self, message):
        self.send(message)
        line = self._in.readline()
        if not line:
            raise SystemExit(3)  # the runner went away
        reply = json.loads(line)
        if reply.get("ok"):
            return reply.get("result")
        raise WorldError(reply.get("error") or "refused")


def model_tool_name(name):
    """Deterministic OpenAI-compatible alias (as gatewaysdk.world_tools)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "tool"


def _params(signature):
    inside = signature[signature.find("(") + 1 : signature.rfind(")")]
    return [p.split("=")[0].strip() for p in inside.split(",") if p.strip()]


class ToolSurface:
    """What the original's ``World`` does with ``tools`` (name -> callable, each
    call recorded into ``call_log``): ``over``, ``wrap`` and ``override``. Shared
    by this bridge's World and the Harbor-style world's (harbor_world.py)."""

    def _enter_tool(self):
        """Called before each tool call (a local world points its tools at its database)."""

    def _serves(self):
        return ", ".join(sorted(self.tools))

    def _record(self, name, fn):
        @functools.wraps(fn)
        def recorded(*args, **kwargs):
            entry = {
                "tool": name,
                "arguments": json.dumps({"args": args, "kwargs": kwargs}, default=str)[:2000],
            }
            self._enter_tool()
            try:
                result = fn(*args, **kwargs)
                entry["result_preview"] = json.dumps(result, default=str)[:2000]
                return result
            except Exception as exc:
                entry["error"] = str(exc)[:500]
                raise
            finally:
                self.call_log.append(entry)

        return recorded

    def over(self, prod_fn, *, name=None):
        def decorate(fn):
            tool_name = name or fn.__name__
            if tool_name not in self.tools:
                raise WorldError(
                    f"world {self.slug or (self.bundle_dir.name if self.bundle_dir else '')!r} does not serve "
                    f"tool {tool_name!r}; it serves: {self._serves()}"
                )
            world_fn = self.tools[tool_name]

            @functools.wraps(prod_fn)
            def routed(*args, **kwargs):
                return world_fn(*args, **kwargs)

            return routed

        return decorate

    def wrap(self, prod_tools):
        missing = sorted(set(prod_tools) - set(self.tools))
        if missing:
            raise WorldError(f"world does not serve: {', '.join(missing)}; it serves: {self._serves()}")
        return {name: self.tools[name] for name in prod_tools}

    def override(self, name, fn):
        if name not in self.tools:
            raise WorldError(f"world does not serve a tool named {name!r}; it serves: {self._serves()}")
        recorded = self._record(name, fn)
        self.tools[name] = recorded
        return recorded


class World(ToolSurface):
    """One task of a world, materialized as a live session of the runner's World
    Host: ``tools`` (name -> callable, recorded into ``call_log``), ``over`` /
    ``wrap`` / ``override`` as in ``gatewaysdk.worlds``, ``call``, ``grade``,
    ``toolkit()`` for handing the tools to a model, and the task's
    ``instruction``."""

    def __init__(self, info, wire):
        self._wire = wire
        self.slug = info.get("slug")
        self.branch = info.get("branch")
        self.version_id = info.get("versionId")
        self.variant = info.get("variant")
        self.file_block = info.get("fileBlock")
        self.bundle_dir = Path(info["bundleDir"]) if info.get("bundleDir") else None
        self.task_dir = Path(info["taskDir"]) if info.get("taskDir") else None
        self.task = info.get("task")
        self.instruction = info.get("instruction") or ""
        self.session_id = info.get("sessionId")
        self.db_path = None  # the state lives in the runner's session, not a local file
        self.specs = list(info.get("tools") or [])
        self.call_log = []
        self.tools = {spec["name"]: self._record(spec["name"], self._bind(spec)) for spec in self.specs}

    def __repr__(self):
        return f"World({(self.slug or str(self.bundle_dir))!r}, variant={self.variant!r})"

    def _bind(self, spec):
        name = spec["name"]
        params = _params(spec.get("signature") or "")

        def impl(*args, **kwargs):
            # impl({"id": 1}), impl(id=1) or impl(1): the dict form is the toolkit's.
            if len(args) == 1 and isinstance(args[0], dict):
                payload = dict(args[0])
            else:
                if len(args) > len(params):
                    raise TypeError(f"{name}() takes {len(params)} positional arguments but {len(args)} were given")
                payload = dict(zip(params, args))
            payload.update(kwargs)
            return self.call(name, payload)

        impl.__name__ = name
        impl.__doc__ = spec.get("doc")
        return impl

    def call(self, tool, args=None, **kwargs):
        """Run one of the world's tools in the session: ``{status, body}``."""
        payload = dict(args or {})
        payload.update(kwargs)
        return self._wire.exchange({"op": "call", "tool": tool, "args": payload})

    def grade(self):
        """The task's own grader over the session's state now."""
        return self._wire.exchange({"op": "grade"})

    def toolkit(self):
        """The tools ready to hand to a model: ``schemas`` (OpenAI function
        tools), ``impls`` (alias -> callable) and the raw ``specs``."""
        schemas, impls = [], {}
        for spec in self.specs:
            alias = model_tool_name(spec["name"])
            if alias in impls:
                raise WorldError(f"Model tool name collision: {alias}")
            impls[alias] = self.tools[spec["name"]]
            schemas.append(
                {
                    "type": "function",
                    "function": {
                        "name": alias,
                        "description": spec.get("doc") or spec["name"],
                        "parameters": spec.get("inputSchema") or {"type": "object"},
                    },
                }
            )
        return types.SimpleNamespace(schemas=schemas, impls=impls, specs=self.specs)


def _check(spec):
    try:
        _resolve_agent_callable(spec)
    except _Refused as refused:
        print(str(refused), file=sys.stderr)
        return 1
    return 0


def _act(fn, world):
    """Run the agent ``fn`` on ``world``: the ``done`` message that ends its run (a
    failure of the agent's own is recorded in it, not raised)."""
    agent_error, final = None, None
    try:
        final = fn(world)
    except Exception as exc:  # noqa: BLE001 - the original records any agent failure
        agent_error = str(exc)[:500]
    except SystemExit as exc:
        agent_error = f"the agent exited ({exc.code})"
    sys.stdout.flush()
    return {
        "op": "done",
        "completion": str(final)[:20000] if final is not None else None,
        "agentError": agent_error,
        "callLog": world.call_log[-50:],
        "calls": len(world.call_log),
    }


def _run():
    # The protocol's own descriptors; the agent's prints go to stderr.
    wire_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    wire_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    wire = _Wire(wire_out, wire_in)
    start = json.loads(wire_in.readline())
    try:
        fn = _resolve_agent_callable(start["agent"])
    except _Refused as refused:
        wire.send({"op": "refused", "message": str(refused)})
        return 0
    wire.send(_act(fn, World(start["world"], wire)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    if len(sys.argv) > 2 and sys.argv[1] == "check":
        sys.exit(_check(sys.argv[2]))
    sys.exit(_run())
