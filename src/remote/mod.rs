//! NEFFs that live in S3 or behind an HTTP(S) server, read by ranged
//! requests instead of downloaded (feature `remote`).
//!
//! A remote object is one more source of bytes, beside [`crate::map`]: the
//! layers above read it through [`Object::read`] (a ranged GET) and, for the
//! tar walk, through `tar::RangeSource`, which at each skip over member
//! data reads through it ([`Object::read_ahead`]: parts in flight, in
//! order) or hops over it with a new request, as the link's measured cost
//! says ([`link`]: a round trip's worth of bytes; a cap on the bytes moved
//! per object, [`set_byte_cap`]). A gzip payload, which cannot be read
//! by ranges, is read whole: as a `Read` over its parts as they arrive
//! ([`Object::reader`], inflated as it comes), or, when it is large enough
//! for parallel rounds and a thread is free for them, spooled to an
//! unlinked temporary file whose map is read while the parts land in it
//! ([`Object::spool_landing`], [`landing::Landing::wait`] before each
//! read). The client is the `object_store` crate (S3 with the
//! standard AWS environment and credential chain; plain HTTP(S) with Range
//! support); its requests are retried with backoff on 5xx, throttling and
//! timeouts, a bounded number of times, and each has a timeout.
//!
//! The object is pinned by the ETag of the first response: every later
//! range is asked for with `If-Match`, so an object replaced while it is
//! read is [`Error::ObjectChanged`], never a mix of two versions. A server
//! that sends fewer or more bytes than asked, or omits the object's size,
//! is refused with one line; nothing here waits without a timeout.
//!
//! A server that ignores Range (it answers a ranged GET with `200` and the
//! whole object; `object_store` reports that as an error, see
//! [`ignores_range`]) is read whole instead, at the first request or at a
//! later one: one streamed GET without Range (pinned to the ETag when one
//! is known), written as its chunks arrive to an unlinked temporary file,
//! from which every later read of the object is served (a NEFF opened so is
//! read as a local file). That GET has no overall timeout, only one of
//! `NEFF_REMOTE_TIMEOUT` between two reads of its body. An object larger
//! than `NEFF_REMOTE_SPOOL_MAX` is refused before its body is read. The
//! debug log (`-vv`, `RUST_LOG=debug`) says when it happens, and names
//! every request: its range, the bytes it brought and its time.
//!
//! Credentials as AWS users keep them: a profile of `~/.aws/config` and
//! `~/.aws/credentials` (`--profile`, `AWS_PROFILE`; keys or a
//! `credential_process`, `region`, `endpoint_url`: [`profile`]), then the
//! environment's keys, then `object_store`'s chain (instance metadata, web
//! identity). `--no-sign-request` and `--requester-pays`: [`set_access`].
//!
//! Environment (read once per process): the `AWS_*` variables users of
//! `aws s3` and `object_store` set (`AWS_ENDPOINT_URL`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_ALLOW_HTTP`, …; requests to a custom endpoint are path-style), and
//! `NEFF_REMOTE_TIMEOUT` (seconds per request, default 30),
//! `NEFF_REMOTE_RETRIES` (default 4) for slow or flaky servers,
//! `NEFF_REMOTE_SPOOL_MAX` (bytes: the largest object read
//! whole from a server that ignores Range, default 4 GiB).

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig,
};

use crate::error::{Error, Result};

mod ahead;
mod failure;
mod hf;
mod landing;
mod link;
mod profile;
mod redact;
mod version;

/// An `object_store` error as the crate's, in one line ([`failure::describe`]).
fn describe(e: &object_store::Error, etag: Option<&str>) -> Error {
    failure::describe(e, etag, timeout().as_secs())
}

/// A plain HTTP client's error in those words ([`failure::http_words`]).
fn http_words(e: &reqwest::Error) -> String {
    failure::http_words(e, timeout().as_secs())
}

pub use ahead::Parts;
pub use link::{
    cap as byte_cap, set_cap as set_byte_cap, stats, through_below, whole_below, Stats,
};
pub use profile::set_profile;
pub use redact::{redact, redact_text};

/// The bytes one object walked alone reads on in the time of a request
/// made alone, at the depth a read-ahead of it would have
/// ([`link::hop_worth`]); `None` while other objects are open.
pub(crate) fn hop_worth() -> Option<u64> {
    link::hop_worth(ahead::depth())
}

/// Whether `s` names a remote object (`s3://`, `gs://`, `az://`, `hf://`,
/// `http://` or `https://`) rather than a local path.
pub fn is_url(s: &str) -> bool {
    is_listable(s) || has_scheme(s, "http://") || has_scheme(s, "https://")
}

/// Whether `s` starts with `scheme`, in any case.
fn has_scheme(s: &str, scheme: &str) -> bool {
    s.get(..scheme.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(scheme))
}

/// Whether `url` names a store that can be listed (`s3://`, `gs://`,
/// `az://`, `hf://`), not one object behind an HTTP server: a URL of one
/// that does not end in `.neff` is a prefix a scan lists.
pub fn is_listable(url: &str) -> bool {
    ["s3://", "gs://", "az://", "hf://"]
        .iter()
        .any(|b| has_scheme(url, b))
}

fn is_hf(url: &str) -> bool {
    has_scheme(url, "hf://")
}

/// The runtime the async client runs on, one for the process
/// ([`crate::pool::io_runtime`]), whatever the number of callers blocked
/// on it.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    crate::pool::io_runtime().map_err(|e| remote(format!("cannot start the I/O runtime: {e}")))
}

fn remote(reason: impl Into<String>) -> Error {
    remote_as(std::io::ErrorKind::Other, reason)
}

/// An unlinked temporary file for an object read whole, or an error that
/// says where it was to be made (`$TMPDIR`, else /tmp) and why not.
fn spool_file() -> Result<File> {
    tempfile::tempfile().map_err(|e| {
        remote(format!(
            "cannot make a temporary file in {} to spool the object: {e}",
            std::env::temp_dir().display()
        ))
    })
}

