//! Parsing a session task spec as the original's `parse_task_spec` does: the
//! same checks in the same order, each refusal with its message and place.
//!
//! Only shape and size: the types parsed into live in `spec` (which names
//! nothing here: this module adds [`TaskSpec::parse`] to them), and whether the
//! entities and tools exist in a world is `host`'s question.

use super::spec::{
    Assertion, Check, CountBound, Criterion, FieldTest, Grader, Op, RubricModel, Seed, SeedMode, TaskSpec, Tolerance, CHECKS,
    INSTRUCTION_BYTES, METADATA_BYTES, NAME_CHARS, OPS, PYTHON_SOURCE_BYTES, PYTHON_TIMEOUT_S, RUBRIC_BYTES, RUBRIC_CRITERIA,
    RUBRIC_CRITERION_BYTES, SEED_BYTES, SEED_ROWS, TOOLS, TOOL_NAME_CHARS,
};
use crate::error::ContractError;
use crate::json::{dumps, DumpOptions, Map, Value};
use crate::plan::Rows;
use std::collections::HashSet;

/// Longest entity name a task may give, in characters.
const ENTITY_CHARS: usize = 120;
/// Longest check or criterion id, in characters.
const ID_CHARS: usize = 120;

/// The refusal code of every spec refusal.
const CODE: &str = "task";

pub(super) fn refuse(message: impl Into<String>, at: impl Into<String>) -> ContractError {
    ContractError::new(CODE, message, at)
}

/// Compact, ASCII-escaped, member order kept: `json.dumps(v, separators=(",", ":"))`.
const SIZED: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: true };

/// The size the original measures a JSON value by.
fn json_bytes(value: &Value) -> usize {
    dumps(value, SIZED).len()
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Whether `text` matches `^[first][rest]*$` as Python's `re.match` reads it:
/// `$` also matches before one final newline, so `"name\n"` passes.
fn matches_name(text: &str, first: fn(char) -> bool, rest: fn(char) -> bool) -> bool {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut it = body.chars();
    it.next().is_some_and(first) && it.all(rest)
}

fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}
fn alnum_underscore(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}
fn tool_char(c: char) -> bool {
    name_char(c) || c == ':'
}

/// A Python `int` or `float`, never a bool.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// `None`, a string, a bool or a number: what `where`, `value` and `in` options hold.
fn scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// A member that is present and not null (the original's `x.get(k) is not None`).
fn given<'a>(map: &'a Map, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !matches!(v, Value::Null))
}

/// Members of `map` outside `allowed`, sorted.
fn unknown_keys(map: &Map, allowed: &[&str]) -> Vec<String> {
    let mut unknown: Vec<String> = map.keys().filter(|k| !allowed.contains(&k.as_str())).cloned().collect();
    unknown.sort();
    unknown
}

impl TaskSpec {
    /// The spec checked for shape and size, as the original's `parse_task_spec`:
    /// the first rule broken is refused with code `task` at its place. Every side
    /// parses a spec once, here, and shares the value.
    pub fn parse(value: &Value) -> Result<TaskSpec, ContractError> {
        task_spec(value)
    }
}

/// The spec checked for shape and size: the first rule broken is refused.
fn task_spec(value: &Value) -> Result<TaskSpec, ContractError> {
    let Value::Object(spec) = value else {
        return Err(refuse("a task is a json object", "/task"));
    };
    let unknown = unknown_keys(spec, &["name", "instruction", "seed", "grader", "tools", "metadata"]);
    if !unknown.is_empty() {
        return Err(refuse(format!("unknown task field(s): {}", unknown.join(", ")), "/task"));
    }
    let name = match given(spec, "name") {
        None => None,
        Some(Value::Str(name)) if matches_name(name, alnum, name_char) && chars(name) <= NAME_CHARS => Some(name.clone()),
        Some(_) => {
            return Err(refuse("a task name is letters, digits, _ . - (leading letter or digit)", "/task/name"));
        }
    };
    let instruction = match spec.get("instruction") {
        Some(Value::Str(text)) if !text.is_empty() => text.clone(),
        _ => return Err(refuse("a task needs an instruction", "/task/instruction")),
    };
    if instruction.len() > INSTRUCTION_BYTES {
        return Err(refuse(format!("an instruction is at most {INSTRUCTION_BYTES} bytes"), "/task/instruction"));
    }
    let seed = given(spec, "seed").map(parse_seed).transpose()?;
    let grader = given(spec, "grader").map(parse_grader).transpose()?;
    let tools = given(spec, "tools").map(parse_tools).transpose()?;
    let metadata = match given(spec, "metadata") {
        None => None,
        Some(Value::Object(map)) if map.keys().all(|k| !k.is_empty()) => {
            if json_bytes(&Value::Object(map.clone())) > METADATA_BYTES {
                return Err(refuse(format!("task metadata is at most {METADATA_BYTES} bytes of json"), "/task/metadata"));
            }
            (!map.is_empty()).then(|| map.clone())
        }
        Some(_) => return Err(refuse("metadata is a json object with string keys", "/task/metadata")),
    };
    Ok(TaskSpec { name, instruction, seed, grader, tools, metadata })
}

