//! `connector.toml`: any text is parsed (or refused) without a panic or a hang, and
//! what is accepted goes on through what serve reads of it (`[api]`,
//! `[operations.api]`, `[ui]`) and its routes, each operation reached by its own path.
#![no_main]

use gateway_connector::spec::parse_spec;
use gateway_serve::router::Router;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(spec) = parse_spec(text) else { return };
    // No world directory: the settings that name files are refused, the rest read.
    let _ = gateway_serve::settings::load_api_settings(Path::new("/nonexistent/gateway-fuzz-world"), &spec);
    let requests: Vec<(String, String)> = spec.operations.iter().map(|o| (o.method.clone(), o.path.clone())).collect();
    let router = Router::new(spec);
    for (method, path) in requests {
        let _ = router.route(&method, &path, &[]);
    }
});
