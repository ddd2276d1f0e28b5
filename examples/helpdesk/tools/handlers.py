"""Helpdesk tools: read and solve tickets through the contract-checked store."""

from gateway_env import store


def list_tickets(status):
    return [ticket for ticket in store.list("tickets") if ticket["status"] == status]


def get_ticket(id):
    return store.get("tickets", {"id": id})


def solve_ticket(id):
    return store.update("tickets", {"id": id}, {"status": "solved"})
