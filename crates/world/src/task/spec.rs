//! The session task spec as types: its limits, the parsed form, the normalised
//! value the original stores and returns (`to_value`), and the typed reads every
//! side shares (the hub, the host, the graders, the judge and the runner): the
//! grader's rubric, the allowed tools, `metadata.passBar` and `metadata.solution`.
//!
//! A leaf of the task module: parsing (`TaskSpec::parse`) lives in `parse`, which
//! names these types, never the other way round; the host's checks against a world
//! are in `host`. This does not grade (see `assertions` and `python`), touch a
//! store, or apply the seed.

use crate::json::{Map, Value};
use crate::plan::Rows;
use std::collections::HashSet;

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
    /// The bound a spec names `key`.
    pub(super) fn from_name(key: &str) -> Option<CountBound> {
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

/// Every op, under its name in a spec.
pub(super) const OPS: [(&str, Op); 8] = [
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

/// How loosely a check compares values (beyond the original): declared on an
/// assertions grader for all its checks, or on one check, whose members win.
/// Numbers always compare as numbers (`25` equals `25.0`); these loosen further.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tolerance {
    /// Numbers within this absolute distance are equal (`{"numeric": 0.01}`).
    pub numeric: Option<f64>,
    /// Strings compare lower-cased (`{"case_insensitive": true}`).
    pub case_insensitive: Option<bool>,
    /// Strings compare without surrounding whitespace (`{"trim": true}`).
    pub trim: Option<bool>,
}

impl Tolerance {
    /// This tolerance's members where given, else `base`'s.
    pub fn over(&self, base: Option<&Tolerance>) -> Tolerance {
        let base = base.copied().unwrap_or_default();
        Tolerance {
            numeric: self.numeric.or(base.numeric),
            case_insensitive: self.case_insensitive.or(base.case_insensitive),
            trim: self.trim.or(base.trim),
        }
    }

    /// Whether it compares anything more loosely than exact JSON equality.
    pub fn loosens(&self) -> bool {
        self.numeric.is_some_and(|n| n > 0.0) || self.case_insensitive == Some(true) || self.trim == Some(true)
    }

    /// The tolerance as a spec declares it (given members only).
    pub fn to_value(&self) -> Value {
        let mut out = Map::default();
        if let Some(numeric) = self.numeric {
            out.insert("numeric".into(), Value::Float(numeric));
        }
        if let Some(flag) = self.case_insensitive {
            out.insert("case_insensitive".into(), Value::Bool(flag));
        }
        if let Some(flag) = self.trim {
            out.insert("trim".into(), Value::Bool(flag));
        }
        Value::Object(out)
    }
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
    /// The check's own tolerance, when declared (its members win over the grader's).
    pub tolerance: Option<Tolerance>,
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
        if let Some(tolerance) = &self.tolerance {
            out.insert("tolerance".into(), tolerance.to_value());
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

impl Criterion {
    /// The criterion as the original normalises it: `id`, `description`, then
    /// `weight` (a float) when given.
    pub fn to_value(&self) -> Value {
        let mut item = Map::default();
        item.insert("id".into(), Value::str(&self.id));
        item.insert("description".into(), Value::str(&self.description));
        if let Some(weight) = self.weight {
            item.insert("weight".into(), Value::Float(weight));
        }
        Value::Object(item)
    }
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
        /// How loosely every check compares, when declared (beyond the original).
        tolerance: Option<Tolerance>,
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
            Grader::Assertions { checks, tolerance } => {
                out.insert("checks".into(), Value::Array(checks.iter().map(Check::to_value).collect()));
                if let Some(tolerance) = tolerance {
                    out.insert("tolerance".into(), tolerance.to_value());
                }
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
                    out.insert("criteria".into(), Value::Array(criteria.iter().map(Criterion::to_value).collect()));
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

    /// The rubric a platform judges, when the task is graded by one: its text, its
    /// criteria (none when not given) and the judge model it asks for.
    pub fn rubric(&self) -> Option<(&str, &[Criterion], Option<&RubricModel>)> {
        match &self.grader {
            Some(Grader::Rubric { rubric, criteria, model }) => Some((rubric, criteria.as_deref().unwrap_or_default(), model.as_ref())),
            _ => None,
        }
    }

    /// A member of the task's metadata, when it has metadata and that member.
    pub fn metadata_member(&self, key: &str) -> Option<&Value> {
        self.metadata.as_ref()?.get(key)
    }

    /// The pass bar the task names (`metadata.passBar`, a number), if any.
    pub fn pass_bar(&self) -> Option<f64> {
        self.metadata_member("passBar").and_then(Value::as_f64)
    }

    /// The task's reference solution (`metadata.solution`: a list of `{tool, args}`
    /// calls), if it has one.
    pub fn solution(&self) -> Option<&[Value]> {
        self.metadata_member("solution").and_then(Value::as_array).map(Vec::as_slice)
    }

    /// The task's metadata as an agent may see it: without the reference solution
    /// (`metadata.solution`), which would hand it the answer.
    pub fn visible_metadata(&self) -> Map {
        let mut metadata = self.metadata.clone().unwrap_or_default();
        metadata.shift_remove("solution");
        metadata
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
        if let Some(Grader::Assertions { checks, .. }) = &self.grader {
            named.extend(checks.iter().map(|c| c.entity.as_str()));
        }
        let mut seen = HashSet::new();
        named.into_iter().filter(|e| seen.insert(*e)).map(str::to_string).collect()
    }
}
