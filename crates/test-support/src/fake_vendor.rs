//! A fake vendor API for the connector tests (`connector capture` → `ingest` → `conform`):
//! OAuth client credentials, a paged user list with a PII field to redact, a rate-limited
//! and a broken route. `fake-vendor` (src/bin) serves the same vendor on its own so the
//! original CLI can be recorded against it.

use std::io::{BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// The OAuth client secret the vendor accepts (with client id `acme-client`).
pub const SECRET: &str = "sekrit-client-secret";
/// The access token it mints and then requires.
pub const TOKEN: &str = "minted-access-token";
/// The e-mail domain part of its users' addresses.
pub const EMAIL: &str = "ada@example.test";

/// Start the fake vendor on a loopback port (0: the system's choice): it answers up to 200
/// requests on a thread and records each request line and auth header in the log.
pub fn start() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(mut stream) = stream else { continue };
            let Some(request) = crate::RawRequest::read(&mut BufReader::new(stream.try_clone().unwrap())) else { continue };
            let body = String::from_utf8(request.body.clone()).unwrap();
            let auth = request.header("authorization").unwrap_or_default().to_string();
            let target = request.target.clone();
            log.lock().unwrap().push(format!("{} {target} auth={auth}", request.method));
            let authorized = auth == format!("Bearer {TOKEN}");
            let user = |id: &str, name: &str, groups: &str| {
                format!(r#"{{"id": "{id}", "name": "{name}", "email": "{id}-{EMAIL}", "ssn": "123-45-6789", "groups": [{groups}]}}"#)
            };
            let (status, extra, payload): (u16, &str, String) = match target.as_str() {
                "/v1/oauth/token" if body.contains(&format!("client_secret={SECRET}")) && body.contains("client_id=acme-client") => {
                    (200, "", format!(r#"{{"access_token": "{TOKEN}", "token_type": "bearer"}}"#))
                }
                "/v1/oauth/token" => (401, "", r#"{"error": "invalid_client"}"#.into()),
                _ if !authorized => (401, "", r#"{"error": "unauthorized"}"#.into()),
                "/v1/users" => (
                    200,
                    "X-RateLimit-Remaining: 9\r\n",
                    format!(
                        r#"{{"results": [{}, {}], "next": "page2"}}"#,
                        user("u1", "Ada", r#"{"name": "admins"}"#),
                        user("u2", "Bo", "")
                    ),
                ),
                "/v1/users?cursor=page2" => {
                    (200, "", format!(r#"{{"results": [{}], "next": ""}}"#, user("u3", "Cy", r#"{"name": "admins"}, {"name": "ops"}"#)))
                }
                "/v1/users/u1" => (200, "", user("u1", "Ada Lovelace", r#"{"name": "admins"}"#)),
                "/v1/limited" => (429, "Retry-After: 30\r\n", r#"{"error": "slow down"}"#.into()),
                "/v1/broken" => (500, "", "<html>oops</html>".into()),
                _ => (404, "", r#"{"error": "not found"}"#.into()),
            };
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                payload.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, seen)
}
