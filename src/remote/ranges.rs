//! A bucket prefix listed in parallel, by ranges of its key space: a
//! prefix of 100,000 keys is 100 pages of 1,000, and listed page after
//! page 30 ms away it takes 3 s before the last key is known.
//!
//! One listing by delimiter finds the prefix's children (a compile
//! cache's `neuronxcc-<version>/` directories); their names, and in each
//! compiler version's directory the points where its entries' names
//! change first digit (`MODULE_1` … `MODULE_f`), are the boundaries
//! b₁ < b₂ < … < bₖ of the ranges (−∞, b₁], (b₁, b₂], …, (bₖ, ∞). Each
//! range is listed from its start (a start-after offset, which S3, GCS and
//! Azure apply on the server) until a key passes its end; the ranges are
//! listed at once, up to `--io-depth` of them. Whatever the keys, every
//! key lies in exactly one range: none is missed or listed twice. A
//! boundary never falls inside a compile-cache entry (`…/MODULE_x+y/`), so
//! each entry's keys arrive together, in order, within one range.

use std::sync::{mpsc, Arc};

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectMeta, ObjectStore};

use super::link;
use super::redact::redact;
use super::scheme::object_url;
use super::store::*;
use crate::error::{Error, Result};

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The object's URL: the bucket's, and the key with its `%`, `#` and
    /// `?` percent-encoded (so that the URL names that key: reading or
    /// deleting by it reaches that object).
    pub url: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag, as the store gives it (with its quotes), or else its last
    /// modification time: what a catalogue compares to skip it.
    pub version: String,
    /// When it was last modified, as the listing says.
    pub modified: std::time::SystemTime,
}

/// A part of a prefix's key space: the keys after `after` (from the
/// first, if `None`) up to and including `until` (to the last, if `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) after: Option<String>,
    pub(super) until: Option<String>,
}

/// What a listing in parallel hands on, as it comes: a key of one of its
/// ranges (each range's keys in key order, ranges interleaved), or the
/// end of a range (every key of it handed on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    Key { range: usize, object: Listed },
    End { range: usize },
}

/// Directory names under which a compile cache's entries spread by the
/// first digit of their `MODULE_` names (decimal or hex).
const VERSION_DIR: &str = "neuronxcc-";
const DIGITS: &str = "123456789abcdef";
/// Most ranges made of a prefix's plain children (not compiler versions).
const MOST_CHILDREN: usize = 64;
/// Most levels descended through a prefix holding a single child.
const MOST_LEVELS: usize = 4;

/// The last component of a key prefix (`a/b/neuronxcc-2.15`: `neuronxcc-2.15`).
fn last(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

/// The boundaries inside a compiler version's directory `dir`: where its
/// entries' names change first digit.
fn version_bounds(dir: &str) -> impl Iterator<Item = String> + '_ {
    DIGITS.chars().map(move |c| format!("{dir}/MODULE_{c}"))
}

/// The ranges a prefix with the children `children` (common prefixes, in
/// key order, without their trailing `/`) is listed by: a range from each
/// child on (at most [`MOST_CHILDREN`] of them, spread evenly), and in each
/// compiler version's directory one per first digit of an entry's name.
pub(super) fn ranges(children: &[String]) -> Vec<Range> {
    let step = children.len().div_ceil(MOST_CHILDREN).max(1);
    let mut bounds: Vec<String> = Vec::new();
    for (i, c) in children.iter().enumerate() {
        // The first child's keys follow only the prefix's own objects.
        if i > 0 && i % step == 0 {
            bounds.push(c.clone());
        }
        if last(c).starts_with(VERSION_DIR) {
            bounds.extend(version_bounds(c));
        }
    }
    split_at(bounds)
}

