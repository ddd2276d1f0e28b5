"""gateway-rs handler worker: runs a world's api/handlers.py for the Rust server.

Started by crates/serve/src/handlers.rs as

    python3 -u -c <this source> <path to handlers.py>

(the source is embedded in the binary with include_str! and passed with -c, so
no temporary file is written). The protocol is JSON lines: one request per line
on stdin, one answer per line on stdout. Handlers' own output (print, os.write
to fd 1, subprocesses) goes to stderr: the protocol uses private duplicates of
the original stdin/stdout descriptors, and fds 0/1 are re-pointed at
/dev/null and stderr.

  startup   worker -> {"ok": false, "error": "<traceback>"} then exit, when the
                      import raises; otherwise it waits for
            rust   -> {"op": "check", "functions": [...]}
            worker -> {"ok": true} | {"ok": false, "missing": "<name>"}
  call      rust   -> {"op": "call", "function": ..., "args": ..., "query": ...,
                       "body": ..., "headers": ..., "operation": {...}}
            worker -> {"ctx": "<method>", "params": {...}}   (any number of times)
            rust   -> {"ok": <value>} | {"error": <ContractError detail>}
                      | {"fail": "<message>"}   (raised as RuntimeError)
            worker -> {"result": {"kind": "body", "body": ...}}
                    | {"result": {"kind": "tuple", "status": int, "body": ...,
                                  "headers": {...} | null}}
                    | {"contract_error": <detail>}
                    | {"exception": "<Type: message>", "traceback": "..."}

The worker exits when stdin closes.

ApiContext's public methods carry their signatures (annotations): the connectors
skill's table of them (CONNECTORS.md, "The handler's ctx") is compared with them by
crates/serve/tests/ctx_doc.rs, so the documentation cannot drift from this file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import time
import traceback
import uuid
from datetime import datetime, timezone
from typing import Any

CLOCK_ENV = "GATEWAY_WORLD_CLOCK"

# ---------------------------------------------------------------- the channel

# Private copies of the protocol descriptors (os.dup gives non-inheritable fds,
# so subprocesses a handler starts never see them), then fd 0 reads /dev/null and
# fd 1 writes to stderr: nothing a handler does can corrupt the protocol.
_IN = os.fdopen(os.dup(0), "rb")
_OUT = os.fdopen(os.dup(1), "wb")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
os.dup2(2, 1)
sys.stdin = open(os.devnull, "r")
sys.stdout = sys.stderr
# Ctrl-C in the server's terminal reaches us too; the server stops us itself.
signal.signal(signal.SIGINT, signal.SIG_IGN)

# Non-dumpable before any world code runs: no other process of our uid may ptrace us
# or read /proc/<pid>/mem or environ (the sandbox gives us a uid of our own as well).
try:
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
except Exception:
    pass


def _encode(value):
    # Lone surrogates (from Python strings) become \udXXX escapes: valid JSON.
    text = json.dumps(value, ensure_ascii=False, allow_nan=True, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace") + b"\n"


def _send(line):
    _OUT.write(line)
    _OUT.flush()


def _receive():
    line = _IN.readline()
    if not line:
        # The server is gone: nothing left to answer.
        os._exit(0)
    return json.loads(line)


# ---------------------------------------------------------------- errors


class ContractError(ValueError):
    """Payload-free structured diagnostics (the original's ContractError)."""

    def __init__(self, code, message, *, schema_path="", path="", **context):
        self.detail = {
            "code": code,
            "message": message,
            "schema_path": schema_path,
            "path": path,
            **context,
        }
        super().__init__(f"{code} at {schema_path or path or '/'}: {message}")

    @classmethod
    def from_detail(cls, detail):
        if not isinstance(detail, dict):
            detail = {"message": str(detail)}
        error = cls.__new__(cls)
        error.detail = detail
        code = detail.get("code", "")
        where = detail.get("schema_path") or detail.get("path") or "/"
        ValueError.__init__(error, f"{code} at {where}: {detail.get('message', '')}")
        return error


def _is_contract_error(error):
    # Ours, or the original's (a handler that imports gatewaysdk and calls fail()).
    if isinstance(error, ContractError):
        return True
    return type(error).__name__ == "ContractError" and isinstance(error, ValueError)


def _rpc(method, params):
    line = _encode({"ctx": method, "params": params})  # TypeError/ValueError reach the handler
    _send(line)
    reply = _receive()
    if "ok" in reply:
        return reply["ok"]
    if "error" in reply:
        raise ContractError.from_detail(reply["error"])
    raise RuntimeError(reply.get("fail") or f"ctx.{method} failed")


# ---------------------------------------------------------------- the context


class Operation:
    """The operation being answered: name, method, path, entity (and whatever else the server sends)."""

    def __init__(self, fields):
        self.name = None
        self.method = None
        self.path = None
        self.entity = None
        if isinstance(fields, dict):
            for key, value in fields.items():
                # The original's Operation holds params and placeholders as tuples.
                if key in ("params", "placeholders") and isinstance(value, list):
                    value = tuple(value)
                setattr(self, str(key), value)

    def __repr__(self):
        return f"Operation(name={self.name!r}, method={self.method!r}, path={self.path!r}, entity={self.entity!r})"


class Namespace:
    """Read-only attributes from a JSON object (``ctx.spec``, ``ctx.settings``)."""

    def __init__(self, fields):
        for key, value in (fields or {}).items():
            setattr(self, str(key), Namespace(value) if key == "paging" and isinstance(value, dict) else value)

    def __repr__(self):
        return f"Namespace({vars(self)!r})"


class ApiContext:
    """What a world's handler gets: the store, the clock, and the vendor's shapes."""

    def __init__(self, operation, headers, context=None):
        context = context if isinstance(context, dict) else {}
        self.spec = Namespace(context.get("spec"))
        self.settings = Namespace(context.get("settings"))
        link = context.get("link")
        #: (absolute URL without query, query) of the request being answered.
        self.link = tuple(link) if isinstance(link, list) else None
        self.operation = operation
        #: The request's headers, lower-cased — a gate reads the credential from here.
        self.headers = headers
        #: A live session's clock and ids are the server's (frozen, seeded).
        self._session = context.get("session") is True

    # -- the store (answered by the server). A handler's writes are one transaction:
    # they land together when it answers, and none of them when it raises.
    def rows(self, entity: str) -> list[dict]:
        return _rpc("rows", {"entity": entity})

    def get(self, entity: str, key: dict) -> dict | None:
        return _rpc("get", {"entity": entity, "key": key})

    def find(self, entity: str, **fields) -> list[dict]:
        # The original compares str(value): do the str() here, where Python values live.
        return _rpc("find", {"entity": entity, "fields": {k: str(v) for k, v in fields.items()}})

    def insert(self, entity: str, value: dict) -> dict:
        return _rpc("insert", {"entity": entity, "value": value})

    def update(self, entity: str, key: dict, patch: dict) -> dict:
        return _rpc("update", {"entity": entity, "key": key, "patch": patch})

    def delete(self, entity: str, key: dict) -> None:
        _rpc("delete", {"entity": entity, "key": key})

    def sql(self, sql: str, params: list) -> list[list]:
        """Read-only SQL on the store (a world's tools: gateway_env.db)."""
        return _rpc("sql", {"sql": sql, "params": params})

    def key_of(self, entity: str, row: dict) -> dict:
        return _rpc("key_of", {"entity": entity, "row": row})

    # -- time and identity (computed here, exactly as the original)
    def clock(self) -> float:
        if self._session:
            return _rpc("clock", {})
        frozen = os.environ.get(CLOCK_ENV)
        return float(frozen) if frozen else time.time()

    def now(self) -> str:
        return datetime.fromtimestamp(self.clock(), timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")

    def elapsed(self, since: str | None) -> float:
        """Seconds since an ISO timestamp the world recorded; infinite when it never happened."""
        if not since:
            return float("inf")
        started = datetime.fromisoformat(since.replace("Z", "+00:00"))
        return self.clock() - started.timestamp()

    def ladder(self, since: str | None, steps: list[tuple[float, Any]], before: Any = None) -> Any:
        """A status machine on a clock: the last step whose delay has passed."""
        if not since:
            return before
        passed = self.elapsed(since)
        current = before
        for delay, value in steps:
            if passed >= delay:
                current = value
        return current

    def uuid(self) -> str:
        if self._session:
            return _rpc("uuid", {})
        return str(uuid.uuid4())

    # -- the vendor's shapes (answered by the server)
    def envelope(self, rows: list[dict], query: dict | None = None, *, envelope: str | None = None) -> Any:
        return _rpc("envelope", {"rows": rows, "query": query, "envelope": envelope})

    def paged(self, rows: list[dict], query: dict | None = None, *, envelope: str | None = None, status: int = 200) -> tuple[int, Any, dict]:
        """``envelope`` plus the vendor's paging headers, as a handler's full answer."""
        answer = _rpc("paged", {"rows": rows, "query": query, "envelope": envelope, "status": status})
        return tuple(answer)

    def not_found(self) -> tuple[int, Any]:
        return tuple(_rpc("not_found", {}))

    def invalid(self, detail: str | None = None) -> tuple[int, Any]:
        return tuple(_rpc("invalid", {"detail": detail}))

    # -- adding to the answer (beyond the original): a `before` gate that lets the
    # request through, or a handler, adds to whatever answer the request gets.
    def add_headers(self, headers: dict[str, str]) -> None:
        """Headers added to the answer (over the declared ones; the answer's own win)."""
        _rpc("add_headers", {"headers": headers})

    def add_fields(self, fields: dict) -> None:
        """Members added to a successful answer that is an object (its own members win)."""
        _rpc("add_fields", {"fields": fields})


# ---------------------------------------------------------------- answers

HEADERS_MESSAGE = "A handler's headers are a mapping of header names to strings"


def _normalize(result):
    """The original's _normalize, as a protocol answer."""
    if (
        isinstance(result, tuple)
        and len(result) in (2, 3)
        and isinstance(result[0], int)
        and not isinstance(result[0], bool)
    ):
        status, body = result[0], result[1]
        extra = result[2] if len(result) == 3 else None
        if extra is not None and not (
            isinstance(extra, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items())
        ):
            raise ContractError("handlers", HEADERS_MESSAGE, schema_path="/api/handlers")
        return {"result": {"kind": "tuple", "status": int(status), "body": body, "headers": extra}}
    return {"result": {"kind": "body", "body": result}}


def _exception(error):
    return {
        "exception": f"{type(error).__name__}: {error}",
        "traceback": "".join(traceback.format_exception(type(error), error, error.__traceback__)[-12:]),
    }


def _contract(error):
    detail = getattr(error, "detail", None) or {"message": str(error)}
    return {"contract_error": detail}


def _answer(answer):
    try:
        line = _encode(answer)
    except Exception as error:  # not JSON: a set, an object, a circular structure...
        if "contract_error" in answer:
            line = _encode({"contract_error": {"message": str(answer["contract_error"])}})
        else:
            line = _encode(_exception(error))
    _send(line)


def _call(handlers, request):
    function = getattr(handlers, request.get("function") or "", None)
    if not callable(function):
        return {"exception": f"AttributeError: handlers have no function {request.get('function')!r}"}
    headers = request.get("headers")
    ctx = ApiContext(Operation(request.get("operation")), headers if isinstance(headers, dict) else {}, request.get("context"))
    try:
        result = function(ctx, request.get("args") or {}, request.get("query") or {}, request.get("body"))
        return _normalize(result)
    except (Exception, SystemExit) as error:
        if _is_contract_error(error):
            return _contract(error)
        return _exception(error)


# ---------------------------------------------------------------- startup and loop


def _load(path):
    module_name = f"gateway_world_api_handlers_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Could not load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    return module


def main():
    path = sys.argv[1]
    # `-c` puts the current directory first on sys.path; the handlers' own directory goes there instead.
    if sys.path and sys.path[0] in ("", "."):
        del sys.path[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        handlers = _load(path)
    except BaseException:  # SyntaxError, ImportError, SystemExit at import time...
        _send(_encode({"ok": False, "error": traceback.format_exc()}))
        sys.exit(1)
    while True:
        request = _receive()
        op = request.get("op")
        if op == "check":
            missing = next((name for name in request.get("functions") or [] if not callable(getattr(handlers, name, None))), None)
            _send(_encode({"ok": True} if missing is None else {"ok": False, "missing": missing}))
        elif op == "call":
            _answer(_call(handlers, request))
        else:
            _send(_encode({"exception": f"ValueError: unknown worker request {op!r}"}))


main()
