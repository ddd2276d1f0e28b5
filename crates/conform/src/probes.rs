//! The checks beyond the original's status and body: each asks something a vendor's
//! SDK relies on and the original never looked at (a green it gave without asking).
//!
//! - `query`: a query parameter the document marks required is sent (see
//!   [`crate::args`]); the world's route must declare it (else it ignores it) and
//!   accept it (not answer 4xx).
//! - `header`: a header the documented answer marks `required` must be on the answer;
//!   `Link` (GitHub's paging: octokit's `paginate` follows its `rel="next"`) must be
//!   on a page that has a next one — asked for with the documented page-size
//!   parameter at 1 when a page of 2 holds two rows. Other optional headers are
//!   listed as skipped: nothing says when they are due.
//! - `error`: a documented 401 is provoked without credentials (with a wrong one
//!   where the world serves the method anonymously), a documented 404
//!   with a missing value in the last path argument (the parents' keys real); the
//!   status must be the documented one and the body match the documented error
//!   schema.
//!
//! Probes are read-only where it matters: paging probes are only sent for GET, and
//! error probes after the operation's own request, aimed at nothing that exists.

use crate::args::{path_parameter, Arguments};
use crate::openapi::{Document, Found};
use crate::report::{Check, Verdict};
use crate::{answered_value, documented_answer, json_schema, Call, Credential, Run};
use gateway_connector::spec::Operation;
use gateway_serve::app::{Response, WorldApp};
use gateway_world::json::Value;

/// Page-size parameters as vendors name them (GitHub: `per_page`).
const PAGE_SIZE: [&str; 10] = ["per_page", "limit", "page_size", "pageSize", "size", "count", "max_results", "maxResults", "top", "$top"];

fn header<'a>(answer: &'a Response, name: &str) -> Option<&'a str> {
    answer.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// The required query parameters: declared by the world's route, and accepted.
pub fn query(app: &WorldApp, operation: &Operation, arguments: &Arguments, answer: &Response) -> Vec<Check> {
    let op = app.settings.for_operation(&operation.name);
    let paging = op.paging.clone().unwrap_or_else(|| app.settings.paging.style.clone());
    let mut understood: Vec<&str> = operation.params.iter().map(String::as_str).collect();
    if paging != "none" {
        let p = &app.settings.paging;
        understood.extend([p.limit_param.as_str(), p.offset_param.as_str(), p.cursor_param.as_str(), p.page_param.as_str()]);
    }
    let mut out = Vec::new();
    for name in &arguments.required {
        let value = arguments.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_default();
        // A handler reads every query parameter it is sent, declared or not.
        let check = if !understood.contains(&name.as_str()) && op.action != "handler" {
            let declared = if operation.params.is_empty() { "none".to_string() } else { operation.params.join(", ") };
            Check::new(
                "query",
                name,
                Verdict::Fail,
                format!("required query parameter {name} is not among the route's params ({declared}): the world ignores it"),
            )
        } else if answer.status >= 400 {
            Check::new(
                "query",
                name,
                Verdict::Fail,
                format!("sent with required query parameter {name}={value:?}, the route answered {}", answer.status),
            )
        } else {
            Check::new("query", name, Verdict::Ok, format!("sent {name}={value:?}; declared and accepted"))
        };
        out.push(check);
    }
    out
}

/// How many rows a list answer holds: a bare array, or the first array member of
/// an envelope.
fn row_count(answer: &Response) -> usize {
    match answered_value(answer).unwrap_or_default() {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.values().find_map(Value::as_array).map_or(0, Vec::len),
        _ => 0,
    }
}

/// `Link` on a page that has a next one.
fn link(run: &Run, found: &Found, call: &Call, name: &str) -> Check {
    let size =
        found.parameters.iter().filter(|p| p.get("in").and_then(Value::as_str) == Some("query")).find_map(|p| {
            p.get("name").and_then(Value::as_str).filter(|n| PAGE_SIZE.contains(n) || *n == run.app.settings.paging.limit_param)
        });
    let skipped = |detail: String| Check::new("header", name, Verdict::Skipped, detail);
    if call.method != "GET" {
        return skipped(format!("{name} is optional; a {} is not sent twice to find a next page", call.method));
    }
    let Some(size) = size else {
        return skipped(format!("{name} is optional and no page-size parameter is documented to ask for a page with a next"));
    };
    let paged = |rows: usize| {
        let mut probe = call.clone();
        probe.query.retain(|(n, _)| n != size);
        probe.query.push((size.to_string(), rows.to_string()));
        probe
    };
    let one = paged(1);
    let answer = one.send(run);
    let value = header(&answer, name).unwrap_or_default();
    let mut check = if value.contains("rel=\"next\"") {
        Check::new("header", name, Verdict::Ok, format!("{name} with rel=\"next\" on a page of {size}=1"))
    } else {
        let two = paged(2).send(run);
        let rows = row_count(&two);
        if rows < 2 || !(200..300).contains(&two.status) {
            skipped(format!("fewer than two rows match ({size}=2 answered {} with {rows}): no page has a next", two.status))
        } else if value.is_empty() {
            Check::new(
                "header",
                name,
                Verdict::Fail,
                format!("no {name} header on a page of {size}=1 with more rows to come; the vendor documents it"),
            )
        } else {
            Check::new(
                "header",
                name,
                Verdict::Fail,
                format!("{name} on a page of {size}=1 with more rows to come has no rel=\"next\": {value:?}"),
            )
        }
    };
    check.status = Some(answer.status);
    check.request = Some(one.record(run));
    check
}

