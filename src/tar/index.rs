//! The walk over tar headers, and the index it builds.

use std::fs::File;
use std::num::NonZeroU32;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use zerocopy::FromBytes;

use super::block::{Block, BLOCK};
use super::number::{parse_meta, parse_size};
use super::pax::{self, Overrides};
use super::sparse::{self, Segment};
use crate::error::{Error, Result};
use crate::limits::Limits;

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
    fn keep(&mut self, _: Range<usize>, bytes: &[u8]) -> Name {
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
}

/// Extended-header state waiting for the next real entry.
#[derive(Default)]
struct Pending {
    /// Offset of the first extended header not yet consumed.
    first: Option<usize>,
    local: Overrides<Name>,
    /// A PAX `x` header was read for this entry.
    pax: bool,
    long_name: Option<Name>,
    long_link: Option<Name>,
}

impl Index {
    /// Walks the tar bytes `tar` (in memory).
    pub fn build(tar: &[u8], limits: &Limits) -> Result<Index> {
        Index::build_from(SliceSource(tar), limits)
    }

    /// Walks the tar archive that `src` reads, checking every length
    /// against the bytes that exist, under `limits`.
    pub fn build_from<S: Source>(src: S, limits: &Limits) -> Result<Index> {
        Index::build_with(src, limits, &mut |_, _| false)
    }

