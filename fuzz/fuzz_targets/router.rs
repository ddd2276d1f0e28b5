//! serve's routing: a path template (the input's first line) compiled as the
//! original's `^…(?P<name>[^/]+)…$` regex and matched against a request path (the
//! second line) with the query (the rest) parsed as Python's `parse_qs`. Nothing
//! panics or hangs, a match names the template's placeholders in order with non-empty
//! values, and the parsed query has no blank values and no repeated names.
#![no_main]

use gateway_connector::authoring::toml_string;
use gateway_connector::spec::{parse_spec, placeholders};
use gateway_serve::router::{parse_query, unquote, Router};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.splitn(3, '\n');
    let (template, path, query) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    let pairs = parse_query(query);
    for (i, (name, value)) in pairs.iter().enumerate() {
        assert!(!value.is_empty(), "a blank value was kept");
        assert!(pairs[..i].iter().all(|(other, _)| other != name), "{name} repeated");
    }
    let _ = unquote(path);
    let spec = format!(
        "[connector]\nslug = \"fuzz\"\nbase_url = \"https://example.com\"\n\n[[operations]]\nname = \"op\"\npath = {}\n",
        toml_string(template)
    );
    let Ok(spec) = parse_spec(&spec) else { return };
    let router = Router::new(spec);
    if let Some((_, arguments)) = router.route("GET", path, &pairs) {
        let names: Vec<String> = arguments.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(names, placeholders(template), "the match names other arguments than the template");
        assert!(arguments.iter().all(|(_, value)| !value.is_empty()), "an empty argument matched");
    }
});
