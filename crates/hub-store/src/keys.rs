//! The hub's key material under `--data/keys` (the URL-signing key, the secrets key
//! that seals stored secrets) and the project keys' pairs and their hashes.

use crate::error::{SecretFailure, StoreError};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Key material kept under `--data/keys`: the URL-signing key and the secrets key.
#[derive(Clone)]
pub struct Keys {
    signing: Vec<u8>,
    secrets: Vec<u8>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    /// Load the keys from `dir`, creating them (mode 0600) on first use.
    pub fn load_or_create(dir: &Path) -> Result<Keys, StoreError> {
        crate::util::private_dir(dir)?;
        let read = |name: &str| -> Result<Vec<u8>, StoreError> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) if bytes.len() == 32 => Ok(bytes),
                Ok(_) => Err(SecretFailure::KeyFile(path.display().to_string()).into()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let key = crate::util::random_bytes(32);
                    write_private(&path, &key)?;
                    Ok(key)
                }
                Err(e) => Err(StoreError::io(&path, e)),
            }
        };
        Ok(Keys { signing: read("signing.key")?, secrets: read("secrets.key")? })
    }

    /// The HMAC-SHA256 of `text` under the URL-signing key, in hex.
    pub fn sign(&self, text: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.signing).expect("any key length");
        mac.update(text.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Encrypt a secret value (AES-256-GCM, random nonce, bound to its container and key).
    pub fn seal(&self, aad: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        let cipher = Aes256Gcm::new_from_slice(&self.secrets).map_err(|_| SecretFailure::KeyLength)?;
        let nonce = crate::util::random_bytes(12);
        let mut out = nonce.clone();
        let sealed =
            cipher.encrypt(Nonce::from_slice(&nonce), Payload { msg: value, aad: aad.as_bytes() }).map_err(|_| SecretFailure::Encrypt)?;
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Decrypt a sealed value.
    pub fn open(&self, aad: &str, sealed: &[u8]) -> Result<Vec<u8>, StoreError> {
        if sealed.len() < 12 {
            return Err(SecretFailure::TooShort.into());
        }
        let cipher = Aes256Gcm::new_from_slice(&self.secrets).map_err(|_| SecretFailure::KeyLength)?;
        cipher
            .decrypt(Nonce::from_slice(&sealed[..12]), Payload { msg: &sealed[12..], aad: aad.as_bytes() })
            .map_err(|_| StoreError::from(SecretFailure::WrongKey))
    }
}

/// Write a new file readable by its owner only (0600).
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write_private(path, bytes)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| StoreError::io(path, e))?;
    file.write_all(bytes).map_err(|e| StoreError::io(path, e))?;
    file.sync_all().map_err(|e| StoreError::io(path, e))
}

/// sha256 hex of a secret key: how key secrets are kept at rest.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new `(public, secret)` key pair: `pk-lf-…` / `sk-lf-…` with 128 random bits each.
pub fn new_key_pair() -> (String, String) {
    (format!("pk-lf-{}", hex::encode(crate::util::random_bytes(16))), format!("sk-lf-{}", hex::encode(crate::util::random_bytes(16))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealing() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::load_or_create(dir.path()).unwrap();
        let sealed = keys.seal("c/K", b"value").unwrap();
        assert!(!sealed.windows(5).any(|w| w == b"value"));
        assert_eq!(keys.open("c/K", &sealed).unwrap(), b"value");
        assert!(keys.open("c/OTHER", &sealed).is_err());
    }
}
