//! The parts the served OpenAPI document is put together from: answers (a status,
//! its description, body schema, headers, example) and their merging when a status or
//! a path and method is described twice, constant and `invalid` schemas, entity
//! references, and examples typed to fit their schema. A leaf of `openapi`.

use gateway_world::json::{canonical, object, Map, Value};

pub(super) const JSON: &str = "application/json";
pub(super) fn described(description: impl Into<String>) -> Map {
    let mut map = Map::default();
    map.insert("description".into(), Value::Str(description.into()));
    map
}

/// Whether `value` is of the (scalar) schema's type and among its choices: an
/// example is only given where it fits.
pub(super) fn fits(schema: &Value, value: &Value) -> bool {
    let typed = matches!(
        (schema.get("type").and_then(Value::as_str), value),
        (Some("string"), Value::Str(_))
            | (Some("integer"), Value::Int(_))
            | (Some("boolean"), Value::Bool(_))
            | (Some("number"), Value::Int(_) | Value::Float(_))
    );
    let chosen = match schema.get("enum").and_then(Value::as_array) {
        Some(choices) => choices.iter().any(|c| canonical(c) == canonical(value)),
        None => true,
    };
    typed && chosen
}

/// The text of a value in a query string, typed back as the parameter's schema reads it.
pub(super) fn typed_sample(schema: &Value, text: &str) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => text.parse().map(Value::Int).unwrap_or_else(|_| Value::str(text)),
        Some("number") => text.parse().map(Value::Float).unwrap_or_else(|_| Value::str(text)),
        Some("boolean") => match text {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            _ => Value::str(text),
        },
        _ => Value::str(text),
    }
}

/// How a response is described: its status, a description, and (when the server
/// decides the body) a schema with its media type.
pub(super) struct Answer {
    /// The status, or `default`.
    pub(super) status: String,
    pub(super) description: String,
    /// The media type and schema of the body, when the server decides it.
    pub(super) body: Option<(String, Value)>,
    pub(super) headers: Vec<(String, Value)>,
    pub(super) example: Option<Value>,
}

impl Answer {
    pub(super) fn new(status: impl ToString, description: impl Into<String>) -> Answer {
        Answer { status: status.to_string(), description: description.into(), body: None, headers: Vec::new(), example: None }
    }

    pub(super) fn with_body(mut self, media: &str, schema: Value) -> Answer {
        self.body = Some((media.to_string(), schema));
        self
    }

    fn render(&self) -> Value {
        let mut out = described(&self.description);
        if !self.headers.is_empty() {
            out.insert("headers".into(), Value::Object(self.headers.iter().cloned().collect()));
        }
        if let Some((media, schema)) = &self.body {
            let mut content = Map::default();
            content.insert("schema".into(), schema.clone());
            if let Some(example) = &self.example {
                content.insert("example".into(), example.clone());
            }
            out.insert("content".into(), object([(media.as_str(), Value::Object(content))]));
        }
        Value::Object(out)
    }
}

pub(super) fn header(description: &str, required: bool, schema: Value) -> Value {
    object([("description", Value::str(description)), ("required", Value::Bool(required)), ("schema", schema)])
}

pub(super) fn const_schema(value: &Value) -> Value {
    object([("const", value.clone())])
}

/// The `[api].invalid` body: as configured, or (an object) with the refusal's `detail` added.
pub(super) fn invalid_schema(invalid: &Value) -> Value {
    let Value::Object(members) = invalid else {
        return const_schema(invalid);
    };
    let mut properties = Map::default();
    let mut required = Vec::new();
    for (key, value) in members {
        if key != "detail" {
            properties.insert(key.clone(), const_schema(value));
            required.push(Value::str(key));
        }
    }
    properties.insert("detail".into(), object([("description", Value::str("Why the world refused the request."))]));
    object([("type", Value::str("object")), ("properties", Value::Object(properties)), ("required", Value::Array(required))])
}

pub(super) fn entity_ref(entity: &str) -> Value {
    object([("$ref", Value::Str(format!("#/components/schemas/{entity}")))])
}

/// Add a response to an operation's `responses`; a status described twice (two
/// settings sharing a status, or merged variants) takes either body.
pub(super) fn merge_response(responses: &mut Map, answer: &Answer) {
    let rendered = answer.render();
    let Some(existing) = responses.get_mut(&answer.status) else {
        responses.insert(answer.status.clone(), rendered);
        return;
    };
    if canonical(existing) == canonical(&rendered) {
        return;
    }
    let Value::Object(existing) = existing else { return };
    let description = format!("{} Or: {}", existing.get("description").and_then(Value::as_str).unwrap_or(""), answer.description);
    existing.insert("description".into(), Value::Str(description));
    let theirs = rendered.get("content").cloned();
    let merged = match (existing.get("content").cloned(), theirs) {
        (Some(Value::Object(mine)), Some(Value::Object(theirs))) if mine.keys().eq(theirs.keys()) && mine.len() == 1 => {
            let (media, mine) = mine.into_iter().next().expect("one media type");
            let theirs = theirs.get(&media).cloned().unwrap_or_default();
            let schemas = [mine.get("schema"), theirs.get("schema")].into_iter().flatten().cloned().collect();
            Some(object([(media.as_str(), object([("schema", object([("anyOf", Value::Array(schemas))]))]))]))
        }
        // Different media types, or a status with and without a body: no promise.
        _ => None,
    };
    match merged {
        Some(content) => existing.insert("content".into(), content),
        None => existing.shift_remove("content"),
    };
    existing.shift_remove("headers");
}