fn parse_seed(seed: &Value) -> Result<Seed, ContractError> {
    let shape = || refuse("seed is {mode?: append|replace, rows: {entity: [row, ...]}}", "/task/seed");
    let Value::Object(map) = seed else { return Err(shape()) };
    if !unknown_keys(map, &["mode", "rows"]).is_empty() {
        return Err(shape());
    }
    let mode = match map.get("mode").map(Value::as_str) {
        None | Some(Some("append")) => SeedMode::Append,
        Some(Some("replace")) => SeedMode::Replace,
        Some(_) => return Err(refuse("seed mode must be one of append, replace", "/task/seed/mode")),
    };
    let Some(Value::Object(by_entity)) = map.get("rows") else {
        return Err(refuse("seed.rows is {entity: [row, ...]}", "/task/seed/rows"));
    };
    let mut rows = Rows::new();
    let mut total = 0usize;
    for (entity, entity_rows) in by_entity {
        if entity.is_empty() || chars(entity) > ENTITY_CHARS {
            return Err(refuse("an entity name is a string of up to 120 characters", "/task/seed/rows"));
        }
        match entity_rows {
            Value::Array(items) if items.iter().all(|r| matches!(r, Value::Object(_))) => {
                total += items.len();
                rows.insert(entity.clone(), items.clone());
            }
            _ => {
                return Err(refuse(format!("seed.rows.{entity} is a list of row objects"), format!("/task/seed/rows/{entity}")));
            }
        }
    }
    if total > SEED_ROWS {
        return Err(refuse(format!("a task seed carries at most {SEED_ROWS} rows (got {total})"), "/task/seed/rows"));
    }
    if json_bytes(&Value::Object(by_entity.clone())) > SEED_BYTES {
        return Err(refuse(format!("a task seed is at most {SEED_BYTES} bytes of json"), "/task/seed/rows"));
    }
    Ok(Seed { mode, rows })
}

fn parse_tools(tools: &Value) -> Result<Vec<String>, ContractError> {
    let items = match tools {
        Value::Array(items) if !items.is_empty() => items,
        _ => return Err(refuse("tools is a non-empty list of tool names", "/task/tools")),
    };
    if items.len() > TOOLS {
        return Err(refuse(format!("a task allows at most {TOOLS} tools"), "/task/tools"));
    }
    let mut names = Vec::with_capacity(items.len());
    for (i, tool) in items.iter().enumerate() {
        match tool {
            Value::Str(name) if matches_name(name, alnum_underscore, tool_char) && chars(name) <= TOOL_NAME_CHARS => {
                names.push(name.clone());
            }
            _ => return Err(refuse("a tool name is letters, digits, _ . : -", format!("/task/tools/{i}"))),
        }
    }
    let distinct: HashSet<&String> = names.iter().collect();
    if distinct.len() != names.len() {
        return Err(refuse("a tool is listed once", "/task/tools"));
    }
    Ok(names)
}

fn parse_grader(grader: &Value) -> Result<Grader, ContractError> {
    let Value::Object(map) = grader else {
        return Err(refuse("grader is a json object with a kind", "/task/grader"));
    };
    match map.get("kind").and_then(Value::as_str) {
        Some("python") => parse_python(map),
        Some("assertions") => parse_assertions(map),
        Some("rubric") => parse_rubric(map),
        _ => Err(refuse("grader.kind must be assertions, python or rubric", "/task/grader/kind")),
    }
}

