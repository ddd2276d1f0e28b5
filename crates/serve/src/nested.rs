//! Nested resources, declared: `/repos/{owner}/{repo}/issues/{number}` names its
//! rows through parents. `api.parent` lists the steps from the path's first
//! arguments to the row's own parent, each an entity found by path arguments
//! (`match`) and, after the first, by the step before it (`link`); `api.link` ties
//! the operation's rows to the last parent found:
//!
//! ```toml
//! [operations.api]
//! parent = [
//!   { entity = "repositories", match = { owner = "owner.login", repo = "name" } },
//!   { entity = "issues", match = { number = "number" }, link = { repository_id = "id" } },
//! ]
//! link = { issue_id = "id" }   # a comment's issue_id is its issue's id
//! ```
//!
//! A step may match parameters as well as path arguments (Slack's methods name the
//! channel in the body: `match = { channel = "id" }`, with `[api] body_params`), and
//! may declare its own `not_found` body (`'{"ok": false, "error": "channel_not_found"}'`).
//!
//! A `link` may be left out when the contract says it: a relationship of the rows'
//! entity to the parent's (`x-gateway.entities.<e>.relationships`: `fields` →
//! the target's primary key) is the link, its fields paired with the target's key —
//! several of them for a composite one (a comment → its issue by `(repository_id,
//! number)`). [`link_from_contract`] fills them in once the contract is known.
//!
//! A parent that does not exist answers the world's not-found. Reads and writes
//! see only the parent's rows (`link` is a filter); a create fills the link fields
//! from the parent, and an `int-in-parent` generator counts among the parent's rows
//! (GitHub numbers issues per repository).
//!
//! This module resolves and parses; it does not answer requests (see `app`).

use crate::dotted::{dig, set_dotted};
use crate::settings::types::ApiSettings;
use crate::state::{Filter, WorldState};
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{python_str, Map, Value};
use toml::Value as Toml;

pub mod types;

pub use types::{Nesting, ParentStep};

fn pairs(value: Option<&Toml>, what: &str, location: &str) -> Result<Vec<(String, String)>, ContractError> {
    match value {
        None => Ok(Vec::new()),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.is_empty() && v.as_str().is_some_and(|s| !s.is_empty())) => {
            Ok(m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        }
        Some(_) => fail("spec", format!("{what} maps names to field paths"), location.to_string()),
    }
}

/// Read `api.parent` / `api.link`; `declared` says whether a name is one of the
/// operation's path arguments or parameters. None when the operation is not nested.
pub fn parse(t: &toml::Table, location: &str, declared: &dyn Fn(&str) -> bool) -> Result<Option<Nesting>, ContractError> {
    let steps = match t.get("parent") {
        None => Vec::new(),
        Some(Toml::Array(items)) if !items.is_empty() => items.clone(),
        Some(table @ Toml::Table(_)) => vec![table.clone()],
        Some(_) => return fail("spec", "api.parent is a list of {entity, match, link?} steps", format!("{location}/parent")),
    };
    let link = pairs(t.get("link"), "api.link", &format!("{location}/link"))?;
    if steps.is_empty() {
        if !link.is_empty() {
            return fail("spec", "api.link ties rows to a parent: declare api.parent", format!("{location}/link"));
        }
        return Ok(None);
    }
    let mut parents = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let at = format!("{location}/parent/{index}");
        let Some(step) = step.as_table() else {
            return fail("spec", "a parent step is a table {entity, match, link?}", at);
        };
        let entity = match step.get("entity") {
            Some(Toml::String(name)) if !name.is_empty() => name.clone(),
            _ => return fail("spec", "a parent step names its entity", format!("{at}/entity")),
        };
        let matching = pairs(step.get("match"), "a parent step's match", &format!("{at}/match"))?;
        if let Some((arg, _)) = matching.iter().find(|(arg, _)| !declared(arg)) {
            return fail(
                "spec",
                format!("parent match names {arg}, which is neither a path argument nor a parameter"),
                format!("{at}/match"),
            );
        }
        let step_link = pairs(step.get("link"), "a parent step's link", &format!("{at}/link"))?;
        if index == 0 && !step_link.is_empty() {
            return fail("spec", "the first parent step has no step before it to link to", format!("{at}/link"));
        }
        if matching.is_empty() && step_link.is_empty() {
            return fail("spec", "a parent step matches path arguments or links to the step before", at);
        }
        let not_found = crate::reply::parse_step_not_found(step, &at)?;
        parents.push(ParentStep { entity, matching, link: step_link, not_found });
    }
    Ok(Some(Nesting { parents, link }))
}

