"""Kandji (Iru) world tools; every mutation goes through the schema store.

Error strings are the vendor's own. The Iru Endpoint Management API documents a
single 404 body for a resource that is not in the tenant, and the device PATCH
endpoint (the operation ``assign_blueprint`` mirrors) declares no narrower code.
"""

from gateway_env import store, tool

NOT_FOUND = "Unable to locate the resource in the Iru tenant."


@tool(name="list_devices")
def list_devices(blueprint_id=None):
    devices = store.list("kandji_devices")
    if blueprint_id is None:
        return devices
    return [d for d in devices if d["blueprint_id"] == blueprint_id]


@tool(name="get_device")
def get_device(device_id):
    return store.get("kandji_devices", {"device_id": device_id})


@tool(name="assign_blueprint")
def assign_blueprint(device_id, blueprint_id):
    if store.get("kandji_devices", {"device_id": device_id}) is None:
        raise ValueError(NOT_FOUND)
    blueprint = store.get("kandji_blueprints", {"id": blueprint_id})
    if blueprint is None:
        raise ValueError(NOT_FOUND)
    return store.update(
        "kandji_devices",
        {"device_id": device_id},
        {"blueprint_id": blueprint_id, "blueprint_name": blueprint["name"]},
        source={"record": "tool.assign_blueprint"},
    )
