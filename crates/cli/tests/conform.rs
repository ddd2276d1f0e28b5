//! `gateway worlds connector conform` on what the original passed without looking
//! (issue 26 item 8): a run that checks nothing, a required query parameter the world
//! ignores, a documented `Link` header the world never sends on a page with a next
//! (and one that does), a required header missing, a documented 404 whose body is
//! not the vendor's, a sub-resource route called with its parent's real keys, and a
//! path argument no row resolves. The world is built here with our own commands, the
//! vendor's document is `fixtures/conform/octo.openapi.json` (GitHub-shaped, by hand).
//! (`tests/connector.rs` keeps the original's recorded conform output in parity.)

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn gateway(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `worlds connector conform ROOT --openapi DOCUMENT --out REPORT`.
fn conform(root: &Path, document: &Path, report: &Path) -> Output {
    let [root, document, report] = [root, document, report].map(|path| path.to_str().unwrap());
    gateway(&["worlds", "connector", "conform", root, "--openapi", document, "--out", report])
}

fn document() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conform/octo.openapi.json")
}

const CONNECTOR: &str = r#"[connector]
slug = "octo"
base_url = "https://api.octo.test"

[auth]
scheme = "bearer"
secret_env = "OCTO_TOKEN"

[api]
page = "offset"
limit_param = "per_page"
page_size = 30
page_headers = { total = "X-Total-Count" }
not_found = '{"message": "Not Found"}'
unauthorized = '{"message": "Requires authentication", "documentation_url": "https://docs.octo.test/rest"}'

[[operations]]
name = "get_repo"
path = "/repos/{owner}/{repo}"
entity = "repos"
[operations.api]
filter = { owner = "owner", repo = "name" }
single = true

# Pages by per_page, but never sends Link: the vendor's SDK would stop after page one.
[[operations]]
name = "list_issues"
path = "/repos/{owner}/{repo}/issues"
entity = "issues"
params = ["per_page"]
[operations.api]
filter = { owner = "owner", repo = "repo" }

[[operations]]
name = "get_issue"
path = "/repos/{owner}/{repo}/issues/{issue_number}"
entity = "issues"
[operations.api]
filter = { owner = "owner", repo = "repo", issue_number = "number" }
single = true

# Filters on the issue only: owner and repo come from the comment's repository.
[[operations]]
name = "list_comments"
path = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
entity = "comments"
[operations.api]
filter = { issue_number = "issue_number" }

# Declares no q: the vendor requires it.
[[operations]]
name = "search_issues"
path = "/search/issues"
entity = "issues"

[[operations]]
name = "list_my_repos"
path = "/user/repos"
entity = "repos"
params = ["per_page"]
[operations.api]
action = "handler"
handler = "my_repos"

# Nothing in the world says what a team is.
[[operations]]
name = "get_team_repo"
path = "/teams/{team_slug}/repos/{repo_id}"
entity = "repos"
[operations.api]
filter = { repo_id = "id" }
single = true
"#;

const HANDLERS: &str = r#"
def my_repos(ctx, args, query, body):
    rows = ctx.rows("repos")
    size = int(query.get("per_page") or 30)
    headers = {}
    if len(rows) > size:
        headers["Link"] = '<https://api.octo.test/user/repos?per_page=%d&page=2>; rel="next"' % size
    return 200, rows[:size], headers
"#;

/// The first issue has no `repo`: the original read `{owner}` from it and `{repo}`
/// from the next one, a pair no issue has. The first comment belongs to the second
/// repository, not the first.
const ROWS: &str = r#"{
 "repos": [{"id": 1, "owner": "octo", "name": "alpha"}, {"id": 2, "owner": "hubot", "name": "beta"}],
 "issues": [
  {"id": 101, "number": 1, "repo_id": 1, "owner": "octo", "title": "First", "state": "open"},
  {"id": 102, "number": 2, "repo_id": 2, "owner": "hubot", "repo": "beta", "title": "Second", "state": "open"},
  {"id": 103, "number": 3, "repo_id": 2, "owner": "hubot", "repo": "beta", "title": "Third", "state": "closed"}
 ],
 "comments": [{"id": 501, "issue_number": 2, "repo_id": 2, "body": "Seen it too"}]
}"#;

fn run(args: &[&str]) {
    let out = gateway(args);
    assert!(out.status.success(), "{args:?}: {}{}", stdout(&out), stderr(&out));
}

