//! Inflating one large gzip member's raw DEFLATE data on several cores,
//! and the one size from which any path does (`PARALLEL_FROM`).
//!
//! This module sees raw DEFLATE data only: its callers strip the gzip
//! framing ([`super::gzip`]) and check the output against the trailer.
//!
//! DEFLATE is sequential: each block may copy from the 32 KiB before it. To
//! split the work anyway (as pugz and rapidgzip do), the compressed stream is
//! cut, whole ([`inflate`], for the one-shot path), into as many chunks as
//! there are threads:
//!
//! 1. near each cut, the block finder (`deflate::plausible_start`)
//!    looks for the bit where a block starts;
//! 2. chunk 0 is inflated by libdeflate, given the stream up to the first
//!    block boundary with a final empty block appended;
//! 3. every other chunk is decoded by the marker decoder until its last
//!    32 KiB of output no longer depend on the unknown window, and from that
//!    block on by libdeflate, primed with those 32 KiB;
//! 4. the chunks are joined in order, each chunk's markers resolved from the
//!    bytes before it.
//!
//! The streamed walk takes the same pieces in bounded `Rounds` of N
//! segments instead, so that memory follows a round, never the payload;
//! a round that fails leaves `Rounds::resume`, where a one-core inflater
//! takes over without going back. How many threads are free is the
//! caller's to say ([`crate::Threads`]).
//!
//! Nothing here is trusted: the caller checks the joined output's length
//! and CRC-32 against the gzip trailer, and on any failure (no boundary
//! found, a window that never clears, a mismatch) inflates sequentially.

use libdeflater::Decompressor;
use rayon::prelude::*;

use crate::buf::HugeBuf;
use crate::deflate::{self, Bits, Decoder, Step, MARKER, WINDOW};
use crate::stored;
use crate::{Arriving, Passed};

/// The one threshold for "parallel or not": a gzip payload of at least
/// this many compressed bytes is inflated on more than one core, whole
/// ([`inflate`], by the one-shot path) or in bounded rounds (`Rounds`,
/// by the streamed walk); a smaller one on one core, by either path.
///
/// Going parallel costs CPU up front on both paths: a chunk or segment
/// after the first is marker-decoded (slowly, bit by bit) until its last
/// 32 KiB no longer depend on the unknown window, and its output is
/// resolved and copied into place. Below 16 MiB of gzip that cost is not
/// won back: on payloads of 9–12 MiB of gzip (text and noise mixed, 2:1 to
/// 10:1) the split took 2.1–2.3 times the CPU time of one libdeflate pass
/// and the rounds 1.8–2.3 times that of one zlib-rs pass, so two cores at
/// best break even (the split was 8 MiB, the rounds 16 MiB, until both
/// paths took this one threshold). The rounds need the room besides: two
/// first segments of 4 MiB, each cut searched up to 1 MiB further, before
/// what is left runs to the stream's end (and can overflow a segment's
/// output cap, failing the rounds and restarting the walk).
pub const PARALLEL_FROM: usize = 16 << 20;
/// Fewest compressed bytes per chunk of a whole-payload split.
const MIN_CHUNK: usize = 4 << 20;
/// How far past a cut the block finder looks, in bytes.
const SEARCH: usize = 1 << 20;
/// The most symbols a chunk may marker-decode before giving up.
const MARKER_LIMIT: usize = 4 << 20;
/// Room in front of a later segment's output for its marker-decoded
/// start: the decoder stops past [`MARKER_LIMIT`] symbols, after the block
/// it is in (a match, or a stored block of up to 64 KiB), and the last
/// 32 KiB it decodes are the window libdeflate outputs again.
const MARKS_ROOM: usize = MARKER_LIMIT + WINDOW + (128 << 10);

