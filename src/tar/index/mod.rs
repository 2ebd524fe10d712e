//! The index a walk over tar headers builds (entries, their names, sparse
//! maps; every method of [`Index`] is here), and the sources it reads them
//! from (a slice, a file by `pread`; a stream and ranged reads in their
//! own files): `walk.rs` is the walk (entered by `tar::walk`
//! only), `entry.rs` what one header says of its entry, `sparse_map.rs` a
//! sparse member's map read where it lies.

mod entry;
mod sparse_map;
pub(super) mod walk;

use std::fs::File;
use std::num::NonZeroU32;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use crate::error::Result;
use crate::tar::sparse::{self, Segment};

/// What kind of entry a tar header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file: typeflag `0`, NUL (v7), `7` (contiguous file), or a
    /// type neither GNU tar nor libarchive knows (both read it as a file).
    File,
    /// A directory: typeflag `5`, an empty GNU dump directory (`D`), or a
    /// regular-file entry (`0` or NUL) whose name ends in `/`.
    Dir,
    /// A symbolic link (typeflag `2`); its target is [`Neff::link`](crate::Neff::link).
    Symlink,
    /// A hard link to an earlier member (typeflag `1`); its target is [`Neff::link`](crate::Neff::link).
    Hardlink,
    /// FIFOs and character or block devices (typeflags `3`, `4`, `6`).
    Other,
}

impl Kind {
    /// The `kind` string of `neff ls --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Hardlink => "hardlink",
            Kind::Other => "other",
        }
    }
}

/// A member name: a span of the tar bytes, a span of the index's name
/// arena (names read with `pread`, see [`FileSource`]), or (only when a
/// ustar `prefix` and `name` must be joined) an owned copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// A byte range of the tar stream: a header's `name` or `linkname` field,
    /// or a GNU `L`/`K` or PAX `path`/`linkpath` payload.
    Span(Range<usize>),
    /// A byte range of [`Index::names`], for names read through a [`FileSource`].
    Arena(Range<usize>),
    /// An owned copy: a ustar `prefix` and `name` joined with `/`.
    Joined(Box<[u8]>),
}

/// One entry of the archive.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The member name, with GNU long names, PAX `path` and the ustar prefix
    /// applied; resolve it with [`Neff::name`](crate::Neff::name).
    pub(crate) name: Name,
    /// What the entry is, from its typeflag.
    pub kind: Kind,
    /// Offset of the entry's data in the tar stream.
    pub offset: u64,
    /// Size of the entry's data in bytes.
    pub size: u64,
    /// Modification time, whole seconds since the epoch.
    pub mtime: i64,
    /// Permission bits as stored.
    pub mode: u32,
    /// Link target (symlinks and hard links); resolve it with [`Neff::link`](crate::Neff::link).
    pub(crate) link: Option<Name>,
    /// The raw typeflag byte.
    pub typeflag: u8,
    /// Offset of the entry's (first) header block.
    pub header_offset: u64,
    /// For a GNU sparse member, 1 + its map's place in the index's maps.
    pub(crate) sparse: Option<NonZeroU32>,
}

impl Entry {
    /// Whether the entry is a GNU sparse member: its [`size`](Self::size)
    /// is its real (expanded) size, and [`offset`](Self::offset) is where
    /// its stored segments start; read it with
    /// [`Neff::data`](crate::Neff::data).
    pub fn is_sparse(&self) -> bool {
        self.sparse.is_some()
    }
}

/// Every entry of one archive, in archive order.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// The entries, in the order their headers appear in the tar stream.
    pub entries: Vec<Entry>,
    /// Names read through a [`FileSource`], back to back.
    pub names: Vec<u8>,
    /// The maps of the sparse entries ([`Entry::sparse`] counts from 1).
    pub maps: Vec<sparse::Map>,
    /// The segments of every sparse map, back to back.
    pub segments: Vec<Segment>,
}

impl Index {
    /// The bytes of a name, given the tar bytes the index was built from.
    pub fn resolve<'a>(&'a self, name: &'a Name, tar: &'a [u8]) -> &'a [u8] {
        resolve(name, tar, &self.names)
    }

    /// A sparse entry's segments (`None` for any other entry).
    pub fn segments(&self, e: &Entry) -> Option<&[Segment]> {
        let m = &self.maps[e.sparse?.get() as usize - 1];
        Some(&self.segments[m.segs.clone()])
    }

    /// How many bytes of data the archive stores for `e`: its size, or
    /// for a sparse member its segments' total.
    pub fn stored_len(&self, e: &Entry) -> u64 {
        match e.sparse {
            Some(i) => self.maps[i.get() as usize - 1].stored,
            None => e.size,
        }
    }

    /// The entry's stored data, given the tar bytes the index was built
    /// from (for a sparse member, its segments back to back).
    pub fn stored<'a>(&self, e: &Entry, tar: &'a [u8]) -> &'a [u8] {
        // In bounds by construction: the walker checked offset + length.
        &tar[e.offset as usize..(e.offset + self.stored_len(e)) as usize]
    }
}

/// The bytes of `name`: a span of `tar`, a span of the name `arena`, or
/// its own.
fn resolve<'a>(name: &'a Name, tar: &'a [u8], arena: &'a [u8]) -> &'a [u8] {
    match name {
        Name::Span(r) => &tar[r.clone()],
        Name::Arena(r) => &arena[r.clone()],
        Name::Joined(b) => b,
    }
}

