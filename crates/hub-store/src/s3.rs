//! [`ObjectStore`] on any S3-compatible bucket (`--objects s3://bucket[/prefix]?…`), through
//! the `object_store` crate (feature `aws`). Credentials come from the standard AWS
//! environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_DEFAULT_REGION`/`AWS_REGION`, `AWS_ENDPOINT_URL`…); the URL's
//! query may set `endpoint`, `region` and `virtual_hosted=true`.
//!
//! Clients never talk to the bucket: they PUT/GET the hub's own signed `/objects/…` URLs
//! (unchanged contract, checksum verified by the hub before storing), and the hub stores
//! into / streams out of the bucket behind them. Every hub process therefore needs the
//! bucket credentials, and no client does.

use crate::error::StoreError;
use crate::store::{check_object_key, ByteStream, ObjectStore, ObjectWriter, StoreResult};
use async_trait::async_trait;
use bytes::Bytes;
use gateway_common::url::unquote_plus;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore as _;
use object_store::RetryConfig;
use std::time::Duration;

/// Objects in an S3-compatible bucket, under an optional key prefix.
#[derive(Debug)]
pub struct S3Objects {
    store: AmazonS3,
    prefix: String,
    url: String,
}

/// The parts of an `s3://bucket[/prefix][?endpoint=…&region=…&virtual_hosted=…]` URL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct S3Url {
    /// Bucket name.
    pub bucket: String,
    /// Key prefix without leading or trailing `/` (may be empty).
    pub prefix: String,
    /// Endpoint (`http://127.0.0.1:9000`); AWS when absent.
    pub endpoint: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// Virtual-hosted-style requests (`bucket.host`) instead of path style.
    pub virtual_hosted: bool,
}

impl S3Url {
    /// Parse an `s3://` URL, refusing what would be silently ignored.
    pub fn parse(url: &str) -> StoreResult<S3Url> {
        let bad = |why: &str| {
            StoreError::BadRequest(format!(
                "invalid --objects URL '{url}': {why} (use s3://bucket[/prefix]?endpoint=http://host:port&region=us-east-1)"
            ))
        };
        let rest = url.strip_prefix("s3://").ok_or_else(|| bad("not an s3:// URL"))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket"));
        }
        let prefix = prefix.trim_matches('/').to_string();
        if !prefix.is_empty() {
            check_object_key(&prefix).map_err(|_| bad("the prefix must be plain path segments"))?;
        }
        let mut parsed = S3Url { bucket: bucket.to_string(), prefix, ..S3Url::default() };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = unquote_plus(value);
            match name {
                "endpoint" => parsed.endpoint = Some(value),
                "region" => parsed.region = Some(value),
                "virtual_hosted" => parsed.virtual_hosted = matches!(value.as_str(), "true" | "1" | "yes"),
                other => return Err(bad(&format!("unknown parameter '{other}'"))),
            }
        }
        Ok(parsed)
    }
}

impl S3Objects {
    /// Open the bucket of an `s3://` URL, credentials from the environment, and check
    /// that it answers (a missing bucket or wrong credentials fail here, not at the
    /// first push).
    pub async fn open(url: &str) -> StoreResult<S3Objects> {
        let parsed = S3Url::parse(url)?;
        // Retries on 5xx and connection errors, but not for minutes: a request fails
        // (answering 500 to the client) after 30 s.
        let retry = RetryConfig { max_retries: 5, retry_timeout: Duration::from_secs(30), ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&parsed.bucket).with_retry(retry);
        if let Some(region) = &parsed.region {
            builder = builder.with_region(region);
        }
        if let Some(endpoint) = &parsed.endpoint {
            builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
        }
        if parsed.virtual_hosted {
            builder = builder.with_virtual_hosted_style_request(true);
        }
        let store = builder.build().map_err(|e| StoreError::BadRequest(format!("--objects {url}: {e}")))?;
        let objects = S3Objects { store, prefix: parsed.prefix, url: url.to_string() };
        // A probe: listing answers even for an empty prefix, so any error (a 404 here is
        // a missing bucket) is a setup error.
        let probe = if objects.prefix.is_empty() {
            None
        } else {
            Some(ObjectPath::parse(&objects.prefix).map_err(|e| StoreError::BadRequest(e.to_string()))?)
        };
        match objects.store.list_with_delimiter(probe.as_ref()).await {
            Ok(_) => Ok(objects),
            Err(source) => Err(StoreError::BucketSilent { url: url.to_string(), source }),
        }
    }

