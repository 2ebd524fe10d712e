//! GNU sparse members: their maps, read in every encoding GNU tar writes,
//! and the expansion of their stored bytes into their content.
//!
//! A sparse member stores only some stretches (segments) of a file; the
//! rest are holes, read as zeros up to the file's real size. The map that
//! says where the segments go comes in four encodings (docs/FORMAT.md):
//!
//! - old GNU (typeflag `S`): four map entries in the header, then, while
//!   the `isextended` byte is set, extension blocks of 21 entries each,
//!   between the header and the data; the real size is in the header;
//! - PAX 0.0: `GNU.sparse.offset` / `GNU.sparse.numbytes` records, repeated
//!   in pairs, and `GNU.sparse.size`;
//! - PAX 0.1: one `GNU.sparse.map` record (`offset,numbytes,…`),
//!   `GNU.sparse.size` and `GNU.sparse.name`;
//! - PAX 1.0: `GNU.sparse.major=1`, `GNU.sparse.minor=0`,
//!   `GNU.sparse.name`, `GNU.sparse.realsize`, and the map as decimal lines
//!   at the start of the data (a count, then offset and length per
//!   segment), padded to a whole block.
//!
//! Whatever the encoding, the index records one [`Map`] per sparse entry
//! (a range of the index's segment arena and the stored length), checked
//! here once: segments in order, never overlapping, inside the real size,
//! and adding up to exactly the stored bytes. GNU tar and libarchive read a
//! map that breaks one of these rules differently (or not at all), so it
//! is refused with the reason.

use std::ops::Range;

use super::block::BLOCK;
use crate::error::{Error, Result};
use crate::limits::Limits;

/// One stored stretch of a sparse member: `len` bytes at `offset` of its
/// expanded content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Where the stretch starts in the expanded content.
    pub offset: u64,
    /// Its length (stored bytes, back to back in the member's data).
    pub len: u64,
}

/// A sparse entry's map: its segments in the index's arena, and how many
/// bytes of data it stores (their total).
#[derive(Debug, Clone)]
pub struct Map {
    /// The range of [`Index::segments`](super::Index) holding its segments.
    pub segs: Range<usize>,
    /// Bytes stored in the archive for it (after any in-data map).
    pub stored: u64,
}

/// The `GNU.sparse.*` records of one PAX header (PAX 0.0, 0.1 and 1.0).
#[derive(Debug, Clone)]
pub struct Records<N> {
    major: Option<u64>,
    minor: Option<u64>,
    /// `GNU.sparse.size` (0.x) and `GNU.sparse.realsize` (1.0).
    size: Option<u64>,
    realsize: Option<u64>,
    numblocks: Option<u64>,
    /// `GNU.sparse.name`: the member's real name.
    pub name: Option<N>,
    /// `GNU.sparse.map` (0.1), as numbers.
    map: Option<Vec<u64>>,
    /// `GNU.sparse.offset` and `GNU.sparse.numbytes` (0.0), in turn.
    pairs: Vec<u64>,
    /// Map numbers (an offset, or a map) came before a
    /// `GNU.sparse.numblocks` record, or none came before them at all.
    early_map: bool,
}

impl<N> Default for Records<N> {
    fn default() -> Self {
        Records {
            major: None,
            minor: None,
            size: None,
            realsize: None,
            numblocks: None,
            name: None,
            map: None,
            pairs: Vec::new(),
            early_map: false,
        }
    }
}

/// How a PAX sparse member keeps its map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pax {
    /// 0.0 or 0.1: the map is in the records; the real size.
    InRecords(Vec<Segment>, u64),
    /// 1.0: the map is at the start of the data; the real size.
    InData(u64),
}

fn number(key: &[u8], t: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(t)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            format!(
                "PAX record {} value {:?} is not a non-negative integer",
                key.escape_ascii(),
                String::from_utf8_lossy(t)
            )
        })
}