/// A remote failure of I/O class `io` (a URL in `reason` made printable).
fn remote_as(io: std::io::ErrorKind, reason: impl Into<String>) -> Error {
    let reason = reason.into();
    Error::Remote {
        reason: redact_text(&reason).into_owned(),
        io,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// How long a request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Timeout {
    /// `NEFF_REMOTE_TIMEOUT` for the whole request, body included: the
    /// ranged GETs, of at most [`PART`] bytes each.
    PerRequest,
    /// `NEFF_REMOTE_TIMEOUT` between two reads of the body, none overall:
    /// the GET of a whole object (from a server that ignores Range), which
    /// may take longer than any one timeout on a slow link.
    PerRead,
}

/// Each request's timeout (`NEFF_REMOTE_TIMEOUT`, seconds, default 30).
fn timeout() -> Duration {
    Duration::from_secs(env_u64("NEFF_REMOTE_TIMEOUT", 30).max(1))
}

/// How many times a failed request is made again (`NEFF_REMOTE_RETRIES`,
/// default 4): by the client before a body, here after a body cut or a
/// listing page that failed.
fn retries() -> u64 {
    env_u64("NEFF_REMOTE_RETRIES", 4)
}

/// The wait before try `tries` + 1 of what failed: 100 ms, doubling, at
/// most 6.4 s.
async fn backoff(tries: u64) {
    tokio::time::sleep(Duration::from_millis(50 << tries.clamp(1, 7))).await;
}

/// The plain HTTP client of the requests `object_store` does not make (the
/// hub's listing pages, the SSO portal), one for the process.
fn http_client() -> Result<&'static reqwest::Client> {
    static C: OnceLock<std::result::Result<reqwest::Client, String>> = OnceLock::new();
    C.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(timeout())
            .connect_timeout(timeout().min(Duration::from_secs(10)))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {}", one_line(&e)))
    })
    .as_ref()
    .map_err(|e| remote(e.clone()))
}

