//! Unit tests of the JSON model, parser and writers.

use super::*;

#[test]
fn float_repr_matches_python() {
    let cases = [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (123456789.123, "123456789.123"),
        (1500000000000000.0, "1500000000000000.0"),
        (1e-05, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (1e16, "1e+16"),
        (1.5e16, "1.5e+16"),
        (0.0001, "0.0001"),
        (37.0, "37.0"),
        (2.5, "2.5"),
        (1e22, "1e+22"),
    ];
    for (value, want) in cases {
        assert_eq!(python_float_repr(value), want, "{value}");
    }
}

#[test]
fn canonical_sorts_and_escapes() {
    let parsed = parse(r#"{"b": [1, 1.0, "é\u2028/"], "a": {"z": null, "y": true}, "c": "\u0001\u007f"}"#).unwrap();
    assert_eq!(canonical(&parsed.value), "{\"a\":{\"y\":true,\"z\":null},\"b\":[1,1.0,\"é\u{2028}/\"],\"c\":\"\\u0001\u{7f}\"}");
    assert_eq!(
        dumps(&parsed.value, DumpOptions::CLI),
        "{\"a\": {\"y\": true, \"z\": null}, \"b\": [1, 1.0, \"\\u00e9\\u2028/\"], \"c\": \"\\u0001\\u007f\"}"
    );
}

#[test]
fn pretty_matches_python_indent() {
    let parsed = parse(r#"{"a": [1, {"b": []}], "c": {}}"#).unwrap();
    assert_eq!(dumps(&parsed.value, DumpOptions::PRETTY), "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}");
}

#[test]
fn duplicate_keys_report_innermost_closing_first() {
    assert_eq!(parse(r#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 2}"#).unwrap_err(), ParseError::DuplicateKey("c".into()));
}

#[test]
fn range_problems_are_found_in_document_order() {
    let parsed = parse(r#"{"a": [1, 9007199254740992], "b": NaN}"#).unwrap();
    assert_eq!(parsed.problem.unwrap().pointer, "/a/1");
    let parsed = parse(r#"{"x/y": "\ud800", "z": 1e400}"#).unwrap();
    let problem = parsed.problem.unwrap();
    assert_eq!((problem.code, problem.pointer.as_str()), ("json", "/x~1y"));
    assert!(parse("9007199254740991").unwrap().problem.is_none());
    assert!(parse("-9007199254740992").unwrap().problem.is_some());
}

#[test]
fn syntax_errors_are_refused() {
    for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "\"\t\"", "1 2", "\u{feff}{}"] {
        assert!(matches!(parse(bad), Err(ParseError::Syntax(_))), "{bad:?}");
    }
}

#[test]
fn skimming_gives_the_same_verdicts_and_the_id() {
    for text in [
        r#"{"id": "b1", "mutations": [{"a": 1}]}"#,
        r#"{"a": {"b": 1, "b": 2}}"#,
        r#"{"x": [1, NaN]}"#,
        "{",
        r#"[{"id": "no"}]"#,
        r#"{"a": "x", "m": [{"id": "inner"}], "id": "b\u00e9"}"#,
        r#"{"id": ["a"], "b": "c"}"#,
        r#"{"id": {"id": "deep"}}"#,
        r#"{"s": "x\ud800y", "id": "k"}"#,
        r#"{"s": "unterminated}"#,
    ] {
        let skimmed = skim_id(text);
        match parse(text) {
            Ok(parsed) => {
                let (problem, id) = skimmed.unwrap();
                assert_eq!(problem, parsed.problem, "{text}");
                assert_eq!(id, parsed.value.get("id").and_then(Value::as_str).map(str::to_string));
            }
            Err(error) => assert_eq!(skimmed.unwrap_err(), error, "{text}"),
        }
    }
}

#[test]
fn surrogate_pairs_decode() {
    assert_eq!(parse(r#""\ud83d\ude00""#).unwrap().value.as_str(), Some("😀"));
    let mut out = String::new();
    write_string(&mut out, "😀", true);
    assert_eq!(out, r#""\ud83d\ude00""#);
}

#[test]
fn python_repr_of_values() {
    let parsed = parse(r#"[true, null, 1.0, "it's", {"a": "b"}]"#).unwrap();
    assert_eq!(python_repr(&parsed.value), r#"[True, None, 1.0, "it's", {'a': 'b'}]"#);
}

#[test]
fn nesting_is_refused_past_the_limit_without_overflowing() {
    // Containers that hold something count (an empty one opens no deeper level).
    let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let objects = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    // At the limit: parsed, written back and dropped on a small stack.
    for text in [nested(MAX_DEPTH), objects(MAX_DEPTH)] {
        let handle = std::thread::Builder::new().stack_size(1024 * 1024).spawn(move || {
            let value = parse(&text).unwrap().value;
            assert_eq!(canonical(&value).len(), text.len());
        });
        handle.unwrap().join().unwrap();
    }
    for text in [nested(MAX_DEPTH + 1), objects(MAX_DEPTH + 1), nested(100_000), objects(100_000)] {
        assert!(matches!(parse(&text), Err(ParseError::Syntax(m)) if m.starts_with("Nesting too deep")));
        assert!(skim_id(&text).is_err());
        assert!(parse_loads(&text).is_err());
    }
}

#[test]
fn a_spread_document_reads_back_as_the_parsed_one() {
    let documents = [
        r#"{"id": "b", "mutations": [{"op": "insert", "value": {"n": 1.5, "s": "é\u00e9"}}, [], {}, 2], "target": {"x": [1, 2]}}"#,
        r#" { "mutations" : [ ] , "id" : "empty" } "#,
        r#"{"mutations": "not an array", "id": 1}"#,
        r#"{"id": "none"}"#,
        r#"{}"#,
        r#"[1, 2]"#,
    ];
    for text in documents {
        let whole = parse(text).unwrap().value;
        let spread = spread(text, "mutations").unwrap();
        let items: Vec<Value> = spread.items().map(Result::unwrap).collect();
        // Written with the items in place, the spread document is the parsed one, in
        // every form the writer has.
        for options in [DumpOptions::CANONICAL, DumpOptions::CLI, DumpOptions::PRETTY] {
            let expected = dumps(&whole, options);
            let written = match spread.value.as_object().filter(|_| spread.is_spread()) {
                Some(head) => {
                    let mut out = String::new();
                    dumps_with_items(head, "mutations", items.iter(), options, &mut |piece| out.push_str(piece));
                    out
                }
                None => dumps(&spread.value, options),
            };
            assert_eq!(written, expected, "{text}");
        }
    }
}
