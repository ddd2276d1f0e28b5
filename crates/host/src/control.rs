//! The control plane's operations as one typed request, [`ControlRequest`]: what a
//! platform asks of a host, one variant per `/__host/*` route.
//!
//! A platform in the host's own process (the hub's embedded host) builds the request
//! and runs it with [`WorldHost::control`]: no paths, no JSON bodies read back. Over
//! HTTP the same request travels as today's routes: [`ControlRequest::to_http`] writes
//! it (a platform calling a remote host), [`ControlRequest::from_http`] reads it
//! (`gateway host serve`), so both paths run the very same operations.
//!
//! It is not the HTTP server ([`crate::server`]: secret, body limit, status mapping)
//! and holds no operation of its own ([`WorldHost`] does).

use crate::error::{refuse, HostError};
use crate::host::{OpenRequest, WorldHost};
use gateway_world::json::{json_equal, object, Map, Value};
use gateway_world::task::TaskSpec;
use std::sync::Arc;

/// One control-plane request.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    /// `GET /__host/stats`: what the host is and holds.
    Stats,
    /// `POST /__host/drain`: take no new sessions.
    Drain,
    /// `GET /__host/versions`: the versions cached.
    Versions,
    /// `POST /__host/versions`: cache a version before any session asks for it.
    Warm {
        /// The version.
        version_id: String,
        /// Where its bundle is.
        bundle_url: String,
    },
    /// `POST /__host/sessions`: open a session.
    Open(OpenRequest),
    /// `DELETE /__host/sessions/{sid}`.
    Close {
        /// The session.
        session_id: String,
    },
    /// `POST /__host/sessions/{sid}/renew`: renew the lease.
    Renew {
        /// The session.
        session_id: String,
    },
    /// `POST /__host/sessions/{sid}/fork` (beyond the original): a new session holding
    /// a copy of this one's state.
    Fork {
        /// The session forked.
        session_id: String,
        /// The new session's id (the body's `sessionId`).
        fork_id: String,
        /// The new session's data-plane token.
        token: Option<String>,
    },
    /// `POST /__host/sessions/{sid}/reset`: back to the task's start.
    Reset {
        /// The session.
        session_id: String,
    },
    /// `POST /__host/sessions/{sid}/seed`: rows onto the live state.
    Seed {
        /// The session.
        session_id: String,
        /// `{rows: {entity: [row]}, mode?}` (the body's `args`, `{}` when absent).
        args: Value,
    },
    /// `GET /__host/sessions/{sid}/state`: every entity's rows.
    State {
        /// The session.
        session_id: String,
    },
    /// `POST /__host/sessions/{sid}/configure`: clock, seed, faults, collateral check.
    Configure {
        /// The session.
        session_id: String,
        /// The settings (the whole body).
        settings: Value,
    },
    /// `POST /__host/sessions/{sid}/grade`.
    Grade {
        /// The session.
        session_id: String,
    },
    /// `POST /__host/sessions/{sid}/call`: one of the session's tools.
    Call {
        /// The session.
        session_id: String,
        /// The tool's name.
        tool: String,
        /// Its arguments (`{}` when absent).
        args: Value,
    },
    /// `POST /__host/sessions/{sid}/export`: copy and hash the state.
    Export {
        /// The session.
        session_id: String,
        /// The digest the platform holds already: an unchanged state is not kept.
        known_sha256: Option<String>,
    },
    /// `POST /__host/sessions/{sid}/export/{export_id}`: PUT the export taken last.
    UploadExport {
        /// The session.
        session_id: String,
        /// The export, as `Export` named it.
        export_id: String,
        /// The presigned upload URL (`https://`, `http://` or `file://`).
        url: String,
    },
}

fn empty() -> Value {
    Value::Object(Map::default())
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a Value, HostError> {
    body.get(name).ok_or_else(|| HostError::MissingField(name.to_string()))
}

/// A required member as text: missing is refused, a member that is not a string is "".
fn required_text(body: &Value, name: &str) -> Result<String, HostError> {
    Ok(field(body, name)?.as_str().unwrap_or_default().to_string())
}

fn optional_text(body: &Value, name: &str) -> Option<String> {
    body.get(name).and_then(Value::as_str).map(str::to_string)
}

/// A member that is there and not null.
fn present(body: &Value, name: &str) -> Option<Value> {
    body.get(name).filter(|v| !matches!(v, Value::Null)).cloned()
}

/// `object` of the members that are there.
fn members<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    Value::Object(fields.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_string(), v))).collect())
}

