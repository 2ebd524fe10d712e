//! A gzip payload inflated as a bounded stream: bytes come out in the
//! caller's window, so memory follows the window, never the payload.
//!
//! This is the path for payloads too large to inflate whole (over
//! [`Limits::inflate_budget`](crate::Limits::inflate_budget)) and for those
//! whose trailer cannot be trusted. The inflater is zlib-rs (through
//! flate2's raw-DEFLATE interface), which measured as fast as one-shot
//! libdeflate on `big_pkg2.neff` and 17 times faster on a payload of zeros,
//! since its output stays in cache (PERF.md §10). The gzip framing is read
//! here, strictly, member by member:
//!
//! - every member header is checked (magic, method 8, no reserved flag
//!   bits, every optional field inside the input);
//! - every member's DEFLATE stream must end (a final block), and its
//!   trailer must match the CRC-32 and length of what it produced;
//! - after a member, only another member or zero padding to the end
//!   (libarchive pads to its block size) may follow;
//! - the total output is capped by [`Limits::max_inflated`](crate::Limits::max_inflated).
//!
//! Failures carry the same texts as the one-shot path ([`super::inflate`]),
//! so that both paths give a file the same answer.

use flate2::{Decompress, FlushDecompress, Status};

use crate::error::{Error, Result};

/// Bytes of the gzip trailer (CRC-32, ISIZE).
const TRAILER: usize = 8;

/// A gzip payload being inflated, one window at a time.
pub struct GzStream<'a> {
    gz: &'a [u8],
    /// Input position: the next byte to inflate, or to read as framing.
    pos: usize,
    /// Where the member being inflated starts (for messages).
    member_at: usize,
    in_member: bool,
    inflater: Decompress,
    crc: libdeflater::Crc,
    member_out: u64,
    total_out: u64,
    cap: u64,
    done: bool,
}

impl std::fmt::Debug for GzStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzStream")
            .field("pos", &self.pos)
            .field("total_out", &self.total_out)
            .finish()
    }
}

impl<'a> GzStream<'a> {
    /// A stream over the gzip payload `gz`, producing at most `cap` bytes.
    pub fn new(gz: &'a [u8], cap: u64) -> Result<GzStream<'a>> {
        if gz.len() < 18 {
            return Err(Error::Gzip(format!(
                "truncated gzip input: {} bytes is shorter than the smallest gzip member",
                gz.len()
            )));
        }
        Ok(GzStream {
            gz,
            pos: 0,
            member_at: 0,
            in_member: false,
            inflater: Decompress::new(false),
            crc: libdeflater::Crc::new(),
            member_out: 0,
            total_out: 0,
            cap,
            done: false,
        })
    }

    /// Bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.total_out
    }

    fn corrupt(&self) -> Error {
        Error::Gzip(format!(
            "corrupt or truncated gzip member at offset {}",
            self.member_at
        ))
    }

    /// Starts the next member at `pos`, after skipping zero padding; `false`
    /// at the end of the input.
    fn start_member(&mut self) -> Result<bool> {
        if self.pos > 0 {
            match self.gz[self.pos..].iter().position(|&b| b != 0) {
                Some(skip) => self.pos += skip,
                None => {
                    self.pos = self.gz.len();
                    return Ok(false);
                }
            }
        }
        let at = self.pos;
        let rest = &self.gz[at..];
        if !rest.starts_with(&[0x1f, 0x8b]) {
            return Err(Error::Gzip(format!(
                "bytes at offset {at} are neither a gzip member nor zero padding"
            )));
        }
        self.member_at = at;
        let start = member_header(rest).ok_or_else(|| self.corrupt())?;
        self.pos = at + start;
        self.in_member = true;
        self.inflater.reset(false);
        self.crc = libdeflater::Crc::new();
        self.member_out = 0;
        Ok(true)
    }

