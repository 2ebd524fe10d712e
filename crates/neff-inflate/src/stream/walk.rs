//! What every strategy of the stream shares: the walk through the payload
//! (input, position, the member's checksum and counts, the total against
//! its cap, bytes ready to hand out, the hook told of input passed), and
//! the one interface a strategy answers with ([`Step`]).

use crate::arriving::Gate;
use crate::error::{Error, Result};
use crate::gzip::{self, Trailer, TRAILER};
use crate::hooks::{Passed, Threads};

/// Stored data a run must hold before it is read in place: below this the
/// inflater's copy costs about what leaving and priming it again does.
pub(super) const MIN_RUN: usize = 256 << 10;
/// A skip of this size or more is checksummed on two cores when one is free.
pub(super) const CRC_SPLIT_FROM: usize = 1 << 20;
/// Input is released behind the inflater in steps of this many bytes.
const RELEASE_STEP: usize = 2 << 20;

/// What a strategy's turn came to.
#[derive(Debug)]
pub(super) enum Step {
    /// This many bytes were handed out (or skipped); more than 0.
    Out(usize),
    /// The member's DEFLATE data ended at the walk's position, after this
    /// many bytes handed out in the same turn: its trailer is next.
    End(usize),
    /// The strategy cannot go on: a run of stored blocks was found (with
    /// any bytes before it ready in the walk), or its own data ran out.
    Switch(Switch),
}

/// Why a strategy hands the member on, and to what.
#[derive(Debug)]
pub(super) enum Switch {
    /// A run of stored blocks starts at this bit of the payload (a known
    /// block boundary; bytes before it are ready).
    Stored(usize),
    /// The rounds stop: one core goes on (from where the rounds say, with
    /// their window).
    OneCore,
    /// A run of stored blocks ended before the member did.
    RunEnd,
}

/// Output ready to hand out before any strategy runs again: what a member
/// round or the inflation before a stored run produced (its CRC-32 already
/// taken), `buf[at..len]`.
#[derive(Default)]
pub(super) struct Ready {
    pub(super) buf: Vec<u8>,
    at: usize,
    len: usize,
}

impl Ready {
    pub(super) fn is_empty(&self) -> bool {
        self.at == self.len
    }

    /// Its buffer, for a producer to fill (at least `room` bytes): the
    /// ready bytes are gone.
    pub(super) fn take_buf(&mut self, room: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.buf);
        if buf.len() < room {
            buf = vec![0u8; room];
        }
        (self.at, self.len) = (0, 0);
        buf
    }

    /// Makes `buf[range]` the ready bytes.
    pub(super) fn set(&mut self, buf: Vec<u8>, range: std::ops::Range<usize>) {
        self.buf = buf;
        (self.at, self.len) = (range.start, range.end);
    }
}

/// The walk through the payload that every strategy reads and writes: the
/// input and the position in it, the member's checksum and counts, the
/// total against its cap, the ready bytes, and the hook told of input
/// passed.
pub(super) struct Walk<'a> {
    pub(super) gz: &'a [u8],
    /// Input position: the next byte to inflate, or to read as framing.
    pub(super) pos: usize,
    /// Where the member being read starts (for messages).
    pub(super) at: usize,
    pub(super) crc: libdeflater::Crc,
    /// Bytes the member produced so far.
    pub(super) out: u64,
    total_out: u64,
    cap: u64,
    pub(super) ready: Ready,
    /// Bytes of the member came from parallel rounds and its trailer has
    /// not vouched for them yet: a failure now may be the rounds' own.
    pub(super) unchecked: bool,
    /// Told of input ranges the inflater has passed, and how far it was told.
    release: Option<&'a dyn Passed>,
    released: usize,
    /// Threads the stream may use at a moment (a checksum split asks).
    pub(super) threads: Threads,
    /// Every read waits for its bytes through it first, when the input is
    /// still arriving ([`need`](Self::need)).
    pub(super) gate: Gate<'a>,
}