fn parse_python(map: &Map) -> Result<Grader, ContractError> {
    if !unknown_keys(map, &["kind", "source", "timeoutSeconds"]).is_empty() {
        return Err(refuse("a python grader is {kind, source, timeoutSeconds?}", "/task/grader"));
    }
    let source = match map.get("source") {
        Some(Value::Str(source)) if !source.is_empty() => source.clone(),
        _ => return Err(refuse("a python grader needs its verify.py source", "/task/grader/source")),
    };
    if source.len() > PYTHON_SOURCE_BYTES {
        return Err(refuse(format!("a python grader is at most {PYTHON_SOURCE_BYTES} bytes"), "/task/grader/source"));
    }
    let timeout_seconds = match given(map, "timeoutSeconds") {
        None => None,
        Some(value) => match timeout_in_range(value) {
            Some(seconds) => Some(seconds),
            None => {
                return Err(refuse("timeoutSeconds is a number in (0, 30]", "/task/grader/timeoutSeconds"));
            }
        },
    };
    Ok(Grader::Python { source, timeout_seconds })
}

/// A timeout in (0, 30] as the float the original stores (comparing an int exactly).
fn timeout_in_range(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => (*n > 0 && *n <= 30).then_some(*n as f64),
        Value::Float(f) => (*f > 0.0 && *f <= PYTHON_TIMEOUT_S).then_some(*f),
        _ => None,
    }
}