/// The world: three entities declared with `schema entity add`, the rows imported.
fn world(dir: &Path) -> PathBuf {
    let root = dir.join("octo");
    let path = root.to_str().unwrap();
    run(&["worlds", "schema", "init", path, "--name", "octo"]);
    run(&["worlds", "schema", "entity", "add", path, "repos", "--fields", "id:integer,owner:string,name:string", "--key", "id"]);
    let issue = "id:integer,number:integer,repo_id:integer,owner:string,repo:string?,title:string,state:string";
    run(&["worlds", "schema", "entity", "add", path, "issues", "--fields", issue, "--key", "id", "--relationship", "repo_id->repos"]);
    let comment = "id:integer,issue_number:integer,repo_id:integer,body:string";
    run(&["worlds", "schema", "entity", "add", path, "comments", "--fields", comment, "--key", "id", "--relationship", "repo_id->repos"]);
    std::fs::write(root.join("connector.toml"), CONNECTOR).unwrap();
    std::fs::create_dir_all(root.join("api")).unwrap();
    std::fs::write(root.join("api/handlers.py"), HANDLERS).unwrap();
    let rows = dir.join("rows.json");
    std::fs::write(&rows, ROWS).unwrap();
    run(&["worlds", "data", "import", path, rows.to_str().unwrap()]);
    run(&["worlds", "schema", "compile", path]);
    root
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"].as_array().unwrap().iter().find(|o| o["operation"] == name).unwrap_or_else(|| panic!("no {name}"))
}

/// The check of `kind` on `name` of one operation.
fn check<'a>(report: &'a Value, op: &str, kind: &str, name: &str) -> &'a Value {
    let found = operation(report, op)["checks"].as_array().unwrap().iter().find(|c| c["check"] == kind && c["name"] == name);
    found.unwrap_or_else(|| panic!("{op} has no {kind} check on {name}: {}", operation(report, op)))
}

fn result<'a>(report: &'a Value, op: &str, kind: &str, name: &str) -> (&'a str, &'a str) {
    let found = check(report, op, kind, name);
    (found["result"].as_str().unwrap(), found["detail"].as_str().unwrap())
}

