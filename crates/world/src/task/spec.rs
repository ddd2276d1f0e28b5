//! The session task spec: parsing with the original's refusals and limits, the
//! normalised form the original stores and returns, and the host's checks of a
//! spec against one world (unknown entities, unknown or disallowed tools).
//!
//! This is shape and size only. It does not grade (see `assertions` and
//! `python`), touch a store, or apply the seed.

use crate::error::ContractError;
use crate::json::{dumps, DumpOptions, Map, Value};
use crate::plan::Rows;
use std::collections::{BTreeSet, HashSet};

/// Longest task name, in characters.
pub const NAME_CHARS: usize = 120;
/// Largest instruction, in UTF-8 bytes.
pub const INSTRUCTION_BYTES: usize = 32 * 1024;
/// Largest metadata object, in bytes of compact ASCII-escaped JSON.
pub const METADATA_BYTES: usize = 4 * 1024;
/// Most seed rows, over every entity.
pub const SEED_ROWS: usize = 5_000;
/// Largest seed, in bytes of compact ASCII-escaped JSON.
pub const SEED_BYTES: usize = 4 * 1024 * 1024;
/// Most checks of an assertions grader.
pub const CHECKS: usize = 200;
/// Largest python grader source, in UTF-8 bytes.
pub const PYTHON_SOURCE_BYTES: usize = 64 * 1024;
/// Longest (and default) python grader timeout, in seconds.
pub const PYTHON_TIMEOUT_S: f64 = 30.0;
/// Largest rubric text, in UTF-8 bytes.
pub const RUBRIC_BYTES: usize = 16 * 1024;
/// Most criteria of a rubric.
pub const RUBRIC_CRITERIA: usize = 50;
/// Largest criterion description, in UTF-8 bytes.
pub const RUBRIC_CRITERION_BYTES: usize = 2 * 1024;
/// Most tools a task may allow.
pub const TOOLS: usize = 200;
/// Longest tool name, in characters.
pub const TOOL_NAME_CHARS: usize = 200;
/// Longest entity name a task may give, in characters.
const ENTITY_CHARS: usize = 120;
/// Longest check or criterion id, in characters.
const ID_CHARS: usize = 120;

/// The refusal code of every spec refusal.
const CODE: &str = "task";

fn refuse(message: impl Into<String>, at: impl Into<String>) -> ContractError {
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

/// How seed rows land on the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedMode {
    /// Add to (or update) the snapshot's rows.
    Append,
    /// Replace each named entity's rows.
    Replace,
}

impl SeedMode {
    /// The mode's name in a spec (and in `seed_batch`).
    pub fn as_str(self) -> &'static str {
        match self {
            SeedMode::Append => "append",
            SeedMode::Replace => "replace",
        }
    }
}

/// A task's starting rows, applied on top of the snapshot when a session opens.
#[derive(Debug, Clone)]
pub struct Seed {
    /// Append (the default) or replace.
    pub mode: SeedMode,
    /// Rows by entity, in spec order; every row is a JSON object.
    pub rows: Rows,
}

/// What an assertions check tests of its selection.
#[derive(Debug, Clone)]
pub enum Assertion {
    /// At least one row is selected (the default).
    Exists,
    /// No row is selected.
    Absent,
    /// The number of rows selected meets every bound, in spec order.
    Count(Vec<(CountBound, i64)>),
    /// At least one row is selected and the test holds for each.
    All(FieldTest),
    /// The test holds for some selected row.
    Any(FieldTest),
}

impl Assertion {
    /// The assertion's name in a spec.
    pub fn as_str(&self) -> &'static str {
        match self {
            Assertion::Exists => "exists",
            Assertion::Absent => "absent",
            Assertion::Count(_) => "count",
            Assertion::All(_) => "all",
            Assertion::Any(_) => "any",
        }
    }
}

/// One bound of a count assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountBound {
    /// Exactly n.
    Eq,
    /// At least n.
    Gte,
    /// At most n.
    Lte,
}

impl CountBound {
    fn parse(key: &str) -> Option<CountBound> {
        match key {
            "eq" => Some(CountBound::Eq),
            "gte" => Some(CountBound::Gte),
            "lte" => Some(CountBound::Lte),
            _ => None,
        }
    }
    /// The bound's name in a spec.
    pub fn as_str(self) -> &'static str {
        match self {
            CountBound::Eq => "eq",
            CountBound::Gte => "gte",
            CountBound::Lte => "lte",
        }
    }
}

/// The comparison of a field test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Found and equal.
    Eq,
    /// Missing, or not equal.
    Neq,
    /// Found and equal to one of a list of options.
    In,
    /// Greater than (numbers or strings).
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// A substring of a string, or an element of a list.
    Contains,
}

