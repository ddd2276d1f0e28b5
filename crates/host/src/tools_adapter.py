# gateway-rs: a world's x-gateway tools (tools/*.py), loaded as a handlers module by
# serve's handler worker (crates/serve/src/worker.py). Rust prepends two lines:
#   SERVED = [<the contract's tool names>]
#   TOOLS_DIR = "<the world's tools directory>"
# The registration rules are the original's (engine.md §15): every tools/*.py not
# starting with "_", run in sorted order with the module `gateway_env` injected;
# `@tool` / `@tool(name=...)` registers (twice the same name is refused); else a
# module-level function named like a served tool; else `run(input, conn=None)` in
# tools/<tool>.py. For each served tool a function `tool__<name>(ctx, args, query,
# body)` is defined here, which the worker calls with the tool's input as body; the
# handler's store and db calls go back to Rust as ctx calls, inside the call's
# transaction.

import importlib.util
import os
import sys
import types

_ctx = None


class ContractError(ValueError):
    """A refusal the worker reports as the original's ContractError (by name)."""

    def __init__(self, code, message):
        self.detail = {"code": code, "message": message, "schema_path": "", "path": ""}
        super().__init__(f"{code} at /: {message}")


def _current():
    if _ctx is None:
        raise RuntimeError("gateway_env is only usable while a tool runs")
    return _ctx


class _Store:
    def get(self, entity, key):
        return _current().get(entity, key)

    def list(self, entity):
        return _current().rows(entity)

    def insert(self, entity, value):
        return _current().insert(entity, value)

    def update(self, entity, key, patch):
        return _current().update(entity, key, patch)

    def delete(self, entity, key):
        return _current().delete(entity, key)


class _Cursor:
    def __init__(self, rows):
        self._rows = rows

    def fetchone(self):
        return tuple(self._rows[0]) if self._rows else None

    def fetchall(self):
        return [tuple(row) for row in self._rows]


def _sql(sql, params=()):
    return _current().sql(sql, list(params or ()))


class _Db:
    def one(self, sql, params=()):
        rows = _sql(sql, params)
        return tuple(rows[0]) if rows else None

    def all(self, sql, params=()):
        return [tuple(row) for row in _sql(sql, params)]

    def insert(self, *args, **kwargs):
        raise _raw_write()

    def execute(self, *args, **kwargs):
        raise _raw_write()


class _ReadOnlyConnection:
    def execute(self, sql, params=()):
        return _Cursor(_sql(sql, params))

    def cursor(self):
        raise _raw_write()

    def executescript(self, *args):
        raise _raw_write()

    def commit(self):
        raise _raw_write()

    def rollback(self):
        raise _raw_write()

    def close(self):
        raise _raw_write()


def _raw_write():
    return ContractError("raw_write", "Raw SQL writes are not allowed in a tool; use gateway_env.store")


_registered = {}


def tool(function=None, *, name=None):
    def register(fn):
        key = name or fn.__name__
        if key in _registered:
            raise ContractError("tool", "Duplicate tool handler registration")
        _registered[key] = fn
        return fn

    return register(function) if function is not None else register


gateway_env = types.ModuleType("gateway_env")
gateway_env.store = _Store()
gateway_env.db = _Db()
gateway_env.tool = tool
sys.modules["gateway_env"] = gateway_env

_modules = {}
for _file in sorted(os.listdir(TOOLS_DIR)):  # noqa: F821 - prepended by Rust
    if not _file.endswith(".py") or _file.startswith("_"):
        continue
    _spec = importlib.util.spec_from_file_location(f"gateway_world_tools_{_file[:-3]}", os.path.join(TOOLS_DIR, _file))  # noqa: F821
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _modules[_file[:-3]] = _module

for _name in SERVED:  # noqa: F821 - prepended by Rust
    if _name in _registered:
        continue
    for _module in _modules.values():
        if callable(getattr(_module, _name, None)):
            _registered[_name] = getattr(_module, _name)
            break
    else:
        _own = _modules.get(_name)
        if _own is not None and callable(getattr(_own, "run", None)):
            _run = _own.run
            _registered[_name] = lambda _run=_run, **input: _run(input, _ReadOnlyConnection())


def _entry(name):
    def call(ctx, args, query, body):
        global _ctx
        _ctx = ctx
        try:
            return _registered[name](**(body or {}))
        finally:
            _ctx = None

    call.__name__ = f"tool__{name}"
    return call


for _name in SERVED:  # noqa: F821
    if _name in _registered:
        globals()[f"tool__{_name}"] = _entry(_name)