/// The first plausible block start at or after bit `from`.
fn find_block(data: &[u8], from: usize) -> Option<usize> {
    let end = (from / 8 + SEARCH).min(data.len().saturating_sub(16));
    for byte in from / 8..end {
        // After a stored block the next block starts exactly on a byte.
        if byte >= 5 {
            let len = u16::from_le_bytes([data[byte - 4], data[byte - 3]]);
            let nlen = u16::from_le_bytes([data[byte - 2], data[byte - 1]]);
            let after = byte + usize::from(len);
            if len == !nlen
                && after * 8 >= from
                && after + 2 < data.len()
                && deflate::plausible_start(data, after * 8, true)
            {
                return Some(after * 8);
            }
        }
        // The first 13 bits of a dynamic block's header, tested at each bit
        // of one load before the whole test.
        let w = data
            .get(byte..byte + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
        for bit in 0..8 {
            if !deflate::dynamic_header_start(w >> bit) {
                continue;
            }
            let pos = byte * 8 + bit;
            if pos >= from && deflate::plausible_start(data, pos, false) {
                return Some(pos);
            }
        }
    }
    None
}

/// Sets `n` bits of `v` at bit `at` of `buf` (which must be long enough).
fn put_bits(buf: &mut [u8], at: usize, v: u32, n: u32) {
    for i in 0..n as usize {
        let (byte, bit) = ((at + i) / 8, (at + i) % 8);
        if (v >> i) & 1 == 1 {
            buf[byte] |= 1 << bit;
        } else {
            buf[byte] &= !(1 << bit);
        }
    }
}

/// A stream libdeflate can inflate: `prefix` (ending `from % 8` bits into a
/// byte), then `src` from bit `from`, ending at bit `to` with a final empty
/// stored block, or running to the stream's own end.
fn synth(prefix: &deflate::BitWriter, src: &[u8], from: usize, to: Option<usize>) -> Vec<u8> {
    let mut out = Vec::new();
    synth_into(&mut out, prefix, src, from, to);
    out
}

/// [`synth`] into `out` (cleared first), whose capacity is reused: the
/// rounds keep one such buffer per segment, so that copying a segment's
/// input costs no fresh pages.
fn synth_into(
    out: &mut Vec<u8>,
    prefix: &deflate::BitWriter,
    src: &[u8],
    from: usize,
    to: Option<usize>,
) {
    let k = from % 8;
    out.clear();
    out.extend_from_slice(&prefix.bytes);
    let first = from / 8;
    let end = to.map_or(src.len(), |t| t.div_ceil(8).min(src.len()));
    if k > 0 {
        let last = out.pop().unwrap_or(0);
        let mask = (1u8 << k) - 1;
        out.push((last & mask) | (src[first] & !mask));
        out.extend_from_slice(&src[first + 1..end.max(first + 1)]);
    } else {
        out.extend_from_slice(&src[first..end]);
    }
    if let Some(t) = to {
        let at = prefix.bit_len() + (t - from);
        out.truncate(at.div_ceil(8));
        out.resize(at.div_ceil(8) + 6, 0);
        // BFINAL 1, BTYPE 00, pad, LEN, NLEN, then the nonce: the output
        // ends with it only if the data before the cut had no final block
        // of its own (libdeflate stops at the first final block and does not
        // say where; a stream that ended early would otherwise pass).
        put_bits(out, at, 1, 3);
        let body = (at + 3).div_ceil(8);
        out.truncate(body);
        let len = NONCE.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(&NONCE[..]);
    }
}

/// Bytes a synthetic closing block outputs: random per process, so that
/// no input can end with them by design.
static NONCE: std::sync::LazyLock<[u8; 16]> = std::sync::LazyLock::new(|| {
    let mut n = [0u8; 16];
    if getrandom::fill(&mut n).is_err() {
        // No entropy source: the time and the process id still differ from
        // run to run.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        n.copy_from_slice(&(t ^ (u128::from(std::process::id()) << 64)).to_le_bytes());
    }
    n
});

/// Room a synthetic stream's output needs beyond its real bytes.
const NONCE_ROOM: usize = 16;

/// Inflates the synthetic stream `s` (from [`synth`]) into `out`: when it
/// was cut (`cut`), its output must end with the nonce, which is dropped;
/// when it runs to the real stream's end, it is inflated by zlib-rs, which
/// says how much input it used, and it must have used all of it (nothing
/// may follow the final block but the gzip trailer).
fn inflate_synth(s: &[u8], out: &mut [u8], cut: bool) -> Option<usize> {
    if cut {
        let n = Decompressor::new().deflate_decompress(s, out).ok()?;
        let real = n.checked_sub(NONCE.len())?;
        (out[real..n] == NONCE[..]).then_some(real)
    } else {
        let mut z = flate2::Decompress::new(false);
        let done = z.decompress(s, out, flate2::FlushDecompress::Finish);
        let whole =
            matches!(done, Ok(flate2::Status::StreamEnd)) && z.total_in() as usize == s.len();
        whole.then_some(z.total_out() as usize)
    }
}

/// Output step of [`inflate_synth_crc`]: a step's bytes are still in
/// the core's cache when they are checksummed.
const CRC_STEP: usize = 512 << 10;

/// As [`inflate_synth`], by zlib-rs in steps of [`CRC_STEP`], also
/// taking the CRC-32 of the output from byte `skip` on (the window a
/// primer outputs first is not the segment's), each step while it is in
/// cache: the segments of long runs checksum their own output on their
/// own threads, where the consumer would read it all again from memory
/// between rounds. The output's real length and its CRC-32.
fn inflate_synth_crc(s: &[u8], out: &mut [u8], cut: bool, skip: usize) -> Option<(usize, u32)> {
    let mut z = flate2::Decompress::new(false);
    let mut crc = libdeflater::Crc::new();
    // A cut stream's last bytes are the nonce, not output.
    let hold = if cut { NONCE.len() } else { 0 };
    let mut summed = skip;
    loop {
        let (i, o) = (z.total_in() as usize, z.total_out() as usize);
        let end = o.saturating_add(CRC_STEP).min(out.len());
        let status = z
            .decompress(
                s.get(i..)?,
                out.get_mut(o..end)?,
                flate2::FlushDecompress::None,
            )
            .ok()?;
        let n = z.total_out() as usize;
        let upto = n.saturating_sub(hold);
        if upto > summed {
            crc.update(&out[summed..upto]);
            summed = upto;
        }
        if status == flate2::Status::StreamEnd {
            break;
        }
        if n == o && z.total_in() as usize == i {
            // No progress: the input ended early, or the output is full.
            return None;
        }
    }
    let n = z.total_out() as usize;
    let real = n.checked_sub(hold)?;
    let whole = if cut {
        out[real..n] == NONCE[..]
    } else {
        z.total_in() as usize == s.len()
    };
    (whole && real >= skip).then_some((real, crc.sum()))
}

/// Inflates `data` from bit `from`, where a block starts after `window`
/// (the 32 KiB before it), to bit `to`, where another block must start:
/// into `out`, whose range that holds the output (the window dropped) is
/// returned. `None` when `to` is not a block boundary (the synthetic final
/// block there does not end the output with the nonce), the data between
/// does not inflate, or the output does not fit.
pub(crate) fn inflate_between(
    data: &[u8],
    window: &[u8],
    from: usize,
    to: usize,
    out: &mut [u8],
) -> Option<std::ops::Range<usize>> {
    if to <= from || to.div_ceil(8) > data.len() {
        return None;
    }
    let s = synth(
        &deflate::primer(window, (from % 8) as u32),
        data,
        from,
        Some(to),
    );
    let n = inflate_synth(&s, out, true)?;
    (n >= window.len()).then_some(window.len()..n)
}

/// Room `inflate_between`'s output needs beyond the window and the bytes.
pub(crate) const BETWEEN_ROOM: usize = NONCE_ROOM;

/// One decoded chunk: marker symbols, then plain bytes (`window`, then
/// `bytes[range]`, the part libdeflate inflated after priming, in a
/// huge-page mapping so that writing it costs few page faults).
struct Chunk {
    symbols: Vec<u16>,
    window: Vec<u8>,
    bytes: Option<HugeBuf>,
    range: std::ops::Range<usize>,
}

impl Chunk {
    fn markers_only(symbols: Vec<u16>) -> Chunk {
        Chunk {
            symbols,
            window: Vec::new(),
            bytes: None,
            range: 0..0,
        }
    }
    fn tail(&self) -> &[u8] {
        self.bytes.as_ref().map_or(&[], |b| &b[self.range.clone()])
    }
    fn len(&self) -> usize {
        self.symbols.len() + self.window.len() + self.tail().len()
    }
}

/// Chunk 0: plain libdeflate up to the first boundary, into `out`.
fn first_chunk(data: &[u8], to: usize, out: &mut [u8]) -> Option<usize> {
    let s = synth(&deflate::BitWriter::default(), data, 0, Some(to));
    inflate_synth(&s, out, true)
}

/// How a later chunk's marker-decoded start ended.
enum Start {
    /// The decoder reached the chunk's end before its window cleared:
    /// the chunk is all marker symbols.
    Whole,
    /// The last 32 KiB decoded hold no marker; the next block starts at
    /// this bit, where libdeflate takes over, primed with them.
    Clean(usize),
    /// The decoder passed its limit of symbols (more than `limit -
    /// WINDOW` decoded, the true start of the chunk) and the window had
    /// not cleared: runs keep copying from before the cut.
    Open,
}

/// Marker-decodes `data` from bit `from` with `d` until its window clears,
/// the chunk ends at bit `to` (or the end of the stream), or the decoder
/// holds more than `limit` symbols. `None` when the data does not decode,
/// runs past `to`, or ends early.
fn marker_start(
    data: &[u8],
    from: usize,
    to: Option<usize>,
    d: &mut Decoder,
    limit: usize,
) -> Option<Start> {
    let mut b = Bits::new(data, from);
    loop {
        let last = match d.block(&mut b, limit)? {
            Step::Ended(last) => last,
            Step::Full => return Some(Start::Open),
        };
        match to {
            Some(t) if b.pos == t => return Some(Start::Whole),
            Some(t) if b.pos > t || last => return None,
            // The stream's final block must end in its last byte.
            None if last && b.pos.div_ceil(8) != data.len() => return None,
            None if last => return Some(Start::Whole),
            _ => {}
        }
        if d.window_is_clean() {
            return Some(Start::Clean(b.pos));
        }
    }
}

/// A later chunk of the whole-payload split, from bit `from` to bit `to`
/// (or the end of the stream); its libdeflate part goes into a fresh
/// buffer of `cap` bytes (touched only as written).
fn later_chunk(data: &[u8], from: usize, to: Option<usize>, cap: usize) -> Option<Chunk> {
    let mut d = Decoder::new();
    let clean = match marker_start(data, from, to, &mut d, WINDOW + MARKER_LIMIT)? {
        Start::Whole => return Some(Chunk::markers_only(d.produced().to_vec())),
        Start::Clean(bit) => bit,
        // The caller inflates the rest on one thread once the bytes
        // before the chunk are known.
        Start::Open => return None,
    };
    let prefix = deflate::primer(&d.window(), (clean % 8) as u32);
    let s = synth(&prefix, data, clean, to);
    let mut bytes = HugeBuf::new(cap + WINDOW + NONCE_ROOM, false).ok()?;
    let n = inflate_synth(&s, &mut bytes, to.is_some())?;
    let produced = d.produced();
    Some(Chunk {
        symbols: produced[..produced.len() - WINDOW].to_vec(),
        window: d.window(),
        bytes: Some(bytes),
        range: WINDOW.min(n)..n,
    })
}

/// A later segment of a streamed round, from bit `from` to bit `to` (or
/// the end of the stream), into `l` ([`Later`]): its start marker-decoded
/// in `l.dec`, the rest inflated by libdeflate from `l.syn` into `l.buf`
/// after room for the start's bytes, producing at most `cap` bytes past
/// its window. When the start's window has not cleared after
/// [`MARKER_LIMIT`] symbols ([`GUESS_AFTER`] when `guess`, the rounds
/// having seen long runs), the whole segment is inflated from a guessed
/// window instead ([`guessed_segment`]). `release` is told of the input
/// once it is copied (or read to its end by the marker decoder). `false`
/// when the segment does not decode or does not fit.
fn later_segment(
    data: &[u8],
    (from, to): (usize, Option<usize>),
    cap: usize,
    l: &mut Later,
    release: &Release<'_>,
    guess: bool,
) -> bool {
    l.dec.reset();
    (l.start, l.marks, l.len, l.clean, l.guessed) = (0, 0, 0, false, false);
    l.crc = None;
    (l.from, l.to) = (from, to);
    let limit = WINDOW + if guess { GUESS_AFTER } else { MARKER_LIMIT };
    match marker_start(data, from, to, &mut l.dec, limit) {
        None => false,
        Some(Start::Open) => guessed_segment(data, cap, l, release),
        Some(Start::Whole) => {
            // Read to its end by the marker decoder: done with too.
            release.copied(from, to.unwrap_or(data.len() * 8));
            let marks = l.dec.produced().len();
            (l.marks, l.len) = (marks, marks);
            marks <= l.buf.len()
        }
        Some(Start::Clean(bit)) => {
            let marks = l.dec.produced().len() - WINDOW;
            let room = cap + WINDOW + NONCE_ROOM;
            let Some(out) = l.buf.get_mut(marks..marks + room) else {
                return false;
            };
            let prefix = deflate::primer(&l.dec.window(), (bit % 8) as u32);
            synth_into(&mut l.syn, &prefix, data, bit, to);
            release.copied(from, to.unwrap_or(data.len() * 8));
            let Some(n) = inflate_synth(&l.syn, out, to.is_some()) else {
                return false;
            };
            (l.marks, l.len, l.clean) = (marks, marks + n, n >= WINDOW);
            l.clean
        }
    }
}

/// Symbols a later segment marker-decodes, once the rounds have seen long
/// runs, before it is inflated from a guessed window instead: enough for
/// the check of [`settle_guess`] (at least twice [`WINDOW`]), and for a start
/// whose window clears soon to take the exact path still.
const GUESS_AFTER: usize = 2 * WINDOW;

/// The output a round shares out when guessing windows (long runs): 24
/// MiB a segment at two, down to [`seg_out`]'s from six segments on.
/// Their compressed data is small (24:1 and more), so a segment's fixed
/// cost, the search for a block start near its cut (a test at every bit,
/// through the 17 KiB a block of zeros and noise takes), weighs as much
/// as inflating 6 MiB: fewer, larger segments (3 GiB of zeros and noise
/// at two segments: 0.85 s in 250 rounds of 6 MiB segments, 0.49 s in
/// 64 of 24 MiB).
const GUESS_ROUND: usize = 48 << 20;

/// A round's inflated:compressed ratio under which the rounds stop
/// guessing windows (they began on a long-runs member, or on a start
/// that did not clear): runs copy from before the cut no more, and a
/// guess would be wrong, the segment inflated twice.
const GUESS_BELOW: usize = 6;

/// The window a segment that copies from before its cut is inflated
/// with, before the true one is known: zeros (long runs are padding).
static GUESS: [u8; WINDOW] = [0; WINDOW];

/// A later segment whose marker-decoded start did not clear (runs keep
/// copying from before its cut: zero padding), inflated whole by
/// zlib-rs from a guessed window of zeros into `l.buf` (the window's
/// bytes first, then the segment's: `l.start` is where those begin). The
/// symbols `l.dec` decoded are the segment's true start, in markers of
/// the window: once the true window is known, [`settle_guess`] checks
/// them against the guessed output, and on a difference the segment is
/// inflated again ([`redo_guess`]). `false` when it does not decode or
/// does not fit.
fn guessed_segment(data: &[u8], cap: usize, l: &mut Later, release: &Release<'_>) -> bool {
    let prefix = deflate::primer(&GUESS, (l.from % 8) as u32);
    synth_into(&mut l.syn, &prefix, data, l.from, l.to);
    release.copied(l.from, l.to.unwrap_or(data.len() * 8));
    l.guessed = true;
    // The decoded start lies inside what was inflated.
    inflate_primed(cap, l) && l.len - l.start >= l.dec.produced().len()
}

/// Inflates a later segment's synthetic stream `l.syn` (its primer, a
/// guessed or the true window, then its input) into `l.buf`, its CRC-32
/// taken as it goes: its bytes are `l.buf[l.start..l.len]`, after the
/// window. `false` when it does not decode or does not fit.
fn inflate_primed(cap: usize, l: &mut Later) -> bool {
    let room = cap + WINDOW + NONCE_ROOM;
    let Some(out) = l.buf.get_mut(..room) else {
        return false;
    };
    let Some((n, crc)) = inflate_synth_crc(&l.syn, out, l.to.is_some(), WINDOW) else {
        return false;
    };
    (l.start, l.len, l.crc) = (WINDOW, n, Some(crc));
    true
}

/// What [`settle_guess`] made of a guessed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// The guess was right.
    Held,
    /// Its start was written again from the resolved symbols; the rest
    /// was right.
    Patched,
    /// It must be inflated again ([`redo_guess`]).
    Wrong,
}

