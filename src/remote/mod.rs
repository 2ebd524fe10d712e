//! NEFFs that live in S3 or behind an HTTP(S) server, read by ranged
//! requests instead of downloaded (feature `remote`).
//!
//! A remote object is one more source of bytes, beside [`crate::map`]: the
//! layers above read it through [`Object::read`] (a ranged GET) and, for the
//! tar walk, through `tar::RangeSource`, which fetches windows of the raw
//! tar around its headers (growing while the walk reads on, small again
//! after a jump over a large member). A gzip payload, which cannot be read
//! by ranges, is spooled ([`Object::spool`]) to an unlinked temporary file
//! and read from its map as a local file is. The client is the `object_store` crate (S3 with the
//! standard AWS environment and credential chain; plain HTTP(S) with Range
//! support); its requests are retried with backoff on 5xx, throttling and
//! timeouts, a bounded number of times, and each has a timeout.
//!
//! The object is pinned by the ETag of the first response: every later
//! range is asked for with `If-Match`, so an object replaced while it is
//! read is [`Error::ObjectChanged`], never a mix of two versions. A server
//! that ignores Range, sends fewer or more bytes than asked, or omits the
//! object's size is refused with one line; nothing here waits without a
//! timeout.
//!
//! Environment (read once per process): the `AWS_*` variables users of
//! `aws s3` and `object_store` set (`AWS_ENDPOINT_URL`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_ALLOW_HTTP`, …; requests to a custom endpoint are path-style), and
//! `NEFF_REMOTE_TIMEOUT` (seconds per request, default 30),
//! `NEFF_REMOTE_RETRIES` (default 4) for slow or flaky servers,
//! `NEFF_REMOTE_CONCURRENCY` (parts of a long range in flight at once,
//! default 4).

use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use crate::error::{Error, Result};

/// Whether `s` names a remote object (`s3://`, `http://` or `https://`)
/// rather than a local path.
pub fn is_url(s: &str) -> bool {
    let lower = |p: &str| s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p);
    lower("s3://") || lower("http://") || lower("https://")
}

/// The runtime the async client runs on: two worker threads for the whole
/// process, whatever the number of callers blocked on it.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("neff-remote")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| remote(format!("cannot start the I/O runtime: {e}")))
}

fn remote(reason: impl Into<String>) -> Error {
    remote_as(std::io::ErrorKind::Other, reason)
}

fn remote_as(io: std::io::ErrorKind, reason: impl Into<String>) -> Error {
    Error::Remote {
        reason: reason.into(),
        io,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Timeouts and retries, from the environment.
fn client_config() -> (ClientOptions, RetryConfig) {
    let timeout = Duration::from_secs(env_u64("NEFF_REMOTE_TIMEOUT", 30).max(1));
    let retries = env_u64("NEFF_REMOTE_RETRIES", 4) as usize;
    let mut client = ClientOptions::new()
        .with_timeout(timeout)
        .with_connect_timeout(timeout.min(Duration::from_secs(10)));
    if std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
        client = client.with_allow_http(true);
    }
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: retries,
        retry_timeout: timeout * (retries as u32 + 1),
    };
    (client, retry)
}

/// The store that serves `url`, and the object's path in it.
fn store_for(url: &str) -> Result<(Arc<dyn ObjectStore>, ObjPath)> {
    let parsed = url::Url::parse(url).map_err(|e| remote(format!("not a valid URL: {e}")))?;
    let (client, retry) = client_config();
    let path = ObjPath::from_url_path(parsed.path())
        .map_err(|e| remote(format!("not a valid object path: {e}")))?;
    let store: Arc<dyn ObjectStore> = match parsed.scheme() {
        "s3" => {
            if parsed.host_str().unwrap_or("").is_empty() {
                return Err(remote("an s3:// URL needs a bucket (s3://BUCKET/KEY)"));
            }
            let mut b = object_store::aws::AmazonS3Builder::from_env()
                .with_url(url)
                .with_client_options(client)
                .with_retry(retry);
            if std::env::var_os("AWS_REGION").is_none()
                && std::env::var_os("AWS_DEFAULT_REGION").is_none()
            {
                b = b.with_region("us-east-1");
            }
            Arc::new(b.build().map_err(|e| remote(one_line(&e)))?)
        }
        "http" | "https" => {
            let base = format!(
                "{}://{}",
                parsed.scheme(),
                &parsed[url::Position::BeforeHost..url::Position::BeforePath]
            );
            let client = if parsed.scheme() == "http" {
                client.with_allow_http(true)
            } else {
                client
            };
            Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(client)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| remote(one_line(&e)))?,
            )
        }
        other => return Err(remote(format!("unsupported URL scheme {other:?}"))),
    };
    Ok((store, path))
}

