//! The one-shot path: a gzip payload inflated whole into one buffer
//! ([`inflate`], [`inflate_within`]), on one core by libdeflate or split
//! across cores ([`crate::parallel`]), and the choice between it and the
//! bounded stream ([`Whole::Stream`]).
//!
//! A single-member payload is inflated once, with libdeflate, into one
//! anonymous mapping sized from the gzip trailer (`ISIZE`) and advised for
//! transparent huge pages: libdeflate is the fastest one-core inflater,
//! and huge pages cut the page faults of a fresh output buffer 512-fold.
//! The member header is parsed strictly ([`crate::gzip`]: RFC 1952's
//! reserved flag bits refused), libdeflate inflates the DEFLATE data and
//! checks the 8 bytes right after it against the output's CRC-32 and
//! `ISIZE`, and those 8 bytes must be the payload's last: nothing between
//! the data and its trailer, nothing after it (a second member, padding or
//! stray bytes send the payload to the strict stream, which reads what
//! gzip and libarchive read or refuses what they refuse).
//!
//! A payload over the caller's budget, with more than one member, padded,
//! or whose trailer is not its real size is left to the stream
//! ([`Whole::Stream`]), so that memory follows a window, never the payload.
//! ([`inflate`] itself, for callers who want every byte, takes such
//! payloads member by member into address space reserved for the largest
//! output the input could produce, deflate expanding at most 1032:1.)
//! Either way the output is capped: a bomb is refused, not obeyed.

use std::ops::Deref;

use libdeflater::Decompressor;

use crate::buf::HugeBuf;
use crate::error::{Error, Result};
use crate::gzip::{
    self, ends_at_its_trailer, may_end_with_trailer, raw_deflate, trailer_matches, Trailer,
};
use crate::hooks::Threads;
use crate::{parallel, stream};

/// Deflate's worst-case expansion: 258 bytes from a 2-bit code, ≈ 1032:1.
const MAX_RATIO: u64 = 1032;
/// Above this inflated:compressed ratio a trailer's size is not committed
/// up front (zoo NEFFs inflate 2–10:1; a claim of 1000:1 is either zeros,
/// which fault in cheaply as they are written, or a lie).
const CREDIBLE_RATIO: u64 = 64;

/// Where inflated bytes live: a fresh anonymous mapping, or a caller's
/// vector reused across files (a scan inflates thousands of small payloads,
/// and a warm vector costs no page faults).
#[derive(Debug)]
enum Buf {
    Map(HugeBuf),
    Vec(Vec<u8>),
}

impl Buf {
    fn bytes(&self) -> &[u8] {
        match self {
            Buf::Map(m) => m,
            Buf::Vec(v) => v,
        }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Buf::Map(m) => m,
            Buf::Vec(v) => v,
        }
    }
}

/// An inflated tar archive.
#[derive(Debug)]
pub struct Inflated {
    buf: Buf,
    len: usize,
}

impl Deref for Inflated {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf.bytes()[..self.len]
    }
}

impl Inflated {
    /// Gives back the caller's vector (see [`inflate_within`]'s `reuse`),
    /// if the bytes live in one.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        match self.buf {
            Buf::Vec(v) => Some(v),
            Buf::Map(_) => None,
        }
    }
}

/// Inflates a whole gzip payload (one or more members, optionally followed
/// by zero padding) into one buffer of at most `cap` bytes, on up to
/// `threads()` threads.
///
/// ```
/// # fn main() -> neff_inflate::Result<()> {
/// # use std::io::Write;
/// # let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
/// # gz.write_all(&b"hello, hello, hello".repeat(100))?;
/// # let gz = gz.finish()?;
/// let out = neff_inflate::inflate(&gz, 1 << 30, neff_inflate::pool_threads)?;
/// assert_eq!(&out[..19], b"hello, hello, hello");
/// // Over the cap: refused, not obeyed.
/// assert!(neff_inflate::inflate(&gz, 100, neff_inflate::one_thread).is_err());
/// # Ok(()) }
/// ```
pub fn inflate(gz: &[u8], cap: u64, threads: Threads) -> Result<Inflated> {
    match inflate_within(gz, cap, u64::MAX, None, threads)? {
        Whole::Done(done) => Ok(done),
        Whole::Stream(_) => inflate_members(gz, bound(gz.len(), cap), cap),
    }
}

