#!/usr/bin/env python3
"""`connector conform` against GitHub's published OpenAPI (13 MB), ours and the original.

    cd /tmp && npm pack @octokit/openapi && tar xzf octokit-openapi-*.tgz
    scripts/bench_conform.py --openapi /tmp/package/generated/api.github.com.json \\
        --ours target/release/gateway --ref ~/.cache/gateway-reference/bin/gateway --runs 5

Builds a small GitHub-shaped world with our binary (`schema init`, `schema entity add`
for users / repos / issues / comments, a connector.toml of nine GitHub routes: nested
`/repos/{owner}/{repo}/issues/{issue_number}/comments`, a create, `/search/issues` with
its required `q`), seeds it with `data import`, compiles it, then runs each binary's
`worlds connector conform WORLD --openapi DOC` RUNS times under `/usr/bin/time -v`
(a fresh copy of the world each run: conform writes through the served world).
Prints the median and range of wall time and of max RSS, and each binary's summary
line and exit status (they differ: ours checks more). Process start-up is included.
Then ours alone on examples/github (declared nesting and paging the original refuses:
`api.page must be one of none, offset, cursor`).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CONNECTOR = """[connector]
slug = "ghlite"
base_url = "https://api.github.com"

[auth]
scheme = "bearer"
secret_env = "GITHUB_TOKEN"

[api]
page = "offset"
limit_param = "per_page"
offset_param = "offset"
page_size = 30
not_found = '{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}'
unauthorized = '{"message": "Requires authentication", "documentation_url": "https://docs.github.com/rest", "status": "401"}'

[[operations]]
name = "get_user"
path = "/users/{username}"
entity = "users"
[operations.api]
filter = { username = "login" }
single = true

[[operations]]
name = "list_user_repos"
path = "/users/{username}/repos"
entity = "repos"
params = ["per_page"]
[operations.api]
filter = { username = "owner_login" }

[[operations]]
name = "get_repo"
path = "/repos/{owner}/{repo}"
entity = "repos"
[operations.api]
filter = { owner = "owner_login", repo = "name" }
single = true

[[operations]]
name = "list_issues"
path = "/repos/{owner}/{repo}/issues"
entity = "issues"
params = ["state", "per_page"]
[operations.api]
filter = { owner = "repo_owner", repo = "repo_name", state = "state" }

[[operations]]
name = "get_issue"
path = "/repos/{owner}/{repo}/issues/{issue_number}"
entity = "issues"
[operations.api]
filter = { owner = "repo_owner", repo = "repo_name", issue_number = "number" }
single = true

[[operations]]
name = "create_issue"
method = "POST"
path = "/repos/{owner}/{repo}/issues"
entity = "issues"
[operations.api]
action = "create"
defaults = { state = "open", repo_id = 1, repo_owner = "octo", repo_name = "hello", user_login = "octo", number = 999 }
generate = { id = "int" }

[[operations]]
name = "list_comments"
path = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
entity = "comments"
params = ["per_page"]
[operations.api]
filter = { issue_number = "issue_number" }

[[operations]]
name = "search_issues"
path = "/search/issues"
entity = "issues"
params = ["q"]
[operations.api]
filter = { q = "title" }
match = { q = "contains" }

