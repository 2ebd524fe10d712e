//! The gzip framing (RFC 1952) around a payload's DEFLATE data, read
//! strictly and in one place for every inflation path: the one-shot path
//! (`inflate`, libdeflate, and its split across cores) and the streamed walk
//! (`GzStream`, zlib-rs, and its parallel rounds). The parallel code
//! itself ([`crate::parallel`]) sees only the raw DEFLATE data this module
//! delimits.
//!
//! This module owns:
//!
//! - the member header ([`member_header`]): magic `1f 8b`, method 8, no
//!   reserved flag bits (RFC 1952: a reader must refuse them), and the
//!   optional fields (`FEXTRA`, `FNAME`, `FCOMMENT`, `FHCRC`) inside the
//!   input with room left for a trailer;
//! - the 8-byte trailer (`Trailer`): the CRC-32 of the member's output,
//!   then its length mod 2³² (`ISIZE`);
//! - what may follow a member (`next_member`): another member or zero
//!   padding to the end (libarchive pads to its block size), nothing else;
//! - the one-member rule of the one-shot path (`ends_at_its_trailer`,
//!   `trailer_matches`): the trailer after the DEFLATE data must be the
//!   payload's last 8 bytes;
//! - the texts of framing errors, so that every path gives a file the same
//!   answer.
//!
//! It inflates nothing.

use crate::error::{Error, Result};

/// Bytes of the gzip trailer (CRC-32, ISIZE).
pub(crate) const TRAILER: usize = 8;
/// The smallest gzip member: a 10-byte header, the shortest DEFLATE data
/// (an empty final block) and the trailer.
pub(crate) const MIN_MEMBER: usize = 18;

/// Refuses an input too short to hold even one gzip member.
pub(crate) fn check_len(gz: &[u8]) -> Result<()> {
    if gz.len() < MIN_MEMBER {
        return Err(Error::gzip(format!(
            "truncated gzip input: {} bytes is shorter than the smallest gzip member",
            gz.len()
        )));
    }
    Ok(())
}

/// The error for a member that does not read: a bad header, DEFLATE data
/// that is corrupt or cut short, or a trailer that does not match.
pub(crate) fn corrupt(member_at: usize) -> Error {
    Error::gzip(format!(
        "corrupt or truncated gzip member at offset {member_at}"
    ))
}

/// Length of the gzip member header at the start of `gz`, checked: method
/// 8 (DEFLATE), no reserved flag bits, and every optional field (extra,
/// name, comment, header CRC) inside the input with room for a trailer.
/// For a single-member payload, where its raw DEFLATE data starts.
pub fn member_header(gz: &[u8]) -> Option<usize> {
    if gz.len() < MIN_MEMBER || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 {
        return None;
    }
    let flg = gz[3];
    if flg & 0xe0 != 0 {
        return None; // reserved bits: RFC 1952 says such a member must not be read
    }
    let mut p = 10usize;
    if flg & 4 != 0 {
        let xlen = usize::from(u16::from_le_bytes([*gz.get(p)?, *gz.get(p + 1)?]));
        p += 2 + xlen;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            p += memchr::memchr(0, gz.get(p..)?)? + 1;
        }
    }
    if flg & 2 != 0 {
        p += 2;
    }
    (p + TRAILER <= gz.len()).then_some(p)
}

/// The raw DEFLATE data of a payload that starts with one gzip member
/// header: the bytes between that header and the last 8 (the trailer).
pub(crate) fn raw_deflate(gz: &[u8]) -> Option<&[u8]> {
    member_header(gz).map(|start| &gz[start..gz.len() - TRAILER])
}

/// A member's trailer as read from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// CRC-32 of the member's output.
    pub(crate) crc: u32,
    /// The member's output length mod 2³².
    pub(crate) isize: u32,
}

impl Trailer {
    /// The trailer at `pos`, if 8 bytes are there.
    pub(crate) fn at(gz: &[u8], pos: usize) -> Option<Trailer> {
        let t = gz.get(pos..pos.checked_add(TRAILER)?)?;
        Some(Trailer {
            crc: u32::from_le_bytes(t[..4].try_into().expect("4 bytes")),
            isize: u32::from_le_bytes(t[4..].try_into().expect("4 bytes")),
        })
    }

