//! A compile cache in a bucket (`s3://bucket/prefix/`): its entries found
//! from one listing of every key under the root (a bucket has no
//! directories: an entry is the keys under its `MODULE_*` prefix), judged
//! from the names, sizes and times that listing gave, and removed by
//! deleting exactly the keys under the entries named.

use std::collections::BTreeMap;
use std::io;

use super::entry::{self, Listing, Obj, Odd, LOG, LOG_TAIL};
use super::found::{CacheError, Found, VERSION_PREFIX};
use crate::error::Result;
use crate::remote;

/// `url` ending in one `/`.
fn dir_url(url: &str) -> String {
    format!("{}/", url.trim_end_matches('/'))
}

/// Finds the entries under the bucket prefix `root`, as
/// [`super::status`] finds them on disk: `neuronxcc-*/MODULE_*/` and
/// `MODULE_*/` directly under the root. A `MODULE_*` key that is an object
/// rather than a prefix is an error of its own.
pub(super) fn find(root: &str, errors: &mut Vec<CacheError>) -> Result<Vec<Found>> {
    let base = dir_url(root);
    let objects = remote::list_all(&base)?;
    let root_version = base
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .and_then(|n| n.strip_prefix(VERSION_PREFIX))
        .map(str::to_string);
    let mut entries: BTreeMap<String, Found> = BTreeMap::new();
    for o in objects {
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
        let Some((graph_hash, flags_hash)) = entry::hashes(name) else {
            continue;
        };
        let dir = prefix.trim_end_matches('/').to_string();
        entries
            .entry(dir.clone())
            .or_insert_with(|| Found {
                dir: dir.into(),
                compiler: version,
                graph_hash,
                flags_hash,
                objects: Some(Vec::new()),
                odd: None,
                vllm: false,
                parent: None,
            })
            .objects
            .get_or_insert_with(Vec::new)
            .push((below, o.size, o.modified));
    }
    Ok(entries.into_values().collect())
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
