//! The shape of a read-ahead over one object: its parts ([`Parts`]) and
//! how many are in flight ([`depth`]). The read-ahead itself is
//! [`super::ReadAhead`].
//!
//! Memory: at most `depth` parts in flight and one waiting, each at most
//! 8 MiB (the tar walk's largest part); `depth` is the object's share of
//! `--io-depth` among the read-aheads alive, so that all of them together
//! hold about `--io-depth` parts.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The parts of a read-ahead: `first` bytes, then each twice the one
/// before, up to `most`, to the end of the range. A read-ahead dropped
/// early so wastes little; a long one reaches full-size parts.
#[derive(Debug, Clone)]
pub struct Parts {
    start: u64,
    at: u64,
    end: u64,
    next: u64,
    most: u64,
}

impl Parts {
    /// The parts of `range`, the first of `first` bytes (at least one),
    /// none over `most`.
    pub fn new(range: Range<u64>, first: u64, most: u64) -> Parts {
        let most = most.max(1);
        Parts {
            start: range.start,
            at: range.start,
            end: range.end,
            next: first.clamp(1, most),
            most,
        }
    }

    /// The whole range the parts cover.
    pub fn span(&self) -> Range<u64> {
        self.start..self.end
    }
}

impl Iterator for Parts {
    type Item = Range<u64>;
    fn next(&mut self) -> Option<Range<u64>> {
        if self.at >= self.end {
            return None;
        }
        let part = self.at..self.end.min(self.at + self.next);
        self.at = part.end;
        self.next = (self.next * 2).min(self.most);
        Some(part)
    }
}

/// Read-aheads and reads of long ranges alive in the process.
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// Parts in flight for one more read-ahead: its share of the process's
/// I/O depth, between 1 and 8.
pub(crate) fn depth() -> usize {
    let alive = ALIVE.load(Ordering::Relaxed) + 1;
    (crate::pool::io_depth() / alive).clamp(1, 8)
}

/// A read-ahead (or a read of a long range) alive, counted until dropped.
pub(crate) fn alive() -> super::link::Gauge {
    super::link::Gauge::hold(&ALIVE)
}
