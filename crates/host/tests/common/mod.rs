//! What the host's tests share: a grade as the original answers it.

use gateway_world::json::{self, Value};

/// A grade's original members: the check reports (`checks`) and the state diff
/// (`diff`), ours, left out.
pub fn original_grade(grade: &Value) -> Value {
    let kept: json::Map = grade
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "checks" | "diff"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}
