//! What a walk of a cache finds, on disk or in a bucket, before its
//! entries are judged: the entry directories (or prefixes), and the parts
//! that could not be read.

use std::path::PathBuf;

use serde::Serialize;

use super::entry;

/// The prefix of a compiler version's directory.
pub(super) const VERSION_PREFIX: &str = "neuronxcc-";

/// A part of the cache that could not be read (an unreadable directory, a
/// `MODULE_*` that is a file).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheError {
    /// The path at fault.
    pub path: String,
    /// Why it could not be read.
    pub reason: String,
}

/// An entry directory found by the walk, before it is judged.
pub(super) struct Found {
    /// Its directory (or, in a bucket, its URL).
    pub(super) dir: PathBuf,
    pub(super) compiler: Option<String>,
    pub(super) graph_hash: String,
    pub(super) flags_hash: Option<String>,
    /// In a bucket, the objects its listing gave (`None` on disk).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(super) objects: Option<Vec<entry::Obj>>,
}
