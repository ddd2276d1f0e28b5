//! Small helpers: random ids, and the hub's spelling of UTC timestamps
//! (`YYYY-MM-DDTHH:MM:SS.mmmZ`), both from `gateway_common`; the strings of a JSON list.

pub use gateway_common::random::{random_bytes, random_hex};
pub use gateway_common::time::{format_utc_millis as iso, now_secs, utc_now_millis as now_iso};
use gateway_world::json::Value;

/// The strings of a JSON array, its other items skipped (none when `value` is absent or
/// not an array).
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// A URL-safe id: `prefix` + 24 lowercase hex characters (96 random bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", random_hex(12))
}
