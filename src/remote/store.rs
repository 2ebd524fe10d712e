//! The stores requests go through, one per bucket or host and kind, made
//! at first use and shared by the process: the runtime, the clients'
//! timeouts and retries (`NEFF_REMOTE_TIMEOUT`, `NEFF_REMOTE_RETRIES`),
//! credentials (profiles, SSO, the environment), `--no-sign-request` and
//! `--requester-pays`, and each scheme's builder.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::path::Path as ObjPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use super::failure::*;
use super::redirect::{plain_policy, Guarded};
use super::scheme::*;
use super::{hf, link, profile};
use crate::error::{Error, Result};

/// An `object_store` error as the crate's, in one line ([`failure::describe`]).
pub(super) fn describe(e: &object_store::Error, etag: Option<&str>) -> Error {
    super::failure::describe_timed(e, etag, timeout().as_secs())
}

/// A plain HTTP client's error in those words ([`failure::http_words`]).
pub(super) fn http_words(e: &reqwest::Error) -> String {
    super::failure::http_words_timed(e, timeout().as_secs())
}

/// The runtime the async client runs on, one for the process
/// ([`crate::pool::io_runtime`]), whatever the number of callers blocked
/// on it.
pub(super) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    crate::pool::io_runtime().map_err(|e| remote(format!("cannot start the I/O runtime: {e}")))
}

pub(super) fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// How long a request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Timeout {
    /// `NEFF_REMOTE_TIMEOUT` for the whole request, body included: the
    /// ranged GETs, of at most [`PART`] bytes each.
    PerRequest,
    /// `NEFF_REMOTE_TIMEOUT` between two reads of the body, none overall:
    /// the GET of a whole object (from a server that ignores Range), which
    /// may take longer than any one timeout on a slow link.
    PerRead,
}

/// Each request's timeout (`NEFF_REMOTE_TIMEOUT`, seconds, default 30).
pub(super) fn timeout() -> Duration {
    Duration::from_secs(env_u64("NEFF_REMOTE_TIMEOUT", 30).max(1))
}

/// How many times a failed request is made again (`NEFF_REMOTE_RETRIES`,
/// default 4): by the client before a body, here after a body cut or a
/// listing page that failed.
pub(super) fn retries() -> u64 {
    env_u64("NEFF_REMOTE_RETRIES", 4)
}

/// The wait before try `tries` + 1 of what failed: 100 ms, doubling, at
/// most 6.4 s.
pub(super) async fn backoff(tries: u64) {
    tokio::time::sleep(Duration::from_millis(50 << tries.clamp(1, 7))).await;
}

