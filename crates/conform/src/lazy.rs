//! A large JSON document held as its text and parsed one node at a time.
//!
//! A vendor's OpenAPI document can be big (GitHub's is 13 MB, ~1,100 paths and ~900
//! component schemas) while a conformance run reads a few dozen of its nodes: the
//! path items of the world's operations and the schemas their answers reference.
//! Building the whole tree costs several times the text in memory and most of the
//! run's time, so the text is kept and indexed lazily: an object's or array's member
//! spans are found by a scan when first asked for (cached), and a node is parsed into
//! a [`Value`] only when read (cached). The text must already be valid JSON (the
//! loader checks it whole first), so the scanner skips values without re-checking.

use gateway_world::json::{parse_loads, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A byte range of the text holding one JSON value.
pub type Span = (usize, usize);

/// The members of one container, each with its value's span.
#[derive(Debug, Default)]
pub struct Members {
    /// Object members (name unescaped) in document order; empty for arrays.
    pub named: Vec<(String, Span)>,
    /// Array items; empty for objects.
    pub items: Vec<Span>,
}

/// The document: its text, its container indexes and parsed nodes so far.
#[derive(Debug)]
pub struct LazyJson {
    text: String,
    root: Span,
    containers: RefCell<HashMap<usize, Rc<Members>>>,
    nodes: RefCell<HashMap<usize, Rc<Value>>>,
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// The end (exclusive) of the string whose opening quote is at `at`.
fn string_end(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The end (exclusive) of the value starting at `at` (no leading whitespace).
fn value_end(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'"') => string_end(bytes, at),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        }
        _ => {
            let mut i = at;
            while i < bytes.len() && !matches!(bytes[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            i
        }
    }
}

/// A JSON pointer's parts, unescaped (`~1` is `/`, `~0` is `~`).
pub fn pointer_parts(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer.split('/').skip(1).map(|part| part.replace("~1", "/").replace("~0", "~"))
}

impl LazyJson {
    /// Hold `text`, which must be one valid JSON value.
    pub fn new(text: String) -> LazyJson {
        let bytes = text.as_bytes();
        let start = skip_ws(bytes, 0);
        let root = (start, value_end(bytes, start));
        LazyJson { text, root, containers: RefCell::default(), nodes: RefCell::default() }
    }

    /// The whole document's span.
    pub fn root(&self) -> Span {
        self.root
    }

    /// The members of the container at `span` (none for a scalar).
    pub fn members(&self, span: Span) -> Rc<Members> {
        if let Some(found) = self.containers.borrow().get(&span.0) {
            return found.clone();
        }
        let bytes = self.text.as_bytes();
        let mut members = Members::default();
        let object = bytes.get(span.0) == Some(&b'{');
        if object || bytes.get(span.0) == Some(&b'[') {
            let mut at = skip_ws(bytes, span.0 + 1);
            while at < span.1 && !matches!(bytes[at], b'}' | b']') {
                if object {
                    let key_end = string_end(bytes, at);
                    let name = serde_json::from_str::<String>(&self.text[at..key_end]).unwrap_or_default();
                    at = skip_ws(bytes, key_end);
                    at = skip_ws(bytes, at + 1); // the colon
                    let end = value_end(bytes, at);
                    members.named.push((name, (at, end)));
                    at = end;
                } else {
                    let end = value_end(bytes, at);
                    members.items.push((at, end));
                    at = end;
                }
                at = skip_ws(bytes, at);
                if bytes.get(at) == Some(&b',') {
                    at = skip_ws(bytes, at + 1);
                }
            }
        }
        let members = Rc::new(members);
        self.containers.borrow_mut().insert(span.0, members.clone());
        members
    }

    /// The span of member `key` of the object (or item `key` of the array) at `span`.
    /// A repeated member answers its last value, as Python's `json.loads` keeps it.
    pub fn child(&self, span: Span, key: &str) -> Option<Span> {
        let members = self.members(span);
        if self.text.as_bytes().get(span.0) == Some(&b'[') {
            return key.parse::<usize>().ok().and_then(|i| members.items.get(i).copied());
        }
        members.named.iter().rev().find(|(name, _)| name == key).map(|(_, s)| *s)
    }

    /// The span a JSON pointer (`/a/b`, unescaped here) names, from the root.
    pub fn pointer(&self, pointer: &str) -> Option<Span> {
        let mut span = self.root;
        for part in pointer_parts(pointer) {
            span = self.child(span, &part)?;
        }
        Some(span)
    }

    /// The value at `span`, parsed once.
    pub fn value(&self, span: Span) -> Rc<Value> {
        if let Some(found) = self.nodes.borrow().get(&span.0) {
            return found.clone();
        }
        let value = Rc::new(parse_loads(&self.text[span.0..span.1]).map(|p| p.value).unwrap_or_default());
        self.nodes.borrow_mut().insert(span.0, value.clone());
        value
    }

    /// Whether the value at `span` is an object.
    pub fn is_object(&self, span: Span) -> bool {
        self.text.as_bytes().get(span.0) == Some(&b'{')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_pointers_find_nodes_without_parsing_the_rest() {
        let doc = LazyJson::new(
            r#" {"a": {"x~y": [1, {"b/c": "q\"}"}], "n": -1.5e3}, "s": "}]", "a": {"last": true}, "e": {}, "z": []} "#.to_string(),
        );
        let root = doc.members(doc.root());
        assert_eq!(root.named.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["a", "s", "a", "e", "z"]);
        // A repeated member answers its last value, as json.loads does.
        assert!(matches!(doc.value(doc.pointer("/a").unwrap()).get("last"), Some(Value::Bool(true))));
        assert!(doc.pointer("/a/x~0y").is_none());
        assert_eq!(doc.value(doc.pointer("/s").unwrap()).as_str(), Some("}]"));
        assert!(doc.members(doc.pointer("/e").unwrap()).named.is_empty());
        assert!(doc.members(doc.pointer("/z").unwrap()).items.is_empty());
        let first = LazyJson::new(r#"{"a": {"x~y": [1, {"b/c": "q\"}"}], "n": -1.5e3}}"#.into());
        assert_eq!(first.value(first.pointer("/a/x~0y/1/b~1c").unwrap()).as_str(), Some("q\"}"));
        assert_eq!(first.value(first.pointer("/a/n").unwrap()).as_f64(), Some(-1500.0));
    }
}
