//! A failed request as one line in the project's words: what failed, the
//! server's status where there was one, and after how many tries and how
//! long; never the HTTP client's internals (its retry settings, the URL
//! with its query, `(os error 111)`).
//!
//! `object_store` reports a request that failed after its retries as a
//! private `RetryError` whose text is `Error performing GET <url> in
//! 810ms, after 4 retries, max_retries: 4, retry_timeout: 150s - <why>`;
//! the tries and the time are read from that text (the type cannot be
//! named), the transport's failure from the public `HttpError` and the
//! `std::io::Error` beneath it. tests/it/remote.rs checks the words
//! against real servers and faults (refused, reset, 403, 404, 503, a
//! stall).

use std::error::Error as StdError;
use std::io::ErrorKind as Io;

use object_store::client::{HttpError, HttpErrorKind};

use super::redact::redact_text;
use crate::error::Error;

/// An `object_store` error as the crate's error: not found, access denied
/// and not authenticated keep their I/O class (`NotFound`,
/// `PermissionDenied`), a refused connection and a timeout theirs
/// (`ConnectionRefused`, `TimedOut`); every one is I/O (exit 3). `etag`:
/// the version a read was pinned to, for a failed `If-Match`; `timeout`:
/// each request's (`NEFF_REMOTE_TIMEOUT`), which a timeout names.
pub(super) fn describe_timed(e: &object_store::Error, etag: Option<&str>, timeout: u64) -> Error {
    use object_store::Error as E;
    let tried = Tried::of(e);
    match e {
        E::NotFound { .. } => remote_as(
            Io::NotFound,
            format!(
                "no such object (or no such bucket){}",
                tried.said(Some("404"))
            ),
        ),
        E::Precondition { .. } => Error::ObjectChanged {
            etag: etag.unwrap_or("").to_string(),
        },
        E::PermissionDenied { .. } => remote_as(
            Io::PermissionDenied,
            format!("access denied{}", tried.said(Some("403"))),
        ),
        E::Unauthenticated { .. } => remote_as(
            Io::PermissionDenied,
            format!("not authenticated{}", tried.said(Some("401"))),
        ),
        _ => {
            let (io, what) = transport(e, timeout);
            remote_as(io, format!("{what}{}", tried.said(None)))
        }
    }
}

/// What a failure that is not one of the named answers was, in words,
/// with its I/O class.
fn transport(e: &object_store::Error, timeout: u64) -> (Io, String) {
    let chain = || std::iter::successors(Some(e as &dyn StdError), |c| (*c).source());
    if let Some(status) = chain().find_map(|c| status_in(&c.to_string())) {
        return (Io::Other, format!("the server answered {status}"));
    }
    let os = chain().find_map(|c| c.downcast_ref::<std::io::Error>().map(|io| io.kind()));
    let kind = chain().find_map(|c| c.downcast_ref::<HttpError>().map(HttpError::kind));
    match (kind, os) {
        (_, Some(Io::ConnectionRefused)) => (
            Io::ConnectionRefused,
            "could not connect: connection refused".into(),
        ),
        (Some(HttpErrorKind::Timeout), _) | (_, Some(Io::TimedOut)) => (
            Io::TimedOut,
            format!("timed out (no answer within {timeout} s: NEFF_REMOTE_TIMEOUT)"),
        ),
        (_, Some(Io::ConnectionReset)) => (
            Io::ConnectionReset,
            "the connection was reset by the server".into(),
        ),
        (Some(HttpErrorKind::Connect), _) => {
            (Io::Other, format!("could not connect: {}", innermost(e)))
        }
        (Some(HttpErrorKind::Interrupted | HttpErrorKind::Request), _) => (
            Io::Other,
            format!("the connection was cut: {}", innermost(e)),
        ),
        (Some(HttpErrorKind::Decode), _) => (
            Io::Other,
            format!("the answer did not decode: {}", innermost(e)),
        ),
        _ => (Io::Other, innermost(e)),
    }
}

/// A request of the plain HTTP client (the hub's listing, the SSO
/// portal) that failed, in the same words as [`describe`]'s, without the
/// client's report.
pub(super) fn http_words_timed(e: &reqwest::Error, timeout: u64) -> String {
    let os = std::iter::successors(Some(e as &dyn StdError), |c| (*c).source())
        .find_map(|c| c.downcast_ref::<std::io::Error>().map(|io| io.kind()));
    if os == Some(Io::ConnectionRefused) {
        "could not connect: connection refused".into()
    } else if e.is_timeout() {
        format!("timed out (no answer within {timeout} s: NEFF_REMOTE_TIMEOUT)")
    } else if e.is_connect() {
        format!("could not connect: {}", innermost(e))
    } else if let Some(status) = e.status() {
        format!("the server answered {status}")
    } else {
        innermost(e)
    }
}

/// The HTTP status a failed request was answered with, if it was.
pub(super) fn answered(e: &object_store::Error) -> Option<u16> {
    std::iter::successors(Some(e as &dyn StdError), |c| (*c).source())
        .find_map(|c| status_in(&c.to_string()))
        .and_then(|s| s.get(..3)?.parse().ok())
}