/// Settles a segment inflated from a guessed window ([`guessed_segment`])
/// now that `window`, the true 32 KiB before it, is known.
///
/// Its first P symbols (more than 64 K: [`GUESS_AFTER`]), resolved
/// against `window`, are its true first bytes. Where the last 32 KiB of
/// them equal what was inflated, so is every byte after: each byte is a
/// literal, which no window changes, or a copy from at most 32 KiB back,
/// and from there back lies only equal bytes. The bytes before them are
/// then written from the resolved symbols, over what the guess made of
/// them (a copy of a byte of noise the guess took for zero, as a short
/// match near a cut inside noise makes), and the segment's CRC-32 is
/// mended by linearity.
fn settle_guess(l: &mut Later, window: &[u8]) -> Settled {
    let symbols = l.dec.produced();
    let out = &mut l.buf[l.start..l.len];
    let p = symbols.len();
    if p < 2 * WINDOW || p > out.len() {
        return Settled::Wrong;
    }
    let byte = |s: u16| {
        if s < MARKER {
            s as u8
        } else {
            window[usize::from(s - MARKER)]
        }
    };
    let head = p - WINDOW;
    if !symbols[head..]
        .iter()
        .zip(&out[head..p])
        .all(|(&s, &b)| byte(s) == b)
    {
        return Settled::Wrong;
    }
    let mut guessed = libdeflater::Crc::new();
    guessed.update(&out[..head]);
    for (dst, &s) in out[..head].iter_mut().zip(symbols) {
        *dst = byte(s);
    }
    let mut known = libdeflater::Crc::new();
    known.update(&out[..head]);
    if guessed.sum() == known.sum() {
        return Settled::Held;
    }
    let rest = (out.len() - head) as u64;
    let shift = |c: u32| zlib_rs::crc32::crc32_combine(c, 0, rest);
    l.crc = l.crc.map(|c| c ^ shift(guessed.sum()) ^ shift(known.sum()));
    Settled::Patched
}

/// Inflates a segment whose guessed window was wrong again, from `window`
/// (the true 32 KiB before it): on the caller's thread, in order, once
/// the segments before it are known. Its synthetic stream is kept and
/// only its primer written again (a primer's length, and its last byte
/// when it ends inside one, do not depend on the window's bytes), so that
/// the input the caller's hook was told of is not read again. `false`
/// when it does not decode.
fn redo_guess(cap: usize, l: &mut Later, window: &[u8]) -> bool {
    let k = l.from % 8;
    let prefix = deflate::primer(window, k as u32);
    let n = prefix.bytes.len() - usize::from(k > 0);
    if window.len() != WINDOW || l.syn.len() < prefix.bytes.len() {
        return false;
    }
    l.syn[..n].copy_from_slice(&prefix.bytes[..n]);
    inflate_primed(cap, l)
}

/// Tells the caller's [`Passed`] hook of a segment's input once it is
/// copied into the segment's synthetic stream: those pages of a mapped
/// file need not stay in memory while the round runs. Offsets are bits of
/// the rounds' stream, which starts `base` bytes into the hook's input;
/// only whole 4 KiB blocks of that input inside the range are named, so
/// that most of the page the next segment starts in is not. (Where the
/// input starts off a page boundary in its file, as a NEFF's payload at
/// byte 1024 does, the caller's page may still straddle two segments:
/// dropping it costs the other segment a fault from the page cache,
/// never a wrong byte.)
struct Release<'h> {
    hook: Option<&'h dyn Passed>,
    base: usize,
}

impl Release<'_> {
    fn copied(&self, from_bit: usize, to_bit: usize) {
        const PAGE: usize = 4 << 10;
        if let Some(h) = self.hook {
            let start = (self.base + from_bit.div_ceil(8)).next_multiple_of(PAGE);
            let end = (self.base + to_bit / 8) / PAGE * PAGE;
            if end > start {
                h.passed(start..end);
            }
        }
    }
}

/// Inflates the raw DEFLATE stream `data` into `out` on up to `threads`
/// threads; returns the bytes written, or `None` to fall back.
pub fn inflate(data: &[u8], out: &mut [u8], threads: usize) -> Option<usize> {
    split_inflate(data, out, threads, MIN_CHUNK)
}

/// [`inflate`] with chunks of at least `min_chunk` compressed bytes.
pub fn split_inflate(
    data: &[u8],
    out: &mut [u8],
    threads: usize,
    min_chunk: usize,
) -> Option<usize> {
    // As many chunks as threads, each of at least `min_chunk` bytes (a
    // chunk's fixed cost, its cut search and marker-decoded start, is then
    // a few percent of its work).
    let k = threads.min(data.len() / min_chunk.max(1)).min(MAX_SEGS);
    if k < 2 {
        return None;
    }
    log::debug!(
        "raw DEFLATE of {} bytes split whole: segments={k}",
        data.len()
    );
    let cuts: Vec<usize> = (1..k).map(|i| data.len() * i / k * 8).collect();
    let found: Vec<Option<usize>> = cuts.par_iter().map(|&c| find_block(data, c)).collect();
    let mut bounds = vec![0usize];
    for f in found {
        let f = f?;
        if f <= *bounds.last()? {
            return None;
        }
        bounds.push(f);
    }
    let ends: Vec<Option<usize>> = bounds[1..].iter().map(|&b| Some(b)).chain([None]).collect();
    // A chunk may produce the whole output, up to 16 chunks; past that, a
    // sixteenth of 16 times the output shared out: the chunks' memory,
    // touched only as they write, is at most 16 times the size the
    // trailer claims, however many threads (the data may lie about it).
    let cap = out.len().min(out.len().saturating_mul(16) / k);
    let (head, rest) = rayon::join(
        || first_chunk(data, bounds[1], out),
        || {
            (1..bounds.len())
                .into_par_iter()
                .map(|i| later_chunk(data, bounds[i], ends[i], cap))
                .collect::<Vec<_>>()
        },
    );
    let mut pos = head?;
    for (i, chunk) in rest.into_iter().enumerate() {
        let window_start = pos.checked_sub(WINDOW)?;
        let Some(chunk) = chunk else {
            // This chunk's window never cleared (highly repetitive data
            // keeps copying from the unknown window): now that the bytes
            // before it are known, inflate the rest on this thread,
            // primed with the real window, straight into place (the primer
            // re-emits the window bytes already there).
            let from = bounds[i + 1];
            let prefix = deflate::primer(&out[window_start..pos], (from % 8) as u32);
            let s = synth(&prefix, data, from, None);
            let n = inflate_synth(&s, &mut out[window_start..], false)?;
            return Some(window_start + n);
        };
        if pos + chunk.len() > out.len() {
            return None;
        }
        let n = chunk.symbols.len();
        let (before, after) = out.split_at_mut(pos);
        let window = &before[window_start..];
        for (dst, &s) in after[..n].iter_mut().zip(&chunk.symbols) {
            *dst = if s < MARKER {
                s as u8
            } else {
                window[usize::from(s - MARKER)]
            };
        }
        pos += n;
        for part in [&chunk.window[..], chunk.tail()] {
            // The big copy runs on every core.
            out[pos..pos + part.len()]
                .par_chunks_mut(4 << 20)
                .zip(part.par_chunks(4 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            pos += part.len();
        }
    }
    Some(pos)
}

/// Bounded parallel inflation, for the streamed walk: the raw DEFLATE
/// stream is inflated in rounds of N segments, N the threads the caller
/// says it may use ([`set_segments`](Rounds::set_segments), asked before
/// each round; at least 2). Segment A starts at a known block boundary
/// with the known 32 KiB window and is inflated by libdeflate (by zlib-rs
/// in steps, checksummed as it goes, when guessing windows); each later
/// segment, which starts at a block boundary found near its cut, is
/// marker-decoded at the same time on another thread (as the later chunks
/// of [`split_inflate`] are) and resolved once the 32 KiB before it are
/// known. Segments are sized from the ratio seen so far for each to
/// produce about [`seg_out`] bytes (the later segments' share of a round's
/// input is set from the threads' times, since their starts cost more;
/// the thread done with A first finds the next round's cuts; the stream's
/// last round splits what is left), and each may produce at most
/// `out_cap`: memory is one round's output in buffers reused from round
/// to round, never the payload. Nothing here is trusted: a round whose
/// later segment does not decode hands out the segments before it alone
/// (they end at a block boundary) and the next one fails; any failure is
/// [`RoundFailed`], after which the caller takes over on one core from
/// [`Rounds::resume`] (the end of the last good round, with its window);
/// the caller checks the CRC-32 and length of everything produced against
/// the gzip trailer and, on a mismatch, inflates again sequentially.
pub(crate) struct Rounds<'a> {
    data: &'a [u8],
    /// Bit where the next round starts; `None` once the stream is done.
    next: Option<usize>,
    window: Vec<u8>,
    /// Compressed bytes per segment, on average over a round's segments.
    seg: usize,
    out_cap: usize,
    /// Segments per round (2 or more).
    segs: usize,
    /// The segment size has been set from a round's ratio.
    learned: bool,
    a: Vec<u8>,
    a_range: std::ops::Range<usize>,
    /// The CRC-32 of A's output, when its thread took it (long runs).
    a_crc: Option<u32>,
    /// Segment A's synthetic input, rebuilt in place every round.
    syn_a: Vec<u8>,
    /// The segments after A; the first `used` hold the last round's output.
    later: Vec<Later>,
    used: usize,
    /// The last round produced hardly more than it read (stored blocks).
    incompressible: bool,
    /// The last try's segment A did not decode (over its output cap, or
    /// the member ended inside it).
    a_failed: bool,
    /// The next round's cuts, found during this round on the thread that
    /// finished segment A (which has no markers to decode, so it is free
    /// first) instead of before the next round, when every thread waits.
    ahead: Option<Ahead>,
    /// A later segment's share of a round's input against A's, in 64ths
    /// of two segments ([`EVEN_SHARE`] at first, then from the threads'
    /// times).
    share: usize,
    /// A share the rounds keep whatever the threads' times say (the tests:
    /// times move the cuts, and with them where a round ends).
    held_share: Option<usize>,
    /// The last round handed out only the segments before one that did
    /// not decode: the next one fails at once, for one core to go on from
    /// there.
    stop: bool,
    /// Rounds that decoded, the marker symbols their later segments
    /// decoded before their windows cleared, and the last round's
    /// segments, input and output (for the debug log).
    done: usize,
    markers: usize,
    last: LastRound,
    /// Later segments take the guessed window soon ([`GUESS_AFTER`]):
    /// the member is long runs ([`Rounds::guess_windows`]), or a start's
    /// window did not clear after [`MARKER_LIMIT`] symbols.
    guess: bool,
    /// Segments inflated from a guessed window, and those of them
    /// inflated again (the guess was wrong), for the debug log.
    guessed: usize,
    redone: usize,
    patched: usize,
    /// Guessing never stops ([`Rounds::always_guess`]).
    guess_always: bool,
    /// The output a segment is sized for, in place of [`seg_out`]'s (the
    /// tests' small rounds).
    fixed_target: Option<usize>,
    /// Told of each segment's input once it is copied, as offsets `base`
    /// bytes further on than the stream's ([`Rounds::release_to`]).
    hook: Option<&'a dyn Passed>,
    base: usize,
    /// What a round reads is waited for through it, when the input is
    /// still arriving.
    gate: Gate<'a>,
}

/// What the last round did, for the debug log and the speed model of
/// PERF.md: its segments, the compressed bytes it read and the bytes it
/// produced, and how long segment A and the slowest later segment took
/// (their difference is a later segment's fixed cost: its marker-decoded
/// start, and its share of the threads).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LastRound {
    pub(crate) segments: usize,
    pub(crate) read: usize,
    pub(crate) produced: usize,
    pub(crate) a_secs: f64,
    pub(crate) slowest_secs: f64,
}

