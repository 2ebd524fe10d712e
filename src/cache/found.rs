//! What a walk of a cache finds, on disk or in a bucket, before its
//! entries are judged: the entry directories (or prefixes), and the parts
//! that could not be read. Paths are kept as the bytes the file system
//! gave (an entry is judged, reported and removed by the same bytes); a
//! record spells them losslessly ([`spelled`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Serialize, Serializer};

use super::entry::{self, Odd};

/// The prefix of a compiler version's directory.
pub(super) const VERSION_PREFIX: &str = "neuronxcc-";

/// A part of the cache that could not be read (an unreadable directory, a
/// `MODULE_*` that is a file, a version directory that is a link).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheError {
    /// The path at fault (its bytes: JSON spells it as
    /// [`CacheEntry::path`](super::CacheEntry::path) does).
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    /// The path's bytes in base64 when they are not UTF-8 (`path` then
    /// holds their lossy spelling); `None` when `path` is exact.
    pub path_bytes: Option<String>,
    /// Why it could not be read.
    pub reason: String,
}

impl CacheError {
    pub(super) fn new(path: &Path, reason: String) -> CacheError {
        CacheError {
            path: path.to_path_buf(),
            path_bytes: spelled(path),
            reason,
        }
    }
}

/// The base64 of `path`'s bytes when they are not UTF-8: what a JSON
/// record carries beside the lossy spelling so that no path is lost
/// (`None` when the path is UTF-8, and so spelled exactly).
pub(crate) fn spelled(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let b = path.as_os_str().as_bytes();
    match std::str::from_utf8(b) {
        Ok(_) => None,
        Err(_) => Some(base64::engine::general_purpose::STANDARD.encode(b)),
    }
}

/// Serializes a path as text: exact when it is UTF-8, else lossily (its
/// `path_bytes` then holds the bytes); a URL made printable as every record
/// prints one ([`crate::shown::path`]: query values and userinfo hidden).
pub(super) fn lossy<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::shown::path(p))
}

/// An entry directory found by the walk, before it is judged.
pub(super) struct Found {
    /// Its directory (or, in a bucket, its URL), as the walk met it.
    pub(super) dir: PathBuf,
    pub(super) compiler: Option<String>,
    pub(super) graph_hash: String,
    pub(super) flags_hash: Option<String>,
    /// In a bucket, the objects its listing gave (`None` on disk).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(super) objects: Option<Vec<entry::Obj>>,
    /// What stops it being judged before its files are listed (the entry
    /// is a link).
    pub(super) odd: Option<Odd>,
    /// An entry of vLLM's Neuron cache (`<root>/<32 hex key>/`), not of
    /// the compiler wrapper's.
    pub(super) vllm: bool,
    /// The directory holding it, when `dir` does not name it by its parent
    /// (an entry judged again through its descriptor).
    pub(super) parent: Option<PathBuf>,
}

impl Found {
    /// The entry named `name` at `dir`, of compiler `compiler`; `None`
    /// when the name is not an entry's.
    pub(super) fn named(dir: PathBuf, name: &OsStr, compiler: Option<String>) -> Option<Found> {
        let (graph_hash, flags_hash) = entry::hashes(&name.to_string_lossy())?;
        Some(Found {
            dir,
            compiler,
            graph_hash,
            flags_hash,
            objects: None,
            odd: None,
            vllm: false,
            parent: None,
        })
    }

    /// The vLLM Neuron cache entry `key` at `dir`; `None` when the name is
    /// not one (32 lowercase hex digits).
    pub(super) fn vllm(dir: PathBuf, key: &OsStr) -> Option<Found> {
        let key = key.to_str().filter(|k| super::era::is_vllm_key(k))?;
        Some(Found {
            dir,
            compiler: None,
            graph_hash: key.to_string(),
            flags_hash: None,
            objects: None,
            odd: None,
            vllm: true,
            parent: None,
        })
    }
}

/// The lock vLLM's Neuron cache holds beside the entry `dir` while it
/// compiles it (`.<key>.compilation_metadata.lock` in the cache's root),
/// when there is one.
pub(super) fn vllm_lock(dir: &Path) -> Option<PathBuf> {
    vllm_lock_in(dir.parent()?, dir.file_name()?.to_str()?)
}

/// [`vllm_lock`] of the entry `key` in the directory `parent`.
pub(super) fn vllm_lock_in(parent: &Path, key: &str) -> Option<PathBuf> {
    let lock = parent.join(format!(".{key}.compilation_metadata.lock"));
    lock.symlink_metadata().ok().map(|_| lock)
}
