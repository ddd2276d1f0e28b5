//! Composite relationships (issue 26 item 7): a comment belongs to an issue by
//! `(repo_id, number)` — issues are keyed by the pair, numbered per repository. The
//! relationship is declared as the original's dialect declares one (`fields` holding
//! the target's composite primary key; `schema entity add --relationship
//! repo_id,number->issues`), and nested routes take their links from it
//! (`api.parent` without `link`): `GET /repos/{repo}/issues/{number}/comments`
//! answers the comments of that repository's issue only, a create fills both
//! fields, a missing parent is a 404, and `connector conform` calls the route up the
//! chain the relationships give.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn gateway(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn run(args: &[&str]) -> String {
    let out = gateway(args);
    assert!(out.status.success(), "{args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 1 exists in both repositories: only the composite key tells their comments apart.
const ROWS: &str = r#"{
 "repos": [{"id": 1, "name": "alpha"}, {"id": 2, "name": "beta"}],
 "issues": [
  {"repo_id": 1, "number": 1, "title": "Alpha's first"},
  {"repo_id": 2, "number": 1, "title": "Beta's first"},
  {"repo_id": 2, "number": 2, "title": "Beta's second"}
 ],
 "comments": [
  {"id": 501, "repo_id": 2, "number": 1, "body": "on beta #1"},
  {"id": 502, "repo_id": 1, "number": 1, "body": "on alpha #1"},
  {"id": 503, "repo_id": 2, "number": 2, "body": "on beta #2"}
 ]
}"#;

const CONNECTOR: &str = r#"[connector]
slug = "tracker"
base_url = "https://api.tracker.test"

[auth]
scheme = "bearer"
secret_env = "TRACKER_TOKEN"

[api]
envelope = ""
not_found = '{"message": "Not Found"}'

# Linked to its repository by the contract: issues.repo_id -> repos.
[[operations]]
name = "get_issue"
path = "/repos/{repo}/issues/{number}"
entity = "issues"
[operations.api]
parent = [{ entity = "repos", match = { repo = "name" } }]
filter = { number = "number" }
single = true
"#;

const COMMENTS: &str = "/repos/{repo}/issues/{number}/comments";
const PARENTS: &str = r#"parent=[{entity = "repos", match = {repo = "name"}}, {entity = "issues", match = {number = "number"}}]"#;

/// The world: three entities, the comments' relationship composite, routes added
/// with `connector route add` and no `link` anywhere.
fn world(dir: &Path) -> PathBuf {
    let root = dir.join("tracker");
    let path = root.to_str().unwrap();
    run(&["worlds", "schema", "init", path, "--name", "tracker", "--no-api"]);
    let entity = |args: &[&str]| run(&[&["worlds", "schema", "entity", "add", path], args].concat());
    entity(&["repos", "--fields", "id:integer,name:string", "--key", "id"]);
    entity(&[
        "issues",
        "--fields",
        "repo_id:integer,number:integer,title:string",
        "--key",
        "repo_id,number",
        "--relationship",
        "repo_id->repos",
    ]);
    let comment = "id:integer,repo_id:integer,number:integer,body:string";
    entity(&["comments", "--fields", comment, "--key", "id", "--relationship", "repo_id,number->issues"]);
    let rows = dir.join("rows.json");
    std::fs::write(&rows, ROWS).unwrap();
    run(&["worlds", "data", "import", path, rows.to_str().unwrap()]);
    std::fs::write(root.join("connector.toml"), CONNECTOR).unwrap();
    let route = |args: &[&str]| run(&[&["worlds", "connector", "route", "add", path], args].concat());
    route(&["list_comments", "--path", COMMENTS, "--entity", "comments", "--api", PARENTS]);
    route(&[
        "create_comment",
        "-X",
        "POST",
        "--path",
        COMMENTS,
        "--entity",
        "comments",
        "--action",
        "create",
        "--generate",
        "id=int",
        "--api",
        PARENTS,
    ]);
    run(&["worlds", "schema", "compile", path]);
    root
}

struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn call(addr: std::net::SocketAddr, method: &str, target: &str, body: &str) -> (u16, serde_json::Value) {
    let headers = [("Authorization", "Bearer t"), ("Content-Type", "application/json")];
    let (status, _, text) = gateway_test_support::http_exchange(addr, method, target, &headers, body);
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {target}: {status} {text}")))
}