    /// The payload's last 8 bytes read as a trailer (`gz` holds at least 8:
    /// see [`check_len`]).
    pub(crate) fn last(gz: &[u8]) -> Trailer {
        Trailer::at(gz, gz.len() - TRAILER).expect("input of at least a trailer")
    }

    /// Whether this trailer describes output of CRC-32 `crc` and `len` bytes.
    pub(crate) fn describes(&self, crc: u32, len: u64) -> bool {
        self.crc == crc && self.isize == len as u32
    }
}

/// The gzip trailer that `out` would have: its CRC-32, then its length mod 2^32.
pub(crate) fn trailer_of(out: &[u8]) -> [u8; TRAILER] {
    let mut t = [0u8; TRAILER];
    t[..4].copy_from_slice(&libdeflater::crc32(out).to_le_bytes());
    t[4..].copy_from_slice(&(out.len() as u32).to_le_bytes());
    t
}

/// Whether the last 8 bytes could be a real trailer: not all zero, as they
/// are when the input is padded (and then holds more than one member's
/// framing: only the member-by-member stream reads it).
pub(crate) fn may_end_with_trailer(gz: &[u8]) -> bool {
    gz[gz.len() - TRAILER..].iter().any(|&b| b != 0)
}

/// Whether `out` is what the trailer ending `gz` describes: `isize` bytes
/// with that CRC-32, and whether that trailer is the first place its 8
/// bytes occur after the header. (Where the DEFLATE data ended is not known
/// here: data followed by a copy of its trailer and more bytes would
/// otherwise pass, where gzip and libarchive stop at the first trailer. Such
/// a payload is left to the stream, which reads it as they do.)
pub(crate) fn trailer_matches(gz: &[u8], out: &[u8], isize: u64) -> bool {
    let t = trailer_of(out);
    out.len() as u64 == isize
        && gz.ends_with(&t)
        && memchr::memmem::find(&gz[10..], &t) == Some(gz.len() - TRAILER - 10)
}

/// Whether the DEFLATE data of a one-member payload ends right before the
/// payload's last 8 bytes, given that libdeflate found `out`'s trailer
/// (CRC-32, `ISIZE`) right after that data, at some offset `e`: nothing may
/// sit between data and trailer, or after it.
///
/// If the 4 `ISIZE` bytes occur only at the very end of the payload, the
/// `ISIZE` that libdeflate read at `e + 4` is that one, so `e` is the last
/// trailer's offset: one search of the compressed bytes, no second CRC.
/// Compressed bytes look random, so another occurrence is rare (about one
/// payload in 2³² per compressed byte); then the full trailer is computed
/// and must occur first at the end ([`trailer_matches`]), which again pins
/// `e` there.
pub(crate) fn ends_at_its_trailer(gz: &[u8], out: &[u8]) -> bool {
    let size = (out.len() as u32).to_le_bytes();
    // Header (>= 10 bytes) then the CRC-32: an ISIZE starts at 14 or later.
    let from = 14;
    gz.len() >= from + 4
        && gz.ends_with(&size)
        && (memchr::memmem::find(&gz[from..], &size) == Some(gz.len() - 4 - from)
            || trailer_matches(gz, out, out.len() as u64))
}

/// A member found by [`next_member`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    /// Where its header starts.
    pub(crate) at: usize,
    /// Where its DEFLATE data starts.
    pub(crate) data: usize,
}

/// The member that starts at `pos` (the payload's start, or right after a
/// member's trailer), after skipping zero padding when `pos > 0`; `None`
/// when only padding is left. Anything else there is refused.
pub(crate) fn next_member(gz: &[u8], pos: usize) -> Result<Option<Member>> {
    let mut at = pos;
    if at > 0 {
        match gz[at..].iter().position(|&b| b != 0) {
            Some(skip) => at += skip,
            None => return Ok(None),
        }
    }
    let rest = &gz[at..];
    if !rest.starts_with(&[0x1f, 0x8b]) {
        return Err(Error::gzip(format!(
            "bytes at offset {at} are neither a gzip member nor zero padding"
        )));
    }
    let start = member_header(rest).ok_or_else(|| corrupt(at))?;
    Ok(Some(Member {
        at,
        data: at + start,
    }))
}

