//! The example world's tool descriptors held to its contract (issue 25 item 2):
//! every create/update body property is an entity field of the same type, a
//! create requires what the contract requires but what the server fills in, path
//! ids are typed as the key, query filters as their field; no tool is listed
//! twice; the list is snapshotted (`snapshots/`, review with `cargo insta
//! review`). Then calls: integer and textual ids both reach the path, a body
//! passes as `body=` or flat, and an id of the wrong type is refused by name.

use gateway_host::mcp::open_local;
use gateway_host::HostError;
use gateway_world::json::{self, DumpOptions, Value};
use std::path::{Path, PathBuf};

fn helpdesk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk").canonicalize().unwrap()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> =
        value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    out.sort();
    out
}

/// A schema's declared type(s), `null` left out, as one sorted text.
fn type_of(schema: &Value) -> String {
    let mut types: Vec<String> = match schema.get("type") {
        Some(Value::Str(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    types.retain(|t| t != "null");
    types.sort();
    types.join("|")
}

#[test]
fn the_examples_tool_schemas_follow_its_contract() {
    let local = open_local(&helpdesk(), None, None).unwrap();
    let session = local.host.using(&local.session_id, false).unwrap();
    let version = session.version();
    let contract = version.template.contract();
    let tools = gateway_host::tools::tools(version, None);
    let tools = tools.as_array().unwrap();

    // Once each, though the world's own tools share three operations' names.
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
    assert!(version.tools.is_some(), "the example has tools of its own");
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "a tool listed twice: {names:?}");

    let mut checked = 0;
    for operation in &version.spec.operations {
        let tool = tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(&operation.name)).unwrap();
        let schema = tool.get("inputSchema").unwrap();
        assert!(!json::canonical(schema).contains("$ref"), "{}: flat, no $ref", operation.name);
        let properties = schema.get("properties").and_then(Value::as_object).unwrap();
        let entity = contract.entity(operation.entity.as_deref().unwrap()).unwrap();
        let op = version.settings.for_operation(&operation.name);
        // Path placeholders: required, typed as the field their filter reads or the key they name.
        for name in operation.placeholders() {
            assert!(strings(schema.get("required")).contains(&name), "{}: {name} required", operation.name);
            let field = op.filter.iter().find(|(arg, _)| *arg == name).map_or(name.as_str(), |(_, field)| field.as_str());
            let want = type_of(entity.property(field).unwrap());
            assert_eq!(type_of(&properties[name.as_str()]), want, "{}: path {name}", operation.name);
            assert!(properties[name.as_str()].get("description").is_some(), "{}: {name} described", operation.name);
            checked += 1;
        }
        // Query filters: an equality typed (and enumerated) as its field; a `contains` any text.
        for (arg, field) in op.filter.iter().filter(|(arg, _)| operation.params.contains(arg)) {
            let field_schema = entity.property(field).unwrap();
            let field_schema = field_schema.get("items").unwrap_or(field_schema);
            let property = &properties[arg.as_str()];
            match op.matching.get(arg).map(String::as_str) {
                Some("contains" | "prefix") => assert_eq!(type_of(property), "string"),
                _ => {
                    assert_eq!(type_of(property), type_of(field_schema), "{}: query {arg}", operation.name);
                    assert_eq!(property.get("enum").map(json::canonical), field_schema.get("enum").map(json::canonical));
                }
            }
            checked += 1;
        }
        if !matches!(op.action.as_str(), "create" | "update") {
            continue;
        }
        // Bodies: the entity's fields, same types; a create requires the contract's
        // required fields but the defaulted and generated ones; an update nothing.
        let body = &properties["body"];
        let fields = body.get("properties").and_then(Value::as_object).unwrap();
        assert!(!fields.is_empty(), "{}: a typed body", operation.name);
        for (field, property) in fields {
            let declared =
                entity.property(field).unwrap_or_else(|| panic!("{}: body.{field} is no field of {}", operation.name, entity.name));
            assert_eq!(type_of(property), type_of(declared), "{}: body.{field}", operation.name);
            assert_eq!(property.get("enum").map(json::canonical), declared.get("enum").map(json::canonical));
            assert_eq!(property.get("format").map(json::canonical), declared.get("format").map(json::canonical));
        }
        let supplied = |f: &String| op.defaults.contains_key(f.as_str()) || op.generate.iter().any(|(g, _)| g == f);
        let expected: Vec<String> = if op.action == "create" {
            strings(entity.schema.get("required")).into_iter().filter(|f| !supplied(f)).collect()
        } else {
            Vec::new()
        };
        assert_eq!(strings(body.get("required")), expected, "{}: body required", operation.name);
        assert_eq!(strings(schema.get("required")).contains(&"body".to_string()), !expected.is_empty());
        checked += 1;
    }
    // Helpdesk's own: ids are integers, its create requires customer_id and subject.
    let create = tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some("create_ticket")).unwrap();
    assert_eq!(
        strings(create.get("inputSchema").and_then(|s| s.get("properties")).and_then(|p| p.get("body")).and_then(|b| b.get("required"))),
        ["customer_id", "subject"]
    );
    let solve = tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some("solve_ticket")).unwrap();
    assert_eq!(
        json::canonical(solve.get("inputSchema").unwrap().get("properties").unwrap().get("id").unwrap().get("type").unwrap()),
        r#""integer""#
    );
    assert!(checked >= 15, "only {checked} checks ran");

    let pretty =
        json::dumps(&Value::Array(tools.clone()), DumpOptions { sort_keys: false, ensure_ascii: false, indent: Some(2), compact: false });
    insta::assert_snapshot!("helpdesk_tools", pretty);
}