/// A segment after A: its decoder (its marker-decoded start, kept from
/// round to round with its memory), its synthetic input, and its output,
/// `buf[start..len]`: the start's `marks` bytes (written by [`resolve`]
/// once the 32 KiB before the segment are known), then what libdeflate
/// produced from where the start's window cleared, beginning with that
/// window. One contiguous part, so that the start is never copied twice.
/// (A segment inflated from a guessed window, [`guessed_segment`], has no
/// marks: its output follows the window zlib-rs was primed with.)
#[derive(Default)]
struct Later {
    dec: Decoder,
    syn: Vec<u8>,
    buf: Vec<u8>,
    start: usize,
    marks: usize,
    len: usize,
    /// The start's window cleared inside the segment: its last 32 KiB are
    /// known before its start is resolved.
    clean: bool,
    /// Inflated from a guessed window: checked, once the true one is
    /// known, by [`settle_guess`].
    guessed: bool,
    /// The segment's input: from bit `from` to bit `to` (`None`: the
    /// stream's end).
    from: usize,
    to: Option<usize>,
    /// The CRC-32 of its output, when its thread took it.
    crc: Option<u32>,
}

impl Later {
    /// The segment's last 32 KiB, when known before it is resolved.
    fn clean_tail(&self) -> Option<&[u8]> {
        (self.clean && self.len >= self.marks + WINDOW)
            .then(|| &self.buf[self.len - WINDOW..self.len])
    }
}

/// Where a round's segments lie: the bit where each segment after A
/// starts (none: A takes the rest), and where the last one ends (`None`:
/// at the stream's end).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cuts {
    starts: Vec<usize>,
    end: Option<usize>,
}

/// The cuts of a round found ahead of it: valid for a round that starts at
/// bit `from` with `segs` segments of `seg` bytes.
struct Ahead {
    from: usize,
    seg: usize,
    segs: usize,
    cuts: std::result::Result<Cuts, RoundFailed>,
}

/// Compressed bytes of segment A and of each later segment, for `n`
/// segments of `seg` bytes on average of which each later one weighs
/// `share` and A `64 - share`.
fn sizes(seg: usize, share: usize, n: usize) -> (usize, usize) {
    let n = n.max(2);
    let total = seg.saturating_mul(n);
    let weight = (64 - share) + (n - 1) * share;
    let seg_b = (total / weight).saturating_mul(share).max(1 << 10);
    let seg_a = (total / weight).saturating_mul(64 - share).max(1 << 10);
    (seg_a, seg_b)
}

/// A round's cuts from bit `a`, for `n` segments of `seg` bytes on
/// average, weighted by `share` ([`sizes`]). When less than two rounds'
/// input is left, two rounds take half of it each; when less than one
/// round's is left, the round is the stream's last and takes it all,
/// split by the same weights among as many segments as get [`TAIL_MIN`]
/// each: a last round of full segments and a short one, or of one segment
/// alone, would leave threads idle while one inflates the tail.
fn cuts(
    data: &[u8],
    seg: usize,
    share: usize,
    n: usize,
    a: usize,
    gate: Gate<'_>,
) -> std::result::Result<Cuts, RoundFailed> {
    let (mut seg_a, mut seg_b) = sizes(seg, share, n);
    let mut round = seg_a + (n.max(2) - 1) * seg_b;
    let left = data.len().saturating_sub(a / 8);
    if left < 2 * round + SEARCH && left >= round + SEARCH && left >= 4 * SEARCH {
        // Less than two rounds left: two of half of it each, not a round
        // and then up to one and a half (whose output, held while it is
        // handed out, would be the stream's peak memory).
        let scale = |x: usize| (x as u64 * (left / 2) as u64 / round as u64) as usize;
        (seg_a, seg_b) = (scale(seg_a).max(1 << 10), scale(seg_b).max(1 << 10));
        round = seg_a + (n.max(2) - 1) * seg_b;
    }
    if left >= round * 3 / 2 + SEARCH {
        let mut starts = Vec::with_capacity(n - 1);
        let (mut from, mut len) = (a, seg_a);
        for _ in 1..n {
            match cut_after(data, len, seg_b, from, gate)? {
                Some(b) => starts.push(b),
                None => break,
            }
            (from, len) = (*starts.last().unwrap_or(&a), seg_b);
        }
        let end = match starts.last() {
            Some(&last) => cut_after(data, seg_b, round / 2, last, gate)?,
            None => None,
        };
        return Ok(Cuts { starts, end });
    }
    let k = n.min(left / TAIL_MIN);
    let mut starts = Vec::new();
    if k >= 2 {
        let (tail_a, tail_b) = sizes(left / k, share, k);
        let mut at = a / 8 + tail_a;
        for _ in 1..k {
            // No block start found near a cut: the segment before takes
            // the rest.
            match find_block(gate.search(data, at)?, at * 8) {
                Some(b) if b > *starts.last().unwrap_or(&a) && b / 8 < data.len() => {
                    starts.push(b);
                    at = b / 8 + tail_b;
                }
                _ => break,
            }
        }
    }
    Ok(Cuts { starts, end: None })
}

/// The least input any segment of a stream's last round gets.
const TAIL_MIN: usize = 256 << 10;
/// A later segment's weight against A's at first, in 64ths of two
/// segments (even); then set from the threads' times, since a later
/// segment also marker-decodes its start.
const EVEN_SHARE: usize = 32;
/// The range the later segments' share is kept in, in 64ths.
const SHARES: std::ops::RangeInclusive<usize> = 16..=40;

/// Output each segment of a round of `n` is sized to produce: 6 MiB at
/// two segments ([`PAIR_OUT`]), [`SEG_OUT`] from three to 16, then
/// [`ROUNDS_OUT`] shared out, down to 4 MiB (a segment's fixed cost, its
/// marker-decoded start and its cut search, is then still a few percent
/// of its work). A round's output is most of the stream's memory: 12 MiB
/// at 2 segments, 64 MiB at 8, 128 MiB from 16 to 32, then 4 MiB more per
/// segment; each segment's input is copied once besides (its synthetic
/// stream), 1/ratio of that, and a later segment's marker-decoded start
/// takes 3 bytes a symbol.
pub(crate) fn seg_out(n: usize) -> usize {
    match n {
        ..=2 => PAIR_OUT,
        _ => (ROUNDS_OUT / n).clamp(4 << 20, SEG_OUT),
    }
}

/// Output a segment is sized to produce at most, from three segments on.
/// Each segment costs a fixed part (its cut search, its marker-decoded
/// start) and each round another (the consumer's turn while the pool
/// waits): rounds of 8 MiB segments listed the 256 MiB shapes as fast as
/// rounds of 16 MiB (PERF.md §22: mixed zlib-1 343 ms against 366 ms,
/// pigz 320 against 310), in 68 MiB against 96 MiB, and at eight threads
/// on two cores spent 1.03–1.34 times one thread's CPU where 6 MiB
/// segments spent 1.09–1.45 (§23).
const SEG_OUT: usize = 8 << 20;

/// Output each of two segments is sized to produce. With two, the round's
/// output is the stream's peak memory (two threads: the small host, and
/// rapidgzip's 23 MiB the yardstick), and the segments' fixed cost is
/// paid once a round: two 6 MiB segments listed mixed zlib-1 in the time
/// two of 8 MiB did, in 38–40 MiB against 47–48 (PERF.md §23).
const PAIR_OUT: usize = 6 << 20;

/// The output a round of many segments shares out ([`seg_out`]).
const ROUNDS_OUT: usize = 128 << 20;

/// The most one segment of a round of `n` may produce before the round
/// fails (and one core goes on): the stream's cap `out_cap`, down to
/// [`ROUNDS_CAP`] shared out, but never below twice a segment's target.
/// Data that inflates far past its segment's target (a bomb, long runs)
/// so touches at most `max(1 GiB, n × 8 MiB)` in a round, not `n` times
/// the stream's cap.
fn seg_cap(out_cap: usize, n: usize) -> usize {
    out_cap.min((ROUNDS_CAP / n.max(1)).max(2 * seg_out(n)))
}

