//! The JSON value with Python's distinctions, and the two equalities the original uses
//! (`json_equal` for contracts, Python's `==` for graders).

use indexmap::IndexMap;

/// An ordered JSON object: members keep the order they were parsed or inserted in.
/// Objects keep their insertion order (Python's dicts do); foldhash rather than
/// SipHash because row keys are hashed on every parse, seeded per process.
pub type Map = IndexMap<String, Value, foldhash::fast::RandomState>;

/// A JSON value with Python's distinctions (integer vs float).
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal (Python `int`). Literals beyond `i64` parse as [`Value::Float`]
    /// of the same magnitude: they are outside the accepted range either way.
    Int(i64),
    /// A float literal (Python `float`), including `NaN` and infinities.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, in member order.
    Object(Map),
}

/// The largest magnitude a number may have: 2^53 − 1.
pub const SAFE_INTEGER: i64 = (1 << 53) - 1;

impl Value {
    /// Python's `type(x).__name__` of the value as the original holds it (`dict`,
    /// `list`, `str`, `int`, `float`, `bool`, `NoneType`), for refusals that name it.
    pub fn python_type_name(&self) -> &'static str {
        match self {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Array(_) => "list",
            Value::Object(_) => "dict",
        }
    }

    /// The object's map, if this is an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }
    /// The array's items, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }
    /// The integer, if this is an integer (never a float or a boolean).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }
    /// A member of an object (None for non-objects).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| map.get(key))
    }
    /// True for integers and floats (never booleans).
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }
    /// The number as f64 (integers within ±2^53 convert exactly).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// The JSON Schema type name of this value as the original names it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    /// Shorthand for a string value.
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(text.into())
    }
}

/// JSON equality as the original's `equal`: numbers by value (`1 == 1.0`), booleans
/// distinct from numbers, objects by member set, arrays element-wise.
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (a, b) if a.is_number() && b.is_number() => numbers_equal(a, b),
        (Value::Str(a), Value::Str(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y)),
        (Value::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| json_equal(v, w))),
        _ => false,
    }
}

/// Python `==` between two values: like [`json_equal`] except that `True == 1` and
/// `False == 0.0`, as Python's bool is an int.
pub fn python_equal(left: &Value, right: &Value) -> bool {
    let as_num = |v: &Value| match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        other => other.as_f64(),
    };
    match (left, right) {
        (Value::Bool(_), Value::Int(_) | Value::Float(_)) | (Value::Int(_) | Value::Float(_), Value::Bool(_)) => {
            as_num(left) == as_num(right)
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| python_equal(x, y)),
        (Value::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| python_equal(v, w))),
        _ => json_equal(left, right),
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}
