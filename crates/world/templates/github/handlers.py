"""GitHub world tools; every mutation goes through the schema store.

Errors mirror the REST error body
``{"message", "documentation_url", "errors": [{"resource", "field", "code"}]}``:
404 carries the message ``Not Found``, 422 carries ``Validation Failed`` plus the
resource/field/code triple. An operation the world does not model raises
``not_modelled`` with the vendor route rather than fabricating a response.
"""

from gateway_env import store, tool

ISSUES = "https://docs.github.com/rest/issues/issues"
LABELS = "https://docs.github.com/rest/issues/labels"
PULLS = "https://docs.github.com/rest/pulls/pulls"


def _not_found(documentation_url):
    raise ValueError(f"Not Found ({documentation_url})")


def _validation_failed(resource, field, code, documentation_url):
    raise ValueError(f"Validation Failed: {resource}.{field} {code} ({documentation_url})")


def _repository(repo_id, documentation_url):
    repository = store.get("github_repositories", {"id": repo_id})
    if repository is None:
        _not_found(documentation_url)
    return repository


@tool(name="list_issues")
def list_issues(repo_id, state=None):
    _repository(repo_id, f"{ISSUES}#list-repository-issues")
    issues = [i for i in store.list("github_issues") if i["repo_id"] == repo_id]
    return [i for i in issues if state is None or i["state"] == state]


@tool(name="get_pull_request")
def get_pull_request(repo_id, number):
    pull = store.get("github_pull_requests", {"repo_id": repo_id, "number": number})
    if pull is None:
        _not_found(f"{PULLS}#get-a-pull-request")
    return pull


@tool(name="create_issue")
def create_issue(issue):
    _repository(issue["repo_id"], f"{ISSUES}#create-an-issue")
    key = {"repo_id": issue["repo_id"], "number": issue["number"]}
    if store.get("github_issues", key) is not None:
        _validation_failed("Issue", "number", "already_exists", f"{ISSUES}#create-an-issue")
    return store.insert("github_issues", issue, source={"record": "tool.create_issue"})


@tool(name="add_label")
def add_label(repo_id, number, name):
    key = {"repo_id": repo_id, "number": number}
    issue = store.get("github_issues", key)
    if issue is None:
        _not_found(f"{LABELS}#add-labels-to-an-issue")
    label = store.get("github_labels", {"repo_id": repo_id, "name": name})
    if label is None:
        raise ValueError(
            "not_modelled: POST /repos/{owner}/{repo}/issues/{issue_number}/labels "
            "creates an unknown label with a colour the server assigns"
        )
    if any(
        existing == name or (isinstance(existing, dict) and existing.get("name") == name)
        for existing in issue["labels"]
    ):
        return issue
    # Issue responses use embedded vendor label objects. repo_id is route context,
    # not part of components/schemas/label, so do not leak the entity projection.
    embedded_label = {field: value for field, value in label.items() if field != "repo_id"}
    return store.update(
        "github_issues",
        key,
        {"labels": [*issue["labels"], embedded_label]},
        source={"record": "tool.add_label"},
    )