/// The body of `r`, refused past `most` bytes however long the server
/// says it is (or does not say): grown from the bytes received. An error
/// says whether asking again may mend it (a body cut, not one too long).
async fn body_at_most(
    mut r: reqwest::Response,
    most: usize,
) -> std::result::Result<Vec<u8>, (String, bool)> {
    let mut body = Vec::new();
    while let Some(chunk) = r.chunk().await.map_err(|e| (http_words(&e), true))? {
        if body.len() + chunk.len() > most {
            return Err((format!("an answer over {most} bytes"), false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Timeouts and retries, from the environment.
fn client_config(kind: Timeout) -> (ClientOptions, RetryConfig) {
    let timeout = timeout();
    let retries = retries() as usize;
    let client = ClientOptions::new().with_connect_timeout(timeout.min(Duration::from_secs(10)));
    let mut client = match kind {
        Timeout::PerRequest => client.with_timeout(timeout),
        Timeout::PerRead => client.with_timeout_disabled().with_read_timeout(timeout),
    };
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

/// The AWS profile in use, read once per process ([`profile::load`]).
fn aws_profile() -> Result<Option<&'static profile::Profile>> {
    static P: OnceLock<std::result::Result<Option<profile::Profile>, String>> = OnceLock::new();
    match P.get_or_init(|| profile::load().map_err(|e| e.to_string())) {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(remote(e.clone())),
    }
}

/// The keys of a profile's SSO role: its cached token exchanged at the
/// SSO portal, once per process.
fn sso_role_keys(login: &profile::SsoLogin) -> Result<profile::Keys> {
    static KEYS: OnceLock<std::result::Result<profile::Keys, String>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let http = http_client().map_err(|e| e.to_string())?;
        let rt = runtime().map_err(|e| e.to_string())?;
        rt.block_on(async {
            let _counted = link::Request::start();
            let r = http
                .get(&login.url)
                .header("x-amz-sso_bearer_token", &login.token)
                .send()
                .await
                .map_err(|e| format!("the SSO portal: {}", http_words(&e)))?;
            let status = r.status();
            let body = body_at_most(r, 1 << 20)
                .await
                .map_err(|(e, _)| format!("the SSO portal: {e}"))?;
            if !status.is_success() {
                return Err(format!(
                    "the SSO portal refused the cached token ({status}): run `aws sso login` and try again"
                ));
            }
            profile::sso_keys(&body)
        })
    })
    .clone()
    .map_err(remote)
}

/// `--no-sign-request` and `--requester-pays`, as set for this process.
static ACCESS: OnceLock<(bool, bool)> = OnceLock::new();

/// Sends S3 requests unsigned (`no_sign_request`: a public bucket, as the
/// AWS CLI's `--no-sign-request`) and/or says the requester pays
/// (`requester_pays`: a requester-pays bucket). Only the first call counts.
pub fn set_access(no_sign_request: bool, requester_pays: bool) {
    let _ = ACCESS.set((no_sign_request, requester_pays));
}

fn access() -> (bool, bool) {
    ACCESS.get().copied().unwrap_or_default()
}

/// The store that serves `url`, with requests timed as `kind` says, and
/// the object's path in it.
///
/// One store (and its connection pool) per bucket or host and kind, made
/// at its first use and shared by every object of the process.
fn store_for(url: &str, kind: Timeout) -> Result<(Arc<dyn ObjectStore>, ObjPath)> {
    type Stores = std::collections::HashMap<(String, Timeout), Arc<dyn ObjectStore>>;
    static STORES: OnceLock<Mutex<Stores>> = OnceLock::new();
    // A file of a hub repository is read from the hub's resolve URL.
    let resolved;
    let url = if is_hf(url) {
        resolved = hf::HfUrl::parse(url)?.resolve()?;
        resolved.as_str()
    } else {
        url
    };
    let parsed = url::Url::parse(url).map_err(|e| remote(format!("not a valid URL: {e}")))?;
    let path = ObjPath::from_url_path(parsed.path())
        .map_err(|e| remote(format!("not a valid object path: {e}")))?;
    // A URL with a query string (a presigned URL, a hub token) is used
    // exactly as given, query and all: its store is its own, the URL its
    // base and the object's path empty.
    let exact = matches!(parsed.scheme(), "http" | "https") && parsed.query().is_some();
    let path = if exact { ObjPath::default() } else { path };
    let origin = if exact {
        (url.to_string(), kind)
    } else {
        (
            parsed[..url::Position::BeforePath].to_ascii_lowercase(),
            kind,
        )
    };
    let stores = STORES.get_or_init(Mutex::default);
    if let Some(s) = stores
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&origin)
    {
        return Ok((Arc::clone(s), path));
    }
    let store = new_store(url, &parsed, kind)?;
    let mut map = stores.lock().unwrap_or_else(|p| p.into_inner());
    let store = map.entry(origin).or_insert(store);
    Ok((Arc::clone(store), path))
}

/// A new store for the bucket or host of `url`.
fn new_store(url: &str, parsed: &url::Url, kind: Timeout) -> Result<Arc<dyn ObjectStore>> {
    let (client, retry) = client_config(kind);
    let store: Arc<dyn ObjectStore> = match parsed.scheme() {
        "s3" => {
            if parsed.host_str().unwrap_or("").is_empty() {
                return Err(remote("an s3:// URL needs a bucket (s3://BUCKET/KEY)"));
            }
            let mut client = client;
            let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(url);
            let env = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
            let mut region = None;
            if let Some(p) = aws_profile()? {
                // A profile named with --profile wins over the environment's
                // keys; AWS_PROFILE (or `default`) only fills what the
                // environment leaves out, as with the AWS CLI.
                if profile::chosen().is_some() || !env("AWS_ACCESS_KEY_ID") {
                    let keys = match p.keys()? {
                        Some(k) => Some(k),
                        None => p.sso_login()?.map(|l| sso_role_keys(&l)).transpose()?,
                    };
                    if let Some(k) = keys {
                        b = b
                            .with_access_key_id(k.access_key_id)
                            .with_secret_access_key(k.secret_access_key);
                        if let Some(t) = k.session_token {
                            b = b.with_token(t);
                        }
                    }
                }
                region = p.region.clone();
                if !env("AWS_ENDPOINT_URL") {
                    if let Some(e) = &p.endpoint_url {
                        if e.starts_with("http://") {
                            client = client.with_allow_http(true);
                        }
                        b = b.with_endpoint(e);
                    }
                }
            }
            if !env("AWS_REGION") && !env("AWS_DEFAULT_REGION") {
                b = b.with_region(region.unwrap_or_else(|| "us-east-1".into()));
            }
            let (unsigned, payer) = access();
            b = b
                .with_skip_signature(unsigned)
                .with_request_payer(payer)
                .with_client_options(client)
                .with_retry(retry);
            Arc::new(b.build().map_err(|e| remote(one_line(&e)))?)
        }
        "gs" => {
            if parsed.host_str().unwrap_or("").is_empty() {
                return Err(remote("a gs:// URL needs a bucket (gs://BUCKET/KEY)"));
            }
            // GOOGLE_SERVICE_ACCOUNT, GOOGLE_APPLICATION_CREDENTIALS,
            // GOOGLE_BASE_URL (an emulator), … as object_store reads them.
            let emulator = std::env::var("GOOGLE_BASE_URL").unwrap_or_default();
            let client = if emulator.starts_with("http://") {
                client.with_allow_http(true)
            } else {
                client
            };
            let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_client_options(client)
                .with_retry(retry);
            if access().0 {
                // --no-sign-request; else the environment's setting.
                b = b.with_skip_signature(true);
            }
            Arc::new(b.build().map_err(|e| remote(one_line(&e)))?)
        }
        "az" => {
            if parsed.host_str().unwrap_or("").is_empty() {
                return Err(remote(
                    "an az:// URL needs a container (az://CONTAINER/KEY)",
                ));
            }
            // AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
            // AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_USE_EMULATOR (Azurite,
            // AZURITE_BLOB_STORAGE_URL), … as object_store reads them.
            let truthy = |k: &str| {
                std::env::var(k).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
            };
            let plain = truthy("AZURE_ALLOW_HTTP") || truthy("AZURE_STORAGE_USE_EMULATOR");
            let client = if plain {
                client.with_allow_http(true)
            } else {
                client
            };
            let mut b = object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_client_options(client)
                .with_retry(retry);
            if access().0 {
                // --no-sign-request; else the environment's setting.
                b = b.with_skip_signature(true);
            }
            let built = b.build().map_err(|e| {
                let why = one_line(&e);
                if why.contains("Account must be specified") {
                    remote(
                        "an az:// URL needs the storage account: AZURE_STORAGE_ACCOUNT_NAME \
                         (or AZURE_STORAGE_USE_EMULATOR=true for Azurite)",
                    )
                } else {
                    remote(why)
                }
            })?;
            Arc::new(built)
        }
        "http" | "https" => {
            let base = if parsed.query().is_some() {
                url.to_string()
            } else {
                format!(
                    "{}://{}",
                    parsed.scheme(),
                    &parsed[url::Position::BeforeHost..url::Position::BeforePath]
                )
            };
            let mut client = if parsed.scheme() == "http" {
                client.with_allow_http(true)
            } else {
                client
            };
            // The hub's token, to the hub only (a redirect to its CDN
            // drops it, as reqwest does for another host).
            if base.starts_with(&hf::endpoint()) {
                if let Some(t) = hf::token() {
                    let mut h = http::HeaderMap::new();
                    let v = http::HeaderValue::from_str(&format!("Bearer {t}"))
                        .map_err(|_| remote("the hub token is not a valid header value"))?;
                    h.insert(http::header::AUTHORIZATION, v);
                    client = client.with_default_headers(h);
                }
            }
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
    Ok(store)
}

/// Whether `e` is `object_store`'s report that the server answered a
/// ranged GET with something other than `206 Partial Content` (a `200` and
/// the whole object: it ignores Range). The HTTP store says so with
/// `Error::NotSupported` over its `RangeNotSupported` ("Range request not
/// supported by …"), the S3 store with `Error::Generic` over `NotPartial`
/// ("Received non-partial response when range requested"), both private
/// types of object_store 0.14 (`http/client.rs`, `client/get.rs`): they
/// are told apart by their messages, which tests/it/remote.rs checks against
/// real servers (its `norange` fault) for both stores.
fn ignores_range(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    match e {
        E::NotSupported { source } => source
            .to_string()
            .starts_with("Range request not supported"),
        E::Generic { source, .. } => {
            source.to_string() == "Received non-partial response when range requested"
        }
        _ => false,
    }
}

/// Why one ranged GET did not give its bytes.
enum Miss {
    /// The server ignored the Range: the object is to be read whole.
    IgnoredRange,
    /// Any other failure, as it is reported.
    Failed(Error),
}

impl From<Error> for Miss {
    fn from(e: Error) -> Miss {
        Miss::Failed(e)
    }
}

/// The largest object read whole from a server that ignores Range
/// (`NEFF_REMOTE_SPOOL_MAX`, bytes, default 4 GiB).
fn spool_max() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(|| env_u64("NEFF_REMOTE_SPOOL_MAX", 4 << 30))
}

fn too_large_to_read_whole(size: u64, max: u64) -> Error {
    remote(format!(
        "the server ignores Range, and the object ({size} bytes) is larger than the \
         {max} bytes read whole (NEFF_REMOTE_SPOOL_MAX)"
    ))
}

/// The object at `path` of the store of `url`, read whole by one GET
/// without Range into an unlinked temporary file, its chunks written as
/// they arrive (never held whole in memory). With `pinned` (the size and
/// ETag the object had when first read), an object of another size or
/// ETag is [`Error::ObjectChanged`], and one larger than
/// [`spool_max`] is refused before any request; else it is refused when
/// its response announces so. Returns the file, the object's size and
/// its ETag.
fn fetch_whole(
    url: &str,
    path: &ObjPath,
    pinned: Option<(u64, Option<&str>)>,
) -> Result<(File, u64, Option<String>)> {
    let max = spool_max();
    // Read whole, every byte is moved: a cap on bytes per object refuses
    // an object larger than it, as the spool's own bound does.
    let bounded = |size: u64| -> Result<()> {
        if size > max {
            return Err(too_large_to_read_whole(size, max));
        }
        link::within_cap(size)
    };
    if let Some((size, _)) = pinned {
        bounded(size)?;
    }
    let etag = pinned.and_then(|(_, e)| e);
    let changed = || Error::ObjectChanged {
        etag: etag.unwrap_or("").to_string(),
    };
    let (store, _) = store_for(url, Timeout::PerRead)?;
    let opts = GetOptions {
        if_match: etag.map(str::to_string),
        ..Default::default()
    };
    let file = spool_file()?;
    runtime()?
        .block_on(async {
            let counted = link::Request::start();
            let r = store
                .get_opts(path, opts)
                .await
                .map_err(|e| describe(&e, etag))?;
            let size = r.meta.size;
            let got_etag = r.meta.e_tag.clone();
            if let Some((want, want_etag)) = pinned {
                let other_etag =
                    matches!((want_etag, got_etag.as_deref()), (Some(a), Some(b)) if a != b);
                if size != want || other_etag {
                    return Err(changed());
                }
            }
            bounded(size)?;
            log::debug!(
                "{}: the server ignored Range: reading the object whole ({size} bytes) \
                 into a temporary file, and from it from now on",
                redact(url)
            );
            let mut at = 0u64;
            let mut body = r.into_stream();
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| describe(&e, etag))?;
                if at + chunk.len() as u64 > size {
                    return Err(remote(format!(
                        "the server sent more than the {size} bytes it announced"
                    )));
                }
                file.write_all_at(&chunk, at)?;
                at += chunk.len() as u64;
                counted.got(chunk.len() as u64);
            }
            if at != size {
                return Err(remote(format!("truncated body: {at} of {size} bytes")));
            }
            Ok((size, got_etag))
        })
        .map(|(size, got_etag)| (file, size, got_etag))
}

/// Hands the bytes at `range` of `file` to `sink`, a bounded chunk at a
/// time.
fn read_local(
    file: &File,
    range: Range<u64>,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; range.end.saturating_sub(range.start).min(CHUNK) as usize];
    let mut at = range.start;
    while at < range.end {
        let n = (range.end - at).min(CHUNK) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        sink(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
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
    /// When it was last modified, as the listing says.
    pub modified: std::time::SystemTime,
}

/// What every request for one version of an object needs: where it is,
/// its size and its ETag (`If-Match` on each ranged GET). Cheap to clone,
/// for requests that outlive a borrow (the read-ahead's).
#[derive(Debug, Clone)]
struct Pinned {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjPath,
    size: u64,
    etag: Option<String>,
}

/// An object, pinned to the version (ETag) the first response came from.
#[derive(Debug)]
pub struct Object {
    pin: Pinned,
    /// Bytes asked of the object so far ([`link::cap`] bounds them).
    moved: std::sync::atomic::AtomicU64,
    /// The whole object in an unlinked temporary file, once its server
    /// ignored a Range: every read after is served from it.
    whole: OnceLock<File>,
    /// Held while the whole object is fetched: one GET of it, whatever
    /// the number of readers that found the Range ignored.
    fetching: Mutex<()>,
    /// Counted among the objects open ([`link::hop_worth`]).
    _open: link::Gauge,
}

/// The largest raw NEFF fetched whole (the first request, then one for
/// the rest) rather than walked by ranges; on a slow link the bound is
/// lower, four round trips' worth of bytes as measured: a walk by
/// ranges costs a round trip per window of tar headers (24 for a typical
/// 3 MiB compile-cache NEFF), the rest of an object this small costs one.
pub const WHOLE_BELOW: u64 = 8 << 20;

/// Bytes asked for by the first request: the header and, for a raw NEFF,
/// the first tar headers; an object this small is read in that one request.
pub const FIRST: u64 = 256 << 10;

impl Object {
    /// Opens the object at `url` with one GET of its first [`FIRST`] bytes
    /// (all of it when smaller), which gives its size and ETag. When the
    /// server ignores the Range, the object is read whole instead (see the
    /// module's doc) and its first bytes come from that copy:
    /// [`take_whole`](Self::take_whole) then gives it.
    pub fn open(url: &str) -> Result<(Object, Vec<u8>)> {
        let (store, path) = store_for(url, Timeout::PerRequest)?;
        // An object a listing said is small is asked for whole: one
        // request, where a walk would cost several round trips.
        let asked = listed_size(url)
            .filter(|&n| n <= link::whole_below(WHOLE_BELOW))
            .map_or(FIRST, |n| n.max(FIRST))
            .min(link::cap().unwrap_or(u64::MAX));
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..asked)),
            ..Default::default()
        };
        let rt = runtime()?;
        let retries = retries();
        let first = rt.block_on(async {
            let mut tries = 0u64;
            let (r, body, headers, t0, alone) = loop {
                let t0 = std::time::Instant::now();
                let counted = link::Request::start();
                let r = match store.get_opts(&path, opts.clone()).await {
                    Ok(r) => r,
                    Err(e) if ignores_range(&e) => return Ok(None),
                    Err(e) => return Err(describe(&e, None)),
                };
                let headers = t0.elapsed();
                let meta = r.meta.clone();
                let range = r.range.clone();
                match collect(r, range.end - range.start).await {
                    Ok(body) => {
                        counted.got(body.len() as u64);
                        break ((meta, range), body, headers, t0, counted.alone());
                    }
                    // A body cut or reset: the first request again (no
                    // version is pinned yet), a bounded number of times.
                    Err((e, true)) if tries < retries => {
                        tries += 1;
                        log::debug!("{}: the first GET's body failed ({e}): again", redact(url));
                        backoff(tries).await;
                    }
                    Err((e, _)) => return Err(e),
                }
            };
            let (meta, range) = r;
            link::observe(headers, body.len() as u64, t0.elapsed() - headers, alone);
            log::info!(
                "{}: GET bytes {}..{} (open): {} bytes of {} in {:.1} ms",
                redact(url),
                range.start,
                range.end,
                body.len(),
                meta.size,
                t0.elapsed().as_secs_f64() * 1e3
            );
            Ok::<_, Error>(Some((meta, body)))
        })?;
        let Some((meta, bytes)) = first else {
            let (file, size, etag) = fetch_whole(url, &path, None)?;
            let mut first = vec![0u8; FIRST.min(size) as usize];
            file.read_exact_at(&mut first, 0)?;
            let object = Object {
                pin: Pinned {
                    url: url.to_string(),
                    store,
                    path,
                    size,
                    etag,
                },
                whole: OnceLock::from(file),
                fetching: Mutex::new(()),
                moved: size.into(),
                _open: link::open(),
            };
            return Ok((object, first));
        };
        let object = Object {
            pin: Pinned {
                url: url.to_string(),
                store,
                path,
                size: meta.size,
                etag: meta.e_tag,
            },
            whole: OnceLock::new(),
            fetching: Mutex::new(()),
            moved: (bytes.len() as u64).into(),
            _open: link::open(),
        };
        let want = asked.min(object.pin.size);
        if bytes.len() as u64 != want {
            return Err(remote(format!(
                "the server sent {} bytes for the first {want} of a {}-byte object",
                bytes.len(),
                object.pin.size
            )));
        }
        Ok((object, bytes))
    }

    /// Counts `n` more bytes asked of the object, refused past the cap on
    /// bytes moved per object ([`set_byte_cap`]).
    pub(crate) fn charge(&self, n: u64) -> Result<()> {
        use std::sync::atomic::Ordering;
        link::within_cap(self.moved.fetch_add(n, Ordering::Relaxed) + n)
    }

    /// Bytes that may still be asked of the object under the cap (`None`:
    /// no cap).
    pub fn budget(&self) -> Option<u64> {
        let moved = self.moved.load(std::sync::atomic::Ordering::Relaxed);
        link::cap().map(|cap| cap.saturating_sub(moved))
    }

    /// The bytes `parts` covers, fetched with several parts in flight and
    /// handed on in order: the tar walk reads through member data so. The
    /// span counts as moved when it is asked for.
    pub fn read_ahead(&self, parts: Parts) -> Result<ReadAhead<'_>> {
        let span = parts.span();
        self.check_range(&span)?;
        self.charge(span.end - span.start)?;
        ReadAhead::start(self, parts)
    }

    /// The bytes `head` (already held: the range's first bytes) and then
    /// `rest`, as a `Read`: `rest` is read ahead in parts growing from
    /// `first` bytes ([`STREAM_PART`]: the inflater starts soon) to [`PART`],
    /// several in flight, each pinned to the
    /// ETag, so that a gzip payload is inflated as it arrives, with no
    /// temporary file. A failure of the object comes out of `read` as an
    /// `io::Error` wrapping this crate's [`Error`] (see
    /// `payload::Pieces`, which unwraps it).
    pub fn reader<'a>(
        &'a self,
        head: &'a [u8],
        rest: Range<u64>,
        first: u64,
    ) -> Result<RangeReader<'a>> {
        let ahead = match rest.start < rest.end {
            true => Some(self.read_ahead(Parts::new(rest, first, PART))?),
            false => None,
        };
        Ok(RangeReader {
            head,
            chunks: std::collections::VecDeque::new(),
            ahead,
        })
    }

    /// The object's size, as its first response said.
    pub fn size(&self) -> u64 {
        self.pin.size
    }

    /// The whole object in an unlinked temporary file, if its server
    /// ignored Range and it was read whole: the caller reads it as a local
    /// file from then on (later reads of this `Object` fetch by ranges
    /// again).
    pub fn take_whole(&mut self) -> Option<File> {
        self.whole.take()
    }

    /// The whole object on disk: the copy already made, or one GET of it
    /// now ([`fetch_whole`], pinned to the size and ETag), made once.
    fn whole(&self) -> Result<&File> {
        if let Some(f) = self.whole.get() {
            return Ok(f);
        }
        let _one = self.fetching.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = self.whole.get() {
            return Ok(f);
        }
        let (file, _, _) = fetch_whole(
            &self.pin.url,
            &self.pin.path,
            Some((self.pin.size, self.pin.etag.as_deref())),
        )?;
        Ok(self.whole.get_or_init(|| file))
    }

    /// The bytes at `range` of the object, handed to `sink` in order as
    /// they arrive; exactly `range.len()` bytes or an error. A range longer
    /// than [`PART`] is fetched as parts of that size, up to the object's
    /// share of `--io-depth` (1 to 8) GETs in flight at once, each
    /// pinned to the ETag, and handed on in order: a large member or
    /// payload arrives at the speed of several connections (as `aws s3 cp`
    /// fetches one), with at most that many parts held. Once the server
    /// has ignored a Range, the object is read whole (once) and the rest
    /// of this range, and every later one, comes from that copy.
    pub fn stream(
        &self,
        range: Range<u64>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.check_range(&range)?;
        self.charge(range.end - range.start)?;
        if let Some(file) = self.whole.get() {
            return read_local(file, range, sink);
        }
        if range.end - range.start > PART {
            // Parts in flight, handed on in order: the read-ahead's way.
            let mut parts = ReadAhead::start(self, Parts::new(range, PART, PART))?;
            while let Some(part) = parts.next_part()? {
                for chunk in part {
                    sink(&chunk)?;
                }
            }
            return Ok(());
        }
        let mut sent = 0u64;
        let got = runtime()?.block_on(self.pin.get(range.clone(), &mut |c: Bytes| {
            sent += c.len() as u64;
            sink(&c)
        }));
        match got {
            Ok(()) => Ok(()),
            Err(Miss::Failed(e)) => Err(e),
            Err(Miss::IgnoredRange) => {
                read_local(self.whole()?, range.start + sent..range.end, sink)
            }
        }
    }

    fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.end > self.pin.size || range.start > range.end {
            return Err(remote(format!(
                "bytes {}..{} asked of a {}-byte object",
                range.start, range.end, self.pin.size
            )));
        }
        Ok(())
    }

    /// A local copy of the whole object, for a payload that cannot be read
    /// by ranges (gzip): `first` (its first bytes, as [`open`](Self::open)
    /// gave them) and then the rest in [`PART`]-sized GETs, the object's
    /// share of `--io-depth` in flight (1 to 8), each pinned to the ETag and
    /// written at its place in an unlinked temporary file (in `$TMPDIR`,
    /// gone when closed) as its bytes arrive. Memory holds the chunks in
    /// flight, never a part or the object. Returns the file and its length.
    /// From a server that ignores Range, the object is read whole by one
    /// GET (see [`stream`](Self::stream)) and that copy is the file, or,
    /// when a later part's Range was ignored, fills the rest of it
    /// ([`spool_landing`](Self::spool_landing)).
    pub fn spool(&self, first: &[u8]) -> Result<(File, u64)> {
        let file = self.spool_landing(first, |file, _| Ok(file))?;
        Ok((file, self.pin.size))
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

impl Pinned {
    /// One GET of `range` (within the object), pinned to the ETag, its
    /// body handed to `sink` as it arrives and checked to be exactly the
    /// bytes asked for ([`Miss::IgnoredRange`], before any byte, when the
    /// server answers with the whole object).
    async fn get<S: FnMut(Bytes) -> Result<()> + ?Sized>(
        &self,
        range: Range<u64>,
        sink: &mut S,
    ) -> std::result::Result<(), Miss> {
        if range.start >= range.end {
            return Ok(());
        }
        // A body cut or reset after some bytes is asked for again from
        // where it stopped (the same version: If-Match), a bounded number
        // of times; the client retries what fails before a body.
        let retries = retries();
        let mut at = range.start;
        let mut tries = 0u64;
        loop {
            match self.get_once(at..range.end, sink).await {
                Ok(()) => return Ok(()),
                Err((Miss::Failed(e), Some(n))) if tries < retries => {
                    tries += 1;
                    at += n;
                    log::debug!(
                        "{}: GET bytes {}..{} stopped after {n} bytes ({e}): again from {at}",
                        redact(&self.url),
                        at - n,
                        range.end
                    );
                    backoff(tries).await;
                }
                Err((miss, _)) => return Err(miss),
            }
        }
    }

    /// One GET of `range`; on a failure of its body (cut, reset), also how
    /// many bytes went to `sink` before it (`None`: a failure that asking
    /// again would not mend).
    async fn get_once<S: FnMut(Bytes) -> Result<()> + ?Sized>(
        &self,
        range: Range<u64>,
        sink: &mut S,
    ) -> std::result::Result<(), (Miss, Option<u64>)> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.etag.clone(),
            ..Default::default()
        };
        let want = range.end - range.start;
        let etag = self.etag.as_deref();
        let t0 = std::time::Instant::now();
        let counted = link::Request::start();
        let r = match self.store.get_opts(&self.path, opts).await {
            Ok(r) => r,
            Err(e) if ignores_range(&e) => return Err((Miss::IgnoredRange, None)),
            Err(e) => return Err((describe(&e, etag).into(), None)),
        };
        let headers = t0.elapsed();
        if r.meta.size != self.size {
            let changed = Error::ObjectChanged {
                etag: etag.unwrap_or("").to_string(),
            };
            return Err((changed.into(), None));
        }
        if r.range != range {
            let e = remote(format!(
                "asked for bytes {}..{}, the server sent {}..{}",
                range.start, range.end, r.range.start, r.range.end
            ));
            return Err((e.into(), None));
        }
        let mut got = 0u64;
        let mut body = r.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| (describe(&e, etag).into(), Some(got)))?;
            if got + chunk.len() as u64 > want {
                let e = remote(format!(
                    "the server sent more than the {want} bytes asked for"
                ));
                return Err((e.into(), None));
            }
            let n = chunk.len() as u64;
            sink(chunk).map_err(|e| (e.into(), None))?;
            got += n;
            counted.got(n);
        }
        if got != want {
            let e = remote(format!(
                "truncated body: {got} of {want} bytes at offset {}",
                range.start
            ));
            return Err((e.into(), Some(got)));
        }
        link::observe(headers, got, t0.elapsed() - headers, counted.alone());
        log::info!(
            "{}: GET bytes {}..{}: {got} bytes in {:.1} ms",
            redact(&self.url),
            range.start,
            range.end,
            t0.elapsed().as_secs_f64() * 1e3
        );
        Ok(())
    }
}

