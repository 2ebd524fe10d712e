//! Which rows an indexed scan retires: only those of files it looked for
//! and did not find. A row's file was looked for when the scan listed the
//! directory it lived in whole (a directory below a root, not past
//! `--max-depth`, not excluded by a glob, not behind a link `--no-follow`
//! leaves alone, and whose listing did not fail) or the bucket prefix it
//! lived under (listed to its end), and when the globs and the depth keep
//! its path. A file named directly (a root, a line of `--files-from`) is
//! looked for only that way too: missing, it is a root that cannot be
//! opened, and its row stays. A shard looks for every file of the walk
//! (its rows are the other shards' too). docs/GUIDE.md says the rule per
//! flag.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::places::Keep;

/// Where an indexed scan looked.
pub(super) struct Looked<'a> {
    /// Each directory listed whole, by its key (real path), with the root
    /// it was walked from and its path as walked (what the globs match).
    dirs: HashMap<String, (&'a Path, &'a Path)>,
    /// The key every row under a bucket prefix listed whole starts with.
    prefixes: Vec<String>,
    keep: Keep,
}

impl<'a> Looked<'a> {
    /// `read`: (root, directory) for each directory the walk listed whole,
    /// `key` the key of a directory walked, `prefixes` the keys (ending in
    /// `/`) of the bucket prefixes listed to their end.
    pub(super) fn new(
        read: &'a [(PathBuf, PathBuf)],
        key: &dyn Fn(&Path) -> String,
        prefixes: Vec<String>,
        keep: Keep,
    ) -> Looked<'a> {
        let dirs = read
            .iter()
            .map(|(root, dir)| (key(dir), (root.as_path(), dir.as_path())))
            .collect();
        Looked {
            dirs,
            prefixes,
            keep,
        }
    }

    /// Whether this scan looked for the file (or compile-cache entry) of
    /// the row keyed `key`: a row it did not find is then retired.
    pub(super) fn looked_for(&self, key: &str) -> bool {
        for p in &self.prefixes {
            if let Some(rel) = key.strip_prefix(p.as_str()) {
                return self.keep.keeps(Path::new(rel), false);
            }
        }
        let k = Path::new(key);
        let (Some(parent), Some(name)) = (k.parent().and_then(Path::to_str), k.file_name()) else {
            return false;
        };
        let Some((root, walked)) = self.dirs.get(parent) else {
            return false;
        };
        let path = walked.join(name);
        let rel = path.strip_prefix(root).unwrap_or(&path);
        // A compile-cache entry holding no NEFF is a directory's row.
        let dir = !name.to_string_lossy().ends_with(".neff");
        self.keep.keeps(rel, dir)
    }
}

/// Whether `root` is a bucket or repository prefix (listed, not walked).
pub(super) fn is_prefix(root: &Path) -> bool {
    #[cfg(feature = "remote")]
    if let Some(u) = root.to_str() {
        return crate::remote::is_url(u) && crate::remote::is_listable(u) && !u.ends_with(".neff");
    }
    let _ = root;
    false
}