#[test]
fn conform_checks_what_the_original_passed() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let out_path = dir.path().join("report.json");
    let out = conform(&root, &document(), &out_path);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(
        report["summary"],
        serde_json::json!({"operations": 7, "documented": 7, "conforming": 3, "status_mismatch": 0, "schema_violations": 0,
            "undocumented": 0, "check_failures": 5}),
        "{text}"
    );
    assert_eq!(report["failures"], serde_json::json!([]));

    // Sub-resource routes are called with one row's keys, and a parent's: the issue
    // that has both owner and repo; the repository the comment belongs to.
    assert_eq!(operation(&report, "get_issue")["request"]["url"], "/repos/hubot/beta/issues/2");
    assert_eq!(operation(&report, "get_issue")["status"], 200);
    assert_eq!(operation(&report, "list_issues")["request"]["url"], "/repos/hubot/beta/issues");
    let comments = operation(&report, "list_comments");
    assert_eq!(comments["request"]["url"], "/repos/hubot/beta/issues/2/comments");
    assert_eq!(comments["status"], 200);
    let (verdict, detail) = result(&report, "list_comments", "path", "owner");
    assert_eq!((verdict, detail), ("ok", "{owner} = repos.owner of repos row id=2, the parent of comments row id=501"));
    assert_eq!(result(&report, "get_issue", "path", "repo"), ("ok", "{repo} = issues.repo of issues row id=102"));
    assert!(text.contains("  ok  GET    /repos/{owner}/{repo}/issues/{issue_number}/comments "), "{text}");

    // A placeholder no row resolves is a failure, not a pass.
    let (verdict, detail) = result(&report, "get_team_repo", "path", "team_slug");
    assert_eq!(verdict, "fail");
    assert!(detail.starts_with("{team_slug} resolves from no row of the world"), "{detail}");
    assert_eq!(result(&report, "get_team_repo", "path", "repo_id").0, "ok");
    assert!(text.contains(" FAIL GET    /teams/{team_slug}/repos/{repo_id}"), "{text}");

    // The required query parameter is sent; the world's route does not declare it.
    assert_eq!(operation(&report, "search_issues")["request"]["query"]["q"], "First");
    let (verdict, detail) = result(&report, "search_issues", "query", "q");
    assert_eq!((verdict, detail), ("fail", "required query parameter q is not among the route's params (none): the world ignores it"));
    assert!(text.contains("search_issues  required query parameter q is not among the route's params"), "{text}");

    // Link on a page with a next: missing from the world's own paging, there from the handler's.
    let (verdict, detail) = result(&report, "list_issues", "header", "Link");
    assert_eq!((verdict, detail), ("fail", "no Link header on a page of per_page=1 with more rows to come; the vendor documents it"));
    assert_eq!(check(&report, "list_issues", "header", "Link")["request"]["url"], "/repos/hubot/beta/issues?per_page=1");
    assert_eq!(result(&report, "list_issues", "header", "X-Total-Count").0, "ok");
    assert_eq!(result(&report, "list_my_repos", "header", "Link"), ("ok", "Link with rel=\"next\" on a page of per_page=1"));

    // A required header missing; the documented error answers provoked.
    assert_eq!(result(&report, "get_issue", "header", "ETag"), ("fail", "no ETag header; the vendor documents it as required"));
    assert_eq!(result(&report, "get_issue", "error", "401"), ("ok", "without credentials, the route answered 401 as documented"));
    let (verdict, detail) = result(&report, "get_issue", "error", "404");
    assert_eq!(verdict, "fail");
    assert_eq!(
        detail,
        "with a missing {issue_number} (\"987654321\"), the route answered 404 with a body the vendor does not document: \
         $.documentation_url: required by the vendor, missing"
    );
    assert_eq!(check(&report, "get_issue", "error", "404")["request"]["url"], "/repos/hubot/beta/issues/987654321");
    assert_eq!(result(&report, "get_repo", "path", "repo").0, "ok");
    assert!(text.contains(r#""undocumented": 0, "check_failures": 5}"#), "{text}");
}

#[test]
fn a_run_that_checks_nothing_fails() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let path = root.to_str().unwrap();
    // A document describing none of the world's operations: the original exits 0.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/elsewhere": {"get": {"responses": {}}}}}"#,
    )
    .unwrap();
    let out = gateway(&["worlds", "connector", "conform", path, "--openapi", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains(r#""documented": 0, "conforming": 0"#), "{}", stdout(&out));
    assert_eq!(
        stderr(&out).lines().last().unwrap(),
        format!(
            "Error: nothing was checked: none of the world's 7 operations (get_repo, list_issues, get_issue, list_comments, \
             search_issues, list_my_repos, get_team_repo) is documented in {}",
            other.display()
        )
    );
    // --limit 0 checks nothing either.
    let out = gateway(&["worlds", "connector", "conform", path, "--openapi", document().to_str().unwrap(), "--limit", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("Error: nothing was checked: no operation of the world was run against"), "{}", stderr(&out));
}

/// A world declared nested (`api.parent`, examples/github) is read up its chain: the
/// comments route gets the comment's issue's number and that issue's repository's
/// owner and name; a missing parent answers the documented 404, and the world's
/// page/per_page paging sends the `Link` the vendor documents.
#[test]
fn nested_routes_are_called_up_their_parent_chain() {
    let dir = tempfile::tempdir().unwrap();
    let root = gateway_test_support::copy_example("github", &dir.path().join("github"));
    let out_path = dir.path().join("report.json");
    let doc = document();
    let out = conform(&root, &doc, &out_path);
    let text = stdout(&out);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let comments = operation(&report, "list_issue_comments");
    assert_eq!(comments["request"]["url"], "/repos/octocat/hello-world/issues/1/comments", "{text}");
    assert_eq!(comments["status"], 200);
    assert_eq!(
        result(&report, "list_issue_comments", "path", "owner"),
        ("ok", "{owner} = repositories.owner.login of repositories row id=100, up api.parent from issue_comments row id=9001")
    );
    assert_eq!(
        result(&report, "list_issue_comments", "path", "number"),
        ("ok", "{number} = issues.number of issues row id=5001, up api.parent from issue_comments row id=9001")
    );
    assert_eq!(result(&report, "list_issues", "header", "Link"), ("ok", "Link with rel=\"next\" on a page of per_page=1"));
    let (verdict, detail) = result(&report, "get_issue", "error", "404");
    assert_eq!((verdict, detail), ("ok", "with a missing {number} (\"987654321\"), the route answered 404 as documented"));
    assert!(text.contains("  ok  GET    /repos/{owner}/{repo}/issues/{number}/comments "), "{text}");
}
