//! The hub's web pages over loopback HTTP: sign-in (form → signed cookie, Basic for
//! curl, sign-out, tampered and foreign cookies), every page (worlds, a world's refs
//! and versions, files and a file's text, the seed-row diff of two pushed versions,
//! sessions and their call log, evaluations with the reward chart, rollouts and a
//! transcript) with their paging, escaping of names a user chose (`<script>…`), and
//! project scoping (another project's world, version, session and evaluation are 404
//! pages). The paged store reads run on PostgreSQL too when `GATEWAY_TEST_POSTGRES_URL`
//! reaches a server, and `browser.rs` drives headless Chromium through the same pages.

use gateway_hub_client::client::{Client, PushOptions};
pub(crate) use gateway_test_support::{copy_tree, postgres_url, text, Key, TestHub as Hub};
use gateway_world::json::{self, Value};
use std::path::Path;

#[path = "web/browser.rs"]
mod browser;

pub(crate) fn start(database: Option<String>) -> Hub {
    Hub::start(database)
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// An API call with a project's Basic credentials: `(status, JSON)`.
pub(crate) fn api(hub: &Hub, key: &Key, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    hub.call_as(key, method, path, body, &[])
}

pub(crate) fn ok(hub: &Hub, key: &(String, String), method: &str, path: &str, body: &str) -> Value {
    let (status, answer) = api(hub, key, method, path, Some(body));
    assert_eq!(status, 200, "{method} {path}: {answer:?}");
    answer
}

/// A page with Basic credentials: `(status, body)`, checked to be our HTML.
fn page(hub: &Hub, key: &(String, String), path: &str) -> (u16, String) {
    let response = http().get(format!("{}{path}", hub.api)).basic_auth(&key.0, Some(&key.1)).send().unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().unwrap();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8", "{path}");
    assert!(headers["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"), "{path}");
    assert!(body.starts_with("<!DOCTYPE html>"), "{path}: {body}");
    // Names chosen by users are escaped everywhere: no page ever holds a script element.
    assert!(!body.to_ascii_lowercase().contains("<script"), "{path} holds a raw <script>: {body}");
    (status, body)
}

fn page_ok(hub: &Hub, path: &str) -> String {
    let (status, body) = page(hub, &hub.one, path);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// What [`fill`] put in the hub.
pub(crate) struct Filled {
    pub(crate) v1: String,
    pub(crate) v2: String,
    pub(crate) evaluations: Vec<String>,
    pub(crate) sample: String,
    pub(crate) session: Option<String>,
    pub(crate) other_version: String,
}

pub(crate) const EVIL: &str = "<script>alert('x')</script>";

/// Push the helpdesk world twice (v2: a ticket's subject edited in `data/initial.json`, a
/// journal adding customer C4 and raising ticket 102's priority), tag v1, file three
/// evaluations with samples (a prompt, a call log, a task named `<script>…`), open a
/// session (its instruction holding `<script>…`) with three calls (when `sessions`), and give project two a world of its own.
pub(crate) fn fill(hub: &Hub, work: &Path, sessions: bool) -> Filled {
    let world = work.join("helpdesk");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let options = PushOptions {
        slug: Some("helpdesk".into()),
        name: Some(format!("Help {EVIL}")),
        description: Some(format!("desc {EVIL}")),
        message: Some(format!("first {EVIL}")),
        author: Some("alice".into()),
        ..Default::default()
    };
    let v1 = text(&client.push(&world, &options).unwrap(), "versionId");

    let initial = world.join("data/initial.json");
    let edited = std::fs::read_to_string(&initial).unwrap().replace("SSO login loops back to the sign-in page", "SSO login loops");
    std::fs::write(&initial, edited).unwrap();
    std::fs::create_dir_all(world.join("data/batches")).unwrap();
    std::fs::write(
        world.join("data/batches/0001.json"),
        r#"{"id": "helpdesk.more", "coverage": "partial", "mapping": {"id": "example", "version": "1"},
            "target": {"hash": "6d83a6941486f9b40bbd57174cbcc2aa23cd3ee08b74b601b4651c75e1fc368a", "id": "urn:gateway-rs:example:helpdesk", "version": "1.0.0"},
            "mutations": [
              {"op": "insert", "entity": "customers", "source": {"record": "t:C4"}, "value": {"id": "C4", "name": "Barbara Liskov", "email": "barbara@example.com", "tier": "pro", "created_at": "2026-04-01T00:00:00Z"}},
              {"op": "update", "entity": "tickets", "source": {"record": "t:102"}, "key": {"id": 102}, "value": {"priority": 4}}
            ]}"#,
    )
    .unwrap();
    gateway_world::lifecycle::compile_bundle(&world, true).expect("the edited world compiles");
    let options = PushOptions { message: Some("second".into()), ..Default::default() };
    let v2 = text(&client.push(&world, &options).unwrap(), "versionId");
    ok(
        hub,
        &hub.one,
        "POST",
        "/api/public/benchmark-containers/refs",
        &format!(r#"{{"slug": "helpdesk", "name": "v-one", "kind": "tag", "versionId": "{v1}"}}"#),
    );

    const EVALS: &str = "/api/public/benchmark-containers/evaluations";
    let mut evaluations = Vec::new();
    for (version, model, rewards) in [(&v1, "m-old", [0.0, 1.0]), (&v2, EVIL, [1.0, 1.0]), (&v2, "m-new", [0.5, 0.0])] {
        let created = ok(
            hub,
            &hub.one,
            "POST",
            EVALS,
            &format!(r#"{{"versionId": "{version}", "model": {}, "runId": "run"}}"#, json::canonical(&Value::str(model))),
        );
        let id = text(&created, "evaluationId");
        let samples = format!(
            r#"{{"samples": [
              {{"exampleId": "ex-1", "task": {task}, "rolloutIndex": 0, "reward": {r0},
                "prompt": "Be helpful {evil}\nSolve ticket 101", "completion": "Solved it.",
                "info": {{"variant": "v", "callLog": [{{"tool": "get_ticket", "args": {{"id": 101}}, "result": {{"id": 101, "status": "open"}}}},
                                                      {{"tool": "solve_ticket", "args": {{"id": 101}}, "error": "boom {evil}"}},
                                                      {{"tool": "create_ticket", "arguments": "{{\"title\":\"x\"}}", "result_preview": "{{\"id\":7}}"}},
                                                      {{"request": "GET /tickets/999", "status": 404, "answer": "{{\"error\":\"ticket 999 does not exist\"}}"}}],
                          "messages": [{{"role": "assistant", "content": null, "tool_calls": [{{"id": "c1", "type": "function", "function": {{"name": "get_ticket", "arguments": "{{\"id\":101}}"}}}}]}},
                                       {{"role": "tool", "tool_call_id": "c1", "content": "open"}}]}}}},
              {{"exampleId": "ex-2", "task": "beta", "rolloutIndex": 0, "reward": {r1}, "prompt": "plain prompt", "completion": "plain answer"}},
              {{"exampleId": "ex-3", "task": "beta", "rolloutIndex": 1}}
            ]}}"#,
            task = json::canonical(&Value::str(EVIL)),
            evil = EVIL.replace('\'', "\\u0027"),
            r0 = rewards[0],
            r1 = rewards[1],
        );
        ok(hub, &hub.one, "POST", &format!("{EVALS}/{id}/samples"), &samples);
        ok(hub, &hub.one, "POST", &format!("{EVALS}/{id}/finalize"), r#"{"status": "COMPLETED", "metrics": {"avg_reward": 0.5}}"#);
        evaluations.push(id);
    }
    let (_, listed) = api(hub, &hub.one, "GET", &format!("/api/public/environments/helpdesk/rollouts/{}/samples", evaluations[0]), None);
    let sample = text(&listed, "samples.0.id");

    let session = sessions.then(|| {
        let instruction = json::canonical(&Value::str(format!("Solve ticket 101. {EVIL}")));
        let task = format!(r#"{{"name": "solve-101", "instruction": {instruction}, "tools": ["get_ticket", "solve_ticket"]}}"#);
        let opened = ok(
            hub,
            &hub.one,
            "POST",
            "/api/public/world-sessions",
            &format!(r#"{{"slug": "helpdesk", "task": {task}, "surfaces": ["api"]}}"#),
        );
        let sid = text(&opened, "sessionId");
        for args in [r#"{"id": 101}"#, r#"{"id": 999}"#] {
            ok(
                hub,
                &hub.one,
                "POST",
                &format!("/api/public/world-sessions/{sid}/calls"),
                &format!(r#"{{"kind": "call", "tool": "get_ticket", "args": {args}}}"#),
            );
        }
        ok(hub, &hub.one, "POST", &format!("/api/public/world-sessions/{sid}/calls"), r#"{"kind": "state"}"#);
        sid
    });

    // Project two's own world.
    let other = work.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("main.py"), "print('other')\n").unwrap();
    let client_two = Client::new(&hub.api, &hub.two.0, &hub.two.1).unwrap();
    let other_version =
        text(&client_two.push(&other, &PushOptions { slug: Some("other".into()), ..Default::default() }).unwrap(), "versionId");
    Filled { v1, v2, evaluations, sample, session, other_version }
}

/// A sign-in form as a browser gets it: its pre-sign-in cookie (`name=value`) and the
/// form's CSRF token.
fn sign_in_form(hub: &Hub) -> (String, String) {
    let form = http().get(format!("{}/ui/login", hub.api)).send().unwrap();
    let cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    assert!(cookie.starts_with("gateway_hub_csrf="), "{cookie}");
    (cookie, hidden(&form.text().unwrap(), "csrf"))
}

/// The value of a page's hidden input `name`.
fn hidden(page: &str, name: &str) -> String {
    let at = page.find(&format!(r#"name="{name}" value=""#)).unwrap_or_else(|| panic!("no {name} in {page}"));
    let rest = &page[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// A sign-in POST with the form's cookie and token (`csrf: None`: the form's own).
fn post_login(
    hub: &Hub,
    form: &(String, String),
    csrf: Option<&str>,
    public: &str,
    secret: &str,
    next: &str,
) -> reqwest::blocking::Response {
    http()
        .post(format!("{}/ui/login", hub.api))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", &form.0)
        .body(format!("public_key={public}&secret_key={secret}&next={next}&csrf={}", csrf.unwrap_or(&form.1)))
        .send()
        .unwrap()
}

#[test]
fn sign_in_cookie_basic_and_sign_out() {
    let hub = start(None);
    let get = |path: &str| http().get(format!("{}{path}", hub.api));

    // Nobody signed in: the pages send the browser to the form, remembering where it was.
    let root = get("/").send().unwrap();
    assert_eq!((root.status().as_u16(), root.headers()["location"].to_str().unwrap()), (303, "/ui/"));
    let worlds = get("/ui/w/x?y=1").send().unwrap();
    assert_eq!(worlds.status().as_u16(), 303);
    assert_eq!(worlds.headers()["location"], "/ui/login?next=%2Fui%2Fw%2Fx%3Fy%3D1");
    let form = get("/ui/login?next=%2Fui%2Fsessions").send().unwrap();
    assert_eq!(form.status().as_u16(), 200);
    let form = form.text().unwrap();
    assert!(form.contains(r#"name="public_key""#) && form.contains(r#"type="password""#) && form.contains(r#"value="/ui/sessions""#));

    // A wrong pair: the form again, 401, no session cookie.
    let form = sign_in_form(&hub);
    let login = |public: &str, secret: &str, next: &str| post_login(&hub, &form, None, public, secret, next);
    let refused = login(&hub.one.0, "sk-lf-wrong", "%2Fui%2F");
    assert_eq!(refused.status().as_u16(), 401);
    assert!(refused.headers().get_all("set-cookie").iter().all(|c| !c.to_str().unwrap().starts_with("gateway_hub_session")));
    assert!(refused.text().unwrap().contains("not one of this hub"));

    // The right pair: a signed, HttpOnly, SameSite=Strict cookie that expires; back to `next`.
    let signed = login(&hub.one.0, &hub.one.1, "%2Fui%2Fsessions");
    assert_eq!(signed.status().as_u16(), 303);
    assert_eq!(signed.headers()["location"], "/ui/sessions");
    let cookie = signed.headers()["set-cookie"].to_str().unwrap().to_string();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains(&hub.one.1), "the secret is never in the cookie");
    let value = cookie.split(';').next().unwrap().to_string();
    let with_cookie = |path: &str, value: &str| get(path).header("cookie", format!("theme=dark; {value}")).send().unwrap();
    let signed_in = with_cookie("/ui/", &value);
    assert_eq!(signed_in.status().as_u16(), 200);
    let signed_in = signed_in.text().unwrap();
    assert!(signed_in.contains("Sign out"));
    let sign_out_token = hidden(&signed_in, "csrf");
    // An offsite `next` is not followed.
    assert_eq!(login(&hub.one.0, &hub.one.1, "https%3A%2F%2Fevil.example%2F").headers()["location"], "/ui/");

    // A tampered cookie is no sign-in.
    let mut tampered = value.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    assert_eq!(with_cookie("/ui/", &tampered).status().as_u16(), 303);
    // Nor is project one's cookie re-signed under project two's key.
    let two = value.replacen(&hub.one.0, &hub.two.0, 1);
    assert_eq!(with_cookie("/ui/", &two).status().as_u16(), 303);

    // curl: Basic works, a wrong Basic is a 401 asking for Basic.
    assert_eq!(page(&hub, &hub.one, "/ui/").0, 200);
    let (status, body) = page(&hub, &(hub.one.0.clone(), "sk-lf-nope".into()), "/ui/");
    assert_eq!(status, 401, "{body}");
    let wrong = get("/ui/").basic_auth(&hub.one.0, Some("nope")).send().unwrap();
    assert_eq!(wrong.headers()["www-authenticate"], "Basic realm=\"gateway-hub\"");

    // Sign-out clears the cookie.
    let out = http()
        .post(format!("{}/ui/logout", hub.api))
        .header("cookie", &value)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={sign_out_token}"))
        .send()
        .unwrap();
    assert_eq!((out.status().as_u16(), out.headers()["location"].to_str().unwrap()), (303, "/ui/login"));
    let cleared = out.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("gateway_hub_session=;") && cleared.contains("Max-Age=0"), "{cleared}");

    // Unknown pages and methods.
    assert_eq!(page(&hub, &hub.one, "/ui/nope").0, 404);
    assert_eq!(http().delete(format!("{}/ui/", hub.api)).send().unwrap().status().as_u16(), 404);
    // The JSON API is untouched.
    assert_eq!(api(&hub, &hub.one, "GET", "/api/public/environments", None).0, 200);
}

/// The hostile suite (issue 24, item 10) on the web pages: a cookie copied before
/// sign-out is dead after it; a sign-in or sign-out POST without its form's CSRF token is
/// refused (403) and changes nothing; failed sign-ins are rate limited per public key and
/// per client address (429, even for the right pair), while other keys still sign in.
#[test]
fn hostile_sign_out_csrf_and_sign_in_rate_limit() {
    let hub = start(None);
    let form = sign_in_form(&hub);
    let cookie_of =
        |response: &reqwest::blocking::Response| response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let get = |value: &str| http().get(format!("{}/ui/", hub.api)).header("cookie", value).send().unwrap();
    let logout = |value: &str, csrf: &str| {
        http()
            .post(format!("{}/ui/logout", hub.api))
            .header("cookie", value)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={csrf}"))
            .send()
            .unwrap()
    };

    // CSRF on sign-in: no token, a wrong one, another form's token without its cookie.
    for (cookie, csrf) in
        [(form.0.as_str(), ""), (form.0.as_str(), "00"), ("gateway_hub_csrf=0123456789abcdef0123456789abcdef", form.1.as_str())]
    {
        let refused = post_login(&hub, &(cookie.to_string(), form.1.clone()), Some(csrf), &hub.one.0, &hub.one.1, "%2Fui%2F");
        assert_eq!(refused.status().as_u16(), 403, "{cookie} {csrf}");
        assert!(refused.headers().get_all("set-cookie").iter().all(|c| !c.to_str().unwrap().starts_with("gateway_hub_session")));
        assert!(refused.text().unwrap().contains("sign in again"));
    }

    // Signed in; the cookie is copied (stolen); a forged sign-out (no token) is refused.
    let signed = post_login(&hub, &form, None, &hub.one.0, &hub.one.1, "%2Fui%2F");
    assert_eq!(signed.status().as_u16(), 303);
    let value = cookie_of(&signed);
    let page = get(&value);
    assert_eq!(page.status().as_u16(), 200);
    let token = hidden(&page.text().unwrap(), "csrf");
    let forged = logout(&value, "");
    assert_eq!(forged.status().as_u16(), 403);
    assert!(forged.text().unwrap().contains("not sent by this hub"));
    assert_eq!(get(&value).status().as_u16(), 200, "a refused sign-out leaves the sign-in");
    // The real sign-out: the copied cookie no longer signs anyone in.
    assert_eq!(logout(&value, &token).status().as_u16(), 303);
    let after = get(&value);
    assert_eq!((after.status().as_u16(), after.headers()["location"].to_str().unwrap()), (303, "/ui/login?next=%2Fui%2F"));

    // Rate limit per public key: five failures, then even the right secret is a 429.
    for _ in 0..5 {
        assert_eq!(post_login(&hub, &form, None, &hub.one.0, "sk-lf-guess", "%2Fui%2F").status().as_u16(), 401);
    }
    let limited = post_login(&hub, &form, None, &hub.one.0, &hub.one.1, "%2Fui%2F");
    assert_eq!(limited.status().as_u16(), 429);
    assert!(limited.text().unwrap().contains("Too many failed sign-ins"));
    // The address has its five failures too: another key from it waits as well.
    assert_eq!(post_login(&hub, &form, None, &hub.two.0, &hub.two.1, "%2Fui%2F").status().as_u16(), 429);
    // The API (Basic) is not the web form: it still answers the key.
    assert_eq!(api(&hub, &hub.one, "GET", "/api/public/environments", None).0, 200);
}

#[test]
fn every_page_escaped_paged_and_scoped() {
    let hub = start(None);
    let work = tempfile::tempdir().unwrap();
    let filled = fill(&hub, work.path(), true);
    let sid = filled.session.clone().unwrap();

    // Worlds: the name a user chose is text, never markup.
    let worlds = page_ok(&hub, "/ui/");
    assert!(worlds.contains(r#"href="/ui/w/helpdesk""#));
    assert!(worlds.contains("Help &lt;script&gt;alert('x')&lt;/script&gt;"), "{worlds}");
    assert!(!worlds.contains("/ui/w/other"), "another project's world is not listed");

    // A world: its branches, tags and versions, and a diff form.
    let world = page_ok(&hub, "/ui/w/helpdesk");
    assert!(world.contains("<code>main</code>") && world.contains("<code>v-one</code>"));
    assert!(world.contains(&format!("/ui/w/helpdesk/v/{}", filled.v1)) && world.contains(&format!("/ui/w/helpdesk/v/{}", filled.v2)));
    assert!(world.contains("first &lt;script&gt;"));
    assert!(world.contains(&format!("/ui/w/helpdesk/diff?base={}&amp;head={}", filled.v1, filled.v2)));

    // Files and a file's text.
    let files = page_ok(&hub, &format!("/ui/w/helpdesk/v/{}", filled.v2));
    assert!(files.contains(&format!("/ui/w/helpdesk/v/{}/f/data/batches/0001.json", filled.v2)));
    let file = page_ok(&hub, &format!("/ui/w/helpdesk/v/{}/f/data/initial.json", filled.v1));
    assert!(file.contains("SSO login loops back to the sign-in page") && file.contains("<pre>"));
    let file = page_ok(&hub, &format!("/ui/w/helpdesk/v/{}/f/data%2Finitial.json", filled.v2));
    assert!(file.contains("SSO login loops") && !file.contains("loops back"));
    assert_eq!(page(&hub, &hub.one, &format!("/ui/w/helpdesk/v/{}/f/nope.txt", filled.v2)).0, 404);

    // The diff: files by hash, then seed rows per entity by primary key.
    let diff = page_ok(&hub, &format!("/ui/w/helpdesk/diff?base={}&head={}", filled.v1, filled.v2));
    assert!(diff.contains("data/batches/0001.json") && diff.contains("data/initial.json"));
    let row = |entity: &str| {
        let at = diff.find(&format!(">{entity}</a></td>")).unwrap_or_else(|| panic!("{entity} in {diff}"));
        let cells: Vec<String> =
            diff[at..].split("<td class=\"num\">").skip(1).take(4).map(|c| c.split('<').next().unwrap().to_string()).collect();
        cells
    };
    assert_eq!(row("customers"), ["1", "0", "0", "3"], "C4 added");
    assert_eq!(row("tickets"), ["0", "0", "2", "2"], "101's subject and 102's priority changed");
    let rows = page_ok(&hub, &format!("/ui/w/helpdesk/diff?base={}&head={}&entity=tickets", filled.v1, filled.v2));
    assert!(rows.contains("<code>[101]</code>") && rows.contains("<code>subject</code>"));
    assert!(rows.contains("&quot;SSO login loops back to the sign-in page&quot;") && rows.contains("<code>priority</code>"));
    assert!(!rows.contains("Barbara Liskov"), "only the entity asked for");
    let default = page_ok(&hub, "/ui/w/helpdesk/diff");
    assert!(default.contains("Barbara Liskov"), "without base/head: the newest version against the one before");
    let one_row = page_ok(&hub, &format!("/ui/w/helpdesk/diff?base={}&head={}&entity=tickets&limit=1", filled.v1, filled.v2));
    assert!(one_row.contains("Show more") && !one_row.contains("<code>[102]</code>"));

    // Evaluations: the chart (a bar per version with rewards), the list, paging.
    let evals = page_ok(&hub, "/ui/w/helpdesk/evaluations");
    assert_eq!(evals.matches("<rect").count(), 2, "{evals}");
    assert!(evals.contains("<svg") && evals.contains("Mean reward per version"));
    for id in &filled.evaluations {
        assert!(evals.contains(&format!("/ui/w/helpdesk/evaluations/{id}")));
    }
    assert!(evals.contains("&lt;script&gt;alert('x')&lt;/script&gt;"), "the model name is text");
    // v1: rewards 0, 1 and a null → 0.5; v2: 1, 1, 0.5, 0 (two nulls) → 0.625.
    assert!(evals.contains(">0.5</text>") && evals.contains(">0.625</text>"), "{evals}");
    let first = page_ok(&hub, "/ui/w/helpdesk/evaluations?limit=2");
    let older = first.split("evaluations?before=").nth(1).expect("an older page").split('"').next().unwrap().to_string();
    let second = page_ok(&hub, &format!("/ui/w/helpdesk/evaluations?limit=2&before={older}"));
    assert!(second.contains(&filled.evaluations[0]) && !second.contains(&format!("evaluations/{}\"", filled.evaluations[2])));
    assert_eq!(page(&hub, &hub.one, "/ui/w/helpdesk/evaluations?before=x").0, 400);

    // An evaluation's rollouts, paged; a transcript with its call log.
    let eval = format!("/ui/w/helpdesk/evaluations/{}", filled.evaluations[0]);
    let rollouts = page_ok(&hub, &eval);
    assert_eq!(rollouts.matches("/samples/").count(), 3);
    assert!(rollouts.contains("avg_reward") && rollouts.contains(">null<"));
    let paged = page_ok(&hub, &format!("{eval}?limit=2"));
    assert_eq!(paged.matches("/samples/").count(), 2);
    let next = paged.split("?after=").nth(1).unwrap().split('"').next().unwrap().to_string();
    assert_eq!(page_ok(&hub, &format!("{eval}?limit=2&after={next}")).matches("/samples/").count(), 1);
    let transcript = page_ok(&hub, &format!("{eval}/samples/{}", filled.sample));
    for expected in [
        "Prompt",
        "Completion",
        "Solve ticket 101",
        "Solved it.",
        "<code>get_ticket</code>",
        "<code>solve_ticket</code>",
        "boom &lt;script&gt;",
        "Be helpful &lt;script&gt;",
        "&quot;variant&quot;",
        // Arguments and answers decoded from the text a runner files them as.
        "<code>{&quot;title&quot;: &quot;x&quot;}</code>",
        "<code>{&quot;id&quot;: 7}</code>",
        // An HTTP call shows as its method and path, with its status and answer.
        "<code>GET /tickets/999</code>",
        ">404</span>",
        "ticket 999 does not exist",
        // The model's messages, its tool calls by name with their arguments decoded.
        "Model messages",
        "<code>{&quot;id&quot;: 101}</code>",
    ] {
        assert!(transcript.contains(expected), "{expected} in {transcript}");
    }
    assert!(!transcript.contains("&quot;messages&quot;"), "the messages are shown apart, not in Info: {transcript}");

    // Sessions and a call log.
    let sessions = page_ok(&hub, "/ui/sessions");
    assert!(sessions.contains(&format!("/ui/sessions/{sid}")) && sessions.contains("solve-101"));
    let session = page_ok(&hub, &format!("/ui/sessions/{sid}"));
    assert!(session.contains("Solve ticket 101. &lt;script&gt;") && session.contains("get_ticket"));
    assert_eq!(session.matches("<td class=\"num\">").count(), 3, "three calls logged");
    assert!(session.contains("&quot;id&quot;: 999"));
    let (_, status) = api(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}"), None);
    let token = text(&status, "surfaces.api.token");
    assert!(!token.is_empty() && !session.contains(&token), "the session's token is never shown");
    let paged = page_ok(&hub, &format!("/ui/sessions/{sid}?limit=2"));
    assert_eq!(paged.matches("<td class=\"num\">").count(), 2);
    assert!(paged.contains("?after="));

    // Scoping: project two sees none of project one's things, by any path; nor does one see two's.
    let two = |path: &str| page(&hub, &hub.two, path).0;
    for path in [
        "/ui/w/helpdesk".to_string(),
        format!("/ui/w/helpdesk/v/{}", filled.v1),
        format!("/ui/w/other/v/{}", filled.v1),
        format!("/ui/w/other/v/{}/f/data/initial.json", filled.v1),
        format!("/ui/w/other/diff?base={}&head={}", filled.v1, filled.v2),
        format!("/ui/w/other/evaluations/{}", filled.evaluations[0]),
        format!("/ui/w/other/evaluations/{}/samples/{}", filled.evaluations[0], filled.sample),
        format!("/ui/sessions/{sid}"),
        "/ui/w/helpdesk/evaluations".to_string(),
    ] {
        assert_eq!(two(&path), 404, "{path}");
    }
    assert_eq!(two("/ui/w/other"), 200);
    assert!(!page(&hub, &hub.two, "/ui/sessions").1.contains(&sid));
    assert_eq!(page(&hub, &hub.one, &format!("/ui/w/helpdesk/v/{}", filled.other_version)).0, 404);
    assert_eq!(page(&hub, &hub.one, "/ui/w/other").0, 404);
    // A sample of another evaluation of the same world is not this evaluation's.
    assert_eq!(page(&hub, &hub.one, &format!("/ui/w/helpdesk/evaluations/{}/samples/{}", filled.evaluations[1], filled.sample)).0, 404);
    let (status, body) = page(&hub, &hub.one, "/ui/w/..%2F..%2Fetc");
    assert_eq!(status, 404, "{body}");
}

/// The paged reads behind the pages, on PostgreSQL.
#[test]
fn pages_on_postgres() {
    let Some(url) = postgres_url("the web pages") else { return };
    let hub = start(Some(url));
    let work = tempfile::tempdir().unwrap();
    let filled = fill(&hub, work.path(), false);
    let evals = page_ok(&hub, "/ui/w/helpdesk/evaluations?limit=2");
    assert_eq!(evals.matches("<rect").count(), 2);
    let older = evals.split("evaluations?before=").nth(1).expect("an older page").split('"').next().unwrap().to_string();
    assert!(page_ok(&hub, &format!("/ui/w/helpdesk/evaluations?limit=2&before={older}")).contains(&filled.evaluations[0]));
    let eval = format!("/ui/w/helpdesk/evaluations/{}", filled.evaluations[0]);
    let paged = page_ok(&hub, &format!("{eval}?limit=2"));
    let next = paged.split("?after=").nth(1).unwrap().split('"').next().unwrap().to_string();
    assert_eq!(page_ok(&hub, &format!("{eval}?limit=2&after={next}")).matches("/samples/").count(), 1);
    assert!(page_ok(&hub, &format!("{eval}/samples/{}", filled.sample)).contains("<code>solve_ticket</code>"));
    assert_eq!(page(&hub, &hub.two, &format!("/ui/w/other/evaluations/{}", filled.evaluations[0])).0, 404);
}