/// The plain HTTP client of the requests `object_store` does not make (the
/// hub's listing pages, the SSO portal), one for the process: it follows
/// redirects on the same origin only, and sends no `Referer`
/// ([`super::redirect`]).
pub(super) fn http_client() -> Result<&'static reqwest::Client> {
    static C: OnceLock<std::result::Result<reqwest::Client, String>> = OnceLock::new();
    C.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(plain_policy())
            .referer(false)
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
pub(super) async fn body_at_most(
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
pub(super) fn client_config(kind: Timeout) -> (ClientOptions, RetryConfig) {
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
pub(super) fn aws_profile() -> Result<Option<&'static profile::Profile>> {
    static P: OnceLock<std::result::Result<Option<profile::Profile>, String>> = OnceLock::new();
    match P.get_or_init(|| profile::load().map_err(|e| e.to_string())) {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(remote(e.clone())),
    }
}

/// The keys of a profile's SSO role: its cached token exchanged at the
/// SSO portal, once per process.
pub(super) fn sso_role_keys(login: &profile::SsoLogin) -> Result<profile::Keys> {
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
pub(super) static ACCESS: OnceLock<(bool, bool)> = OnceLock::new();

/// Sends S3 requests unsigned (`no_sign_request`: a public bucket, as the
/// AWS CLI's `--no-sign-request`) and/or says the requester pays
/// (`requester_pays`: a requester-pays bucket). Only the first call counts.
pub fn set_access(no_sign_request: bool, requester_pays: bool) {
    let _ = ACCESS.set((no_sign_request, requester_pays));
}

pub(super) fn access() -> (bool, bool) {
    ACCESS.get().copied().unwrap_or_default()
}

/// The store that serves `url`, with requests timed as `kind` says, and
/// the object's path in it.
///
/// One store (and its connection pool) per bucket or host and kind, made
/// at its first use and shared by every object of the process.
pub(super) fn store_for(url: &str, kind: Timeout) -> Result<(Arc<dyn ObjectStore>, ObjPath)> {
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
    let path = object_path(&parsed)?;
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

/// `client`, also allowed plain HTTP when `yes` (an emulator, an
/// `http://` endpoint); left as it is otherwise (the environment may have
/// allowed it already).
fn plain_http_if(client: ClientOptions, yes: bool) -> ClientOptions {
    if yes {
        client.with_allow_http(true)
    } else {
        client
    }
}

/// A new store for the bucket or host of `url`: each scheme's builder,
/// with the clients' timeouts and retries of `kind`.
pub(super) fn new_store(
    url: &str,
    parsed: &url::Url,
    kind: Timeout,
) -> Result<Arc<dyn ObjectStore>> {
    let (client, retry) = client_config(kind);
    match parsed.scheme() {
        "s3" => s3_store(url, parsed, client, retry),
        "gs" => gs_store(url, parsed, client, retry),
        "az" => az_store(url, parsed, client, retry),
        "http" | "https" => http_store(url, parsed, client, retry),
        other => Err(remote(format!("unsupported URL scheme {other:?}"))),
    }
}

/// An S3 store: credentials from `--profile` (keys, `credential_process`,
/// SSO) over the environment's as the AWS CLI ranks them, the profile's
/// region and endpoint, `--no-sign-request`, `--requester-pays`.
fn s3_store(
    url: &str,
    parsed: &url::Url,
    mut client: ClientOptions,
    retry: RetryConfig,
) -> Result<Arc<dyn ObjectStore>> {
    if parsed.host_str().unwrap_or("").is_empty() {
        return Err(remote("an s3:// URL needs a bucket (s3://BUCKET/KEY)"));
    }
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
        .with_http_connector(Guarded::default())
        .with_retry(retry);
    Ok(Arc::new(b.build().map_err(|e| remote(one_line(&e)))?))
}

/// A Google Cloud Storage store, configured from the environment as
/// `object_store` reads it (an emulator over plain HTTP allowed).
fn gs_store(
    url: &str,
    parsed: &url::Url,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Arc<dyn ObjectStore>> {
    if parsed.host_str().unwrap_or("").is_empty() {
        return Err(remote("a gs:// URL needs a bucket (gs://BUCKET/KEY)"));
    }
    // GOOGLE_SERVICE_ACCOUNT, GOOGLE_APPLICATION_CREDENTIALS,
    // GOOGLE_BASE_URL (an emulator), … as object_store reads them.
    let emulator = std::env::var("GOOGLE_BASE_URL").unwrap_or_default();
    let client = plain_http_if(client, emulator.starts_with("http://"));
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
        .with_url(url)
        .with_client_options(client)
        .with_http_connector(Guarded::default())
        .with_retry(retry);
    if access().0 {
        // --no-sign-request; else the environment's setting.
        b = b.with_skip_signature(true);
    }
    Ok(Arc::new(b.build().map_err(|e| remote(one_line(&e)))?))
}

/// An Azure Blob store, configured from the environment (Azurite over
/// plain HTTP allowed); a missing account said in the project's words.
fn az_store(
    url: &str,
    parsed: &url::Url,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Arc<dyn ObjectStore>> {
    if parsed.host_str().unwrap_or("").is_empty() {
        return Err(remote(
            "an az:// URL needs a container (az://CONTAINER/KEY)",
        ));
    }
    // AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
    // AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_USE_EMULATOR (Azurite,
    // AZURITE_BLOB_STORAGE_URL), … as object_store reads them.
    let truthy =
        |k: &str| std::env::var(k).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    let plain = truthy("AZURE_ALLOW_HTTP") || truthy("AZURE_STORAGE_USE_EMULATOR");
    let client = plain_http_if(client, plain);
    let mut b = object_store::azure::MicrosoftAzureBuilder::from_env()
        .with_url(url)
        .with_client_options(client)
        .with_http_connector(Guarded::default())
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
    Ok(Arc::new(built))
}

/// A plain HTTP(S) store for the host of `url` (a presigned URL keeps its
/// query); the hub's token sent to the hub only.
fn http_store(
    url: &str,
    parsed: &url::Url,
    client: ClientOptions,
    retry: RetryConfig,
) -> Result<Arc<dyn ObjectStore>> {
    let base = if parsed.query().is_some() {
        url.to_string()
    } else {
        format!(
            "{}://{}",
            parsed.scheme(),
            &parsed[url::Position::BeforeHost..url::Position::BeforePath]
        )
    };
    let client = plain_http_if(client, parsed.scheme() == "http");
    // The hub's token, to the hub only (a redirect to its CDN, another
    // origin, drops it: super::redirect).
    let mut guarded = Guarded::default();
    if base.starts_with(&hf::endpoint()) {
        if let Some(t) = hf::token() {
            let v = http::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| remote("the hub token is not a valid header value"))?;
            guarded.headers.insert(http::header::AUTHORIZATION, v);
        }
    }
    Ok(Arc::new(
        object_store::http::HttpBuilder::new()
            .with_url(base)
            .with_client_options(client)
            .with_http_connector(guarded)
            .with_retry(retry)
            .build()
            .map_err(|e| remote(one_line(&e)))?,
    ))
}

/// The store path of the object `url` names: its path decoded (a key a
/// listing gave is in it as `scheme::object_url` wrote it). Reads and
/// deletes both find their object by it.
pub(super) fn object_path(url: &url::Url) -> Result<ObjPath> {
    ObjPath::from_url_path(url.path()).map_err(|e| remote(format!("not a valid object path: {e}")))
}
