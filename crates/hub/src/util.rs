//! Small helpers: random ids and tokens, UTC timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

/// `n` random bytes from the operating system (the workspace's one random source,
/// `gateway_world::store::fill_random`).
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    gateway_world::store::fill_random(&mut buf);
    buf
}

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    hex::encode(random_bytes(n))
}

/// A URL-safe id: `prefix` + 24 lowercase hex characters (96 random bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", hex::encode(random_bytes(12)))
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_iso() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    iso(now.as_secs() as i64, now.subsec_millis())
}

/// A Unix time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (proleptic Gregorian, UTC).
pub fn iso(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_dates() {
        assert_eq!(super::iso(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(super::iso(1_700_000_000, 123), "2023-11-14T22:13:20.123Z");
    }
}