/// The first part a [`RangeReader`] reads ahead: the inflater starts on
/// it while the larger parts after it are on their way.
pub const STREAM_PART: u64 = 256 << 10;

/// A range of an [`Object`] as a `Read` ([`Object::reader`]).
pub struct RangeReader<'o> {
    /// The range's first bytes, held by the caller (not copied).
    head: &'o [u8],
    chunks: std::collections::VecDeque<Bytes>,
    ahead: Option<ReadAhead<'o>>,
}

impl std::io::Read for RangeReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if out.is_empty() {
                return Ok(0);
            }
            if !self.head.is_empty() {
                let n = self.head.len().min(out.len());
                out[..n].copy_from_slice(&self.head[..n]);
                self.head = &self.head[n..];
                return Ok(n);
            }
            if let Some(c) = self.chunks.front_mut() {
                let n = c.len().min(out.len());
                out[..n].copy_from_slice(&c[..n]);
                bytes::Buf::advance(c, n);
                if c.is_empty() {
                    self.chunks.pop_front();
                }
                return Ok(n);
            }
            let Some(ahead) = self.ahead.as_mut() else {
                return Ok(0);
            };
            match ahead.next_part() {
                Ok(Some(part)) => self
                    .chunks
                    .extend(part.into_iter().filter(|c| !c.is_empty())),
                Ok(None) => self.ahead = None,
                Err(e) => {
                    self.ahead = None;
                    return Err(std::io::Error::other(e));
                }
            }
        }
    }
}

