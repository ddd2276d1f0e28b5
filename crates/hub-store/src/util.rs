//! Small helpers: random ids, and the hub's spelling of UTC timestamps
//! (`YYYY-MM-DDTHH:MM:SS.mmmZ`), both from `gateway_common`; the strings of a JSON list;
//! the owner-only directories the hub keeps its state in.

pub use gateway_common::random::{random_bytes, random_hex};
pub use gateway_common::time::{format_utc_millis as iso, now_secs, utc_now_millis as now_iso};
use gateway_world::json::Value;

/// The strings of a JSON array, its other items skipped (none when `value` is absent or
/// not an array).
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// Create `dir` and its missing parents owner-only (0700), and tighten `dir` to 0700 when
/// it exists already: the hub's data, keys, objects and hosts are no other user's to read.
pub fn private_dir(dir: &std::path::Path) -> Result<(), crate::StoreError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| crate::StoreError::io(dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| crate::StoreError::io(dir, e))?;
    }
    Ok(())
}

/// A URL-safe id: `prefix` + 24 lowercase hex characters (96 random bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", random_hex(12))
}