impl<'a> Walk<'a> {
    /// A walk over the gzip payload `gz`, producing at most `cap` bytes.
    pub(super) fn new(gz: &'a [u8], cap: u64) -> Walk<'a> {
        Walk {
            gz,
            pos: 0,
            at: 0,
            crc: libdeflater::Crc::new(),
            out: 0,
            total_out: 0,
            cap,
            ready: Ready::default(),
            unchecked: false,
            release: None,
            released: 0,
            threads: crate::hooks::one_thread,
            gate: Gate::WHOLE,
        }
    }

    /// Waits until the input's bytes `range` (clamped to the payload) are
    /// in place, when it is still arriving: the one gate before any read
    /// of `gz` (a failure to arrive comes out as its I/O error).
    pub(super) fn need(&self, range: std::ops::Range<usize>) -> Result<()> {
        Ok(self.gate.wait(self.gz, range.start, range.end)?)
    }

    /// The input up to `end`, waited for from `from` on ([`Gate::upto`]).
    pub(super) fn upto(&self, from: usize, end: usize) -> Result<&'a [u8]> {
        Ok(self.gate.upto(self.gz, from, end)?)
    }

    /// Tells `release` of the input passed from now on.
    pub(super) fn release_behind(&mut self, release: &'a dyn Passed) {
        self.release = Some(release);
    }

    /// The hook told of input passed, if any.
    pub(super) fn release_hook(&self) -> Option<&'a dyn Passed> {
        self.release
    }

    /// Bytes handed out so far.
    pub(super) fn total_out(&self) -> u64 {
        self.total_out
    }

    /// Counts `n` more bytes handed out; past the cap, refuses them.
    pub(super) fn count_out(&mut self, n: usize) -> Result<()> {
        self.total_out += n as u64;
        Error::output_within(self.total_out, self.cap)
    }

    /// `bytes` were produced and handed out: checksummed and counted.
    pub(super) fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        self.crc.update(bytes);
        self.out += bytes.len() as u64;
        self.count_out(bytes.len())
    }

    /// `n` bytes whose CRC-32 is now `crc` were skipped where they lie.
    pub(super) fn skipped(&mut self, n: usize, crc: u32) -> Result<()> {
        self.crc = libdeflater::Crc::with_initial(crc);
        self.out += n as u64;
        self.count_out(n)
    }

    /// Hands out ready bytes, if any.
    pub(super) fn take_ready(&mut self, out: &mut [u8]) -> Result<Option<usize>> {
        let r = &mut self.ready;
        if r.is_empty() {
            return Ok(None);
        }
        let n = out.len().min(r.len - r.at);
        out[..n].copy_from_slice(&r.buf[r.at..r.at + n]);
        r.at += n;
        self.count_out(n)?;
        Ok(Some(n))
    }

    /// Skips up to `n` ready bytes: their CRC-32 was taken as they were
    /// produced, so skipping copies nothing.
    pub(super) fn skip_ready(&mut self, n: u64) -> Result<usize> {
        let r = &mut self.ready;
        let take = (r.len - r.at).min(usize::try_from(n).unwrap_or(usize::MAX));
        r.at += take;
        self.count_out(take)?;
        Ok(take)
    }

    /// Tells the release hook that the input before `upto` is done with.
    pub(super) fn passed(&mut self, upto: usize) {
        if let Some(f) = self.release {
            if upto >= self.released + RELEASE_STEP {
                f.passed(self.released..upto);
                self.released = upto;
            }
        }
    }

    /// What [`passed`](Self::passed) would tell the hook, for the caller
    /// to tell it on another thread: the hook and the range, counted as
    /// told.
    pub(super) fn take_passed(
        &mut self,
        upto: usize,
    ) -> Option<(&'a dyn Passed, std::ops::Range<usize>)> {
        let f = self.release?;
        if upto < self.released + RELEASE_STEP {
            return None;
        }
        let r = self.released..upto;
        self.released = upto;
        Some((f, r))
    }

    /// Tells the release hook that `range` was only looked at ahead of the
    /// inflater (its pages go until the inflater gets there).
    pub(super) fn looked_ahead(&self, range: std::ops::Range<usize>) {
        if let Some(f) = self.release {
            f.passed(range);
        }
    }

    pub(super) fn corrupt(&self) -> Error {
        gzip::corrupt(self.at)
    }

    /// Checks the trailer of the member whose DEFLATE stream ended at the
    /// position, and moves past it.
    pub(super) fn end_member(&mut self) -> Result<()> {
        self.need(self.pos..self.pos.saturating_add(TRAILER))?;
        let t = Trailer::at(self.gz, self.pos).ok_or_else(|| self.corrupt())?;
        if !t.describes(self.crc.sum(), self.out) {
            return Err(self.corrupt());
        }
        self.pos += TRAILER;
        self.unchecked = false;
        Ok(())
    }
}