/// A relationship field as a row path: a property name, or a JSON pointer (`/a/b`) as
/// the dotted `a.b`.
fn row_path(field: &str) -> String {
    match field.strip_prefix('/') {
        Some(pointer) => pointer.split('/').map(|part| part.replace("~1", "/").replace("~0", "~")).collect::<Vec<_>>().join("."),
        None => field.to_string(),
    }
}

/// The link the contract gives from `entity`'s rows to `parent`'s: its one
/// relationship to `parent`, each field paired with the parent's primary key. None
/// when it has none; refused when it has several (the link must say which).
fn relationship_link(
    contract: &gateway_world::Contract,
    entity: &str,
    parent: &str,
    location: &str,
) -> Result<Option<Vec<(String, String)>>, ContractError> {
    let (Some(child), Some(target)) = (contract.entity(entity), contract.entity(parent)) else { return Ok(None) };
    let mut relationships = child.relationships.iter().filter(|r| r.target == parent && r.fields.len() == target.primary_key.len());
    let Some(relationship) = relationships.next() else { return Ok(None) };
    if relationships.next().is_some() {
        return fail("spec", format!("{entity} has several relationships to {parent}: say which fields link them"), location.to_string());
    }
    Ok(Some(relationship.fields.iter().map(|f| row_path(f)).zip(target.primary_key.iter().cloned()).collect()))
}

/// Fill the links `api.parent` and `api.link` leave out from the contract's
/// relationships (see the module's description): a step's, when its entity has a
/// relationship to the step before's (else it matches by its arguments alone); the
/// operation's, which it cannot do without.
pub fn link_from_contract(
    settings: &mut ApiSettings,
    spec: &gateway_connector::spec::Spec,
    contract: &gateway_world::Contract,
) -> Result<(), ContractError> {
    for (index, operation) in spec.operations.iter().enumerate() {
        let location = format!("/operations/{index}/api");
        let Some(nesting) = settings.operations.get_mut(&operation.name).and_then(|op| op.nesting.as_mut()) else { continue };
        for at in 1..nesting.parents.len() {
            if nesting.parents[at].link.is_empty() {
                let (step, before) = (&nesting.parents[at].entity, &nesting.parents[at - 1].entity);
                let derived = relationship_link(contract, step, before, &format!("{location}/parent/{at}/link"))?;
                nesting.parents[at].link = derived.unwrap_or_default();
            }
        }
        if nesting.link.is_empty() {
            let entity = operation.entity.as_deref().unwrap_or_default();
            let parent = nesting.parents.last().map(|p| p.entity.as_str()).unwrap_or_default();
            match relationship_link(contract, entity, parent, &format!("{location}/link"))? {
                Some(link) => nesting.link = link,
                None => {
                    let message = format!(
                        "api.link says which fields of the operation's rows hold the parent's (or the contract relates {entity} to {parent})"
                    );
                    return fail("spec", message, format!("{location}/link"));
                }
            }
        }
    }
    Ok(())
}

/// The filter text of a value, as [`Filter::wanted`] compares it.
fn wanted(value: &Value) -> String {
    python_str(value).to_lowercase()
}

fn equals(path: &str, value: &Value) -> Filter {
    Filter { path: path.to_string(), mode: "equals".into(), wanted: wanted(value) }
}