/// The ranges between `bounds` (sorted and deduplicated here). A bound
/// the store cannot be asked to list after as it is spelled (a key the
/// store's paths would write otherwise: `object_store` percent-encodes
/// `"`, `#`, `%` and others in a path made from a string) is dropped:
/// its two ranges are one, and no key falls between a range's end and the
/// next one's start.
fn split_at(mut bounds: Vec<String>) -> Vec<Range> {
    bounds.retain(|b| exact(b).is_some());
    bounds.sort();
    bounds.dedup();
    let mut out = Vec::with_capacity(bounds.len() + 1);
    let mut after = None;
    for b in bounds {
        out.push(Range {
            after: after.take(),
            until: Some(b.clone()),
        });
        after = Some(b);
    }
    out.push(Range { after, until: None });
    out
}

/// `key` as a store path spelled exactly as it is (`None` if it has no
/// such path: a control character, an empty segment).
fn exact(key: &str) -> Option<ObjPath> {
    ObjPath::parse(key).ok().filter(|p| p.as_ref() == key)
}

/// How the prefix is listed: its ranges, or (a prefix holding no child)
/// the objects its listing by delimiter gave, which is all of them.
enum Plan {
    Ranges(Vec<Range>),
    Listed(Vec<ObjectMeta>),
}

/// The plan for `prefix`: a compiler version's directory is split by its
/// entries' names at once; an entry's directory is listed whole; any other
/// prefix is listed by delimiter (descending through a single child) and
/// split at its children.
async fn plan(store: &dyn ObjectStore, prefix: Option<&ObjPath>, url: &str) -> Result<Plan> {
    let name = prefix
        .map(|p| last(p.as_ref()).to_string())
        .unwrap_or_default();
    if name.starts_with(VERSION_DIR) {
        let dir = prefix.map(|p| p.as_ref().to_string()).unwrap_or_default();
        return Ok(Plan::Ranges(split_at(version_bounds(&dir).collect())));
    }
    if name.starts_with("MODULE_") {
        return Ok(Plan::Ranges(split_at(Vec::new())));
    }
    let mut at = prefix.cloned();
    for _ in 0..MOST_LEVELS {
        let got = with_delimiter(store, at.as_ref(), url).await?;
        let children: Vec<String> = got
            .common_prefixes
            .iter()
            .map(|p| p.as_ref().to_string())
            .collect();
        if children.is_empty() {
            return Ok(Plan::Listed(got.objects));
        }
        let only = children.len() == 1 && got.objects.is_empty();
        if only
            && !last(&children[0]).starts_with(VERSION_DIR)
            && !last(&children[0]).starts_with("MODULE_")
        {
            at = got.common_prefixes.into_iter().next();
            continue;
        }
        return Ok(Plan::Ranges(ranges(&children)));
    }
    Ok(Plan::Ranges(split_at(Vec::new())))
}

/// A listing by delimiter of `prefix`, asked for again a bounded number of
/// times if it fails (not found and access denied are answers).
async fn with_delimiter(
    store: &dyn ObjectStore,
    prefix: Option<&ObjPath>,
    url: &str,
) -> Result<object_store::ListResult> {
    let mut tries = 0;
    loop {
        let _counted = link::Request::start();
        match store.list_with_delimiter(prefix).await {
            Ok(r) => return Ok(r),
            Err(e) if is_answer(&e) || tries >= retries() => return Err(describe(&e, None)),
            Err(e) => {
                tries += 1;
                log::debug!(
                    "{}: listing by delimiter failed ({}): again",
                    redact(url),
                    describe(&e, None)
                );
                backoff(tries).await;
            }
        }
    }
}

/// Whether the failure is the store's answer, not worth asking again.
fn is_answer(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::NotFound { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
    )
}

fn listed_of(root: &str, m: ObjectMeta) -> Listed {
    Listed {
        url: object_url(root, m.location.as_ref()),
        size: m.size,
        version: m.e_tag.unwrap_or_else(|| m.last_modified.to_rfc3339()),
        modified: m.last_modified.into(),
    }
}