    /// [`build_from`](Self::build_from), showing each entry and its name to
    /// `on_entry` as soon as it is made (before later headers are read);
    /// `on_entry` answers whether a streamed source should keep its data.
    pub fn build_with<S: Source>(
        mut src: S,
        limits: &Limits,
        on_entry: &mut dyn FnMut(&Entry, &[u8]) -> bool,
    ) -> Result<Index> {
        let mut entries = Vec::new();
        let mut maps = Vec::new();
        let mut segments = Vec::new();
        let mut global: Overrides<Name> = Overrides::default();
        let mut pending = Pending::default();
        let mut scratch = Vec::new();
        let mut pos = 0usize;
        loop {
            let got = src.read(pos, BLOCK)?;
            let rest = got.len();
            if rest == 0 {
                if pos == 0 {
                    // GNU tar and libarchive's tar reader refuse it.
                    return Err(Error::tar(pos, "empty tar: no header at all"));
                }
                break; // end of data without end-of-archive blocks
            }
            if rest < BLOCK {
                // Zeros or not: libarchive and the tar crate refuse a cut
                // block (GNU tar reads a cut block of zeros as the end).
                return Err(Error::tar(
                    pos,
                    format!("truncated header: {rest} bytes left, a header needs {BLOCK}"),
                ));
            }
            let mut raw = [0u8; BLOCK];
            raw.copy_from_slice(got);
            if raw.iter().all(|&b| b == 0) {
                break; // end-of-archive marker
            }
            let (block, _) = Block::ref_from_prefix(&raw[..]).expect("512 bytes");
            if !block.checksum_ok() {
                return Err(Error::tar(
                    pos,
                    "bad header checksum (not a tar header, or corrupt)",
                ));
            }
            if pos == 0 {
                block.check_first().map_err(|e| Error::tar(pos, e))?;
            }
            let hsize =
                parse_size(&block.size).map_err(|e| Error::tar(pos, format!("size field {e}")))?;
            let mut data = pos + BLOCK;
            let typeflag = block.typeflag;
            if let Some(why) = differing_type(typeflag) {
                return Err(Error::tar(
                    pos,
                    format!(
                        "typeflag '{}': {why} (GNU tar and libarchive read it differently)",
                        [typeflag].escape_ascii()
                    ),
                ));
            }
            if typeflag == b'V' {
                // A volume label: GNU tar lists it as a label (not a
                // member) and extracts nothing, libarchive skips it. Both
                // read the same members after it, unless it carries data
                // (GNU tar skips it, libarchive reads it as the next header)
                // or extended headers precede it (GNU tar applies them to
                // the label, libarchive to the next entry).
                if hsize > 0 {
                    return Err(Error::tar(
                        pos,
                        format!(
                            "a volume label ('V') declares {hsize} bytes of data: GNU tar \
                             skips them, libarchive reads them as the next header (GNU tar \
                             and libarchive read it differently)"
                        ),
                    ));
                }
                if pending.first.is_some() {
                    return Err(Error::tar(
                        pos,
                        "an extended header before a volume label ('V'): GNU tar applies it \
                         to the label, libarchive to the next entry (GNU tar and libarchive \
                         read it differently)",
                    ));
                }
                pos += BLOCK;
                continue;
            }
            let extended = matches!(typeflag, b'x' | b'g' | b'L' | b'K' | b'X');
            // The PAX size record applies to real entries only, never to an
            // extended header in between.
            let mut size = if extended {
                hsize
            } else {
                // (A global `size` is refused where its record is read.)
                match pending.local.size {
                    Some(Some(s)) => s,
                    _ => hsize,
                }
            };
            let past_end = |left: u64, size: u64| {
                Error::tar(
                    pos,
                    format!(
                        "entry data of {size} bytes runs past the end of the archive ({left} bytes left)"
                    ),
                )
            };
            if extended {
                if size > limits.max_extended_header {
                    return Err(Error::Limit {
                        what: "extended header size",
                        found: size,
                        cap: limits.max_extended_header,
                    });
                }
                if typeflag != b'g' {
                    // A global header applies to every later entry and may
                    // legally end the archive; the others need an entry.
                    pending.first.get_or_insert(pos);
                }
                scratch.clear();
                scratch.extend_from_slice(src.read(data, size as usize)?);
                if (scratch.len() as u64) < size {
                    return Err(past_end(scratch.len() as u64, size));
                }
                let mut keep =
                    |r: Range<usize>| src.keep(data + r.start..data + r.end, &scratch[r]);
                match typeflag {
                    b'x' | b'X' if pending.pax => {
                        // GNU tar keeps only the last; libarchive warns and
                        // keeps the last; a reader that merged them would
                        // name the entry from the first.
                        return Err(Error::tar(
                            pos,
                            "a second PAX extended header for one entry (GNU tar and \
                             libarchive keep only the last)",
                        ));
                    }
                    b'x' | b'X' | b'g' => {
                        let o = pax::parse(&scratch, 0..scratch.len())
                            .map_err(|e| Error::tar(pos, e))?
                            .map(&mut keep);
                        if typeflag == b'g' {
                            // GNU tar applies a global path, linkpath or
                            // size to every later entry; libarchive ignores
                            // them: the two would list different members.
                            let sets = [
                                ("path", o.path.is_some()),
                                ("linkpath", o.linkpath.is_some()),
                                ("size", o.size.is_some()),
                                ("GNU.sparse records", o.sparse.is_some()),
                            ];
                            if let Some((key, _)) = sets.iter().find(|(_, set)| *set) {
                                return Err(Error::tar(
                                    pos,
                                    format!(
                                        "a global PAX record sets {key} for every later entry: \
                                         GNU tar applies it, libarchive ignores it"
                                    ),
                                ));
                            }
                            global.merge(o);
                        } else {
                            pending.pax = true;
                            pending.local.merge(o);
                        }
                    }
                    b'L' => pending.long_name = Some(keep(trim_nul(&scratch))),
                    _ => pending.long_link = Some(keep(trim_nul(&scratch))),
                }
                if src.held() > MAX_NAMES_HELD {
                    return Err(Error::Limit {
                        what: "bytes of member names held",
                        found: src.held() as u64,
                        cap: MAX_NAMES_HELD as u64,
                    });
                }
            } else {
                if entries.len() >= limits.max_members {
                    return Err(Error::Limit {
                        what: "number of archive entries",
                        found: entries.len() as u64 + 1,
                        cap: limits.max_members as u64,
                    });
                }
                let records = pending.local.sparse.take();
                if let Some(name) = records.as_ref().and_then(|r| r.name.clone()) {
                    // GNU.sparse.name is the real name (PAX 0.1 and 1.0);
                    // an empty one is refused as an empty path is.
                    pending.local.path = Some((!src.name(&name).is_empty()).then_some(name));
                }
                let mut entry = make_entry(&mut src, pos, block, &pending, &global, size, limits)?;
                if block.is_old_gnu_sparse() || records.as_ref().is_some_and(|r| r.has_map()) {
                    if entry.kind != Kind::File {
                        // No writer makes one. The tools read a link's
                        // map as its content (zeros, not the target's
                        // bytes); on a directory libarchive fails, GNU
                        // tar reads on.
                        return Err(Error::tar(
                            pos,
                            format!(
                                "GNU sparse records on \"{}\", an entry that is not a regular \
                                 file (a link's map would be read as its content)",
                                src.name(&entry.name).escape_ascii()
                            ),
                        ));
                    }
                    let (map, real) = sparse::read_map(
                        &mut src,
                        pos,
                        block,
                        records.as_deref(),
                        size,
                        segments.len(),
                        limits,
                    )
                    .map_err(|e| match e {
                        sparse::Fault::Tar(why) => Error::tar(
                            pos,
                            format!(
                                "GNU sparse member \"{}\": {why}",
                                src.name(&entry.name).escape_ascii()
                            ),
                        ),
                        sparse::Fault::Other(e) => e,
                    })?;
                    entry.size = real;
                    data = map.data_at;
                    size = map.stored;
                    entry.offset = data as u64;
                    let at = segments.len();
                    segments.extend_from_slice(&map.segs);
                    maps.push(sparse::Map {
                        segs: at..segments.len(),
                        stored: size,
                    });
                    entry.sparse = Some(
                        u32::try_from(maps.len())
                            .ok()
                            .and_then(NonZeroU32::new)
                            .ok_or(Error::Limit {
                                what: "number of sparse members",
                                found: maps.len() as u64,
                                cap: u64::from(u32::MAX),
                            })?,
                    );
                }
                let retain = on_entry(&entry, src.name(&entry.name));
                if let Some(left) = src.data(data, size, retain)? {
                    return Err(past_end(left, size));
                }
                entries.push(entry);
                pending = Pending::default();
            }
            let end = data as u64 + size;
            pos = usize::try_from(end.div_ceil(BLOCK as u64).saturating_mul(BLOCK as u64))
                .unwrap_or(usize::MAX);
            // The data's padding to a whole block must exist too: GNU tar,
            // libarchive and the tar crate read whole blocks and refuse an
            // archive cut inside one, even after the last entry's data.
            let pad = pos - end as usize;
            if pad > 0 && src.read(end as usize, pad)?.len() < pad {
                return Err(Error::tar(
                    pos - BLOCK,
                    "archive ends inside the last block of an entry's data (its padding is cut)",
                ));
            }
        }
        if let Some(at) = pending.first {
            return Err(Error::tar(
                at,
                "extended header (PAX or GNU long name) is not followed by an entry",
            ));
        }
        Ok(Index {
            entries,
            names: src.take_names(),
            maps,
            segments,
        })
    }
}

