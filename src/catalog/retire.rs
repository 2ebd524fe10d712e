//! Which rows an indexed scan retires: only those of files it looked for
//! and did not find. A row's file was looked for when the scan listed
//! whole the nearest directory above it that it reached (a directory below
//! a root, not past `--max-depth`, not excluded by a glob, not behind a
//! link `--no-follow` leaves alone, and no listing on the way failed) or
//! the bucket prefix it lived under (listed to its end), and when the
//! globs and the depth keep its path; a local file's row goes only when
//! nothing is at its path any more. A file named directly (a root, a line
//! of `--files-from`) is looked for only that way too: missing, it is a
//! root that cannot be opened, and its row stays. A shard looks for every
//! file of the walk (its rows are the other shards' too). docs/GUIDE.md
//! says the rule per flag.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::places::{Keep, Walked};

/// Where an indexed scan looked.
pub(super) struct Looked<'a> {
    /// Each directory listed whole, by its key (real path), with the root
    /// it was walked from and its path as walked (what the globs match):
    /// each way the walk reached it (a directory and a link to it are two).
    dirs: HashMap<String, Vec<(&'a Path, &'a Path)>>,
    /// The keys of the directories whose listing failed.
    failed: HashSet<String>,
    /// The key every row under a bucket prefix listed whole starts with.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    prefixes: Vec<String>,
    keep: Keep,
}

impl<'a> Looked<'a> {
    /// `walked`: what the walk listed, `key` the key of a directory
    /// walked, `prefixes` the keys (ending in `/`) of the bucket prefixes
    /// listed to their end.
    pub(super) fn new(
        walked: &'a Walked,
        key: &dyn Fn(&Path) -> String,
        prefixes: Vec<String>,
        keep: Keep,
    ) -> Looked<'a> {
        let mut dirs: HashMap<String, Vec<_>> = HashMap::new();
        for (root, dir) in &walked.read {
            let way = (walked.roots[*root].as_path(), dir.as_path());
            dirs.entry(key(dir)).or_default().push(way);
        }
        let failed = walked.failed.iter().map(|d| key(d)).collect();
        Looked {
            dirs,
            failed,
            prefixes,
            keep,
        }
    }

    /// Whether this scan looked for the file (or compile-cache entry) of
    /// the row keyed `key`, not found by it, and found it gone: the row is
    /// then retired. The nearest directory above it that the walk listed
    /// whole did not hold the next step of its path (else that step was
    /// listed too, or was not for a reason a filter or a failure names),
    /// the filters keep its path (as the walk reached that directory, one
    /// way or another: whatever order the walk met them in), and the file
    /// is no longer there.
    pub(super) fn looked_for(&self, key: &str) -> bool {
        let k = Path::new(key);
        // A walk or a listing finds `*.neff` files and compile-cache
        // entries by name; a row keyed otherwise is the target of a link
        // named `*.neff` (as a hub's cache keeps `snapshots/…/model.neff
        // -> blobs/<hash>`), which the globs do not name.
        let name = k.file_name().map(|n| n.to_string_lossy());
        let by_name = name.is_some_and(|n| n.ends_with(".neff") || crate::cache::is_entry_name(&n));
        #[cfg(feature = "remote")]
        for p in &self.prefixes {
            if key.starts_with(p.as_str()) {
                return by_name && self.keep.keeps_listed(p, key);
            }
        }
        let mut up = k.parent();
        while let Some(dir) = up.and_then(Path::to_str) {
            if self.failed.contains(dir) {
                return false;
            }
            if let Some(ways) = self.dirs.get(dir) {
                let below = k.strip_prefix(dir).unwrap_or(k);
                // A compile-cache entry holding no NEFF is a directory's row.
                let is_dir = !key.ends_with(".neff");
                let kept = ways.iter().any(|&(root, walked)| {
                    let path = walked.join(below);
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    self.keep.keeps(rel, is_dir)
                });
                if by_name && !kept {
                    return false;
                }
                return gone(k);
            }
            up = up.and_then(Path::parent);
        }
        false
    }
}

/// Whether nothing is at `path` any more (not: it may not be read).
fn gone(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}