const OPS: [(&str, Op); 8] = [
    ("eq", Op::Eq),
    ("neq", Op::Neq),
    ("in", Op::In),
    ("gt", Op::Gt),
    ("gte", Op::Gte),
    ("lt", Op::Lt),
    ("lte", Op::Lte),
    ("contains", Op::Contains),
];

impl Op {
    /// The op's name in a spec.
    pub fn as_str(self) -> &'static str {
        OPS.iter().find(|(_, op)| *op == self).map(|(name, _)| *name).unwrap_or("eq")
    }
}

/// The per-row test of an `all` or `any` check.
#[derive(Debug, Clone)]
pub struct FieldTest {
    /// Dotted path into the row.
    pub field: String,
    /// How the field compares.
    pub op: Op,
    /// One scalar, or for [`Op::In`] an array of scalars.
    pub value: Value,
}

/// One check of an assertions grader.
#[derive(Debug, Clone)]
pub struct Check {
    /// The reward key, when given (else `check_<index>`).
    pub id: Option<String>,
    /// Positive, finite; 1.0 unless given.
    pub weight: f64,
    /// The entity whose rows are selected.
    pub entity: String,
    /// Dotted path → scalar: the rows selected (all rows when absent).
    pub where_: Option<Map>,
    /// What the selection must satisfy.
    pub assertion: Assertion,
}

impl Check {
    /// The check's reward key: its id, else `check_<index>`.
    pub fn key(&self, index: usize) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => format!("check_{index}"),
        }
    }

    /// The check as the original normalises it (member order included).
    pub fn to_value(&self) -> Value {
        let mut out = Map::default();
        if let Some(id) = &self.id {
            out.insert("id".into(), Value::str(id));
        }
        out.insert("weight".into(), Value::Float(self.weight));
        out.insert("entity".into(), Value::str(&self.entity));
        if let Some(where_) = &self.where_ {
            out.insert("where".into(), Value::Object(where_.clone()));
        }
        out.insert("assert".into(), Value::str(self.assertion.as_str()));
        match &self.assertion {
            Assertion::Count(bounds) => {
                let count = bounds.iter().map(|(bound, n)| (bound.as_str().to_string(), Value::Int(*n))).collect();
                out.insert("count".into(), Value::Object(count));
            }
            Assertion::All(test) | Assertion::Any(test) => {
                out.insert("field".into(), Value::str(&test.field));
                out.insert("op".into(), Value::str(test.op.as_str()));
                out.insert("value".into(), test.value.clone());
            }
            Assertion::Exists | Assertion::Absent => {}
        }
        Value::Object(out)
    }
}

/// One criterion of a rubric.
#[derive(Debug, Clone)]
pub struct Criterion {
    /// Unique within the rubric.
    pub id: String,
    /// What the judge looks for.
    pub description: String,
    /// Positive, when given.
    pub weight: Option<f64>,
}

/// The model a rubric asks to be judged by.
#[derive(Debug, Clone)]
pub struct RubricModel {
    /// 1–120 characters.
    pub provider: String,
    /// 1–200 characters.
    pub model: String,
}

/// How a task is graded.
#[derive(Debug, Clone)]
pub enum Grader {
    /// Declarative checks over the state dump, evaluated by the engine.
    Assertions {
        /// 1–200 checks, with distinct reward keys.
        checks: Vec<Check>,
    },
    /// A `verify.py` run over the state dump.
    Python {
        /// The script's source.
        source: String,
        /// The timeout, when given (else 30 s).
        timeout_seconds: Option<f64>,
    },
    /// An LLM judge's brief: the platform grades it, never the engine.
    Rubric {
        /// The rubric text.
        rubric: String,
        /// The criteria, when given.
        criteria: Option<Vec<Criterion>>,
        /// The judge model, when given.
        model: Option<RubricModel>,
    },
}