/// The status in a message of `object_store`'s (`Server returned non-2xx
/// status code: 503 Service Unavailable: …`).
fn status_in(text: &str) -> Option<String> {
    let at = text.find("status code: ")? + "status code: ".len();
    let rest = &text[at..];
    let end = rest.find(':').unwrap_or(rest.len());
    let status = rest[..end].trim();
    status
        .get(..3)
        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
        .then(|| status.to_string())
}

/// The deepest cause's words (the one a user acts on), without the
/// operating system's error number, on one line.
fn innermost(e: &dyn StdError) -> String {
    let mut last = e;
    while let Some(c) = last.source() {
        last = c;
    }
    let mut text = last.to_string();
    if let Some(i) = text.find(" (os error ") {
        text.truncate(i);
    }
    let text = redact_text(&text).replace(['\n', '\r'], " ");
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => "the request failed".into(),
    }
}

/// How many times a request was made and how long that took, as the
/// client's report says (`None`: it does not say).
#[derive(Debug, Default, PartialEq)]
struct Tried {
    tries: Option<u64>,
    took: Option<String>,
}

impl Tried {
    fn of(e: &object_store::Error) -> Tried {
        let chain = std::iter::successors(Some(e as &dyn StdError), |c| (*c).source());
        chain
            .map(|c| c.to_string())
            .find_map(|t| Tried::parse(&t))
            .unwrap_or_default()
    }

    /// From `Error performing GET <url> in 810.3ms, after 4 retries, …`
    /// (no `after`: one try).
    fn parse(text: &str) -> Option<Tried> {
        let at = text.find("Error performing ")?;
        let text = &text[at..];
        let took = text.find(" in ").map(|i| {
            let rest = &text[i + 4..];
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            rest[..end].to_string()
        });
        let retries = text.find(", after ").and_then(|i| {
            let rest = &text[i + 8..];
            rest.split(' ').next()?.parse::<u64>().ok()
        });
        Some(Tried {
            tries: Some(retries.unwrap_or(0) + 1),
            took: took.and_then(|t| seconds(&t)),
        })
    }

    /// ` (403, 5 tries in 2.1 s)`, as much of it as is known.
    fn said(&self, status: Option<&str>) -> String {
        let mut parts = Vec::new();
        if let Some(s) = status {
            parts.push(s.to_string());
        }
        match (self.tries, &self.took) {
            (Some(1), Some(t)) => parts.push(format!("1 try in {t}")),
            (Some(n), Some(t)) => parts.push(format!("{n} tries in {t}")),
            (Some(1), None) => parts.push("1 try".into()),
            (Some(n), None) => parts.push(format!("{n} tries")),
            _ => {}
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }
}

/// A Rust `Duration`'s debug text (`810.3ms`, `2.5s`, `14µs`) as seconds
/// (`0.81 s`).
fn seconds(debug: &str) -> Option<String> {
    let split = debug.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = debug.split_at(split);
    let n: f64 = n.parse().ok()?;
    let s = match unit {
        "s" => n,
        "ms" => n / 1e3,
        "µs" | "us" => n / 1e6,
        "ns" => n / 1e9,
        _ => return None,
    };
    Some(format!("{s:.2} s"))
}

pub(super) fn remote(reason: impl Into<String>) -> Error {
    remote_as(std::io::ErrorKind::Other, reason)
}

/// A remote failure of I/O class `io` (a URL in `reason` made printable).
pub(super) fn remote_as(io: std::io::ErrorKind, reason: impl Into<String>) -> Error {
    let reason = reason.into();
    Error::Remote {
        reason: redact_text(&reason).into_owned(),
        io,
    }
}

/// An error's whole chain of causes, on one line.
pub(super) fn one_line(e: &dyn std::error::Error) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_report_gives_tries_and_time() {
        let t = Tried::parse(
            "Error performing GET http://h/x?sig=s in 810.2ms, after 4 retries, max_retries: 4, \
             retry_timeout: 150s  - HTTP error: error sending request",
        )
        .unwrap();
        assert_eq!(t.said(None), " (5 tries in 0.81 s)");
        let t = Tried::parse("Error performing GET http://h/x in 3.2s - Server returned").unwrap();
        assert_eq!(t.said(Some("403")), " (403, 1 try in 3.20 s)");
        assert_eq!(Tried::parse("something else"), None);
        assert_eq!(Tried::default().said(None), "");
    }

    #[test]
    fn a_status_is_read_from_the_clients_words() {
        assert_eq!(
            status_in("Server returned non-2xx status code: 503 Service Unavailable: <xml>"),
            Some("503 Service Unavailable".into())
        );
        assert_eq!(status_in("no status here"), None);
    }

    #[test]
    fn the_innermost_cause_loses_its_os_error_number_and_any_secret() {
        let e = std::io::Error::other("Connection refused (os error 111)");
        assert_eq!(innermost(&e), "connection refused");
        let e = std::io::Error::other("bad http://u:p@h/x?sig=s");
        assert_eq!(innermost(&e), "bad http://h/x?sig=<redacted>");
    }
}