fn is_upload_url(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://") || url.starts_with("file://")
}

impl ControlRequest {
    /// The request an HTTP call makes (`method`, `path` under `/__host`, and its JSON
    /// object `body`); None for a route that does not exist. A required member missing
    /// is [`HostError::MissingField`]; a call's `tool` that is not a string is refused.
    pub fn from_http(method: &str, path: &str, body: &Value) -> Result<Option<ControlRequest>, HostError> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let request = match (method, parts.as_slice()) {
            ("GET", ["__host", "stats"]) => ControlRequest::Stats,
            ("POST", ["__host", "drain"]) => ControlRequest::Drain,
            ("GET", ["__host", "versions"]) => ControlRequest::Versions,
            ("POST", ["__host", "versions"]) => {
                ControlRequest::Warm { version_id: required_text(body, "versionId")?, bundle_url: required_text(body, "bundleUrl")? }
            }
            ("POST", ["__host", "sessions"]) => ControlRequest::Open(Self::open_from_http(body)?),
            ("DELETE", ["__host", "sessions", sid]) => ControlRequest::Close { session_id: sid.to_string() },
            ("POST", ["__host", "sessions", sid, verb]) => match Self::session_verb(sid, verb, body)? {
                Some(request) => request,
                None => return Ok(None),
            },
            ("GET", ["__host", "sessions", sid, "state"]) => ControlRequest::State { session_id: sid.to_string() },
            ("POST", ["__host", "sessions", sid, "export", export_id]) => ControlRequest::UploadExport {
                session_id: sid.to_string(),
                export_id: export_id.to_string(),
                url: optional_text(body, "url").unwrap_or_default(),
            },
            _ => return Ok(None),
        };
        Ok(Some(request))
    }

    /// `POST /__host/sessions`: the members read, and the task spec parsed here, once
    /// (after the members' own refusals, as the open refused them).
    fn open_from_http(body: &Value) -> Result<OpenRequest, HostError> {
        let (session_id, version_id, bundle_url) =
            (required_text(body, "sessionId")?, required_text(body, "versionId")?, required_text(body, "bundleUrl")?);
        let task = optional_text(body, "task");
        let spec = present(body, "taskSpec");
        OpenRequest::one_task(task.is_some(), spec.is_some())?;
        let task_spec = spec.map(|spec| TaskSpec::parse(&spec).map(Arc::new)).transpose()?;
        Ok(OpenRequest {
            session_id,
            version_id,
            bundle_url,
            task,
            task_spec,
            token: optional_text(body, "token"),
            restore: present(body, "restore"),
        })
    }

    /// `POST /__host/sessions/{sid}/{verb}`.
    fn session_verb(sid: &str, verb: &str, body: &Value) -> Result<Option<ControlRequest>, HostError> {
        let session_id = sid.to_string();
        Ok(Some(match verb {
            "renew" => ControlRequest::Renew { session_id },
            "fork" => ControlRequest::Fork { session_id, fork_id: required_text(body, "sessionId")?, token: optional_text(body, "token") },
            "reset" => ControlRequest::Reset { session_id },
            "seed" => ControlRequest::Seed { session_id, args: body.get("args").cloned().unwrap_or_else(empty) },
            "configure" => ControlRequest::Configure { session_id, settings: body.clone() },
            "grade" => ControlRequest::Grade { session_id },
            "call" => {
                let Some(tool) = optional_text(body, "tool") else {
                    return Err(refuse("host", "tool must be a string"));
                };
                ControlRequest::Call { session_id, tool, args: body.get("args").cloned().unwrap_or_else(empty) }
            }
            "export" => ControlRequest::Export { session_id, known_sha256: optional_text(body, "knownSha256") },
            _ => return Ok(None),
        }))
    }

    /// The HTTP call that makes this request of a remote host: (method, path, body).
    /// [`ControlRequest::from_http`] reads it back as it was.
    pub fn to_http(&self) -> (&'static str, String, Value) {
        let at = |sid: &str, verb: &str| format!("/__host/sessions/{sid}/{verb}");
        let text = |s: &String| Some(Value::str(s));
        match self {
            ControlRequest::Stats => ("GET", "/__host/stats".into(), empty()),
            ControlRequest::Drain => ("POST", "/__host/drain".into(), empty()),
            ControlRequest::Versions => ("GET", "/__host/versions".into(), empty()),
            ControlRequest::Warm { version_id, bundle_url } => {
                ("POST", "/__host/versions".into(), object([("versionId", Value::str(version_id)), ("bundleUrl", Value::str(bundle_url))]))
            }
            ControlRequest::Open(open) => (
                "POST",
                "/__host/sessions".into(),
                members([
                    ("sessionId", text(&open.session_id)),
                    ("versionId", text(&open.version_id)),
                    ("bundleUrl", text(&open.bundle_url)),
                    ("token", open.token.as_ref().and_then(text)),
                    ("task", open.task.as_ref().and_then(text)),
                    ("taskSpec", open.task_spec.as_ref().map(|spec| spec.to_value())),
                    ("restore", open.restore.clone()),
                ]),
            ),
            ControlRequest::Close { session_id } => ("DELETE", format!("/__host/sessions/{session_id}"), empty()),
            ControlRequest::Renew { session_id } => ("POST", at(session_id, "renew"), empty()),
            ControlRequest::Fork { session_id, fork_id, token } => {
                ("POST", at(session_id, "fork"), members([("sessionId", text(fork_id)), ("token", token.as_ref().and_then(text))]))
            }
            ControlRequest::Reset { session_id } => ("POST", at(session_id, "reset"), empty()),
            ControlRequest::Seed { session_id, args } => ("POST", at(session_id, "seed"), object([("args", args.clone())])),
            ControlRequest::State { session_id } => ("GET", at(session_id, "state"), empty()),
            ControlRequest::Configure { session_id, settings } => ("POST", at(session_id, "configure"), settings.clone()),
            ControlRequest::Grade { session_id } => ("POST", at(session_id, "grade"), empty()),
            ControlRequest::Call { session_id, tool, args } => {
                ("POST", at(session_id, "call"), object([("tool", Value::str(tool)), ("args", args.clone())]))
            }
            ControlRequest::Export { session_id, known_sha256 } => {
                ("POST", at(session_id, "export"), members([("knownSha256", known_sha256.as_ref().and_then(text))]))
            }
            ControlRequest::UploadExport { session_id, export_id, url } => {
                ("POST", at(session_id, &format!("export/{export_id}")), object([("url", Value::str(url))]))
            }
        }
    }
}

