//! What a scan looked at, so that a catalogue retires only the rows of
//! files it looked for and did not find (`catalog::retire`): the
//! directories a walk read whole (a directory that failed to list, in
//! part or whole, is not among them), and which files the globs and the
//! depth keep, below a local root or a bucket prefix; and the walk's
//! small helpers (a shard of the sorted paths, the path a walk error
//! names).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::overrides::Override;

use crate::error::{Error, Result};

/// The roots walked, and each directory listed by the place of its root
/// among them.
type Listed = (Vec<PathBuf>, Vec<(usize, PathBuf)>);

/// The directories a walk read, and those whose listing failed.
#[derive(Default)]
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Places {
    /// (root, directory) for each directory the walk listed: the root by
    /// its place in `roots` (a path per directory, not two).
    read: Mutex<Listed>,
    /// Directories whose listing failed (whole, or an entry of it).
    failed: Mutex<HashSet<PathBuf>>,
}

#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
impl Places {
    /// Notes an entry the walk of `root` met `depth` below it: a
    /// directory the walk lists (above `max_depth`, a real directory or a
    /// link it follows). A compile-cache entry's directory (`entry`)
    /// below the root is not noted (one path per entry, the bulk of a
    /// cache's directories): its parent was listed whole and held it, so a
    /// row under it is judged from the parent as it would be from it (the
    /// filters see the same path below the root; a failure to list it is
    /// noted as a failure).
    pub(crate) fn entry(
        &self,
        root: &Path,
        e: &ignore::DirEntry,
        depth: usize,
        max_depth: Option<usize>,
        entry: bool,
    ) {
        let listed =
            e.file_type().is_some_and(|t| t.is_dir()) && max_depth.is_none_or(|m| depth < m);
        if listed && !(entry && depth > 0) {
            let (roots, read) = &mut *self.read.lock().expect("lock");
            let at = match roots.iter().rposition(|r| r == root) {
                Some(at) => at,
                None => {
                    roots.push(root.to_path_buf());
                    roots.len() - 1
                }
            };
            read.push((at, e.path().to_path_buf()));
        }
    }

    /// Notes a walk error: the directory it names was not listed whole.
    pub(crate) fn error(&self, e: &ignore::Error) {
        fn path(e: &ignore::Error) -> Option<&Path> {
            match e {
                ignore::Error::WithPath { path, .. } => Some(path),
                ignore::Error::WithDepth { err, .. } => path(err),
                _ => None,
            }
        }
        if let Some(p) = path(e) {
            self.failed.lock().expect("lock").insert(p.to_path_buf());
        }
    }

    /// (root, directory) for each directory listed whole, and the
    /// directories whose listing failed.
    pub(crate) fn into_lists(self) -> Walked {
        let failed = self.failed.into_inner().expect("lock");
        let (roots, mut read) = self.read.into_inner().expect("lock");
        read.retain(|(_, d)| !failed.contains(d));
        Walked {
            roots,
            read,
            failed: failed.into_iter().collect(),
        }
    }
}

/// What a walk listed: (root, directory) for each directory it listed
/// whole (the root by its place in `roots`), and the directories whose
/// listing failed.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Walked {
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) read: Vec<(usize, PathBuf)>,
    pub(crate) failed: Vec<PathBuf>,
}

/// Which files a scan keeps by their path below a root: the globs (and
/// the directories they exclude) and the depth, as the walk applies them
/// to a local root, and as they are applied to the keys listed under a
/// bucket prefix.
#[derive(Clone)]
#[cfg_attr(not(any(feature = "remote", feature = "catalog")), allow(dead_code))]
pub(crate) struct Keep {
    globs: Option<Override>,
    max_depth: Option<usize>,
}

#[cfg_attr(not(any(feature = "remote", feature = "catalog")), allow(dead_code))]
impl Keep {
    /// The filters of a walk: its globs (gitignore syntax, `!` excludes;
    /// one that does not compile is a usage error) and its depth.
    pub(crate) fn new(globs: &[String], max_depth: Option<usize>) -> Result<Keep> {
        let globs = match globs {
            [] => None,
            _ => {
                let mut b = ignore::overrides::OverrideBuilder::new("");
                for g in globs {
                    b.add(g).map_err(|e| Error::usage(format!("{e}")))?;
                }
                let built = b
                    .build()
                    .map_err(|e| Error::usage(format!("--glob: {e}")))?;
                Some(built)
            }
        };
        Ok(Keep { globs, max_depth })
    }

    /// Whether a file (or, `dir`, a directory) at `rel` below a root is
    /// kept: no deeper than the depth, not excluded by a glob, nor in a
    /// directory a glob excludes.
    pub(crate) fn keeps(&self, rel: &Path, dir: bool) -> bool {
        if self.max_depth.is_some_and(|m| rel.components().count() > m) {
            return false;
        }
        let Some(globs) = &self.globs else {
            return true;
        };
        if globs.matched(rel, dir).is_ignore() {
            return false;
        }
        let mut up = rel.parent();
        while let Some(d) = up.filter(|d| !d.as_os_str().is_empty()) {
            if globs.matched(d, true).is_ignore() {
                return false;
            }
            up = d.parent();
        }
        true
    }

    /// Whether the object `url`, listed under the prefix `root`, is kept
    /// (its key below the prefix, decoded from the URL, as the path below
    /// a root).
    #[cfg(feature = "remote")]
    pub(crate) fn keeps_listed(&self, root: &str, url: &str) -> bool {
        if self.globs.is_none() && self.max_depth.is_none() {
            return true;
        }
        match url.strip_prefix(root) {
            Some(rel) => {
                let key = crate::remote::key_part(rel.trim_start_matches('/'));
                self.keeps(Path::new(key.as_ref()), false)
            }
            None => true,
        }
    }
}

/// Keeps the paths of shard `k` of `n` (1-based): those whose index i in
/// the sorted list has i mod n == k - 1. `None` keeps them all.
pub(crate) fn shard_of<T>(paths: Vec<T>, shard: Option<(usize, usize)>) -> Vec<T> {
    match shard {
        Some((k, n)) => paths
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k - 1)
            .map(|(_, p)| p)
            .collect(),
        None => paths,
    }
}

/// The directory a symlink loop leads back to, if `e` is a loop.
pub(crate) fn loop_ancestor(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => {
            loop_ancestor(err)
        }
        ignore::Error::Loop { ancestor, .. } => Some(ancestor),
        _ => None,
    }
}

/// The path a walk error names (a loop: the link that closes it).
pub(crate) fn walk_error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } => walk_error_path(err),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        _ => None,
    }
}