#[test]
fn ids_reach_the_path_as_integers_or_text_and_a_wrong_type_is_refused_by_name() {
    let local = open_local(&helpdesk(), None, None).unwrap();
    let (host, sid) = (&local.host, local.session_id.as_str());
    let version = host.using(sid, false).unwrap().version().clone();
    let call = |tool: &str, args: &str| {
        let routed = gateway_host::tools::route_args(&version, tool, &json::parse(args).unwrap().value);
        host.call(sid, tool, &routed)
    };
    let status = |answer: &Value| answer.get("status").and_then(Value::as_i64);
    assert_eq!(status(&call("get_ticket", r#"{"id": 101}"#).unwrap()), Some(200));
    assert_eq!(status(&call("get_ticket", r#"{"id": "101"}"#).unwrap()), Some(200));
    let message = |error: HostError| match error {
        HostError::Refused(refused) => (refused.code, refused.message),
        other => panic!("{other}"),
    };
    let refused = message(call("get_ticket", r#"{"id": "abc"}"#).unwrap_err());
    assert_eq!(refused, ("invalid_argument".into(), "argument id of get_ticket must be an integer, not 'abc'".into()));
    let refused = message(call("list_tickets", r#"{"status": "lost"}"#).unwrap_err());
    assert_eq!(refused.1, "argument status of list_tickets must be one of 'open', 'pending', 'solved', not 'lost'");

    // A body as `body=` or as flat fields: both create.
    let nested = call("create_ticket", r#"{"body": {"customer_id": "C1", "subject": "Printer on fire"}}"#).unwrap();
    let flat = call("create_ticket", r#"{"customer_id": "C1", "subject": "Printer still on fire", "priority": 2}"#).unwrap();
    for created in [&nested, &flat] {
        assert!(status(created).is_some_and(|s| s < 300), "{}", json::canonical(created));
    }
    let id = flat.get("body").and_then(|b| b.get("id")).cloned().unwrap();
    let got = call("get_ticket", &format!(r#"{{"id": {}}}"#, json::canonical(&id))).unwrap();
    assert_eq!(got.get("body").and_then(|b| b.get("priority")).and_then(Value::as_i64), Some(2));
    // An update with an integer id and a partial body.
    let updated = call("update_ticket", &format!(r#"{{"id": {}, "body": {{"status": "pending"}}}}"#, json::canonical(&id))).unwrap();
    assert_eq!(updated.get("body").and_then(|b| b.get("status")).map(json::canonical).as_deref(), Some(r#""pending""#));
}
