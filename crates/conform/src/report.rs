//! What a conformance run found: one [`Outcome`] per operation, the [`Check`]s made
//! beyond the original's (required query parameters, headers, error answers, path
//! arguments), and the [`Report`] the CLI prints and `--out` writes.
//!
//! The original's members keep their names, order and meaning; ours are added after
//! them (`checks` on each operation, `check_failures` in the summary, `failures` on
//! the report), so a reader of the original's report reads ours.

use gateway_world::json::{dumps, object, DumpOptions, Value};

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The world answers as documented.
    Ok,
    /// It does not (or the check could not be made, which is not a pass).
    Fail,
    /// Nothing to check here, with the reason in the detail (not a failure).
    Skipped,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Fail => "fail",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One check beyond the status and body of the operation's answer.
#[derive(Debug, Clone)]
pub struct Check {
    /// `path` (a path argument's source), `query` (a required query parameter),
    /// `header` (a documented response header), `error` (a documented 401/404
    /// answer) or `schema` (a response schema that could not be compiled).
    pub check: &'static str,
    /// The placeholder, parameter, header or status checked.
    pub name: String,
    /// How it ended.
    pub verdict: Verdict,
    /// What was found, in a sentence naming the operation's parameter or header.
    pub detail: String,
    /// The status of the request the check made, if it made one.
    pub status: Option<u16>,
    /// That request (method, url with its query), if it made one.
    pub request: Option<Value>,
}

impl Check {
    /// A check that made no request of its own.
    pub fn new(check: &'static str, name: impl Into<String>, verdict: Verdict, detail: impl Into<String>) -> Check {
        Check { check, name: name.into(), verdict, detail: detail.into(), status: None, request: None }
    }

    fn to_value(&self) -> Value {
        let mut members = vec![
            ("check", Value::str(self.check)),
            ("name", Value::str(&self.name)),
            ("result", Value::str(self.verdict.word())),
            ("detail", Value::str(&self.detail)),
            ("status", self.status.map_or(Value::Null, |s| Value::Int(i64::from(s)))),
        ];
        if let Some(request) = &self.request {
            members.push(("request", request.clone()));
        }
        object(members)
    }
}

/// One operation's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Operation name.
    pub operation: String,
    /// HTTP method.
    pub method: String,
    /// Path template as the world declares it.
    pub path: String,
    /// Whether a document describes this operation.
    pub documented: bool,
    /// The status the world answered.
    pub status: Option<u16>,
    /// The 2xx statuses the vendor documents (or `200`).
    pub expected: Vec<String>,
    /// `ok` | `violations` | `no-schema` | `unchecked`.
    pub schema: String,
    /// Schema problems, `$`-rooted paths first.
    pub problems: Vec<String>,
    /// What was sent: url, args, body.
    pub request: Value,
    /// The checks beyond status and body (ours; the original has none).
    pub checks: Vec<Check>,
}

impl Outcome {
    /// An operation no document describes (nothing is sent).
    pub fn undocumented(operation: &gateway_connector::spec::Operation) -> Outcome {
        Outcome {
            operation: operation.name.clone(),
            method: operation.method.clone(),
            path: operation.path.clone(),
            documented: false,
            status: None,
            expected: Vec::new(),
            schema: "unchecked".into(),
            problems: Vec::new(),
            request: object::<_, String>([]),
            checks: Vec::new(),
        }
    }

    /// Documented, answered with a documented status, the body (if described) valid,
    /// and no check failed.
    pub fn ok(&self) -> bool {
        self.documented
            && self.status_matches()
            && matches!(self.schema.as_str(), "ok" | "no-schema")
            && self.failed_checks().next().is_none()
    }

    fn status_matches(&self) -> bool {
        self.status.is_some_and(|s| self.expected.contains(&s.to_string()))
    }

    /// Whether the answer's status is one the vendor does not document.
    pub fn status_mismatch(&self) -> bool {
        self.status.is_some_and(|s| !self.expected.contains(&s.to_string()))
    }

