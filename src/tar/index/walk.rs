//! The walk over tar headers into an [`Index`]: one method per decision
//! (where the archive ends, whether a header is one, a volume label, an
//! extended header and what it sets, a member and its sparse map, where
//! the next header is), each refusing what GNU tar and libarchive would
//! read differently. The PAX and sparse decoders it calls know nothing of
//! it: they take bytes and give values.

use std::num::NonZeroU32;
use std::ops::Range;

use zerocopy::FromBytes;

use super::entry::{make_entry, trim_nul, Pending};
use super::sparse_map::read_map;
use super::{Entry, Index, Kind, Name, Source, MAX_NAMES_HELD};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::tar::block::{Block, BLOCK};
use crate::tar::number::parse_size;
use crate::tar::pax::{self, Overrides};
use crate::tar::sparse::{self, Segment};

/// The walk's state from one header to the next.
struct Walker<'l, S> {
    src: S,
    limits: &'l Limits,
    entries: Vec<Entry>,
    maps: Vec<sparse::Map>,
    segments: Vec<Segment>,
    global: Overrides<Name>,
    pending: Pending,
    scratch: Vec<u8>,
}

/// Walks the tar archive `src` reads into an [`Index`], checking every
/// length against the bytes that exist, under `limits`. Each entry and
/// its name are shown to `on_entry` as soon as it is made (before later
/// headers are read), which answers whether a source that does not hold
/// the tar should keep its data. The walk of every kind of archive; its
/// one way in is `tar::walk`, which picks the source.
pub(crate) fn headers<S: Source>(
    src: S,
    limits: &Limits,
    on_entry: &mut dyn FnMut(&Entry, &[u8]) -> bool,
) -> Result<Index> {
    let mut w = Walker {
        src,
        limits,
        entries: Vec::new(),
        maps: Vec::new(),
        segments: Vec::new(),
        global: Overrides::default(),
        pending: Pending::default(),
        scratch: Vec::new(),
    };
    let mut pos = 0usize;
    while let Some(raw) = w.header_at(pos)? {
        let (block, _) = Block::ref_from_prefix(&raw[..]).expect("512 bytes");
        let hsize = w.check_header(pos, block)?;
        if block.typeflag == b'V' {
            w.volume_label(pos, hsize)?;
            pos += BLOCK;
            continue;
        }
        let (data, size) = if is_extended(block.typeflag) {
            w.extended(pos, block.typeflag, hsize)?
        } else {
            w.member(pos, block, hsize, on_entry)?
        };
        pos = w.after_data(data, size)?;
    }
    w.finish()
}

