//! The one way into the tar walk: [`walk`], given the archive as the
//! reader holds it ([`Archive`]: tar bytes in memory, a raw tar in a
//! mapped file, a stream of inflated bytes, or ranged reads of a remote
//! object). Each kind is read through its own source (a slice, `pread`,
//! a bounded stream that may start over, a ranged reader that hops or
//! reads through: the differences between them stay in this room), and
//! the walk over the headers (`index::walk`) is the same for all of
//! them. What the caller keeps of member data it does not hold, and what
//! it watches for, is its [`Keep`].

use std::cell::RefCell;
use std::fs::File;

use super::index::{Entry, FileSource, Index, SliceSource, Source};
#[cfg(feature = "remote")]
use super::ranged::{self, Fetch};
use super::stream::{self, ByteStream, Keep, Pass, Retained};
use crate::error::Result;
use crate::limits::Limits;

/// A tar archive as the reader holds it: what the walk reads it from.
pub(crate) enum Archive<'a> {
    /// Tar bytes in memory (an inflated payload, or a raw payload held
    /// whole): names are spans of them.
    Bytes(&'a [u8]),
    /// A raw tar of `len` bytes `base` bytes into a mapped file, its
    /// headers read with `pread` so that the walk faults in no page of
    /// the map ([`FileSource`]).
    Mapped {
        /// The open file the map is of.
        file: &'a File,
        /// Where the tar starts in it.
        base: u64,
        /// The tar's length.
        len: usize,
    },
    /// Tar bytes produced as they are walked (a gzip payload inflated), in
    /// a bounded window: opened for a first pass, and again for a careful
    /// one when the first pass's stream turns out doubtful.
    Stream(Box<dyn FnMut(Pass) -> Result<Box<dyn ByteStream + 'a>> + 'a>),
    /// A raw tar of `len` bytes `base` bytes into what `from` fetches by
    /// ranges (a remote object), `first` its first bytes, fetched already.
    #[cfg(feature = "remote")]
    Ranged {
        /// What the ranges are fetched from.
        from: &'a dyn Fetch,
        /// Where the tar starts in it.
        base: u64,
        /// The tar's length.
        len: usize,
        /// The object's first bytes (maybe none).
        first: &'a [u8],
    },
}

/// What a walk over the headers learned.
#[derive(Debug)]
pub(crate) struct Walked {
    /// Every entry, in archive order.
    pub(crate) index: Index,
    /// The member data the walk kept, where the archive is not held (a
    /// stream, ranged reads): what the caller's [`Keep`] picked.
    pub(crate) retained: Retained,
    /// The tar stream's length (for a stream, all it produced).
    pub(crate) len: u64,
}

/// Keeps nothing, watches nothing.
struct Nothing;

impl Keep for Nothing {
    fn offer(&mut self, _: &Entry, _: &[u8], _: &mut dyn FnMut(u64)) -> bool {
        false
    }
}

/// Walks the tar archive `archive`, under `limits`, offering each regular
/// member to `keep` (`None`: nothing kept or watched). Every length is
/// checked against the bytes that exist; a stream is produced and checked
/// to its end.
pub(crate) fn walk(
    archive: Archive<'_>,
    keep: Option<&mut dyn Keep>,
    limits: &Limits,
) -> Result<Walked> {
    let mut nothing = Nothing;
    let keep: &mut dyn Keep = match keep {
        Some(keep) => keep,
        None => &mut nothing,
    };
    match archive {
        Archive::Bytes(tar) => held(SliceSource(tar), tar.len(), keep, limits),
        Archive::Mapped { file, base, len } => {
            held(FileSource::new(file, base, len), len, keep, limits)
        }
        Archive::Stream(mut open) => {
            let (index, retained, len) = stream::walk(&mut *open, keep, limits)?;
            Ok(Walked {
                index,
                retained,
                len,
            })
        }
        #[cfg(feature = "remote")]
        Archive::Ranged {
            from,
            base,
            len,
            first,
        } => {
            let (index, retained) = ranged::walk(from, base, len, first, keep, limits)?;
            Ok(Walked {
                index,
                retained,
                len: len as u64,
            })
        }
    }
}

/// The walk of an archive held whole (its bytes, or a map): its sources
/// keep nothing, the members are only shown to `keep`.
fn held<S: Source>(src: S, len: usize, keep: &mut dyn Keep, limits: &Limits) -> Result<Walked> {
    let retained = RefCell::new(Retained::default());
    let index = stream::keeping(src, keep, &retained, limits)?;
    Ok(Walked {
        index,
        retained: retained.into_inner(),
        len: len as u64,
    })
}
