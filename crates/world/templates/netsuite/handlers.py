"""NetSuite world tools; every mutation goes through the schema store.

Failures carry the REST web services error codes NetSuite documents for the
same conditions (section_156570709583: "Error Handling in REST Web Services").
"""

from gateway_env import store, tool


@tool(name="get_customer")
def get_customer(id):
    customer = store.get("netsuite_customers", {"id": id})
    if customer is None:
        raise ValueError("NONEXISTENT_ID: Record does not exist.")
    return customer


@tool(name="list_sales_orders")
def list_sales_orders(entity=None):
    orders = store.list("netsuite_sales_orders")
    return [order for order in orders if entity is None or order.get("entity", {}).get("id") == entity]


@tool(name="create_sales_order")
def create_sales_order(order):
    entity_id = order.get("entity", {}).get("id")
    if entity_id is None or store.get("netsuite_customers", {"id": entity_id}) is None:
        raise ValueError(
            "INVALID_CONTENT: Error while accessing resource: You have entered an "
            f"Invalid Field Value {entity_id} for the following field: entity"
        )
    return store.insert("netsuite_sales_orders", order, source={"record": "tool.create_sales_order"})