[[operations]]
name = "list_org_repos"
path = "/orgs/{org}/repos"
entity = "repos"
params = ["per_page"]
[operations.api]
filter = { org = "owner_login" }
"""

ENTITIES = [
    ("users", "id:integer,login:string,type:string", "id", []),
    ("repos", "id:integer,name:string,full_name:string,owner_login:string,owner_id:integer,private:boolean", "id",
     ["owner_id->users"]),
    ("issues", "id:integer,number:integer,title:string,state:string,repo_id:integer,repo_owner:string,"
     "repo_name:string,user_login:string,body:string?", "id", ["repo_id->repos"]),
    ("comments", "id:integer,issue_number:integer,repo_id:integer,body:string,user_login:string", "id",
     ["repo_id->repos"]),
]


def rows() -> dict:
    users = [{"id": i, "login": f"user{i}", "type": "User"} for i in range(1, 6)]
    repos = [{"id": r, "name": f"repo{r}", "full_name": f"user{(r - 1) % 5 + 1}/repo{r}",
              "owner_login": f"user{(r - 1) % 5 + 1}", "owner_id": (r - 1) % 5 + 1, "private": False}
             for r in range(1, 11)]
    issues, comments = [], []
    for n in range(1, 101):
        repo = repos[(n - 1) % 10]
        issues.append({"id": 1000 + n, "number": n, "title": f"Issue {n} needs a look", "state": "open",
                       "repo_id": repo["id"], "repo_owner": repo["owner_login"], "repo_name": repo["name"],
                       "user_login": repo["owner_login"], "body": "It breaks."})
        comments.append({"id": 5000 + n, "issue_number": n, "repo_id": repo["id"], "body": "Seen it too.",
                         "user_login": "user1"})
    return {"users": users, "repos": repos, "issues": issues, "comments": comments}


def build_world(ours: str, work: Path) -> Path:
    world = work / "ghlite"
    run = lambda *argv: subprocess.run([ours, "worlds", *argv], check=True, capture_output=True, text=True)  # noqa: E731
    run("schema", "init", str(world), "--name", "ghlite")
    for name, fields, key, relationships in ENTITIES:
        extra = [a for r in relationships for a in ("--relationship", r)]
        run("schema", "entity", "add", str(world), name, "--fields", fields, "--key", key, *extra)
    (world / "connector.toml").write_text(CONNECTOR)
    data = work / "rows.json"
    data.write_text(json.dumps(rows()))
    run("data", "import", str(world), str(data))
    run("schema", "compile", str(world))
    return world


def measure(binary: str, world: Path, openapi: str, work: Path, index: int) -> tuple[float, int, int, str]:
    copy = work / f"run-{index}"
    shutil.copytree(world, copy)
    argv = ["/usr/bin/time", "-v", binary, "worlds", "connector", "conform", str(copy), "--openapi", openapi]
    done = subprocess.run(argv, capture_output=True, text=True)
    shutil.rmtree(copy)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    seconds = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    summary = next((line for line in done.stdout.splitlines() if line.startswith('{"operations"')), "")
    status = int(re.search(r"Exit status: (\d+)", done.stderr).group(1))
    return seconds, rss, status, summary


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--openapi", required=True, help="api.github.com.json from @octokit/openapi")
    parser.add_argument("--ours", required=True)
    parser.add_argument("--ref", help="the original's gateway CLI")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the world (its path is printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-conform-"))
    world = build_world(args.ours, work)
    binaries = [("ours", args.ours)] + ([("original", args.ref)] if args.ref else [])
    print(f"world: {world}  document: {args.openapi}")
    print("| binary | wall median (range) | max RSS median (range) | exit | summary |")
    print("| --- | ---: | ---: | ---: | --- |")
    for label, binary in binaries:
        results = [measure(binary, world, args.openapi, work, i) for i in range(args.runs)]
        walls = [r[0] for r in results]
        rss = [r[1] / 1024 for r in results]
        print(f"| {label} | {statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f}) "
              f"| {statistics.median(rss):.0f} MiB ({min(rss):.0f}–{max(rss):.0f}) | {results[0][2]} | `{results[0][3]}` |")
    example = work / "github"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "github", example)
    results = [measure(args.ours, example, args.openapi, work, i) for i in range(args.runs)]
    walls = [r[0] for r in results]
    rss = [r[1] / 1024 for r in results]
    print(f"| ours, examples/github | {statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f}) "
          f"| {statistics.median(rss):.0f} MiB ({min(rss):.0f}–{max(rss):.0f}) | {results[0][2]} | `{results[0][3]}` |")
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
