//! Generated fields of created rows, `api.generate = {field = "<kind>"}`:
//!
//! | kind | value |
//! | --- | --- |
//! | `uuid` | a version-4 UUID: a session's seeded sequence, else led by an ever-growing clock stamp so new rows append to the indexes (`clock::ordered_uuid4`) |
//! | `int` | the entity's highest integer of the field + 1 |
//! | `int-in-parent` | the same among the parent's rows (`api.parent`: issue numbers) |
//! | `now` | the clock, ISO 8601 seconds with `Z` |
//! | `epoch` | the clock, integer seconds (Slack's `created`) |
//! | `ts` | a Slack message timestamp, `"1733300000.000100"`: the clock's seconds and microseconds, always after the entity's highest, so unique and increasing |
//! | `id:<PREFIX>` | the prefix and ten upper-case letters and digits (`id:C` → `C4F1Z0QK2MB`, a Slack channel id), drawn like a uuid |
//!
//! `int`, `int-in-parent` and `ts` read the table, so they are taken inside the
//! writer: concurrent creates never take the same one.

use gateway_world::json::Value;
use gateway_world::store::{PreparedInsert, Store};
use gateway_world::Contract;

/// A generator kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `uuid`.
    Uuid,
    /// `int`.
    Int,
    /// `int-in-parent`.
    IntInParent,
    /// `now`.
    Now,
    /// `epoch`.
    Epoch,
    /// `ts`.
    Ts,
    /// `id:<PREFIX>`.
    Id(String),
}

/// The kinds, as a refusal names them.
pub const KINDS: &str = "uuid, int, int-in-parent, now, epoch, ts, id:<PREFIX>";

impl Kind {
    /// The kind a declaration names, if any.
    pub fn parse(text: &str) -> Option<Kind> {
        Some(match text {
            "uuid" => Kind::Uuid,
            "int" => Kind::Int,
            "int-in-parent" => Kind::IntInParent,
            "now" => Kind::Now,
            "epoch" => Kind::Epoch,
            "ts" => Kind::Ts,
            _ => {
                let prefix = text.strip_prefix("id:")?;
                if !prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    return None;
                }
                Kind::Id(prefix.to_string())
            }
        })
    }

    /// Whether the value is taken inside the writer (it reads the table).
    pub fn in_writer(&self) -> bool {
        matches!(self, Kind::Int | Kind::IntInParent | Kind::Ts)
    }
}

/// The prefix and ten base-36 characters of a uuid's 122 random bits.
pub fn prefixed_id(prefix: &str, uuid: &str) -> String {
    let hex: String = uuid.chars().filter(char::is_ascii_hexdigit).collect();
    let mut n = u128::from_str_radix(&hex, 16).unwrap_or(0);
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = String::with_capacity(prefix.len() + 10);
    out.push_str(prefix);
    for _ in 0..10 {
        out.push(DIGITS[(n % 36) as usize] as char);
        n /= 36;
    }
    out
}

/// A Slack timestamp `(seconds, microseconds)` read back; None for other text.
fn parse_ts(text: &str) -> Option<(i64, i64)> {
    let (seconds, micros) = text.split_once('.')?;
    if micros.is_empty() || micros.len() > 6 || !micros.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((seconds.parse().ok()?, format!("{micros:0<6}").parse().ok()?))
}

/// The timestamp after `highest` (if any) nearest the clock `now`.
pub fn next_ts(now: f64, highest: Option<&str>) -> String {
    let seconds = now.floor();
    let mut next = (seconds as i64, (((now - seconds) * 1e6) as i64).clamp(0, 999_999));
    if let Some((s, m)) = highest.and_then(parse_ts) {
        if (s, m) >= next {
            next = if m >= 999_999 { (s + 1, 0) } else { (s, m + 1) };
        }
    }
    format!("{}.{:06}", next.0, next.1)
}

/// The entity's highest timestamp text in `field` (dotted), in the writer.
pub fn highest_ts(store: &Store, entity: &str, field: &str) -> gateway_world::Result<Option<String>> {
    let mut path = String::from("$");
    for part in field.split('.') {
        path.push_str(&format!(".\"{}\"", part.replace('"', "\"\"")));
    }
    // Timestamps of one width order as text; a longer one is later.
    let sql = format!(
        "SELECT v FROM (SELECT json_extract(payload, ?1) AS v FROM {}) WHERE typeof(v) = 'text' \
         ORDER BY length(v) DESC, v DESC LIMIT 1",
        gateway_world::compiler::quote(entity)
    );
    let mut statement = store.connection().prepare_cached(&sql).map_err(gateway_world::error::Error::from)?;
    let mut rows = statement.query([&path]).map_err(gateway_world::error::Error::from)?;
    match rows.next().map_err(gateway_world::error::Error::from)? {
        Some(row) => Ok(Some(row.get::<_, String>(0).map_err(gateway_world::error::Error::from)?)),
        None => Ok(None),
    }
}