/// Parts of a range of an [`Object`] in flight, handed on in order
/// ([`Object::read_ahead`]).
pub struct ReadAhead<'o> {
    object: &'o Object,
    /// The parts not yet handed on, in order (the task's, mirrored: once
    /// the server ignores a Range, they come from the whole copy).
    parts: std::collections::VecDeque<Range<u64>>,
    rx: tokio::sync::mpsc::Receiver<std::result::Result<Vec<Bytes>, Miss>>,
    /// The task fetching the parts; `None` once they come from the whole
    /// copy of the object.
    task: Option<tokio::task::JoinHandle<()>>,
    _alive: link::Gauge,
}

impl<'o> ReadAhead<'o> {
    /// Starts fetching `parts` (within the object, charged by the caller).
    fn start(object: &'o Object, parts: Parts) -> Result<Self> {
        let parts: std::collections::VecDeque<Range<u64>> = parts.collect();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        // Its share among the others alive, then counted among them.
        let depth = ahead::depth();
        let alive = ahead::alive();
        if object.whole.get().is_some() {
            // The server ignores Range: every part from the whole copy.
            return Ok(ReadAhead {
                object,
                parts,
                rx,
                task: None,
                _alive: alive,
            });
        }
        let pin: Pinned = object.pin.clone();
        let todo: Vec<Range<u64>> = parts.iter().cloned().collect();
        log::debug!(
            "{}: reading ahead {} parts from byte {}, {depth} in flight",
            redact(&object.pin.url),
            todo.len(),
            todo.first().map_or(0, |r| r.start)
        );
        let task = runtime()?.spawn(async move {
            let pin = &pin;
            let fetches = futures_util::stream::iter(todo).map(|r| async move {
                // The body's chunks as the client received them: no copy.
                let mut held = Vec::new();
                pin.get(r, &mut |c| {
                    held.push(c);
                    Ok(())
                })
                .await
                .map(|()| held)
            });
            let mut fetches = std::pin::pin!(fetches.buffered(depth));
            while let Some(part) = fetches.next().await {
                let failed = part.is_err();
                if tx.send(part).await.is_err() || failed {
                    break;
                }
            }
        });
        Ok(ReadAhead {
            object,
            parts,
            rx,
            task: Some(task),
            _alive: alive,
        })
    }

