//! Semantic-version bumps for `bench push --auto-bump/--rc/--post`, and the raw-text
//! rewrite of pyproject's `version = "…"` line (comments and layout preserved).

use regex::Regex;

/// Patch bump: `1.2.3` → `1.2.4`; a `-`/`+` suffix is stripped to find the patch
/// number; a non-numeric patch gets `.1`; `1.2` → `1.2.1`; `1` → `1.0.1`.
pub fn bump_version(version: &str) -> String {
    let mut parts: Vec<String> = version.split('.').map(str::to_string).collect();
    if parts.len() >= 3 {
        let patch = &parts[2];
        let number = if patch.contains('-') {
            patch.split('-').next().unwrap_or_default()
        } else if patch.contains('+') {
            patch.split('+').next().unwrap_or_default()
        } else {
            patch.as_str()
        };
        match python_int(number) {
            Some(n) => {
                parts[2] = (n + 1).to_string();
                parts.join(".")
            }
            None => format!("{version}.1"),
        }
    } else if parts.len() == 2 {
        format!("{version}.1")
    } else {
        format!("{version}.0.1")
    }
}

/// Python's `int(text)` on a decimal string (surrounding whitespace, sign, `_` allowed).
fn python_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    if !digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    t.replace('_', "").parse().ok()
}

fn bump_suffix(version: &str, word: &str) -> String {
    let re = Regex::new(&format!(r"^(?P<base>.*?)(?:\.{word}|{word})(?P<num>\d+)$")).expect("static regex");
    if let Some(caps) = re.captures(version) {
        let n: u128 = caps["num"].parse().unwrap_or(0);
        return format!("{}.{word}{}", &caps["base"], n + 1);
    }
    let strip = Regex::new(r"([+-].*)$").expect("static regex");
    format!("{}.{word}0", strip.replace(version, ""))
}

/// `X` → `X.rc0`, `X.rcN` → `X.rc(N+1)`.
pub fn bump_rc_version(version: &str) -> String {
    bump_suffix(version, "rc")
}

/// `X` → `X.post0`, `X.postN` → `X.post(N+1)`.
pub fn bump_post_version(version: &str) -> String {
    bump_suffix(version, "post")
}

/// Rewrite every `version = "…"` assignment, as the original's regex does; `None` when
/// nothing changed (the original raises "version line not found or unchanged").
pub fn update_pyproject_version(content: &str, new_version: &str) -> Option<String> {
    let re = Regex::new(r#"(?m)(\s*)version\s*=\s*["'][^"']*["']"#).expect("static regex");
    let updated = re.replace_all(content, |caps: &regex::Captures| format!("{}version = \"{new_version}\"", &caps[1]));
    (updated != content).then(|| updated.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bumps() {
        assert_eq!(bump_version("1.2.3"), "1.2.4");
        assert_eq!(bump_version("1.2.3-beta"), "1.2.4");
        assert_eq!(bump_version("1.2.x"), "1.2.x.1");
        assert_eq!(bump_version("1.2"), "1.2.1");
        assert_eq!(bump_version("1"), "1.0.1");
        assert_eq!(bump_rc_version("1.2.3"), "1.2.3.rc0");
        assert_eq!(bump_rc_version("1.2.3.rc0"), "1.2.3.rc1");
        assert_eq!(bump_rc_version("1.2.3rc4"), "1.2.3.rc5");
        assert_eq!(bump_post_version("1.2.3+local"), "1.2.3.post0");
        assert_eq!(bump_post_version("1.2.3.post1"), "1.2.3.post2");
    }

    #[test]
    fn rewrite() {
        let text = "[project]\nname = \"x\"\nversion = '0.1.0' # keep\n";
        assert_eq!(update_pyproject_version(text, "0.1.1").unwrap(), "[project]\nname = \"x\"\nversion = \"0.1.1\" # keep\n");
        assert!(update_pyproject_version("[project]\n", "1").is_none());
    }
}
