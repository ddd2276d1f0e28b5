"""Google Drive world tools; every mutation goes through the schema store."""

from gateway_env import store, tool


@tool(name="list_files")
def list_files(folder_id=None):
    return [f for f in store.list("drive_files") if f.get("folder_id") == folder_id]


@tool(name="get_file")
def get_file(id):
    return store.get("drive_files", {"id": id})


@tool(name="share_file")
def share_file(permission):
    return store.insert("drive_permissions", permission, source={"record": "tool.share_file"})
