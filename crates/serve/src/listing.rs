//! How a list route reads its query, declared: parameter defaults (`state` is
//! `open` unless the client says), values that mean "any" (`state=all`), and
//! sorting by a parameter with a direction (`sort=created&direction=asc`).
//!
//! ```toml
//! [operations.api]
//! query_defaults = { state = "open" }
//! any = { state = "all" }
//! sort = { param = "sort", direction = "direction", fields = { created = "created_at", updated = "updated_at" },
//!          default = "created", default_direction = "desc" }
//! ```
//!
//! Without a `param`, the order is fixed: Slack's history is newest first,
//! `sort = { fields = { ts = "ts" }, default_direction = "desc" }`.

use gateway_world::error::{fail, ContractError};
use gateway_world::json::Value;
use std::cmp::Ordering;
use toml::Value as Toml;

/// Sorting a list by a query parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Sort {
    /// The parameter naming the sort key (None: always the default).
    pub param: Option<String>,
    /// The parameter naming the direction (`asc` | `desc`).
    pub direction: Option<String>,
    /// Sort key → the row's dotted field.
    pub fields: Vec<(String, String)>,
    /// The sort key when none is asked.
    pub default: String,
    /// `asc` or `desc` when none is asked.
    pub default_direction: String,
}

/// `api.query_defaults`, `api.any` and `api.sort` of a read operation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listing {
    /// Parameter → its value when the client sends none.
    pub defaults: Vec<(String, String)>,
    /// Parameter → the value that means "no filter".
    pub any: Vec<(String, String)>,
    /// The sort, if declared.
    pub sort: Option<Sort>,
}

fn text_map(t: &toml::Table, key: &str, location: &str, declared: &dyn Fn(&str) -> bool) -> Result<Vec<(String, String)>, ContractError> {
    let pairs: Vec<(String, String)> = match t.get(key) {
        None => return Ok(Vec::new()),
        Some(Toml::Table(m)) if m.values().all(|v| matches!(v, Toml::String(_) | Toml::Integer(_) | Toml::Boolean(_))) => {
            m.iter().map(|(k, v)| (k.clone(), crate::vendor::scalar_text(v))).collect()
        }
        Some(_) => return fail("spec", format!("api.{key} maps parameters to values"), format!("{location}/{key}")),
    };
    if let Some((name, _)) = pairs.iter().find(|(name, _)| !declared(name)) {
        return fail("spec", format!("api.{key} names {name}, which is not a parameter of the operation"), format!("{location}/{key}"));
    }
    Ok(pairs)
}

/// Read the listing keys; `declared` says whether a name is a query parameter of the operation.
pub fn parse(t: &toml::Table, location: &str, declared: &dyn Fn(&str) -> bool) -> Result<Listing, ContractError> {
    let defaults = text_map(t, "query_defaults", location, declared)?;
    let any = text_map(t, "any", location, declared)?;
    let sort = match t.get("sort") {
        None => None,
        Some(Toml::Table(s)) => {
            let at = format!("{location}/sort");
            let text = |key: &str| s.get(key).and_then(Toml::as_str).map(str::to_string);
            let param = text("param");
            if let Some(param) = param.as_deref().filter(|p| !declared(p)) {
                return fail("spec", format!("api.sort.param {param} is not a parameter of the operation"), at);
            }
            let direction = text("direction");
            if let Some(direction) = direction.as_deref().filter(|d| !declared(d)) {
                return fail("spec", format!("api.sort.direction {direction} is not a parameter of the operation"), at);
            }
            let fields: Vec<(String, String)> = match s.get("fields") {
                Some(Toml::Table(m)) if !m.is_empty() && m.values().all(Toml::is_str) => {
                    m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
                }
                _ => return fail("spec", "api.sort.fields maps sort keys to row fields", at),
            };
            let default = text("default").unwrap_or_else(|| fields[0].0.clone());
            if !fields.iter().any(|(k, _)| *k == default) {
                return fail("spec", format!("api.sort.default {default} is not one of its fields"), at);
            }
            let default_direction = text("default_direction").unwrap_or_else(|| "asc".into());
            if !matches!(default_direction.as_str(), "asc" | "desc") {
                return fail("spec", "api.sort.default_direction is asc or desc", at);
            }
            Some(Sort { param, direction, fields, default, default_direction })
        }
        Some(_) => {
            return fail(
                "spec",
                "api.sort is a table {param?, direction?, fields, default?, default_direction?}",
                format!("{location}/sort"),
            )
        }
    };
    Ok(Listing { defaults, any, sort })
}

