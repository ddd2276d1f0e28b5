"""Google Calendar world tools; every mutation goes through the schema store."""

from gateway_env import store, tool


@tool(name="list_events")
def list_events(calendar_id):
    return [e for e in store.list("calendar_events") if e["calendar_id"] == calendar_id]


@tool(name="create_event")
def create_event(event):
    return store.insert("calendar_events", event, source={"record": "tool.create_event"})


@tool(name="cancel_event")
def cancel_event(calendar_id, id):
    return store.update(
        "calendar_events",
        {"calendar_id": calendar_id, "id": id},
        {"status": "cancelled"},
        source={"record": "tool.cancel_event"},
    )
