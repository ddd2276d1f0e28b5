//! Redaction before anything touches disk: hash, drop or round named fields.
//!
//! A bare name applies at any depth; a dotted path (`results.*.email`, `*` for a list
//! item) applies at that place only. Names that never occur are harmless.

use crate::spec::Spec;
use gateway_world::files::sha256_hex;
use gateway_world::json::{python_str, Map, Value};
use std::collections::BTreeSet;

fn named(key: &str, here: &str, names: &BTreeSet<String>) -> bool {
    names.contains(key) || names.contains(here)
}

/// The salted hash of a value, keeping its shape: arrays hash element-wise, objects
/// and nulls stay as they are.
fn digest(slug: &str, item: &Value) -> Value {
    match item {
        Value::Array(items) => Value::Array(items.iter().map(|i| digest(slug, i)).collect()),
        Value::Object(_) | Value::Null => item.clone(),
        other => Value::Str(format!("sha256:{}", sha256_hex(format!("{slug}:{}", python_str(other)).as_bytes()))),
    }
}

/// Python's `round(x, n)` for a float: correctly rounded on the binary value.
fn round_float(value: f64, decimals: i64) -> f64 {
    if !value.is_finite() {
        return value;
    }
    format!("{value:.0$}", decimals.clamp(0, 10) as usize).parse().unwrap_or(value)
}

/// Hash, drop or round the fields `spec` names; everything else is untouched.
pub fn redact(value: &Value, spec: &Spec) -> Value {
    walk(value, spec, "")
}

fn walk(value: &Value, spec: &Spec, path: &str) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::default();
            for (key, item) in map {
                let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                if named(key, &here, &spec.drop_fields) {
                    continue;
                }
                let redacted = if named(key, &here, &spec.hash_fields) && !matches!(item, Value::Null) {
                    digest(&spec.slug, item)
                } else if let (Some(decimals), true) = (spec.round_fields.get(key), item.is_number()) {
                    match item {
                        Value::Float(f) => Value::Float(round_float(*f, *decimals)),
                        other => other.clone(),
                    }
                } else {
                    walk(item, spec, &here)
                };
                out.insert(key.clone(), redacted);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let here = if path.is_empty() { "*".to_string() } else { format!("{path}.*") };
            Value::Array(items.iter().map(|item| walk(item, spec, &here)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;
    use gateway_world::json::{canonical, parse};

    #[test]
    fn hashes_drops_and_rounds_at_any_depth() {
        let spec = parse_spec(
            "[connector]\nslug = \"acme\"\nbase_url = \"https://x\"\n[redact]\nhash = [\"email\", \"results.*.tags\"]\ndrop = [\"ssn\", \"nowhere.at.all\"]\nround = { lat = 2 }\n[[operations]]\nname = \"a\"\npath = \"/a\"\n",
        )
        .unwrap();
        let body = parse(r#"{"email": "a@b", "results": [{"email": null, "ssn": 1, "lat": 51.50735, "tags": ["x", 1], "n": {"email": 5}}], "tags": ["kept"]}"#).unwrap().value;
        let out = redact(&body, &spec);
        let hashed = format!("sha256:{}", sha256_hex(b"acme:a@b"));
        let five = format!("sha256:{}", sha256_hex(b"acme:5"));
        let x = format!("sha256:{}", sha256_hex(b"acme:x"));
        let one = format!("sha256:{}", sha256_hex(b"acme:1"));
        assert_eq!(
            canonical(&out),
            format!(
                r#"{{"email":"{hashed}","results":[{{"email":null,"lat":51.51,"n":{{"email":"{five}"}},"tags":["{x}","{one}"]}}],"tags":["kept"]}}"#
            )
        );
    }

    #[test]
    fn rounds_like_python() {
        assert_eq!(round_float(2.675, 2), 2.67);
        assert_eq!(round_float(0.125, 2), 0.12);
        assert_eq!(round_float(-1.5, 0), -2.0);
    }
}