    fn path(&self, key: &str) -> StoreResult<ObjectPath> {
        check_object_key(key)?;
        let full = if self.prefix.is_empty() { key.to_string() } else { format!("{}/{key}", self.prefix) };
        ObjectPath::parse(&full).map_err(|e| StoreError::BadRequest(format!("invalid object key {key}: {e}")))
    }
}

/// An S3 object being written as a multipart upload: parts go out as they fill, the
/// object appears on completion, and an abort discards the parts.
struct S3Writer {
    upload: Option<object_store::WriteMultipart>,
    what: String,
}

/// A multipart upload's failure while `step`ping `what`.
fn upload_failed(step: &'static str, what: &str, source: object_store::Error) -> StoreError {
    StoreError::Upload { step, what: what.to_string(), source }
}

/// Parts in flight at once per upload.
const PARTS_IN_FLIGHT: usize = 4;

#[async_trait]
impl ObjectWriter for S3Writer {
    async fn write(&mut self, chunk: Bytes) -> StoreResult<()> {
        let upload = self.upload.as_mut().expect("open until commit or abort");
        upload.wait_for_capacity(PARTS_IN_FLIGHT).await.map_err(|source| upload_failed("storing", &self.what, source))?;
        upload.write(&chunk);
        Ok(())
    }

    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        let upload = self.upload.take().expect("open until commit or abort");
        upload.finish().await.map_err(|source| upload_failed("storing", &self.what, source))?;
        Ok(())
    }

    async fn abort(mut self: Box<Self>) -> StoreResult<()> {
        let upload = self.upload.take().expect("open until commit or abort");
        upload.abort().await.map_err(|source| upload_failed("abandoning", &self.what, source))
    }
}

#[async_trait]
impl ObjectStore for S3Objects {
    async fn writer(&self, key: &str) -> StoreResult<Box<dyn ObjectWriter>> {
        let path = self.path(key)?;
        let what = format!("{key} in {}", self.url);
        let upload = self.store.put_multipart(&path).await.map_err(|source| upload_failed("storing", &what, source))?;
        Ok(Box::new(S3Writer { upload: Some(object_store::WriteMultipart::new(upload)), what }))
    }

    async fn open(&self, key: &str) -> StoreResult<Option<ByteStream>> {
        use futures_util::TryStreamExt as _;
        let path = self.path(key)?;
        match self.store.get(&path).await {
            Ok(found) => Ok(Some(Box::pin(found.into_stream().map_err(StoreError::from)))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        let path = self.path(key)?;
        match self.store.head(&path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn delete(&self, key: &str) -> StoreResult<()> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::S3Url;

    #[test]
    fn s3_urls_parse() {
        let u = S3Url::parse("s3://hub/bundles/prod/?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=eu-west-1").unwrap();
        assert_eq!(u.bucket, "hub");
        assert_eq!(u.prefix, "bundles/prod");
        assert_eq!(u.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(u.region.as_deref(), Some("eu-west-1"));
        let plain = S3Url::parse("s3://b?endpoint=http://localhost:9000").unwrap();
        assert_eq!((plain.prefix.as_str(), plain.endpoint.as_deref()), ("", Some("http://localhost:9000")));
        assert!(S3Url::parse("s3://").is_err());
        assert!(S3Url::parse("s3://b?colour=red").is_err());
        assert!(S3Url::parse("s3://b/../x").is_err());
        assert!(S3Url::parse("file:/x").is_err());
    }
}