    /// The next part (`None` once the range is done): its bytes in the
    /// chunks they arrived in.
    pub fn next_part(&mut self) -> Result<Option<Vec<Bytes>>> {
        let Some(range) = self.parts.pop_front() else {
            return Ok(None);
        };
        if self.task.is_some() {
            match runtime()?.block_on(self.rx.recv()) {
                Some(Ok(part)) => return Ok(Some(part)),
                Some(Err(Miss::Failed(e))) => return Err(e),
                Some(Err(Miss::IgnoredRange)) => {
                    if let Some(t) = self.task.take() {
                        t.abort();
                    }
                }
                None => {
                    return Err(Error::Remote {
                        reason: "the read-ahead ended before its range".into(),
                        io: std::io::ErrorKind::UnexpectedEof,
                    })
                }
            }
        }
        let mut part = Vec::with_capacity((range.end - range.start) as usize);
        read_local(self.object.whole()?, range, &mut |c| {
            part.extend_from_slice(c);
            Ok(())
        })?;
        Ok(Some(vec![Bytes::from(part)]))
    }
}

impl Drop for ReadAhead<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// The size of the parts a long range is fetched in.
pub const PART: u64 = 8 << 20;

/// The body of a first response, checked against its announced length;
/// an error says whether asking again may mend it (a body cut or reset).
async fn collect(
    r: object_store::GetResult,
    want: u64,
) -> std::result::Result<Vec<u8>, (Error, bool)> {
    let mut v = Vec::with_capacity(want.min(FIRST) as usize);
    let mut body = r.into_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| (describe(&e, None), true))?;
        if (v.len() + chunk.len()) as u64 > want {
            return Err((
                remote(format!(
                    "the server sent more than the {want} bytes it announced"
                )),
                false,
            ));
        }
        v.extend_from_slice(&chunk);
    }
    if (v.len() as u64) < want {
        let e = remote(format!("truncated body: {} of {want} bytes", v.len()));
        return Err((e, true));
    }
    Ok(v)
}