impl Grader {
    /// `assertions`, `python` or `rubric`.
    pub fn kind(&self) -> &'static str {
        match self {
            Grader::Assertions { .. } => "assertions",
            Grader::Python { .. } => "python",
            Grader::Rubric { .. } => "rubric",
        }
    }

    /// The grader as the original normalises it.
    pub fn to_value(&self) -> Value {
        let mut out = Map::default();
        out.insert("kind".into(), Value::str(self.kind()));
        match self {
            Grader::Assertions { checks } => {
                out.insert("checks".into(), Value::Array(checks.iter().map(Check::to_value).collect()));
            }
            Grader::Python { source, timeout_seconds } => {
                out.insert("source".into(), Value::str(source));
                if let Some(timeout) = timeout_seconds {
                    out.insert("timeoutSeconds".into(), Value::Float(*timeout));
                }
            }
            Grader::Rubric { rubric, criteria, model } => {
                out.insert("rubric".into(), Value::str(rubric));
                if let Some(criteria) = criteria {
                    let items = criteria
                        .iter()
                        .map(|c| {
                            let mut item = Map::default();
                            item.insert("id".into(), Value::str(&c.id));
                            item.insert("description".into(), Value::str(&c.description));
                            if let Some(weight) = c.weight {
                                item.insert("weight".into(), Value::Float(weight));
                            }
                            Value::Object(item)
                        })
                        .collect();
                    out.insert("criteria".into(), Value::Array(items));
                }
                if let Some(model) = model {
                    let mut item = Map::default();
                    item.insert("provider".into(), Value::str(&model.provider));
                    item.insert("model".into(), Value::str(&model.model));
                    out.insert("model".into(), Value::Object(item));
                }
            }
        }
        Value::Object(out)
    }
}

/// A validated session task: an instruction, optional starting rows, an optional
/// grader, an optional tool allow-list and optional metadata.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// `^[A-Za-z0-9][A-Za-z0-9_.-]*$`, at most 120 characters.
    pub name: Option<String>,
    /// Non-empty, at most 32 KiB.
    pub instruction: String,
    /// Rows applied on top of the snapshot at open.
    pub seed: Option<Seed>,
    /// How the session is graded (None: no grade).
    pub grader: Option<Grader>,
    /// The tools the session may call, or None for every tool the world serves.
    pub tools: Option<Vec<String>>,
    /// Free-form metadata; None when absent, null or empty (the original stores none then).
    pub metadata: Option<Map>,
}

impl TaskSpec {
    /// The spec checked for shape and size, as the original's `parse_task_spec`:
    /// the first rule broken is refused with code `task` at its place.
    pub fn parse(value: &Value) -> Result<TaskSpec, ContractError> {
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

    /// The normalised spec, as the original stores it (`task.json`) and returns it
    /// (`taskSpec`): `instruction`, then `name`, `seed`, `grader`, `tools`, `metadata`
    /// when present; defaults filled (seed mode, check weight and assert), numbers
    /// the original turns into floats as floats.
    pub fn to_value(&self) -> Value {
        let mut out = Map::default();
        out.insert("instruction".into(), Value::str(&self.instruction));
        if let Some(name) = &self.name {
            out.insert("name".into(), Value::str(name));
        }
        if let Some(seed) = &self.seed {
            let rows = seed.rows.iter().map(|(entity, rows)| (entity.clone(), Value::Array(rows.clone()))).collect();
            let mut item = Map::default();
            item.insert("mode".into(), Value::str(seed.mode.as_str()));
            item.insert("rows".into(), Value::Object(rows));
            out.insert("seed".into(), Value::Object(item));
        }
        if let Some(grader) = &self.grader {
            out.insert("grader".into(), grader.to_value());
        }
        if let Some(tools) = &self.tools {
            out.insert("tools".into(), Value::Array(tools.iter().map(Value::str).collect()));
        }
        if let Some(metadata) = &self.metadata {
            out.insert("metadata".into(), Value::Object(metadata.clone()));
        }
        Value::Object(out)
    }

    /// `assertions`, `python`, `rubric`, or None for a task without a grader.
    pub fn grader_kind(&self) -> Option<&'static str> {
        self.grader.as_ref().map(Grader::kind)
    }

    /// A rubric task is judged by the platform, never by the engine.
    pub fn graded_on_platform(&self) -> bool {
        matches!(self.grader, Some(Grader::Rubric { .. }))
    }

    /// Whether the session may call `tool` (every tool when the task lists none).
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.iter().any(|t| t == tool))
    }

    /// Every entity the task names, seed rows first, then assertion checks, each
    /// once, in order of first mention.
    pub fn entities(&self) -> Vec<String> {
        let mut named: Vec<&str> = Vec::new();
        if let Some(seed) = &self.seed {
            named.extend(seed.rows.keys().map(String::as_str));
        }
        if let Some(Grader::Assertions { checks }) = &self.grader {
            named.extend(checks.iter().map(|c| c.entity.as_str()));
        }
        let mut seen = HashSet::new();
        named.into_iter().filter(|e| seen.insert(*e)).map(str::to_string).collect()
    }
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
    if !unknown_keys(map, &["kind", "checks"]).is_empty() {
        return Err(refuse("an assertions grader is {kind, checks}", "/task/grader"));
    }
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
    Ok(Grader::Assertions { checks })
}

