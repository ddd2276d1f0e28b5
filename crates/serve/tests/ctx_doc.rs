//! The handler `ctx` as documented is the `ctx` the worker hands handlers: the
//! connectors skill's table ("The handler's `ctx`" in CONNECTORS.md) lists every
//! public method of worker.py's `ApiContext` with its exact signature and every
//! public attribute, nothing more; and every `ctx` call the worker sends to the
//! server is one the server answers (ctx.rs).

use gateway_serve::handlers::WORKER_SOURCE;
use std::collections::BTreeSet;
use std::path::Path;

const DOC: &str = "../connector/skills/connector-schema-authoring/CONNECTORS.md";
const SECTION: &str = "### The handler's `ctx`";

/// `ctx.name(params) -> returns` for each public method of `ApiContext`, and
/// `ctx.name` for each public attribute its `__init__` sets.
fn worker_api() -> BTreeSet<String> {
    let class = WORKER_SOURCE.split("\nclass ApiContext").nth(1).expect("worker.py defines ApiContext");
    let class = class.split("\n# ----").next().unwrap_or(class);
    let mut api = BTreeSet::new();
    let mut in_init = false;
    for line in class.lines() {
        let trimmed = line.trim();
        if let Some(def) = trimmed.strip_prefix("def ") {
            in_init = def.starts_with("__init__");
            if def.starts_with('_') {
                continue;
            }
            let (name, rest) = def.split_once('(').expect("a def has parameters");
            let rest = rest.strip_suffix(':').expect("a def's line ends the signature");
            let (params, returns) = rest.rsplit_once(')').expect("parameters close");
            let params = params.strip_prefix("self").unwrap_or(params).trim_start_matches(", ");
            api.insert(format!("ctx.{name}({params}){returns}"));
        } else if in_init {
            if let Some(attribute) = trimmed.strip_prefix("self.").and_then(|a| a.split_once(" = ")).map(|(a, _)| a) {
                if !attribute.starts_with('_') {
                    api.insert(format!("ctx.{attribute}"));
                }
            }
        }
    }
    api
}

/// The first cell of each row of the documented table, code unquoted.
fn documented_api() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC);
    let text = std::fs::read_to_string(&path).expect("the connectors skill");
    let section = text.split(SECTION).nth(1).unwrap_or_else(|| panic!("{DOC} has no section {SECTION}"));
    let section = section.split("\n#").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `ctx."))
        .map(|row| {
            let cell = row.split("` |").next().expect("a code cell");
            format!("ctx.{}", cell.replace("\\|", "|"))
        })
        .collect()
}

#[test]
fn the_documented_ctx_is_the_workers() {
    let worker = worker_api();
    let documented = documented_api();
    assert!(worker.len() > 20, "the worker's ctx was read: {worker:?}");
    let undocumented: Vec<&String> = worker.difference(&documented).collect();
    let gone: Vec<&String> = documented.difference(&worker).collect();
    assert!(undocumented.is_empty() && gone.is_empty(), "not documented as they are: {undocumented:#?}\ndocumented but not so: {gone:#?}");
}

#[test]
fn every_ctx_call_the_worker_makes_is_answered_by_the_server() {
    let server = include_str!("../src/ctx.rs");
    let sent: BTreeSet<&str> = WORKER_SOURCE.split("_rpc(\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    assert!(sent.contains("rows") && sent.contains("add_fields"), "{sent:?}");
    for method in sent {
        assert!(server.contains(&format!("\"{method}\"")), "ctx.rs does not answer ctx.{method}");
    }
}
