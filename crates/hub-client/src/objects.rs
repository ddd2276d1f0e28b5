//! Bundles and wheels moved through the URLs a hub signs for its object store: a
//! bundle's PUT with its sha256 checksum header, a bundle's download streamed to a
//! file and hashed on the way, a wheel's download; a progress bar on a terminal.
//!
//! A signed URL carries its own authority, so these requests carry no hub
//! credentials: they go through the transport's HTTP client only, with a longer
//! budget than a JSON call's. They are the bench client's (push, pull, install).

use crate::ClientError;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::Duration;

/// The budget of a bundle's or a wheel's upload or download.
pub(crate) const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

type Result<T> = std::result::Result<T, ClientError>;

fn progress(len: u64, what: &str) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    Some(bar)
}

struct CountingReader {
    inner: std::io::Cursor<Vec<u8>>,
    bar: Option<indicatif::ProgressBar>,
}

impl Read for CountingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(bar) = &self.bar {
            bar.inc(n as u64);
            if n == 0 {
                bar.finish_and_clear();
            }
        }
        Ok(n)
    }
}

/// PUT `data` at a signed `url`, announcing its base64 sha256 (the store checks it).
pub(crate) fn put(http: &reqwest::blocking::Client, url: &str, data: Vec<u8>, sha256_b64: &str, content_type: &str) -> Result<()> {
    let len = data.len() as u64;
    let reader = CountingReader { inner: std::io::Cursor::new(data), bar: progress(len, "upload") };
    let response = http
        .put(url)
        .timeout(TRANSFER_TIMEOUT)
        .header("Content-Type", content_type)
        .header("x-amz-checksum-sha256", sha256_b64)
        .body(reqwest::blocking::Body::sized(reader, len))
        .send()
        .map_err(|e| ClientError::Unreachable(format!("object PUT -> {e}")))?;
    if !response.status().is_success() {
        let code = response.status().as_u16();
        let detail: String = response.text().unwrap_or_default().chars().take(500).collect();
        return Err(ClientError::Refused(format!("object PUT -> {code}: {detail}")));
    }
    Ok(())
}

/// GET a signed object URL (it carries no hub credentials).
fn get(http: &reqwest::blocking::Client, url: &str) -> reqwest::Result<reqwest::blocking::Response> {
    http.get(url).timeout(TRANSFER_TIMEOUT).send()
}

/// Download a bundle into the file `into`, streamed; the base64 sha256 of its bytes.
pub(crate) fn download_bundle(http: &reqwest::blocking::Client, url: &str, into: &Path) -> Result<String> {
    let mut response = get(http, url).map_err(|e| ClientError::Unreachable(format!("bundle download -> {e}")))?;
    if !response.status().is_success() {
        let code = response.status().as_u16();
        let detail: String = response.text().unwrap_or_default().chars().take(300).collect();
        return Err(ClientError::Refused(format!("bundle download -> {code}: {detail}")));
    }
    let bar = response.content_length().and_then(|len| progress(len, "download"));
    let mut file = std::io::BufWriter::new(std::fs::File::create(into).map_err(|e| ClientError::io(into, e))?);
    let mut digest = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = response.read(&mut buf).map_err(|e| ClientError::Unreachable(format!("bundle download -> {e}")))?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| ClientError::io(into, e))?;
        if let Some(bar) = &bar {
            bar.inc(n as u64);
        }
    }
    file.flush().map_err(|e| ClientError::io(into, e))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(digest.finalize()))
}

/// Download a wheel into the file `to`.
pub(crate) fn download_wheel(http: &reqwest::blocking::Client, url: &str, to: &Path) -> Result<()> {
    let mut response = get(http, url).map_err(|e| ClientError::Unreachable(format!("wheel download -> {e}")))?;
    if !response.status().is_success() {
        return Err(ClientError::Refused(format!("wheel download -> {}", response.status().as_u16())));
    }
    let mut file = std::fs::File::create(to).map_err(|e| ClientError::io(to, e))?;
    std::io::copy(&mut response, &mut file).map_err(|e| ClientError::Unreachable(format!("wheel download -> {e}")))?;
    Ok(())
}
