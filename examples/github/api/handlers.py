"""GitHub's issue search (`GET /search/issues?q=`): the query language is GitHub's
logic, so it is Python; everything else of this world is declared in connector.toml.

`q` holds words (each must appear in the title or body, case-insensitively) and
qualifiers: `repo:OWNER/NAME`, `is:open|closed|issue`, `state:open|closed`,
`label:NAME`, `author:LOGIN`, `in:title|body`. Results are newest first (or by
`sort=created|updated|comments` and `order=asc|desc`), paged as every list is.
"""

import shlex


def _terms(q):
    try:
        return shlex.split(q)
    except ValueError:  # an unbalanced quote: split on spaces
        return q.split()


def search_issues(ctx, args, query, body):
    q = (query.get("q") or "").strip()
    if not q:
        return 422, {"message": "Validation Failed", "errors": [{"resource": "Search", "field": "q", "code": "missing"}],
                     "documentation_url": "https://docs.github.com/rest/search/search#search-issues-and-pull-requests", "status": "422"}
    repos = {row["id"]: row for row in ctx.rows("repositories")}
    words, scope = [], ("title", "body")
    wanted = {}
    for term in _terms(q):
        key, sep, value = term.partition(":")
        if sep and key in ("repo", "is", "state", "label", "author", "in"):
            wanted.setdefault(key, []).append(value.lower())
        else:
            words.append(term.lower())
    if "in" in wanted:
        scope = tuple(field for field in ("title", "body") if field in wanted["in"]) or scope

    def keep(issue):
        repo = repos.get(issue["repository_id"], {})
        if "repo" in wanted and repo.get("full_name", "").lower() not in wanted["repo"]:
            return False
        states = [v for v in wanted.get("is", []) + wanted.get("state", []) if v in ("open", "closed")]
        if states and issue["state"] not in states:
            return False
        labels = {label["name"].lower() for label in issue.get("labels") or []}
        if any(label not in labels for label in wanted.get("label", [])):
            return False
        if "author" in wanted and issue["user"]["login"].lower() not in wanted["author"]:
            return False
        text = " ".join((issue.get(field) or "") for field in scope).lower()
        return all(word in text for word in words)

    field = {"created": "created_at", "updated": "updated_at", "comments": "comments"}.get(query.get("sort") or "", "created_at")
    found = sorted((issue for issue in ctx.rows("issues") if keep(issue)), key=lambda i: i[field], reverse=query.get("order") != "asc")
    status, page, headers = ctx.paged(found, query, envelope="items")
    for item in page["items"]:
        item["score"] = 1.0
        if item.get("body") is None:  # a search result's body is text or absent
            item.pop("body", None)
    page["incomplete_results"] = False
    page["search_type"] = "lexical"
    page.pop("cursor", None)
    return status, page, headers