/// The typeflags of headers that extend the next entry (or, `g`, every
/// later one) rather than being one.
fn is_extended(typeflag: u8) -> bool {
    matches!(typeflag, b'x' | b'g' | b'L' | b'K' | b'X')
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

fn past_end(pos: usize, left: u64, size: u64) -> Error {
    Error::tar(
        pos,
        format!("entry data of {size} bytes runs past the end of the archive ({left} bytes left)"),
    )
}

impl<S: Source> Walker<'_, S> {
    /// The header block at `pos`; `None` where the archive ends (the
    /// end-of-archive zeros, or the end of the data after a header).
    fn header_at(&mut self, pos: usize) -> Result<Option<[u8; BLOCK]>> {
        let got = self.src.read(pos, BLOCK)?;
        let rest = got.len();
        if rest == 0 {
            if pos == 0 {
                // GNU tar and libarchive's tar reader refuse it.
                return Err(Error::tar(pos, "empty tar: no header at all"));
            }
            return Ok(None); // end of data without end-of-archive blocks
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
            return Ok(None); // end-of-archive marker
        }
        Ok(Some(raw))
    }

    /// Whether `block` at `pos` is a header both tools read alike: its
    /// checksum, the first header's format, a type they agree on. Its
    /// size field.
    fn check_header(&self, pos: usize, block: &Block) -> Result<u64> {
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
        if let Some(why) = differing_type(block.typeflag) {
            return Err(Error::tar(
                pos,
                format!(
                    "typeflag '{}': {why} (GNU tar and libarchive read it differently)",
                    [block.typeflag].escape_ascii()
                ),
            ));
        }
        Ok(hsize)
    }

    /// A volume label: GNU tar lists it as a label (not a member) and
    /// extracts nothing, libarchive skips it. Both read the same members
    /// after it, unless it carries data (GNU tar skips it, libarchive reads
    /// it as the next header) or extended headers precede it (GNU tar
    /// applies them to the label, libarchive to the next entry).
    fn volume_label(&self, pos: usize, hsize: u64) -> Result<()> {
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
        if self.pending.first.is_some() {
            return Err(Error::tar(
                pos,
                "an extended header before a volume label ('V'): GNU tar applies it \
                 to the label, libarchive to the next entry (GNU tar and libarchive \
                 read it differently)",
            ));
        }
        Ok(())
    }

    /// An extended header (`x`, `X`, `g`, `L`, `K`) at `pos` whose data is
    /// `size` bytes: what it sets is kept for the next entry (or, `g`, for
    /// every later one). Where its data lies, and its size. (The PAX size
    /// record applies to real entries only, never to an extended header in
    /// between.)
    fn extended(&mut self, pos: usize, typeflag: u8, size: u64) -> Result<(usize, u64)> {
        let data = pos + BLOCK;
        if size > self.limits.max_extended_header {
            return Err(Error::Limit {
                what: "extended header size",
                found: size,
                cap: self.limits.max_extended_header,
            });
        }
        if typeflag != b'g' {
            // A global header applies to every later entry and may
            // legally end the archive; the others need an entry.
            self.pending.first.get_or_insert(pos);
        }
        let scratch = &mut self.scratch;
        scratch.clear();
        scratch.extend_from_slice(self.src.read(data, size as usize)?);
        if (scratch.len() as u64) < size {
            return Err(past_end(pos, scratch.len() as u64, size));
        }
        let src = &mut self.src;
        let mut keep = |r: Range<usize>| src.keep(data + r.start..data + r.end, &scratch[r]);
        match typeflag {
            b'x' | b'X' if self.pending.pax => {
                // GNU tar keeps only the last; libarchive warns and keeps
                // the last; a reader that merged them would name the entry
                // from the first.
                return Err(Error::tar(
                    pos,
                    "a second PAX extended header for one entry (GNU tar and \
                     libarchive keep only the last)",
                ));
            }
            b'x' | b'X' | b'g' => {
                let o = pax::parse(scratch, 0..scratch.len())
                    .map_err(|e| Error::tar(pos, e))?
                    .map(&mut keep);
                if typeflag == b'g' {
                    refuse_global_names(pos, &o)?;
                    self.global.merge(o);
                } else {
                    self.pending.pax = true;
                    self.pending.local.merge(o);
                }
            }
            b'L' => self.pending.long_name = Some(keep(trim_nul(scratch))),
            _ => self.pending.long_link = Some(keep(trim_nul(scratch))),
        }
        if self.src.held() > MAX_NAMES_HELD {
            return Err(Error::Limit {
                what: "bytes of member names held",
                found: self.src.held() as u64,
                cap: MAX_NAMES_HELD as u64,
            });
        }
        Ok((data, size))
    }

    /// A real entry at `pos`: made from its header and the extended headers
    /// before it, its sparse map read when it has one, shown to `on_entry`,
    /// its data checked to exist. Where its (stored) data lies, and its
    /// size.
    fn member(
        &mut self,
        pos: usize,
        block: &Block,
        hsize: u64,
        on_entry: &mut dyn FnMut(&Entry, &[u8]) -> bool,
    ) -> Result<(usize, u64)> {
        // (A global `size` is refused where its record is read.)
        let mut size = match self.pending.local.size {
            Some(Some(s)) => s,
            _ => hsize,
        };
        let mut data = pos + BLOCK;
        if self.entries.len() >= self.limits.max_members {
            return Err(Error::Limit {
                what: "number of archive entries",
                found: self.entries.len() as u64 + 1,
                cap: self.limits.max_members as u64,
            });
        }
        let records = self.pending.local.sparse.take();
        if let Some(name) = records.as_ref().and_then(|r| r.name.clone()) {
            // GNU.sparse.name is the real name (PAX 0.1 and 1.0); an empty
            // one is refused as an empty path is.
            self.pending.local.path = Some((!self.src.name(&name).is_empty()).then_some(name));
        }
        let mut entry = make_entry(
            &mut self.src,
            pos,
            block,
            &self.pending,
            &self.global,
            size,
            self.limits,
        )?;
        if block.is_old_gnu_sparse() || records.as_ref().is_some_and(|r| r.has_map()) {
            let (at, stored) = self.sparse(pos, block, &mut entry, records.as_deref(), size)?;
            (data, size) = (at, stored);
        }
        let retain = on_entry(&entry, self.src.name(&entry.name));
        if let Some(left) = self.src.data(data, size, retain)? {
            return Err(past_end(pos, left, size));
        }
        self.entries.push(entry);
        self.pending = Pending::default();
        Ok((data, size))
    }

    /// Reads the sparse map of `entry` (header at `pos`) into the index's
    /// arena and gives the entry its real size and map: where its stored
    /// segments start, and their total.
    fn sparse(
        &mut self,
        pos: usize,
        block: &Block,
        entry: &mut Entry,
        records: Option<&sparse::Records<Name>>,
        size: u64,
    ) -> Result<(usize, u64)> {
        if entry.kind != Kind::File {
            // No writer makes one. The tools read a link's map as its
            // content (zeros, not the target's bytes); on a directory
            // libarchive fails, GNU tar reads on.
            return Err(Error::tar(
                pos,
                format!(
                    "GNU sparse records on \"{}\", an entry that is not a regular \
                     file (a link's map would be read as its content)",
                    self.src.name(&entry.name).escape_ascii()
                ),
            ));
        }
        let held = self.segments.len();
        let (map, real) = read_map(&mut self.src, pos, block, records, size, held, self.limits)
            .map_err(|e| match e {
                sparse::Fault::Tar(why) => Error::tar(
                    pos,
                    format!(
                        "GNU sparse member \"{}\": {why}",
                        self.src.name(&entry.name).escape_ascii()
                    ),
                ),
                sparse::Fault::Other(e) => e,
            })?;
        entry.size = real;
        entry.offset = map.data_at as u64;
        let at = self.segments.len();
        self.segments.extend_from_slice(&map.segs);
        self.maps.push(sparse::Map {
            segs: at..self.segments.len(),
            stored: map.stored,
        });
        entry.sparse = Some(
            u32::try_from(self.maps.len())
                .ok()
                .and_then(NonZeroU32::new)
                .ok_or(Error::Limit {
                    what: "number of sparse members",
                    found: self.maps.len() as u64,
                    cap: u64::from(u32::MAX),
                })?,
        );
        Ok((map.data_at, map.stored))
    }

    /// Where the next header starts, after `size` bytes of data at `data`
    /// and their padding to a whole block. The padding must exist too: GNU
    /// tar, libarchive and the tar crate read whole blocks and refuse an
    /// archive cut inside one, even after the last entry's data.
    fn after_data(&mut self, data: usize, size: u64) -> Result<usize> {
        let end = data as u64 + size;
        let pos = usize::try_from(end.div_ceil(BLOCK as u64).saturating_mul(BLOCK as u64))
            .unwrap_or(usize::MAX);
        let pad = pos - end as usize;
        if pad > 0 && self.src.read(end as usize, pad)?.len() < pad {
            return Err(Error::tar(
                pos - BLOCK,
                "archive ends inside the last block of an entry's data (its padding is cut)",
            ));
        }
        Ok(pos)
    }

    /// The index, once the archive ended with no extended header left
    /// waiting for its entry.
    fn finish(mut self) -> Result<Index> {
        if let Some(at) = self.pending.first {
            return Err(Error::tar(
                at,
                "extended header (PAX or GNU long name) is not followed by an entry",
            ));
        }
        Ok(Index {
            entries: self.entries,
            names: self.src.take_names(),
            maps: self.maps,
            segments: self.segments,
        })
    }
}

/// GNU tar applies a global path, linkpath or size to every later entry;
/// libarchive ignores them: the two would list different members.
fn refuse_global_names(pos: usize, o: &Overrides<Name>) -> Result<()> {
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
                "a global PAX record sets {key} for every later entry: GNU tar applies it, \
                 libarchive ignores it"
            ),
        ));
    }
    Ok(())
}
