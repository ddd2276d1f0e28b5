"""Tool handlers of the custom world: one function per tool in schema/world.json.

Every call runs inside one store transaction; the store validates each row against
the contract, so a handler only decides *what* to read or write.
"""

from gateway_env import store


def list_records(kind):
    return [record for record in store.list("records") if record["kind"] == kind]


def get_record(id):
    return store.get("records", {"id": id})


def create_record(record):
    return store.insert("records", record)
