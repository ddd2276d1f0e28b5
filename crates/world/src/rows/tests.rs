//! Unit tests of reading rows files: the three shapes, the refusals' places, the
//! threaded reading against one thread.

use super::*;
use crate::error::{Error, Result};
use crate::json::parse_loads;

fn read(text: &str, entity: Option<&str>) -> Result<(Vec<(String, String)>, Seen)> {
    let dir = std::env::temp_dir().join(format!("gw-rows-{}-{}", std::process::id(), crate::store::new_batch_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rows.json");
    std::fs::write(&path, text).unwrap();
    let mut out = Vec::new();
    let mut seen = Seen::default();
    let result = read_rows(&[path.to_string_lossy().into_owned()], entity, &mut seen, None, &mut |row| {
        out.push((row.entity, crate::json::canonical(&row.value)));
        Ok(Flow::More)
    });
    std::fs::remove_dir_all(&dir).unwrap();
    result.map(|_| (out, seen))
}

/// What reading `bytes` yields, through `read_rows` or the threaded reader.
fn outcome(bytes: &[u8], threads: Option<usize>) -> (usize, String, Vec<(String, usize)>, Option<String>) {
    let dir = std::env::temp_dir().join(format!("gw-rows-{}-{}", std::process::id(), crate::store::new_batch_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rows.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let sources = [path.to_string_lossy().into_owned()];
    let mut out = Vec::new();
    let mut seen = Seen::default();
    let result = match threads {
        None => read_rows(&sources, None, &mut seen, None, &mut |row| {
            out.push(crate::json::canonical(&row.value));
            Ok(if out.len() == 9_000 { Flow::Stop } else { Flow::More })
        }),
        Some(threads) => {
            let prepare = |row: Row| crate::json::canonical(&row.value);
            // Every other row read from its text alone: the two ways interleave.
            let prepare_text = |_: &str, json: &str| {
                let row = parse_loads(json).ok().filter(|p| p.problem.is_none() && json.len().is_multiple_of(2))?;
                Some(crate::json::canonical(&row.value))
            };
            read_rows_prepared(&sources, None, &mut seen, None, threads, Some(&prepare_text), &prepare, &mut |text| {
                out.push(text);
                Ok(if out.len() == 9_000 { Flow::Stop } else { Flow::More })
            })
        }
    };
    std::fs::remove_dir_all(&dir).unwrap();
    let error = result.err().map(|e| message(e).replace(&sources[0], "rows.jsonl"));
    (out.len(), crate::files::sha256_hex(out.join("\n").as_bytes()), seen.into_iter().collect(), error)
}

#[test]
fn threaded_reading_matches_one_thread() {
    let line = |i: usize| format!("{{\"entity\": \"e{}\", \"row\": {{\"id\": {i}}}}}\n", i % 3);
    let rows: String = (0..5_000).map(line).collect();
    let cases: Vec<Vec<u8>> = vec![
        rows.clone().into_bytes(),
        format!("{rows}\n  \n{}", line(7)).into_bytes(),
        format!("{rows}{{\"entity\": 1}}\n{rows}").into_bytes(),
        [rows.as_bytes(), b"{\"entity\": \"e\", \"row\": {\"x\": \"\xff\"}}\n", rows.as_bytes()].concat(),
        format!("{rows}{rows}").into_bytes(),
    ];
    for (i, bytes) in cases.iter().enumerate() {
        let one = outcome(bytes, None);
        for threads in [1, 2, 3] {
            assert_eq!(outcome(bytes, Some(threads)), one, "case {i}, {threads} threads");
        }
    }
}

fn message(error: Error) -> String {
    match error {
        Error::Contract(c) => c.message,
        other => other.to_string(),
    }
}

#[test]
fn three_shapes() {
    let (rows, seen) = read("{\"a\": [{\"id\": 1}, {\"id\": 2.0}], \"b\": []}", None).unwrap();
    assert_eq!(rows, [("a".into(), "{\"id\":1}".into()), ("a".into(), "{\"id\":2.0}".into())]);
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [("a".to_string(), 2), ("b".to_string(), 0)]);
    let (rows, _) = read("{\"entity\": \"a\", \"row\": {\"id\": 1}}\n\n{\"row\": {\"id\": 2}, \"entity\": \"b\"}", None).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].0, "b");
    let (rows, _) = read("\u{feff} [{\"id\": 1},{\"id\": 2},]", Some("a")).unwrap();
    assert_eq!(rows.len(), 2);
    let (rows, _) = read("{\"id\": 1}\n{\"id\": 2}\n", Some("a")).unwrap();
    assert_eq!(rows.len(), 2);
    let (rows, _) = read("{\"a\": [{\"id\": 1}]}", Some("a")).unwrap();
    assert_eq!(rows.len(), 1);
}

#[test]
fn refusals_name_the_place() {
    assert!(message(read("[{}]", None).unwrap_err()).ends_with("is a bare array; say which entity it holds with --entity"));
    assert!(message(read(" {\n} ", None).unwrap_err()).contains("holds no rows: the document names no entity"));
    assert!(message(read(" \n\n\t", None).unwrap_err()).contains("holds no rows: it holds only whitespace"));
    assert!(read("", None).is_ok(), "an empty input is zero rows, as the original reads it");
    assert!(read("{\"a\": []}", None).is_ok(), "an explicit empty entity is a choice (replace mode empties it)");
    assert!(message(read("{\"a\": [{}", None).unwrap_err()).ends_with(":a: expected ',' or ']' after row 0"));
    assert!(message(read("{\"a\": [1]}", None).unwrap_err()).ends_with(":a[0]: a row must be a JSON object"));
    assert!(message(read("{\"a\": 1}", None).unwrap_err()).contains("a must map to an array of rows"));
    assert!(message(read("{\"entity\": \"a\", \"row\": {}}\nnope\n", None).unwrap_err()).ends_with(":2 is not JSON"));
    assert!(message(read("{\"entity\": \"a\", \"row\": {}}\n[1]\n", None).unwrap_err()).contains(":2: expected {\"entity\""));
    assert!(message(read("{\"a\": [{\"x\": tru}]}", None).unwrap_err()).ends_with(":a[0]: not valid JSON"));
    assert!(message(read("5", None).unwrap_err()).ends_with("is neither a JSON object of entity -> rows nor an array of rows"));
    assert!(message(read("{\n\"b\": []}", Some("a")).unwrap_err()).ends_with("maps entities; drop --entity or make the file a bare array"));
}

#[test]
fn duplicates_keep_the_last_value() {
    let (rows, _) = read("{\"a\": [{\"id\": 1, \"x\": 1, \"id\": 2}]}", None).unwrap();
    assert_eq!(rows[0].1, "{\"id\":2,\"x\":1}");
}

#[test]
fn values_across_block_edges() {
    let mut text = String::from("{\"a\": [");
    for i in 0..40_000 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"id\": {i}, \"name\": \"é{i}\"}}"));
    }
    text.push_str("]}");
    let (rows, _) = read(&text, None).unwrap();
    assert_eq!(rows.len(), 40_000);
    assert_eq!(rows[39_999].1, "{\"id\":39999,\"name\":\"é39999\"}");
}

#[test]
fn python_bytes_repr() {
    assert_eq!(bytes_repr(b"th"), "b'th'");
    assert_eq!(bytes_repr(b"\x00'"), "b\"\\x00'\"");
}
