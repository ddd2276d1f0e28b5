//! The packaged skills (`gateway worlds skill …`, `gateway worlds connector skill`) say
//! only what this build does and cover what the original's skills cover:
//! - every `gateway …` command line they quote names a real command, and every flag on
//!   it is one that command takes (checked against the binary's own `--help`);
//! - every section topic of the original's skill texts has a section here (the table
//!   below maps the original's headings to ours; with the reference install present, the
//!   table is checked to name every heading the original has).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

/// Our skill files (relative to crates/connector/skills) with, for each heading of the
/// original's file of the same name (levels `##`, and `###` where listed), a word of
/// ours that a heading of ours must contain.
const COVERAGE: &[(&str, &[&str], &[(&str, &str)])] = &[
    (
        "connector-schema-authoring/SKILL.md",
        &["##", "###"],
        &[
            ("Purpose", "purpose"),
            ("The rules that never bend", "rules that never bend"),
            ("Tooling status (2026-09-07)", "tooling status"),
            ("The checklist", "the checklist"),
            ("0. Decide the shape", "decide the shape"),
            ("1. Build the model", "build the model"),
            ("2. Tenant overlay (required for tenant-shaped, optional for mixed, absent for base)", "tenant overlay"),
            ("3. Playground and evidence", "playground and evidence"),
            ("4. Fidelity report", "fidelity report"),
            ("5. Tools (only if the world ships tools)", "tools"),
            ("6. Surface binding (only if the world declares it mirrors an MCP surface)", "surface binding"),
            ("7. Ship the template; register platform integration only when in scope", "ship"),
            ("8. Definition of done", "definition of done"),
            ("Runtime authoring boundary", "runtime authoring boundary"),
            ("Implementing many connectors in parallel", "many connectors in parallel"),
            ("Common mistakes", "common mistakes"),
            ("Where this skill is discoverable", "discoverable"),
            ("Related", "related"),
            ("Source verification", "source verification"),
            ("Custom connections (any vendor with an API key)", "custom connections"),
            ("From the platform agent (no checkout)", "without a checkout"),
            ("Serving the vendor's API from the world", "serving the vendor's api"),
        ],
    ),
    (
        "connector-schema-authoring/CONNECTORS.md",
        &["##"],
        &[
            ("Contents", "contents"),
            ("Shape, model sources, and surfaces", "shape, model sources and surfaces"),
            ("Sandboxes and what they can seed", "sandboxes and what they can seed"),
            ("Type-mapping notes", "type-mapping notes"),
            ("Status of templates in the SDK", "status of the built-in templates"),
            ("Source verification", "source verification"),
            ("Source dossiers and sim strategy", "source dossiers"),
            ("How to use a dossier", "how to use a dossier"),
        ],
    ),
    (
        "connector-schema-authoring/CONVENTIONS.md",
        &["##"],
        &[
            ("Contents", "contents"),
            ("Identity", "identity"),
            ("Entities", "entities"),
            ("Fields and types", "fields and types"),
            ("Tools", "tools"),
            ("Data, verifiers, and provenance", "data, verifiers and provenance"),
            ("Layout", "layout"),
            ("Patterns borrowed from prior art (Arga Labs twins)", "patterns"),
        ],
    ),
    (
        "world-data-ingestion/SKILL.md",
        &["##", "###"],
        &[
            ("Purpose", "purpose"),
            ("When to use", "when to use"),
            ("The rows file", "the rows file"),
            ("Decision table by world kind", "decision table by world kind"),
            ("Commands, in order", "commands, in order"),
            ("1. See what the world holds", "see what the world holds"),
            ("2. Import", "import"),
            ("2b. Extract rows from what you already have", "extract rows from what you already have"),
            ("3. Verify on a live session", "verify on a live session"),
            ("4. Export a real run as rows", "export a real run as rows"),
            ("Failure modes", "failure modes"),
            ("Data snapshots (why a served world starts in under a second)", "data snapshots"),
            ("Definition of done", "definition of done"),
            ("Related", "related"),
        ],
    ),
    (
        "world-data-ingestion/ROWS.md",
        &["##"],
        &[
            ("Contents", "contents"),
            ("Shapes", "shapes"),
            ("Modes", "modes"),
            ("Keys and upserts", "keys and upserts"),
            ("Schema worlds", "schema worlds"),
            ("Mock-tools worlds", "mock-tools worlds"),
            ("Live seeding", "live seeding"),
            ("From a call log to rows", "from a call log to rows"),
            ("MCP payloads", "tool payloads (mcp)"),
            ("Chunks, batches and refusal records", "chunks, batches and refusal records"),
            ("Extract adapters", "extract adapters"),
        ],
    ),
    (
        "worlds-getting-started/SKILL.md",
        &["##", "###"],
        &[
            ("Purpose", "purpose"),
            ("0. Authenticate", "authenticate"),
            ("1. Pick a path", "pick a path"),
            ("2. Author the contract", "author the contract"),
            ("3. Check", "check"),
            ("4. Data", "data"),
            ("5. Publish", "publish"),
            ("One call, no local tree: `worlds create`", "publish"),
            ("6. Open a session", "open a session"),
            ("Test the world (not the agent)", "test the world"),
            ("7. Run and grade", "run and grade"),
            ("8. Iterate", "iterate"),
            ("9. Where it shows in the UI", "where it shows in the ui"),
            ("CLI to MCP map", "cli to mcp map"),
            ("Gotchas", "gotchas"),
            ("Related", "related"),
        ],
    ),
    (
        "agents/connector-template-author.md",
        &["##", "###"],
        &[
            ("Role Contract", "role contract"),
            ("Work Protocol", "work protocol"),
            ("Phase 1: Read, then confirm scope", "read, then confirm scope"),
            ("Phase 2: Model", "phase 2: model"),
            ("Phase 2c: Connection and served API (`connector.toml`)", "connection and served api"),
            ("Phase 3: Tools (only if the brief lists them)", "tools"),
            ("Phase 4: Data and verify loop", "data and verify loop"),
            ("Phase 5: Reference rows and provenance", "reference rows and provenance"),
            ("Phase 6: Self-check", "self-check"),
            ("Output", "output"),
            ("Red Lines", "red lines"),
        ],
    ),
];