/// An `object_store` error as one line, in the words a user acts on.
fn describe(e: &object_store::Error, etag: Option<&str>) -> Error {
    use object_store::Error as E;
    use std::io::ErrorKind::{NotFound, PermissionDenied};
    match e {
        E::NotFound { .. } => remote_as(NotFound, "no such object (or no such bucket)"),
        E::Precondition { .. } => Error::ObjectChanged {
            etag: etag.unwrap_or("").to_string(),
        },
        E::PermissionDenied { .. } => {
            remote_as(PermissionDenied, format!("access denied: {}", one_line(e)))
        }
        E::Unauthenticated { .. } => remote_as(
            PermissionDenied,
            format!("not authenticated: {}", one_line(e)),
        ),
        _ => remote(one_line(e)),
    }
}

/// An error's whole chain of causes, on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s.replace(['\n', '\r'], " ")
}

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The object's URL.
    pub url: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag, as the store gives it (with its quotes), or else its last
    /// modification time: what a catalogue compares to skip it.
    pub version: String,
}

/// An object, pinned to the version (ETag) the first response came from.
#[derive(Debug)]
pub struct Object {
    store: Arc<dyn ObjectStore>,
    path: ObjPath,
    size: u64,
    etag: Option<String>,
}

/// Bytes asked for by the first request: the header and, for a raw NEFF,
/// the first tar headers; an object this small is read in that one request.
pub const FIRST: u64 = 256 << 10;

impl Object {
    /// Opens the object at `url` with one GET of its first [`FIRST`] bytes
    /// (all of it when smaller), which gives its size and ETag.
    pub fn open(url: &str) -> Result<(Object, Vec<u8>)> {
        let (store, path) = store_for(url)?;
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..FIRST)),
            ..Default::default()
        };
        let rt = runtime()?;
        let (meta, bytes) = rt.block_on(async {
            let r = store
                .get_opts(&path, opts)
                .await
                .map_err(|e| describe(&e, None))?;
            let meta = r.meta.clone();
            let range = r.range.clone();
            let body = collect(r, range.end - range.start).await?;
            Ok::<_, Error>((meta, body))
        })?;
        let object = Object {
            store,
            path,
            size: meta.size,
            etag: meta.e_tag,
        };
        let want = FIRST.min(object.size);
        if bytes.len() as u64 != want {
            return Err(remote(format!(
                "the server sent {} bytes for the first {want} of a {}-byte object",
                bytes.len(),
                object.size
            )));
        }
        Ok((object, bytes))
    }

    /// The object's size, as its first response said.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The bytes at `range` of the object, handed to `sink` in order as
    /// they arrive; exactly `range.len()` bytes or an error. A range longer
    /// than [`PART`] is fetched as parts of that size, up to
    /// `NEFF_REMOTE_CONCURRENCY` (default 4) GETs in flight at once, each
    /// pinned to the ETag, and handed on in order: a large member or
    /// payload arrives at the speed of several connections (as `aws s3 cp`
    /// fetches one), with at most that many parts held.
    pub fn stream(
        &self,
        range: Range<u64>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        use futures_util::TryStreamExt;
        self.check_range(&range)?;
        let rt = runtime()?;
        if range.end - range.start <= PART {
            return rt.block_on(self.get(range, sink));
        }
        let parts = (range.start..range.end).step_by(PART as usize).map(|at| {
            let part = at..(at + PART).min(range.end);
            async move {
                let mut held = Vec::with_capacity((part.end - part.start) as usize);
                self.get(part, &mut |c| {
                    held.extend_from_slice(c);
                    Ok(())
                })
                .await?;
                Ok::<_, Error>(held)
            }
        });
        rt.block_on(async {
            let mut parts = futures_util::stream::iter(parts).buffered(concurrency());
            while let Some(part) = parts.try_next().await? {
                sink(&part)?;
            }
            Ok(())
        })
    }

    fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.end > self.size || range.start > range.end {
            return Err(remote(format!(
                "bytes {}..{} asked of a {}-byte object",
                range.start, range.end, self.size
            )));
        }
        Ok(())
    }

    /// One GET of `range` (within the object), pinned to the ETag, its
    /// body handed to `sink` as it arrives and checked to be exactly the
    /// bytes asked for.
    async fn get(
        &self,
        range: Range<u64>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if range.start >= range.end {
            return Ok(());
        }
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.etag.clone(),
            ..Default::default()
        };
        let want = range.end - range.start;
        let etag = self.etag.as_deref();
        let r = self
            .store
            .get_opts(&self.path, opts)
            .await
            .map_err(|e| describe(&e, etag))?;
        if r.meta.size != self.size {
            return Err(Error::ObjectChanged {
                etag: etag.unwrap_or("").to_string(),
            });
        }
        if r.range != range {
            return Err(remote(format!(
                "asked for bytes {}..{}, the server sent {}..{}",
                range.start, range.end, r.range.start, r.range.end
            )));
        }
        let mut got = 0u64;
        let mut body = r.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| describe(&e, etag))?;
            got += chunk.len() as u64;
            if got > want {
                return Err(remote(format!(
                    "the server sent more than the {want} bytes asked for"
                )));
            }
            sink(&chunk)?;
        }
        if got != want {
            return Err(remote(format!(
                "truncated body: {got} of {want} bytes at offset {}",
                range.start
            )));
        }
        Ok(())
    }

    /// A local copy of the whole object, for a payload that cannot be read
    /// by ranges (gzip): `first` (its first bytes, as [`open`](Self::open)
    /// gave them) and then the rest in [`PART`]-sized GETs,
    /// `NEFF_REMOTE_CONCURRENCY` in flight, each pinned to the ETag and
    /// written at its place in an unlinked temporary file (in `$TMPDIR`,
    /// gone when closed) as its bytes arrive. Memory holds the chunks in
    /// flight, never a part or the object. Returns the file and its length.
    pub fn spool(&self, first: &[u8]) -> Result<(std::fs::File, u64)> {
        use futures_util::TryStreamExt;
        use std::os::unix::fs::FileExt;
        let file = tempfile::tempfile()?;
        file.write_all_at(first, 0)?;
        let rest = first.len() as u64..self.size;
        self.check_range(&rest)?;
        let file_ref = &file;
        let parts = rest.clone().step_by(PART as usize).map(|at| {
            let part = at..(at + PART).min(rest.end);
            async move {
                let mut pos = part.start;
                self.get(part, &mut |c| {
                    file_ref.write_all_at(c, pos).map_err(Error::Io)?;
                    pos += c.len() as u64;
                    Ok(())
                })
                .await
            }
        });
        runtime()?.block_on(
            futures_util::stream::iter(parts)
                .buffer_unordered(concurrency())
                .try_collect::<()>(),
        )?;
        Ok((file, self.size))
    }

    /// The bytes at `range`, in memory.
    pub fn read(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        let n = range.end.saturating_sub(range.start);
        v.try_reserve_exact(usize::try_from(n).unwrap_or(usize::MAX))
            .map_err(|_| Error::OutOfMemory {
                what: "a range of a remote object",
            })?;
        self.stream(range, &mut |c| {
            v.extend_from_slice(c);
            Ok(())
        })?;
        Ok(v)
    }
}