/// The first offset in `from..end` where a gzip member header starts and
/// reads (magic, method 8, no reserved flags, its fields inside the input,
/// which may run past `end`), and where its DEFLATE data starts: a
/// candidate for the next member's start, to be confirmed by where the
/// member before it really ends.
pub(crate) fn header_after(gz: &[u8], from: usize, end: usize) -> Option<(usize, usize)> {
    let mut at = from;
    let magic_end = end.saturating_add(2).min(gz.len());
    while at < end {
        at += memchr::memmem::find(gz.get(at..magic_end)?, &[0x1f, 0x8b, 8])?;
        if let Some(start) = member_header(&gz[at..]) {
            return Some((at, at + start));
        }
        at += 1;
    }
    None
}

/// One gzip member of `data`: libdeflate at its default level (6), with
/// a zero gzip MTIME (what the tests read).
#[cfg(test)]
pub(crate) fn compress(data: &[u8]) -> Vec<u8> {
    use libdeflater::{CompressionLvl, Compressor};
    let mut c = Compressor::new(CompressionLvl::default());
    let mut out = vec![0u8; c.gzip_compress_bound(data.len())];
    let n = c
        .gzip_compress(data, &mut out)
        .expect("the bound is always enough");
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_starting_before_the_search_end_is_found_whole() {
        // A member whose name runs past the end of the search: found (the
        // next search starts at that end, so it would be missed for good).
        let mut g = vec![0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 255];
        g.extend_from_slice(b"sg00/weights.bin\0");
        let data = g.len();
        g.extend_from_slice(&compress(b"x")[10..]);
        let mut gz = vec![7u8; 100];
        gz.extend_from_slice(&g);
        assert_eq!(header_after(&gz, 0, 105), Some((100, 100 + data)));
        assert_eq!(header_after(&gz, 0, 100), None, "starts at the end");
        assert_eq!(header_after(&gz, 101, gz.len()), None);
    }

    #[test]
    fn the_header_is_read_strictly() {
        let g = compress(b"member");
        assert_eq!(member_header(&g), Some(10));
        let mut reserved = g.clone();
        reserved[3] |= 0x20;
        assert_eq!(member_header(&reserved), None);
        let mut method = g.clone();
        method[2] = 7;
        assert_eq!(member_header(&method), None);
        // FNAME without its terminating zero inside the input.
        let mut name = g[..10].to_vec();
        name[3] |= 8;
        name.extend_from_slice(&[b'x'; 20]);
        assert_eq!(member_header(&name), None);
        // FEXTRA, FNAME, FCOMMENT and FHCRC, each skipped.
        let mut all = g[..10].to_vec();
        all[3] = 4 | 8 | 16 | 2;
        all.extend_from_slice(&[3, 0, b'a', b'b', b'c']);
        all.extend_from_slice(b"name\0comment\0");
        all.extend_from_slice(&[0xaa, 0xbb]);
        let header = all.len();
        all.extend_from_slice(&g[10..]);
        assert_eq!(member_header(&all), Some(header));
    }

    #[test]
    fn members_padding_and_junk_after_a_trailer() {
        let g = compress(b"one");
        let mut s = g.clone();
        s.extend(vec![0u8; 5]);
        s.extend_from_slice(&g);
        let end = g.len();
        let second = next_member(&s, end).unwrap().unwrap();
        assert_eq!((second.at, second.data), (end + 5, end + 15));
        assert!(next_member(&s, s.len() - 3).unwrap().is_none());
        let e = next_member(b"\0\0junk", 1).unwrap_err().to_string();
        assert!(e.contains("bytes at offset 2 are neither"), "{e}");
        let t = Trailer::last(&g);
        assert!(t.describes(libdeflater::crc32(b"one"), 3));
        assert_eq!(trailer_of(b"one")[..], g[g.len() - TRAILER..]);
    }
}