impl<N> Records<N> {
    /// Reads one `GNU.sparse.*` record (`name` is the value's span, to be
    /// kept as a name).
    pub fn record(&mut self, key: &[u8], text: &[u8], name: N) -> Result<(), String> {
        match &key[b"GNU.sparse.".len()..] {
            b"major" => self.major = Some(number(key, text)?),
            b"minor" => self.minor = Some(number(key, text)?),
            b"size" => self.size = Some(number(key, text)?),
            b"realsize" => self.realsize = Some(number(key, text)?),
            b"numblocks" => {
                // GNU tar starts the map again at each numblocks record,
                // libarchive keeps what came before it.
                self.early_map |= self.map.is_some() || !self.pairs.is_empty();
                self.numblocks = Some(number(key, text)?)
            }
            b"name" => self.name = Some(name),
            b"map" => {
                self.early_map |= self.numblocks.is_none();
                let mut v = Vec::new();
                if !text.is_empty() {
                    for n in text.split(|&b| b == b',') {
                        v.push(number(key, n)?);
                    }
                }
                self.map = Some(v);
            }
            b"offset" if self.pairs.len() % 2 == 0 => {
                self.early_map |= self.numblocks.is_none();
                self.pairs.push(number(key, text)?)
            }
            b"numbytes" if self.pairs.len() % 2 == 1 => self.pairs.push(number(key, text)?),
            b"offset" | b"numbytes" => {
                return Err(format!(
                    "PAX record {} out of turn (GNU.sparse.offset and numbytes come in pairs)",
                    key.escape_ascii()
                ))
            }
            // Other GNU.sparse keywords carry nothing the content depends on.
            _ => {}
        }
        Ok(())
    }

    /// Whether they say anything about the map (any record but the name:
    /// a `GNU.sparse.name` alone renames a plain member, as both tools
    /// read it).
    pub fn has_map(&self) -> bool {
        self.major.is_some()
            || self.minor.is_some()
            || self.size.is_some()
            || self.realsize.is_some()
            || self.numblocks.is_some()
            || self.map.is_some()
            || !self.pairs.is_empty()
    }

    /// Converts the kept name.
    pub fn map_name<M>(self, f: impl FnOnce(N) -> M) -> Records<M> {
        Records {
            major: self.major,
            minor: self.minor,
            size: self.size,
            realsize: self.realsize,
            numblocks: self.numblocks,
            name: self.name.map(f),
            map: self.map,
            pairs: self.pairs,
            early_map: self.early_map,
        }
    }

    /// Which encoding these records are, with the map when it is in them.
    pub fn encoding(&self) -> Result<Pax, String> {
        let real = match (self.size, self.realsize) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "GNU.sparse.size {a} and GNU.sparse.realsize {b} disagree"
                ))
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => return Err("no GNU.sparse.size or realsize record".into()),
        };
        match (self.major, self.minor) {
            (Some(1), Some(0)) => {
                if self.map.is_some() || !self.pairs.is_empty() {
                    return Err("a PAX 1.0 sparse member also has a 0.x map".into());
                }
                if self.name.is_none() {
                    return Err("a PAX 1.0 sparse member has no GNU.sparse.name".into());
                }
                Ok(Pax::InData(real))
            }
            (None, None) => {
                let nums = match (&self.map, self.pairs.is_empty()) {
                    (Some(_), false) => {
                        return Err("both a GNU.sparse.map and GNU.sparse.offset records".into())
                    }
                    (Some(m), true) => &m[..],
                    (None, _) => &self.pairs[..],
                };
                if self.early_map {
                    // GNU tar sizes its map by the last numblocks record
                    // and keeps only the numbers after it ("excess
                    // GNU.sparse.map" or "offset"); libarchive reads them all.
                    return Err(
                        "GNU.sparse map numbers before a GNU.sparse.numblocks record, \
                         or without one (GNU tar drops them, libarchive reads them)"
                            .into(),
                    );
                }
                if nums.len() % 2 == 1 {
                    return Err("a sparse map with an odd count of numbers".into());
                }
                if nums.is_empty() {
                    return Err("a PAX sparse member without a map".into());
                }
                let segs: Vec<Segment> = nums
                    .chunks(2)
                    .map(|p| Segment {
                        offset: p[0],
                        len: p[1],
                    })
                    .collect();
                if let Some(n) = self.numblocks {
                    if n != segs.len() as u64 {
                        return Err(format!(
                            "GNU.sparse.numblocks says {n} segments, the map has {}",
                            segs.len()
                        ));
                    }
                }
                Ok(Pax::InRecords(segs, real))
            }
            (major, minor) => Err(format!(
                "sparse format version {}.{} (GNU tar reads 0.0, 0.1 and 1.0 only)",
                major.map_or("?".into(), |v| v.to_string()),
                minor.map_or("?".into(), |v| v.to_string())
            )),
        }
    }
}