/// What the writer fills in: each generated field taken inside it, in order.
#[derive(Debug, Clone)]
pub struct InWriter {
    /// (field, kind) of the `int`, `int-in-parent` and `ts` fields the row lacks.
    pub fields: Vec<(String, Kind)>,
    /// The parent's link fields and values (`int-in-parent`'s scope).
    pub scope: Vec<(String, Value)>,
    /// The clock, epoch seconds (`ts`).
    pub now: f64,
}

impl InWriter {
    /// Fill the fields on `row`, reading the store.
    pub fn fill(&self, store: &mut Store, entity: &str, row: &mut Value) -> gateway_world::Result<()> {
        for (field, kind) in &self.fields {
            let value = match kind {
                Kind::IntInParent => Value::Int(store.next_integer_in(entity, field, &self.scope)?),
                Kind::Ts => Value::Str(next_ts(self.now, highest_ts(store, entity, field)?.as_deref())),
                _ => Value::Int(store.next_integer(entity, field)?),
            };
            if let Value::Object(map) = row {
                map.insert(field.clone(), value);
            }
        }
        Ok(())
    }

    /// The write a create hands the writer: the fields taken inside it filled, then
    /// `compute` (computed fields, which may read them), then the insert. When
    /// nothing of the row waits for the writer, the row is checked and encoded here,
    /// on the request's task, and the writer only stores it (a refusal is answered
    /// as the writer's own would be, in its turn): validation and batch building
    /// stay off the one thread every write of the session goes through.
    pub fn create_job(self, contract: &Contract, entity: &str, row: Value, source: Value, compute: Option<Compute>) -> CreateJob {
        let name = entity.to_string();
        if self.fields.is_empty() && compute.is_none() {
            let prepared = PreparedInsert::new(contract, &name, &row, Some(source));
            return Box::new(move |store| store.insert_prepared(prepared?));
        }
        Box::new(move |store| {
            let mut row = row;
            self.fill(store, &name, &mut row)?;
            if let Some(compute) = compute {
                compute(&mut row);
            }
            store.insert(&name, &row, Some(source))
        })
    }
}

/// Computed fields of a created row, filled inside the writer.
pub type Compute = Box<dyn FnOnce(&mut Value) + Send>;

/// A create's write (the state's `WriteJob`, named here without depending on it).
pub type CreateJob = Box<dyn FnOnce(&mut Store) -> gateway_world::Result<Value> + Send>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_others_are_refused() {
        assert_eq!(Kind::parse("ts"), Some(Kind::Ts));
        assert_eq!(Kind::parse("id:C"), Some(Kind::Id("C".into())));
        assert_eq!(Kind::parse("id:"), Some(Kind::Id(String::new())));
        assert_eq!(Kind::parse("id:a b"), None);
        assert_eq!(Kind::parse("serial"), None);
        assert!(Kind::Ts.in_writer() && !Kind::Epoch.in_writer());
    }

    #[test]
    fn timestamps_follow_the_clock_and_never_repeat() {
        assert_eq!(next_ts(1_733_300_000.25, None), "1733300000.250000");
        assert_eq!(next_ts(1_733_300_000.25, Some("1733299999.000100")), "1733300000.250000");
        // A frozen clock, or one behind the rows: one microsecond after the highest.
        assert_eq!(next_ts(1_733_300_000.0, Some("1733300000.000000")), "1733300000.000001");
        assert_eq!(next_ts(5.0, Some("1733300000.999999")), "1733300001.000000");
        assert_eq!(next_ts(5.0, Some("1733300000.5")), "1733300000.500001");
        assert_eq!(next_ts(5.0, Some("not a ts")), "5.000000");
    }

    #[test]
    fn prefixed_ids_are_upper_case_and_stable_for_a_uuid() {
        let id = prefixed_id("C", "3f2504e0-4f89-41d3-9a0c-0305e82c3301");
        assert_eq!(id.len(), 11);
        assert!(id.starts_with('C') && id[1..].chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()), "{id}");
        assert_eq!(id, prefixed_id("C", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"));
        assert_ne!(id, prefixed_id("C", "3f2504e0-4f89-41d3-9a0c-0305e82c3302"));
    }
}
