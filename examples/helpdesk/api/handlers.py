"""Helpdesk API logic: solving a ticket, and the queue's statistics."""


def solve_ticket(ctx, args, query, body):
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    digits = args["id"].isascii() and args["id"].isdigit()
    ticket = ctx.get("tickets", {"id": int(args["id"])}) if digits else None
    if ticket is None:
        return ctx.not_found()
    if ticket["status"] == "solved":
        return ctx.invalid("ticket is already solved")
    return ctx.update("tickets", {"id": ticket["id"]}, {"status": "solved"})


def ticket_stats(ctx, args, query, body):
    counts = {"open": 0, "pending": 0, "solved": 0}
    for ticket in ctx.rows("tickets"):
        counts[ticket["status"]] += 1
    return {"counts": counts, "total": sum(counts.values()), "at": ctx.now()}