/// Why GNU tar and libarchive read an entry of this type differently, for
/// the types where they do; `None` for the types both read alike (every
/// type GNU tar and libarchive do not know is a regular file to both).
fn differing_type(typeflag: u8) -> Option<&'static str> {
    match typeflag {
        b'A' => Some(
            "a Solaris ACL: libarchive applies it to the next entry, GNU tar lists it as a member",
        ),
        b'M' => Some(
            "a multi-volume continuation: GNU tar will not extract it (its start is in \
             another volume), libarchive reads its bytes as a member",
        ),
        _ => None,
    }
}

fn trim_nul(b: &[u8]) -> Range<usize> {
    0..memchr::memchr(0, b).unwrap_or(b.len())
}

/// Precedence: PAX `x` > GNU `L`/`K` > the header's own field (a global
/// `g` record that sets a name is refused by the walk, and so is an empty
/// `path`, or an empty `linkpath` on a link, by [`make_entry`]).
fn pick(local: &Option<Option<Name>>, gnu: &Option<Name>) -> Option<Name> {
    match local {
        Some(v) => v.clone(),
        None => gnu.clone(),
    }
}

fn make_entry<S: Source>(
    src: &mut S,
    pos: usize,
    block: &Block,
    pending: &Pending,
    global: &Overrides<Name>,
    size: u64,
    limits: &Limits,
) -> Result<Entry> {
    let mut field = |off: usize, f: &[u8]| {
        let b = Block::field(f);
        src.keep(pos + off..pos + off + b.len(), b)
    };
    let empty = |what: &str| {
        Error::tar(
            pos,
            format!(
                "an empty PAX {what}: GNU tar reads it as \"\", libarchive keeps the \
                 header's (GNU tar and libarchive read it differently)"
            ),
        )
    };
    if pending.local.path == Some(None) {
        return Err(empty("path or GNU.sparse.name"));
    }
    let name = match pick(&pending.local.path, &pending.long_name) {
        Some(found) => found,
        None if block.is_ustar() && block.prefix[0] != 0 => {
            let mut v = Block::field(&block.prefix).to_vec();
            v.push(b'/');
            v.extend_from_slice(Block::field(&block.name));
            Name::Joined(v.into_boxed_slice())
        }
        None => field(0, &block.name),
    };
    let mut kind = match block.typeflag {
        b'5' | b'D' => Kind::Dir,
        b'2' => Kind::Symlink,
        b'1' => Kind::Hardlink,
        b'3' | b'4' | b'6' => Kind::Other,
        // `0`, NUL, `7`, and types neither tool knows: a regular file to
        // both (GNU tar warns "extracted as normal file").
        _ => Kind::File,
    };
    // Only links have a target: a link name on any other entry is ignored
    // by GNU tar and libarchive alike.
    let link = match pick(&pending.local.linkpath, &pending.long_link) {
        _ if !matches!(kind, Kind::Symlink | Kind::Hardlink) => None,
        _ if pending.local.linkpath == Some(None) => return Err(empty("linkpath on a link")),
        Some(found) => Some(found),
        None if block.linkname[0] != 0 => Some(field(157, &block.linkname)),
        None => None,
    };
    // Old tar marks directories only by a trailing slash: GNU tar and
    // libarchive read a regular file (`0` or NUL) whose name ends in `/` as
    // a directory. A contiguous file (`7`) or an unknown type so named is a
    // file to GNU tar, a directory to libarchive: refused.
    if kind == Kind::File && src.name(&name).ends_with(b"/") {
        if !matches!(block.typeflag, b'0' | 0) {
            let what = if block.typeflag == b'7' {
                "a contiguous-file"
            } else {
                "an unknown-type"
            };
            return Err(Error::tar(
                pos,
                format!(
                    "{what} entry whose name ends in '/': GNU tar reads a file, libarchive \
                     a directory (GNU tar and libarchive read it differently)"
                ),
            ));
        }
        kind = Kind::Dir;
    }
    // A GNU dump directory (`D`) carries a listing of the directory as
    // data: GNU tar skips it, libarchive hands it out as the entry's
    // bytes. Refused unless empty.
    if block.typeflag == b'D' && size > 0 {
        return Err(Error::tar(
            pos,
            format!(
                "a GNU dump directory ('D') carries {size} bytes: GNU tar skips them, \
                 libarchive reads them as its data (GNU tar and libarchive read it differently)"
            ),
        ));
    }
    // An entry that carries no data (a link, device, directory or FIFO)
    // but declares a size: GNU tar and libarchive disagree on whether the
    // bytes after it are its data or more entries (GNU tar skips them for
    // symlinks, devices and FIFOs, libarchive reads them as entries; for
    // directories and hard links each follows the ustar or the PAX size
    // differently), so a member could hide from one of them. Refused.
    if size > 0 && (matches!(block.typeflag, b'1'..=b'6') || kind == Kind::Dir) {
        let what = match block.typeflag {
            b'1' => "hard link",
            b'2' => "symlink",
            b'3' => "character device",
            b'4' => "block device",
            b'6' => "FIFO",
            _ => "directory",
        };
        return Err(Error::tar(
            pos,
            format!(
                "a {what} entry declares {size} bytes of data: tar readers (GNU tar, \
                 libarchive, Python) disagree on whether they are data or more entries"
            ),
        ));
    }
    let name = normalize(name, kind, src);
    let name_len = src.name(&name).len();
    if name_len > limits.max_name_len {
        return Err(Error::Limit {
            what: "member name length",
            found: name_len as u64,
            cap: limits.max_name_len as u64,
        });
    }
    if let Some(l) = &link {
        let link_len = src.name(l).len();
        if link_len > limits.max_name_len {
            return Err(Error::Limit {
                what: "link target length",
                found: link_len as u64,
                cap: limits.max_name_len as u64,
            });
        }
    }
    // Metadata only, read as libarchive reads it (base-256 and negative
    // times included): where GNU tar rejects one of these fields it
    // reports an error but lists and extracts the same members and bytes.
    let mtime = match pending.local.mtime.or(global.mtime) {
        Some(Some(t)) => t,
        _ => parse_meta(&block.mtime),
    };
    // A mode beyond 32 bits (base-256, or negative) is refused rather than
    // truncated to its low bits as libarchive's `mode_t` would (a silent
    // mode 0): the one metadata field kept strict (tests/cli.rs).
    let m = parse_meta(&block.mode);
    let mode = u32::try_from(m)
        .map_err(|_| Error::tar(pos, format!("mode field: {m} does not fit in 32 bits")))?;
    Ok(Entry {
        name,
        kind,
        offset: (pos + BLOCK) as u64,
        size,
        mtime,
        mode,
        link,
        typeflag: block.typeflag,
        header_offset: pending.first.unwrap_or(pos) as u64,
        sparse: None,
    })
}

/// Drops one leading `./` and, for directories, trailing slashes; a
/// directory name that would become empty becomes `.`.
fn normalize<S: Source>(name: Name, kind: Kind, src: &S) -> Name {
    let bytes = src.name(&name);
    let mut start = 0;
    let mut end = bytes.len();
    if bytes.starts_with(b"./") && bytes.len() > 2 {
        start = 2;
    }
    if kind == Kind::Dir {
        while end > start + 1 && bytes[end - 1] == b'/' {
            end -= 1;
        }
    }
    if start == 0 && end == bytes.len() {
        return name;
    }
    match name {
        Name::Span(r) => Name::Span(r.start + start..r.start + end),
        Name::Arena(r) => Name::Arena(r.start + start..r.start + end),
        Name::Joined(b) => Name::Joined(b[start..end].into()),
    }
}