impl WorldHost {
    /// Run one control request: what `/__host/*` answers with 200, or the refusal it
    /// maps to a status ([`HostError::answer`]).
    pub fn control(&self, request: ControlRequest) -> Result<Value, HostError> {
        Ok(match request {
            ControlRequest::Stats => self.stats(),
            ControlRequest::Drain => self.drain(),
            ControlRequest::Versions => object([("versions", Value::Array(self.versions.ids().into_iter().map(Value::Str).collect()))]),
            ControlRequest::Warm { version_id, bundle_url } => self.warm(&version_id, &bundle_url)?,
            ControlRequest::Open(open) => self.open(open)?,
            ControlRequest::Close { session_id } => self.close(&session_id),
            ControlRequest::Renew { session_id } => self.renew(&session_id)?,
            ControlRequest::Fork { session_id, fork_id, token } => self.fork(&session_id, &fork_id, token)?,
            ControlRequest::Reset { session_id } => self.reset(&session_id)?,
            ControlRequest::Seed { session_id, args } => self.seed(&session_id, &args)?,
            ControlRequest::State { session_id } => self.state(&session_id)?,
            ControlRequest::Configure { session_id, settings } => self.configure(&session_id, &settings)?,
            ControlRequest::Grade { session_id } => self.grade(&session_id)?,
            ControlRequest::Call { session_id, tool, args } => self.call(&session_id, &tool, &args)?,
            ControlRequest::Export { session_id, known_sha256 } => self.export(&session_id, known_sha256.as_deref())?,
            ControlRequest::UploadExport { session_id, export_id, url } => {
                // The export is PUT wherever the URL says: only a presigned URL is one.
                if !is_upload_url(&url) {
                    return Err(refuse("host", "url must be the presigned upload url"));
                }
                self.upload_export(&session_id, &export_id, &url)?
            }
        })
    }
}

