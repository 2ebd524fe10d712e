//! The one-core strategy: zlib-rs (through flate2's raw-DEFLATE
//! interface) inflating a member from the walk's position into the
//! caller's window. It is what every other strategy hands over to, primed
//! with the 32 KiB of output before the point where it takes over.

use flate2::{Decompress, FlushDecompress, Status};

use super::walk::{Step, Walk};
use crate::error::Result;

/// Input still arriving is given to the inflater this much at a time.
const ARRIVING_STEP: usize = 1 << 20;

/// The one-core inflater, kept from member to member.
pub(super) struct OneCore {
    inflater: Decompress,
}

impl OneCore {
    pub(super) fn new() -> OneCore {
        OneCore {
            inflater: Decompress::new(false),
        }
    }

    /// A fresh start for a member whose DEFLATE data starts at a block
    /// boundary with an empty window.
    pub(super) fn reset(&mut self) {
        self.inflater.reset(false);
    }

    /// Input read since the last reset or prime (for the tests).
    #[cfg(test)]
    pub(super) fn total_in(&self) -> u64 {
        self.inflater.total_in()
    }

    /// The inflater, for a member round or a member taken over.
    pub(super) fn inflater(&mut self) -> &mut Decompress {
        &mut self.inflater
    }

    /// Starts afresh on `head`, a synthetic stream that outputs the known
    /// window (`window_len` bytes, dropped) and ends where the real data
    /// resumes.
    pub(super) fn prime(&mut self, w: &Walk<'_>, head: &[u8], window_len: usize) -> Result<()> {
        self.inflater.reset(false);
        let mut scratch = vec![0u8; window_len + 64];
        let done = self
            .inflater
            .decompress(head, &mut scratch, FlushDecompress::None);
        let primed = matches!(done, Ok(Status::Ok))
            && self.inflater.total_in() == head.len() as u64
            && self.inflater.total_out() == window_len as u64;
        if !primed {
            return Err(w.corrupt());
        }
        Ok(())
    }

    /// Inflates from the walk's position into `out`.
    pub(super) fn fill(&mut self, w: &mut Walk<'_>, out: &mut [u8]) -> Result<Step> {
        loop {
            let z = &mut self.inflater;
            let (in0, out0) = (z.total_in(), z.total_out());
            // Input still arriving is given a MiB at a time, once there.
            let end = match w.gate.whole() {
                true => w.gz.len(),
                false => w.pos.saturating_add(ARRIVING_STEP).min(w.gz.len()),
            };
            w.need(w.pos..end)?;
            let status = z
                .decompress(&w.gz[w.pos..end], out, FlushDecompress::None)
                .map_err(|_| w.corrupt())?;
            let used = (z.total_in() - in0) as usize;
            let n = (z.total_out() - out0) as usize;
            w.pos += used;
            w.passed(w.pos);
            w.emit(&out[..n])?;
            if status == Status::StreamEnd {
                return Ok(Step::End(n));
            }
            if n == 0 && used == 0 {
                // No progress with input left to give: the member is cut short.
                return Err(w.corrupt());
            }
            if n > 0 {
                return Ok(Step::Out(n));
            }
        }
    }
}

/// Inflates from `input` into `buf` until the DEFLATE stream ends, `buf`
/// is full or no progress is made: (input used, bytes written, ended).
pub(super) fn inflate_some(
    z: &mut Decompress,
    input: &[u8],
    buf: &mut [u8],
) -> std::result::Result<(usize, usize, bool), ()> {
    let (in0, out0) = (z.total_in(), z.total_out());
    loop {
        let (used, n) = (
            (z.total_in() - in0) as usize,
            (z.total_out() - out0) as usize,
        );
        if n == buf.len() {
            return Ok((used, n, false));
        }
        let status = z
            .decompress(&input[used..], &mut buf[n..], FlushDecompress::None)
            .map_err(|_| ())?;
        let (used2, n2) = (
            (z.total_in() - in0) as usize,
            (z.total_out() - out0) as usize,
        );
        if status == Status::StreamEnd {
            return Ok((used2, n2, true));
        }
        if used2 == used && n2 == n {
            return Ok((used2, n2, false));
        }
    }
}