fn skills_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../connector/skills")
}

/// The `##`/`###` headings of a markdown text (outside code fences), without the hashes.
fn headings(text: &str, levels: &[&str]) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some((hashes, title)) = line.split_once(' ') {
            if levels.contains(&hashes) {
                out.push(title.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn every_original_section_topic_has_a_section() {
    for (file, levels, table) in COVERAGE {
        let text = std::fs::read_to_string(skills_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let ours: Vec<String> = headings(&text, levels).into_iter().map(|h| h.to_lowercase()).collect();
        for (original, word) in *table {
            assert!(
                ours.iter().any(|h| h.contains(word)),
                "{file}: no section covers the original's \"{original}\" (a heading with \"{word}\"); ours: {ours:?}"
            );
        }
    }
}

/// With the original installed, the table above names every heading its skills have.
#[test]
fn the_coverage_table_names_every_heading_of_the_original() {
    let Some((gateway, _)) = gateway_test_support::reference() else { return };
    let lib = gateway.parent().and_then(Path::parent).map(|home| home.join("lib")).unwrap();
    let skills = std::fs::read_dir(&lib)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/gatewaysdk/environment/schema/skills"))
        .find(|p| p.is_dir())
        .expect("the original's packaged skills");
    for (file, levels, table) in COVERAGE {
        let text = std::fs::read_to_string(skills.join(file)).unwrap_or_else(|e| panic!("the original's {file}: {e}"));
        let named: BTreeSet<&str> = table.iter().map(|(original, _)| *original).collect();
        for heading in headings(&text, levels) {
            // The original's per-vendor dossiers are `###` under one `##`; only `##` is read there.
            assert!(named.contains(heading.as_str()), "{file}: the original's heading \"{heading}\" is not in the coverage table");
        }
    }
}

/// The skill texts are the size of what they cover, not a summary of it.
#[test]
fn the_skills_are_complete_texts() {
    for (file, floor) in [
        ("connector-schema-authoring/SKILL.md", 18_000),
        ("world-data-ingestion/SKILL.md", 12_000),
        ("worlds-getting-started/SKILL.md", 12_000),
        ("world-data-ingestion/ROWS.md", 7_000),
        ("connector-schema-authoring/CONNECTORS.md", 10_000),
    ] {
        let size = std::fs::metadata(skills_dir().join(file)).unwrap().len();
        assert!(size >= floor, "{file} is {size} bytes");
    }
}

/// Shell words of a command line: quotes group, backslash-newline joins.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        out.push(word);
    }
    out
}

/// A command line a skill quotes, and whether it stands alone (a code line) or sits in
/// prose (an inline span, which may name a command group rather than a whole command).
struct Quoted {
    line: String,
    code: bool,
}

/// Every `gateway …` command line a skill quotes: lines of code blocks (fenced or
/// indented) and inline code spans (which may wrap across lines) that start with
/// `gateway `. A trailing `# comment` and anything after a pipe or redirection are cut
/// off; spans that list alternatives (`a|b`) or elide (`…`) are prose and skipped.
fn quoted_commands(text: &str) -> Vec<Quoted> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut prose = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let indented = line.starts_with("    ") && !trimmed.starts_with('-') && !trimmed.starts_with('|');
        if (fenced || indented) && trimmed.starts_with("gateway ") {
            out.push(Quoted { line: trimmed.to_string(), code: true });
            continue;
        }
        if !fenced {
            prose.push_str(trimmed.trim_start_matches('>').trim_start());
            prose.push(' ');
        }
    }
    for (i, span) in prose.split('`').enumerate() {
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        if i % 2 == 1 && span.starts_with("gateway ") && !span.contains('…') && !span.contains('|') {
            out.push(Quoted { line: span, code: false });
        }
    }
    for quoted in &mut out {
        let mut command = quoted.line.replace(['[', ']'], "");
        if let Some(at) = command.find(" #") {
            command.truncate(at);
        }
        let cut = [" | ", " > ", " && ", " 2>"].iter().filter_map(|s| command.find(s)).min().unwrap_or(command.len());
        quoted.line = command[..cut].trim_end_matches('\\').trim().to_string();
    }
    out
}

