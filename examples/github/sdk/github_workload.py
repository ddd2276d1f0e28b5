"""The official PyGithub client against a served GitHub world: 15 calls an
integration makes (reads with paging and totalCount, creates, updates,
sub-resources, search, the rate limit, errors). Prints one JSON object: each
call's name and whether it did what GitHub does, and exits 1 when any did not.

    python github_workload.py http://127.0.0.1:PORT TOKEN

The same against a hub session's data plane (`.../s/<sid>` and the session's token):
the hub refuses a wrong token as the world does ("Bad credentials").
"""

import json
import sys
import traceback

from github import Auth, Github, GithubException, UnknownObjectException


def main(base_url, token):
    gh = Github(base_url=base_url, auth=Auth.Token(token), per_page=5, retry=None)
    results = []

    def check(name, call):
        try:
            detail = call()
            results.append({"call": name, "ok": True, "detail": detail})
        except Exception as error:  # noqa: BLE001 - each call's failure is reported, not raised
            results.append({"call": name, "ok": False, "error": f"{type(error).__name__}: {error}",
                            "trace": traceback.format_exc(limit=3)})

    repo = None

    def get_repo():
        nonlocal repo
        repo = gh.get_repo("octocat/hello-world")
        assert repo.full_name == "octocat/hello-world" and repo.owner.login == "octocat", repo.full_name
        assert repo.url.startswith(base_url), repo.url
        return repo.id

    def get_user():
        user = gh.get_user("hubot")
        assert user.login == "hubot" and user.name == "Hubot", user.login
        return user.id

    def list_open_issues_paged():
        issues = repo.get_issues(state="open")
        numbers = [issue.number for issue in issues]  # follows the Link header across pages
        assert len(numbers) == 9 and len(set(numbers)) == 9, numbers
        assert issues.totalCount == 9, issues.totalCount  # read from rel="last"
        return numbers

    def list_closed_issues():
        closed = [issue.number for issue in repo.get_issues(state="closed")]
        assert sorted(closed) == [4, 8, 12], closed
        everything = repo.get_issues(state="all", sort="created", direction="asc")
        assert everything.totalCount == 12, everything.totalCount
        return closed

    def get_issue():
        issue = repo.get_issue(1)
        assert issue.title == "Found a bug" and issue.user.login == "hubot", issue.title
        assert [label.name for label in issue.labels] == ["bug"], issue.labels
        return issue.number

    created = None

    def create_issue():
        nonlocal created
        created = repo.create_issue(title="Served by the world", body="Opened through PyGithub.")
        assert created.number == 13 and created.state == "open", (created.number, created.state)
        assert created.url.startswith(base_url), created.url
        return created.number

    def create_issue_in_another_repo():
        issue = gh.get_repo("octo-org/tooling").create_issue(title="Numbers count per repository")
        assert issue.number == 3, issue.number
        return issue.number

    def comment():
        made = created.create_comment("Looking into it.")
        assert made.body == "Looking into it." and made.user.login == "octocat", made.body
        return made.id

    def list_comments():
        bodies = [c.body for c in created.get_comments()]
        assert bodies == ["Looking into it."], bodies
        first = [c.body for c in repo.get_issue(1).get_comments()]
        assert first == ["I can reproduce this on main.", "Same here, on 2.4 as well."], first
        return len(bodies)

    def close_issue():
        created.edit(state="closed", state_reason="completed")  # PATCHes the issue's own url
        again = repo.get_issue(created.number)
        assert again.state == "closed", again.state
        return again.state

    def list_labels():
        names = sorted(label.name for label in repo.get_labels())
        assert names == ["bug", "enhancement", "question"], names
        return names

    def search():
        found = gh.search_issues("bug repo:octocat/hello-world is:open")
        titles = sorted(issue.title for issue in found)
        assert titles == ["Found a bug"], titles
        assert found.totalCount == 1, found.totalCount
        return titles

    def rate_limit():
        limits = gh.get_rate_limit()
        core = getattr(limits, "resources", limits).core
        assert core.limit == 5000, core.limit
        return core.remaining

    def not_found():
        try:
            repo.get_issue(999)
        except UnknownObjectException as error:
            assert error.status == 404 and error.data["message"] == "Not Found", error.data
            return 404
        raise AssertionError("issue 999 was found")

    def bad_token():
        try:
            Github(base_url=base_url, auth=Auth.Token("not-the-token"), retry=None).get_repo("octocat/hello-world").full_name
        except GithubException as error:
            assert error.status == 401, error.status
            assert error.data["message"] == "Bad credentials", error.data
            return 401
        raise AssertionError("a wrong token was accepted")

    for name, call in [
        ("get_repo", get_repo), ("get_user", get_user), ("list_open_issues_paged", list_open_issues_paged),
        ("list_closed_issues", list_closed_issues), ("get_issue", get_issue), ("create_issue", create_issue),
        ("create_issue_in_another_repo", create_issue_in_another_repo), ("comment", comment),
        ("list_comments", list_comments), ("close_issue", close_issue), ("list_labels", list_labels),
        ("search", search), ("rate_limit", rate_limit), ("not_found", not_found), ("bad_token", bad_token),
    ]:
        check(name, call)
    passed = sum(1 for r in results if r["ok"])
    print(json.dumps({"sdk": "PyGithub", "calls": len(results), "passed": passed, "results": results}, indent=1))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
