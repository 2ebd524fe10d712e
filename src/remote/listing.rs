//! Listing a prefix: a bucket's keys page by page, a hub repository's
//! tree, and the sizes listings saw (an object a listing said is small is
//! read in one request).

use std::sync::{Arc, Mutex, OnceLock};

use object_store::path::Path as ObjPath;
use object_store::ObjectStore;

use super::failure::*;
use super::ranges::{Listed, Listing};
use super::redact::{redact, redact_text};
use super::scheme::*;
use super::store::*;
use super::{hf, link};
use crate::error::Result;

/// Every object under the S3 prefix `url`, whatever its key (a compile
/// cache's `model.done`, `model.log` and locks too), in key order.
pub fn list_all(url: &str) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    if is_hf(url) {
        out = list_hf(url)?;
    } else {
        list_bucket(url, &mut |l| {
            if let Listing::Key { object, .. } = l {
                out.push(object)
            }
        })?;
    }
    out.sort_by(|a, b| a.url.cmp(&b.url));
    note_listed(&out);
    log::debug!("{}: listed {} objects", redact(url), out.len());
    Ok(out)
}

/// The bucket of an `s3://` URL, and its store and prefix.
/// The store of a bucket URL, the URL of its root (`s3://bucket`) and the
/// prefix the URL names in it.
pub(super) fn bucket_prefix(url: &str) -> Result<(String, Arc<dyn ObjectStore>, ObjPath)> {
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
/// handed to `each` as the listing finds it, listed by ranges of the key
/// space at once ([`super::ranges`]): each range's keys in the store's
/// order (by key: S3, GCS and Azure list in UTF-8 byte order), a range's
/// end once all of its keys are handed on, and the ranges interleaved.
/// Each object's size is noted first, for [`Object::open`] to fetch it
/// whole in one request. A listing that fails partway has handed on what
/// it listed before the error. (A hub repository's tree comes in no
/// order, as one range: [`list_all`].)
pub(crate) fn list_each(url: &str, each: &mut dyn FnMut(Listing)) -> Result<()> {
    if is_hf(url) {
        for object in list_all(url)? {
            each(Listing::Key { range: 0, object });
        }
        each(Listing::End { range: 0 });
        return Ok(());
    }
    list_bucket(url, &mut |l| {
        if let Listing::Key { object, .. } = &l {
            note_listed(std::slice::from_ref(object));
        }
        each(l)
    })
}

/// Every object under the bucket prefix `url`, by ranges listed at once,
/// up to `--io-depth` of them.
pub(super) fn list_bucket(url: &str, each: &mut dyn FnMut(Listing)) -> Result<()> {
    let (root, store, prefix) = bucket_prefix(url)?;
    let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
    let depth = crate::pool::io_depth();
    super::ranges::list_ranges(url, &root, store, prefix, depth, each)
}

/// The files under an `hf://` prefix, from the hub's tree API, page after
/// page; a page that fails is asked for again, a bounded number of times.
pub(super) fn list_hf(url: &str) -> Result<Vec<Listed>> {
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
pub(super) fn listed() -> &'static Mutex<std::collections::HashMap<String, u64>> {
    static LISTED: OnceLock<Mutex<std::collections::HashMap<String, u64>>> = OnceLock::new();
    LISTED.get_or_init(Default::default)
}

/// Most objects whose listed size is remembered (about 100 MiB of them).
pub(super) const LISTED_MAX: usize = 1 << 20;

pub(super) fn note_listed(objects: &[Listed]) {
    let mut map = listed().lock().unwrap_or_else(|p| p.into_inner());
    for o in objects.iter().filter(|o| o.url.ends_with(".neff")) {
        if map.len() >= LISTED_MAX {
            break;
        }
        map.insert(o.url.clone(), o.size);
    }
}

/// The size a listing gave for the object at `url`, if one did.
pub(super) fn listed_size(url: &str) -> Option<u64> {
    listed()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(url)
        .copied()
}