/// The output all segments of a round may produce together before it
/// fails, for rounds of many segments ([`seg_cap`]).
const ROUNDS_CAP: usize = 1 << 30;

/// A later segment's start: its marker-decoded symbols resolved against
/// `window` (the 32 KiB before it), written at the front of its buffer.
fn resolve(l: &mut Later, window: &[u8]) {
    let symbols = &l.dec.produced()[..l.marks];
    for (dst, &s) in l.buf[..l.marks].iter_mut().zip(symbols) {
        *dst = if s < MARKER {
            s as u8
        } else {
            window[usize::from(s - MARKER)]
        };
    }
}

/// Where a sequential inflater takes over from the rounds: `head`, a
/// synthetic stream that outputs the known window (`window_len` bytes,
/// to be dropped) and ends mid-byte exactly where the real data resumes,
/// then the real data from byte `from` on.
pub(crate) struct Resume {
    pub(crate) head: Vec<u8>,
    pub(crate) window_len: usize,
    pub(crate) from: usize,
}

/// How many times a cut whose search found no block start is moved
/// [`SEARCH`] bytes further on before the round gives up.
const MOVES: usize = 8;

/// The next block boundary at least `seg` bytes after bit `from`, when
/// at least `room` bytes of input are left after it. A search that finds
/// no block start (long matches can leave no plausible start in a stretch
/// of [`SEARCH`] bytes) moves the cut further on, up to [`MOVES`] times.
fn cut_after(
    data: &[u8],
    seg: usize,
    room: usize,
    from: usize,
    gate: Gate<'_>,
) -> std::result::Result<Option<usize>, RoundFailed> {
    let mut at = from / 8 + seg;
    for _ in 0..=MOVES {
        if data.len().saturating_sub(at) < room + SEARCH {
            return Ok(None);
        }
        if let Some(found) = find_block(gate.search(data, at)?, at * 8) {
            return Ok(Some(found));
        }
        at += SEARCH;
    }
    Err(RoundFailed)
}

/// What `f` returns and the seconds it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = std::time::Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// A round that did not decode: no block boundary near a cut, a segment
/// over its output cap, or corrupt data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundFailed;

/// How far past a cut search's end a candidate block start may be read
/// (`deflate::plausible_start` skims the block it starts), of input still
/// arriving: a candidate whose block runs longer is passed over there.
const SKIM_READ: usize = 4 << 20;

/// The one gate before any read of input that may still be arriving
/// ([`Arriving`]): the stream's walk (`base` 0) and the rounds (whose
/// stream starts `base` bytes into the caller's payload) wait through it.
/// In the rounds, a range that will not arrive fails the round: one core
/// goes on from the last good one, and meets the failure itself.
#[derive(Clone, Copy)]
pub(crate) struct Gate<'a> {
    input: Option<&'a dyn Arriving>,
    base: usize,
}

impl<'a> Gate<'a> {
    /// The gate of input that is whole: nothing to wait for.
    pub(crate) const WHOLE: Gate<'static> = Gate {
        input: None,
        base: 0,
    };

    /// The gate of `input` (if still arriving) for data starting `base`
    /// bytes into the caller's payload.
    pub(crate) fn new(input: Option<&'a dyn Arriving>, base: usize) -> Gate<'a> {
        Gate { input, base }
    }

    /// The same input, for data starting `base` bytes into the payload.
    pub(crate) fn at(self, base: usize) -> Gate<'a> {
        Gate { base, ..self }
    }

    /// Whether the input is whole (nothing is waited for).
    pub(crate) fn whole(&self) -> bool {
        self.input.is_none()
    }

    /// Waits for `data[from..end]` (clamped).
    pub(crate) fn wait(&self, data: &[u8], from: usize, end: usize) -> std::io::Result<()> {
        let end = end.min(data.len());
        match self.input {
            Some(a) if from < end => a.wait(self.base + from..self.base + end),
            _ => Ok(()),
        }
    }

    /// `data` up to `end` (clamped), waited for from `from` on, when the
    /// input is still arriving: for a search that must not read past what
    /// it waited for (a longer header, block or match then goes unseen:
    /// the searches' answers are guesses, checked). All of it when whole.
    pub(crate) fn upto<'d>(
        &self,
        data: &'d [u8],
        from: usize,
        end: usize,
    ) -> std::io::Result<&'d [u8]> {
        if self.whole() {
            return Ok(data);
        }
        self.wait(data, from, end)?;
        Ok(&data[..end.min(data.len())])
    }

    /// What a cut search from byte `at` ([`find_block`]) may read.
    fn search<'d>(&self, data: &'d [u8], at: usize) -> std::result::Result<&'d [u8], RoundFailed> {
        let end = at.saturating_add(SEARCH + SKIM_READ);
        Ok(self.upto(data, at.saturating_sub(8), end)?)
    }
}

impl From<std::io::Error> for RoundFailed {
    fn from(_: std::io::Error) -> RoundFailed {
        RoundFailed
    }
}

/// The smallest segment a failed round is tried again with.
const MIN_SEG: usize = 64 << 10;
/// The most segments a round is cut into, whatever the caller says.
pub(crate) const MAX_SEGS: usize = 256;

impl<'a> Rounds<'a> {
    /// Rounds of two segments over the raw DEFLATE stream `data`, starting
    /// with segments of `seg` compressed bytes.
    pub(crate) fn new(data: &'a [u8], seg: usize, out_cap: usize) -> Rounds<'a> {
        Rounds {
            data,
            next: Some(0),
            window: Vec::new(),
            seg: seg.max(1 << 10),
            out_cap,
            segs: 2,
            learned: false,
            a: Vec::new(),
            a_range: 0..0,
            a_crc: None,
            syn_a: Vec::new(),
            later: Vec::new(),
            used: 0,
            incompressible: false,
            a_failed: false,
            ahead: None,
            share: EVEN_SHARE,
            held_share: None,
            stop: false,
            done: 0,
            markers: 0,
            last: LastRound::default(),
            guess: false,
            guessed: 0,
            redone: 0,
            patched: 0,
            guess_always: false,
            fixed_target: None,
            hook: None,
            base: 0,
            gate: Gate::WHOLE,
        }
    }

    /// Tells `hook` of each segment's input once the segment has copied
    /// it (its synthetic stream), as offsets `base` bytes further on than
    /// the stream's: a mapped file's pages then leave memory while the
    /// round runs, not after it (at N segments, N segments' input).
    pub(crate) fn release_to(&mut self, hook: Option<&'a dyn Passed>, base: usize) {
        (self.hook, self.base) = (hook, base);
    }

    /// Waits for each range of input a round reads through `gate` (the
    /// stream's, at the offset where these rounds' data starts).
    pub(crate) fn arriving(&mut self, gate: Gate<'a>) {
        self.gate = gate;
    }

    /// Cuts the rounds from now on into `n` segments (2 to [`MAX_SEGS`]).
    /// Before the first round's ratio is known, the segments shrink as
    /// their output target does ([`seg_out`]), so that the first round's
    /// memory is what later ones take.
    pub(crate) fn set_segments(&mut self, n: usize) {
        let n = n.clamp(2, MAX_SEGS);
        if !self.learned && n != self.segs {
            let scaled = self.seg as u64 * self.target_for(n) as u64 / self.target() as u64;
            self.seg = usize::try_from(scaled).unwrap_or(usize::MAX).max(MIN_SEG);
        }
        self.segs = n;
    }

    /// The output each segment of a round of `n` is sized to produce:
    /// [`seg_out`], or [`GUESS_ROUND`] shared out when guessing windows.
    fn target_for(&self, n: usize) -> usize {
        if let Some(t) = self.fixed_target {
            return t;
        }
        if self.guess {
            seg_out(n).max(GUESS_ROUND / n.max(1))
        } else {
            seg_out(n)
        }
    }

    /// The output each segment of the next round is sized to produce.
    fn target(&self) -> usize {
        self.target_for(self.segs)
    }

    /// Segments per round.
    pub(crate) fn segments(&self) -> usize {
        self.segs
    }

    /// Whether the last round produced less than 2% more bytes than it read
    /// (stored blocks, incompressible data) and some of the stream is left:
    /// the rounds cost more than one sequential pass there, whose copy is
    /// all the work. (After the last round nothing is left to hand over.)
    pub(crate) fn incompressible(&self) -> bool {
        self.incompressible && self.next.is_some()
    }

    /// Where a sequential inflater can take over: at the start of the next
    /// round (the end of the last one that succeeded), with its window.
    /// After a failed round this is where that round started.
    pub(crate) fn resume(&self) -> Option<Resume> {
        let bit = self.next?;
        let k = bit % 8;
        let mut head = deflate::primer(&self.window, k as u32).bytes;
        let mut from = bit / 8;
        if k > 0 {
            let last = head.pop().unwrap_or(0);
            let mask = (1u8 << k) - 1;
            self.gate.wait(self.data, from, from + 1).ok()?;
            head.push((last & mask) | (*self.data.get(from)? & !mask));
            from += 1;
        }
        Some(Resume {
            head,
            window_len: self.window.len(),
            from,
        })
    }

    /// The bit where the next round starts, when a run of stored blocks
    /// holding at least `enough` bytes starts there. That bit is a known
    /// block boundary (the member's start, or the end of a round that
    /// checked out), so the run is the one any inflater reads.
    pub(crate) fn stored_next(&self, enough: usize) -> Option<usize> {
        let bit = self.next?;
        // Of input still arriving, what the run's first `enough` bytes
        // and its last block whole take.
        let reach = (bit / 8).saturating_add(enough + 2 * (65_535 + 5));
        let data = self.gate.upto(self.data, bit / 8, reach).ok()?;
        (stored::run_len(data, bit, enough) >= enough).then_some(bit)
    }

    /// The bit where the next round starts (`None` once the stream is done).
    pub(crate) fn next_bit(&self) -> Option<usize> {
        self.next
    }

    /// The 32 KiB before [`next_bit`](Self::next_bit) (less at the start).
    pub(crate) fn window(&self) -> &[u8] {
        &self.window
    }

    /// Goes on from byte `byte` of the stream (where a block starts) with
    /// `window`, the 32 KiB before it: after a run of stored blocks that
    /// the caller read in place up to there. `false` (and nothing changed)
    /// when that byte is not inside the stream: the caller's inflater
    /// reads what is there (the gzip trailer, taken for a block header by
    /// any inflater: a corrupt member).
    pub(crate) fn restart(&mut self, byte: usize, window: Vec<u8>) -> bool {
        if byte >= self.data.len() {
            return false;
        }
        self.next = Some(byte * 8);
        self.window = window;
        self.incompressible = false;
        self.a_failed = false;
        self.ahead = None;
        self.stop = false;
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        true
    }

    /// Ends the stream's input at byte `len` (where the caller guesses a
    /// gzip member ends), when that is not before the next round's start;
    /// cuts found ahead for the longer input are dropped.
    pub(crate) fn truncate(&mut self, len: usize) {
        if self.next.is_some_and(|bit| bit <= len * 8) && len < self.data.len() {
            self.data = &self.data[..len];
            self.ahead = None;
        }
    }

    /// Bytes of input before the next round's start (done with).
    pub(crate) fn consumed(&self) -> usize {
        self.next.map_or(self.data.len(), |bit| bit / 8)
    }

    /// Part `i` of the last round's output, in order (A, then each later
    /// segment); `None` past the last.
    pub(crate) fn part(&self, i: usize) -> Option<&[u8]> {
        if i == 0 {
            return Some(&self.a[self.a_range.clone()]);
        }
        let l = self.later[..self.used].get(i - 1)?;
        Some(&l.buf[l.start..l.len])
    }

    /// The CRC-32 of part `i`, when the thread that produced it took it
    /// (the rounds of long runs, [`Rounds::guess_windows`]).
    pub(crate) fn part_crc(&self, i: usize) -> Option<u32> {
        if i == 0 {
            return self.a_crc;
        }
        self.later[..self.used].get(i - 1)?.crc
    }

    /// The output of the last round, in order.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &[u8]> {
        (0..).map_while(|i| self.part(i))
    }

