//! Redaction before anything touches disk: hash, drop or round named fields.
//!
//! A bare name applies at any depth; a dotted path (`results.*.email`, `*` for a list
//! item) applies at that place only. Names that never occur are harmless.

use crate::spec::Spec;
use gateway_world::json::Value;

/// Hash, drop or round the fields `spec` names; everything else is untouched (the
/// engine's walker, `gateway_world::extract::redact`, which `data extract` uses too).
pub fn redact(value: &Value, spec: &Spec) -> Value {
    gateway_world::extract::redact(value, &spec.redaction, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;
    use gateway_world::files::sha256_hex;
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
}
