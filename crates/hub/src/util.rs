//! Small helpers: random ids, and the hub's spelling of UTC timestamps
//! (`YYYY-MM-DDTHH:MM:SS.mmmZ`); both from `gateway_common`.

pub use gateway_common::random::{random_bytes, random_hex};
pub use gateway_common::time::{format_utc_millis as iso, now_secs, utc_now_millis as now_iso};

/// A URL-safe id: `prefix` + 24 lowercase hex characters (96 random bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", random_hex(12))
}