/// The last parent the request names (`args`: its path arguments and parameters),
/// or the first step that finds no row.
pub fn resolve<'n>(
    state: &WorldState,
    nesting: &'n Nesting,
    args: &[(String, String)],
) -> gateway_world::Result<Result<Value, &'n ParentStep>> {
    let mut previous: Option<Value> = None;
    for step in &nesting.parents {
        let mut filters: Vec<Filter> = Vec::new();
        for (arg, field) in &step.matching {
            let given = args.iter().find(|(k, _)| k == arg).map(|(_, v)| v.as_str()).unwrap_or_default();
            filters.push(Filter { path: field.clone(), mode: "equals".into(), wanted: given.to_lowercase() });
        }
        for (field, from) in &step.link {
            let value = previous.as_ref().and_then(|row| dig(row, from)).cloned().unwrap_or_default();
            filters.push(equals(field, &value));
        }
        let (_, rows) = state.select(&step.entity, &filters, Some((0, 1)))?;
        match rows.into_iter().next() {
            Some(row) => previous = Some(row),
            None => return Ok(Err(step)),
        }
    }
    Ok(previous.ok_or(&nesting.parents[0]))
}

/// The filters that keep the parent's rows only.
pub fn link_filters(nesting: &Nesting, parent: &Value) -> Vec<Filter> {
    nesting.link.iter().map(|(field, from)| equals(field, dig(parent, from).unwrap_or(&Value::Null))).collect()
}

/// The parent's values a new row holds (`field → value`), set over what the body said.
pub fn fill(nesting: &Nesting, parent: &Value, row: &mut Map) {
    for (field, from) in &nesting.link {
        let value = dig(parent, from).cloned().unwrap_or_default();
        set_dotted(row, field, value, None);
    }
}

/// The link fields and values of a parent, for counting generated integers among
/// its rows (`int-in-parent`).
pub fn scope(nesting: &Nesting, parent: &Value) -> Vec<(String, Value)> {
    nesting.link.iter().map(|(field, from)| (field.clone(), dig(parent, from).cloned().unwrap_or_default())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn steps_parse_and_refusals_name_the_key() {
        let args = |name: &str| ["owner", "repo", "number"].contains(&name);
        let nesting = parse(
            &table(
                r#"parent = [{ entity = "repositories", match = { owner = "owner.login", repo = "name" } },
                             { entity = "issues", match = { number = "number" }, link = { repository_id = "id" } }]
                   link = { issue_id = "id" }"#,
            ),
            "/operations/0/api",
            &args,
        )
        .unwrap()
        .unwrap();
        assert_eq!(nesting.parents.len(), 2);
        assert_eq!(nesting.parents[1].link, vec![("repository_id".to_string(), "id".to_string())]);
        assert!(nesting.parents[0].not_found.is_none());
        let slack = parse(
            &table(
                r#"parent = [{ entity = "conversations", match = { channel = "id" }, not_found = '{"ok": false, "error": "channel_not_found"}' }]
                   link = { channel = "id" }"#,
            ),
            "/operations/0/api",
            &|name| name == "channel",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            slack.parents[0].not_found.as_ref().map(gateway_world::json::canonical).as_deref(),
            Some(r#"{"error":"channel_not_found","ok":false}"#)
        );
        assert_eq!(nesting.link, vec![("issue_id".to_string(), "id".to_string())]);
        assert!(parse(&table(""), "/x", &args).unwrap().is_none());
        for (text, said) in [
            (r#"link = { a = "id" }"#, "declare api.parent"),
            (
                r#"parent = [{ entity = "r", match = { nope = "x" } }]
                link = { a = "id" }"#,
                "nope, which is neither a path argument nor a parameter",
            ),
            (
                r#"parent = [{ entity = "r", match = { owner = "x" }, link = { a = "b" } }]
                link = { a = "id" }"#,
                "first parent step",
            ),
            (r#"parent = 3"#, "list of {entity, match, link?}"),
        ] {
            let error = parse(&table(text), "/operations/0/api", &args).unwrap_err();
            assert!(error.message.contains(said), "{text}: {}", error.message);
        }
    }
}
