//! The refusal every engine operation reports: the original's `ContractError`.

use crate::json::{Map, Value};
use std::fmt;

/// A structured, payload-free refusal: `{code, message, schema_path, path, ...context}`.
///
/// `schema_path` says where in the contract or document the rule lives, `path` is a
/// JSON pointer into the value being validated. Context keys (`batch`, `index`,
/// `entity`, `key`, `source`, …) are added by outer layers; a later key overwrites
/// an earlier one, as in the original.
#[derive(Debug, Clone)]
pub struct ContractError {
    /// Machine-readable reason (`type`, `unique`, `lock_mismatch`, …).
    pub code: String,
    /// Human-readable reason, never containing payload values.
    pub message: String,
    /// Where the violated rule lives.
    pub schema_path: String,
    /// Where in the value the violation is.
    pub path: String,
    /// Extra context members, in insertion order.
    pub context: Vec<(String, Value)>,
}

impl ContractError {
    /// A refusal located at `schema_path` (the original's `fail`).
    pub fn new(code: &str, message: impl Into<String>, schema_path: impl Into<String>) -> Self {
        ContractError {
            code: code.into(),
            message: message.into(),
            schema_path: schema_path.into(),
            path: String::new(),
            context: Vec::new(),
        }
    }

    /// Set the value path.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Add or overwrite one context member.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.set(key, value);
        self
    }

    /// Add or overwrite one context member in place.
    pub fn set(&mut self, key: &str, value: Value) {
        match key {
            "code" => self.code = value.as_str().unwrap_or_default().to_string(),
            "message" => self.message = value.as_str().unwrap_or_default().to_string(),
            "schema_path" => self.schema_path = value.as_str().unwrap_or_default().to_string(),
            "path" => self.path = value.as_str().unwrap_or_default().to_string(),
            _ => match self.context.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => self.context.push((key.to_string(), value)),
            },
        }
    }

    /// A context member, if present.
    pub fn context(&self, key: &str) -> Option<&Value> {
        self.context.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The `detail` object the original prints.
    pub fn detail(&self) -> Value {
        let mut map = Map::default();
        map.insert("code".into(), Value::str(&self.code));
        map.insert("message".into(), Value::str(&self.message));
        map.insert("schema_path".into(), Value::str(&self.schema_path));
        map.insert("path".into(), Value::str(&self.path));
        for (key, value) in &self.context {
            map.insert(key.clone(), value.clone());
        }
        Value::Object(map)
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if !self.schema_path.is_empty() {
            &self.schema_path
        } else if !self.path.is_empty() {
            &self.path
        } else {
            "/"
        };
        write!(f, "{} at {}: {}", self.code, at, self.message)
    }
}

impl std::error::Error for ContractError {}

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks the contract (the original's `ContractError`).
    #[error("{0}")]
    Contract(#[from] ContractError),
    /// A filesystem operation failed (the original's `OSError`).
    #[error("{message}")]
    Io {
        /// Python-style text: `[Errno 2] No such file or directory: 'path'`.
        message: String,
    },
    /// SQLite failed below the contract layer.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl Error {
    /// An I/O failure on `path`, worded as Python words it.
    pub fn io(error: std::io::Error, path: &std::path::Path) -> Self {
        let (errno, text) = match error.kind() {
            std::io::ErrorKind::NotFound => (2, "No such file or directory"),
            std::io::ErrorKind::PermissionDenied => (13, "Permission denied"),
            std::io::ErrorKind::AlreadyExists => (17, "File exists"),
            _ => (5, "Input/output error"),
        };
        Error::Io { message: format!("[Errno {errno}] {text}: '{}'", path.display()) }
    }
}

impl From<gateway_common::fs::PathError> for Error {
    fn from(error: gateway_common::fs::PathError) -> Self {
        Error::io(error.source, &error.path)
    }
}

/// Result alias for engine operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand: return a contract refusal.
pub fn fail<T>(code: &str, message: impl Into<String>, schema_path: impl Into<String>) -> Result<T, ContractError> {
    Err(ContractError::new(code, message, schema_path))
}