/// Offset of the first map entry in an old GNU header, entries in it, and
/// the offsets of its `isextended` byte and real size.
const OLD_MAP: usize = 386;
const OLD_ENTRIES: usize = 4;
const OLD_EXTENDED: usize = 482;
const OLD_REALSIZE: Range<usize> = 483..495;
/// Entries in an extension block, and its `isextended` byte.
const EXT_ENTRIES: usize = 21;
const EXT_EXTENDED: usize = 504;

/// What the map entries of one old GNU block said.
#[derive(Debug)]
pub struct OldBlock {
    /// Whether an extension block follows.
    pub extended: bool,
}

/// Reads the `count` map entries at `at` of an old GNU header or extension
/// block into `out`, and whether another extension block follows.
fn old_entries(
    block: &[u8],
    at: usize,
    count: usize,
    ext: usize,
    out: &mut Vec<Segment>,
) -> Result<OldBlock, String> {
    let mut ended = false;
    for i in 0..count {
        let e = &block[at + 24 * i..at + 24 * (i + 1)];
        let (off, len) = (&e[..12], &e[12..]);
        // GNU tar ends the map at an entry whose numbytes starts with a
        // NUL, libarchive at one whose offset does.
        match (off[0] == 0, len[0] == 0) {
            (true, true) => {
                ended = true;
                break;
            }
            (false, false) => {}
            _ => {
                return Err("an old GNU sparse map entry with only one of its offset and \
                     numbytes fields empty (GNU tar and libarchive end the map at different fields)"
                    .into())
            }
        }
        let offset = super::number::parse_size(off).map_err(|e| format!("sparse offset: {e}"))?;
        let len = super::number::parse_size(len).map_err(|e| format!("sparse numbytes: {e}"))?;
        out.push(Segment { offset, len });
    }
    let extended = block[ext] != 0;
    if ended && extended {
        // GNU tar reads no extension block after an empty entry (they are
        // its data); libarchive reads them.
        return Err(
            "an old GNU sparse map ends early but says an extension block follows \
                    (GNU tar and libarchive read the blocks after it differently)"
                .into(),
        );
    }
    Ok(OldBlock { extended })
}

/// The entries of an old GNU sparse header, its real size, and whether
/// extension blocks follow.
pub fn old_header(block: &[u8]) -> Result<(Vec<Segment>, u64, bool), String> {
    let mut segs = Vec::new();
    let b = old_entries(block, OLD_MAP, OLD_ENTRIES, OLD_EXTENDED, &mut segs)?;
    let real = super::number::parse_size(&block[OLD_REALSIZE])
        .map_err(|e| format!("sparse real size: {e}"))?;
    Ok((segs, real, b.extended))
}

/// The entries of an old GNU extension block (appended to `out`), and
/// whether another follows.
pub fn old_extension(block: &[u8], out: &mut Vec<Segment>) -> Result<bool, String> {
    Ok(old_entries(block, 0, EXT_ENTRIES, EXT_EXTENDED, out)?.extended)
}

/// The outcome of parsing a PAX 1.0 in-data map from a prefix of the data.
#[derive(Debug)]
pub enum InData {
    /// More bytes are needed.
    More,
    /// The map, and the bytes it takes (padded to whole blocks).
    Done(Vec<Segment>, u64),
}

