//! The last look before an entry goes, the same dry or not: the path from
//! the root to it holds no link, and the entry, judged again now, is in
//! the state it was selected in and holds no fresh lock. Only then, with
//! `apply`, is it removed: on disk by its path's bytes as judged (the
//! standard library's `remove_dir_all` follows no link inside it), in a
//! bucket by deleting exactly the keys of the listing just judged.

use std::path::{Component, Path};
use std::time::SystemTime;

use super::status::{rejudge, CacheEntry};

/// Checks the entry `e` of the cache at `root` and, with `apply`, removes
/// it; `fresh` says whether a lock last modified then is fresh. `Err`
/// says why it is (or would be) left.
pub(super) fn remove(
    root: &Path,
    e: &CacheEntry,
    apply: bool,
    fresh: &dyn Fn(Option<SystemTime>) -> bool,
) -> Result<(), String> {
    // As it stands now: the state it was selected in, no fresh lock.
    let unchanged = |again: &CacheEntry| -> Result<(), String> {
        if fresh(again.lock_modified) {
            return Err(
                "a fresh lock appeared since it was judged (a compile in progress): left".into(),
            );
        }
        if again.state != e.state {
            return Err(format!(
                "changed since it was judged (now {}): left",
                again.state
            ));
        }
        Ok(())
    };
    #[cfg(feature = "remote")]
    if let Some(url) = root.to_str().filter(|r| crate::remote::is_url(r)) {
        let base = format!("{}/", url.trim_end_matches('/'));
        if !e.path.to_str().is_some_and(|p| p.starts_with(&base)) {
            return Err("outside the cache root: left".into());
        }
        let dir = e.path.to_str().unwrap_or_default();
        return super::bucket::remove(dir, apply, |objects| {
            unchanged(&rejudge(e, Some(objects.to_vec())))
        });
    }
    let rel = e
        .path
        .strip_prefix(root)
        .map_err(|_| "outside the cache root: left".to_string())?;
    let mut at = root.to_path_buf();
    for c in rel.components() {
        let Component::Normal(c) = c else {
            return Err("not a plain path under the root: left".into());
        };
        at.push(c);
        let meta = at.symlink_metadata().map_err(|e| format!("{e}: left"))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a link: not followed, left",
                at.to_string_lossy()
            ));
        }
    }
    unchanged(&rejudge(e, None))?;
    if apply {
        std::fs::remove_dir_all(&e.path).map_err(|e| e.to_string())?;
    }
    Ok(())
}
