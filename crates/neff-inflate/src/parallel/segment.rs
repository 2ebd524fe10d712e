//! One piece of a split stream: the first chunk (inflated whole up to a
//! block boundary), and every later one (marker-decoded until its window
//! clears, then inflated by libdeflate primed with it; or, in rounds,
//! inflated from a guessed window and checked), with its markers
//! resolved once the bytes before it are known.

use crate::buf::HugeBuf;
use crate::deflate::{self, Bits, Decoder, Step, MARKER, WINDOW};
use crate::hooks::Passed;

use super::search::*;

/// One decoded chunk: marker symbols, then plain bytes (`window`, then
/// `bytes[range]`, the part libdeflate inflated after priming, in a
/// huge-page mapping so that writing it costs few page faults).
pub(super) struct Chunk {
    pub(super) symbols: Vec<u16>,
    pub(super) window: Vec<u8>,
    pub(super) bytes: Option<HugeBuf>,
    pub(super) range: std::ops::Range<usize>,
}

impl Chunk {
    pub(super) fn markers_only(symbols: Vec<u16>) -> Chunk {
        Chunk {
            symbols,
            window: Vec::new(),
            bytes: None,
            range: 0..0,
        }
    }
    pub(super) fn tail(&self) -> &[u8] {
        self.bytes.as_ref().map_or(&[], |b| &b[self.range.clone()])
    }
    pub(super) fn len(&self) -> usize {
        self.symbols.len() + self.window.len() + self.tail().len()
    }
}

/// Chunk 0: plain libdeflate up to the first boundary, into `out`.
pub(super) fn first_chunk(data: &[u8], to: usize, out: &mut [u8]) -> Option<usize> {
    let s = synth(&deflate::BitWriter::default(), data, 0, Some(to));
    inflate_synth(&s, out, true)
}

/// How a later chunk's marker-decoded start ended.
pub(super) enum Start {
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
pub(super) fn marker_start(
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
pub(super) fn later_chunk(
    data: &[u8],
    from: usize,
    to: Option<usize>,
    cap: usize,
) -> Option<Chunk> {
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
pub(super) fn later_segment(
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
pub(super) const GUESS_AFTER: usize = 2 * WINDOW;

/// The output a round shares out when guessing windows (long runs): 24
/// MiB a segment at two, down to [`seg_out`]'s from six segments on.
/// Their compressed data is small (24:1 and more), so a segment's fixed
/// cost, the search for a block start near its cut (a test at every bit,
/// through the 17 KiB a block of zeros and noise takes), weighs as much
/// as inflating 6 MiB: fewer, larger segments (3 GiB of zeros and noise
/// at two segments: 0.85 s in 250 rounds of 6 MiB segments, 0.49 s in
/// 64 of 24 MiB).
pub(super) const GUESS_ROUND: usize = 48 << 20;

/// A round's inflated:compressed ratio under which the rounds stop
/// guessing windows (they began on a long-runs member, or on a start
/// that did not clear): runs copy from before the cut no more, and a
/// guess would be wrong, the segment inflated twice.
pub(super) const GUESS_BELOW: usize = 6;

/// The window a segment that copies from before its cut is inflated
/// with, before the true one is known: zeros (long runs are padding).
pub(super) static GUESS: [u8; WINDOW] = [0; WINDOW];

/// A later segment whose marker-decoded start did not clear (runs keep
/// copying from before its cut: zero padding), inflated whole by
/// zlib-rs from a guessed window of zeros into `l.buf` (the window's
/// bytes first, then the segment's: `l.start` is where those begin). The
/// symbols `l.dec` decoded are the segment's true start, in markers of
/// the window: once the true window is known, [`settle_guess`] checks
/// them against the guessed output, and on a difference the segment is
/// inflated again ([`redo_guess`]). `false` when it does not decode or
/// does not fit.
pub(super) fn guessed_segment(
    data: &[u8],
    cap: usize,
    l: &mut Later,
    release: &Release<'_>,
) -> bool {
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
pub(super) fn inflate_primed(cap: usize, l: &mut Later) -> bool {
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
pub(super) enum Settled {
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
pub(super) fn settle_guess(l: &mut Later, window: &[u8]) -> Settled {
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
pub(super) fn redo_guess(cap: usize, l: &mut Later, window: &[u8]) -> bool {
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
pub(super) struct Release<'h> {
    pub(super) hook: Option<&'h dyn Passed>,
    pub(super) base: usize,
}

impl Release<'_> {
    pub(super) fn copied(&self, from_bit: usize, to_bit: usize) {
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

/// A segment after A: its decoder (its marker-decoded start, kept from
/// round to round with its memory), its synthetic input, and its output,
/// `buf[start..len]`: the start's `marks` bytes (written by [`resolve`]
/// once the 32 KiB before the segment are known), then what libdeflate
/// produced from where the start's window cleared, beginning with that
/// window. One contiguous part, so that the start is never copied twice.
/// (A segment inflated from a guessed window, [`guessed_segment`], has no
/// marks: its output follows the window zlib-rs was primed with.)
#[derive(Default)]
pub(super) struct Later {
    pub(super) dec: Decoder,
    pub(super) syn: Vec<u8>,
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) marks: usize,
    pub(super) len: usize,
    /// The start's window cleared inside the segment: its last 32 KiB are
    /// known before its start is resolved.
    pub(super) clean: bool,
    /// Inflated from a guessed window: checked, once the true one is
    /// known, by [`settle_guess`].
    pub(super) guessed: bool,
    /// The segment's input: from bit `from` to bit `to` (`None`: the
    /// stream's end).
    pub(super) from: usize,
    pub(super) to: Option<usize>,
    /// The CRC-32 of its output, when its thread took it.
    pub(super) crc: Option<u32>,
}

impl Later {
    /// The segment's last 32 KiB, when known before it is resolved.
    pub(super) fn clean_tail(&self) -> Option<&[u8]> {
        (self.clean && self.len >= self.marks + WINDOW)
            .then(|| &self.buf[self.len - WINDOW..self.len])
    }
}

/// A later segment's start: its marker-decoded symbols resolved against
/// `window` (the 32 KiB before it), written at the front of its buffer.
pub(super) fn resolve(l: &mut Later, window: &[u8]) {
    let symbols = &l.dec.produced()[..l.marks];
    for (dst, &s) in l.buf[..l.marks].iter_mut().zip(symbols) {
        *dst = if s < MARKER {
            s as u8
        } else {
            window[usize::from(s - MARKER)]
        };
    }
}

/// The most segments a split or a round is cut into, whatever the
/// caller says.
pub(crate) const MAX_SEGS: usize = 256;
