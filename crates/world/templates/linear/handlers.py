"""Linear world tools; every mutation goes through the schema store."""

from gateway_env import store, tool


@tool(name="list_issues")
def list_issues(team_id):
    return [i for i in store.list("linear_issues") if i["team_id"] == team_id]


@tool(name="create_issue")
def create_issue(issue):
    return store.insert("linear_issues", issue, source={"record": "tool.create_issue"})


@tool(name="set_state")
def set_state(id, state):
    return store.update(
        "linear_issues", {"id": id}, {"state": state}, source={"record": "tool.set_state"}
    )
