//! What a staged row holds from staging to the apply: its canonical text, each of its
//! relationships resolved ([`Ref`]), and its tuples for the entity's unique
//! constraints ([`Tuple`] of [`Cell`]s, compared with SQLite's rules). Shared by the
//! stager, the held rows, the references step and both applies; names none of them.

use crate::json::Value;
use rusqlite::types::ValueRef;

/// An accepted row as held until the apply: its canonical text (what the store
/// holds) and the outcome of each of its entity's relationships, not its tree.
#[derive(Debug, Clone, Default)]
pub(super) struct Staged {
    pub(super) text: String,
    pub(super) refs: Vec<Ref>,
    /// The row's tuples for its entity's declared `unique` constraints.
    pub(super) uniques: Vec<Tuple>,
    pub(super) chunk: usize,
    pub(super) index: usize,
}

impl Staged {
    /// The row's tree again (for a refusal's primary key, a merge or an update).
    pub(super) fn value(&self) -> Value {
        crate::json::parse_clean(&self.text).expect("canonical text parses")
    }
}

/// One relationship of a staged row, resolved at staging.
#[derive(Debug, Clone)]
pub(super) enum Ref {
    /// Every referencing field absent or null.
    Absent,
    /// Some referencing fields present, some not.
    Partial,
    /// The referenced key is not a valid key of the target (the error's message).
    Invalid(String),
    /// The target's store key.
    Key(String),
}

/// One value as a SQLite `UNIQUE` index compares it: what `json_extract` makes of a
/// payload field (booleans are integers; a real equal to an integer is that integer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Cell {
    /// An integer (a boolean is one).
    Int(i64),
    /// A real that is not an integer, by its bits.
    Real(u64),
    /// Text.
    Text(Box<str>),
}

impl Cell {
    /// A real as SQLite compares it: an integer when it is one.
    pub(super) fn real(f: f64) -> Cell {
        // The cast saturates; the bounds keep only reals an i64 holds exactly.
        if f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            Cell::Int(f as i64)
        } else {
            Cell::Real(f.to_bits())
        }
    }

    /// A value SQLite read (None: NULL).
    pub(super) fn from_sql(value: ValueRef<'_>) -> Option<Cell> {
        match value {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(Cell::Int(n)),
            ValueRef::Real(f) => Some(Cell::real(f)),
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Some(Cell::Text(String::from_utf8_lossy(bytes).into())),
        }
    }

    /// The value bound as a parameter.
    pub(super) fn to_sql(&self) -> rusqlite::types::Value {
        match self {
            Cell::Int(n) => rusqlite::types::Value::Integer(*n),
            Cell::Real(bits) => rusqlite::types::Value::Real(f64::from_bits(*bits)),
            Cell::Text(text) => rusqlite::types::Value::Text(text.to_string()),
        }
    }
}

/// A row's values for one unique constraint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Tuple {
    /// Some value is absent or null: SQLite's NULLs never conflict.
    Null,
    /// Every value is a scalar.
    Values(Box<[Cell]>),
    /// Some value is an object or array: only SQLite can compare its text.
    Complex,
}
