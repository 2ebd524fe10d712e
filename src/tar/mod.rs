//! The tar index: one pass over the 512-byte headers of the payload, into a
//! list of entries whose names and data are spans of the payload bytes.
//!
//! The walker understands every dialect NEFF producers use (docs/FORMAT.md
//! §2.2): POSIX ustar (`prefix/name`), GNU (`ustar  ` magic, `L`/`K`
//! long-name records, base-256 numbers) and PAX (`x` records for the next
//! entry, `g` records for all later entries). Nothing is copied except a
//! ustar name that must be joined from its prefix and name fields. There is
//! one way into the walk, [`walk`], given the archive as the reader holds
//! it ([`Archive`]): tar bytes in memory, a raw tar in a mapped file (read
//! by `pread`), a gzip payload as it is inflated (of which only names and
//! the members asked for are kept), or a remote object by ranges.
//!
//! Hostile archives are refused with the offset of the header at fault. The
//! rules learned from the CVEs of other tar readers are applied here: a PAX
//! `size` overrides the header's; an `x` record applies to the next real
//! entry and never to an intervening `L`/`K` header; every length is checked
//! against the bytes that remain before it is used; extended headers and
//! names are capped (see [`Limits`](crate::Limits)).
//!
//! # One rule for ambiguity
//!
//! Where libarchive (the runtime's reader) and GNU tar (the reference
//! reader's tool) would read an archive differently, the walk refuses it
//! with a reason; where they agree, it reads exactly what they read. Cases
//! handled so far (each pinned by `tests/it/ambiguity.rs`, which lists the
//! crafted archives with both tools; the differential fuzz targets
//! `vs_libarchive` and `vs_tar_crate` in `fuzz/` found several of them):
//!
//! - an entry that carries no data (hard link, symlink, device, directory,
//!   FIFO) but declares a size, in its ustar field or a PAX `size` record:
//!   GNU tar skips those bytes for some types, libarchive reads them as
//!   more entries for others, so a member could hide from one of them;
//!   refused;
//! - a PAX `path` or `linkpath` with a NUL inside: both end the name at the
//!   NUL, and so does the walk (the rest, `../` included, is dropped);
//! - a global PAX record (`g`) that sets `path`, `linkpath` or `size`: GNU
//!   tar applies it to every later entry, libarchive ignores it; refused;
//! - two PAX `x` headers for one entry: GNU tar keeps the last, libarchive
//!   warns that it is malformed (merging them would name the entry from
//!   the first); refused;
//! - numbers ([`number`] models both tools' parsers): a size is read only
//!   where both read the same value (digits up to a space or NUL whatever
//!   follows, leading spaces, no terminator, NULs, base-256 `0x80`), and
//!   refused where they differ (a NUL before the digits, blanks, garbage
//!   after the digits, other base-256 markers, negative); mode and mtime
//!   are metadata, read as libarchive reads them (negative base-256 times
//!   included; GNU tar reports a bad one but lists and extracts the same);
//!   the first header must pass libarchive's format bid (numeric fields,
//!   typeflag), or libarchive does not recognize the archive: refused;
//! - PAX records: a length with leading zeros is read; a `size` must be
//!   decimal digits (empty, spaced, signed or fractional sizes are read
//!   differently: refused); a fractional or negative `mtime` is read
//!   (floored), an out-of-range or malformed one ignored as GNU tar does;
//! - entry types: `7` and types neither tool knows are files, an empty
//!   GNU dump directory `D` is a directory, an empty volume label `V` is
//!   no entry, as both read them; a `D` or `V` with data, a `V` after an
//!   extended header, a multi-volume continuation `M` and a Solaris ACL
//!   `A` are read differently: refused;
//! - an archive that ends inside a block (the padding of the last entry's
//!   data, or a cut block of zeros after it): libarchive refuses it (GNU
//!   tar reads a cut block of zeros as the end); refused. An empty tar
//!   (no byte at all) is refused as both refuse it;
//! - a link name on an entry that is not a link: both ignore it, and so
//!   does the index (only symlinks and hard links have a target);
//! - a PAX record whose keyword is empty or holds a NUL: GNU tar reads
//!   the record's path (after a warning or an error), libarchive drops the
//!   whole header; refused;
//! - two GNU long names for one entry: both take the last, as does the
//!   walk;
//! - a GNU sparse file (old `S` entries with extension blocks, PAX 0.0,
//!   0.1, 1.0) as GNU tar writes it: both tools expand it to its real size
//!   under its real name, and so does the index ([`sparse`]); maps the two
//!   read differently (overlapping, short of the real size, segments not
//!   in whole blocks before the last, an old GNU entry half empty, …) are
//!   refused with the member's name (`tests/it/sparse.rs` builds each one and
//!   reads it with both tools).

mod archive;
mod block;
mod index;
mod number;
mod pax;
#[cfg(feature = "remote")]
mod ranged;
mod sparse;
mod stream;

pub(crate) use archive::{walk, Archive, Walked};
pub use block::{Block, BLOCK};
pub use index::{Entry, Index, Kind};
#[cfg(feature = "remote")]
pub use ranged::{Ahead, Fetch, Part, MAX_PART};
pub(crate) use sparse::Expander;
pub use sparse::{Piece, Segment};
pub(crate) use stream::{ByteStream, Keep, Pass, Reread, Retained};