/// Every object under the S3 prefix `url`, whatever its key (a compile
/// cache's `model.done`, `model.log` and locks too), in key order.
pub fn list_all(url: &str) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    if is_hf(url) {
        out = list_hf(url)?;
    } else {
        list_bucket(url, &mut |o| out.push(o))?;
    }
    out.sort_by(|a, b| a.url.cmp(&b.url));
    note_listed(&out);
    log::debug!("{}: listed {} objects", redact(url), out.len());
    Ok(out)
}

/// The bucket of an `s3://` URL, and its store and prefix.
/// The store of a bucket URL, the URL of its root (`s3://bucket`) and the
/// prefix the URL names in it.
fn bucket_prefix(url: &str) -> Result<(String, Arc<dyn ObjectStore>, ObjPath)> {
    let parsed = url::Url::parse(url).map_err(|e| remote(format!("not a valid URL: {e}")))?;
    if !is_listable(url) {
        return Err(remote(
            "only s3://, gs:// and az:// prefixes can be listed (an HTTP server has no listing)",
        ));
    }
    let root = format!("{}://{}", parsed.scheme(), parsed.host_str().unwrap_or(""));
    let (store, prefix) = store_for(url, Timeout::PerRequest)?;
    Ok((root, store, prefix))
}

/// Every object under the bucket prefix `url` (`s3://`, `gs://`, `az://`),
/// handed to `each` as its listing page arrives, in the store's order (by
/// key: S3, GCS and Azure list in UTF-8 byte order); each object's size
/// is noted first, for [`Object::open`] to fetch it whole in one request.
/// A listing that fails partway has handed on what it listed before the
/// error. (A hub repository's tree comes in no order: [`list_all`].)
pub(crate) fn list_each(url: &str, each: &mut dyn FnMut(Listed)) -> Result<()> {
    if is_hf(url) {
        for o in list_all(url)? {
            each(o);
        }
        return Ok(());
    }
    list_bucket(url, &mut |o| {
        note_listed(std::slice::from_ref(&o));
        each(o)
    })
}

fn list_bucket(url: &str, each: &mut dyn FnMut(Listed)) -> Result<()> {
    let (root, store, prefix) = bucket_prefix(url)?;
    let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
    // A page that fails (a reset, a cut body, a 5xx past the client's own
    // retries) is asked for again, after the last key listed, a bounded
    // number of times; not found and access denied are answers.
    let retries = retries();
    runtime()?.block_on(async {
        let mut listed = 0u64;
        let mut last: Option<ObjPath> = None;
        let mut tries = 0u64;
        loop {
            let _counted = link::Request::start();
            let mut s = match &last {
                None => store.list(prefix.as_ref()),
                Some(after) => store.list_with_offset(prefix.as_ref(), after),
            };
            let mut failed = None;
            while let Some(m) = s.next().await {
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                };
                last = Some(m.location.clone());
                listed += 1;
                each(Listed {
                    url: format!("{root}/{}", m.location),
                    size: m.size,
                    version: m
                        .e_tag
                        .clone()
                        .unwrap_or_else(|| m.last_modified.to_rfc3339()),
                    modified: m.last_modified.into(),
                });
            }
            let Some(e) = failed else {
                return Ok::<_, Error>(());
            };
            let answer = matches!(
                e,
                object_store::Error::NotFound { .. }
                    | object_store::Error::PermissionDenied { .. }
                    | object_store::Error::Unauthenticated { .. }
            );
            if answer || tries >= retries {
                return Err(describe(&e, None));
            }
            tries += 1;
            log::debug!(
                "{}: listing failed ({}): again after {listed} keys",
                redact(url),
                describe(&e, None),
            );
            backoff(tries).await;
        }
    })
}

