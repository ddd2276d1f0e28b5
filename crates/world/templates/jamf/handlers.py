"""Jamf Pro world tools; every mutation goes through the schema store.

Errors carry the status and description the pinned Jamf Pro API spec documents
for the endpoint each tool mirrors, in the shape of ``ApiError``'s single cause.
Jamf does not publish the ``code`` values, so none is invented here.
"""

from gateway_env import store, tool


@tool(name="list_computers")
def list_computers():
    return store.list("jamf_computers")


@tool(name="get_computer")
def get_computer(id):
    computer = store.get("jamf_computers", {"id": id})
    if computer is None:
        raise ValueError("404: Specified computer object does not exist.")
    return computer


@tool(name="list_policies")
def list_policies():
    return store.list("jamf_policies")


@tool(name="create_computer_group")
def create_computer_group(group):
    taken = any(g["name"] == group["name"] for g in store.list("jamf_computer_groups"))
    if taken:
        raise ValueError("422: Duplicate group name.")
    return store.insert("jamf_computer_groups", group, source={"record": "tool.create_computer_group"})
