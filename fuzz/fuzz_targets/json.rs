//! The world crate's JSON reader (Python's `json.loads` with the original's refusals):
//! any bytes are read without a panic or a hang, the skimming reader (`skim_id`, which
//! checks a document without building it) agrees with the full one, the tolerant reader
//! (`parse_loads`) agrees with the strict one, and what is accepted reads back as the
//! same value from each text the writers make of it.
#![no_main]

use gateway_world::json::{canonical, dumps, parse, parse_loads, skim_id, DumpOptions, ParseError, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = gateway_world::files::parse_json_bytes(data, "fuzz.json");
    let Ok(text) = std::str::from_utf8(data) else { return };
    let full = parse(text);
    let skimmed = skim_id(text);
    match (&full, &skimmed) {
        (Ok(parsed), Ok((problem, id))) => {
            assert_eq!(&parsed.problem, problem, "skim_id and parse disagree on the range problem");
            let top = parsed.value.get("id").and_then(Value::as_str);
            assert_eq!(top, id.as_deref(), "skim_id and parse disagree on the id");
        }
        (Err(full), Err(skimmed)) => assert_eq!(full, skimmed, "skim_id and parse refuse differently"),
        _ => panic!("skim_id ({skimmed:?}) and parse ({full:?}) disagree"),
    }
    let loaded = parse_loads(text);
    match (&full, &loaded) {
        (Ok(parsed), Ok(loaded)) => {
            assert_eq!(canonical(&parsed.value), canonical(&loaded.value));
            assert_eq!(parsed.problem, loaded.problem);
        }
        (Err(ParseError::DuplicateKey(_)), Ok(_)) => {}
        (Err(ParseError::Syntax(_)), Err(ParseError::Syntax(_))) => {}
        _ => panic!("parse ({full:?}) and parse_loads ({loaded:?}) disagree"),
    }
    let Ok(parsed) = full else { return };
    let expected = canonical(&parsed.value);
    let options = [
        DumpOptions::CANONICAL,
        DumpOptions::CLI,
        DumpOptions::PRETTY,
        DumpOptions { sort_keys: false, ensure_ascii: false, indent: Some(1), compact: false },
    ];
    for options in options {
        let written = dumps(&parsed.value, options);
        let reread = parse(&written).unwrap_or_else(|e| panic!("{options:?} wrote text that does not read back ({e:?}): {written}"));
        assert_eq!(canonical(&reread.value), expected, "{options:?} changed the value");
    }
});
