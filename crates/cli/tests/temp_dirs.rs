//! Temporary state lives under one directory per process (`$TMPDIR/gateway-proc-<pid>`):
//! removed when the command ends, and swept by the next process when its owner was
//! killed. Each case runs with its own TMPDIR.

use gateway_test_support::copy_tree;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn process_dirs(tmp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("gateway-proc-"))
        .collect();
    names.sort();
    names
}

#[test]
fn temporary_state_is_removed_at_exit_and_a_killed_processs_is_swept() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let world = dir.path().join("helpdesk");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let compiled = Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).env("TMPDIR", &tmp).output().unwrap();
    assert!(compiled.status.success());

    // An import stages a copy of the world in a scratch directory: gone at exit.
    let rows = dir.path().join("rows.jsonl");
    std::fs::write(&rows, "{\"id\": \"C90\", \"name\": \"N\", \"email\": \"c90.only@example.org\", \"tier\": \"free\", \"created_at\": \"2026-03-01T00:00:00Z\"}\n")
        .unwrap();
    let import = || {
        let imported = Command::new(BIN)
            .args(["worlds", "data", "import"])
            .arg(&world)
            .arg(&rows)
            .args(["--entity", "customers"])
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    };
    import();
    assert_eq!(process_dirs(&tmp), Vec::<String>::new(), "nothing is left after a normal exit");

    // A server killed with SIGKILL leaves its directory ...
    let (mut server, address) = gateway_test_support::spawn_announced(
        Command::new(BIN).args(["worlds", "serve"]).arg(&world).args(["--port", "0"]).env("TMPDIR", &tmp),
        "world api listening on http://",
    );
    address.unwrap_or_else(|said| panic!("server did not start: {said}"));
    let killed = format!("gateway-proc-{}", server.id());
    assert_eq!(process_dirs(&tmp), vec![killed.clone()], "the running server keeps its state in one directory");
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(process_dirs(&tmp), vec![killed], "a killed process cannot clean up");

    // ... which the next process sweeps, while a living process's directory stays.
    let living = format!("gateway-proc-{}", std::process::id());
    std::fs::create_dir_all(tmp.join(&living)).unwrap();
    import();
    assert_eq!(process_dirs(&tmp), vec![living], "the dead process's directory is swept, the living one's kept");
}
