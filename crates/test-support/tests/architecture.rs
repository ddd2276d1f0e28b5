//! The file-level architecture check (`scripts/check_files.py`, run by
//! `scripts/check_architecture.sh` in CI) fails on what it exists to catch: a planted
//! circle between two files, a planted 900-line file and a file the code map does not
//! name, and passes the repository as it stands with its allow list.

use gateway_test_support::repo_root;
use std::path::Path;
use std::process::Command;

/// Runs the check on `root` with the allow list `allow`: (passed, what it printed).
fn check(root: &Path, allow: &Path) -> (bool, String) {
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/check_files.py"))
        .arg("--root")
        .arg(root)
        .arg("--allow")
        .arg(allow)
        .output()
        .expect("python3 runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// A one-crate workspace: `lib.rs` declaring `a` and `b`, with the given bodies.
fn plant(root: &Path, a: &str, b: &str) {
    let src = root.join("crates/demo/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "//! demo\npub mod a;\npub mod b;\npub struct Root;\n").unwrap();
    std::fs::write(src.join("a.rs"), a).unwrap();
    std::fs::write(src.join("b.rs"), b).unwrap();
}

#[test]
fn a_planted_circle_between_two_files_fails() {
    let dir = tempfile::tempdir().unwrap();
    let allow = dir.path().join("allow.txt");
    std::fs::write(&allow, "").unwrap();
    // One way is fine: a names b, b names only the crate root.
    plant(dir.path(), "//! a\nuse crate::b::B;\npub struct A(B);\n", "//! b\nuse crate::Root;\npub struct B(Root);\n");
    let (passed, said) = check(dir.path(), &allow);
    assert!(passed, "{said}");
    // Both ways: b names a back, through `super::` inside a `use` group.
    plant(
        dir.path(),
        "//! a\nuse crate::b::B;\npub struct A(B);\n",
        "//! b\nuse super::{a::A, Root};\npub fn b(_: A, _: Root) {}\npub struct B;\n",
    );
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed, "{said}");
    assert!(said.contains("crates/demo/src/a.rs ↔ crates/demo/src/b.rs"), "{said}");
    // An allowed circle (with its reason) passes; one without a reason is refused.
    std::fs::write(&allow, "cycle crates/demo/src/a.rs crates/demo/src/b.rs planted for the test\n").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(passed, "{said}");
    std::fs::write(&allow, "cycle crates/demo/src/a.rs crates/demo/src/b.rs\n").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed && said.contains("its reason"), "{said}");
    // The test module of a file names it through `super::`: that is the same file.
    plant(dir.path(), "//! a\npub struct A;\n#[cfg(test)]\nmod tests {\n    use super::A;\n}\n", "//! b\npub struct B;\n");
    std::fs::write(&allow, "").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(passed, "{said}");
}

#[test]
fn a_circle_behind_a_string_that_looks_like_a_comment_is_still_seen() {
    // A `//` inside a string (a URL) or a quote in a char literal once made the check
    // drop the rest of a line or read the rest of a file as one string, and so miss the
    // names after it.
    let dir = tempfile::tempdir().unwrap();
    let allow = dir.path().join("allow.txt");
    std::fs::write(&allow, "").unwrap();
    plant(
        dir.path(),
        "//! a\nconst U: &str = \"http://x\"; use crate::b::B;\npub struct A(B);\n",
        "//! b\nconst Q: char = '\"';\nconst R: &str = r#\"a \"q\" // x\"#;\nuse super::a::A;\npub fn b(_: A) {}\npub struct B;\n",
    );
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed, "{said}");
    assert!(said.contains("crates/demo/src/a.rs ↔ crates/demo/src/b.rs"), "{said}");
    // A name only inside a string or a comment is not a name.
    plant(dir.path(), "//! a\nconst U: &str = \"use crate::b::B;\"; /* use crate::b */\n", "//! b\nuse super::a::U;\n");
    let (passed, said) = check(dir.path(), &allow);
    assert!(passed, "{said}");
}

#[test]
fn a_planted_900_line_file_fails() {
    let dir = tempfile::tempdir().unwrap();
    let allow = dir.path().join("allow.txt");
    std::fs::write(&allow, "").unwrap();
    let long = format!("//! a\n{}", "pub fn f() {}\n".repeat(899));
    plant(dir.path(), &long, "//! b\n");
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed, "{said}");
    assert!(said.contains("crates/demo/src/a.rs has 900 lines (at most 800)"), "{said}");
    // Allowed at its size, it passes; grown past what is allowed, it fails again.
    std::fs::write(&allow, "size crates/demo/src/a.rs 900 planted for the test\n").unwrap();
    assert!(check(dir.path(), &allow).0);
    std::fs::write(&allow, "size crates/demo/src/a.rs 850 planted for the test\n").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed && said.contains("grew to 900 lines"), "{said}");
}

#[test]
fn a_file_missing_from_the_code_map_fails() {
    let dir = tempfile::tempdir().unwrap();
    let allow = dir.path().join("allow.txt");
    std::fs::write(&allow, "").unwrap();
    plant(dir.path(), "//! a\n", "//! b\n");
    let map = dir.path().join("ARCHITECTURE.md");
    std::fs::write(&map, "```\ncrates/demo       a demo\n  src/a.rs          the a of it.\n```\n").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(!passed, "{said}");
    assert!(said.contains("crates/demo/src/b.rs is not in ARCHITECTURE.md's code map"), "{said}");
    assert!(!said.contains("src/a.rs is not"), "{said}");
    std::fs::write(&map, "```\ncrates/demo       a demo\n  src/a.rs          the a of it; b.rs the b.\n```\n").unwrap();
    let (passed, said) = check(dir.path(), &allow);
    assert!(passed, "{said}");
}

#[test]
fn the_repository_passes_with_its_allow_list() {
    let root = repo_root();
    let (passed, said) = check(&root, &root.join("scripts/architecture-allow.txt"));
    assert!(passed, "{said}");
}