/// What [`inflate_within`] did.
#[derive(Debug)]
pub enum Whole {
    /// The payload, inflated whole.
    Done(Inflated),
    /// Not inflated: over the budget, more than one member, padded, or a
    /// trailer that is not the real size. Stream it
    /// ([`stream::GzStream`]); the reused vector, if one was given, is
    /// handed back.
    Stream(Option<Vec<u8>>),
}

/// Inflates a single-member payload whole when its trailer says it fits
/// in `budget` bytes (and the input makes that size credible), checking
/// the output against the trailer; anything else is left to the stream.
/// A trailer that claims more than `cap` is refused, as [`inflate`] does.
///
/// `reuse` is a vector to write into (a scan inflates thousands of small
/// payloads, and a warm vector costs no page faults); it comes back in
/// [`Whole::Stream`], or through [`Inflated::into_vec`]. A payload of at
/// least [`PARALLEL_FROM`](crate::PARALLEL_FROM) compressed bytes given
/// no vector is split across `threads()` threads when that is 2 or more.
pub fn inflate_within(
    gz: &[u8],
    cap: u64,
    budget: u64,
    reuse: Option<Vec<u8>>,
    threads: Threads,
) -> Result<Whole> {
    gzip::check_len(gz)?;
    let isize = u64::from(Trailer::last(gz).isize);
    let bound = bound(gz.len(), cap);
    // The trailer is the file's word, not a fact: memory is committed up
    // front only for a size the input makes likely. Past that, the buffer is
    // address space that fills as bytes are produced, so a trailer that
    // lies costs what the data really inflates to.
    let credible = isize <= (gz.len() as u64).saturating_mul(CREDIBLE_RATIO);
    if isize > cap && may_end_with_trailer(gz) {
        return Err(Error::Limit {
            what: "inflated payload size (from the gzip trailer)",
            found: isize,
            cap,
        });
    }
    // A caller whose budget covers anything the input could produce wants
    // it whole whatever its framing (padding, several members).
    let whole_anyway = budget >= bound;
    // An encoder that falls back to stored blocks (zlib, libdeflate, pigz)
    // adds at most 5 bytes per 65,535: DEFLATE data larger than that allows
    // is most likely not one member of `isize` bytes (several members,
    // whose last trailer this is, or a trailer that is not the size), which
    // neither the split nor libdeflate reads whole, and the split would
    // first copy half the input to find that out. A member that is one
    // after all (fixed Huffman codes spend 9 bits on half the byte values)
    // is read by the stream instead: a slower path, never another answer.
    let one_member = raw_deflate(gz).is_none_or(|d| d.len() as u64 <= isize + isize / 8192 + 64);
    if isize == 0 || isize > bound || isize > budget || !one_member {
        let why = if !one_member {
            "its DEFLATE data is too long for one member of that size (several members?)"
        } else if isize > budget {
            "over the inflate budget"
        } else {
            "a size the input does not make credible"
        };
        if whole_anyway {
            log::info!(
                "gzip payload of {} bytes, trailer size {isize} ({why}): inflated whole, \
                 member by member, within the budget",
                gz.len()
            );
            return inflate_members(gz, bound, cap).map(Whole::Done);
        }
        log::info!(
            "gzip payload of {} bytes, trailer size {isize} ({why}): walked as a bounded \
             stream",
            gz.len()
        );
        return Ok(Whole::Stream(reuse));
    }
    log::info!(
        "gzip payload of {} bytes inflating to {isize}: inflated whole in one pass",
        gz.len()
    );
    // Large single members: split across cores (checked by length and CRC)
    // from the one parallel threshold, when a core is free.
    if reuse.is_none() && gz.len() >= parallel::PARALLEL_FROM {
        if let Some(done) = inflate_parallel(gz, isize as usize, credible, threads())? {
            return Ok(Whole::Done(done));
        }
    }
    // Fast path: one member, no padding, ISIZE is the exact output size.
    let mut out = match reuse {
        Some(mut v) if credible || v.len() as u64 >= isize => {
            // Grow, never clear: libdeflate overwrites what it reports
            // writing, and only that prefix is ever exposed, so a warm
            // buffer is reused without zeroing it again.
            if v.len() < isize as usize {
                v.resize(isize as usize, 0);
            }
            Buf::Vec(v)
        }
        _ => Buf::Map(HugeBuf::new(isize as usize, credible)?),
    };
    // libdeflate's gzip entry point checks the 8 bytes right after the
    // DEFLATE data against the output's CRC-32 and size (as gzip and
    // libarchive do); `ends_at_its_trailer` then proves those 8 bytes are
    // the payload's last. The strict header parse (`raw_deflate`) comes
    // first: libdeflate skips what RFC 1952 says a reader must refuse.
    let mut d = Decompressor::new();
    if raw_deflate(gz).is_some() {
        if let Ok(n) = d.gzip_decompress(gz, out.bytes_mut()) {
            if n as u64 == isize && ends_at_its_trailer(gz, &out.bytes()[..n]) {
                return Ok(Whole::Done(Inflated { buf: out, len: n }));
            }
        }
    }
    if whole_anyway {
        return inflate_members(gz, bound, cap).map(Whole::Done);
    }
    Ok(Whole::Stream(match out {
        Buf::Vec(v) => Some(v),
        Buf::Map(_) => None,
    }))
}