/// Parses a PAX 1.0 map from `buf`, the first bytes of the member's data
/// (`all` when they are all of it): a decimal count, then an offset and a
/// length per segment, each on its own line. At most `max` segments.
pub fn in_data(buf: &[u8], all: bool, max: usize) -> Result<InData, String> {
    let mut nums = Vec::new();
    let mut pos = 0;
    let mut want: Option<usize> = None;
    loop {
        if let Some(w) = want {
            if nums.len() == 2 * w {
                let segs = nums
                    .chunks(2)
                    .map(|p: &[u64]| Segment {
                        offset: p[0],
                        len: p[1],
                    })
                    .collect();
                let used = (pos as u64).div_ceil(BLOCK as u64) * BLOCK as u64;
                return Ok(InData::Done(segs, used));
            }
        }
        let Some(nl) = memchr::memchr(b'\n', &buf[pos..]) else {
            if buf.len() - pos > 20 {
                return Err("a PAX 1.0 sparse map line is not a number".into());
            }
            return if all {
                Err("the PAX 1.0 sparse map runs past the member's data".into())
            } else {
                Ok(InData::More)
            };
        };
        let line = &buf[pos..pos + nl];
        let n = number(b"GNU.sparse 1.0 map", line).map_err(|_| {
            format!(
                "a PAX 1.0 sparse map line {:?} is not a number",
                line.escape_ascii().to_string()
            )
        })?;
        pos += nl + 1;
        match want {
            None => {
                if n > max as u64 {
                    return Err(format!(
                        "a PAX 1.0 sparse map of {n} segments (more than the cap of {max})"
                    ));
                }
                want = Some(n as usize);
            }
            Some(_) => nums.push(n),
        }
    }
}

/// Checks a map against the member's real size and the bytes stored for
/// it, and the caps.
pub fn check(segs: &[Segment], real: u64, stored: u64, limits: &Limits) -> Result<(), String> {
    if real > limits.max_sparse_size {
        return Err(format!(
            "real size {real} is over the cap of {} (Limits::max_sparse_size)",
            limits.max_sparse_size
        ));
    }
    let mut end = 0u64;
    let mut total = 0u64;
    for s in segs {
        if s.offset < end {
            return Err(format!(
                "its sparse map overlaps or runs backwards (a segment at {} after one ending at {end})",
                s.offset
            ));
        }
        end = s
            .offset
            .checked_add(s.len)
            .filter(|&e| e <= real)
            .ok_or_else(|| {
                format!(
                    "a sparse segment ({} bytes at {}) runs past its real size {real}",
                    s.len, s.offset
                )
            })?;
        total += s.len;
    }
    if end != real {
        // GNU tar writes a last, empty segment at the real size; without
        // one, `tar -xO` stops at the map's end and libarchive goes on to
        // the real size.
        return Err(format!(
            "its sparse map ends at {end}, before its real size {real} (GNU tar's \
             output stops at the map's end, libarchive's at the real size)"
        ));
    }
    if total == 0 && real > 0 {
        // libarchive's archive_read_data (the runtime's read) hands out
        // nothing for a map without data; GNU tar and `bsdtar -x` write
        // the real size of zeros.
        return Err(format!(
            "a sparse file of {real} bytes that is all hole (libarchive's \
             archive_read_data reads it empty, GNU tar as {real} zeros)"
        ));
    }
    let last = segs.iter().rposition(|s| s.len > 0).unwrap_or(0);
    if let Some(s) = segs[..last].iter().find(|s| s.len % BLOCK as u64 != 0) {
        // GNU tar reads each segment from a fresh block (dropping the rest
        // of the last one), libarchive reads them back to back: they agree
        // only when every segment but the last fills whole blocks, as GNU
        // tar writes them.
        return Err(format!(
            "a sparse segment of {} bytes (not whole blocks) before the last: GNU tar \
             starts each segment at a block, libarchive reads them back to back",
            s.len
        ));
    }
    if total != stored {
        return Err(format!(
            "its sparse map needs {total} stored bytes, the archive stores {stored}"
        ));
    }
    Ok(())
}