    /// The last 32 KiB produced: the window, then the last round's parts.
    fn tail_window(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(2 * WINDOW);
        for part in std::iter::once(&self.window[..]).chain(self.parts()) {
            w.extend_from_slice(&part[part.len().saturating_sub(WINDOW)..]);
            if w.len() > WINDOW {
                w.drain(..w.len() - WINDOW);
            }
        }
        w
    }

    /// Inflates the next round ([`parts`](Self::parts)): `Ok(false)` when
    /// the stream is done. A round whose segment A fails is tried again
    /// with segments a quarter the size (down to 64 KiB): a segment whose
    /// output is over the cap (long runs: zeros at 1000:1) or that runs
    /// into the member's end then has its cut moved nearer. Nothing is
    /// handed out before a round succeeds, so a retry starts from the same
    /// place.
    pub(crate) fn next_round(&mut self) -> std::result::Result<bool, RoundFailed> {
        loop {
            self.a_failed = false;
            match self.try_round() {
                // Only segment A's failure is worth a nearer cut: when A
                // decoded and a later one did not (corrupt data, a later
                // segment over its cap), the parts before it were handed
                // out and one core goes on from there.
                Err(RoundFailed) if self.a_failed && self.seg > MIN_SEG => {
                    self.seg = (self.seg / 4).max(MIN_SEG);
                }
                done => return done,
            }
        }
    }

    /// One try at [`next_round`](Self::next_round).
    fn try_round(&mut self) -> std::result::Result<bool, RoundFailed> {
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        let Some(a) = self.next else {
            return Ok(false);
        };
        if self.stop {
            return Err(RoundFailed);
        }
        let (data, seg, share, n) = (self.data, self.seg, self.share, self.segs);
        // Cuts found ahead with the share and segment size of the round
        // before are as good (any block boundary is a correct cut) when
        // that size is within a quarter of this one's: the size follows
        // each round's ratio, and a search for new cuts here runs while
        // every other thread waits (long runs: 1.3 ms a round, a fifth of
        // it, for two searches through 17 KiB blocks).
        let Cuts { starts, end } = match self.ahead.take() {
            Some(ahead)
                if ahead.from == a && ahead.seg.abs_diff(seg) <= seg / 4 && ahead.segs == n =>
            {
                ahead.cuts?
            }
            _ => cuts(data, seg, share, n, a, self.gate)?,
        };
        // Where the next round starts, should this one decode.
        let end = if starts.is_empty() { None } else { end };
        let cap = seg_cap(self.out_cap, n);
        let size = cap + WINDOW + NONCE_ROOM;
        if self.later.len() < starts.len() {
            self.later.resize_with(starts.len(), Later::default);
        }
        // Zeroed pages from the kernel, touched only as written; a later
        // segment's buffer has room in front for its marker-decoded start.
        if self.a.len() < size {
            self.a = vec![0u8; size];
        }
        for l in &mut self.later[..starts.len()] {
            if l.buf.len() < size + MARKS_ROOM {
                l.buf = vec![0u8; size + MARKS_ROOM];
            }
        }
        let first_cut = starts.first().copied();
        let ends: Vec<Option<usize>> = starts
            .iter()
            .skip(1)
            .map(|&s| Some(s))
            .chain([end])
            .collect();
        // Every segment's input, to the round's end (the stream's, for its
        // last round), is in place before any segment starts.
        let gate = self.gate;
        gate.wait(data, a / 8, end.map_or(data.len(), |e| e / 8 + 16))?;
        let window = &self.window;
        let release = Release {
            hook: self.hook,
            base: self.base,
        };
        // Each segment writes at most `cap` (its buffer may be larger,
        // from rounds of fewer segments).
        let (buf_a, syn_a) = (&mut self.a[..size], &mut self.syn_a);
        let later = &mut self.later[..starts.len()];
        let guess = self.guess;
        let (((first, ahead), time_a), rest) = rayon::join(
            || {
                timed(|| {
                    let primer = deflate::primer(window, (a % 8) as u32);
                    synth_into(syn_a, &primer, data, a, first_cut);
                    release.copied(a, first_cut.unwrap_or(data.len() * 8));
                    let (n_out, crc) = if guess {
                        match inflate_synth_crc(syn_a, buf_a, first_cut.is_some(), window.len()) {
                            Some((n, crc)) => (Some(n), Some(crc)),
                            None => (None, None),
                        }
                    } else {
                        (inflate_synth(syn_a, buf_a, first_cut.is_some()), None)
                    };
                    let first = n_out
                        .filter(|&o| o >= window.len())
                        .map(|o| window.len()..o);
                    // A decoded: the next round's cuts, while the later
                    // segments finish.
                    let ahead = match (&first, end) {
                        (Some(_), Some(from)) => Some(Ahead {
                            from,
                            seg,
                            segs: n,
                            cuts: cuts(data, seg, share, n, from, gate),
                        }),
                        _ => None,
                    };
                    (first.map(|r| (r, crc)), ahead)
                })
            },
            || {
                later
                    .par_iter_mut()
                    .zip(starts.par_iter().zip(ends.par_iter()))
                    .map(|(l, (&from, &to))| {
                        timed(|| later_segment(data, (from, to), cap, l, &release, guess))
                    })
                    .collect::<Vec<_>>()
            },
        );
        self.ahead = ahead;
        self.a_failed = first.is_none();
        (self.a_range, self.a_crc) = first.ok_or(RoundFailed)?;
        // The slowest later segment's rate (input per second), among those
        // with a cut at both ends.
        let mut rate_b = f64::INFINITY;
        let slowest = rest.iter().map(|(_, t)| *t).fold(0.0, f64::max);
        self.last.a_secs = time_a;
        self.last.slowest_secs = slowest;
        // The later segments that decoded, up to the first that did not
        // (over its output cap, or the member ends inside it). The
        // parts before end at its start, a block boundary (the nonce proved
        // it): they are handed out, and the next round fails at once, so
        // that one core goes on from there with their window (nothing is
        // inflated again).
        let good = rest.iter().take_while(|(ok, _)| *ok).count();
        let failed = (good < rest.len()).then_some(good);
        for (i, (_, time)) in rest.iter().enumerate().take(good) {
            if let Some(to) = ends[i] {
                rate_b = rate_b.min((to - starts[i]) as f64 / time.max(1e-6));
            }
        }
        // The 32 KiB before each later segment: A's tail for the first; for
        // the others, the tail of the segment before, known without
        // resolving its start when its window cleared inside it. Those are
        // resolved on every thread at once; a segment after one that ended
        // before its window cleared waits for it, in order.
        let tail_a = self.tail_window();
        if good > 0 && tail_a.len() < WINDOW {
            return Err(RoundFailed);
        }
        let tails: Vec<Option<Vec<u8>>> = self.later[..good.saturating_sub(1)]
            .iter()
            .map(|l| l.clean_tail().map(<[u8]>::to_vec))
            .collect();
        let windows: Vec<Option<&[u8]>> = std::iter::once(Some(&tail_a[..]))
            .chain(tails.iter().map(Option::as_deref))
            .collect();
        self.later[..good]
            .par_iter_mut()
            .zip(windows.par_iter())
            .for_each(|(l, w)| {
                if let Some(w) = w {
                    resolve(l, w);
                }
            });
        let waiting: Vec<bool> = windows.iter().take(good).map(Option::is_none).collect();
        let mut good = good;
        let mut failed = failed;
        let (mut guessed_now, mut redone_now) = (0, 0);
        for (i, waits) in waiting.into_iter().enumerate() {
            self.markers += self.later[i].marks;
            if waits || self.later[i].guessed {
                // Segment i - 1 is resolved now: the last 32 KiB of the
                // round's parts up to it are this one's window.
                self.used = i;
                let w = self.tail_window();
                if w.len() < WINDOW {
                    return Err(RoundFailed);
                }
                let l = &mut self.later[i];
                if !l.guessed {
                    resolve(l, &w);
                    continue;
                }
                self.guessed += 1;
                guessed_now += 1;
                match settle_guess(l, &w) {
                    Settled::Held => continue,
                    Settled::Patched => {
                        self.patched += 1;
                        continue;
                    }
                    Settled::Wrong => {}
                }
                self.redone += 1;
                redone_now += 1;
                if !redo_guess(cap, l, &w) {
                    // It does not decode from the true window either: the
                    // parts before it are handed out, as for any later
                    // segment that does not decode.
                    (good, failed) = (i, Some(i));
                    break;
                }
            }
        }
        if self.guess && 2 * redone_now > guessed_now && !self.guess_always {
            // Runs of something else than zeros: a guess costs a second
            // inflation, in order. The marker decoder's full limit again.
            log::debug!(
                "{redone_now} of {guessed_now} guessed windows were wrong: later segments no \
                 longer guess"
            );
            self.guess = false;
        } else if !self.guess && guessed_now > 0 && 2 * redone_now <= guessed_now {
            log::debug!(
                "a later segment's window did not clear after {MARKER_LIMIT} symbols (long \
                 runs): later segments take a guessed window from now on"
            );
            self.guess = true;
        }
        self.used = good;
        if let Some(i) = failed {
            self.stop = true;
            self.ahead = None; // found for a round from the last end
            return Ok(self.finish_round(a, Some(starts[i]), None));
        }
        let rates = match first_cut {
            Some(b) if rate_b.is_finite() => Some(((b - a) as f64 / time_a.max(1e-6), rate_b)),
            _ => None,
        };
        Ok(self.finish_round(a, end, rates))
    }