/// A command's help: its subcommands and the flags it takes.
struct Help {
    subcommands: BTreeSet<String>,
    flags: BTreeSet<String>,
}

fn help<'a>(path: &[String], cache: &'a mut BTreeMap<Vec<String>, Option<Help>>) -> Option<&'a Help> {
    if !cache.contains_key(path) {
        let output = Command::new(BIN).args(path).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let parsed = output.status.success().then(|| {
            let mut subcommands = BTreeSet::new();
            let mut flags = BTreeSet::new();
            let mut section = "";
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                if !line.starts_with(' ') {
                    section = line.trim_end_matches(':');
                    continue;
                }
                let first = line.split_whitespace().next().unwrap_or("");
                if section == "Commands" {
                    subcommands.insert(first.to_string());
                }
                if section == "Options" {
                    // `  -m, --model <MODEL>  Model to run`: flags, then value names, then prose.
                    for token in line.split_whitespace() {
                        let token = token.trim_end_matches(',');
                        if token.starts_with("--") || (token.len() == 2 && token.starts_with('-')) {
                            flags.insert(token.to_string());
                        } else if !token.starts_with('<') {
                            break;
                        }
                    }
                }
            }
            flags.extend(["-h".to_string(), "--help".to_string()]);
            Help { subcommands, flags }
        });
        cache.insert(path.to_vec(), parsed);
    }
    cache.get(path).and_then(Option::as_ref)
}

/// What is wrong with the command lines `text` quotes, and how many it quotes.
fn problems_in(file: &str, text: &str, cache: &mut BTreeMap<Vec<String>, Option<Help>>) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for Quoted { line, code } in quoted_commands(text) {
        let tokens = words(&line);
        // The command: the longest run of words naming subcommands.
        let mut path: Vec<String> = Vec::new();
        let mut rest = &tokens[1..];
        while let Some((next, after)) = rest.split_first() {
            if !help(&path, cache).is_some_and(|h| h.subcommands.contains(next)) {
                break;
            }
            path.push(next.clone());
            rest = after;
        }
        checked += 1;
        let Some(leaf) = help(&path, cache) else {
            problems.push(format!("{file}: `{line}`: `gateway {}` has no help", path.join(" ")));
            continue;
        };
        let asks_help = rest.iter().any(|t| t == "--help" || t == "-h");
        if code && !leaf.subcommands.is_empty() && !asks_help {
            problems.push(format!("{file}: `{line}`: `gateway {}` needs a subcommand", path.join(" ")));
            continue;
        }
        for token in rest {
            let flag = token.split('=').next().unwrap_or(token);
            let is_flag = (flag.starts_with("--") && flag.len() > 2) || (flag.len() == 2 && flag.starts_with('-') && flag != "--");
            if is_flag && !leaf.flags.contains(flag) {
                problems.push(format!("{file}: `{line}`: `gateway {}` takes no {flag}", path.join(" ")));
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_quoted_command_is_one_this_build_takes() {
    let mut cache = BTreeMap::new();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (file, _, _) in COVERAGE {
        let text = std::fs::read_to_string(skills_dir().join(file)).unwrap();
        let (found, count) = problems_in(file, &text, &mut cache);
        problems.extend(found);
        checked += count;
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    assert!(checked > 100, "only {checked} command lines found");
}

/// The check itself: a made-up flag, a made-up command and a group without its
/// subcommand are caught, in code blocks and in wrapped inline spans alike.
#[test]
fn the_command_check_catches_what_does_not_exist() {
    let text = "```bash\ngateway worlds serve ./x --no-such-flag   # comment --ignored\ngateway worlds nosuch ./x\n```\n\
                Run `gateway worlds data import ./x rows.json\n--mode replace -Z` to see.\n";
    let (problems, checked) = problems_in("t.md", text, &mut BTreeMap::new());
    assert_eq!(checked, 3, "{problems:?}");
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].ends_with("takes no --no-such-flag"), "{problems:?}");
    assert!(problems[1].ends_with("needs a subcommand"), "{problems:?}");
    assert!(problems[2].ends_with("takes no -Z"), "{problems:?}");
}