fn parse_check(check: &Value, at: &str) -> Result<Check, ContractError> {
    let Value::Object(map) = check else {
        return Err(refuse("a check is a json object", at));
    };
    let unknown = unknown_keys(map, &["id", "weight", "entity", "where", "assert", "count", "field", "op", "value"]);
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
    Ok(Check { id, weight, entity, where_, assertion })
}

fn parse_count(count: Option<&Value>, at: &str) -> Result<Vec<(CountBound, i64)>, ContractError> {
    let map = match count {
        Some(Value::Object(map)) if !map.is_empty() && map.keys().all(|k| CountBound::parse(k).is_some()) => map,
        _ => return Err(refuse("assert: count needs a count bound {eq|gte|lte: n}", format!("{at}/count"))),
    };
    map.iter()
        .map(|(key, bound)| match bound {
            Value::Int(n) if *n >= 0 => Ok((CountBound::parse(key).unwrap_or(CountBound::Eq), *n)),
            _ => Err(refuse(format!("count.{key} is a non-negative integer"), format!("{at}/count/{key}"))),
        })
        .collect()
}

fn parse_field_test(map: &Map, assertion: &str, at: &str) -> Result<FieldTest, ContractError> {
    let field = match map.get("field") {
        Some(Value::Str(field)) if !field.is_empty() => field.clone(),
        _ => return Err(refuse(format!("assert: {assertion} needs a field to test"), format!("{at}/field"))),
    };
    let op = match map.get("op").map(Value::as_str) {
        None => Op::Eq,
        Some(Some(name)) if OPS.iter().any(|(n, _)| *n == name) => {
            OPS.iter().find(|(n, _)| *n == name).map(|(_, op)| *op).unwrap_or(Op::Eq)
        }
        Some(_) => {
            return Err(refuse("op must be one of eq, neq, in, gt, gte, lt, lte, contains", format!("{at}/op")));
        }
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

/// The entities `spec` names that `defined` (a world contract's) lacks, in the
/// order the spec names them.
pub fn unknown_task_entities<'a>(spec: &TaskSpec, defined: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let known: HashSet<&str> = defined.into_iter().collect();
    spec.entities().into_iter().filter(|e| !known.contains(e.as_str())).collect()
}

/// The tools `spec` allows that the world does not serve, in spec order (none when
/// the task allows every tool).
pub fn unknown_task_tools<'a>(spec: &TaskSpec, served: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let Some(tools) = &spec.tools else { return Vec::new() };
    let known: HashSet<&str> = served.into_iter().collect();
    tools.iter().filter(|t| !known.contains(t.as_str())).cloned().collect()
}

/// The host's refusal of a task naming entities the world does not define (the
/// original's `_check_task_entities`): an assertion over a missing entity selects
/// nothing, so `absent` would pass on a typo.
pub fn check_task_entities<'a>(spec: &TaskSpec, defined: impl IntoIterator<Item = &'a str>) -> Result<(), ContractError> {
    let defined: BTreeSet<&str> = defined.into_iter().collect();
    let unknown = unknown_task_entities(spec, defined.iter().copied());
    if unknown.is_empty() {
        return Ok(());
    }
    let listed = if defined.is_empty() { "none".to_string() } else { defined.into_iter().collect::<Vec<_>>().join(", ") };
    Err(refuse(format!("the task names {}, which this world does not define; its entities are {listed}", unknown.join(", ")), "/task"))
}

/// The host's refusal of an allow-list naming tools the world does not serve (the
/// original's `_check_task_tools`).
pub fn check_task_tools<'a>(spec: &TaskSpec, served: impl IntoIterator<Item = &'a str>) -> Result<(), ContractError> {
    let served: BTreeSet<&str> = served.into_iter().collect();
    let unknown = unknown_task_tools(spec, served.iter().copied());
    if unknown.is_empty() {
        return Ok(());
    }
    let listed = if served.is_empty() { "none".to_string() } else { served.into_iter().collect::<Vec<_>>().join(", ") };
    Err(refuse(format!("the task allows {}, which this world does not serve; its tools are {listed}", unknown.join(", ")), "/task/tools"))
}

/// The host's refusal of a call to a tool the session's task does not allow
/// (code `tool_not_allowed`).
pub fn check_tool_allowed(spec: &TaskSpec, tool: &str) -> Result<(), ContractError> {
    if spec.allows_tool(tool) {
        return Ok(());
    }
    let allowed = spec.tools.as_deref().unwrap_or_default().join(", ");
    Err(ContractError::new("tool_not_allowed", format!("tool '{tool}' is not allowed by this session's task; it allows: {allowed}"), ""))
}