    /// The checks that failed.
    pub fn failed_checks(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail)
    }

    fn to_value(&self) -> Value {
        object([
            ("operation", Value::str(&self.operation)),
            ("method", Value::str(&self.method)),
            ("path", Value::str(&self.path)),
            ("documented", Value::Bool(self.documented)),
            ("status", self.status.map_or(Value::Null, |s| Value::Int(i64::from(s)))),
            ("expected", Value::Array(self.expected.iter().map(Value::str).collect())),
            ("schema", Value::str(&self.schema)),
            ("problems", Value::Array(self.problems.iter().map(Value::str).collect())),
            ("request", self.request.clone()),
            ("checks", Value::Array(self.checks.iter().map(Check::to_value).collect())),
        ])
    }
}

/// Every outcome of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The world path as given.
    pub world: String,
    /// The documents conformed against, as given.
    pub documents: Vec<String>,
    /// One per operation checked.
    pub outcomes: Vec<Outcome>,
    /// Things worth saying that are not failures.
    pub notes: Vec<String>,
}

impl Report {
    /// The counts the CLI prints: the original's, then ours.
    pub fn summary(&self) -> Value {
        let checked: Vec<&Outcome> = self.outcomes.iter().filter(|o| o.documented).collect();
        let count = |n: usize| Value::Int(n as i64);
        object([
            ("operations", count(self.outcomes.len())),
            ("documented", count(checked.len())),
            ("conforming", count(checked.iter().filter(|o| o.ok()).count())),
            ("status_mismatch", count(checked.iter().filter(|o| o.status_mismatch()).count())),
            ("schema_violations", count(checked.iter().filter(|o| o.schema == "violations").count())),
            ("undocumented", count(self.outcomes.iter().filter(|o| !o.documented).count())),
            ("check_failures", count(checked.iter().map(|o| o.failed_checks().count()).sum())),
        ])
    }

    /// Why the run fails as a whole, beyond its operations' findings.
    ///
    /// Differs from the original on purpose: it exits 0 when nothing was checked
    /// (a world none of whose operations the document describes, a wrong document,
    /// `--limit 0`), a green that says nothing about the world.
    pub fn failures(&self) -> Vec<String> {
        if self.outcomes.iter().any(|o| o.documented) {
            return Vec::new();
        }
        let documents = self.documents.join(", ");
        vec![if self.outcomes.is_empty() {
            format!("nothing was checked: no operation of the world was run against {documents}")
        } else {
            let names: Vec<&str> = self.outcomes.iter().map(|o| o.operation.as_str()).collect();
            format!(
                "nothing was checked: none of the world's {} operations ({}) is documented in {documents}",
                names.len(),
                names.join(", ")
            )
        }]
    }

    /// Whether the run failed: a status mismatch, a schema violation, a failed check,
    /// or nothing checked at all.
    pub fn failed(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| o.documented && (o.status_mismatch() || o.schema == "violations" || o.failed_checks().next().is_some()))
            || !self.failures().is_empty()
    }

    /// The full report as written by `--out`.
    pub fn to_value(&self) -> Value {
        object([
            ("world", Value::str(&self.world)),
            ("summary", self.summary()),
            ("operations", Value::Array(self.outcomes.iter().map(Outcome::to_value).collect())),
            ("failures", Value::Array(self.failures().into_iter().map(Value::Str).collect())),
        ])
    }

    /// The report file's text (`json.dumps(…, indent=1)` plus a newline).
    pub fn to_text(&self) -> String {
        format!("{}\n", dumps(&self.to_value(), DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false }))
    }

    /// One CLI line per outcome, as the original prints them; a failed check is
    /// told like a schema problem.
    pub fn lines(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .map(|o| {
                let mark = if !o.documented {
                    "  ?  "
                } else if o.ok() {
                    "  ok "
                } else {
                    " FAIL"
                };
                let findings: Vec<&str> =
                    o.problems.iter().map(String::as_str).chain(o.failed_checks().map(|c| c.detail.as_str())).collect();
                let mut detail = if o.documented { String::new() } else { "not in the document".to_string() };
                if o.documented && o.status_mismatch() {
                    detail = format!("status {}, vendor documents {}", o.status.unwrap_or_default(), o.expected.join(", "));
                } else if let Some(first) = findings.first() {
                    detail = first.to_string();
                    if findings.len() > 1 {
                        detail.push_str(&format!(" (+{})", findings.len() - 1));
                    }
                }
                format!("{mark} {:6} {:60} {}  {detail}", o.method, o.path, o.operation)
            })
            .collect()
    }
}
