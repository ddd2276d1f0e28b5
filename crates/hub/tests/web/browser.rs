//! Headless Chromium through the web pages: the browser signs in with the form (the
//! cookie is set by the hub and hidden from scripts), opens the worlds, a world, the
//! seed diff, the evaluations page with its chart, a rollout and a session, checks
//! each page's text and elements in the DOM and its screenshot (a PNG of the window's
//! size that is not one flat colour), then signs out. Chromium is driven over the
//! DevTools protocol on a pipe (`--remote-debugging-pipe`: NUL-separated JSON on fds 3
//! and 4, wired through two FIFOs by `sh`), so no WebSocket client is needed. Without
//! Chromium the test says so with a NOTICE and passes. Screenshots are left under
//! `$CARGO_TARGET_TMPDIR/web-screenshots/` for a person to look at.

use super::{fill, start, EVIL};
use gateway_world::json::{self, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 900;
const WAIT: Duration = Duration::from_secs(60);

/// The Chromium to drive: `GATEWAY_TEST_CHROMIUM`, else `chromium` / `chromium-browser` on PATH.
pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GATEWAY_TEST_CHROMIUM").map(PathBuf::from).filter(|p| p.is_file()) {
        return Some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name))).find(|p| p.is_file())
}

/// A Chromium driven over the DevTools protocol, attached to one page.
pub(crate) struct Browser {
    child: Child,
    commands: std::fs::File,
    messages: Receiver<Value>,
    pending: Vec<Value>,
    next_id: i64,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start `binary` headless with a fresh profile and a `WIDTH`×`HEIGHT` page.
    pub(crate) fn start(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (to_chrome, from_chrome) = (profile.path().join("cdp-in"), profile.path().join("cdp-out"));
        for fifo in [&to_chrome, &from_chrome] {
            assert!(Command::new("mkfifo").arg(fifo).status().unwrap().success(), "mkfifo");
        }
        let script = r#"exec "$0" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
            --no-default-browser-check --disable-extensions --disable-background-networking --hide-scrollbars \
            --remote-debugging-pipe --user-data-dir="$1" --window-size=1280,900 about:blank 3<"$2" 4>"$3""#;
        let child = Command::new("sh")
            .args(["-c", script])
            .arg(binary)
            .arg(profile.path().join("profile"))
            .arg(&to_chrome)
            .arg(&from_chrome)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The shell opens fd 3 (our writer unblocks it), then fd 4 (our reader unblocks it).
        let commands = std::fs::OpenOptions::new().write(true).open(&to_chrome).unwrap();
        let replies = std::fs::File::open(&from_chrome).unwrap();
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(replies);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        message.pop();
                        let parsed = json::parse(&String::from_utf8_lossy(&message)).map(|p| p.value).unwrap_or_default();
                        if sender.send(parsed).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut browser = Browser { child, commands, messages, pending: Vec::new(), next_id: 0, session: String::new(), _profile: profile };
        let target = browser.call("Target.createTarget", r#"{"url": "about:blank"}"#);
        let target_id = text(&target, "targetId");
        let attached = browser.call("Target.attachToTarget", &format!(r#"{{"targetId": "{target_id}", "flatten": true}}"#));
        browser.session = text(&attached, "sessionId");
        browser.call("Page.enable", "{}");
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            &format!(r#"{{"width": {WIDTH}, "height": {HEIGHT}, "deviceScaleFactor": 1, "mobile": false}}"#),
        );
        browser
    }

    fn receive(&mut self) -> Value {
        match self.messages.recv_timeout(WAIT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("Chromium did not answer within {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("Chromium closed its DevTools pipe"),
        }
    }

    /// Send a command (to the page once attached) and wait for its result.
    pub(crate) fn call(&mut self, method: &str, params: &str) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let session = if self.session.is_empty() { String::new() } else { format!(r#", "sessionId": "{}""#, self.session) };
        let message = format!(r#"{{"id": {id}, "method": "{method}", "params": {params}{session}}}"#);
        self.commands.write_all(message.as_bytes()).unwrap();
        self.commands.write_all(b"\0").unwrap();
        self.commands.flush().unwrap();
        loop {
            let message = self.receive();
            if message.get("id").and_then(Value::as_f64) == Some(id as f64) {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {}", json::canonical(error));
                }
                return message.get("result").cloned().unwrap_or_default();
            }
            self.pending.push(message);
        }
    }

    /// Wait for the page's next `Page.loadEventFired`.
    fn loaded(&mut self) {
        let started = Instant::now();
        loop {
            if let Some(at) = self.pending.iter().position(|m| m.get("method").and_then(Value::as_str) == Some("Page.loadEventFired")) {
                self.pending.drain(..=at);
                return;
            }
            assert!(started.elapsed() < WAIT, "no load event within {WAIT:?}");
            let message = self.receive();
            self.pending.push(message);
        }
    }

    /// Go to `url` and wait until it has loaded.
    pub(crate) fn open(&mut self, url: &str) {
        self.pending.clear();
        self.call("Page.navigate", &format!(r#"{{"url": {}}}"#, json::canonical(&Value::str(url))));
        self.loaded();
    }

    /// Evaluate `expression` in the page: its value.
    pub(crate) fn eval(&mut self, expression: &str) -> Value {
        let params = format!(r#"{{"expression": {}, "returnByValue": true}}"#, json::canonical(&Value::str(expression)));
        let result = self.call("Runtime.evaluate", &params);
        if let Some(details) = result.get("exceptionDetails") {
            panic!("{expression} threw: {}", json::canonical(details));
        }
        result.get("result").and_then(|r| r.get("value")).cloned().unwrap_or_default()
    }

    /// Evaluate `expression` (which submits a form) and wait for the next page.
    pub(crate) fn submit(&mut self, expression: &str) {
        self.pending.clear();
        self.eval(expression);
        self.loaded();
    }

    /// The page's path and visible text.
    pub(crate) fn where_and_text(&mut self) -> (String, String) {
        let path = self.eval("location.pathname + location.search");
        let body = self.eval("document.body.innerText");
        (path.as_str().unwrap_or_default().to_string(), body.as_str().unwrap_or_default().to_string())
    }

    /// A PNG screenshot of the window.
    pub(crate) fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", r#"{"format": "png"}"#);
        base64::engine::general_purpose::STANDARD.decode(text(&shot, "data")).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.session.clear();
        let _ = self.commands.write_all(br#"{"id": 999999, "method": "Browser.close", "params": {}}"#);
        let _ = self.commands.write_all(b"\0");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Check a screenshot: a PNG of the window's size, not one flat colour. Returns how many
/// distinct colours it has.
pub(crate) fn check_png(bytes: &[u8], name: &str) -> usize {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), bytes).unwrap();
    let mut decoder = png::Decoder::new(bytes);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (WIDTH, HEIGHT), "{name}: the window's size");
    let channels = frame.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = pixels[..frame.buffer_size()].chunks(channels).collect();
    assert!(colours.len() > 8, "{name}: a blank screenshot ({} colours)", colours.len());
    colours.len()
}

#[test]
fn chromium_signs_in_and_renders_every_page() {
    let Some(binary) = chromium() else {
        gateway_test_support::absent(
            "chromium",
            "no Chromium (apt-get install -y chromium, or GATEWAY_TEST_CHROMIUM); skipping the browser test",
        );
        return;
    };
    let hub = start(None);
    let work = tempfile::tempdir().unwrap();
    let filled = fill(&hub, work.path(), true);
    let mut browser = Browser::start(&binary);
    let base = hub.api.clone();

    // Not signed in: the sign-in form, remembering the page asked for.
    browser.open(&format!("{base}/ui/w/helpdesk/evaluations"));
    let (path, body) = browser.where_and_text();
    assert!(path.starts_with("/ui/login?next="), "{path}");
    assert!(body.contains("Sign in to this hub"), "{body}");
    check_png(&browser.screenshot(), "login");

    // Sign in with the form: back on the evaluations page, with a cookie scripts cannot read.
    let fill_form = format!(
        "document.getElementById('public_key').value = {}; document.getElementById('secret_key').value = {}; \
         document.querySelector('form.login').submit()",
        json::canonical(&Value::str(&hub.one.0)),
        json::canonical(&Value::str(&hub.one.1)),
    );
    browser.submit(&fill_form);
    let (path, body) = browser.where_and_text();
    assert_eq!(path, "/ui/w/helpdesk/evaluations");
    assert!(body.contains("Mean reward per version") && body.contains("Evaluations"), "{body}");
    assert!(body.contains(EVIL), "a <script> model name is shown as text: {body}");
    assert_eq!(browser.eval("document.querySelectorAll('svg rect').length").as_f64(), Some(2.0));
    assert_eq!(browser.eval("document.querySelectorAll('script').length").as_f64(), Some(0.0));
    assert_eq!(browser.eval("document.cookie").as_str(), Some(""), "the session cookie is HttpOnly");
    let load = browser.eval("performance.getEntriesByType('navigation')[0].loadEventEnd");
    eprintln!("evaluations page loaded in {:.1} ms (Chromium's loadEventEnd)", load.as_f64().unwrap_or(-1.0));
    let colours = check_png(&browser.screenshot(), "evaluations");
    eprintln!("evaluations screenshot: {colours} colours");

    // Every other page.
    let pages = [
        ("worlds", "/ui/".to_string(), "Help <script>"),
        ("world", "/ui/w/helpdesk".to_string(), "v-one"),
        ("files", format!("/ui/w/helpdesk/v/{}", filled.v2), "data/batches/0001.json"),
        ("file", format!("/ui/w/helpdesk/v/{}/f/data/initial.json", filled.v1), "SSO login loops back"),
        ("diff", format!("/ui/w/helpdesk/diff?base={}&head={}", filled.v1, filled.v2), "Barbara Liskov"),
        ("evaluation", format!("/ui/w/helpdesk/evaluations/{}", filled.evaluations[0]), "Rollouts"),
        ("transcript", format!("/ui/w/helpdesk/evaluations/{}/samples/{}", filled.evaluations[0], filled.sample), "solve_ticket"),
        ("sessions", "/ui/sessions".to_string(), "solve-101"),
        ("session", format!("/ui/sessions/{}", filled.session.clone().unwrap()), "Solve ticket 101. <script>"),
    ];
    for (name, path, expected) in pages {
        browser.open(&format!("{base}{path}"));
        let (at, body) = browser.where_and_text();
        assert_eq!(at, path, "{name}: not redirected");
        assert!(body.contains(expected), "{name}: {expected:?} in {body}");
        assert_eq!(browser.eval("document.querySelectorAll('script').length").as_f64(), Some(0.0), "{name}");
        check_png(&browser.screenshot(), name);
    }
    // Another project's world is a 404 page, even signed in.
    browser.open(&format!("{base}/ui/w/other"));
    assert!(browser.where_and_text().1.contains("Not found"));

    // Sign out: the next page asks to sign in again.
    browser.submit("document.querySelector('header form').submit()");
    assert!(browser.where_and_text().0.starts_with("/ui/login"));
    browser.open(&format!("{base}/ui/"));
    let (path, _) = browser.where_and_text();
    assert!(path.starts_with("/ui/login"), "{path}");
}