/// Merge another operation on the same path and method into `existing`: its
/// parameters (none required but path ones), its answers, and its name kept under
/// `x-gateway-variants`.
pub(super) fn merge_variant(existing: &mut Map, variant: Map) {
    let known = |existing: &Map, parameter: &Value| {
        existing.get("parameters").and_then(Value::as_array).is_some_and(|present| {
            present.iter().any(|p| {
                p.get("name").map(canonical) == parameter.get("name").map(canonical)
                    && p.get("in").map(canonical) == parameter.get("in").map(canonical)
            })
        })
    };
    for parameter in variant.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default() {
        if !known(existing, &parameter) {
            if let Some(Value::Array(parameters)) = existing.get_mut("parameters") {
                parameters.push(parameter);
            }
        }
    }
    if let (Some(Value::Object(theirs)), Some(Value::Object(_))) = (variant.get("responses"), existing.get("responses")) {
        for (status, response) in theirs {
            let Some(Value::Object(responses)) = existing.get_mut("responses") else { break };
            let answer = Answer {
                status: status.clone(),
                description: response.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
                body: response
                    .get("content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.iter().next())
                    .map(|(media, m)| (media.clone(), m.get("schema").cloned().unwrap_or_default())),
                headers: Vec::new(),
                example: None,
            };
            merge_response(responses, &answer);
        }
    }
    if variant.get("requestBody").is_some() && existing.get("requestBody").is_none() {
        existing.insert("requestBody".into(), variant.get("requestBody").cloned().unwrap_or_default());
    } else if let (Some(mine), Some(theirs)) = (existing.get("requestBody"), variant.get("requestBody")) {
        if canonical(mine) != canonical(theirs) {
            // Two different bodies on one method and path: either is taken.
            let any = object([("content", object([(JSON, object([("schema", object([("type", Value::str("object"))]))]))]))]);
            existing.insert("requestBody".into(), any);
        }
    }
    let summary = object([
        ("operationId", variant.get("operationId").cloned().unwrap_or_default()),
        ("x-gateway-action", variant.get("x-gateway-action").cloned().unwrap_or_default()),
    ]);
    match existing.get_mut("x-gateway-variants") {
        Some(Value::Array(variants)) => variants.push(summary),
        _ => {
            existing.insert("x-gateway-variants".into(), Value::Array(vec![summary]));
        }
    }
}

/// Put `value` at a dotted place of an object, creating the objects between.
pub(super) fn place_value(target: &mut Value, place: &str, value: Value) {
    let parts: Vec<&str> = place.split('.').collect();
    let mut node = target;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else { return };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), value);
            return;
        }
        node = map.entry(part.to_string()).or_insert_with(|| Value::Object(Map::default()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Value {
        gateway_world::json::parse(text).unwrap().value
    }

    #[test]
    fn examples_are_given_where_they_fit() {
        assert!(fits(&parsed(r#"{"type": "integer"}"#), &Value::Int(3)));
        assert!(!fits(&parsed(r#"{"type": "integer"}"#), &Value::str("3")));
        assert!(!fits(&parsed(r#"{"type": "string", "enum": ["a"]}"#), &Value::str("b")));
        assert_eq!(canonical(&typed_sample(&parsed(r#"{"type": "integer"}"#), "12")), "12");
    }

    #[test]
    fn an_invalid_body_may_carry_the_refusal() {
        let schema = invalid_schema(&parsed(r#"{"error": "RecordInvalid", "detail": "x"}"#));
        assert_eq!(
            canonical(&schema),
            r#"{"properties":{"detail":{"description":"Why the world refused the request."},"error":{"const":"RecordInvalid"}},"required":["error"],"type":"object"}"#
        );
    }

    #[test]
    fn mapped_examples_nest_their_places() {
        let mut example = Value::Object(Map::default());
        place_value(&mut example, "ticket.subject", Value::str("hi"));
        assert_eq!(canonical(&example), r#"{"ticket":{"subject":"hi"}}"#);
    }

    #[test]
    fn a_status_described_twice_takes_either_body() {
        let mut responses = Map::default();
        merge_response(&mut responses, &Answer::new(404, "a").with_body(JSON, const_schema(&Value::Int(1))));
        merge_response(&mut responses, &Answer::new(404, "b").with_body(JSON, const_schema(&Value::Int(2))));
        assert_eq!(
            canonical(&Value::Object(responses)),
            r#"{"404":{"content":{"application/json":{"schema":{"anyOf":[{"const":1},{"const":2}]}}},"description":"a Or: b"}}"#
        );
    }
}
