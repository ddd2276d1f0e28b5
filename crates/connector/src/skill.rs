//! The agent skills this package ships: print one, or install it under a
//! repository's `.claude/` (the layout Claude Code, Cursor and Codex read).
//!
//! The texts are ours (`crates/connector/skills/`), compiled into the binary so the
//! command works from any directory.

use std::path::Path;

/// The connector-authoring skill (`gateway worlds connector skill`).
pub const SKILL_NAME: &str = "connector-schema-authoring";

struct Packaged {
    name: &'static str,
    /// (path inside the skill directory, content), in path order.
    files: &'static [(&'static str, &'static str)],
    /// Agents installed under `.claude/agents/`.
    agents: &'static [(&'static str, &'static str)],
    next_step: Option<&'static str>,
}

const SKILLS: &[Packaged] = &[
    Packaged {
        name: "connector-schema-authoring",
        files: &[
            ("CONNECTORS.md", include_str!("../skills/connector-schema-authoring/CONNECTORS.md")),
            ("CONVENTIONS.md", include_str!("../skills/connector-schema-authoring/CONVENTIONS.md")),
            ("SKILL.md", include_str!("../skills/connector-schema-authoring/SKILL.md")),
        ],
        agents: &[("connector-template-author.md", include_str!("../skills/agents/connector-template-author.md"))],
        next_step: Some("gateway worlds schema init ./<vendor>-world --connector custom"),
    },
    Packaged {
        name: "world-data-ingestion",
        files: &[
            ("ROWS.md", include_str!("../skills/world-data-ingestion/ROWS.md")),
            ("SKILL.md", include_str!("../skills/world-data-ingestion/SKILL.md")),
        ],
        agents: &[],
        next_step: Some("gateway worlds data import <world> rows.json"),
    },
    Packaged {
        name: "worlds-getting-started",
        files: &[("SKILL.md", include_str!("../skills/worlds-getting-started/SKILL.md"))],
        agents: &[],
        next_step: Some("gateway worlds schema init ./my-world --connector custom"),
    },
];

/// Every packaged skill's name, sorted.
pub fn packaged_skills() -> Vec<&'static str> {
    let mut names: Vec<&str> = SKILLS.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names
}

fn find(name: &str) -> Result<&'static Packaged, String> {
    SKILLS
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("No packaged skill '{name}'; the package ships: {}", packaged_skills().join(", ")))
}

/// The skill's SKILL.md, or the refusal naming what ships.
pub fn skill_text(name: &str) -> Result<&'static str, String> {
    let skill = find(name)?;
    Ok(skill.files.iter().find(|(path, _)| *path == "SKILL.md").map(|(_, text)| *text).unwrap_or_default())
}

/// Repository-relative destination → content, for every file the skill installs.
pub fn packaged_files(name: &str) -> Result<Vec<(String, &'static str)>, String> {
    let skill = find(name)?;
    let mut files: Vec<(String, &str)> = skill.files.iter().map(|(path, text)| (format!(".claude/skills/{name}/{path}"), *text)).collect();
    files.extend(skill.agents.iter().map(|(path, text)| (format!(".claude/agents/{path}"), *text)));
    Ok(files)
}

/// The command an agent runs once the skill is installed.
pub fn next_step(name: &str) -> Option<&'static str> {
    find(name).ok().and_then(|s| s.next_step)
}

/// What an install did (repository-relative paths).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct InstallReport {
    /// Files written.
    pub written: Vec<String>,
    /// Files already identical.
    pub unchanged: Vec<String>,
    /// Files that differ and were left alone (nothing is written when any exist).
    pub conflicts: Vec<String>,
}

/// Write the skill (and its agents) under `destination/.claude/`. A differing file is
/// a conflict and nothing is written unless `force`.
pub fn install_skill(destination: &Path, name: &str, force: bool) -> Result<InstallReport, String> {
    let mut report = InstallReport::default();
    let mut planned = Vec::new();
    for (relative, content) in packaged_files(name)? {
        let target = destination.join(&relative);
        match std::fs::read(&target) {
            Ok(bytes) if bytes == content.as_bytes() => report.unchanged.push(relative),
            Ok(_) if !force => report.conflicts.push(relative),
            _ => {
                planned.push((target, content));
                report.written.push(relative);
            }
        }
    }
    if !report.conflicts.is_empty() {
        report.written.clear();
        return Ok(report);
    }
    for (target, content) in planned {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&target, content).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_then_refuses_a_differing_file() {
        let dir = tempfile::tempdir().unwrap();
        let first = install_skill(dir.path(), SKILL_NAME, false).unwrap();
        assert_eq!(first.written.len(), 4);
        let again = install_skill(dir.path(), SKILL_NAME, false).unwrap();
        assert_eq!((again.written.len(), again.unchanged.len()), (0, 4));
        let skill = dir.path().join(".claude/skills/connector-schema-authoring/SKILL.md");
        std::fs::write(&skill, "mine").unwrap();
        let refused = install_skill(dir.path(), SKILL_NAME, false).unwrap();
        assert_eq!(refused.conflicts, vec![".claude/skills/connector-schema-authoring/SKILL.md".to_string()]);
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), "mine");
        let forced = install_skill(dir.path(), SKILL_NAME, true).unwrap();
        assert_eq!(forced.written.len(), 1);
        assert!(skill_text("nope").unwrap_err().contains("connector-schema-authoring, world-data-ingestion, worlds-getting-started"));
    }
}
