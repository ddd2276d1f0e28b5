//! Beyond the original: what makes a session reproducible and testable —
//! a frozen clock and seeded ids (the same transcript gives the same state on any
//! host), injected faults per operation (status, probability, added latency), and
//! the collateral-damage check (everything the task does not name is unchanged).
//!
//! All of it is read from the task's `metadata` (`clock`, `seed`, `faults`,
//! `collateral`) — free-form in the original's task grammar, so specs carrying it
//! stay valid there — or set on a live session with the `configure` control call.

use crate::error::{refuse, HostError};
use gateway_world::json::{self, object, Map, Value};
use std::time::Duration;

/// One injected fault.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The operation it applies to (`*`: every one).
    pub operation: String,
    /// The status answered instead (None: only latency is added).
    pub status: Option<u16>,
    /// How often it strikes, 0–1.
    pub probability: f64,
    /// Latency added before the answer.
    pub latency: Duration,
    /// The body answered with the status.
    pub body: Value,
}

impl Fault {
    fn parse(value: &Value) -> Result<Fault, HostError> {
        let bad = |why: &str| refuse("host", format!("a fault is {{operation?, status?, probability?, latencyMs?, body?}}: {why}"));
        let Some(map) = value.as_object() else { return Err(bad("not an object")) };
        let operation = match map.get("operation") {
            None | Some(Value::Null) => "*".to_string(),
            Some(Value::Str(name)) => name.clone(),
            Some(_) => return Err(bad("operation is a name")),
        };
        let status = match map.get("status") {
            None | Some(Value::Null) => None,
            Some(Value::Int(n)) if (100..=599).contains(n) => Some(*n as u16),
            Some(_) => return Err(bad("status is an HTTP status")),
        };
        let probability = match map.get("probability") {
            None | Some(Value::Null) => 1.0,
            Some(v) => {
                v.as_f64().filter(|p| (0.0..=1.0).contains(p) && !matches!(v, Value::Bool(_))).ok_or_else(|| bad("probability is 0..1"))?
            }
        };
        let latency = match map.get("latencyMs") {
            None | Some(Value::Null) => Duration::ZERO,
            Some(Value::Int(ms)) if (0..=60_000).contains(ms) => Duration::from_millis(*ms as u64),
            Some(_) => return Err(bad("latencyMs is 0..60000")),
        };
        let body = map.get("body").cloned().unwrap_or_else(|| {
            object([("error", Value::str("injected_fault")), ("status", status.map(|s| Value::Int(s.into())).unwrap_or_default())])
        });
        Ok(Fault { operation, status, probability, latency, body })
    }

    /// As configured, for an answer.
    pub fn describe(&self) -> Value {
        object([
            ("operation", Value::str(&self.operation)),
            ("status", self.status.map(|s| Value::Int(s.into())).unwrap_or_default()),
            ("probability", Value::Float(self.probability)),
            ("latencyMs", Value::Int(self.latency.as_millis() as i64)),
        ])
    }
}

/// A session's settings beyond the original.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// The frozen clock, epoch seconds.
    pub clock: Option<f64>,
    /// The seed of ids and fault draws.
    pub seed: u64,
    /// Injected faults.
    pub faults: Vec<Fault>,
    /// What the collateral check leaves out: entity → keys (empty: the whole
    /// entity); None: no collateral check.
    pub collateral: Option<Map>,
}

/// Epoch seconds from a number or an ISO 8601 `YYYY-MM-DDTHH:MM:SS[.fff]Z` text.
fn epoch(value: &Value) -> Result<f64, HostError> {
    if let Some(seconds) = value.as_f64().filter(|_| !matches!(value, Value::Bool(_))) {
        return Ok(seconds);
    }
    let text = value.as_str().ok_or_else(|| refuse("host", "clock is epoch seconds or an ISO 8601 UTC time"))?;
    parse_iso(text).ok_or_else(|| refuse("host", format!("clock {text:?} is not YYYY-MM-DDTHH:MM:SSZ")))
}

fn parse_iso(text: &str) -> Option<f64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min) = (t.next()?.parse::<i64>().ok()?, t.next()?.parse::<i64>().ok()?);
    let sec: f64 = t.next()?.parse().ok()?;
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60) as f64 + sec)
}

fn seed_of(value: &Value) -> u64 {
    match value {
        Value::Int(n) => *n as u64,
        other => {
            use sha2::Digest as _;
            let digest = sha2::Sha256::digest(json::canonical(other).as_bytes());
            u64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
        }
    }
}

impl Behaviour {
    /// From a task's metadata.
    pub fn from_metadata(metadata: Option<&Map>) -> Result<Behaviour, HostError> {
        let mut behaviour = Behaviour::default();
        if let Some(metadata) = metadata {
            behaviour.configure(metadata)?;
        }
        Ok(behaviour)
    }

    /// Apply `{clock?, seed?, faults?, collateral?}` (a member given as null clears it).
    pub fn configure(&mut self, settings: &Map) -> Result<(), HostError> {
        if let Some(clock) = settings.get("clock") {
            self.clock = if matches!(clock, Value::Null) { None } else { Some(epoch(clock)?) };
        }
        if let Some(seed) = settings.get("seed") {
            self.seed = seed_of(seed);
        }
        if let Some(faults) = settings.get("faults") {
            self.faults = match faults {
                Value::Null => Vec::new(),
                Value::Array(items) => items.iter().map(Fault::parse).collect::<Result<_, _>>()?,
                _ => return Err(refuse("host", "faults is a list of {operation?, status?, probability?, latencyMs?, body?}")),
            };
        }
        if let Some(collateral) = settings.get("collateral") {
            self.collateral = match collateral {
                Value::Null | Value::Bool(false) => None,
                Value::Bool(true) => Some(Map::default()),
                Value::Object(map) => Some(map.get("allow").and_then(Value::as_object).cloned().unwrap_or_default()),
                _ => return Err(refuse("host", "collateral is true or {allow: {entity: [key, ...]}}")),
            };
        }
        Ok(())
    }