impl Listing {
    /// The query as the route reads it: defaults for what the client left out,
    /// "any" values dropped (so they filter nothing).
    pub fn apply(&self, query: &[(String, String)]) -> Vec<(String, String)> {
        let mut out = query.to_vec();
        for (name, value) in &self.defaults {
            if !out.iter().any(|(k, _)| k == name) {
                out.push((name.clone(), value.clone()));
            }
        }
        out.retain(|(k, v)| !self.any.iter().any(|(name, all)| name == k && all.eq_ignore_ascii_case(v)));
        out
    }

    /// The row field and descending flag the query asks to sort by, if sorted.
    pub fn order(&self, query: &[(String, String)]) -> Option<(String, bool)> {
        let sort = self.sort.as_ref()?;
        let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let key = sort.param.as_deref().and_then(get).filter(|k| sort.fields.iter().any(|(name, _)| name == k)).unwrap_or(&sort.default);
        let field = sort.fields.iter().find(|(name, _)| name == key).map(|(_, f)| f.clone())?;
        let direction = sort.direction.as_deref().and_then(get).filter(|d| matches!(*d, "asc" | "desc")).unwrap_or(&sort.default_direction);
        Some((field, direction == "desc"))
    }
}

/// Numbers by value, text by text, anything else after; a missing field last.
fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) if !matches!(a, Value::Str(_)) && !matches!(b, Value::Str(_)) => x.total_cmp(&y),
            _ => gateway_world::json::python_str(a).cmp(&gateway_world::json::python_str(b)),
        },
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Sort rows by `field` (stable: equal rows keep key order).
pub fn sort_rows(rows: &mut [Value], field: &str, descending: bool) {
    rows.sort_by(|a, b| {
        let order = compare(crate::dotted::dig(a, field), crate::dotted::dig(b, field));
        if descending {
            order.reverse()
        } else {
            order
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_any_and_order() {
        let t: toml::Table = r#"query_defaults = { state = "open" }
any = { state = "all" }
sort = { param = "sort", direction = "direction", fields = { created = "created_at", number = "number" }, default = "created", default_direction = "desc" }"#
            .parse()
            .unwrap();
        let params = ["state", "sort", "direction"];
        let listing = parse(&t, "/x", &|n| params.contains(&n)).unwrap();
        let q = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(listing.apply(&q(&[])), q(&[("state", "open")]));
        assert_eq!(listing.apply(&q(&[("state", "ALL")])), q(&[]));
        assert_eq!(listing.apply(&q(&[("state", "closed")])), q(&[("state", "closed")]));
        assert_eq!(listing.order(&q(&[])), Some(("created_at".into(), true)));
        assert_eq!(listing.order(&q(&[("sort", "number"), ("direction", "asc")])), Some(("number".into(), false)));
        assert_eq!(listing.order(&q(&[("sort", "bogus")])), Some(("created_at".into(), true)));
        let mut rows: Vec<Value> = [3, 10, 2].iter().map(|n| gateway_world::json::object([("number", Value::Int(*n))])).collect();
        sort_rows(&mut rows, "number", false);
        let numbers: Vec<i64> = rows.iter().filter_map(|r| r.get("number").and_then(Value::as_i64)).collect();
        assert_eq!(numbers, [2, 3, 10], "numbers by value, not as text");
        let fixed = parse(&r#"sort = { fields = { ts = "ts" }, default_direction = "desc" }"#.parse().unwrap(), "/x", &|_| false).unwrap();
        assert_eq!(fixed.order(&q(&[("sort", "ts"), ("direction", "asc")])), Some(("ts".into(), true)), "a fixed order");
        let refused = parse(&"any = { nope = \"all\" }".parse().unwrap(), "/x", &|n| params.contains(&n)).unwrap_err();
        assert!(refused.message.contains("nope, which is not a parameter"), "{}", refused.message);
    }
}
