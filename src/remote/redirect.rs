//! What a redirect is handed: nothing that signs or authorises the
//! request, unless it stays on the same origin.
//!
//! A store's requests carry credentials in their headers (S3's
//! `Authorization` and `x-amz-security-token`, Azure's `x-ms-*`, the hub's
//! bearer token) or in their URL (a presigned URL's query). The HTTP
//! client `object_store` builds follows redirects itself, hands a
//! redirect to another host every header but `Authorization` and cookies,
//! and names the whole original URL (its signature included) in a
//! `Referer`. So every store here gets its client from [`Guarded`]
//! instead: a client that follows no redirect itself (and sets no
//! `Referer`), wrapped in a service that follows them: up to
//! [`MOST_REDIRECTS`], every header kept while scheme, host and port stay
//! the same, and on a redirect to another origin `Authorization`,
//! `Proxy-Authorization`, cookies, `Referer` and every `x-amz-*`,
//! `x-goog-*` and `x-ms-*` header dropped. The next URL is the `Location`
//! as the server wrote it, resolved against the current one: the
//! original's query goes nowhere it does not name it.
//!
//! The plain client of the hub's listing and the SSO portal
//! ([`plain_policy`]) follows a redirect on the same origin only: one to
//! another origin is refused, whatever the request carries.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use http::header::{self, HeaderMap, HeaderName};
use http::{Method, StatusCode};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
};
use object_store::{ClientConfigKey, ClientOptions};

/// The most redirects one request follows (as reqwest's default policy).
pub(super) const MOST_REDIRECTS: usize = 10;

/// Whether `a` and `b` are one origin: scheme, host and port (the
/// scheme's default when none is written).
pub(super) fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// Whether a header may be handed to another origin: not one that
/// authorises or signs a request, names the page it came from, or is a
/// cloud's own.
fn may_cross(name: &HeaderName) -> bool {
    let n = name.as_str();
    !(name == header::AUTHORIZATION
        || name == header::PROXY_AUTHORIZATION
        || name == header::COOKIE
        || name == header::REFERER
        || n == "cookie2"
        || n.starts_with("x-amz-")
        || n.starts_with("x-goog-")
        || n.starts_with("x-ms-"))
}

/// `headers` without those [`may_cross`] keeps back.
pub(super) fn strip_for_another_origin(headers: &mut HeaderMap) {
    let gone: Vec<HeaderName> = headers.keys().filter(|n| !may_cross(n)).cloned().collect();
    for n in gone {
        headers.remove(&n);
    }
}

/// The redirect policy of the plain client ([`super::store::http_client`]):
/// on the same origin, followed up to [`MOST_REDIRECTS`]; to another,
/// refused (its request may carry a token in a header of its own).
pub(super) fn plain_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let crossed = attempt
            .previous()
            .last()
            .is_some_and(|prev| !same_origin(prev, attempt.url()));
        if crossed {
            let to = super::redact(attempt.url().as_str()).into_owned();
            attempt.error(format!("refused a redirect to another origin ({to})"))
        } else if attempt.previous().len() > MOST_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// The connector every store is built with: of [`ClientOptions`], those
/// this crate sets or `object_store` sets for its credential clients (the
/// timeouts, plain HTTP, the user agent), applied as `object_store` would
/// (the others, a proxy or certificates, are set nowhere here and not
/// read); `headers` sent with every request (the hub's token); and
/// redirects followed as the module says.
#[derive(Debug, Default)]
pub(super) struct Guarded {
    pub(super) headers: HeaderMap,
}

impl HttpConnector for Guarded {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client =
            client_for(options, &self.headers).map_err(|e| object_store::Error::Generic {
                store: "HTTP",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(Follow { client }))
    }
}

/// A duration as `object_store` prints a configured one (humantime's
/// `30s`, `1m 30s`, `500ms`).
fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for part in text.split_whitespace() {
        let digits = part.find(|c: char| !c.is_ascii_digit())?;
        let n: u64 = part[..digits].parse().ok()?;
        let unit = match &part[digits..] {
            "ns" => Duration::from_nanos(1),
            "us" | "µs" => Duration::from_micros(1),
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            "d" => Duration::from_secs(86_400),
            _ => return None,
        };
        total += unit.checked_mul(u32::try_from(n).ok()?)?;
    }
    Some(total)
}

/// A client that follows no redirect, as `options` and `headers` say.
fn client_for(options: &ClientOptions, headers: &HeaderMap) -> reqwest::Result<reqwest::Client> {
    let get = |k: ClientConfigKey| options.get_config_value(&k);
    let time = |k: ClientConfigKey| get(k).as_deref().and_then(parse_duration);
    let agent = get(ClientConfigKey::UserAgent)
        .unwrap_or_else(|| concat!("neff/", env!("CARGO_PKG_VERSION")).to_string());
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .user_agent(agent)
        .default_headers(headers.clone())
        // A body's length is the object's: never decoded on the way.
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .https_only(get(ClientConfigKey::AllowHttp).as_deref() != Some("true"));
    if let Some(t) = time(ClientConfigKey::Timeout) {
        b = b.timeout(t);
    }
    if let Some(t) = time(ClientConfigKey::ConnectTimeout) {
        b = b.connect_timeout(t);
    }
    if let Some(t) = time(ClientConfigKey::ReadTimeout) {
        b = b.read_timeout(t);
    }
    b.build()
}