/// The parallel path, or `None` when it does not apply or does not check out.
fn inflate_parallel(
    gz: &[u8],
    isize: usize,
    credible: bool,
    threads: usize,
) -> Result<Option<Inflated>> {
    // With one thread to spare (inside a scan whose every worker reads a
    // file) a split would only add its own cost.
    let Some(data) = raw_deflate(gz).filter(|_| threads >= 2) else {
        log::debug!(
            "gzip payload of {} bytes: no core free, inflated on one",
            gz.len()
        );
        return Ok(None);
    };
    let mut out = HugeBuf::new(isize, credible)?;
    match parallel::inflate(data, &mut out, threads) {
        Some(n) if trailer_matches(gz, &out[..n], isize as u64) => {
            log::info!(
                "gzip payload of {} bytes: inflated whole on {threads} threads, checked against \
                 its trailer",
                gz.len()
            );
            Ok(Some(Inflated {
                buf: Buf::Map(out),
                len: n,
            }))
        }
        _ => {
            log::debug!(
                "gzip payload of {} bytes: the split on {threads} threads did not check out: \
                 inflated again on one core",
                gz.len()
            );
            Ok(None)
        }
    }
}

/// Slow path (several members, padding, a trailer that is not the size):
/// the strict stream ([`stream::GzStream`], which knows where each member's
/// DEFLATE data ends) into a buffer of `bound` bytes of address space,
/// filled as bytes are produced. Its answers are the streamed walk's.
fn inflate_members(gz: &[u8], bound: u64, cap: u64) -> Result<Inflated> {
    let mut out = HugeBuf::new(bound as usize, false)?;
    let mut s = stream::GzStream::new(gz, cap)?;
    let mut len = 0usize;
    loop {
        if len == out.len() {
            // Output up to the bound: the input claims more than deflate
            // can produce from it, or the cap was reached.
            let mut probe = [0u8; 1];
            if s.fill(&mut probe)? == 0 {
                break;
            }
            return Err(Error::Limit {
                what: "inflated payload size",
                found: bound.saturating_add(1),
                cap,
            });
        }
        let n = s.fill(&mut out[len..])?;
        if n == 0 {
            break;
        }
        len += n;
    }
    Ok(Inflated {
        buf: Buf::Map(out),
        len,
    })
}