/// The files under an `hf://` prefix, from the hub's tree API, page after
/// page; a page that fails is asked for again, a bounded number of times.
fn list_hf(url: &str) -> Result<Vec<Listed>> {
    let repo = hf::HfUrl::parse(url)?;
    let retries = retries();
    let http = http_client()?;
    let token = hf::token();
    let ours = hf::endpoint();
    runtime()?.block_on(async {
        let mut out = Vec::new();
        let mut next = Some(repo.tree()?);
        let mut pages = 0u32;
        while let Some(page_url) = next.take() {
            pages += 1;
            if pages > 100_000 {
                return Err(remote("the hub's listing did not end after 100,000 pages"));
            }
            let mut tries = 0u64;
            let (body, link) = loop {
                let _counted = link::Request::start();
                let mut req = http.get(&page_url);
                if let Some(t) = token.as_deref().filter(|_| page_url.starts_with(&ours)) {
                    req = req.bearer_auth(t);
                }
                let got = async {
                    let r = req.send().await.map_err(|e| (http_words(&e), true))?;
                    let status = r.status();
                    if !status.is_success() {
                        let transient = status.is_server_error() || status.as_u16() == 429;
                        let why = match status.as_u16() {
                            401 | 403 => format!("access denied ({status}): a gated or private repository wants HF_TOKEN"),
                            404 => "no such repository, revision or path".to_string(),
                            _ => format!("the hub answered {status}"),
                        };
                        return Err((why, transient));
                    }
                    let link = r
                        .headers()
                        .get(http::header::LINK)
                        .and_then(|v| v.to_str().ok())
                        .and_then(hf::next_link);
                    // A page of a listing is bounded: 64 MiB.
                    let body = body_at_most(r, 64 << 20).await?;
                    Ok((body, link))
                }
                .await;
                match got {
                    Ok(x) => break x,
                    Err((why, true)) if tries < retries => {
                        tries += 1;
                        log::debug!("{}: {}: again", redact(&page_url), redact_text(&why));
                        backoff(tries).await;
                    }
                    Err((why, _)) => {
                        let io = if why.starts_with("no such") {
                            std::io::ErrorKind::NotFound
                        } else if why.starts_with("access denied") {
                            std::io::ErrorKind::PermissionDenied
                        } else {
                            std::io::ErrorKind::Other
                        };
                        return Err(remote_as(io, why));
                    }
                }
            };
            for f in hf::page(&body).map_err(remote)? {
                out.push(Listed {
                    url: repo.file(&f.path),
                    size: f.size,
                    version: f.version,
                    modified: std::time::SystemTime::UNIX_EPOCH,
                });
            }
            next = link;
        }
        Ok(out)
    })
}

/// Objects' sizes as the latest listing gave them, by URL: an open of one
/// asks for the whole of a small object in its first request.
fn listed() -> &'static Mutex<std::collections::HashMap<String, u64>> {
    static LISTED: OnceLock<Mutex<std::collections::HashMap<String, u64>>> = OnceLock::new();
    LISTED.get_or_init(Default::default)
}

/// Most objects whose listed size is remembered (about 100 MiB of them).
const LISTED_MAX: usize = 1 << 20;

fn note_listed(objects: &[Listed]) {
    let mut map = listed().lock().unwrap_or_else(|p| p.into_inner());
    for o in objects.iter().filter(|o| o.url.ends_with(".neff")) {
        if map.len() >= LISTED_MAX {
            break;
        }
        map.insert(o.url.clone(), o.size);
    }
}

/// The size a listing gave for the object at `url`, if one did.
fn listed_size(url: &str) -> Option<u64> {
    listed()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(url)
        .copied()
}

/// The last `n` bytes of the object at `url` (all of it when shorter), in
/// one GET.
pub fn read_tail(url: &str, n: u64) -> Result<Vec<u8>> {
    let (store, path) = store_for(url, Timeout::PerRequest)?;
    let opts = GetOptions {
        range: Some(GetRange::Suffix(n)),
        ..Default::default()
    };
    runtime()?.block_on(async {
        let r = store
            .get_opts(&path, opts)
            .await
            .map_err(|e| describe(&e, None))?;
        // At most the n bytes asked for, whatever range the answer claims.
        let want = r.range.end - r.range.start;
        if want > n {
            return Err(remote(format!(
                "the server answered {want} bytes for the last {n} asked"
            )));
        }
        collect(r, want).await.map_err(|(e, _)| e)
    })
}

/// Deletes the objects `urls` (all in one `s3://` bucket), a few requests
/// at once; each gets its own answer, in order. An object already gone is
/// deleted.
pub fn delete(urls: &[String]) -> Vec<Result<()>> {
    let Some(first) = urls.first() else {
        return Vec::new();
    };
    let store = match bucket_prefix(first) {
        Ok((_, store, _)) => store,
        Err(e) => {
            let why = e.to_string();
            return urls.iter().map(|_| Err(remote(why.clone()))).collect();
        }
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            let why = e.to_string();
            return urls.iter().map(|_| Err(remote(why.clone()))).collect();
        }
    };
    rt.block_on(async {
        let jobs = urls.iter().map(|u| {
            let store = Arc::clone(&store);
            async move {
                let parsed =
                    url::Url::parse(u).map_err(|e| remote(format!("not a valid URL: {e}")))?;
                let path = ObjPath::from_url_path(parsed.path())
                    .map_err(|e| remote(format!("not a valid object path: {e}")))?;
                match store.delete(&path).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                        log::debug!("{u}: DELETE");
                        Ok(())
                    }
                    Err(e) => Err(describe(&e, None)),
                }
            }
        });
        futures_util::stream::iter(jobs)
            .buffered(8)
            .collect::<Vec<_>>()
            .await
    })
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
        for u in [
            "gs://b/k.neff",
            "az://c/k.neff",
            "hf://org/repo/k.neff",
            "HF://o/r",
        ] {
            assert!(is_url(u) && is_listable(u), "{u}");
        }
        assert!(!is_listable("https://h/k.neff"));
    }

    #[test]
    fn a_gs_or_az_url_names_the_object_in_its_buckets_store() {
        // Built from the URL alone (no request): the key is the URL's path.
        let (_, path) = store_for("gs://zoo/acc/a.neff", Timeout::PerRequest).unwrap();
        assert_eq!(path.as_ref(), "acc/a.neff");
        if std::env::var_os("AZURE_STORAGE_ACCOUNT_NAME").is_none()
            && std::env::var_os("AZURE_STORAGE_USE_EMULATOR").is_none()
        {
            let e = Object::open("az://zoo/m/x.neff").unwrap_err().to_string();
            assert!(e.contains("AZURE_STORAGE_ACCOUNT_NAME"), "{e}");
        }
        let e = Object::open("gs:///key.neff").unwrap_err().to_string();
        assert!(e.contains("needs a bucket"), "{e}");
        let e = Object::open("az:///key.neff").unwrap_err().to_string();
        assert!(e.contains("needs a container"), "{e}");
    }

    #[test]
    fn a_bad_url_is_one_line_naming_the_problem() {
        let e = Object::open("s3:///key.neff").unwrap_err().to_string();
        assert!(e.contains("needs a bucket"), "{e}");
        let e = Object::open("ftp://h/x.neff").unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }
}
