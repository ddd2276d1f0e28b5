//! `gateway worlds schema api-bundle`: the bundle root byte for byte as the
//! original writes it (recorded by `fixtures/bundle/record.sh`), our own
//! `server/`, and the original's refusals.

use gateway_connector::spec::load_spec;
use gateway_serve::bundle::{build_api_bundle_with, openapi_document, BundleError, BUNDLE_JSON};
use gateway_world::json::dumps;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundle")
}

fn copy_dir(from: &Path, to: &Path) {
    gateway_common::fs::copy_tree(from, to, gateway_common::fs::Symlinks::Follow, &|_| false).unwrap();
}

/// Every file under `root`, relative, `/`-separated.
fn files(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    if root.is_dir() {
        walk(root, root, &mut out);
    }
    out
}

/// The world of a recorded case, laid out in `dir` exactly as `record.sh` lays it out.
fn world(dir: &Path, case: &str) -> PathBuf {
    let root = dir.join(case);
    let variant = fixtures().join("variants").join(case);
    if variant.is_dir() {
        copy_dir(&fixtures().join("worlds/acme-crm"), &root);
        copy_dir(&variant, &root);
    } else {
        copy_dir(&fixtures().join("worlds").join(case), &root);
    }
    if case == "open" {
        for (path, text) in [
            ("captures/list_records.json", "{}\n"),
            ("api/__pycache__/handlers.cpython-311.pyc", "x\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
    }
    root
}

fn binary() -> PathBuf {
    std::env::current_exe().unwrap()
}

fn check_case(case: &str) {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), case);
    let out = scratch.path().join(format!("{case}.bundle"));
    let written = build_api_bundle_with(&root, &out, &binary()).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert_eq!(written, out);

    // The bundle root: every recorded file, byte for byte.
    let expected = fixtures().join("expected").join(case);
    let recorded: Vec<String> = files(&expected).into_iter().filter(|f| f != "files.txt" && f != "openapi-nosettings.json").collect();
    assert!(recorded.iter().any(|f| f == "openapi.json"), "{case}: nothing recorded; run record.sh");
    for file in &recorded {
        let want = std::fs::read(expected.join(file)).unwrap();
        let have = std::fs::read(out.join(file)).unwrap_or_else(|e| panic!("{case}: {file}: {e}"));
        assert!(
            want == have,
            "{case}: {file} differs\n--- original\n{}\n--- ours\n{}",
            String::from_utf8_lossy(&want),
            String::from_utf8_lossy(&have)
        );
    }

    // The same files everywhere but server/, and the same world under server/world
    // (snapshots included, captures/__pycache__/.git left out).
    let listed: BTreeSet<String> = std::fs::read_to_string(expected.join("files.txt")).unwrap().lines().map(str::to_string).collect();
    let ours: BTreeSet<String> = files(&out).into_iter().filter(|f| !f.starts_with("server/") || f.starts_with("server/world/")).collect();
    assert_eq!(ours, listed, "{case}: file list");

    // server/: our binary, the world, a Dockerfile and a README.
    let server = out.join("server");
    assert_eq!(std::fs::read(server.join("gateway")).unwrap(), std::fs::read(binary()).unwrap(), "{case}: server/gateway");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(server.join("gateway")).unwrap().permissions().mode();
        assert!(mode & 0o111 != 0, "{case}: server/gateway is executable");
    }
    assert_eq!(std::fs::read(server.join("world/connector.toml")).unwrap(), std::fs::read(root.join("connector.toml")).unwrap());
    let dockerfile = std::fs::read_to_string(server.join("Dockerfile")).unwrap();
    assert!(dockerfile.starts_with("FROM debian:bookworm-slim\n"), "{dockerfile}");
    assert!(dockerfile.contains("python3"), "{dockerfile}");
    assert!(dockerfile.contains("\nCOPY server /srv\n"), "{dockerfile}");
    assert!(dockerfile.contains("exec /srv/gateway worlds serve /srv/world --bind 0.0.0.0 --port"), "{dockerfile}");
    assert!(dockerfile.contains("\nEXPOSE 8080\n"), "{dockerfile}");
    assert!(std::fs::read_to_string(server.join("README.md")).unwrap().contains("gateway worlds serve"));
    let top: BTreeSet<String> = files(&server).into_iter().filter(|f| !f.starts_with("world/")).collect();
    assert_eq!(top, ["Dockerfile", "README.md", "gateway"].iter().map(|s| s.to_string()).collect(), "{case}: server/");

    // Nothing left beside the bundle but the world and the bundle itself.
    let beside: BTreeSet<String> =
        std::fs::read_dir(scratch.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(beside, [case.to_string(), format!("{case}.bundle")].into_iter().collect(), "{case}: staging cleaned up");
}

#[test]
fn acme_crm_matches_the_original() {
    check_case("acme-crm");
}

#[test]
fn torch_search_matches_the_original() {
    check_case("torch-search");
}

#[test]
fn header_auth_and_variants_match_the_original() {
    check_case("keyed");
}

#[test]
fn query_auth_matches_the_original() {
    check_case("query");
}

