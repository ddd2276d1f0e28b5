//! The declarations a Slack-style vendor needs, answered by the app itself (no
//! socket) from examples/slack: body parameters, success members, single rows under
//! a key, lifted members, constant write answers, cursor members at a path with no
//! total and a "more" flag, per-operation and per-parent refusals at HTTP 200,
//! conflicts as the vendor's error, required parameters, the `ts`, `epoch` and
//! `id:<PREFIX>` generators, and the OpenAPI document that promises all of it.

use gateway_serve::app::{Determinism, WorldApp};
use gateway_serve::server::{load, ServeOptions};
use gateway_world::json::{canonical, parse, Value};
use std::path::Path;

const TOKEN: &str = "xoxb-test";

fn slack() -> WorldApp {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/slack");
    load(&world, &ServeOptions { api_key: Some(TOKEN.into()), ..ServeOptions::default() }).expect("the example serves")
}

/// POST a Slack method: its status and JSON answer.
fn call(app: &WorldApp, method: &str, content_type: &str, body: &str) -> (u16, Value) {
    let headers = vec![
        ("authorization".to_string(), format!("Bearer {TOKEN}")),
        ("content-type".to_string(), content_type.to_string()),
        ("host".to_string(), "127.0.0.1:9".to_string()),
    ];
    let answer = app.handle("POST", &format!("/api/{method}"), &headers, body.as_bytes(), "127.0.0.1:9");
    (answer.status, answer.body.unwrap_or_default())
}

fn form(app: &WorldApp, method: &str, body: &str) -> (u16, Value) {
    call(app, method, "application/x-www-form-urlencoded", body)
}

fn json(app: &WorldApp, method: &str, body: &str) -> (u16, Value) {
    call(app, method, "application/json;charset=utf-8", body)
}

fn text<'a>(value: &'a Value, path: &str) -> &'a str {
    path.split('.').try_fold(value, |v, key| v.get(key)).and_then(Value::as_str).unwrap_or_default()
}

fn error(answer: &(u16, Value)) -> (u16, String) {
    assert!(matches!(answer.1.get("ok"), Some(Value::Bool(false))), "{}", canonical(&answer.1));
    (answer.0, text(&answer.1, "error").to_string())
}

