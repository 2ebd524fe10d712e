//! Scanning model zoos and compile caches: find every `*.neff` under some
//! paths, read each in parallel, and produce one [`Record`] per file.
//!
//! A bad file never stops a scan: it yields a record with `ok: false` and
//! its error. A local scan reads each NEFF as its walk (parallel, following
//! symlinks, detecting loops) finds it, a compile-cache entry once the
//! walk has met all of its files; a sorted or sharded one lists everything
//! first, sorted by path so that `--shard K/N` splits a zoo
//! deterministically; the objects of a bucket prefix are read as its
//! listing pages arrive ([`scan_listing`]). Each worker reuses one
//! [`Scratch`] (file and inflate buffers) across files, and a record is
//! handed to the caller as soon as it is made: memory does not grow with
//! the number of files (a sorted or sharded scan keeps a path per file).
//! At most `jobs` files are open at once.

pub(crate) mod drive;
mod handoff;
#[cfg(feature = "remote")]
mod listing;
mod options;
mod record;
mod run;
mod streamed;
mod walk;

use crate::error::Result;
use crate::reader::Scratch;
use crate::source::Source;

pub use options::{ScanOptions, Walk};
pub use record::{Record, Tensors};
pub use run::scan;
pub use walk::{list, list_with, path_list, Walked, LIST_LINE_MAX};

use drive::{Find, Visitor};

/// Lists `roots` and scans what it finds, as [`list_with`] then
/// [`Walked::scan`] do, except that nothing waits for the whole list: each
/// local NEFF is read as soon as the walk finds it (a compile-cache entry
/// once its directory is walked whole), and each object under a bucket or
/// repository prefix as soon as its listing page has arrived (a prefix of
/// 100,000 keys, 100 pages, each a round trip, is scanned while it is
/// listed, not after). `listed(n)` is told each time `n` more paths are
/// queued (a progress bar's length); the walk's and the listings' errors
/// come to `emit` as records. A sharded scan (`opts.shard`) lists
/// everything first: a shard is a slice of the sorted whole. A sorted one
/// (`opts.sorted`) does too, and hands the records on in path order
/// (read while listed, a prefix's records are held, then sorted). Roots
/// of which one holds another are listed first too, so that a file is
/// read once.
///
/// A `model.neff` in a compile-cache entry waits until the listing has
/// passed the entry's last key (a store lists in key order), so that its
/// record judges the entry from all of its files; entries holding no NEFF
/// are read when their prefixes' listings end.
pub fn scan_listing(
    roots: &[impl Clone + Into<Source>],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    let roots = crate::source::all_of(roots);
    drive::drive(&roots, opts, listed, &Reading { opts, emit }).map(drop)
}

/// The plain scan's [`Visitor`]: each thing found read, its record handed
/// to `emit` (a walk or listing error too).
struct Reading<'a> {
    opts: &'a ScanOptions,
    emit: &'a (dyn Fn(Record) + Sync),
}

impl Visitor for Reading<'_> {
    type Out = Record;
    fn visit(&self, found: Find<'_>, scratch: &mut Scratch) -> Record {
        found.read(self.opts, scratch, |_| ()).0
    }
    fn done(&self, r: Record) {
        (self.emit)(r)
    }
    fn failed(&self, r: Record) {
        (self.emit)(r)
    }
    fn path(r: &Record) -> &str {
        &r.path
    }
}