fn parse_assertions(map: &Map) -> Result<Grader, ContractError> {
    if !unknown_keys(map, &["kind", "checks", "tolerance"]).is_empty() {
        return Err(refuse("an assertions grader is {kind, checks}", "/task/grader"));
    }
    let tolerance = given(map, "tolerance").map(|t| parse_tolerance(t, "/task/grader/tolerance")).transpose()?;
    let items = match map.get("checks") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err(refuse("an assertions grader needs at least one check", "/task/grader/checks")),
    };
    if items.len() > CHECKS {
        return Err(refuse(format!("an assertions grader has at most {CHECKS} checks"), "/task/grader/checks"));
    }
    let checks = items
        .iter()
        .enumerate()
        .map(|(i, check)| parse_check(check, &format!("/task/grader/checks/{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    // Each check owns one reward key (its id, else its position), distinct as a
    // set: an explicit `check_2` may not shadow the third check's positional key.
    let mut seen = HashSet::new();
    for (i, check) in checks.iter().enumerate() {
        let key = check.key(i);
        if seen.contains(&key) {
            let message = if check.id.is_some() {
                format!("check id '{key}' is used twice (an id of the form check_<n> is also the positional key of check n)")
            } else {
                format!("check {i} has no id and its positional key '{key}' is taken by another check's id")
            };
            return Err(refuse(message, format!("/task/grader/checks/{i}/id")));
        }
        seen.insert(key);
    }
    Ok(Grader::Assertions { checks, tolerance })
}

/// `{numeric?: n >= 0, case_insensitive?: bool, trim?: bool}` (beyond the original).
fn parse_tolerance(value: &Value, at: &str) -> Result<Tolerance, ContractError> {
    let shape = || refuse("tolerance is {numeric?: a number >= 0, case_insensitive?: true|false, trim?: true|false}", at);
    let Value::Object(map) = value else { return Err(shape()) };
    if !unknown_keys(map, &["numeric", "case_insensitive", "trim"]).is_empty() {
        return Err(shape());
    }
    let numeric = match given(map, "numeric") {
        None => None,
        Some(value) => match number(value) {
            Some(n) if n >= 0.0 && n.is_finite() => Some(n),
            _ => return Err(refuse("tolerance.numeric is a finite number >= 0", format!("{at}/numeric"))),
        },
    };
    let flag = |key: &str| match given(map, key) {
        None => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(refuse(format!("tolerance.{key} is true or false"), format!("{at}/{key}"))),
    };
    Ok(Tolerance { numeric, case_insensitive: flag("case_insensitive")?, trim: flag("trim")? })
}

fn parse_check(check: &Value, at: &str) -> Result<Check, ContractError> {
    let Value::Object(map) = check else {
        return Err(refuse("a check is a json object", at));
    };
    let unknown = unknown_keys(map, &["id", "weight", "entity", "where", "assert", "count", "field", "op", "value", "tolerance"]);
    if !unknown.is_empty() {
        return Err(refuse(format!("unknown check field(s): {}", unknown.join(", ")), at));
    }
    let id = match given(map, "id") {
        None => None,
        Some(Value::Str(id)) if matches_name(id, name_char, name_char) && chars(id) <= ID_CHARS => Some(id.clone()),
        Some(_) => return Err(refuse("a check id is letters, digits, _ . -", format!("{at}/id"))),
    };
    let weight = match map.get("weight") {
        None => 1.0,
        Some(Value::Int(n)) if *n > 0 => *n as f64,
        Some(Value::Float(f)) if *f > 0.0 && *f != f64::INFINITY => *f,
        Some(_) => return Err(refuse("weight is a positive number", format!("{at}/weight"))),
    };
    let entity = match map.get("entity") {
        Some(Value::Str(entity)) if !entity.is_empty() && chars(entity) <= ENTITY_CHARS => entity.clone(),
        _ => return Err(refuse("a check names an entity", format!("{at}/entity"))),
    };
    let where_ = match given(map, "where") {
        None => None,
        Some(Value::Object(where_)) if where_.iter().all(|(k, v)| !k.is_empty() && scalar(v)) => Some(where_.clone()),
        Some(_) => return Err(refuse("where is {field: scalar, ...}", format!("{at}/where"))),
    };
    let assertion = match map.get("assert").map(Value::as_str) {
        None => "exists",
        Some(Some(name @ ("exists" | "absent" | "count" | "all" | "any"))) => name,
        Some(_) => {
            return Err(refuse("assert must be one of exists, absent, count, all, any", format!("{at}/assert")));
        }
    };
    let count = given(map, "count");
    let bounds = match assertion {
        "count" => Some(parse_count(count, at)?),
        _ if count.is_some() => return Err(refuse("count only goes with assert: count", format!("{at}/count"))),
        _ => None,
    };
    let test = match assertion {
        "all" | "any" => Some(parse_field_test(map, assertion, at)?),
        _ if given(map, "field").is_some() || map.contains_key("value") || map.contains_key("op") => {
            return Err(refuse("field/op/value only go with assert: all or any", format!("{at}/field")));
        }
        _ => None,
    };
    let assertion = match (assertion, bounds, test) {
        (_, Some(bounds), _) => Assertion::Count(bounds),
        ("all", _, Some(test)) => Assertion::All(test),
        (_, _, Some(test)) => Assertion::Any(test),
        ("absent", _, _) => Assertion::Absent,
        _ => Assertion::Exists,
    };
    let tolerance = given(map, "tolerance").map(|t| parse_tolerance(t, &format!("{at}/tolerance"))).transpose()?;
    Ok(Check { id, weight, entity, where_, assertion, tolerance })
}

fn parse_count(count: Option<&Value>, at: &str) -> Result<Vec<(CountBound, i64)>, ContractError> {
    let map = match count {
        Some(Value::Object(map)) if !map.is_empty() && map.keys().all(|k| CountBound::from_name(k).is_some()) => map,
        _ => return Err(refuse("assert: count needs a count bound {eq|gte|lte: n}", format!("{at}/count"))),
    };
    map.iter()
        .map(|(key, bound)| match bound {
            Value::Int(n) if *n >= 0 => Ok((CountBound::from_name(key).unwrap_or(CountBound::Eq), *n)),
            _ => Err(refuse(format!("count.{key} is a non-negative integer"), format!("{at}/count/{key}"))),
        })
        .collect()
}

fn parse_field_test(map: &Map, assertion: &str, at: &str) -> Result<FieldTest, ContractError> {
    let field = match map.get("field") {
        Some(Value::Str(field)) if !field.is_empty() => field.clone(),
        _ => return Err(refuse(format!("assert: {assertion} needs a field to test"), format!("{at}/field"))),
    };
    let named = |name: &str| OPS.iter().find(|(n, _)| *n == name).map(|(_, op)| *op);
    let op = match map.get("op") {
        None => Op::Eq,
        Some(given) => match given.as_str().and_then(named) {
            Some(op) => op,
            None => {
                return Err(refuse("op must be one of eq, neq, in, gt, gte, lt, lte, contains", format!("{at}/op")));
            }
        },
    };
    let Some(value) = map.get("value") else {
        return Err(refuse(format!("assert: {assertion} needs a value to compare with"), format!("{at}/value")));
    };
    if op == Op::In {
        if !matches!(value, Value::Array(options) if options.iter().all(scalar)) {
            return Err(refuse("op: in compares against a list of scalars", format!("{at}/value")));
        }
    } else if !scalar(value) {
        return Err(refuse(format!("op: {} compares against one scalar", op.as_str()), format!("{at}/value")));
    }
    Ok(FieldTest { field, op, value: value.clone() })
}

fn parse_rubric(map: &Map) -> Result<Grader, ContractError> {
    if !unknown_keys(map, &["kind", "rubric", "criteria", "model"]).is_empty() {
        return Err(refuse("a rubric grader is {kind, rubric, criteria?, model?}", "/task/grader"));
    }
    let rubric = match map.get("rubric") {
        Some(Value::Str(rubric)) if !rubric.is_empty() => rubric.clone(),
        _ => return Err(refuse("a rubric grader needs its rubric text", "/task/grader/rubric")),
    };
    if rubric.len() > RUBRIC_BYTES {
        return Err(refuse(format!("a rubric is at most {RUBRIC_BYTES} bytes"), "/task/grader/rubric"));
    }
    let criteria = given(map, "criteria").map(parse_criteria).transpose()?;
    let model = match given(map, "model") {
        None => None,
        Some(model) => Some(parse_model(model)?),
    };
    Ok(Grader::Rubric { rubric, criteria, model })
}

fn parse_criteria(criteria: &Value) -> Result<Vec<Criterion>, ContractError> {
    let items = match criteria {
        Value::Array(items) if !items.is_empty() => items,
        _ => return Err(refuse("criteria is a non-empty list", "/task/grader/criteria")),
    };
    if items.len() > RUBRIC_CRITERIA {
        return Err(refuse(format!("a rubric has at most {RUBRIC_CRITERIA} criteria"), "/task/grader/criteria"));
    }
    let mut parsed = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (i, criterion) in items.iter().enumerate() {
        let at = format!("/task/grader/criteria/{i}");
        let map = match criterion {
            Value::Object(map) if unknown_keys(map, &["id", "description", "weight"]).is_empty() => map,
            _ => return Err(refuse("a criterion is {id, description, weight?}", at)),
        };
        let id = match map.get("id") {
            Some(Value::Str(id)) if matches_name(id, alnum_underscore, name_char) && chars(id) <= ID_CHARS => id.clone(),
            _ => return Err(refuse("a criterion id is letters, digits, _ . -", format!("{at}/id"))),
        };
        if !seen.insert(id.clone()) {
            return Err(refuse(format!("criterion id '{id}' is used twice"), format!("{at}/id")));
        }
        let description = match map.get("description") {
            Some(Value::Str(text)) if !text.is_empty() => text.clone(),
            _ => return Err(refuse("a criterion needs a description", format!("{at}/description"))),
        };
        if description.len() > RUBRIC_CRITERION_BYTES {
            return Err(refuse(format!("a criterion is at most {RUBRIC_CRITERION_BYTES} bytes"), format!("{at}/description")));
        }
        // Unlike a check's weight, a criterion's may be infinite (the original only asks `> 0`).
        let weight = match given(map, "weight") {
            None => None,
            Some(value) => match number(value) {
                Some(w) if w > 0.0 => Some(w),
                _ => return Err(refuse("weight is a positive number", format!("{at}/weight"))),
            },
        };
        parsed.push(Criterion { id, description, weight });
    }
    Ok(parsed)
}

fn parse_model(model: &Value) -> Result<RubricModel, ContractError> {
    let map = match model {
        Value::Object(map) if map.len() == 2 && map.contains_key("provider") && map.contains_key("model") => map,
        _ => return Err(refuse("model is {provider, model}", "/task/grader/model")),
    };
    let provider = match map.get("provider") {
        Some(Value::Str(text)) if (1..=120).contains(&chars(text)) => text.clone(),
        _ => {
            return Err(refuse("model.provider is a string of up to 120 characters", "/task/grader/model/provider"));
        }
    };
    let model = match map.get("model") {
        Some(Value::Str(text)) if (1..=200).contains(&chars(text)) => text.clone(),
        _ => return Err(refuse("model.model is a string of up to 200 characters", "/task/grader/model/model")),
    };
    Ok(RubricModel { provider, model })
}
