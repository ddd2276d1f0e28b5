//! A member of an answer, named the vendor's way (`hits_key`, `cursor_key`,
//! `more_key`): one key or a path of keys, set in an answer and described in its
//! schema. A leaf: the settings hold members, the pages and documents fill them.

use gateway_world::json::{Map, Value};

/// A member of an answer, named the vendor's way: one key (`"total_count"`, or
/// `"@odata.nextLink"`, dots and all), or a path of keys into nested objects
/// (`["response_metadata", "next_cursor"]`, Slack's); no key at all means the
/// member is left out (a vendor that counts nothing: `hits_key = ""`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Member(pub Vec<String>);

impl Member {
    /// One key (none when empty).
    pub fn key(name: &str) -> Member {
        Member(if name.is_empty() { Vec::new() } else { vec![name.to_string()] })
    }

    /// Whether the member is left out.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at this member of `map`, making the objects on the way (an object
    /// already there keeps its other members).
    pub fn set(&self, map: &mut Map, value: Value) {
        let Some((last, path)) = self.0.split_last() else { return };
        let mut node = map;
        for part in path {
            if !matches!(node.get(part.as_str()), Some(Value::Object(_))) {
                node.insert(part.clone(), Value::Object(Map::default()));
            }
            let Some(Value::Object(inner)) = node.get_mut(part.as_str()) else { return };
            node = inner;
        }
        node.insert(last.clone(), value);
    }
}

impl Member {
    /// Describe the member in a JSON Schema object's `properties`: `schema` at its
    /// key, or (a path) inside object schemas made on the way, each member required.
    pub fn place_schema(&self, properties: &mut Map, schema: Value) {
        let Some((first, rest)) = self.0.split_first() else { return };
        if rest.is_empty() {
            properties.insert(first.clone(), schema);
            return;
        }
        let mut inner = match properties.get(first.as_str()).and_then(|s| s.get("properties")) {
            Some(Value::Object(existing)) => existing.clone(),
            _ => Map::default(),
        };
        Member(rest.to_vec()).place_schema(&mut inner, schema);
        let required: Vec<Value> = inner.keys().map(Value::str).collect();
        let object = [("type", Value::str("object")), ("properties", Value::Object(inner)), ("required", Value::Array(required))];
        properties.insert(first.clone(), Value::Object(object.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    }
}

impl std::fmt::Display for Member {
    /// The keys joined by `.` (what `ctx.settings` shows a handler).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_keys_or_paths_and_can_be_left_out() {
        let mut map = Map::default();
        Member::key("@odata.nextLink").set(&mut map, Value::str("u"));
        Member::key("").set(&mut map, Value::Int(3));
        let path = Member(vec!["response_metadata".into(), "next_cursor".into()]);
        path.set(&mut map, Value::str("Mg"));
        Member(vec!["response_metadata".into(), "messages".into()]).set(&mut map, Value::Array(Vec::new()));
        assert_eq!(
            gateway_world::json::canonical(&Value::Object(map)),
            r#"{"@odata.nextLink":"u","response_metadata":{"messages":[],"next_cursor":"Mg"}}"#
        );
        assert_eq!(path.to_string(), "response_metadata.next_cursor");
    }
}
