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
use super::vllm::{self, Aside, Child};

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
/// prints one ([`crate::Source::shown`]: query values and userinfo hidden).
pub(super) fn lossy<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::source::Source::of(p).shown())
}

/// A part of a cache that is not an entry but belongs to its layout (vLLM's
/// NKI kernel cache, `nki/`): reported, never judged or removed.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheNote {
    /// Its path (JSON spells it as [`CacheEntry::path`](super::CacheEntry::path) does).
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    /// The path's bytes in base64 when they are not UTF-8.
    pub path_bytes: Option<String>,
    /// What it is.
    pub what: String,
}

impl CacheNote {
    pub(super) fn new(path: &Path, what: String) -> CacheNote {
        CacheNote {
            path: path.to_path_buf(),
            path_bytes: spelled(path),
            what,
        }
    }
}

/// What the walk of a root found: its entries, the parts of its layout
/// that are not entries, and whether it holds any cache layout at all.
#[derive(Default)]
pub(super) struct Walked {
    pub(super) found: Vec<Found>,
    pub(super) notes: Vec<CacheNote>,
    /// A version directory, an entry, or a sign of vLLM's layout met (an
    /// empty version directory is a cache; a home directory is not).
    pub(super) layout: bool,
}

/// Which layout an entry found belongs to, and what its name makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The compiler wrapper's `MODULE_*`.
    Wrapper,
    /// vLLM's `<32 hex key>`.
    Key,
    /// A directory vLLM's fetch left beside an entry.
    Aside(Aside),
    /// Any other directory under a vLLM root: `unknown`.
    NotAKey,
}

/// An entry directory found by the walk, before it is judged.
pub(super) struct Found {
    /// Its directory (or, in a bucket, its URL), as the walk met it.
    pub(super) dir: PathBuf,
    pub(super) compiler: Option<String>,
    pub(super) graph_hash: String,
    pub(super) flags_hash: Option<String>,
    /// In a bucket, the objects its listing gave (`None` on disk).
    pub(super) objects: Option<Vec<entry::Obj>>,
    /// What stops it being judged before its files are listed (the entry
    /// is a link).
    pub(super) odd: Option<Odd>,
    /// Which layout it belongs to.
    pub(super) kind: Kind,
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
            kind: Kind::Wrapper,
            parent: None,
        })
    }

    /// The directory `name` at `dir` under a vLLM Neuron cache root: an
    /// entry (32 lowercase hex digits), a directory set aside beside one,
    /// or (when `any`: the root is vLLM's alone) any other name, an
    /// `unknown` entry; `None` for the NKI cache, and for other names
    /// unless `any`.
    pub(super) fn vllm(dir: PathBuf, name: &OsStr, any: bool) -> Option<Found> {
        let text = name.to_string_lossy();
        let (kind, key) = match name.to_str().map_or(Child::Other, vllm::child) {
            Child::Key => (Kind::Key, text.to_string()),
            Child::Aside(a) => (Kind::Aside(a), text[..32].to_string()),
            Child::Other if any => (Kind::NotAKey, text.to_string()),
            Child::Other | Child::Nki | Child::Sync => return None,
        };
        Some(Found {
            dir,
            compiler: None,
            graph_hash: key,
            flags_hash: None,
            objects: None,
            odd: None,
            kind,
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