/// Equal when every member is; JSON members by JSON's equality ([`json_equal`]: `1`
/// and `1.0` are one argument, as on the wire).
impl PartialEq for ControlRequest {
    fn eq(&self, other: &Self) -> bool {
        use ControlRequest as R;
        match (self, other) {
            (R::Stats, R::Stats) | (R::Drain, R::Drain) | (R::Versions, R::Versions) => true,
            (R::Warm { version_id: a, bundle_url: x }, R::Warm { version_id: b, bundle_url: y }) => a == b && x == y,
            (R::Open(a), R::Open(b)) => a == b,
            (R::Close { session_id: a }, R::Close { session_id: b })
            | (R::Renew { session_id: a }, R::Renew { session_id: b })
            | (R::Reset { session_id: a }, R::Reset { session_id: b })
            | (R::State { session_id: a }, R::State { session_id: b })
            | (R::Grade { session_id: a }, R::Grade { session_id: b }) => a == b,
            (R::Fork { session_id: a, fork_id: x, token: s }, R::Fork { session_id: b, fork_id: y, token: t }) => {
                a == b && x == y && s == t
            }
            (R::Seed { session_id: a, args: x }, R::Seed { session_id: b, args: y })
            | (R::Configure { session_id: a, settings: x }, R::Configure { session_id: b, settings: y }) => a == b && json_equal(x, y),
            (R::Call { session_id: a, tool: s, args: x }, R::Call { session_id: b, tool: t, args: y }) => {
                a == b && s == t && json_equal(x, y)
            }
            (R::Export { session_id: a, known_sha256: s }, R::Export { session_id: b, known_sha256: t }) => a == b && s == t,
            (R::UploadExport { session_id: a, export_id: x, url: s }, R::UploadExport { session_id: b, export_id: y, url: t }) => {
                a == b && x == y && s == t
            }
            _ => false,
        }
    }
}