#[test]
fn reads_take_body_parameters_and_answer_in_envelopes() {
    let app = slack();
    let info = form(&app, "users.info", "user=U0ACME002");
    assert_eq!(info.0, 200);
    let keys: Vec<&String> = info.1.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ok", "user"], "the success member first, the row under its key");
    assert_eq!(text(&info.1, "user.real_name"), "Grace Hopper");
    assert_eq!(error(&form(&app, "users.info", "user=U0NOBODY")), (200, "user_not_found".into()));
    assert_eq!(error(&form(&app, "users.info", "")), (200, "invalid_arguments".into()), "a required parameter");
    assert_eq!(error(&form(&app, "chat.fly", "")), (404, "unknown_method".into()));
    let refused = app.handle("POST", "/api/auth.test", &[("authorization".into(), "Bearer nope".into())], b"", "h");
    assert_eq!((refused.status, canonical(&refused.body.unwrap())), (200, r#"{"error":"invalid_auth","ok":false}"#.into()));
    // A static answer is a successful one too.
    assert_eq!(text(&form(&app, "auth.test", "").1, "user_id"), "U0ACMEBOT");
    assert!(matches!(form(&app, "auth.test", "").1.get("ok"), Some(Value::Bool(true))));
}

#[test]
fn cursors_live_at_a_path_with_no_total_and_a_more_flag() {
    let app = slack();
    let first = form(&app, "users.list", "limit=2").1;
    assert_eq!(first.get("members").and_then(Value::as_array).map(Vec::len), Some(2));
    assert!(first.get("hits").is_none() && first.get("has_more").is_none(), "{}", canonical(&first));
    let cursor = text(&first, "response_metadata.next_cursor").to_string();
    let last = form(&app, "users.list", &format!("limit=2&cursor={cursor}")).1;
    let cursor = text(&last, "response_metadata.next_cursor").to_string();
    let last = form(&app, "users.list", &format!("limit=2&cursor={cursor}")).1;
    assert_eq!(text(&last, "response_metadata.next_cursor"), "", "no page after the last");
    let history = form(&app, "conversations.history", "channel=C0ACME001&limit=2").1;
    let stamps: Vec<&str> = history.get("messages").and_then(Value::as_array).unwrap().iter().map(|m| text(m, "ts")).collect();
    assert_eq!(stamps, ["1733300240.000500", "1733300180.000400"], "newest first");
    assert!(matches!(history.get("has_more"), Some(Value::Bool(true))));
    assert_eq!(error(&form(&app, "conversations.history", "channel=C0NOWHERE")), (200, "channel_not_found".into()));
}

#[test]
fn writes_are_shaped_generated_and_refused_the_vendors_way() {
    let mut app = slack();
    app.determinism = Some(Determinism::new(Some(1_733_400_000.0), 7));
    let created = form(&app, "conversations.create", "name=launch-plans").1;
    let id = text(&created, "channel.id").to_string();
    assert!(id.starts_with('C') && id.len() == 11, "{id}");
    assert_eq!(created.get("channel").and_then(|c| c.get("created")).and_then(Value::as_i64), Some(1_733_400_000));
    assert_eq!(text(&created, "channel.name_normalized"), "launch-plans");
    assert_eq!(error(&form(&app, "conversations.create", "name=general")), (200, "name_taken".into()));

    let posted = json(&app, "chat.postMessage", &format!(r#"{{"channel": "{id}", "text": "one"}}"#)).1;
    let keys: Vec<&String> = posted.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ok", "channel", "ts", "message"]);
    assert_eq!(text(&posted, "ts"), "1733400000.000000");
    let second = json(&app, "chat.postMessage", &format!(r#"{{"channel": "{id}", "text": "two"}}"#)).1;
    assert_eq!(text(&second, "ts"), "1733400000.000001", "a frozen clock still never repeats a ts");
    assert_eq!(error(&json(&app, "chat.postMessage", r#"{"channel": "C0NOWHERE", "text": "x"}"#)), (200, "channel_not_found".into()));

    let updated = json(&app, "chat.update", &format!(r#"{{"channel": "{id}", "ts": "1733400000.000000", "text": "uno"}}"#)).1;
    assert_eq!((text(&updated, "text"), text(&updated, "message.text")), ("uno", "uno"));
    let nowhere = json(&app, "chat.update", r#"{"channel": "C0NOWHERE", "ts": "1733400000.000000", "text": "x"}"#);
    assert_eq!(error(&nowhere), (200, "channel_not_found".into()), "the parent step's own not-found");
    let missing = json(&app, "chat.update", &format!(r#"{{"channel": "{id}", "ts": "1000000000.000001", "text": "x"}}"#));
    assert_eq!(error(&missing), (200, "message_not_found".into()));

    let reacted = form(&app, "reactions.add", &format!("channel={id}&timestamp=1733400000.000000&name=rocket"));
    assert_eq!((reacted.0, canonical(&reacted.1)), (200, r#"{"ok":true}"#.into()), "a constant answer");
    let again = form(&app, "reactions.add", &format!("channel={id}&timestamp=1733400000.000000&name=rocket"));
    assert_eq!(error(&again), (200, "already_reacted".into()));

    let deleted = form(&app, "chat.delete", &format!("channel={id}&ts=1733400000.000001"));
    assert_eq!(canonical(&deleted.1), format!(r#"{{"channel":"{id}","ok":true,"ts":"1733400000.000001"}}"#), "lifted members alone");
    assert_eq!(error(&form(&app, "chat.delete", &format!("channel={id}&ts=1733400000.000001"))), (200, "message_not_found".into()));
}

#[test]
fn the_openapi_document_promises_the_declared_shapes() {
    let app = slack();
    let document = app.handle("GET", "/openapi.json", &[], b"", "h").body.unwrap();
    let operation = |path: &str| document.get("paths").and_then(|p| p.get(path)).and_then(|p| p.get("post")).cloned().unwrap_or_default();
    let ok = |op: &Value| op.get("responses").and_then(|r| r.get("200")).map(canonical).unwrap_or_default();
    let users = operation("/users.list");
    let listed = ok(&users);
    assert!(
        listed.contains(r#""next_cursor""#) && listed.contains(r#""response_metadata""#) && listed.contains(r#"{"const":true}"#),
        "{listed}"
    );
    assert!(!listed.contains(r#""hits""#), "no total is promised: {listed}");
    let info = ok(&operation("/users.info"));
    assert!(info.contains("user_not_found") && info.contains(r##""user":{"$ref":"#/components/schemas/users"}"##), "{info}");
    let auth = ok(&operation("/auth.test"));
    assert!(auth.contains(r#""user_id":"U0ACMEBOT""#) && !auth.contains("not_modelled"), "{auth}");
    let create = ok(&operation("/conversations.create"));
    assert!(create.contains("name_taken"), "{create}");
    let text = canonical(&document);
    assert!(parse(&text).is_ok());
}

#[test]
fn forms_are_read_only_where_declared() {
    let mut app = slack();
    app.determinism = Some(Determinism::new(Some(1_733_400_000.0), 7));
    // slack_sdk's multipart post (`files_upload_v2` sends its fields so): read as fields.
    let body = "--b0und\r\nContent-Disposition: form-data; name=\"channel\"\r\n\r\nC0ACME001\r\n\
--b0und\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nfrom a multipart form\r\n--b0und--\r\n";
    let posted = call(&app, "chat.postMessage", "multipart/form-data; boundary=b0und", body);
    assert_eq!((posted.0, text(&posted.1, "message.text")), (200, "from a multipart form"), "{}", canonical(&posted.1));
    assert_eq!(text(&posted.1, "channel"), "C0ACME001");

    // A world that does not declare `forms` refuses a form as the original does: the
    // `invalid` answer, nothing written.
    let helpdesk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    let app = load(&helpdesk, &ServeOptions { api_key: Some(TOKEN.into()), ..ServeOptions::default() }).expect("the example serves");
    let route = app.handle("GET", "/openapi.json", &[], b"", "h").body.unwrap();
    let (path, create) = route
        .get("paths")
        .and_then(Value::as_object)
        .and_then(|paths| {
            paths
                .iter()
                .filter(|(path, _)| !path.contains('{'))
                .find_map(|(path, p)| p.get("post").filter(|op| op.get("requestBody").is_some()).map(|op| (path.clone(), op.clone())))
        })
        .expect("the helpdesk creates something");
    let content = create.get("requestBody").and_then(|b| b.get("content")).and_then(Value::as_object).unwrap();
    assert_eq!(content.keys().collect::<Vec<_>>(), ["application/json"], "only JSON is promised");
    let headers = [
        ("authorization".to_string(), format!("Bearer {TOKEN}")),
        ("content-type".to_string(), "application/x-www-form-urlencoded".to_string()),
    ];
    let served = route
        .get("servers")
        .and_then(Value::as_array)
        .and_then(|s| s.first())
        .and_then(|s| s.get("url"))
        .and_then(Value::as_str)
        .unwrap_or("");
    // The document's server is the world's mount, relative to where it is read.
    let prefix = format!("/{}", served.trim_matches('/'));
    let refused = app.handle("POST", &format!("{prefix}{path}"), &headers, b"title=Form", "h");
    let said = refused.body.as_ref().map(canonical).unwrap_or_default();
    assert_eq!((refused.status, said.contains("RecordInvalid")), (422, true), "the helpdesk's `invalid` answer: {said}");
}
