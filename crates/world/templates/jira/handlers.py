"""Jira world tools; every mutation goes through the schema store."""

from gateway_env import store, tool


@tool(name="search_issues")
def search_issues(project_key, status=None):
    issues = [i for i in store.list("jira_issues") if i["project_key"] == project_key]
    return [i for i in issues if status is None or i["status"] == status]


@tool(name="transition_issue")
def transition_issue(transition):
    issue = store.get("jira_issues", {"key": transition["issue_key"]})
    if issue is None or issue["status"] != transition["from_status"]:
        raise ValueError("invalid_transition: the issue is not in from_status")
    store.insert("jira_transitions", transition, source={"record": "tool.transition_issue"})
    return store.update(
        "jira_issues",
        {"key": transition["issue_key"]},
        {"status": transition["to_status"]},
        source={"record": "tool.transition_issue"},
    )


@tool(name="add_comment")
def add_comment(comment):
    return store.insert("jira_comments", comment, source={"record": "tool.add_comment"})