#[test]
fn the_relationship_declares_the_link_composite_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let contract = std::fs::read_to_string(root.join("schema/world.json")).unwrap();
    assert!(contract.contains(r#""relationships": [{"fields": ["repo_id", "number"], "target": "issues""#), "{contract}");

    let mut command = Command::new(BIN);
    command.args(["worlds", "serve"]).arg(&root).args(["--port", "0"]);
    let (child, announced) = gateway_test_support::spawn_announced(&mut command, "world api listening on ");
    let _served = Served(child);
    let url = announced.unwrap_or_else(|said| panic!("the world did not start: {said}"));
    let addr: std::net::SocketAddr = url.trim().trim_start_matches("http://").trim_end_matches('/').parse().unwrap();

    let (status, comments) = call(addr, "GET", "/repos/beta/issues/1/comments", "");
    assert_eq!((status, comments.to_string()), (200, r#"[{"body":"on beta #1","id":501,"number":1,"repo_id":2}]"#.to_string()));
    let (_, comments) = call(addr, "GET", "/repos/alpha/issues/1/comments", "");
    assert_eq!(comments[0]["body"], "on alpha #1", "the other repository's issue 1: {comments}");
    let (status, created) = call(addr, "POST", "/repos/beta/issues/2/comments", r#"{"body": "a new one"}"#);
    assert_eq!(status, 201, "{created}");
    assert_eq!((created["repo_id"].clone(), created["number"].clone()), (2.into(), 2.into()), "both fields filled: {created}");
    let (_, issue) = call(addr, "GET", "/repos/beta/issues/2", "");
    assert_eq!(issue["title"], "Beta's second", "a single-field relationship links get_issue: {issue}");
    assert_eq!(call(addr, "GET", "/repos/alpha/issues/2/comments", "").0, 404, "alpha has no issue 2");
    assert_eq!(call(addr, "GET", "/repos/gamma/issues/1/comments", "").0, 404, "no such repository");
    assert_eq!(call(addr, "POST", "/repos/alpha/issues/2/comments", r#"{"body": "x"}"#).0, 404);
}

/// The dialect already took relationships over several fields, as the original's
/// does: the original compiles this world to the same contract, byte for byte.
#[test]
fn the_original_compiles_the_composite_relationship_to_the_same_contract() {
    let Some((original, _)) = gateway_test_support::reference() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ours = world(dir.path());
    let theirs = dir.path().join("theirs");
    gateway_test_support::copy_tree(&ours, &theirs);
    let compiled = Command::new(original).args(["worlds", "schema", "compile"]).arg(&theirs).output().unwrap();
    assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));
    for file in ["schema/lock.json", "schema/runtime.json", "db/schema.sql", "tool-schemas.json", "schema/README.md"] {
        let read = |root: &Path| std::fs::read(root.join(file)).unwrap();
        assert!(read(&ours) == read(&theirs), "{file} differs from the original's");
    }
}

#[test]
fn a_parent_with_no_link_and_no_relationship_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let path = root.to_str().unwrap();
    let parent = r#"parent=[{entity = "comments", match = {id = "id"}}]"#;
    let out = gateway(&[
        "worlds",
        "connector",
        "route",
        "add",
        path,
        "repo_of_comment",
        "--path",
        "/comments/{id}/repo",
        "--entity",
        "repos",
        "--api",
        parent,
    ]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("api.link says which fields") && said.contains("the contract relates repos to comments"), "{said}");
    assert!(!std::fs::read_to_string(root.join("connector.toml")).unwrap().contains("repo_of_comment"), "nothing written");
}

const DOCUMENT: &str = r#"{
 "openapi": "3.0.3",
 "info": {"title": "tracker", "version": "1"},
 "servers": [{"url": "https://api.tracker.test"}],
 "paths": {
  "/repos/{repo}/issues/{issue_number}/comments": {
   "get": {
    "operationId": "issues/list-comments",
    "parameters": [
     {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}},
     {"name": "issue_number", "in": "path", "required": true, "schema": {"type": "integer"}}
    ],
    "responses": {
     "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {
       "type": "object", "required": ["id", "body"], "properties": {"id": {"type": "integer"}, "body": {"type": "string"}}}}}}},
     "404": {"description": "missing", "content": {"application/json": {"schema": {
       "type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}}}}
    }
   }
  }
 }
}"#;

#[test]
fn conform_calls_the_route_up_the_relationships() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let document = dir.path().join("tracker.openapi.json");
    std::fs::write(&document, DOCUMENT).unwrap();
    let report_path = dir.path().join("report.json");
    let out = gateway(&[
        "worlds",
        "connector",
        "conform",
        root.to_str().unwrap(),
        "--openapi",
        document.to_str().unwrap(),
        "--out",
        report_path.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let listed = report["operations"].as_array().unwrap().iter().find(|o| o["operation"] == "list_comments").unwrap();
    assert_eq!(listed["request"]["url"], "/repos/beta/issues/1/comments", "{text}");
    assert_eq!(listed["status"], 200, "{text}");
    let checks = listed["checks"].as_array().unwrap();
    let detail = |name: &str| checks.iter().find(|c| c["check"] == "path" && c["name"] == name).map(|c| c["detail"].to_string());
    let number = detail("number").unwrap_or_default();
    assert!(number.contains("issues.number of issues row repo_id=2,number=1, up api.parent from comments row id=501"), "{number}");
    let repo = detail("repo").unwrap_or_default();
    assert!(repo.contains("repos.name of repos row id=2"), "{repo}");
    let missing = checks.iter().find(|c| c["check"] == "error" && c["name"] == "404").map(|c| c["result"].clone());
    assert_eq!(missing, Some("ok".into()), "{text}");
}
