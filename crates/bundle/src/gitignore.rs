//! The root `.gitignore` matcher the content hash honours, with the exact semantics of
//! the `gitignore_parser` package (0.1.x) the original uses: each pattern becomes a
//! regular expression searched in the path relative to the bundle root; the last
//! matching rule wins only when some rule is a negation.
//!
//! These are not git's semantics in every corner (a `dir/` rule also matches a file
//! named `dir`, nested `.gitignore` files are ignored); matching the original's hash
//! is the point, so its quirks are kept.

use regex::Regex;

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    regex: Regex,
    negation: bool,
}

/// A compiled `.gitignore`.
#[derive(Debug, Default)]
pub struct Matcher {
    rules: Vec<Rule>,
    any_negation: bool,
}

impl Matcher {
    /// Compile the lines of a `.gitignore` file.
    pub fn parse(text: &str) -> Matcher {
        // Python reads the file in text mode: universal newlines.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let rules: Vec<Rule> = text.split('\n').filter_map(rule_from_pattern).collect();
        let any_negation = rules.iter().any(|rule| rule.negation);
        Matcher { rules, any_negation }
    }

    /// Whether the path (relative to the bundle root, `/`-separated) is ignored.
    pub fn is_ignored(&self, rel_path: &str) -> bool {
        if !self.any_negation {
            return self.rules.iter().any(|rule| rule.regex.is_match(rel_path));
        }
        for rule in self.rules.iter().rev() {
            if rule.regex.is_match(rel_path) {
                return !rule.negation;
            }
        }
        false
    }
}

fn rule_from_pattern(line: &str) -> Option<Rule> {
    let mut pattern: Vec<char> = line.chars().collect();
    if line.trim().is_empty() || pattern[0] == '#' {
        return None;
    }
    let negation = pattern[0] == '!';
    if negation {
        pattern.remove(0);
    }
    let collapsed: String = pattern.iter().collect();
    let first = Regex::new(r"([^/])\*{2,}").expect("static regex");
    let second = Regex::new(r"\*{2,}([^/])").expect("static regex");
    let collapsed = first.replace_all(&collapsed, "${1}*").into_owned();
    let collapsed = second.replace_all(&collapsed, "*${1}").into_owned();
    if collapsed.trim_end() == "/" {
        return None;
    }
    let mut pattern: Vec<char> = collapsed.chars().collect();
    // Where Python would raise IndexError on an emptied pattern, the rule is dropped.
    let directory_only = *pattern.last()? == '/';
    let mut anchored = pattern[..pattern.len() - 1].contains(&'/');
    if pattern.first() == Some(&'/') {
        pattern.remove(0);
    }
    if pattern.first() == Some(&'*') && pattern.len() >= 2 && pattern[1] == '*' {
        pattern.drain(..2);
        anchored = false;
    }
    if pattern.first() == Some(&'/') {
        pattern.remove(0);
    }
    if *pattern.last()? == '/' {
        pattern.pop();
    }
    if pattern.first() == Some(&'\\') && matches!(pattern.get(1), Some('#') | Some('!')) {
        pattern.remove(0);
    }
    // Trailing spaces are dropped unless escaped (the original's loop, kept as is).
    let mut i = pattern.len() as isize - 1;
    let mut strip = true;
    while i > 1 && pattern[i as usize] == ' ' {
        if pattern[i as usize - 1] == '\\' {
            pattern.remove(i as usize - 1);
            i -= 1;
            strip = false;
        } else if strip {
            pattern.truncate(i as usize);
        }
        i -= 1;
    }
    if pattern.is_empty() {
        return None;
    }
    let source = to_regex(&pattern, directory_only, negation, anchored);
    let regex = Regex::new(&source).ok()?;
    Some(Rule { regex, negation })
}

/// `fnmatch_pathname_to_regex`: `*` and `?` never cross a `/`.
fn to_regex(pattern: &[char], directory_only: bool, negation: bool, anchored: bool) -> String {
    let seps = "[/]";
    let nonsep = "[^/]";
    let mut out = String::new();
    let n = pattern.len();
    let mut i = 0;
    while i < n {
        let c = pattern[i];
        i += 1;
        match c {
            '*' => {
                if i < n && pattern[i] == '*' {
                    i += 1;
                    if i < n && pattern[i] == '/' {
                        i += 1;
                        out.push_str(&format!("(.*{seps})?"));
                    } else {
                        out.push_str(".*");
                    }
                } else {
                    out.push_str(nonsep);
                    out.push('*');
                }
            }
            '?' => out.push_str(nonsep),
            '/' => out.push_str(seps),
            '[' => {
                let mut j = i;
                if j < n && pattern[j] == '!' {
                    j += 1;
                }
                if j < n && pattern[j] == ']' {
                    j += 1;
                }
                while j < n && pattern[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push_str("\\[");
                } else {
                    let stuff: String = pattern[i..j].iter().collect::<String>().replace('\\', "\\\\").replace('/', "");
                    i = j + 1;
                    let stuff = if let Some(rest) = stuff.strip_prefix('!') {
                        format!("^{rest}")
                    } else if stuff.starts_with('^') {
                        format!("\\{stuff}")
                    } else {
                        stuff
                    };
                    out.push('[');
                    out.push_str(&stuff);
                    out.push(']');
                }
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    let prefix = if anchored { "^".to_string() } else { format!("(^|{seps})") };
    let suffix = if !directory_only {
        "$"
    } else if negation {
        "/$"
    } else {
        "($|\\/)"
    };
    format!("{prefix}{out}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::Matcher;

    #[test]
    fn directory_and_glob_rules() {
        let m = Matcher::parse("data/\n*.log\n# comment\n\n/build-out\n");
        assert!(m.is_ignored("data"));
        assert!(m.is_ignored("data/rows.json"));
        assert!(m.is_ignored("pkg/x.log"));
        assert!(!m.is_ignored("pkg/x.logs"));
        assert!(m.is_ignored("build-out"));
        assert!(!m.is_ignored("pkg/build-out"));
    }

    #[test]
    fn negation_last_rule_wins() {
        let m = Matcher::parse("*.json\n!keep.json\n");
        assert!(m.is_ignored("a.json"));
        assert!(!m.is_ignored("keep.json"));
        assert!(!m.is_ignored("a.py"));
    }

    #[test]
    fn double_star() {
        let m = Matcher::parse("**/tmp\nlogs/**\n");
        assert!(m.is_ignored("a/b/tmp"));
        assert!(m.is_ignored("tmp"));
        assert!(m.is_ignored("logs/x/y"));
    }
}