/// Every object under the bucket prefix `prefix` of `store` (whose URLs
/// start with `root`), handed to `each` as ranges of it are listed, up to
/// `depth` ranges at once. A listing that fails partway has handed on
/// what it listed before the error.
pub(super) fn list_ranges(
    url: &str,
    root: &str,
    store: Arc<dyn ObjectStore>,
    prefix: Option<ObjPath>,
    depth: usize,
    each: &mut dyn FnMut(Listing),
) -> Result<()> {
    let rt = runtime()?;
    let ranges = match rt.block_on(plan(store.as_ref(), prefix.as_ref(), url))? {
        Plan::Listed(objects) => {
            for m in objects {
                each(Listing::Key {
                    range: 0,
                    object: listed_of(root, m),
                });
            }
            each(Listing::End { range: 0 });
            return Ok(());
        }
        Plan::Ranges(r) => r,
    };
    log::debug!("{}: listed in {} ranges", redact(url), ranges.len());
    let (tx, rx) = mpsc::channel::<std::result::Result<Listing, Error>>();
    let (root2, url2) = (root.to_string(), url.to_string());
    let task = rt.spawn(async move {
        let listed = futures_util::stream::iter(ranges.into_iter().enumerate())
            .map(|(i, r)| {
                let (store, prefix, tx) = (store.clone(), prefix.clone(), tx.clone());
                let (root, url) = (root2.clone(), url2.clone());
                async move {
                    list_range(store.as_ref(), prefix.as_ref(), &r, &url, &mut |m| {
                        let object = listed_of(&root, m);
                        let _ = tx.send(Ok(Listing::Key { range: i, object }));
                    })
                    .await?;
                    let _ = tx.send(Ok(Listing::End { range: i }));
                    Ok::<_, Error>(())
                }
            })
            .buffer_unordered(depth.max(1))
            .try_collect::<Vec<()>>()
            .await;
        if let Err(e) = listed {
            let _ = tx.send(Err(e));
        }
    });
    let _abort = AbortOnDrop(task);
    for got in rx {
        each(got?);
    }
    Ok(())
}