/// The service that follows redirects for a [`Guarded`] client.
#[derive(Debug)]
struct Follow {
    client: reqwest::Client,
}

/// The URL a redirect answered to `req` names, resolved against `req`'s;
/// `None` when the response is no redirect to follow.
fn next_url(req_uri: &http::Uri, r: &HttpResponse) -> Option<url::Url> {
    let redirect = matches!(
        r.status(),
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    );
    if !redirect {
        return None;
    }
    let location = r.headers().get(header::LOCATION)?.to_str().ok()?;
    url::Url::parse(&req_uri.to_string())
        .ok()?
        .join(location)
        .ok()
}

/// One error of the redirects, in the client's kind.
fn redirect_error(reason: String) -> HttpError {
    HttpError::new(HttpErrorKind::Unknown, std::io::Error::other(reason))
}

impl Follow {
    async fn follow(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (mut parts, mut body) = req.into_parts();
        for _ in 0..=MOST_REDIRECTS {
            let req = HttpRequest::from_parts(parts.clone(), body.clone());
            let r = HttpService::call(&self.client, req).await?;
            let Some(next) = next_url(&parts.uri, &r) else {
                return Ok(r);
            };
            let here = url::Url::parse(&parts.uri.to_string())
                .map_err(|e| redirect_error(format!("not a valid URL: {e}")))?;
            // A 303, or a 301/302 to a POST, is followed by a GET
            // without a body (as browsers and reqwest do).
            let status = r.status();
            let to_get = status == StatusCode::SEE_OTHER && parts.method != Method::HEAD
                || matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                    && parts.method == Method::POST;
            if to_get {
                parts.method = Method::GET;
                body = object_store::client::HttpRequestBody::empty();
                for h in [
                    header::CONTENT_LENGTH,
                    header::CONTENT_TYPE,
                    header::CONTENT_ENCODING,
                ] {
                    parts.headers.remove(h);
                }
            }
            if !same_origin(&here, &next) {
                strip_for_another_origin(&mut parts.headers);
                log::debug!(
                    "a redirect to another origin: {} (no credential handed on)",
                    super::redact(next.as_str())
                );
            }
            parts.uri = next
                .as_str()
                .parse()
                .map_err(|e| redirect_error(format!("not a valid redirect: {e}")))?;
        }
        Err(redirect_error("too many redirects".into()))
    }
}

impl HttpService for Follow {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(self.follow(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(same_origin(&u("https://h/a?x=1"), &u("https://h:443/b")));
        assert!(!same_origin(&u("https://h/a"), &u("http://h/a")));
        assert!(!same_origin(&u("http://h:1/a"), &u("http://h:2/a")));
        assert!(!same_origin(
            &u("http://127.0.0.1/a"),
            &u("http://127.0.0.2/a")
        ));
    }

    #[test]
    fn only_harmless_headers_cross() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("authorization", "AWS4-HMAC-SHA256 …"),
            ("x-amz-security-token", "t"),
            ("X-Amz-Date", "d"),
            ("x-goog-user-project", "p"),
            ("x-ms-version", "v"),
            ("cookie", "c"),
            ("referer", "https://h/x?X-Amz-Signature=s"),
            ("range", "bytes=0-1"),
            ("if-match", "\"e\""),
            ("user-agent", "neff"),
        ] {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        strip_for_another_origin(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["if-match", "range", "user-agent"]);
    }

    /// A server on 127.0.0.1 answering every request with `answer`, and
    /// the request lines it received.
    fn serve(answer: String) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use std::io::{BufRead, BufReader, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for mut c in l.incoming().map_while(Result::ok) {
                let mut r = BufReader::new(c.try_clone().unwrap());
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let mut h = String::new();
                while r.read_line(&mut h).unwrap() > 2 {
                    h.clear();
                }
                log.lock().unwrap().push(line.trim().to_string());
                c.write_all(answer.as_bytes()).unwrap();
            }
        });
        (base, seen)
    }

    #[test]
    fn the_plain_client_follows_its_own_origin_and_refuses_another() {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        let (other, other_seen) = serve(ok.into());
        let moved = |to: &str| {
            format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        };
        let (away, _) = serve(moved(&format!("{other}/x?sig=SECRET")));
        let (home, home_seen) = serve(moved("/x"));
        let http = super::super::store::http_client().unwrap();
        let rt = super::super::store::runtime().unwrap();
        let get = |url: String| rt.block_on(async { http.get(url).send().await });
        let e = get(format!("{away}/a")).unwrap_err();
        let words = super::super::store::http_words(&e);
        assert!(
            words.starts_with("refused a redirect to another origin (http://"),
            "{words}"
        );
        assert!(!words.contains("SECRET"), "{words}");
        assert!(other_seen.lock().unwrap().is_empty());
        // On its own origin: followed (to the same 302 again, until too
        // many).
        let e = get(format!("{home}/a")).unwrap_err();
        assert!(super::super::store::http_words(&e).contains("too many redirects"));
        assert!(home_seen.lock().unwrap().len() > MOST_REDIRECTS);
    }

    #[test]
    fn durations_read_as_object_store_prints_them() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("1m 30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("3 s"), None);
    }
}