/// Equal when every member is; the task spec (normalised) and the restore by JSON's equality.
impl PartialEq for OpenRequest {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &Option<Value>, b: &Option<Value>| match (a, b) {
            (Some(a), Some(b)) => json_equal(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        let spec = |open: &OpenRequest| open.task_spec.as_ref().map(|spec| spec.to_value());
        self.session_id == other.session_id
            && self.version_id == other.version_id
            && self.bundle_url == other.bundle_url
            && self.task == other.task
            && same(&spec(self), &spec(other))
            && self.token == other.token
            && same(&self.restore, &other.restore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        gateway_world::json::parse(text).expect("test JSON").value
    }

    fn every_request() -> Vec<ControlRequest> {
        let sid = || "ws-1".to_string();
        vec![
            ControlRequest::Stats,
            ControlRequest::Drain,
            ControlRequest::Versions,
            ControlRequest::Warm { version_id: "v1".into(), bundle_url: "file:///b.tgz".into() },
            ControlRequest::Open(OpenRequest {
                session_id: sid(),
                version_id: "v1".into(),
                bundle_url: "https://hub/b.tgz".into(),
                task: Some("backlog".into()),
                token: Some("t0k".into()),
                ..OpenRequest::default()
            }),
            ControlRequest::Open(OpenRequest {
                session_id: sid(),
                version_id: "v1".into(),
                bundle_url: "https://hub/b.tgz".into(),
                task_spec: Some(Arc::new(TaskSpec::parse(&json(r#"{"instruction": "solve 101", "tools": ["solve_ticket"]}"#)).unwrap())),
                restore: Some(json(r#"{"url": "file:///e.sqlite", "sha256": "ab"}"#)),
                ..OpenRequest::default()
            }),
            ControlRequest::Close { session_id: sid() },
            ControlRequest::Renew { session_id: sid() },
            ControlRequest::Fork { session_id: sid(), fork_id: "ws-2".into(), token: Some("t1".into()) },
            ControlRequest::Fork { session_id: sid(), fork_id: "ws-3".into(), token: None },
            ControlRequest::Reset { session_id: sid() },
            ControlRequest::Seed { session_id: sid(), args: json(r#"{"rows": {"tickets": [{"id": 1}]}, "mode": "replace"}"#) },
            ControlRequest::State { session_id: sid() },
            ControlRequest::Configure { session_id: sid(), settings: json(r#"{"clock": "2026-01-01T00:00:00Z", "seed": 7}"#) },
            ControlRequest::Grade { session_id: sid() },
            ControlRequest::Call { session_id: sid(), tool: "get_ticket".into(), args: json(r#"{"path": {"id": 101}, "query": {}}"#) },
            ControlRequest::Export { session_id: sid(), known_sha256: Some("cafe".into()) },
            ControlRequest::Export { session_id: sid(), known_sha256: None },
            ControlRequest::UploadExport { session_id: sid(), export_id: "e1".into(), url: "https://bucket/put?sig=1".into() },
        ]
    }

    #[test]
    fn every_request_reads_back_as_it_was_written() {
        for request in every_request() {
            let (method, path, body) = request.to_http();
            let read = ControlRequest::from_http(method, &path, &body).expect("a written request reads");
            assert_eq!(read.as_ref(), Some(&request), "{method} {path}");
        }
    }

    #[test]
    fn the_routes_are_the_original_ones() {
        let paths: Vec<String> = every_request().iter().map(|r| format!("{} {}", r.to_http().0, r.to_http().1)).collect();
        for expected in [
            "GET /__host/stats",
            "POST /__host/drain",
            "POST /__host/sessions",
            "DELETE /__host/sessions/ws-1",
            "POST /__host/sessions/ws-1/fork",
            "GET /__host/sessions/ws-1/state",
            "POST /__host/sessions/ws-1/call",
            "POST /__host/sessions/ws-1/export/e1",
        ] {
            assert!(paths.iter().any(|p| p == expected), "{expected} among {paths:?}");
        }
        let (_, _, body) = every_request()[4].to_http();
        assert_eq!(
            gateway_world::json::canonical(&body),
            gateway_world::json::canonical(&json(
                r#"{"sessionId": "ws-1", "versionId": "v1", "bundleUrl": "https://hub/b.tgz", "token": "t0k", "task": "backlog"}"#
            ))
        );
    }

    #[test]
    fn http_refusals_are_kept() {
        let missing = ControlRequest::from_http("POST", "/__host/sessions", &json(r#"{"versionId": "v1"}"#)).unwrap_err();
        assert!(matches!(missing, HostError::MissingField(ref f) if f == "sessionId"), "{missing:?}");
        // A remote open's spec is parsed as it is read: refused with the spec's own code,
        // after the one-task rule, as the open itself refused them.
        let open = |extra: &str| {
            let body = format!(r#"{{"sessionId": "s", "versionId": "v1", "bundleUrl": "file:///b"{extra}}}"#);
            ControlRequest::from_http("POST", "/__host/sessions", &json(&body)).unwrap_err()
        };
        assert_eq!(open(r#", "taskSpec": {"instruction": ""}"#).code(), "task");
        let both = open(r#", "task": "backlog", "taskSpec": {"instruction": ""}"#);
        assert!(both.to_string().contains("one of the two"), "{both}");
        assert!(open("").to_string().contains("one of the two"));
        let tool = ControlRequest::from_http("POST", "/__host/sessions/s/call", &json(r#"{"tool": 3}"#)).unwrap_err();
        assert_eq!((tool.code(), tool.to_string().ends_with(": tool must be a string")), ("host", true), "{tool}");
        assert!(ControlRequest::from_http("POST", "/__host/nothing", &empty()).unwrap().is_none());
        assert!(ControlRequest::from_http("PUT", "/__host/sessions/s/grade", &empty()).unwrap().is_none());
        assert!(ControlRequest::from_http("POST", "/__host/sessions/s/dance", &empty()).unwrap().is_none());
        // A missing or odd upload URL is read, and refused when run (as the route did).
        let upload = ControlRequest::from_http("POST", "/__host/sessions/s/export/e", &json(r#"{"url": 5}"#)).unwrap();
        assert!(matches!(upload, Some(ControlRequest::UploadExport { ref url, .. }) if url.is_empty()));
    }
}
