//! YAML read into our [`Value`]: the workspace's one YAML reader (agent manifests,
//! vendors' OpenAPI documents). YAML keys may be any scalar; JSON's are text, and the
//! two readers the workspace had disagreed on how to spell a boolean or null key — so
//! the caller says which spelling it owes ([`KeyStyle`]).

use super::{Map, Value};

/// How a non-text mapping key becomes text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStyle {
    /// As the original's PyYAML then `str()` spells it: `True`, `False`, `None`
    /// (files the original reads, such as `gateway_manifest/agent.yml`).
    Python,
    /// As JSON would: `true`, `false`, `null` (documents meant as JSON, such as OpenAPI).
    Json,
}

/// A YAML refusal: what was wrong and, when known, where (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// The parser's reason, without its own "at line …" suffix.
    pub reason: String,
    /// Line and column of the fault.
    pub place: Option<(usize, usize)>,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.place {
            Some((line, column)) => write!(f, "{} at line {line}, column {column}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// Parse one YAML document.
pub fn parse_yaml(text: &str, keys: KeyStyle) -> Result<Value, YamlError> {
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Ok(value) => Ok(from_yaml(value, keys)),
        Err(error) => {
            let place = error.location().map(|l| (l.line(), l.column()));
            let reason = error.to_string();
            let reason = reason.split(" at line ").next().unwrap_or(&reason).to_string();
            Err(YamlError { reason, place })
        }
    }
}

fn from_yaml(value: serde_yaml_ng::Value, keys: KeyStyle) -> Value {
    use serde_yaml_ng::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(f)) => Value::Float(f),
            _ => Value::Null,
        },
        Y::String(s) => Value::Str(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(|item| from_yaml(item, keys)).collect()),
        Y::Mapping(mapping) => {
            let mut map = Map::default();
            for (key, item) in mapping {
                let key = match (key, keys) {
                    (Y::String(s), _) => s,
                    (Y::Bool(b), KeyStyle::Python) => if b { "True" } else { "False" }.to_string(),
                    (Y::Bool(b), KeyStyle::Json) => b.to_string(),
                    (Y::Null, KeyStyle::Python) => "None".into(),
                    (Y::Null, KeyStyle::Json) => "null".into(),
                    (Y::Number(n), _) => n.to_string(),
                    (other, _) => serde_yaml_ng::to_string(&other).unwrap_or_default().trim().to_string(),
                };
                map.insert(key, from_yaml(item, keys));
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => from_yaml(tagged.value, keys),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_keys_are_spelt_as_the_caller_owes() {
        let text = "true: 1\nnull: 2\n200: {a: [1, 2.5, x]}\n";
        let python = parse_yaml(text, KeyStyle::Python).unwrap();
        let keys: Vec<&str> = python.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["True", "None", "200"]);
        let json = parse_yaml(text, KeyStyle::Json).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["true", "null", "200"]);
        let inner = json.get("200").and_then(|v| v.get("a")).unwrap();
        assert!(
            matches!(inner, Value::Array(items) if matches!(items[..], [Value::Int(1), Value::Float(f), Value::Str(ref s)] if f == 2.5 && s == "x")),
            "{inner:?}"
        );
    }

    #[test]
    fn a_refusal_names_its_place() {
        let error = parse_yaml("a: [1, 2\nb: 3\n", KeyStyle::Json).unwrap_err();
        assert!(error.place.is_some(), "{error:?}");
        assert!(error.to_string().contains(" at line "), "{error}");
    }
}