    /// Inflates into `out`; the number of bytes written, 0 only at the end
    /// of the payload (every member's trailer checked).
    pub fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.done {
                return Ok(0);
            }
            if !self.in_member {
                if !self.start_member()? {
                    self.done = true;
                    return Ok(0);
                }
                continue;
            }
            let (in0, out0) = (self.inflater.total_in(), self.inflater.total_out());
            let status = self
                .inflater
                .decompress(&self.gz[self.pos..], out, FlushDecompress::None)
                .map_err(|_| self.corrupt())?;
            let used = (self.inflater.total_in() - in0) as usize;
            let n = (self.inflater.total_out() - out0) as usize;
            self.pos += used;
            self.crc.update(&out[..n]);
            self.member_out += n as u64;
            self.total_out += n as u64;
            if self.total_out > self.cap {
                return Err(Error::Limit {
                    what: "inflated payload size",
                    found: self.total_out,
                    cap: self.cap,
                });
            }
            if status == Status::StreamEnd {
                self.end_member()?;
            } else if n == 0 && used == 0 {
                // No progress with input left to give: the member is cut short.
                return Err(self.corrupt());
            }
            if n > 0 {
                return Ok(n);
            }
        }
    }

    /// Checks the trailer of the member whose DEFLATE stream just ended.
    fn end_member(&mut self) -> Result<()> {
        let t = self
            .gz
            .get(self.pos..self.pos + TRAILER)
            .ok_or_else(|| self.corrupt())?;
        let crc = u32::from_le_bytes(t[..4].try_into().expect("4 bytes"));
        let isize = u32::from_le_bytes(t[4..].try_into().expect("4 bytes"));
        if crc != self.crc.sum() || isize != self.member_out as u32 {
            return Err(self.corrupt());
        }
        self.pos += TRAILER;
        self.in_member = false;
        Ok(())
    }

    /// Skips `n` bytes of output using `window` as scratch; the bytes
    /// skipped (fewer than `n` only at the end of the payload).
    pub fn skip(&mut self, mut n: u64, window: &mut [u8]) -> Result<u64> {
        let mut done = 0;
        while n > 0 {
            let want = window.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            let got = self.fill(&mut window[..want])?;
            if got == 0 {
                break;
            }
            done += got as u64;
            n -= got as u64;
        }
        Ok(done)
    }

    /// Inflates the rest of the payload, discarding it, so that every
    /// trailer is checked; the total produced.
    pub fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        while self.fill(window)? > 0 {}
        Ok(self.total_out)
    }
}

/// Length of the gzip member header at the start of `gz`, checked: method
/// 8 (DEFLATE), no reserved flag bits, and every optional field (extra,
/// name, comment, header CRC) inside the input with room for a trailer.
pub fn member_header(gz: &[u8]) -> Option<usize> {
    if gz.len() < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn all(gz: &[u8], window: usize) -> Result<Vec<u8>> {
        let mut s = GzStream::new(gz, 1 << 30)?;
        let mut out = Vec::new();
        let mut w = vec![0u8; window];
        loop {
            let n = s.fill(&mut w)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&w[..n]);
        }
    }

    #[test]
    fn streams_what_the_one_shot_path_inflates_in_any_window() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut gz = crate::pack::gzip(&data);
        gz.extend(vec![0u8; 100]);
        gz.extend(crate::pack::gzip(b"second member"));
        let want = super::super::inflate(&gz, 1 << 30).unwrap();
        for w in [1, 7, 4096, 1 << 20] {
            assert!(all(&gz, w).unwrap() == want[..], "window {w}");
        }
    }

    #[test]
    fn a_bad_trailer_reserved_flag_or_truncation_is_refused() {
        let gz = crate::pack::gzip(&b"abc".repeat(1000));
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 8] ^= 1;
        assert!(all(&bad, 64).is_err(), "CRC");
        let mut bad = gz.clone();
        bad[n - 1] ^= 1;
        assert!(all(&bad, 64).is_err(), "ISIZE");
        let mut bad = gz.clone();
        bad[3] |= 0x20;
        assert!(all(&bad, 64).is_err(), "reserved flag");
        assert!(all(&gz[..n - 3], 64).is_err(), "trailer cut");
        assert!(all(&gz[..n / 2], 64).is_err(), "data cut");
        let mut junk = gz.clone();
        junk.extend_from_slice(b"junk");
        let e = all(&junk, 64).unwrap_err().to_string();
        assert!(e.contains("neither a gzip member"), "{e}");
    }

    #[test]
    fn the_cap_stops_a_bomb_as_bytes_are_produced() {
        let gz = crate::pack::gzip(&vec![0u8; 8 << 20]);
        let mut s = GzStream::new(&gz, 1 << 20).unwrap();
        let e = s.finish(&mut [0u8; 4096]).unwrap_err().to_string();
        assert!(e.contains("over the cap"), "{e}");
    }
}
