//! The sandbox against hostile Python: each test is one attack a pushed world tried on a
//! shared hub (issue 24), run confined, and what it must find. Skipped with a NOTICE
//! where bubblewrap is missing (CI installs it).

use super::*;
use std::io::Write;
use std::process::Output;
use std::time::{Duration, Instant};

fn sandbox() -> Option<Sandbox> {
    let sandbox = Sandbox::confined(Limits { processes: 32, memory_bytes: 1 << 30, ..Limits::default() });
    match sandbox.check() {
        Ok(()) => Some(sandbox),
        // CI provides bubblewrap: there a missing one fails rather than skips (this crate is
        // below test-support, so the rule of `gateway_test_support::absent` is spelt out).
        Err(error) if std::env::var("GATEWAY_CI_PROVIDES").is_ok_and(|l| l.split(',').any(|s| s.trim() == "bwrap")) => {
            panic!("bwrap is missing, and CI provides it (GATEWAY_CI_PROVIDES): {error}")
        }
        Err(error) => {
            eprintln!("NOTICE: skipped, {error}");
            None
        }
    }
}

/// Run `source` with python confined, seeing `view`; its output.
fn run(sandbox: &Sandbox, source: &str, view: &View) -> Output {
    let python = interpreter(Path::new("python3"));
    let mut command = sandbox.command(&python.executable, &["-c".into(), source.into()], view).unwrap();
    command.stdin(Stdio::null()).output().unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "confined python failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn the_environment_is_empty_but_for_what_the_caller_names() {
    let Some(sandbox) = sandbox() else { return };
    // The test process's own environment stands in for the hub's secrets.
    let view = View::new().env("GATEWAY_WORLD_CLOCK", "1767225600");
    let seen = stdout(&run(&sandbox, "import os, json; print(json.dumps(sorted(os.environ)))", &view));
    for secret in ["CARGO_PKG_NAME", "CARGO_MANIFEST_DIR"] {
        assert!(!seen.contains(secret), "{secret} leaked into {seen}");
    }
    assert!(seen.contains("GATEWAY_WORLD_CLOCK"), "{seen}");
}

#[test]
fn the_hubs_files_are_not_there_and_bound_paths_are_read_only() {
    let Some(sandbox) = sandbox() else { return };
    let hub = tempfile::tempdir().unwrap();
    let key = hub.path().join("hub.sqlite");
    std::fs::write(&key, "the sealing key").unwrap();
    let world = tempfile::tempdir().unwrap();
    std::fs::write(world.path().join("handlers.py"), "x = 1").unwrap();
    let source = format!(
        "import os\n\
         try:\n    open({key:?}).read(); print('read')\nexcept OSError as e: print('hub', e.errno)\n\
         try:\n    open({world:?} + '/handlers.py', 'a').write('evil'); print('wrote')\nexcept OSError as e: print('world', e.errno)\n\
         print(open({world:?} + '/handlers.py').read())\n\
         try:\n    open('/usr/evil', 'w'); print('wrote usr')\nexcept OSError as e: print('usr', e.errno)\n\
         open('/tmp/scratch', 'w').write('ok'); print(open('/tmp/scratch').read())",
        key = key.display().to_string(),
        world = world.path().display().to_string(),
    );
    let seen = stdout(&run(&sandbox, &source, &View::new().read_only(world.path())));
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines[0], "hub 2", "the hub's file must not exist in the view: {seen}");
    assert!(lines[1] == "world 30" || lines[1] == "world 13", "a read-only world: {seen}");
    assert_eq!(lines[2], "x = 1", "the world is readable: {seen}");
    assert!(lines[3] == "usr 30" || lines[3] == "usr 13", "{seen}");
    assert_eq!(lines[4], "ok", "a private /tmp is writable: {seen}");
    assert_eq!(std::fs::read_to_string(world.path().join("handlers.py")).unwrap(), "x = 1");
}

#[test]
fn there_is_no_network() {
    let Some(sandbox) = sandbox() else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let source = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\nexcept OSError as e: print('refused')\n\
         try:\n    socket.create_connection(('1.1.1.1', 53), 2); print('out')\nexcept OSError as e: print('no route')"
    );
    let seen = stdout(&run(&sandbox, &source, &View::new()));
    assert_eq!(seen, "refused\nno route", "the hub's loopback and the world must be out of reach");
}

#[test]
fn a_fork_bomb_stops_at_the_process_cap_and_a_huge_allocation_fails() {
    let Some(sandbox) = sandbox() else { return };
    if !is_root() {
        eprintln!("NOTICE: the process cap needs a uid of its own, given only when run as root; fork part skipped");
    }
    let source = "import os, time\n\
         n = 0\n\
         try:\n    for _ in range(300):\n        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError as e: pass\n\
         print(n)\n\
         try:\n    b = bytearray(10 * 1024**3); print('allocated')\nexcept MemoryError: print('MemoryError')";
    let seen = stdout(&run(&sandbox, source, &View::new()));
    let lines: Vec<&str> = seen.lines().collect();
    if is_root() {
        let forks: u64 = lines[0].parse().unwrap();
        assert!(forks < 32, "forks past the cap of 32: {forks}");
    }
    assert_eq!(lines[1], "MemoryError", "10 GB must not be granted: {seen}");
}