/// Stops the listing's task when the caller is done with it (an error).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The keys of one range, in key order, to `each`; a page that fails (a
/// reset, a cut body, a 5xx past the client's own retries) is asked for
/// again after the last key listed, a bounded number of times.
async fn list_range(
    store: &dyn ObjectStore,
    prefix: Option<&ObjPath>,
    range: &Range,
    url: &str,
    each: &mut (dyn FnMut(ObjectMeta) + Send),
) -> Result<()> {
    // (The bounds are exact paths: `split_at`.)
    let mut last: Option<ObjPath> = range.after.as_deref().and_then(exact);
    let mut tries = 0;
    let mut listed = 0u64;
    loop {
        let _counted = link::Request::start();
        let mut s = match &last {
            None => store.list(prefix),
            Some(after) => store.list_with_offset(prefix, after),
        };
        let failed = loop {
            match s.next().await {
                None => return Ok(()),
                Some(Err(e)) => break e,
                // A store that ignores the offset (fake-gcs-server's XML
                // API) lists from the first key again: what the range
                // starts after, or was handed on, is not handed twice.
                Some(Ok(m))
                    if last
                        .as_ref()
                        .is_some_and(|l| m.location.as_ref() <= l.as_ref()) => {}
                Some(Ok(m)) => {
                    if range
                        .until
                        .as_deref()
                        .is_some_and(|u| m.location.as_ref() > u)
                    {
                        return Ok(());
                    }
                    last = Some(m.location.clone());
                    listed += 1;
                    each(m);
                }
            }
        };
        if is_answer(&failed) || tries >= retries() {
            return Err(describe(&failed, None));
        }
        tries += 1;
        log::debug!(
            "{}: listing failed ({}): again after {listed} keys",
            redact(url),
            describe(&failed, None),
        );
        backoff(tries).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range each key falls in, by the ranges' own test.
    fn place(ranges: &[Range], key: &str) -> Vec<usize> {
        ranges
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.after.as_deref().is_none_or(|a| key > a)
                    && r.until.as_deref().is_none_or(|u| key <= u)
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn keys() -> Vec<String> {
        let mut k: Vec<String> = [
            "a.neff",
            "cache",
            "cache/MODULE_0+a/model.neff",
            "neuronxcc-2.15",
            "neuronxcc-2.15-x/MODULE_1/model.neff",
            "neuronxcc-2.15.0/MODULE_",
            "neuronxcc-2.15.0/MODULE_0",
            "neuronxcc-2.15.0/MODULE_0123+ab/model.neff",
            "neuronxcc-2.15.0/MODULE_1",
            "neuronxcc-2.15.0/MODULE_1+a/model.done",
            "neuronxcc-2.15.0/MODULE_1+a/model.neff",
            "neuronxcc-2.15.0/MODULE_9z/x",
            "neuronxcc-2.15.0/MODULE_A1+b/model.neff",
            "neuronxcc-2.15.0/MODULE_f",
            "neuronxcc-2.15.0/MODULE_ff+c/model.neff",
            "neuronxcc-2.15.0/MODULE_g/model.neff",
            "neuronxcc-2.15.0/MODULE_\u{e9}/model.neff",
            "neuronxcc-2.15.0/a/b/c/model.neff",
            "neuronxcc-2.15.0/zz.neff",
            "neuronxcc-2.15.0//x",
            "neuronxcc-2.16.0/MODULE_5+e/model.neff",
            "z",
            "\u{10ffff}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        k.sort();
        k
    }

    #[test]
    fn every_key_falls_in_exactly_one_range_whatever_its_name() {
        let children: Vec<String> = [
            "cache",
            "neuronxcc-2.15-x",
            "neuronxcc-2.15.0",
            "neuronxcc-2.16.0",
        ]
        .map(String::from)
        .to_vec();
        let r = ranges(&children);
        // Three plain boundaries, fifteen in each of the three versions.
        assert_eq!(r.len(), 3 + 3 * 15 + 1);
        for k in keys() {
            assert_eq!(place(&r, &k).len(), 1, "{k}: {:?}", place(&r, &k));
        }
        // Ranges are in key order: listed one after another, they give
        // the keys in the order the store lists them.
        let order: Vec<usize> = keys().iter().map(|k| place(&r, k)[0]).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    }

    #[test]
    fn an_entrys_keys_share_one_range() {
        let r = ranges(&["v".into(), "neuronxcc-2.15.0".into()]);
        for entry in [
            "neuronxcc-2.15.0/MODULE_1+a/",
            "neuronxcc-2.15.0/MODULE_f+a/",
            "neuronxcc-2.15.0/MODULE_0+a/",
        ] {
            let at: Vec<Vec<usize>> = ["", "model.neff", "model.neff.lock", "\u{10ffff}"]
                .iter()
                .map(|f| place(&r, &format!("{entry}{f}")))
                .collect();
            assert!(at.windows(2).all(|w| w[0] == w[1]), "{entry}: {at:?}");
        }
    }

    #[test]
    fn each_range_starts_after_its_bound_spelled_as_the_store_lists_it() {
        // `object_store` percent-encodes `"`, `#`, `%` in a path made from
        // a string: a range starting after `b%22q` missed the keys of
        // `b"q/` (`"` sorts below `%`). A bound no store path spells
        // exactly (a control character) is dropped.
        let children: Vec<String> = ["a", "b\"q", "c#d", "e%20f", "g\th", "z"]
            .map(String::from)
            .to_vec();
        let r = ranges(&children);
        assert_eq!(r.len(), 5, "{r:?}");
        for range in &r {
            if let Some(a) = &range.after {
                assert_eq!(exact(a).as_ref().map(|p| p.as_ref()), Some(a.as_str()));
            }
        }
        for k in [
            "a/x.neff",
            "b\"q/y.neff",
            "c#d/x",
            "e%20f/x",
            "g\th/x",
            "z/w.neff",
        ] {
            assert_eq!(place(&r, k).len(), 1, "{k}: {r:?}");
        }
    }

    #[test]
    fn many_plain_children_make_a_bounded_number_of_ranges() {
        let children: Vec<String> = (0..5000).map(|i| format!("d{i:05}")).collect();
        let r = ranges(&children);
        assert!(r.len() <= MOST_CHILDREN + 1, "{}", r.len());
        assert!(r.len() > MOST_CHILDREN / 2, "{}", r.len());
        assert_eq!(
            ranges(&["only".into()]),
            [Range {
                after: None,
                until: None
            }]
        );
    }
}
