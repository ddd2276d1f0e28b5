//! The hub's metadata schema, written once: `migrations/NNNN_*.sql` in SQLite's dialect,
//! and the PostgreSQL text derived from it here, so the two backends cannot drift apart
//! column by column (the row mapping in `rows` relies on that).
//!
//! The derivation is a handful of whole-word type renames (`INTEGER PRIMARY KEY
//! AUTOINCREMENT` → `BIGSERIAL PRIMARY KEY`, `INTEGER` → `BIGINT`, `BLOB` → `BYTEA`, `REAL`
//! → `DOUBLE PRECISION`); a statement line that needs more is followed by a comment line
//! `-- postgres: <the line for PostgreSQL>`, which SQLite skips as a comment and
//! PostgreSQL runs instead. It is not a general SQL translator.

/// The migrations, in order: `(version, SQL in SQLite's dialect)`.
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/0001_init.sql")),
    (2, include_str!("../migrations/0002_documents.sql")),
    (3, include_str!("../migrations/0003_evaluations.sql")),
    (4, include_str!("../migrations/0004_agents.sql")),
    (5, include_str!("../migrations/0005_world_data.sql")),
    (6, include_str!("../migrations/0006_connectors.sql")),
];

const POSTGRES_LINE: &str = "-- postgres: ";

/// Whole-word renames, longest first (the first that matches at a word start wins).
const POSTGRES_TYPES: &[(&str, &str)] = &[
    ("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY"),
    ("INTEGER", "BIGINT"),
    ("BLOB", "BYTEA"),
    ("REAL", "DOUBLE PRECISION"),
];

/// The PostgreSQL text of a migration written in SQLite's dialect.
pub(crate) fn postgres_dialect(sql: &str) -> String {
    let lines: Vec<&str> = sql.lines().collect();
    let mut out = String::with_capacity(sql.len() + 64);
    let mut lines_iter = lines.iter().enumerate().peekable();
    while let Some((_, line)) = lines_iter.next() {
        if line.trim_start().starts_with(POSTGRES_LINE) {
            continue; // already used in place of the line above it
        }
        match lines_iter.peek().and_then(|(_, next)| next.trim_start().strip_prefix(POSTGRES_LINE)) {
            Some(instead) => out.push_str(instead),
            None if line.trim_start().starts_with("--") => out.push_str(line),
            None => out.push_str(&rename_types(line)),
        }
        out.push('\n');
    }
    out
}

fn rename_types(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    'scan: while !rest.is_empty() {
        let at_word_start = out.chars().last().is_none_or(|c| !is_word(c));
        if at_word_start {
            for (from, to) in POSTGRES_TYPES {
                if let Some(after) = rest.strip_prefix(from) {
                    if after.chars().next().is_none_or(|c| !is_word(c)) {
                        out.push_str(to);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
        }
        let c = rest.chars().next().expect("rest is not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_renamed_as_whole_words_only() {
        assert_eq!(rename_types("    seq INTEGER PRIMARY KEY AUTOINCREMENT,"), "    seq BIGSERIAL PRIMARY KEY,");
        assert_eq!(rename_types("    n INTEGER NOT NULL, b BLOB, r REAL,"), "    n BIGINT NOT NULL, b BYTEA, r DOUBLE PRECISION,");
        assert_eq!(rename_types("    realm TEXT, INTEGERS TEXT, my_REAL TEXT"), "    realm TEXT, INTEGERS TEXT, my_REAL TEXT");
    }

    #[test]
    fn a_postgres_line_replaces_the_statement_above_it() {
        let sql = "CREATE INDEX a ON t (json_extract(d, '$.x'));\n-- postgres: CREATE INDEX a ON t (((d::jsonb) ->> 'x'));\n-- REAL stays in comments\n";
        assert_eq!(postgres_dialect(sql), "CREATE INDEX a ON t (((d::jsonb) ->> 'x'));\n-- REAL stays in comments\n");
    }

    #[test]
    fn every_migration_has_a_postgres_text_without_sqlite_words() {
        for (version, sql) in MIGRATIONS {
            let pg = postgres_dialect(sql);
            for sqlite_only in ["AUTOINCREMENT", "json_extract", " BLOB", " REAL"] {
                let statements: String = pg.lines().filter(|l| !l.trim_start().starts_with("--")).collect();
                assert!(!statements.contains(sqlite_only), "migration {version} keeps {sqlite_only:?} for PostgreSQL");
            }
        }
    }
}
