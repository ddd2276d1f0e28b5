"""Logic world: a gate and handlers covering every answer form and ctx helper."""

CALLS = {"n": 0}


def gate(ctx, args, query, body):
    mode = ctx.headers.get("x-gate")
    if mode == "block3":
        return 429, {"error": "quota", "op": ctx.operation.name}, {"Retry-After": "30", "X-Quota-Remaining": "0"}
    if mode == "block2":
        return 403, {"error": "forbidden", "args": args}
    if mode == "empty":
        return 204, None
    if mode == "ok200":
        return 200, {"gate": "answered"}, None
    if mode == "badheaders":
        return 200, {"x": 1}, {"X-Count": 5}
    if ctx.operation.name == "locked":
        return 423, {"error": "locked"}
    return None


def echo(ctx, args, query, body):
    return {
        "op": ctx.operation.name,
        "method": ctx.operation.method,
        "entity": ctx.operation.entity,
        "args": args,
        "query": query,
        "body": body,
        "x_echo": ctx.headers.get("x-echo"),
    }


def introspect(ctx, args, query, body):
    value = ctx
    for part in query["attr"].split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part)
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, (dict, list, str, int, float, bool, type(None))):
        value = str(value)
    return {"attr": query["attr"], "value": value}


def _coerce(value):
    kind, _, raw = value.partition(":")
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "bool":
        return raw == "true"
    if kind == "none":
        return None
    return value


def find_tasks(ctx, args, query, body):
    fields = {k: _coerce(v) for k, v in query.items()}
    rows = ctx.find("tasks", **fields)
    return {"keys": [ctx.key_of("tasks", r) for r in rows], "count": len(rows)}


def env_default(ctx, args, query, body):
    return ctx.envelope(ctx.rows("tasks"), query)


def env_named(ctx, args, query, body):
    return ctx.envelope(ctx.rows("tasks"), query, envelope=query.get("as", "data"))


def env_no_query(ctx, args, query, body):
    return ctx.envelope(ctx.rows("tasks"))


def paged(ctx, args, query, body):
    rows = [r for r in ctx.rows("tasks") if r["status"] == query.get("status", r["status"])]
    return ctx.paged(rows, query, status=int(query.get("code", "206")))


def paged_bare(ctx, args, query, body):
    return ctx.paged(ctx.rows("tasks"), query, envelope="")


def invalid_with(ctx, args, query, body):
    return ctx.invalid("priority must be positive")


def invalid_without(ctx, args, query, body):
    return ctx.invalid()


def missing(ctx, args, query, body):
    return ctx.not_found()


def form(ctx, args, query, body):
    kind = args["kind"]
    forms = {
        "dict": {"a": 1, "nested": {"b": [1, 2.5, None, True]}},
        "list": [1, "two", {"three": 3}],
        "string": "plain string",
        "number": 42,
        "float": 1.5,
        "true": True,
        "empty-dict": {},
        "empty-list": [],
        "unicode": {"名前": "ü ✓", "emoji": "\U0001F600"},
        "t2": (201, {"created": True}),
        "t3": (202, {"accepted": True}, {"X-Job": "j-1", "Location": "/jobs/j-1"}),
        "t3none": (200, {"headers": None}, None),
        "created-none": (201, None),
        "ok-none": (200, None, {"X-Empty": "yes"}),
        "nocontent-body": (204, {"ignored": True}),
        "bool-status": (True, {"x": 1}),
        "long-tuple": (200, {"x": 1}, {}, "extra"),
        "one-tuple": (200,),
        "err500": (500, {"error": "boom"}),
        "err404": (404, {"error": "custom missing"}, {"X-Why": "gone"}),
        "redirect": (302, {"to": "/elsewhere"}, {"Location": "/elsewhere"}),
        "csv": (200, "a,b\n1,2\n", {"Content-Type": "text/csv"}),
        "bad-headers": (200, {"x": 1}, ["X-Nope"]),
        "int-header": (200, {"x": 1}, {"X-Int": 1}),
    }
    if kind == "none":
        return None
    if kind not in forms:
        return ctx.not_found()
    return forms[kind]


def counter(ctx, args, query, body):
    CALLS["n"] += 1
    return {"calls": CALLS["n"]}


def close_task(ctx, args, query, body):
    row = ctx.get("tasks", {"id": args["id"]})
    if row is None:
        return ctx.not_found()
    if row["status"] == "done":
        return ctx.invalid("already closed")
    updated = ctx.update("tasks", ctx.key_of("tasks", row), {"status": "done", "done": True})
    return 200, updated, {"X-Closed": row["id"]}


def add_task(ctx, args, query, body):
    row = {"id": body.get("id") or ctx.uuid(), "title": body.get("title"), "status": "open"}
    return 201, ctx.insert("tasks", row)


def remove_task(ctx, args, query, body):
    rows = ctx.find("tasks", id=args["id"])
    if not rows:
        return ctx.not_found()
    ctx.delete("tasks", ctx.key_of("tasks", rows[0]))
    return 204, None


def bad_key(ctx, args, query, body):
    return ctx.get("tasks", {"nope": 1})


def update_missing(ctx, args, query, body):
    return ctx.update("tasks", {"id": "zz"}, {"title": "x"})


def clock(ctx, args, query, body):
    return {
        "now": ctx.now(),
        "clock": ctx.clock(),
        "elapsed": ctx.elapsed("2025-12-31T23:59:00Z"),
        "ladder": ctx.ladder("2025-12-31T23:59:50Z", [(0, "queued"), (5, "started"), (20, "completed")]),
        "ladder_none": ctx.ladder(None, [(0, "queued")], before="drafted"),
    }


def never(ctx, args, query, body):
    return ctx.elapsed(None)