/// Where the walker reads headers from: tar bytes in memory, a raw tar
/// read with `pread`, or a stream inflated as it is walked. Offsets only
/// move forward, so a stream need not keep what it has passed.
pub trait Source {
    /// Up to `len` bytes at `off`: fewer only where the tar stream ends.
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]>;
    /// Passes over an entry's data `[off, off + size)`: `None` when all of
    /// it exists, else how many bytes were left from `off`. `retain` asks a
    /// stream to keep the data (a JSON member the accessors will read).
    fn data(&mut self, off: usize, size: u64, retain: bool) -> Result<Option<u64>>;
    /// Keeps a name found at `at` whose bytes are `bytes`.
    fn keep(&mut self, at: Range<usize>, bytes: &[u8]) -> Name;
    /// The bytes of a name this source kept.
    fn name<'s>(&'s self, name: &'s Name) -> &'s [u8];
    /// Hands over the name arena, if any.
    fn take_names(&mut self) -> Vec<u8>;
    /// Bytes of names this source holds (its arena).
    fn held(&self) -> usize {
        0
    }
}

/// The name half of [`Source`] for a source that copies every name it
/// meets into an [`Arena`] field `names` (a stream, a ranged walk, a
/// `pread` walk): the four methods, written once.
macro_rules! names_in_arena {
    () => {
        fn keep(&mut self, _: std::ops::Range<usize>, bytes: &[u8]) -> Name {
            self.names.keep(bytes)
        }
        fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
            self.names.name(name)
        }
        fn take_names(&mut self) -> Vec<u8> {
            self.names.take()
        }
        fn held(&self) -> usize {
            self.names.held()
        }
    };
}
pub(crate) use names_in_arena;

/// Most bytes of names (and of extended-header names superseded before
/// their entry) a source may hold: a bound on the name arena of a walk that
/// does not keep the tar (a streamed or `pread` walk), which hostile
/// archives could otherwise fill with long names up to the payload's size.
pub const MAX_NAMES_HELD: usize = 256 << 20;

impl<S: Source + ?Sized> Source for &mut S {
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        (**self).read(off, len)
    }
    fn data(&mut self, off: usize, size: u64, retain: bool) -> Result<Option<u64>> {
        (**self).data(off, size, retain)
    }
    fn keep(&mut self, at: Range<usize>, bytes: &[u8]) -> Name {
        (**self).keep(at, bytes)
    }
    fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
        (**self).name(name)
    }
    fn take_names(&mut self) -> Vec<u8> {
        (**self).take_names()
    }
    fn held(&self) -> usize {
        (**self).held()
    }
}

/// The names a source that does not keep the tar copies out of it, back
/// to back (a few bytes per member); [`Name::Arena`] ranges point into it.
#[derive(Debug, Default)]
pub struct Arena(Vec<u8>);

impl Arena {
    /// Copies `bytes` in: [`Source::keep`].
    pub fn keep(&mut self, bytes: &[u8]) -> Name {
        let start = self.0.len();
        self.0.extend_from_slice(bytes);
        Name::Arena(start..self.0.len())
    }
    /// The bytes of a name kept here (or joined): [`Source::name`].
    pub fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
        match name {
            Name::Arena(r) => &self.0[r.clone()],
            Name::Joined(b) => b,
            // keep() makes arena names only.
            Name::Span(_) => &[],
        }
    }
    /// Hands the names over: [`Source::take_names`].
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
    /// Bytes held: [`Source::held`].
    pub fn held(&self) -> usize {
        self.0.len()
    }
}

/// [`Source::data`] for a source of known length `len`.
pub(super) fn data_in(len: usize, off: usize, size: u64) -> Option<u64> {
    let left = len.saturating_sub(off) as u64;
    (size > left).then_some(left)
}

/// Walks tar bytes already in memory (an inflated buffer): names are spans.
pub struct SliceSource<'a>(pub &'a [u8]);

impl Source for SliceSource<'_> {
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        let end = off.saturating_add(len).min(self.0.len());
        Ok(&self.0[off.min(end)..end])
    }
    fn data(&mut self, off: usize, size: u64, _: bool) -> Result<Option<u64>> {
        Ok(data_in(self.0.len(), off, size))
    }
    fn keep(&mut self, at: Range<usize>, _: &[u8]) -> Name {
        Name::Span(at)
    }
    fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
        resolve(name, self.0, &[])
    }
    fn take_names(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

/// Walks a raw tar inside a mapped file with `pread` into a small window,
/// so that the walk itself faults in no pages of the mapping: the kernel
/// maps up to 64 KiB of cached pages around every faulting address, which
/// for a 1 GiB archive would pull tens of MiB of member data into the
/// process for the sake of 512-byte headers. Names are copied into one
/// arena (a few bytes per member).
pub struct FileSource<'a> {
    file: &'a File,
    /// Offset of the tar stream in the file.
    base: u64,
    len: usize,
    window: Vec<u8>,
    window_at: usize,
    names: Arena,
}

const WINDOW: usize = 2 << 10;

impl<'a> FileSource<'a> {
    /// A source over the `len` tar bytes that start `base` bytes into `file`.
    pub fn new(file: &'a File, base: u64, len: usize) -> FileSource<'a> {
        FileSource {
            file,
            base,
            len,
            window: Vec::new(),
            window_at: 0,
            names: Arena::default(),
        }
    }
}

impl Source for FileSource<'_> {
    fn data(&mut self, off: usize, size: u64, _: bool) -> Result<Option<u64>> {
        Ok(data_in(self.len, off, size))
    }
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        let len = len.min(self.len.saturating_sub(off));
        if len == 0 {
            return Ok(&[]);
        }
        let have = self.window_at..self.window_at + self.window.len();
        if off < have.start || off + len > have.end {
            let n = len.max(WINDOW).min(self.len - off);
            self.window.resize(n, 0);
            self.file
                .read_exact_at(&mut self.window, self.base + off as u64)?;
            self.window_at = off;
        }
        let at = off - self.window_at;
        Ok(&self.window[at..at + len])
    }
    names_in_arena!();
}
