//! The digests the original computes over contract documents.

use crate::files::sha256_hex;
use crate::json::Value;

/// The cross-runtime publication digest: SHA-256 of a tagged binary encoding in
/// which integers and floats encode alike and keys sort by UTF-8 bytes.
pub fn publication_digest(value: &Value) -> String {
    let mut out = Vec::new();
    encode(value, &mut out);
    sha256_hex(&out)
}

fn encode(value: &Value, out: &mut Vec<u8>) {
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
        Value::Str(text) => {
            out.push(b's');
            out.extend_from_slice(text.len().to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(text.as_bytes());
        }
        Value::Array(items) => {
            out.push(b'a');
            out.extend_from_slice(items.len().to_string().as_bytes());
            out.push(b':');
            for item in items {
                encode(item, out);
            }
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'o');
            out.extend_from_slice(keys.len().to_string().as_bytes());
            out.push(b':');
            for key in keys {
                encode(&Value::Str(key.clone()), out);
                encode(&map[key], out);
            }
        }
    }
}
