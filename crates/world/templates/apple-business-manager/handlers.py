"""Read-only tools over Apple Business Manager organization devices.

The depth template intentionally ships no production-write mimic because Apple
offers no sandbox; all broad entities are available through ``gateway_env.store``.
"""

from gateway_env import store, tool


@tool(name="list_org_devices")
def list_org_devices():
    return store.list("abm_org_devices")


@tool(name="get_org_device")
def get_org_device(id):
    return store.get("abm_org_devices", {"id": id})
