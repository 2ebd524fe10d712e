//! What a scan is asked to do: the walk's filters ([`Walk`]: globs,
//! depth, links) and the scan's options ([`ScanOptions`]).

use std::path::Path;

use crate::error::{Error, Result};
use crate::reader::Options;

/// How a scan walks the directories it is given (files named directly are
/// read whatever these say).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Walk {
    /// Globs in gitignore syntax, as ripgrep's `--glob` takes them: a file
    /// is kept when it matches one of them (none given: every `*.neff`);
    /// one starting with `!` excludes what it matches (a directory so
    /// excluded is not entered). Matched against paths relative to each
    /// root.
    pub globs: Vec<String>,
    /// How deep to go below each root (1: its own entries only); `None`:
    /// no limit.
    pub max_depth: Option<usize>,
    /// Follow symbolic links (the default; a loop is reported once). Off,
    /// a link is neither entered nor read.
    pub follow_links: bool,
    /// Stay on each root's file system: a directory on another (a mount
    /// inside the tree) is not entered.
    pub one_file_system: bool,
}

impl Default for Walk {
    fn default() -> Walk {
        Walk {
            globs: Vec::new(),
            max_depth: None,
            follow_links: true,
            one_file_system: false,
        }
    }
}

impl Walk {
    /// Sets `globs`: gitignore-syntax globs (`!` to exclude).
    #[must_use]
    pub fn globs(mut self, v: Vec<String>) -> Self {
        self.globs = v;
        self
    }

    /// Sets `max_depth`: how deep to go below each root.
    #[must_use]
    pub fn max_depth(mut self, v: Option<usize>) -> Self {
        self.max_depth = v;
        self
    }

    /// Sets `follow_links`: follow symbolic links.
    #[must_use]
    pub fn follow_links(mut self, v: bool) -> Self {
        self.follow_links = v;
        self
    }

    /// Sets `one_file_system`: stay on each root's file system.
    #[must_use]
    pub fn one_file_system(mut self, v: bool) -> Self {
        self.one_file_system = v;
        self
    }

    /// Checks that every glob compiles: a bad one is a usage error naming
    /// it.
    pub fn check(&self) -> Result<()> {
        self.overrides(Path::new(".")).map(drop)
    }

    /// What this walk keeps of a listing ([`crate::places::Keep`]): the
    /// filters a catalogue judges its rows by, as the walk judges files (a
    /// filter of the walk that is not here would retire rows of files it
    /// only skipped).
    pub(crate) fn keep(&self) -> Result<crate::places::Keep> {
        crate::places::Keep::new(&self.globs, self.max_depth)
    }

    /// The globs of `root`, compiled (a bad one is a usage error).
    pub(super) fn overrides(&self, root: &Path) -> Result<Option<ignore::overrides::Override>> {
        if self.globs.is_empty() {
            return Ok(None);
        }
        let mut b = ignore::overrides::OverrideBuilder::new(root);
        for g in &self.globs {
            b.add(g).map_err(|e| Error::usage(format!("{e}")))?;
        }
        b.build()
            .map(Some)
            .map_err(|e| Error::usage(format!("--glob: {e}")))
    }
}

/// How to scan.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ScanOptions {
    /// How directories are walked (globs, depth, links).
    pub walk: Walk,
    /// How each NEFF is opened (read mode, limits).
    pub open: Options,
    /// Worker threads (0: the library's worker count, [`crate::set_threads`],
    /// one per core unless set).
    pub jobs: usize,
    /// Keep only files whose sorted index i has i mod n == k - 1.
    pub shard: Option<(usize, usize)>,
    /// Check each payload's hash (costs a full read of every file).
    pub verify: bool,
    /// Hand the records on in the order of their paths (as `Record::path`
    /// spells them, byte by byte), the walk's errors among them: the walk
    /// is then listed whole before anything is read (a path per file is
    /// kept), and a window of records is read in parallel, handed on in
    /// order, before the next.
    pub sorted: bool,
}

/// What of a scan's options changes the records it makes (the open
/// limits, `verify`): a record made under other such options is not this
/// scan's answer, so a catalogue keys its rows on them
/// ([`ScanOptions::shaping`]). An option that changes a record is added
/// here.
#[derive(serde::Serialize)]
pub(crate) struct Shaping {
    limits: crate::limits::Limits,
    verify: bool,
}

impl ScanOptions {
    /// The options that change this scan's records ([`Shaping`]).
    #[cfg_attr(not(feature = "catalog"), allow(dead_code))]
    pub(crate) fn shaping(&self) -> Shaping {
        Shaping {
            limits: self.open.limits,
            verify: self.verify,
        }
    }

    /// Sets `walk`: how directories are walked (globs, depth, links).
    #[must_use]
    pub fn walk(mut self, v: Walk) -> Self {
        self.walk = v;
        self
    }

    /// Sets `open`: how each NEFF is opened (read mode, limits).
    #[must_use]
    pub fn open(mut self, v: Options) -> Self {
        self.open = v;
        self
    }

    /// Sets `jobs`: worker threads (0: the library's worker count, `crate::set_threads`, one per core unless set).
    #[must_use]
    pub fn jobs(mut self, v: usize) -> Self {
        self.jobs = v;
        self
    }

    /// Sets `shard`: keep only files whose sorted index i has i mod n == k - 1.
    #[must_use]
    pub fn shard(mut self, v: Option<(usize, usize)>) -> Self {
        self.shard = v;
        self
    }

    /// Sets `verify`: check each payload's hash (costs a full read of every file).
    #[must_use]
    pub fn verify(mut self, v: bool) -> Self {
        self.verify = v;
        self
    }

    /// Sets `sorted`: records in the order of their paths.
    #[must_use]
    pub fn sorted(mut self, v: bool) -> Self {
        self.sorted = v;
        self
    }
}
