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
//! timeouts, a bounded number of times, and each has a timeout. Its
//! redirects are followed here ([`redirect`]): one to another origin is
//! handed no credential, header or `Referer`.
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

mod ahead;
mod delete;
mod failure;
mod hf;
mod landing;
mod link;
mod listing;
mod object;
mod profile;
mod put;
mod ranges;
mod redact;
mod redirect;
mod scheme;
// How a catalogue keys a URL's row (without what signs it).
#[cfg(feature = "catalog")]
mod signed;
mod store;

pub use delete::delete;
pub(crate) use hf::canonical;
pub use link::{
    cap as byte_cap, set_cap as set_byte_cap, stats, through_below, whole_below, Stats,
};
pub use listing::list_all;
pub(crate) use listing::list_each;
pub use object::read_tail;
pub use object::{Object, RangeReader, ReadAhead, PART, STREAM_PART, WHOLE_BELOW};
pub use profile::set_profile;
pub(crate) use put::{put_new, Put};
pub use ranges::Listed;
pub(crate) use ranges::Listing;
pub use redact::{redact, redact_text};
pub use scheme::{is_listable, is_url};
pub(crate) use scheme::{key_part, object_url};
#[cfg(feature = "catalog")]
pub(crate) use signed::unsigned_query;
pub use store::set_access;

/// The bytes one object walked alone reads on in the time of a request
/// made alone, at the depth a read-ahead of it would have
/// ([`link::hop_worth`]); `None` while other objects are open.
pub(crate) fn hop_worth() -> Option<u64> {
    link::hop_worth(ahead::depth())
}

#[cfg(test)]
mod tests {
    use super::object::*;
    use super::store::*;
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