#[test]
fn a_daemon_dies_with_its_worker() {
    let Some(sandbox) = sandbox() else { return };
    // The daemon detaches (setsid, double fork) and would live on; the worker then waits
    // to be killed, as a hub kills a worker past its deadline.
    // The daemon says so on the shared stdout once it is up: a line, not a count of
    // /proc taken while the middle process exits (that raced on a loaded machine).
    let source = "import os, sys, time\n\
         if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        print('daemon', flush=True); time.sleep(60); os._exit(0)\n    os._exit(0)\n\
         print('up', flush=True)\n\
         time.sleep(60)";
    let python = interpreter(Path::new("python3"));
    let marker = format!("gateway-daemon-{}", std::process::id());
    let mut command = sandbox.command(&python.executable, &["-c".into(), source.into(), marker.clone().into()], &View::new()).unwrap();
    let said = tempfile::NamedTempFile::new().unwrap();
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(said.reopen().unwrap()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        lines.push(line.trim().to_string());
    }
    lines.sort();
    assert_eq!(
        lines,
        ["daemon", "up"],
        "the worker and its daemon run; it said: {}",
        std::fs::read_to_string(said.path()).unwrap_or_default()
    );
    assert!(processes_with_arg(&marker) >= 2, "the worker and its daemon are seen");
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with_arg(&marker) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with_arg(&marker), 0, "a process of the killed worker outlived it");
}

/// Processes on the machine whose command line holds `marker`.
fn processes_with_arg(marker: &str) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline);
            // The outer tools (prlimit/bwrap) carry it too; count python only.
            if text.contains(marker) && text.starts_with(&*interpreter(Path::new("python3")).executable.to_string_lossy()) {
                count += 1;
            }
        }
    }
    count
}

#[test]
fn unconfined_runs_as_the_caller() {
    let view = View::new().env("GATEWAY_SANDBOX_TEST", "1");
    let python = interpreter(Path::new("python3"));
    let mut command = Sandbox::unconfined()
        .command(&python.executable, &["-c".into(), "import os; print(os.environ.get('GATEWAY_SANDBOX_TEST'))".into()], &view)
        .unwrap();
    let output = command.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "1");
}

#[test]
fn a_missing_view_path_is_named() {
    let Some(sandbox) = sandbox() else { return };
    let error = sandbox.command(Path::new("/usr/bin/true"), &[], &View::new().read_only("/nonexistent/world")).unwrap_err();
    assert_eq!(error.to_string(), "/nonexistent/world: does not exist");
    let _ = std::io::stderr().flush();
}

#[test]
fn an_owner_only_tree_is_shared_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let Some(sandbox) = sandbox() else { return };
    // What a hub running with umask 077 extracts: 0700 directories, 0600 files.
    let data = tempfile::tempdir().unwrap();
    let world = data.path().join("bundle/api");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("handlers.py"), "x = 2").unwrap();
    for (path, mode) in [
        (data.path().to_path_buf(), 0o700),
        (data.path().join("bundle"), 0o700),
        (world.clone(), 0o700),
        (world.join("handlers.py"), 0o600),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let source = format!("print(open({:?}).read())", world.join("handlers.py").display().to_string());
    let bundle = data.path().join("bundle");
    if is_root() {
        let output = run(&sandbox, &source, &View::new().read_only(&bundle));
        assert!(!output.status.success(), "an owner-only file must not be readable by the confined uid before sharing");
    }
    share_read_only(&bundle).unwrap();
    assert_eq!(std::fs::metadata(world.join("handlers.py")).unwrap().permissions().mode() & 0o777, 0o644);
    assert_eq!(std::fs::metadata(data.path()).unwrap().permissions().mode() & 0o777, 0o700, "above the tree: untouched");
    assert_eq!(stdout(&run(&sandbox, &source, &View::new().read_only(&bundle))), "x = 2");
}

#[test]
fn a_world_below_private_directories_is_readable() {
    let Some(sandbox) = sandbox() else { return };
    // A hub keeps its data directory 0700; the world tree inside it stays readable to
    // the confined uid through the view (and only through it).
    let data = tempfile::tempdir().unwrap();
    let world = data.path().join("host/versions/v1/bundle/api");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("handlers.py"), "x = 1").unwrap();
    let source = format!("print(open({:?}).read())", world.join("handlers.py").display().to_string());
    assert_eq!(stdout(&run(&sandbox, &source, &View::new().read_only(&world))), "x = 1");
}
