//! A compile cache in a bucket (`s3://bucket/prefix/`): its entries found
//! from one listing of every key under the root (a bucket has no
//! directories: an entry is the keys under its `MODULE_*` prefix, or a
//! vLLM cache's `<32 hex key>` prefix), judged
//! from the names, sizes and times that listing gave, and removed by
//! deleting exactly the keys under the entries named.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;

use super::entry::{self, Listing, Obj, Odd, COMPLETE, LOG, LOG_TAIL};
use super::found::{CacheError, CacheNote, Found, Kind, Walked, VERSION_PREFIX};
use super::vllm::{self, Child};
use crate::error::Result;
use crate::remote;

/// `url` ending in one `/`.
fn dir_url(url: &str) -> String {
    format!("{}/", url.trim_end_matches('/'))
}

/// Finds the entries under the bucket prefix `root`, as
/// [`super::status`] finds them on disk: `neuronxcc-*/MODULE_*/` and
/// `MODULE_*/` directly under the root, and a vLLM cache's prefixes
/// directly under it (`<32 hex key>/`; in a root that is vLLM's alone,
/// every prefix). A `MODULE_*` key that is an object rather than a prefix
/// is an error of its own.
pub(super) fn find(root: &str, errors: &mut Vec<CacheError>) -> Result<Walked> {
    find_listed(root, errors).map(|(w, _)| w)
}

/// [`find`], and the listing it found the entries in (every object under
/// the root, in key order, with its size and version).
pub(super) fn find_listed(
    root: &str,
    errors: &mut Vec<CacheError>,
) -> Result<(Walked, Vec<remote::Listed>)> {
    let root = remote::canonical(root);
    let base = dir_url(&root);
    let objects = remote::list_all(&base)?;
    let root_version = base
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .and_then(|n| n.strip_prefix(VERSION_PREFIX))
        .map(str::to_string);
    let rels = || objects.iter().filter_map(|o| o.url.strip_prefix(&base));
    let top = |rel: &str| rel.split_once('/').map(|(t, _)| t.to_string());
    let wrapper = rels()
        .any(|r| top(r).is_some_and(|t| t.starts_with("MODULE_") || t.starts_with(VERSION_PREFIX)));
    let vllm_root = root_version.is_none()
        && rels().any(|r| match top(r) {
            Some(t) => !matches!(vllm::child(&t), Child::Other | Child::Sync),
            None => vllm::is_root_file(r),
        });
    let mut w = Walked {
        layout: root_version.is_some() || wrapper || vllm_root,
        ..Walked::default()
    };
    let mut entries: BTreeMap<String, Found> = BTreeMap::new();
    for o in &objects {
        let Some(rel) = o.url.strip_prefix(&base) else {
            continue;
        };
        let parts: Vec<&str> = rel.splitn(3, '/').collect();
        // (the entry's own name, its compiler version, the object's name
        // below it)
        let (name, version, below) = match parts.as_slice() {
            [m, rest @ ..] if m.starts_with("MODULE_") => {
                (*m, root_version.clone(), rest.join("/"))
            }
            [v, m, rest @ ..] if root_version.is_none() && m.starts_with("MODULE_") => {
                match v.strip_prefix(VERSION_PREFIX) {
                    Some(v) => (*m, Some(v.to_string()), rest.join("/")),
                    None => continue,
                }
            }
            [k, rest @ ..] if vllm_root && !rest.is_empty() => (*k, None, rest.join("/")),
            _ => continue,
        };
        let prefix = &o.url[..o.url.len() - below.len()];
        if below.is_empty() {
            errors.push(CacheError::new(
                std::path::Path::new(&o.url),
                "an entry that is an object, not a prefix of keys".into(),
            ));
            continue;
        }
        let dir = prefix.trim_end_matches('/').to_string();
        if !entries.contains_key(&dir) {
            let found = match entry::hashes(name) {
                Some((graph_hash, flags_hash)) => Some(Found {
                    dir: dir.clone().into(),
                    compiler: version,
                    graph_hash,
                    flags_hash,
                    objects: Some(Vec::new()),
                    odd: None,
                    kind: Kind::Wrapper,
                    parent: None,
                }),
                None => Found::vllm(dir.clone().into(), OsStr::new(name), !wrapper),
            };
            let Some(mut found) = found else {
                if vllm::child(name) == Child::Nki
                    && w.notes.iter().all(|n| n.path != Path::new(&dir))
                {
                    w.notes.push(CacheNote::new(
                        Path::new(&dir),
                        "vllm-neuron's NKI kernel cache (nki/<key>.json): not a compile entry, \
                         not judged, never removed"
                            .into(),
                    ));
                }
                continue;
            };
            found.objects = Some(Vec::new());
            entries.insert(dir.clone(), found);
        }
        if let Some(f) = entries.get_mut(&dir) {
            f.objects
                .get_or_insert_with(Vec::new)
                .push((below, o.size, o.modified));
        }
    }
    w.found = entries.into_values().collect();
    Ok((w, objects))
}

/// The text of vLLM's `.compilation_complete` in the entry `dir` (its last
/// bytes), or why it could not be read.
pub(super) fn marker_text(dir: &str) -> Result<String, Odd> {
    let url = format!("{}{COMPLETE}", dir_url(dir));
    match remote::read_tail(&url, vllm::MARKER_TAIL) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) => Err(Odd::Unreadable(COMPLETE.into(), e.to_string())),
    }
}

/// The listing of `objects` (of one entry).
pub(super) fn listing(objects: &[Obj]) -> Listing {
    Listing::of_objects(objects.iter().map(|(n, s, t)| (n.as_str(), *s, *t)))
}

/// The entry at `dir` (a URL) listed again.
pub(super) fn relist(dir: &str) -> io::Result<Vec<Obj>> {
    let base = dir_url(dir);
    let objects = remote::list_all(&base).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(objects
        .into_iter()
        .filter_map(|o| {
            let rel = o.url.strip_prefix(&base)?.to_string();
            Some((rel, o.size, o.modified))
        })
        .collect())
}

/// The last error line of the entry `dir`'s log, from its last bytes (or
/// why it could not be read).
pub(super) fn log_line(dir: &str) -> Result<String, Odd> {
    let url = format!("{}{LOG}", dir_url(dir));
    match remote::read_tail(&url, LOG_TAIL) {
        Ok(b) => Ok(entry::error_line(&String::from_utf8_lossy(&b))),
        Err(e) => Err(Odd::Unreadable(LOG.into(), e.to_string())),
    }
}

/// Deletes (with `apply`) every key under the entry `dir` as listed now;
/// `check` sees that listing first and may refuse (the entry changed since
/// it was judged).
pub(super) fn remove(
    dir: &str,
    apply: bool,
    check: impl FnOnce(&[Obj]) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let objects = relist(dir).map_err(|e| e.to_string())?;
    check(&objects)?;
    if !apply {
        return Ok(());
    }
    let base = dir_url(dir);
    let urls: Vec<String> = objects
        .iter()
        .map(|(n, _, _)| format!("{base}{n}"))
        .collect();
    let failed: Vec<String> = remote::delete(&urls)
        .into_iter()
        .zip(&urls)
        .filter_map(|(r, u)| r.err().map(|e| format!("{u}: {e}")))
        .collect();
    match failed.first() {
        None => Ok(()),
        Some(f) => Err(format!(
            "{} of {} keys not deleted: {f}",
            failed.len(),
            urls.len()
        )),
    }
}