    /// As configured, for an answer.
    pub fn describe(&self) -> Value {
        object([
            ("clock", self.clock.map(Value::Float).unwrap_or_default()),
            ("seed", Value::Int(self.seed as i64)),
            ("faults", Value::Array(self.faults.iter().map(Fault::describe).collect())),
            ("collateral", self.collateral.clone().map(Value::Object).unwrap_or_default()),
        ])
    }
}

/// The fault that strikes a call of `operation` now, if any: draw number `draw`
/// of the session's seeded sequence decides each fault's probability.
pub fn strike(faults: &[Fault], operation: &str, seed: u64, draw: u64) -> (Duration, Option<(u16, Value)>) {
    let mut latency = Duration::ZERO;
    for (i, fault) in faults.iter().enumerate() {
        if fault.operation != "*" && fault.operation != operation {
            continue;
        }
        let roll = mix(seed ^ draw.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64)) as f64 / u64::MAX as f64;
        if roll >= fault.probability {
            continue;
        }
        latency += fault.latency;
        if let Some(status) = fault.status {
            return (latency, Some((status, fault.body.clone())));
        }
    }
    (latency, None)
}

/// SplitMix64's mixer (the same the id sequence uses): a seeded, reproducible draw.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 1.0 when every row outside `allow` is as it was at the start, else 0.0:
/// `start` and `now` are the host's dumps (`{entity: {key: row}}`).
pub fn collateral_reward(start: &Map, now: &Map, allow: &Map) -> f64 {
    for (entity, rows) in now.iter().chain(start.iter()) {
        if entity == "snapshot" {
            continue;
        }
        let allowed = allow.get(entity);
        if allowed.is_some_and(|keys| keys.as_array().map_or(true, Vec::is_empty)) {
            continue; // the whole entity is the task's to change
        }
        let keys: Vec<&String> = rows.as_object().map(|r| r.keys().collect()).unwrap_or_default();
        for key in keys {
            let named = allowed.and_then(Value::as_array).is_some_and(|list| list.iter().any(|k| json::python_str(k) == *key));
            if named {
                continue;
            }
            let before = start.get(entity).and_then(|r| r.get(key)).map(json::canonical);
            let after = now.get(entity).and_then(|r| r.get(key)).map(json::canonical);
            if before != after {
                return 0.0;
            }
        }
    }
    1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> Map {
        match json::parse(text).unwrap().value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn clocks_parse_from_numbers_and_iso_text() {
        assert_eq!(epoch(&Value::Int(1_767_225_600)).unwrap(), 1_767_225_600.0);
        assert_eq!(epoch(&Value::str("2026-01-01T00:00:00Z")).unwrap(), 1_767_225_600.0);
        assert!(epoch(&Value::str("tomorrow")).is_err());
    }

    #[test]
    fn faults_strike_reproducibly_by_seed_and_draw() {
        let mut behaviour = Behaviour::default();
        behaviour.configure(&map(r#"{"faults": [{"operation": "get_ticket", "status": 503, "probability": 0.5}], "seed": 7}"#)).unwrap();
        let draws: Vec<bool> = (0..64).map(|n| strike(&behaviour.faults, "get_ticket", behaviour.seed, n).1.is_some()).collect();
        let again: Vec<bool> = (0..64).map(|n| strike(&behaviour.faults, "get_ticket", behaviour.seed, n).1.is_some()).collect();
        assert_eq!(draws, again);
        let hits = draws.iter().filter(|h| **h).count();
        assert!((16..=48).contains(&hits), "about half strike: {hits}");
        assert!(strike(&behaviour.faults, "list_tickets", behaviour.seed, 0).1.is_none(), "other operations are untouched");
        assert!(behaviour.configure(&map(r#"{"faults": [{"status": 42}]}"#)).is_err());
    }

    #[test]
    fn collateral_allows_named_rows_and_entities_only() {
        let start = map(r#"{"tickets": {"1": {"s": "open"}, "2": {"s": "open"}}, "users": {"u": {"n": 1}}}"#);
        let solved_one = map(r#"{"tickets": {"1": {"s": "solved"}, "2": {"s": "open"}}, "users": {"u": {"n": 1}}}"#);
        let solved_both = map(r#"{"tickets": {"1": {"s": "solved"}, "2": {"s": "solved"}}, "users": {"u": {"n": 1}}}"#);
        let allow_one = map(r#"{"tickets": [1]}"#);
        assert_eq!(collateral_reward(&start, &solved_one, &allow_one), 1.0);
        assert_eq!(collateral_reward(&start, &solved_both, &allow_one), 0.0);
        assert_eq!(collateral_reward(&start, &solved_both, &map(r#"{"tickets": []}"#)), 1.0);
        let deleted = map(r#"{"tickets": {"1": {"s": "open"}}, "users": {"u": {"n": 1}}}"#);
        assert_eq!(collateral_reward(&start, &deleted, &allow_one), 0.0, "a deleted row is damage");
    }
}
