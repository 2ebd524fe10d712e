//! The tar index: one pass over the 512-byte headers of the payload, into a
//! list of entries whose names and data are spans of the payload bytes.
//!
//! The walker understands every dialect NEFF producers use (docs/FORMAT.md
//! §2.2): POSIX ustar (`prefix/name`), GNU (`ustar  ` magic, `L`/`K`
//! long-name records, base-256 numbers) and PAX (`x` records for the next
//! entry, `g` records for all later entries). Nothing is copied except a
//! ustar name that must be joined from its prefix and name fields. The same
//! walk reads tar bytes in memory, a raw tar in a mapped file by `pread`
//! ([`FileSource`]), or a gzip payload as it is inflated ([`StreamSource`],
//! which keeps names and the members asked for, and nothing else).
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
//! handled so far (each pinned by `tests/ambiguity.rs`, which lists the
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
//! - a numeric field (size, mode, mtime, checksum, uid, gid, device
//!   numbers) with digits after a NUL: GNU tar skips one leading NUL and
//!   reads the digits, libarchive reads 0; refused. So is any other byte
//!   than spaces around octal digits (libarchive does not recognize a tar
//!   whose first header has one), and a base-256 marker other than GNU's
//!   `0x80` (libarchive takes any byte with the top bit set);
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
//! - a GNU sparse file (old `S` entries, or PAX `GNU.sparse.*` records):
//!   both tools expand it to its real size; listing its stored bytes or its
//!   PAX 1.0 internal name (`GNUSparseFile.0/…`) would read it differently,
//!   so it is refused until the walk expands sparse maps
//!   (`tests/peer_archives.rs` lists tar-rs's archives with GNU tar).

mod block;
mod index;
mod number;
mod pax;
#[cfg(feature = "remote")]
mod ranged;
mod stream;

pub use block::{Block, BLOCK};
pub use index::{Entry, FileSource, Index, Kind};
#[cfg(feature = "remote")]
pub use ranged::{Fetch, RangeSource};
pub(crate) use stream::{walk, ByteStream, Keep, Pass, Reread, Retained};
