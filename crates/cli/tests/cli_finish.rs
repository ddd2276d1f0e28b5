//! The CLI's finish: `gateway completion SHELL` prints a script that knows the command
//! tree, a mistyped command gets a suggestion, secret prompts never echo their input.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

#[test]
fn completion_scripts_name_the_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN).args(["completion", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["worlds", "session", "environment", "hub"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = Command::new(BIN).args(["completion", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn a_mistyped_command_is_answered_with_a_suggestion() {
    let out = Command::new(BIN).arg("wrolds").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a similar subcommand exists: 'worlds'"));
}

/// `auth login` prompts for what is missing; the api key is read without echo on a
/// terminal and from the pipe otherwise, and is never printed back.
#[test]
fn auth_login_reads_its_secret_from_a_pipe_and_never_prints_it() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["auth", "login"])
        .env("HOME", home.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"http://127.0.0.1:9/\npk-lf-visible\nsk-lf-very-secret\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(printed.contains("Api key: ") && !printed.contains("sk-lf-very-secret"), "{printed}");
    let saved = std::fs::read_to_string(home.path().join(".gateway/config.json")).unwrap();
    assert!(saved.contains("sk-lf-very-secret") && saved.contains("\"host\": \"http://127.0.0.1:9\""), "{saved}");
}