/// Why a sparse map could not be read: the archive's fault (the walk
/// names the member and the header), or another error (I/O, a cap).
pub enum Fault {
    /// A reason, for a tar error.
    Tar(String),
    /// An error as it stands.
    Other(Error),
}

impl From<String> for Fault {
    fn from(s: String) -> Fault {
        Fault::Tar(s)
    }
}

impl From<&str> for Fault {
    fn from(s: &str) -> Fault {
        Fault::Tar(s.into())
    }
}

impl From<Error> for Fault {
    fn from(e: Error) -> Fault {
        Fault::Other(e)
    }
}

/// A piece of a sparse member's content, as it is expanded.
#[derive(Debug)]
pub enum Piece<'a> {
    /// Stored bytes.
    Data(&'a [u8]),
    /// A hole: this many zeros.
    Hole(u64),
}

/// Expands a sparse member's stored bytes, fed in order, into pieces.
pub struct Expander<'m> {
    segs: &'m [Segment],
    real: u64,
    /// Current segment, bytes of it done, and the content offset reached.
    i: usize,
    done: u64,
    pos: u64,
}

impl<'m> Expander<'m> {
    /// An expander for `segs` of a member whose real size is `real`.
    pub fn new(segs: &'m [Segment], real: u64) -> Expander<'m> {
        Expander {
            segs,
            real,
            i: 0,
            done: 0,
            pos: 0,
        }
    }

    /// Feeds the next stored bytes.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        sink: &mut dyn FnMut(Piece<'_>) -> Result<()>,
    ) -> Result<()> {
        while !chunk.is_empty() {
            while self.i < self.segs.len() && self.segs[self.i].len == self.done {
                self.i += 1;
                self.done = 0;
            }
            let Some(s) = self.segs.get(self.i) else {
                // The walk checked that the segments add up to the stored
                // bytes: more means the file changed under us.
                return Err(Error::tar(0, "sparse data longer than its map"));
            };
            if self.done == 0 && self.pos < s.offset {
                sink(Piece::Hole(s.offset - self.pos))?;
                self.pos = s.offset;
            }
            let take = (s.len - self.done).min(chunk.len() as u64) as usize;
            sink(Piece::Data(&chunk[..take]))?;
            self.done += take as u64;
            self.pos += take as u64;
            chunk = &chunk[take..];
        }
        Ok(())
    }

