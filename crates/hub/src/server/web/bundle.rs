//! Files read out of a stored version's tarball for the pages: the object streams from
//! the object store into a blocking tar reader chunk by chunk, so a bundle is never held
//! whole; only the members asked for are kept, each up to a cap. Not extraction: nothing
//! is written to disk (`gateway_bundle::extract::safe_extract_file` is for that).

use super::super::state::Hub;
use crate::error::HubError;
use crate::store::{read_blocking, Version};
use std::io::Read;

/// One member read from a bundle.
pub(super) struct Member {
    /// Its path in the tarball.
    pub path: String,
    /// Its bytes, at most the cap asked for.
    pub bytes: Vec<u8>,
    /// Its full size.
    pub size: u64,
}

impl Member {
    /// Whether `bytes` holds only part of the member.
    pub fn truncated(&self) -> bool {
        (self.bytes.len() as u64) < self.size
    }
}

/// The members of `version`'s bundle whose paths `wanted` accepts, each cut at
/// `max_bytes`; reading stops after `stop_after` members when given.
pub(super) async fn members(
    hub: &Hub,
    version: &Version,
    wanted: impl Fn(&str) -> bool + Send + 'static,
    max_bytes: u64,
    stop_after: Option<usize>,
) -> Result<Vec<Member>, HubError> {
    if !version.uploaded {
        return Err(HubError::NotFound(format!("version {} has no bundle stored", version.id)));
    }
    let stream = hub
        .objects
        .open(&version.object_key)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("the bundle of version {} is missing from the object store", version.id)))?;
    read_blocking(stream, move |reader| scan(reader, wanted, max_bytes, stop_after)).await??
}

fn scan(reader: impl Read, wanted: impl Fn(&str) -> bool, max_bytes: u64, stop_after: Option<usize>) -> Result<Vec<Member>, HubError> {
    let bad = |e: std::io::Error| HubError::BadRequest(format!("the bundle is not a readable .tar.gz: {e}"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut out = Vec::new();
    for entry in archive.entries().map_err(bad)? {
        let entry = entry.map_err(bad)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path_bytes()).trim_start_matches("./").to_string();
        if !wanted(&path) {
            continue;
        }
        let size = entry.header().size().map_err(bad)?;
        let mut bytes = Vec::with_capacity(size.min(max_bytes) as usize);
        entry.take(max_bytes).read_to_end(&mut bytes).map_err(bad)?;
        out.push(Member { path, bytes, size });
        if stop_after.is_some_and(|n| out.len() >= n) {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_bundle::archive::{gzip_bytes, tar_bytes};

    #[test]
    fn members_are_picked_and_capped() {
        let files = vec![
            ("a.txt".to_string(), b"alpha".to_vec()),
            ("data/initial.json".to_string(), b"{\"mutations\": []}".to_vec()),
            ("big.bin".to_string(), vec![7u8; 10_000]),
        ];
        let tgz = gzip_bytes(&tar_bytes(&files));
        let picked = scan(&tgz[..], |p| p != "a.txt", 100, None).unwrap();
        assert_eq!(picked.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(), ["data/initial.json", "big.bin"]);
        assert!(!picked[0].truncated());
        assert!(picked[1].truncated() && picked[1].bytes.len() == 100 && picked[1].size == 10_000);
        assert_eq!(scan(&tgz[..], |_| true, 100, Some(1)).unwrap().len(), 1);
        assert!(scan(&b"not a tarball"[..], |_| true, 100, None).is_err());
    }
}
