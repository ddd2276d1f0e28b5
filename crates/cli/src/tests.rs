//! Snapshots of what the command line says before any command runs: every command's
//! `--help` (its purpose, flags, examples and exit statuses) and a few usage errors.
//! The files are under src/snapshots/; a change shows as a failing test (review it
//! with `cargo insta review`, or rerun with INSTA_UPDATE=always and read the diff).

use super::*;

/// What `gateway ARGS…` says before running anything, and its exit status.
fn said(args: &[&str]) -> (String, u8) {
    let argv: Vec<OsString> = std::iter::once("gateway").chain(args.iter().copied()).map(OsString::from).collect();
    match read(&argv) {
        Ok(_) => panic!("{args:?} parsed as a command"),
        Err(said) => {
            let text = match &said {
                Said::Clap(error) => error.render().to_string(),
                Said::Original(message, _) => format!("{message}\n"),
            };
            (text, said.status().code())
        }
    }
}

fn snapshot_name(path: &str) -> String {
    if path.is_empty() {
        "help".into()
    } else {
        format!("help__{}", path.replace(' ', "__"))
    }
}

/// Every command and command group, `--help`.
#[test]
fn help_of_every_command() {
    let mut paths = vec![String::new()];
    fn walk(command: &clap::Command, parent: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            let path = if parent.is_empty() { sub.get_name().to_string() } else { format!("{parent} {}", sub.get_name()) };
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    walk(&Cli::command(), "", &mut paths);
    assert!(paths.len() > 90, "{} commands", paths.len());
    for path in paths {
        let mut args: Vec<&str> = path.split_whitespace().collect();
        args.push("--help");
        let (text, status) = said(&args);
        assert_eq!(status, 0, "{path}");
        insta::assert_snapshot!(snapshot_name(&path), text);
    }
}

/// An unknown flag: clap's words, with a suggestion, exit 2.
#[test]
fn unknown_flag() {
    let (text, status) = said(&["worlds", "schema", "compile", "./acme", "--chek"]);
    assert_eq!(status, 2);
    insta::assert_snapshot!(text);
}

/// A bad value of a closed set the original left to the parser: the choices named, exit 2.
#[test]
fn bad_enum_value() {
    let (text, status) = said(&["bench", "install", "acme", "--tool", "npm"]);
    assert_eq!(status, 2);
    insta::assert_snapshot!(text);
}

/// A bad value the original refused by hand: its words and its exit status.
#[test]
fn bad_value_in_the_original_words() {
    let (text, status) = said(&["worlds", "data", "import", "acme", "rows.jsonl", "--mode", "merge"]);
    assert_eq!(status, 1);
    insta::assert_snapshot!(text);
    let (text, status) = said(&["bench", "eval", "acme", "-m", "m", "--kind", "docker"]);
    assert_eq!((text.as_str(), status), ("unknown --kind 'docker' (auto|verifiers|verifiers-v1|harbor)\n", 1));
    let (text, status) = said(&["bench", "secrets", "rotate", "--env", "acme"]);
    assert_eq!((text.as_str(), status), ("Error: Invalid value: action must be one of: set | list | unset\n", 2));
}

/// A missing argument: the usage line, exit 2.
#[test]
fn missing_argument() {
    let (text, status) = said(&["worlds", "data", "check", "./acme"]);
    assert_eq!(status, 2);
    insta::assert_snapshot!(text);
}