    /// Ends the content: the hole up to the real size.
    pub fn finish(self, sink: &mut dyn FnMut(Piece<'_>) -> Result<()>) -> Result<()> {
        if self.pos < self.real {
            sink(Piece::Hole(self.real - self.pos))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(offset: u64, len: u64) -> Segment {
        Segment { offset, len }
    }

    fn expand(segs: &[Segment], real: u64, stored: &[u8], chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut x = Expander::new(segs, real);
        let mut sink = |p: Piece<'_>| {
            match p {
                Piece::Data(d) => out.extend_from_slice(d),
                Piece::Hole(n) => out.resize(out.len() + n as usize, 0),
            }
            Ok(())
        };
        for c in stored.chunks(chunk.max(1)) {
            x.feed(c, &mut sink).unwrap();
        }
        x.finish(&mut sink).unwrap();
        out
    }

    #[test]
    fn expansion_puts_segments_at_their_offsets_whatever_the_chunking() {
        let segs = [seg(2, 3), seg(5, 0), seg(8, 2), seg(12, 0)];
        for chunk in 1..6 {
            assert_eq!(expand(&segs, 12, b"abcde", chunk), b"\0\0abc\0\0\0de\0\0");
        }
        let stored = [7u8; 515];
        let got = expand(&[seg(1, 512), seg(600, 3)], 700, &stored, 100);
        assert_eq!(got.len(), 700);
        assert_eq!(&got[598..604], [0, 0, 7, 7, 7, 0]);
        assert_eq!(expand(&[seg(4, 0)], 4, b"", 1), [0u8; 4]);
        assert!(check(&[seg(4, 0)], 4, 0, &Limits::default())
            .unwrap_err()
            .contains("all hole"));
        assert!(check(&[seg(0, 0)], 0, 0, &Limits::default()).is_ok());
    }

    #[test]
    fn maps_that_overlap_run_back_or_past_the_size_or_miss_data_are_refused() {
        let l = Limits::default();
        assert!(check(&[seg(0, 512), seg(2, 1)], 999, 513, &l)
            .unwrap_err()
            .contains("overlaps"));
        assert!(check(&[seg(5, 512), seg(1, 1)], 999, 513, &l)
            .unwrap_err()
            .contains("backwards"));
        assert!(check(&[seg(8, 4)], 9, 4, &l)
            .unwrap_err()
            .contains("past its real size"));
        assert!(check(&[seg(0, 4), seg(9, 0)], 9, 3, &l)
            .unwrap_err()
            .contains("needs 4"));
        assert!(check(&[seg(0, 4), seg(9, 0)], 9, 4, &l).is_ok());
        assert!(check(&[seg(0, 4)], 9, 4, &l)
            .unwrap_err()
            .contains("before its real size"));
        assert!(check(&[seg(0, 4), seg(5, 4)], 9, 8, &l)
            .unwrap_err()
            .contains("block"));
        assert!(check(&[seg(0, 512), seg(600, 1), seg(700, 0)], 700, 513, &l).is_ok());
        let small = Limits {
            max_sparse_size: 8,
            ..l
        };
        assert!(check(&[seg(0, 4), seg(9, 0)], 9, 4, &small)
            .unwrap_err()
            .contains("cap"));
    }

    #[test]
    fn a_pax_1_0_map_is_read_from_lines_and_padded_to_a_block() {
        let InData::Done(segs, used) = in_data(b"2\n0\n3\n10\n1\nxyz", false, 10).unwrap() else {
            panic!("map not read");
        };
        assert_eq!(segs, [seg(0, 3), seg(10, 1)]);
        assert_eq!(used, 512);
        assert!(matches!(
            in_data(b"2\n0\n3\n1", false, 10),
            Ok(InData::More)
        ));
        assert!(in_data(b"2\n0\n3\n1", true, 10).is_err());
        assert!(in_data(b"2\n0\nx\n", false, 10).is_err());
        assert!(in_data(b"11\n", false, 10).unwrap_err().contains("cap"));
    }

    #[test]
    fn pax_records_name_their_encoding() {
        let mut r: Records<()> = Records::default();
        r.record(b"GNU.sparse.size", b"10", ()).unwrap();
        r.record(b"GNU.sparse.offset", b"2", ()).unwrap();
        r.record(b"GNU.sparse.numbytes", b"3", ()).unwrap();
        assert!(r
            .encoding()
            .unwrap_err()
            .contains("before a GNU.sparse.numblocks"));
        let mut r: Records<()> = Records::default();
        r.record(b"GNU.sparse.size", b"10", ()).unwrap();
        r.record(b"GNU.sparse.numblocks", b"1", ()).unwrap();
        r.record(b"GNU.sparse.offset", b"2", ()).unwrap();
        assert!(r.record(b"GNU.sparse.offset", b"2", ()).is_err());
        r.record(b"GNU.sparse.numbytes", b"3", ()).unwrap();
        assert_eq!(r.encoding().unwrap(), Pax::InRecords(vec![seg(2, 3)], 10));
        r.record(b"GNU.sparse.map", b"1,2", ()).unwrap();
        assert!(r.encoding().is_err());
        let mut r: Records<()> = Records::default();
        r.record(b"GNU.sparse.major", b"2", ()).unwrap();
        r.record(b"GNU.sparse.minor", b"0", ()).unwrap();
        r.record(b"GNU.sparse.realsize", b"7", ()).unwrap();
        assert!(r.encoding().unwrap_err().contains("version 2.0"));
    }
}