#[test]
fn basic_auth_and_an_authored_default_scenario_match_the_original() {
    check_case("basic");
}

#[test]
fn no_auth_ui_and_ignored_entries_match_the_original() {
    check_case("open");
}

#[test]
fn oauth2_without_scope_matches_the_original() {
    check_case("minted");
}

#[test]
fn openapi_without_settings_matches_the_original() {
    let spec = load_spec(&fixtures().join("variants/keyed")).unwrap();
    let want = std::fs::read_to_string(fixtures().join("expected/keyed/openapi-nosettings.json")).unwrap();
    assert_eq!(format!("{}\n", dumps(&openapi_document(&spec, "urn:test", None), BUNDLE_JSON)), want);
}

#[test]
fn an_empty_existing_out_is_filled_in_place() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    build_api_bundle_with(&root, &out, &binary()).unwrap();
    assert!(out.join("openapi.json").is_file() && out.join("server/gateway").is_file());
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 2);
}

#[test]
fn an_out_inside_the_world_is_not_copied_into_itself() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    let out = root.join("dist/api");
    build_api_bundle_with(&root, &out, &binary()).unwrap();
    assert!(out.join("server/world/connector.toml").is_file());
    assert!(!out.join("server/world/dist/api").exists(), "the bundle is not copied into its own world");
    assert_eq!(files(&root.join("dist")).iter().filter(|f| !f.starts_with("api/")).count(), 0, "no staging left");
}

fn refusal(error: BundleError) -> (String, String, String) {
    let contract = error.contract().unwrap_or_else(|| panic!("a contract error, not {error}"));
    (contract.code.clone(), contract.schema_path.clone(), contract.message.clone())
}

#[test]
fn refuses_a_non_empty_out() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "x").unwrap();
    let error = build_api_bundle_with(&root, &out, &binary()).unwrap_err();
    assert_eq!(error.to_string(), "ContractError: api at /api/out: Output directory must be empty or absent");
    assert_eq!(files(&out).into_iter().collect::<Vec<_>>(), vec!["keep".to_string()]);
}

#[test]
fn refuses_an_out_that_is_a_file() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    std::fs::write(scratch.path().join("afile"), "x").unwrap();
    let error = build_api_bundle_with(&root, &scratch.path().join("afile"), &binary()).unwrap_err();
    assert!(error.to_string().starts_with("NotADirectoryError: [Errno 20] Not a directory: '"), "{error}");
}

#[test]
fn refuses_a_world_without_a_connector() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    std::fs::remove_file(root.join("connector.toml")).unwrap();
    let out = scratch.path().join("out");
    let error = build_api_bundle_with(&root, &out, &binary()).unwrap_err();
    assert_eq!(error.to_string(), "ContractError: spec at /connector.toml: No connector.toml in the world; describe the connection first");
    assert!(!out.exists());
}

#[test]
fn refuses_a_handler_the_module_lacks() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    let spec = std::fs::read_to_string(root.join("connector.toml")).unwrap();
    std::fs::write(root.join("connector.toml"), spec.replace("handler = \"summarize\"", "handler = \"nope\"")).unwrap();
    let out = scratch.path().join("out");
    let error = build_api_bundle_with(&root, &out, &binary()).unwrap_err();
    assert_eq!(
        refusal(error),
        ("handlers".into(), "/api/handlers".into(), "handlers.py has no function nope for operation summarize".into())
    );
    assert!(!out.exists());

    std::fs::write(root.join("connector.toml"), spec.replace("[api]\n", "[api]\nbefore = \"gatekeeper\"\n")).unwrap();
    let error = build_api_bundle_with(&root, &out, &binary()).unwrap_err();
    assert_eq!(refusal(error), ("handlers".into(), "/api/before".into(), "handlers.py has no function gatekeeper for [api].before".into()));
}

#[test]
fn a_handlers_module_that_raises_on_import_is_reported() {
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "acme-crm");
    let mut module = std::fs::read_to_string(root.join("api/handlers.py")).unwrap();
    module.push_str("\nraise ValueError('boom')\n");
    std::fs::write(root.join("api/handlers.py"), module).unwrap();
    let error = build_api_bundle_with(&root, &scratch.path().join("out"), &binary()).unwrap_err();
    assert!(matches!(error, BundleError::Import(_)), "{error:?}");
    assert!(error.to_string().ends_with("ValueError: boom"), "{error}");
}

#[test]
fn refuses_data_out_of_range_like_the_original() {
    // The original reads data/initial.json again for seed/base.json and refuses there.
    let scratch = tempfile::tempdir().unwrap();
    let root = world(scratch.path(), "open");
    let data = std::fs::read_to_string(root.join("data/initial.json")).unwrap();
    std::fs::write(root.join("data/initial.json"), data.replace("1500000000000000.0", "1e+16")).unwrap();
    let out = scratch.path().join("out");
    let error = build_api_bundle_with(&root, &out, &binary()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "ContractError: numeric_range at initial.json/mutations/0/value/attributes/big: Numbers must be finite and within ±(2^53-1)"
    );
    assert!(!out.exists());
}