    /// After a round from bit `a` that decoded: the window, the next
    /// segment's size, the later segments' share (from `rates`: A's input
    /// per second and the slowest later segment's, when both were timed
    /// between cuts), and the next round's start, `end`. Always `true` (a
    /// round was produced).
    fn finish_round(&mut self, a: usize, end: Option<usize>, rates: Option<(f64, f64)>) -> bool {
        let produced: usize = self.parts().map(<[u8]>::len).sum();
        self.window = self.tail_window();
        if let Some((rate_a, rate_b)) = rates {
            // Every thread busy for as long: the share from the rates,
            // halfway towards the balance.
            let balance = 64.0 * rate_b / (rate_a + rate_b);
            let next = ((self.share as f64 + balance) / 2.0).round() as usize;
            self.share = next.clamp(*SHARES.start(), *SHARES.end());
        }
        if let Some(held) = self.held_share {
            self.share = held;
        }
        let consumed = end.unwrap_or(self.data.len() * 8).saturating_sub(a) / 8;
        if consumed > 0 && produced > 0 {
            self.incompressible = produced < consumed + consumed / 50;
            let ratio = produced.div_ceil(consumed).max(1);
            if self.guess && produced / consumed < GUESS_BELOW && !self.guess_always {
                log::debug!("rounds at {ratio}:1: later segments no longer guess their windows");
                self.guess = false;
            }
            self.seg = (self.target() / ratio).clamp(16 << 10, 16 << 20);
            self.learned = true;
        }
        (self.last.segments, self.last.read, self.last.produced) =
            (1 + self.used, consumed, produced);
        self.next = end;
        self.done += 1;
        true
    }

    /// Rounds over another raw DEFLATE stream `data` (the next gzip member
    /// of the same payload), in these rounds' buffers: a member's rounds
    /// write into pages already faulted in, not fresh ones (32 members of
    /// 100 MiB each faulted 1.2 GiB of pages in). The segment size, count
    /// and share are kept: the next member is likely of the same kind of
    /// data.
    pub(crate) fn renew(&mut self, data: &'a [u8]) {
        self.data = data;
        self.next = Some(0);
        self.window.clear();
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        self.incompressible = false;
        self.a_failed = false;
        self.ahead = None;
        self.stop = false;
        self.done = 0;
        self.markers = 0;
        self.guess = self.guess_always;
        self.guessed = 0;
        self.redone = 0;
        self.patched = 0;
    }

