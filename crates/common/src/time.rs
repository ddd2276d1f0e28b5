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
    let mut text = String::with_capacity(20);
    push_civil(&mut text, secs);
    text.push('Z');
    text
}

/// Unix seconds and milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_utc_millis(secs: i64, millis: u32) -> String {
    let mut text = String::with_capacity(24);
    push_civil(&mut text, secs);
    text.push('.');
    push_digits(&mut text, i64::from(millis), 3);
    text.push('Z');
    text
}

/// Append `YYYY-MM-DDTHH:MM:SS` of a Unix time. Written digit by digit: a created
/// row's timestamps are drawn for every create, and `format!` cost more than the
/// arithmetic.
fn push_civil(text: &mut String, secs: i64) {
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
    let rem = secs.rem_euclid(86_400);
    if (0..=9999).contains(&year) {
        push_digits(text, year, 4);
    } else {
        text.push_str(&format!("{year:04}"));
    }
    for (separator, value) in [('-', month), ('-', day), ('T', rem / 3600), (':', rem % 3600 / 60), (':', rem % 60)] {
        text.push(separator);
        push_digits(text, value, 2);
    }
}

/// Append `value` (0 ≤ value < 10^width) as exactly `width` decimal digits.
fn push_digits(text: &mut String, value: i64, width: u32) {
    for place in (0..width).rev() {
        let digit = (value / 10_i64.pow(place) % 10) as u8;
        text.push(char::from(b'0' + digit));
    }
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
        // Years outside 0..=9999 are written as `{:04}` writes them.
        assert_eq!(format_utc(253_402_300_800), "10000-01-01T00:00:00Z");
        assert_eq!(format_utc(-62_167_219_201), "-001-12-31T23:59:59Z");
    }
}
