//! Runs of stored blocks read in place ([`crate::stored`]): their
//! bytes are the output, copied out where the walk reads them and
//! checksummed where they lie where it skips (on two cores when one is
//! free). A run is entered at a known block boundary: a member's start,
//! the end of a parallel round, or after a Huffman stretch checked to end
//! exactly where the run starts ([`bridge`]).

use std::collections::VecDeque;
use std::ops::Range;

use super::walk::{Step, Switch, Walk, CRC_SPLIT_FROM, MIN_RUN};
use crate::deflate::WINDOW;
use crate::error::Result;
use crate::parallel;
use crate::stored::{self, At};

/// Most stored data one skip checksums at a time (its pieces are listed
/// first, then summed, on two cores when one is free).
const SKIP_BATCH: usize = 64 << 20;
/// How far past a known block boundary the next run is looked for, and
/// the most output what lies between may inflate to.
const BRIDGE_SEARCH: usize = 256 << 10;
const BRIDGE_OUT: usize = 4 << 20;
/// A stored block's most data, and the most input its header takes (3
/// bits, the padding to a byte, LEN and NLEN).
const BLOCK_MAX: usize = 65_535;
const BLOCK_HEADER: usize = 5;
/// Input a stored block's header is read from, waited for first: its 3
/// bits (in up to 2 bytes), LEN and NLEN.
const HEADER_READ: usize = 7;
/// How far past a run's start [`run_len`] reads, when the input is still
/// arriving: the run's stored data, and its last block whole.
const RUN_READ: usize = MIN_RUN + 2 * (BLOCK_MAX + BLOCK_HEADER);

/// A run of stored blocks being read in place.
#[derive(Debug)]
pub(super) struct InPlace {
    /// The current block's data not yet handed out (payload offsets).
    data: Range<usize>,
    /// The current block is the member's last.
    last: bool,
    /// The latest blocks' data, newest last: at least the 32 KiB window
    /// once the run holds that much, for the inflater that takes over.
    recent: VecDeque<Range<usize>>,
    recent_len: usize,
}

impl InPlace {
    /// The run whose first block header starts at bit `bit` of the
    /// payload (a known block boundary); `None` when no stored block
    /// starts there.
    pub(super) fn at(w: &Walk<'_>, bit: usize) -> Result<Option<InPlace>> {
        w.need(bit / 8..bit / 8 + HEADER_READ)?;
        Ok(InPlace::at_in(w.gz, bit))
    }

    /// [`at`](Self::at) in `gz`, which holds the block's header.
    fn at_in(gz: &[u8], bit: usize) -> Option<InPlace> {
        let At::Stored(b) = stored::block_at(gz, bit) else {
            return None;
        };
        let mut ip = InPlace {
            data: b.data.clone(),
            last: b.last,
            recent: VecDeque::new(),
            recent_len: 0,
        };
        ip.remember(b.data);
        Some(ip)
    }

    /// Where the run's current block ends (once it is done: where the run
    /// ends).
    pub(super) fn end(&self) -> usize {
        self.data.end
    }

    fn remember(&mut self, data: Range<usize>) {
        // Empty blocks add nothing to the window: kept, a run of millions
        // of them (5 bytes each) would grow this list with the input.
        if data.is_empty() {
            return;
        }
        self.recent_len += data.len();
        self.recent.push_back(data);
        while let Some(f) = self.recent.front() {
            if self.recent_len - f.len() < WINDOW {
                break;
            }
            self.recent_len -= f.len();
            self.recent.pop_front();
        }
    }

    /// The last 32 KiB of the run (all of it when shorter).
    pub(super) fn window(&self, gz: &[u8]) -> Vec<u8> {
        let mut w = Vec::with_capacity(self.recent_len);
        for r in &self.recent {
            w.extend_from_slice(&gz[r.clone()]);
        }
        w.drain(..w.len().saturating_sub(WINDOW));
        w
    }

    /// With the current block done: moves into the next block if it is
    /// stored too; `false` when the run ends here (the member's final
    /// block, or a block that is not stored).
    fn next_block(&mut self, w: &Walk<'_>) -> Result<bool> {
        if self.last {
            return Ok(false);
        }
        w.need(self.data.end..self.data.end + HEADER_READ)?;
        match stored::block_at(w.gz, self.data.end * 8) {
            At::Stored(b) => {
                self.data = b.data.clone();
                self.last = b.last;
                self.remember(b.data);
                Ok(true)
            }
            At::Other => Ok(false),
            At::Bad => Err(w.corrupt()),
        }
    }

    /// At the run's end: the member ends with it (the walk's position is
    /// its trailer), or another block follows on the byte where it ends.
    fn leave(&self, w: &mut Walk<'_>) -> Step {
        let end = self.data.end;
        w.passed(end);
        if self.last {
            w.pos = end;
            return Step::End(0);
        }
        Step::Switch(Switch::RunEnd)
    }

    /// Copies the run's bytes into `out`.
    pub(super) fn fill(&mut self, w: &mut Walk<'_>, out: &mut [u8]) -> Result<Step> {
        loop {
            if !self.data.is_empty() {
                let from = self.data.start;
                let n = out.len().min(self.data.len());
                self.data.start += n;
                w.need(from..from + n)?;
                out[..n].copy_from_slice(&w.gz[from..from + n]);
                w.emit(&out[..n])?;
                w.passed(from + n);
                return Ok(Step::Out(n));
            }
            if !self.next_block(w)? {
                return Ok(self.leave(w));
            }
        }
    }