    /// What the rounds did, for the debug log: rounds decoded, the marker
    /// symbols decoded in all (the later segments' starts), and their last
    /// share in 64ths.
    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        (self.done, self.markers, self.share)
    }

    /// Later segments inflated from a guessed window, how many of them
    /// had their start written again from its resolved symbols, and how
    /// many were inflated again, for the debug log.
    pub(crate) fn guesses(&self) -> (usize, usize, usize) {
        (self.guessed, self.patched, self.redone)
    }

    /// Whether the next round's later segments guess their windows soon.
    #[cfg(test)]
    pub(crate) fn guessing(&self) -> bool {
        self.guess
    }

    /// Later segments guess their windows in every round, whatever the
    /// data and its ratio, and each segment is sized to produce `target`
    /// bytes (the tests and fuzz targets: every guess on data that is not
    /// long runs is wrong, and must be caught).
    pub(crate) fn always_guess(&mut self, target: usize) {
        (self.guess, self.guess_always) = (true, true);
        self.fixed_target = Some(target);
    }

    /// Later segments take `share` 64ths of a round from now on, whatever
    /// the threads' times say (the tests: where a round ends then follows
    /// from the data alone).
    #[cfg(test)]
    pub(crate) fn hold_share(&mut self, share: usize) {
        self.share = share.clamp(*SHARES.start(), *SHARES.end());
        self.held_share = Some(self.share);
    }

    /// The range of shares the threads' times can give (the tests).
    #[cfg(test)]
    pub(crate) fn shares() -> std::ops::RangeInclusive<usize> {
        SHARES
    }

    /// The member is long runs (zero padding between short stretches,
    /// which the trailer says inflates `ratio`:1): a later segment's
    /// window will not clear, since its runs copy from before its cut, so
    /// from now on each is inflated from a guessed window of zeros after
    /// a short marker-decoded start ([`GUESS_AFTER`]) and checked once the
    /// true window is known; and segments are sized for that ratio from
    /// the first round (a first round's default input would otherwise
    /// inflate to 25 times its target).
    pub(crate) fn guess_windows(&mut self, ratio: usize) {
        self.guess = true;
        // Sized for the ratio now, whatever the member before was (and
        // rescaled as any first segment by `set_segments`).
        self.seg = (self.target() / ratio.max(1)).clamp(MIN_SEG, 16 << 20);
    }

    /// What the last round did.
    pub(crate) fn last_round(&self) -> LastRound {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libdeflater::{CompressionLvl, Compressor};

    /// Text-like runs, repeats far apart, and incompressible stretches.
    fn corpus(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let words: Vec<&[u8]> = vec![
            b"replica_groups",
            b"tensor_map",
            b"\"var\": {",
            b"0123456789",
            b"sg00/def.json ",
        ];
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            match rnd() % 4 {
                0 => (0..(rnd() % 3000)).for_each(|_| v.push(rnd() as u8)),
                1 if v.len() > 40000 => {
                    let from = v.len() - 1 - (rnd() as usize % 32000);
                    for i in 0..(rnd() % 200) as usize {
                        v.push(v[from + i % (v.len() - from)]);
                    }
                }
                _ => (0..(rnd() % 50))
                    .for_each(|_| v.extend_from_slice(words[rnd() as usize % words.len()])),
            }
        }
        v.truncate(n);
        v
    }

    /// Raw DEFLATE of `corpus(n, seed)` at libdeflate's level 6.
    fn deflated(n: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
        let data = corpus(n, seed);
        let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
        let len = c.deflate_compress(&data, &mut z).unwrap();
        z.truncate(len);
        (data, z)
    }

    #[test]
    fn the_last_round_splits_what_is_left_between_the_segments() {
        let (_, z) = deflated(12 << 20, 5);
        let left = z.len();
        assert!(left > 2 * TAIL_MIN + SEARCH, "{left}");
        // Segments of an eighth of the stream, two a round: room for a
        // round and a half.
        let c = cuts(&z, left / 8, EVEN_SHARE, 2, 0, Gate::WHOLE).unwrap();
        let (b, end) = (c.starts[0], c.end.unwrap());
        assert_eq!(c.starts.len(), 1);
        assert!(
            b / 8 >= left / 8 && end / 8 >= b / 8 + left / 8,
            "{b} {end}"
        );
        // Three segments of a sixteenth: each cut past the one before.
        let c = cuts(&z, left / 16, EVEN_SHARE, 3, 0, Gate::WHOLE).unwrap();
        assert_eq!(c.starts.len(), 2);
        assert!(c.starts[1] / 8 >= c.starts[0] / 8 + left / 16);
        assert!(c.end.unwrap() > c.starts[1]);
        // Segments as big as the stream: one last round, cut by the share
        // (the later segment's), which runs to the end.
        for share in [EVEN_SHARE, *SHARES.start(), *SHARES.end()] {
            let c = cuts(&z, left, share, 2, 0, Gate::WHOLE).unwrap();
            let at = sizes(left / 2, share, 2).0;
            let b = c.starts[0];
            assert!(
                b / 8 >= at && b / 8 < at + SEARCH,
                "share {share}: {b} for {at}"
            );
            assert_eq!(c.end, None);
        }
        // Between one and two rounds left: the round takes half of it.
        let c = cuts(&z, left * 11 / 40, EVEN_SHARE, 2, 0, Gate::WHOLE).unwrap();
        let end = c.end.unwrap() / 8;
        assert!(
            end >= left / 2 && end < left / 2 + 2 * SEARCH,
            "{end} of {left}"
        );
        // The last round of eight: eight segments, in order, to the end.
        let c = cuts(&z, left, EVEN_SHARE, 8, 0, Gate::WHOLE).unwrap();
        assert_eq!(c.starts.len(), 7, "{c:?}");
        assert!(c.starts.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(c.end, None);
        // Too little for two segments of the least size: one takes it all.
        for n in [2, 8] {
            let c = cuts(&z[..2 * TAIL_MIN - 1], left, EVEN_SHARE, n, 0, Gate::WHOLE).unwrap();
            assert_eq!(
                c,
                Cuts {
                    starts: vec![],
                    end: None
                }
            );
        }
    }

    #[test]
    fn a_round_whose_later_segment_fails_hands_out_those_before_and_stops_there() {
        // A stream followed by another: the last round's later segment
        // runs into the first stream's final block, which ends before the
        // data does.
        let (data, mut z) = deflated(4 << 20, 3);
        let first_len = z.len();
        z.extend_from_slice(&deflated(64 << 10, 4).1);
        for n in [2, 3] {
            let mut r = Rounds::new(&z, z.len(), 64 << 20);
            r.set_segments(n);
            assert_eq!(r.next_round(), Ok(true));
            let out: Vec<u8> = r.parts().collect::<Vec<_>>().concat();
            assert!(!out.is_empty() && out.len() < data.len(), "{}", out.len());
            assert!(out[..] == data[..out.len()]);
            // The next round fails at once; one core goes on from the
            // failed segment's start.
            let from = r.consumed();
            assert!(from > 0 && from < first_len, "{from} of {first_len}");
            assert_eq!(r.next_round(), Err(RoundFailed));
            assert_eq!(r.consumed(), from);
            assert_eq!(r.window(), &out[out.len() - WINDOW..]);
        }
    }

    #[test]
    fn rounds_give_the_sequential_bytes_whatever_share_and_segment_count() {
        let (data, z) = deflated(6 << 20, 9);
        for (share, n) in [
            (*SHARES.start(), 2),
            (EVEN_SHARE, 2),
            (*SHARES.end(), 2),
            (EVEN_SHARE, 3),
            (*SHARES.start(), 8),
            (EVEN_SHARE, 17),
        ] {
            // Small first segments: the first round is a whole one, not
            // the stream's last.
            let mut r = Rounds::new(&z, 32 << 10, 64 << 20);
            r.share = share;
            r.set_segments(n);
            let (mut out, mut most) = (Vec::new(), 0);
            while r.next_round().unwrap() {
                for p in r.parts() {
                    out.extend_from_slice(p);
                }
                most = most.max(r.last_round().segments);
                assert!(SHARES.contains(&r.share), "{}", r.share);
            }
            assert!(
                out == data,
                "share {share}, {n} segments: {} of {} bytes",
                out.len(),
                data.len()
            );
            assert_eq!(most, n, "rounds of {n} segments");
        }
    }

    #[test]
    fn each_segment_releases_its_input_once_copied_in_whole_pages() {
        let (data, z) = deflated(6 << 20, 9);
        for n in [2, 3, 8] {
            let told = std::sync::Mutex::new(Vec::new());
            let hook = |r: std::ops::Range<usize>| told.lock().expect("not poisoned").push(r);
            // The stream starts 1000 bytes into the hook's input (after
            // a gzip header, say).
            let base = 1000;
            let mut r = Rounds::new(&z, 32 << 10, 64 << 20);
            r.release_to(Some(&hook), base);
            r.set_segments(n);
            let mut out: Vec<u8> = Vec::new();
            while r.next_round().unwrap() {
                out.extend(r.parts().flatten().copied());
            }
            assert!(out == data);
            let mut told = told.into_inner().expect("not poisoned");
            told.sort_by_key(|r| r.start);
            let mut covered = 0;
            for (i, r) in told.iter().enumerate() {
                assert!(r.start % 4096 == 0 && r.end % 4096 == 0, "{r:?}");
                assert!(
                    r.start >= base && r.start < r.end && r.end <= base + z.len(),
                    "{r:?}"
                );
                // Each segment names only its own input: no page twice.
                assert!(
                    i == 0 || told[i - 1].end <= r.start,
                    "{:?} {r:?}",
                    told[i - 1]
                );
                covered += r.len();
            }
            assert!(told.len() >= n, "{n} segments: {told:?}");
            // Whole pages inside each segment's input: most of the stream.
            assert!(
                covered > z.len() * 3 / 4,
                "{n}: {covered} of {}: {told:?}",
                z.len()
            );
        }
    }

    #[test]
    fn each_segment_of_a_round_is_sized_for_its_output_target() {
        assert_eq!(seg_out(2), 6 << 20);
        assert_eq!(seg_out(3), 8 << 20);
        assert_eq!(seg_out(8), 8 << 20);
        assert_eq!(seg_out(16), 8 << 20);
        assert_eq!(seg_out(22), (128 << 20) / 22);
        assert_eq!(seg_out(32), 4 << 20);
        assert_eq!(seg_out(192), 4 << 20);
        // Before a ratio is known, more segments start smaller.
        let z = [0u8; 16];
        let mut r = Rounds::new(&z, 4 << 20, 64 << 20);
        r.set_segments(32);
        assert_eq!(r.seg, (4 << 20) * 4 / 6);
        r.set_segments(8);
        assert_eq!(r.seg, (4 << 20) * 4 / 6 * 8 / 4);
        r.set_segments(1000);
        assert_eq!(r.segments(), MAX_SEGS);
        // What one segment may produce: the stream's cap up to 16
        // segments, then 1 GiB shared out, never below twice the target.
        assert_eq!(seg_cap(64 << 20, 2), 64 << 20);
        assert_eq!(seg_cap(64 << 20, 16), 64 << 20);
        assert_eq!(seg_cap(64 << 20, 32), 32 << 20);
        assert_eq!(seg_cap(64 << 20, 192), 8 << 20);
        assert_eq!(seg_cap(1 << 20, 192), 1 << 20);
        // The weights: a later segment's share against A's.
        let (a, b) = sizes(1 << 20, EVEN_SHARE, 8);
        assert_eq!(a, b);
        let (a, b) = sizes(1 << 20, 16, 4);
        assert!(a == 3 * b && a + 3 * b <= 4 << 20, "{a} {b}");
    }

    #[test]
    fn split_inflate_equals_sequential_for_every_chunk_count_and_level() {
        for (lvl, seed) in [(0, 1), (1, 2), (6, 3), (12, 4)] {
            let data = corpus(1 << 20, seed);
            let mut c = Compressor::new(CompressionLvl::new(lvl).unwrap());
            let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
            let n = c.deflate_compress(&data, &mut z).unwrap();
            z.truncate(n);
            let mut split = 0;
            for threads in [2, 3, 5, 32] {
                let mut out = vec![0u8; data.len()];
                let got = split_inflate(&z, &mut out, threads, 8 << 10);
                // None (no boundary near a cut) is allowed; a wrong answer is not.
                if let Some(len) = got {
                    assert_eq!(len, data.len(), "level {lvl}, {threads} threads");
                    assert!(out == data, "level {lvl}, {threads} threads: bytes differ");
                    split += 1;
                }
            }
            assert!(split > 0, "level {lvl}: never split");
        }
    }

    #[test]
    fn a_window_that_never_clears_falls_back_to_the_known_bytes() {
        // One phrase repeated with noise between: every later copy of the
        // phrase chains back into the unknown window, so markers never die.
        let mut data = Vec::new();
        let mut x = 5u64;
        while data.len() < 3 << 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 2 == 0 {
                data.extend_from_slice(b"model.layers.17.self_attn.q_proj.weight ");
            } else {
                data.extend_from_slice(&x.to_le_bytes());
            }
        }
        let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
        let n = c.deflate_compress(&data, &mut z).unwrap();
        z.truncate(n);
        let mut out = vec![0u8; data.len()];
        assert_eq!(split_inflate(&z, &mut out, 2, 64 << 10), Some(data.len()));
        assert!(out == data);
    }

    /// [`crate::long_runs`], and it deflated at level 1.
    fn long_runs(n: usize, fill: u8, seed: u64) -> (Vec<u8>, Vec<u8>) {
        let data = crate::long_runs(n, fill, seed);
        let mut c = Compressor::new(CompressionLvl::new(1).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
        let len = c.deflate_compress(&data, &mut z).unwrap();
        z.truncate(len);
        (data, z)
    }

    /// `z` read in rounds of `n` segments of `target` bytes of output that
    /// guess their windows from the first round: the bytes, and how many
    /// segments guessed and were inflated again.
    fn guessed_rounds(z: &[u8], n: usize, target: usize) -> (Vec<u8>, (usize, usize, usize), bool) {
        let mut r = Rounds::new(z, 64 << 10, 64 << 20);
        r.fixed_target = Some(target);
        r.set_segments(n);
        r.guess_windows(20);
        let mut out = Vec::new();
        while r.next_round().unwrap() {
            for p in r.parts() {
                out.extend_from_slice(p);
            }
        }
        (out, r.guesses(), r.guess)
    }

    #[test]
    fn long_runs_are_inflated_from_a_guessed_window_and_checked_against_the_true_one() {
        // Zero padding: most guesses hold, and the rounds go on guessing.
        // Padding of another byte: a segment whose start copies from its
        // window is wrong and is inflated again, and the rounds stop
        // guessing after a round of mostly wrong guesses. Either way the
        // bytes are the sequential ones.
        for (fill, seed) in [(0u8, 3), (0x41, 4)] {
            // 4 MiB of DEFLATE data or so: rounds cut at least [`SEARCH`]
            // before the end.
            let (data, z) = long_runs(96 << 20, fill, seed);
            for (n, target) in [(2, 4 << 20), (3, 2 << 20), (8, 1 << 20)] {
                let (out, (guessed, patched, redone), guessing) = guessed_rounds(&z, n, target);
                let at = format!(
                    "fill {fill:#x}, {n} segments of {target}: {guessed} guessed, {patched} \
                     patched, {redone} redone"
                );
                assert!(out == data, "{at}: {} of {} bytes", out.len(), data.len());
                if fill == 0 {
                    assert!(guessed >= 8 && redone * 4 < guessed && guessing, "{at}");
                } else {
                    assert!(redone >= 1 && !guessing, "{at}");
                }
            }
        }
    }

    #[test]
    fn corrupt_long_runs_read_from_guessed_windows_never_panic() {
        let (_, z) = long_runs(4 << 20, 0, 6);
        let mut x = 91u64;
        for _ in 0..24 {
            let mut bad = z.clone();
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % bad.len();
            bad[i] ^= (x >> 20) as u8 | 1;
            let mut r = Rounds::new(&bad, 64 << 10, 64 << 20);
            r.fixed_target = Some(256 << 10);
            r.guess_windows(20);
            while let Ok(true) = r.next_round() {}
        }
    }

    #[test]
    fn corrupt_streams_never_panic() {
        let data = corpus(256 << 10, 9);
        let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
        let n = c.deflate_compress(&data, &mut z).unwrap();
        z.truncate(n);
        let mut x = 77u64;
        for _ in 0..12 {
            let mut bad = z.clone();
            for _ in 0..8 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (x >> 33) as usize % bad.len();
                bad[i] ^= (x >> 20) as u8 | 1;
            }
            let mut out = vec![0u8; data.len()];
            let _ = split_inflate(&bad, &mut out, 4, 8 << 10);
        }
    }
}