/// The documented response headers of the answer the operation got.
pub fn headers(run: &Run, document: &Document, found: &Found, documented: &Value, call: &Call, answer: &Response) -> Vec<Check> {
    let document_headers = documented.get("headers").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (name, declared) in &document_headers {
        let declared = document.deref(declared);
        let check = if matches!(declared.get("required"), Some(Value::Bool(true))) {
            match header(answer, name) {
                Some(_) => Check::new("header", name, Verdict::Ok, format!("required header {name} present")),
                None => Check::new("header", name, Verdict::Fail, format!("no {name} header; the vendor documents it as required")),
            }
        } else if name.eq_ignore_ascii_case("link") {
            link(run, found, call, name)
        } else {
            Check::new("header", name, Verdict::Skipped, format!("{name} is optional; nothing says when it is due"))
        };
        out.push(check);
    }
    out
}

/// A value for the last path argument that no row holds, typed as documented.
fn missing_value(found: &Found, index: usize, real: &str) -> String {
    let schema = path_parameter(found, index).and_then(|p| p.get("schema")).cloned().unwrap_or_default();
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or_default();
    let candidate = match (kind, schema.get("format").and_then(Value::as_str)) {
        ("integer" | "number", _) => "987654321",
        (_, Some("uuid")) => "00000000-0000-4000-8000-00000c0f0404",
        _ => "gateway-conform-missing",
    };
    if candidate == real {
        format!("{candidate}0")
    } else {
        candidate.to_string()
    }
}

/// One documented error answer, provoked by `probe`.
fn error(run: &Run, document: &Document, found: &Found, code: &str, probe: Call, how: String) -> Check {
    let answer = probe.send(run);
    let wanted: u16 = code.parse().unwrap_or_default();
    let mut check = if answer.status != wanted {
        Check::new("error", code, Verdict::Fail, format!("{how} answered {}, the vendor documents {code}", answer.status))
    } else {
        let schema = documented_answer(document, found, code).as_ref().and_then(json_schema);
        let problems = match (schema, answered_value(&answer)) {
            (None, _) => Ok(Vec::new()),
            (Some(_), Err(problem)) => Ok(vec![problem]),
            (Some(schema), Ok(value)) => document.check(&schema, &value),
        };
        match problems {
            Ok(problems) if problems.is_empty() => Check::new("error", code, Verdict::Ok, format!("{how} answered {code} as documented")),
            Ok(problems) => {
                let more = if problems.len() > 1 { format!(" (+{})", problems.len() - 1) } else { String::new() };
                Check::new(
                    "error",
                    code,
                    Verdict::Fail,
                    format!("{how} answered {code} with a body the vendor does not document: {}{more}", problems[0]),
                )
            }
            Err(reason) => {
                Check::new("error", code, Verdict::Fail, format!("{how}: the vendor's {code} schema could not be compiled ({reason})"))
            }
        }
    };
    check.status = Some(answer.status);
    check.request = Some(probe.record(run));
    check
}

/// The documented 401 and 404 answers, provoked.
pub fn errors(run: &Run, operation: &Operation, document: &Document, found: &Found, arguments: &Arguments, call: &Call) -> Vec<Check> {
    let responses = found.operation.get("responses").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut out = Vec::new();
    if responses.contains_key("401") {
        if run.app.router.spec.scheme == "none" {
            out.push(Check::new("error", "401", Verdict::Skipped, "the world's connector takes no credential, so nothing answers 401"));
        } else {
            // A method the world serves without a credential is answered without
            // one: there, a wrong credential is what is refused.
            let mut probe = call.clone();
            let anonymous = run.app.settings.anonymous.iter().any(|m| m.eq_ignore_ascii_case(&operation.method));
            let how = if anonymous {
                probe.credentials = Credential::Wrong;
                format!("with a wrong credential ({} is served without one), the route", operation.method)
            } else {
                probe.credentials = Credential::Absent;
                "without credentials, the route".to_string()
            };
            out.push(error(run, document, found, "401", probe, how));
        }
    }
    if responses.contains_key("404") {
        match arguments.path.last() {
            None => out.push(Check::new("error", "404", Verdict::Skipped, "the route has no path argument to ask for a missing one with")),
            Some((leaf, real)) => {
                let index = arguments.path.len() - 1;
                let missing = missing_value(found, index, real);
                let mut path_args = arguments.path.clone();
                path_args[index].1 = missing.clone();
                let probe = Call::new(operation, &path_args, call.query.clone(), call.body.clone());
                out.push(error(run, document, found, "404", probe, format!("with a missing {{{leaf}}} ({missing:?}), the route")));
            }
        }
    }
    out
}