    /// Skips up to `n` bytes of the run without copying them: their CRC-32
    /// is taken where they lie, on two cores when the stretch is large and
    /// a core is free. The bytes skipped; 0 when the run's current block is
    /// done and it ends there (the caller goes on through `fill`, which
    /// leaves the run).
    pub(super) fn skip(&mut self, w: &mut Walk<'_>, n: u64) -> Result<usize> {
        let want = usize::try_from(n).unwrap_or(usize::MAX).min(SKIP_BATCH);
        let split = want >= CRC_SPLIT_FROM && (w.threads)() >= 2;
        // (Input still arriving is not read ahead of its listing.)
        let listed = if split && w.gate.whole() {
            // The block headers are walked on this thread, one every 64
            // KiB, and each read of one maps the pages around it: mapping a
            // file's pages, not checksumming them, was most of a skip's
            // time on one core (22 ms of 41 for 256 MiB). So the free core
            // reads the second half of the stretch first, one byte a page,
            // while this one walks the first half's headers.
            let gz = w.gz;
            let from = self.data.start;
            let to = from
                .saturating_add(want)
                .saturating_add(want / BLOCK_MAX * BLOCK_HEADER)
                .min(gz.len());
            let mid = from + (to.saturating_sub(from)) / 2;
            // And it drops the pages of the stretches skipped before (a
            // split skip leaves them mapped: unmapping them is the other
            // part of a skip's time in the kernel).
            let behind = w.take_passed(from);
            let touch_ahead = || {
                if let Some((hook, r)) = behind {
                    hook.passed(r);
                }
                touch(&gz[mid.min(to)..to]);
            };
            rayon::join(touch_ahead, || self.list(w, want)).1
        } else {
            self.list(w, want)
        };
        let (pieces, total) = listed?;
        let Some(end) = pieces.last().map(|p| p.end) else {
            return Ok(0);
        };
        let split = split && total >= CRC_SPLIT_FROM;
        w.need(pieces[0].start..end)?;
        let slices: Vec<&[u8]> = pieces.iter().map(|p| &w.gz[p.clone()]).collect();
        let crc = stored::crc(&slices, w.crc.sum(), split);
        w.skipped(total, crc)?;
        if !split {
            // (After a split skip, the next one drops these pages on the
            // free core; any other step of the walk drops them here.)
            w.passed(end);
        }
        Ok(total)
    }
}

impl InPlace {
    /// The data of the run's blocks from the current position on, up to
    /// `want` bytes: the pieces (payload ranges) and their total.
    fn list(&mut self, w: &Walk<'_>, want: usize) -> Result<(Vec<Range<usize>>, usize)> {
        let mut pieces = Vec::new();
        let mut total = 0usize;
        while total < want {
            if self.data.is_empty() {
                if !self.next_block(w)? {
                    break;
                }
                continue;
            }
            let take = self.data.len().min(want - total);
            pieces.push(self.data.start..self.data.start + take);
            self.data.start += take;
            total += take;
        }
        Ok((pieces, total))
    }
}

/// Reads one byte of each 4 KiB page of `bytes`, so that a mapped file's
/// pages are mapped in by this thread.
fn touch(bytes: &[u8]) {
    let sum = bytes.iter().step_by(4 << 10).fold(0u8, |a, &b| a ^ b);
    std::hint::black_box(sum);
}

/// At bit `from`, a known block boundary after `window`, where a Huffman
/// block starts (after a run of stored blocks, a tar header amid
/// incompressible data, say; or the start of a member whose first blocks
/// are compressible): looks for the next run of stored blocks within
/// [`BRIDGE_SEARCH`] bytes, inflates what lies between (checked to end
/// exactly where the run's first block starts, by the rounds' test:
/// `parallel::inflate_between`) into the walk's ready bytes, and returns
/// the bit where that run's first block starts. `None` when there is no
/// such run.
pub(super) fn bridge(w: &mut Walk<'_>, from: usize, window: &[u8]) -> Result<Option<usize>> {
    let q = from / 8;
    // Input still arriving is waited for as far as the search and a run
    // it finds read (a run found in it is read in place from the whole).
    let gz = w.upto(q, q.saturating_add(BRIDGE_SEARCH + RUN_READ))?;
    let end = q
        .saturating_add(BRIDGE_SEARCH)
        .min(gz.len().saturating_sub(4));
    for l in q + 1..end {
        let (len, nlen) = (
            u16::from_le_bytes([gz[l], gz[l + 1]]),
            u16::from_le_bytes([gz[l + 2], gz[l + 3]]),
        );
        if len != !nlen {
            continue;
        }
        // The header's 3 bits end in the byte before LEN, padding after.
        for e in (l * 8).saturating_sub(10)..=(l * 8).saturating_sub(3) {
            if e <= from || (e + 3).div_ceil(8) != l {
                continue;
            }
            if stored::run_len(gz, e, MIN_RUN) < MIN_RUN {
                continue;
            }
            if InPlace::at_in(gz, e).is_none() {
                continue;
            }
            let mut buf = w
                .ready
                .take_buf(BRIDGE_OUT + window.len() + parallel::BETWEEN_ROOM);
            let Some(r) = parallel::inflate_between(gz, window, from, e, &mut buf) else {
                w.ready.set(buf, 0..0);
                continue;
            };
            w.crc.update(&buf[r.clone()]);
            w.out += r.len() as u64;
            w.ready.set(buf, r);
            return Ok(Some(e));
        }
    }
    Ok(None)
}

/// The stored data of the run of stored blocks from bit `from`, up to
/// [`MIN_RUN`] ([`stored::run_len`]); of input still arriving, only what
/// lies within [`RUN_READ`] bytes is read (a run longer in blocks is
/// then found shorter, and not read in place).
pub(super) fn run_len(w: &Walk<'_>, from: usize) -> Result<usize> {
    let gz = w.upto(from / 8, (from / 8).saturating_add(RUN_READ))?;
    Ok(stored::run_len(gz, from, MIN_RUN))
}
