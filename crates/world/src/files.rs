//! Reading JSON documents the way the original does, and writing files atomically.

use crate::error::{fail, ContractError};
use crate::json::{parse, ParseError, Value};
use std::path::Path;

/// Read a JSON document, refusing what the original refuses, located at the file name.
pub fn read_json(path: &Path) -> Result<Value, ContractError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bytes = read_regular(path).map_err(|_| document_error(&name))?;
    parse_json_bytes(&bytes, &name)
}

/// The `id` of the JSON object in a file (None when absent or not a string), with
/// exactly [`read_json`]'s refusals but without building the document in memory.
pub fn read_json_id(path: &Path) -> Result<Option<String>, ContractError> {
    read_json_id_and_bytes(path).map(|(id, _)| id)
}

/// [`read_json_id`], and the file's bytes (for a caller that also hashes them).
pub fn read_json_id_and_bytes(path: &Path) -> Result<(Option<String>, Vec<u8>), ContractError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bytes = read_regular(path).map_err(|_| document_error(&name))?;
    Ok((json_id(&bytes, &name)?, bytes))
}

fn json_id(bytes: &[u8], name: &str) -> Result<Option<String>, ContractError> {
    let text = std::str::from_utf8(bytes).map_err(|_| document_error(name))?;
    match crate::json::skim_id(text) {
        Err(ParseError::Syntax(_)) => Err(document_error(name)),
        Err(ParseError::DuplicateKey(key)) => fail("duplicate_key", format!("Duplicate JSON member {key}"), name),
        Ok((Some(problem), _)) => fail(problem.code, problem.message, format!("{name}{}", problem.pointer)),
        Ok((None, id)) => Ok(id),
    }
}

/// [`write_atomic_with`] for text `generate` hands its sink a piece at a time (a
/// generated file, a batch with its mutations streamed); the first write error wins.
pub fn write_atomic_pieces(path: &Path, generate: impl FnOnce(&mut dyn FnMut(&str))) -> std::io::Result<()> {
    write_atomic_with(path, |file| {
        let mut failed = None;
        generate(&mut |piece| {
            if failed.is_none() {
                failed = file.write_all(piece.as_bytes()).err();
            }
        });
        failed.map_or(Ok(()), Err)
    })
}

/// A batch file's text, accepted with exactly [`read_json`]'s refusals but not built:
/// its mutations are parsed one at a time ([`BatchFile::spread`]).
#[derive(Debug)]
pub struct BatchFile {
    text: String,
}

impl BatchFile {
    /// The batch with its `mutations` left as text (see [`crate::json::Spread`]).
    pub fn spread(&self) -> crate::json::Spread<'_> {
        // The text was accepted whole: the same parser cannot refuse a part of it.
        crate::json::spread(&self.text, "mutations").expect("accepted JSON text")
    }
}

/// Read a batch file (`data/initial.json`, a journal) for its mutations to be read one
/// at a time: the text is held once, never the tree of a world's data.
pub fn read_batch(path: &Path) -> Result<BatchFile, ContractError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bytes = read_regular(path).map_err(|_| document_error(&name))?;
    json_id(&bytes, &name)?;
    let text = String::from_utf8(bytes).map_err(|_| document_error(&name))?;
    Ok(BatchFile { text })
}

/// A regular file's bytes: a named pipe, a device or a directory is not read (a
/// FIFO at `data/initial.json` would block the reader forever).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    std::fs::read(path)
}

/// Parse JSON bytes with the original's `parse_json` refusals, at `location`.
pub fn parse_json_bytes(bytes: &[u8], location: &str) -> Result<Value, ContractError> {
    let text = std::str::from_utf8(bytes).map_err(|_| document_error(location))?;
    match parse(text) {
        Err(ParseError::Syntax(_)) => Err(document_error(location)),
        Err(ParseError::DuplicateKey(key)) => fail("duplicate_key", format!("Duplicate JSON member {key}"), location),
        Ok(parsed) => match parsed.problem {
            Some(problem) => fail(problem.code, problem.message, format!("{location}{}", problem.pointer)),
            None => Ok(parsed.value),
        },
    }
}

fn document_error(location: &str) -> ContractError {
    ContractError::new("document", "Cannot read valid UTF-8 JSON", location)
}

pub use gateway_common::fs::{file_sha256, sha256_hex, write_atomic, write_atomic_with};

/// Whether `path` is a symbolic link (dangling ones included).
pub fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch file read as text refuses exactly what `read_json` refuses, and reads
    /// back (header and mutations) as the document `read_json` builds.
    #[test]
    fn read_batch_refuses_and_reads_as_read_json() {
        let scratch = gateway_common::temp::Scratch::new("files-test").unwrap();
        let texts = [
            r#"{"id": "b", "mutations": [{"op": "insert", "value": {"n": 1}}, {"op": "delete"}], "coverage": "partial"}"#,
            r#"{"id": "b", "mutations": [{"n": 9007199254740993}]}"#,
            r#"{"id": "b", "mutations": [{"s": "\ud800"}]}"#,
            r#"{"id": "b", "mutations": [{"a": 1, "a": 2}]}"#,
            r#"{"id": "b", "mutations": [1, 2"#,
            r#"{"id": "b", "mutations": 3}"#,
            "[]",
            "\u{feff}{}",
        ];
        for (i, text) in texts.iter().enumerate() {
            let path = scratch.path().join(format!("batch{i}.json"));
            std::fs::write(&path, text).unwrap();
            match (read_json(&path), read_batch(&path)) {
                (Ok(whole), Ok(file)) => {
                    let spread = file.spread();
                    let mut value = spread.value.clone();
                    if let (true, Value::Object(map)) = (spread.is_spread(), &mut value) {
                        map.insert("mutations".into(), Value::Array(spread.items().map(Result::unwrap).collect()));
                    }
                    assert_eq!(crate::json::canonical(&value), crate::json::canonical(&whole), "{text}");
                }
                (Err(whole), Err(batch)) => assert_eq!(format!("{whole:?}"), format!("{batch:?}"), "{text}"),
                (whole, batch) => panic!("{text}: read_json {whole:?}, read_batch {batch:?}"),
            }
        }
    }
}