/// The size of the parts a long range is fetched in.
pub const PART: u64 = 8 << 20;

/// Parts of one range in flight at once (`NEFF_REMOTE_CONCURRENCY`,
/// default 4, 1 to 64): at most this many times [`PART`] bytes held.
fn concurrency() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| env_u64("NEFF_REMOTE_CONCURRENCY", 4).clamp(1, 64) as usize)
}

/// The body of a first response, checked against its announced length.
async fn collect(r: object_store::GetResult, want: u64) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(want.min(FIRST) as usize);
    let mut body = r.into_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| describe(&e, None))?;
        if (v.len() + chunk.len()) as u64 > want {
            return Err(remote(format!(
                "the server sent more than the {want} bytes it announced"
            )));
        }
        v.extend_from_slice(&chunk);
    }
    if (v.len() as u64) < want {
        return Err(remote(format!(
            "truncated body: {} of {want} bytes",
            v.len()
        )));
    }
    Ok(v)
}

/// Every object under the S3 prefix `url` (`s3://bucket/prefix/`) whose
/// key ends in `.neff`, in key order, following the listing's pages.
pub fn list(url: &str) -> Result<Vec<Listed>> {
    let parsed = url::Url::parse(url).map_err(|e| remote(format!("not a valid URL: {e}")))?;
    if parsed.scheme() != "s3" {
        return Err(remote(
            "only s3:// prefixes can be listed (an HTTP server has no listing)",
        ));
    }
    let bucket = parsed.host_str().unwrap_or("").to_string();
    let (store, prefix) = store_for(url)?;
    let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
    let mut out = runtime()?.block_on(async {
        let mut out = Vec::new();
        let mut s = store.list(prefix.as_ref());
        while let Some(m) = s.next().await {
            let m = m.map_err(|e| describe(&e, None))?;
            if !m.location.as_ref().ends_with(".neff") {
                continue;
            }
            out.push(Listed {
                url: format!("s3://{bucket}/{}", m.location),
                size: m.size,
                version: m
                    .e_tag
                    .clone()
                    .unwrap_or_else(|| m.last_modified.to_rfc3339()),
            });
        }
        Ok::<_, Error>(out)
    })?;
    out.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        assert!(is_url("s3://b/k.neff"));
        assert!(is_url("HTTPS://h/k.neff"));
        assert!(is_url("http://127.0.0.1:8080/a.neff"));
        assert!(!is_url("./s3://b/k.neff"));
        assert!(!is_url("s3:/b"));
        assert!(!is_url("model.neff"));
    }

    #[test]
    fn a_bad_url_is_one_line_naming_the_problem() {
        let e = Object::open("s3:///key.neff").unwrap_err().to_string();
        assert!(e.contains("needs a bucket"), "{e}");
        let e = Object::open("ftp://h/x.neff").unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }
}