/// The largest output `compressed` bytes can inflate to, clamped to `cap`.
fn bound(compressed: usize, cap: u64) -> u64 {
    (compressed as u64)
        .saturating_mul(MAX_RATIO)
        .saturating_add(1 << 16)
        .min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::noise;

    use gzip::{compress as gz, trailer_of as trailer};

    #[test]
    fn one_member_takes_the_fast_path() {
        let data = vec![5u8; 70_000];
        let out = inflate(&gz(&data), 1 << 30, crate::hooks::pool_threads).unwrap();
        assert_eq!(&out[..], &data[..]);
    }

    #[test]
    fn concatenated_members_and_zero_padding_are_read() {
        let (a, b) = (b"first member ".repeat(500), b"second".repeat(700));
        let mut s = gz(&a);
        s.extend(vec![0u8; 17]); // padding between members (Python's gzip skips it)
        s.extend(gz(&b));
        s.extend(vec![0u8; 10240 - s.len() % 10240]); // libarchive pads to its block
        let out = inflate(&s, 1 << 30, crate::hooks::pool_threads).unwrap();
        assert_eq!(&out[..], [a, b].concat().as_slice());
    }

    #[test]
    fn garbage_after_a_member_is_refused() {
        let mut s = gz(b"payload");
        s.extend_from_slice(b"garbage!");
        let e = inflate(&s, 1 << 30, crate::hooks::pool_threads)
            .unwrap_err()
            .to_string();
        assert!(e.contains("neither a gzip member nor zero padding"), "{e}");
    }

    /// A gzip member holding `data` in one stored DEFLATE block, with
    /// `between` inserted before its trailer.
    fn stored(data: &[u8], between: &[u8]) -> Vec<u8> {
        let mut g = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 1];
        let len = data.len() as u16;
        g.extend_from_slice(&len.to_le_bytes());
        g.extend_from_slice(&(!len).to_le_bytes());
        g.extend_from_slice(data);
        g.extend_from_slice(between);
        g.extend_from_slice(&trailer(data));
        g
    }

    fn fast_path_takes(g: &[u8]) -> bool {
        // A budget that covers the output but not the input's bound: only
        // the one-member fast path may answer `Done`.
        matches!(
            inflate_within(g, 1 << 30, 4096, None, crate::hooks::pool_threads),
            Ok(Whole::Done(_))
        )
    }

    #[test]
    fn the_fast_path_takes_only_a_trailer_right_after_the_data() {
        let data = b"tar bytes, say";
        assert!(fast_path_takes(&stored(data, b"")));
        // gzip and libarchive read these 8 stray bytes as the trailer and
        // refuse; so must the fast path (the stream then refuses them too).
        assert!(!fast_path_takes(&stored(data, b"8 stray!")));
        assert!(inflate(
            &stored(data, b"8 stray!"),
            1 << 30,
            crate::hooks::pool_threads
        )
        .is_err());
        // A trailer copy first, then more bytes, then the trailer again.
        let mut copy = trailer(data).to_vec();
        copy.extend_from_slice(b"xyz");
        assert!(!fast_path_takes(&stored(data, &copy)));
    }

    #[test]
    fn an_isize_inside_the_data_falls_back_to_the_full_trailer_check() {
        // The stored data holds its own length, so the ISIZE bytes occur
        // before the trailer: the one-search proof does not apply and the
        // CRC-32 decides.
        let data = [8u8, 0, 0, 0, 1, 2, 3, 4];
        assert!(fast_path_takes(&stored(&data, b"")));
        let mut between = data[..4].to_vec();
        between.extend_from_slice(b"more");
        assert!(!fast_path_takes(&stored(&data, &between)));
    }

    #[test]
    fn truncated_and_corrupt_streams_are_refused() {
        let s = gz(&b"abcdefgh".repeat(10_000));
        assert!(inflate(&s[..s.len() / 2], 1 << 30, crate::hooks::pool_threads).is_err());
        let mut bad = s.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff; // CRC-32 of the trailer
        assert!(inflate(&bad, 1 << 30, crate::hooks::pool_threads).is_err());
        assert!(inflate(&s[..10], 1 << 30, crate::hooks::pool_threads)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }

    #[test]
    fn a_trailer_claiming_more_than_the_cap_is_refused_before_allocating() {
        let mut s = gz(b"small");
        let n = s.len();
        s[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = inflate(&s, 1 << 20, crate::hooks::pool_threads)
            .unwrap_err()
            .to_string();
        assert!(e.contains("over the cap"), "{e}");
    }

    #[test]
    fn members_whose_last_trailer_is_too_small_for_the_input_go_to_the_stream_at_once() {
        // Two members of noise: the last trailer's size cannot hold the
        // DEFLATE data after the first header, so neither the split (which
        // would copy half the input first) nor libdeflate is tried.
        let noise = noise(200_000, 3);
        let mut two = gz(&noise);
        two.extend(gz(&noise[..150_000]));
        assert!(matches!(
            inflate_within(&two, 1 << 30, 1 << 20, None, crate::hooks::pool_threads),
            Ok(Whole::Stream(None))
        ));
        // One member is still taken whole, stored blocks included.
        assert!(matches!(
            inflate_within(
                &gz(&noise),
                1 << 30,
                1 << 20,
                None,
                crate::hooks::pool_threads
            ),
            Ok(Whole::Done(_))
        ));
        let data = [noise.clone(), noise[..150_000].to_vec()].concat();
        assert!(inflate(&two, 1 << 30, crate::hooks::pool_threads).unwrap()[..] == data[..]);
    }

    #[test]
    fn an_uncapped_payload_the_one_shot_path_cannot_take_whole_still_inflates() {
        // Noise in many small stored blocks is "too long for one member":
        // it is read member by member into address space for 1032 times
        // its input (50 GiB here), reserved, not committed.
        let data = noise(48 << 20, 5);
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        std::io::Write::write_all(&mut e, &data).unwrap();
        let g = e.finish().unwrap();
        assert!(raw_deflate(&g).unwrap().len() as u64 > data.len() as u64 * 8193 / 8192);
        let out = inflate(&g, u64::MAX, crate::hooks::one_thread).unwrap();
        assert!(out[..] == data[..]);
    }

    #[test]
    fn a_split_is_tried_only_with_two_threads_or_more() {
        // Two chunks of at least 4 MiB of gzip each: noise, a little text.
        let mut data = noise(10 << 20, 7);
        data.iter_mut().step_by(8).for_each(|b| *b = b'a');
        let s = gz(&data);
        let split = |threads| {
            inflate_parallel(&s, data.len(), true, threads)
                .unwrap()
                .is_some_and(|t| t[..] == data[..])
        };
        assert!(split(2));
        assert!(!split(1), "one thread to spare: no split");
    }

    #[test]
    fn large_payloads_inflate_in_parallel_and_match() {
        // Over PARALLEL_FROM compressed: noise compresses poorly.
        let mut data = noise(parallel::PARALLEL_FROM * 3 / 2, 1);
        data.iter_mut().step_by(3).for_each(|b| *b = b'a');
        let s = gz(&data);
        assert!(s.len() >= parallel::PARALLEL_FROM);
        let start = gzip::member_header(&s).unwrap();
        let mut out = vec![0u8; data.len()];
        let n = parallel::inflate(&s[start..s.len() - 8], &mut out, 2);
        assert_eq!(n, Some(data.len()));
        assert!(out == data);
        assert!(inflate(&s, 1 << 30, crate::hooks::pool_threads).unwrap()[..] == data[..]);
    }
}
