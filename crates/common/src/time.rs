//! UTC dates from Unix time (proleptic Gregorian), in the two spellings the
//! original writes: seconds (`2023-11-14T22:13:20Z`) and milliseconds
//! (`2023-11-14T22:13:20.123Z`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Now as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now_seconds() -> String {
    format_utc(now_secs() as i64)
}

/// Now as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn utc_now_millis() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format_utc_millis(now.as_secs() as i64, now.subsec_millis())
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_utc(secs: i64) -> String {
    let (date, rem) = civil(secs);
    format!("{date}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Unix seconds and milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_utc_millis(secs: i64, millis: u32) -> String {
    let (date, rem) = civil(secs);
    format!("{date}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The date `YYYY-MM-DD` of a Unix time and the seconds into its day.
fn civil(secs: i64) -> (String, i64) {
    let days = secs.div_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (format!("{year:04}-{month:02}-{day:02}"), secs.rem_euclid(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_both_spellings() {
        assert_eq!(format_utc_millis(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc_millis(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(format_utc_millis(1_700_000_000, 123), "2023-11-14T22:13:20.123Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_utc(253_402_300_799), "9999-12-31T23:59:59Z");
    }
}
