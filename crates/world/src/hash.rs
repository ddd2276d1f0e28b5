//! The digests the original computes over contract documents, streamed: a large
//! document is hashed without its encoding ever being held whole.

use crate::json::{dumps_in_pieces, DumpOptions, Value};
use sha2::{Digest, Sha256};

/// The bytes of encoding gathered before they go into the hash.
const PIECE: usize = 64 * 1024;

/// `sha256(encoded(value))`: the hex digest of the value's canonical text and a newline
/// (what the lock records for documents and generated JSON).
pub fn encoded_digest(value: &Value) -> String {
    digest_of_pieces(|sink| {
        dumps_in_pieces(value, DumpOptions::CANONICAL, sink);
        sink("\n");
    })
}

/// The lowercase hex SHA-256 of the text `generate` hands its sink a piece at a time
/// (a generated file, a batch with its mutations streamed): nothing held whole.
pub fn digest_of_pieces(generate: impl FnOnce(&mut dyn FnMut(&str))) -> String {
    let mut hasher = Sha256::new();
    generate(&mut |piece: &str| hasher.update(piece.as_bytes()));
    hex::encode(hasher.finalize())
}

/// The cross-runtime publication digest: SHA-256 of a tagged binary encoding in
/// which integers and floats encode alike and keys sort by UTF-8 bytes.
pub fn publication_digest(value: &Value) -> String {
    let mut encoding = Encoding { out: Vec::with_capacity(2 * PIECE), hasher: Sha256::new() };
    encoding.value(value);
    encoding.hasher.update(&encoding.out);
    hex::encode(encoding.hasher.finalize())
}

/// The tagged encoding, hashed a piece at a time.
struct Encoding {
    out: Vec<u8>,
    hasher: Sha256,
}

impl Encoding {
    fn string(&mut self, text: &str) {
        self.out.push(b's');
        self.out.extend_from_slice(text.len().to_string().as_bytes());
        self.out.push(b':');
        self.out.extend_from_slice(text.as_bytes());
    }

    fn value(&mut self, value: &Value) {
        if self.out.len() >= PIECE {
            self.hasher.update(&self.out);
            self.out.clear();
        }
        let out = &mut self.out;
        match value {
            Value::Null => out.push(b'n'),
            Value::Bool(true) => out.push(b't'),
            Value::Bool(false) => out.push(b'f'),
            Value::Int(_) | Value::Float(_) => {
                let number = value.as_f64().unwrap_or(0.0);
                let number = if number == 0.0 { 0.0 } else { number };
                out.push(b'd');
                out.extend_from_slice(hex::encode(number.to_be_bytes()).as_bytes());
            }
            Value::Str(text) => self.string(text),
            Value::Array(items) => {
                out.push(b'a');
                out.extend_from_slice(items.len().to_string().as_bytes());
                out.push(b':');
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(map) => {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                out.push(b'o');
                out.extend_from_slice(members.len().to_string().as_bytes());
                out.push(b':');
                for (key, item) in members {
                    self.string(key);
                    self.value(item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{encoded, object};

    #[test]
    fn streamed_digests_are_the_whole_texts() {
        // Large enough to be hashed in several pieces.
        let rows: Vec<Value> = (0..20_000).map(|i| object([("id", Value::Int(i)), ("name", Value::str(format!("é{i}")))])).collect();
        let value = object([("rows", Value::Array(rows)), ("n", Value::Float(1.5))]);
        assert_eq!(encoded_digest(&value), crate::files::sha256_hex(&encoded(&value)));
        assert_eq!(publication_digest(&object([("b", Value::Int(1)), ("a", Value::Float(1.0))])), {
            let mut expected = Vec::new();
            expected.extend_from_slice(b"o2:s1:ad");
            expected.extend_from_slice(hex::encode(1.0f64.to_be_bytes()).as_bytes());
            expected.extend_from_slice(b"s1:bd");
            expected.extend_from_slice(hex::encode(1.0f64.to_be_bytes()).as_bytes());
            crate::files::sha256_hex(&expected)
        });
    }
}
