//! `gateway worlds serve` end to end: the real binary, a real server on loopback,
//! the bundled helpdesk world, requests over TCP.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let name_text = name.to_string_lossy();
        if name_text.starts_with("state.") || name_text == "__pycache__" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    world: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the helpdesk example, optionally edited, compiled and served.
fn serve(edit: impl FnOnce(&Path), extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("helpdesk");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    edit(&world);
    let compiled = Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert!(compiled.status.success(), "compile: {}", String::from_utf8_lossy(&compiled.stdout));
    let port = free_port();
    let child = Command::new(BIN)
        .args(["worlds", "serve"])
        .arg(&world)
        .args(["--port", &port.to_string()])
        .args(extra)
        .env("GATEWAY_WORLD_CLOCK", "1767225600")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, port, _dir: dir, world };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server did not start");
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

fn request(server: &Server, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n", server.port, body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("").split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    let headers = lines.filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Answer { status, headers, body: body.to_string() }
}

const AUTH: (&str, &str) = ("Authorization", "Bearer t");

fn get(server: &Server, path: &str) -> Answer {
    request(server, "GET", path, &[AUTH], b"")
}

#[test]
fn reads_filters_pages_and_errors() {
    let server = serve(|_| {}, &[]);
    let health = request(&server, "GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.body.as_str()), (200, r#"{"ok": true, "world": "helpdesk"}"#));

    let denied = request(&server, "GET", "/api/v2/tickets", &[], b"");
    assert_eq!((denied.status, denied.body.as_str()), (401, r#"{"error": "unauthorized"}"#));

    let open = get(&server, "/api/v2/tickets?status=OPEN");
    assert_eq!(open.status, 200);
    assert_eq!(open.header("content-type"), Some("application/json"));
    assert!(open.body.contains(r#""hits": 2"#), "{}", open.body);

    let by_tag = get(&server, "/api/v2/tickets?tag=billing");
    assert!(by_tag.body.contains(r#""id": 102"#) && by_tag.body.contains(r#""hits": 1"#), "{}", by_tag.body);

    let contains = get(&server, "/api/v2/tickets?q=CSV");
    assert!(contains.body.contains(r#""id": 103"#) && contains.body.contains(r#""hits": 1"#), "{}", contains.body);

    let page = get(&server, "/api/v2/tickets?limit=1");
    assert!(page.body.ends_with(r#""hits": 4, "cursor": "MQ"}"#), "{}", page.body);

    let missing = get(&server, "/api/v2/tickets/999");
    assert_eq!((missing.status, missing.body.as_str()), (404, r#"{"error": "RecordNotFound", "description": "Not found"}"#));

    let unknown = get(&server, "/api/v2/nothing");
    assert_eq!(unknown.status, 404);

    // The issue asks for 405 (the original's WorldApp answer); its http.server front
    // answers 501 HTML instead, which schemathesis counts as a server error.
    let weird = request(&server, "OPTIONS", "/api/v2/tickets", &[AUTH], b"");
    assert_eq!((weird.status, weird.body.as_str()), (405, r#"{"error": "method_not_allowed"}"#));
    assert_eq!(weird.header("Allow"), Some("GET, POST"), "a 405 names the methods the path serves");
    // Each path names its own: a ticket is read, patched and deleted; the admin
    // routes and health have theirs; a path nothing serves allows nothing.
    for (path, allowed) in [
        ("/api/v2/tickets/101", "GET, PATCH, DELETE"),
        ("/api/v2/tickets/101/solve", "POST"),
        ("/api/v2/customers", "GET"),
        ("/healthz", "GET"),
        ("/__world/reset", "POST"),
        ("/openapi.json", "GET"),
        ("/api/v2/nothing", ""),
    ] {
        let refused = request(&server, "TRACE", path, &[AUTH], b"");
        assert_eq!((refused.status, refused.header("Allow")), (405, Some(allowed)), "{path}");
    }

    let bad_json = request(&server, "POST", "/api/v2/tickets", &[AUTH, ("Content-Type", "application/json")], b"{nope");
    assert_eq!(
        (bad_json.status, bad_json.body.as_str()),
        (422, r#"{"error": "RecordInvalid", "description": "Record validation errors"}"#)
    );

    let huge = vec![b' '; 17 * 1024 * 1024];
    let too_big = request(&server, "POST", "/api/v2/tickets", &[AUTH], &huge);
    assert_eq!(too_big.status, 413);

    // The server is still serving after everything above.
    assert_eq!(get(&server, "/api/v2/tickets/101").status, 200);
}

#[test]
fn writes_handlers_reset_and_seed() {
    let server = serve(|_| {}, &[]);
    let created = request(&server, "POST", "/api/v2/tickets", &[AUTH], br#"{"customer_id": "C3", "subject": "Dark mode"}"#);
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body,
        r#"{"customer_id": "C3", "id": 105, "opened_at": "2026-01-01T00:00:00Z", "priority": 3, "status": "open", "subject": "Dark mode", "tags": []}"#
    );

    let dangling = request(&server, "POST", "/api/v2/tickets", &[AUTH], br#"{"customer_id": "C9", "subject": "x"}"#);
    assert_eq!(dangling.status, 422);
    assert!(dangling.body.contains(r#""code": "foreign_key""#), "{}", dangling.body);

    let solved = request(&server, "POST", "/api/v2/tickets/101/solve", &[AUTH], b"");
    assert!(solved.body.contains(r#""status": "solved""#), "{}", solved.body);
    let again = request(&server, "POST", "/api/v2/tickets/101/solve", &[AUTH], b"");
    assert_eq!(again.status, 422);
    assert!(again.body.ends_with(r#""detail": "ticket is already solved"}"#), "{}", again.body);

    let deleted = request(&server, "DELETE", "/api/v2/tickets/104", &[AUTH], b"");
    assert_eq!((deleted.status, deleted.body.as_str()), (204, ""));

    let reset = request(&server, "POST", "/__world/reset", &[], b"");
    assert_eq!(reset.status, 200);
    let back = get(&server, "/api/v2/tickets/104");
    assert_eq!(back.status, 200, "reset brings the deleted ticket back");
    assert_eq!(get(&server, "/api/v2/tickets/105").status, 404, "reset drops the created ticket");

    let mismatch = request(&server, "POST", "/__world/seed", &[], br#"{"base": "nope", "rows": {}}"#);
    assert_eq!(mismatch.status, 409);
    assert!(mismatch.body.starts_with(r#"{"error": "base_mismatch", "expected": ""#), "{}", mismatch.body);

    let state = request(&server, "GET", "/__world/state", &[], b"");
    let digest = state.body.split(r#""batchDigest": ""#).nth(1).unwrap().split('"').next().unwrap().to_string();
    let overlay = format!(r#"{{"base": "{digest}", "rows": {{"tickets": []}}, "mode": "replace"}}"#);
    let seeded = request(&server, "POST", "/__world/seed", &[], overlay.as_bytes());
    assert_eq!(seeded.status, 200, "{}", seeded.body);
    let empty = get(&server, "/api/v2/tickets");
    assert!(empty.body.contains(r#""hits": 0"#), "{}", empty.body);

    let refused = request(&server, "POST", "/__world/seed", &[], br#"{"ghosts": []}"#);
    assert_eq!(
        (refused.status, refused.body.as_str()),
        (400, r#"{"error": "seed_rejected", "detail": "seed at /seed/ghosts: Unknown entity ghosts"}"#)
    );
}

#[test]
fn a_raising_handler_answers_500_and_the_server_keeps_serving() {
    let server = serve(
        |world| {
            let mut spec = std::fs::read_to_string(world.join("connector.toml")).unwrap();
            spec.push_str("\n[[operations]]\nname = \"boom\"\npath = \"/boom\"\nentity = \"tickets\"\n[operations.api]\naction = \"handler\"\nhandler = \"boom\"\n");
            std::fs::write(world.join("connector.toml"), spec).unwrap();
            let mut handlers = std::fs::read_to_string(world.join("api/handlers.py")).unwrap();
            handlers.push_str("\n\ndef boom(ctx, args, query, body):\n    raise RuntimeError(\"kaboom\")\n");
            std::fs::write(world.join("api/handlers.py"), handlers).unwrap();
        },
        &[],
    );
    let boom = get(&server, "/api/v2/boom");
    assert_eq!(boom.status, 500, "{}", boom.body);
    assert!(boom.body.contains("kaboom"), "{}", boom.body);
    assert_eq!(get(&server, "/api/v2/tickets/stats").status, 200);
}

#[test]
fn scenario_and_pinned_api_key() {
    let server = serve(|_| {}, &["--scenario", "backlog", "--api-key", "sekret"]);
    assert_eq!(get(&server, "/api/v2/tickets").status, 401, "only the pinned key passes");
    let open = request(&server, "GET", "/api/v2/tickets?status=open", &[("Authorization", "Bearer sekret")], b"");
    assert!(open.body.contains(r#""hits": 4"#), "every ticket is open in the backlog scenario: {}", open.body);
    assert!(server.world.join("scenarios/backlog/state.sqlite").is_file());
}

#[test]
fn a_missing_handler_function_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("helpdesk");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    std::fs::write(world.join("api/handlers.py"), "def ticket_stats(ctx, args, query, body):\n    return {}\n").unwrap();
    let compiled = Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert!(compiled.status.success());
    let out = Command::new(BIN).args(["worlds", "serve"]).arg(&world).args(["--port", &free_port().to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("solve_ticket"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn ui_assets_spa_fallback_and_same_origin_api() {
    let server = serve(
        |world| {
            std::fs::create_dir_all(world.join("ui/static/assets")).unwrap();
            std::fs::write(world.join("ui/static/index.html"), "<html>helpdesk</html>").unwrap();
            std::fs::write(world.join("ui/static/assets/app.js"), "console.log(1)").unwrap();
            let mut spec = std::fs::read_to_string(world.join("connector.toml")).unwrap();
            spec.push_str("\n[ui]\nstatic = \"ui/static\"\nentry = \"/app\"\n");
            std::fs::write(world.join("connector.toml"), spec).unwrap();
        },
        &[],
    );
    let page = request(&server, "GET", "/app/tickets/101", &[], b"");
    assert_eq!((page.status, page.body.as_str()), (200, "<html>helpdesk</html>"));
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let asset = request(&server, "GET", "/assets/app.js", &[], b"");
    assert_eq!((asset.status, asset.body.as_str()), (200, "console.log(1)"));
    let api = get(&server, "/__world-api/api/v2/tickets/101");
    assert!(api.body.contains(r#""id": 101"#), "{}", api.body);
    assert_eq!(request(&server, "GET", "/../../etc/passwd", &[], b"").status, 401);
}

#[test]
fn deeply_nested_bodies_are_refused_and_the_server_keeps_serving() {
    let server = serve(|_| {}, &[]);
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let seed = request(&server, "POST", "/__world/seed", &[], nested(3000).as_bytes());
    assert_eq!((seed.status, seed.body.as_str()), (400, r#"{"error": "seed must be JSON"}"#));
    let deep_object = format!("{}1{}", r#"{"a":"#.repeat(20_000), "}".repeat(20_000));
    let create = request(&server, "POST", "/api/v2/tickets", &[AUTH], deep_object.as_bytes());
    assert!((400..500).contains(&create.status), "{} {}", create.status, create.body);
    // Just inside the parser's limit: the value reaches validation (and is refused there).
    let inside = format!(r#"{{"customer_id": "C3", "subject": "x", "tags": {}}}"#, nested(gateway_world::json::MAX_DEPTH - 1));
    let create = request(&server, "POST", "/api/v2/tickets", &[AUTH], inside.as_bytes());
    assert!((400..500).contains(&create.status), "{} {}", create.status, create.body);
    let seed = request(
        &server,
        "POST",
        "/__world/seed",
        &[],
        format!(r#"{{"tickets": {}}}"#, nested(gateway_world::json::MAX_DEPTH - 1)).as_bytes(),
    );
    assert_eq!(seed.status, 400, "{}", seed.body);
    let health = request(&server, "GET", "/healthz", &[], b"");
    assert_eq!(health.status, 200, "the server survived");
}

/// Generated integer ids are taken inside the writer: 16 clients creating at once
/// never collide (each create is 201 and every id is new), and after deleting the
/// highest row the next id is the original's max + 1 again.
#[test]
fn concurrent_creates_never_collide_on_generated_ids() {
    let server = std::sync::Arc::new(serve(|_| {}, &[]));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let server = server.clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|i| {
                        let body = format!(r#"{{"customer_id": "C3", "subject": "load {t}-{i}"}}"#);
                        let answer = request(&server, "POST", "/api/v2/tickets", &[AUTH], body.as_bytes());
                        assert_eq!(answer.status, 201, "{}", answer.body);
                        answer.body.split(r#""id": "#).nth(1).unwrap().split(',').next().unwrap().parse::<i64>().unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<i64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    ids.sort_unstable();
    let expected: Vec<i64> = (105..105 + 400).collect();
    assert_eq!(ids, expected, "400 creates took 400 distinct ids after the seeded 104");
    assert_eq!(request(&server, "DELETE", "/api/v2/tickets/504", &[AUTH], b"").status, 204);
    let next = request(&server, "POST", "/api/v2/tickets", &[AUTH], br#"{"customer_id": "C3", "subject": "after"}"#);
    assert!(next.body.contains(r#""id": 504"#), "max + 1 after the highest was deleted: {}", next.body);
}

/// `--port 0` binds first and prints the real address (on loopback by default),
/// then the routes; a busy port is one clear line and exit 1.
#[test]
fn serve_prints_the_bound_address_and_refuses_a_busy_port() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("helpdesk");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    assert!(Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap().status.success());
    let mut child = Command::new(BIN)
        .args(["worlds", "serve"])
        .arg(&world)
        .args(["--port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let address = first.strip_prefix("world api listening on http://").unwrap_or_else(|| panic!("{first}"));
    assert!(address.starts_with("127.0.0.1:") && !address.ends_with(":0"), "{first}");
    assert!(second.contains("/__world/state") && second.contains("/healthz"), "{second}");
    let port: u16 = address.rsplit(':').next().unwrap().parse().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok(), "it serves where it says");

    // The same port again: refused in one line, exit 1.
    let busy = Command::new(BIN).args(["worlds", "serve"]).arg(&world).args(["--port", &port.to_string()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&busy.stderr);
    assert_eq!(busy.status.code(), Some(1), "{stderr}");
    assert!(stderr.trim().lines().count() == 1 && stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(stderr.starts_with("Error: "), "one error shape: {stderr}");
    let _ = child.kill();
    let _ = child.wait();
}

/// The served world documents itself: /openapi.json is its own document (richer than
/// the api bundle's, which stays the original's), /docs a page drawn from it.
#[test]
fn the_world_serves_its_openapi_document_and_a_docs_page() {
    let server = serve(|_| {}, &[]);
    let document = request(&server, "GET", "/openapi.json", &[], b"");
    assert_eq!(document.status, 200, "{}", document.body);
    let served = gateway_world::json::parse(&document.body).unwrap().value;
    let at = |pointer: &str| {
        let mut node = &served;
        for part in pointer.split('/').skip(1) {
            let part = part.replace("~1", "/");
            node = match node {
                gateway_world::Value::Array(items) => &items[part.parse::<usize>().unwrap()],
                other => other.get(&part).unwrap_or_else(|| panic!("{pointer}: no {part}")),
            };
        }
        gateway_world::json::canonical(node)
    };
    assert_eq!(at("/openapi"), r#""3.1.0""#);
    assert_eq!(at("/servers/0/url"), r#""api/v2""#, "relative to where the document is served");
    // Query parameters typed from the fields they filter; paging from [api].
    assert_eq!(at("/paths/~1tickets/get/parameters/1/name"), r#""priority""#);
    assert_eq!(at("/paths/~1tickets/get/parameters/1/schema"), r#"{"maximum":4,"minimum":1,"type":"integer"}"#);
    assert_eq!(at("/paths/~1tickets/get/parameters/5/name"), r#""limit""#);
    assert_eq!(at("/paths/~1tickets/get/parameters/6/name"), r#""cursor""#);
    // A ticket id is an integer, and never "stats" (that path is another operation's).
    assert_eq!(at("/paths/~1tickets~1{id}/get/parameters/0/schema"), r#"{"minimum":1,"not":{"enum":["stats"]},"type":"integer"}"#);
    assert_eq!(at("/paths/~1tickets~1{id}/get/parameters/0/example"), "101");
    // The list envelope, the row, the connector's own error bodies.
    assert_eq!(at("/paths/~1tickets/get/responses/200/content/application~1json/schema/required"), r#"["tickets","hits","cursor"]"#);
    assert_eq!(
        at("/paths/~1tickets~1{id}/get/responses/200/content/application~1json/schema"),
        r##"{"$ref":"#/components/schemas/tickets"}"##
    );
    assert_eq!(
        at("/paths/~1tickets~1{id}/get/responses/404/content/application~1json/schema"),
        r#"{"const":{"description":"Not found","error":"RecordNotFound"}}"#
    );
    assert_eq!(at("/paths/~1tickets/post/responses/422/content/application~1json/schema/required"), r#"["error","description"]"#);
    // A create needs what neither defaults nor generators supply.
    assert_eq!(at("/paths/~1tickets/post/requestBody/content/application~1json/schema/required"), r#"["customer_id","subject"]"#);
    assert_eq!(at("/paths/~1tickets~1{id}/options/responses/405/headers/Allow/required"), "true");
    // Examples are the seed's rows.
    assert_eq!(at("/components/schemas/customers/examples/0/email"), r#""ada@example.com""#);
    // The api bundle's document is still the original's, not this one.
    let bundle = tempfile::tempdir().unwrap();
    let out = bundle.path().join("b");
    let built = Command::new(BIN).args(["worlds", "schema", "api-bundle"]).arg(&server.world).arg("--out").arg(&out).output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let written = std::fs::read_to_string(out.join("openapi.json")).unwrap();
    assert!(written.contains(r#""x-gateway-action""#) && !written.contains(r#""summary""#), "{written}");
    let docs = request(&server, "GET", "/docs", &[], b"");
    assert_eq!(docs.status, 200);
    assert!(docs.header("content-type").is_some_and(|t| t.starts_with("text/html")), "{:?}", docs.headers);
    assert!(
        docs.body.contains("get_ticket") && docs.body.contains(r#"href="openapi.json""#) && docs.body.contains("RecordNotFound"),
        "{}",
        docs.body
    );
    assert!(!docs.body.contains("<script") && !docs.body.contains("http://") && !docs.body.contains("https://cdn"), "{}", docs.body);
}
