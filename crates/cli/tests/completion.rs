//! `gateway completion SHELL` prints a script that knows the command tree, and a
//! mistyped command gets clap's suggestion.

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
