//! The parts a range of bytes is read in, one request each: a first part,
//! then each twice the one before up to a most, so that reading that stops
//! early wastes little and a long one reaches full-size parts. A shape
//! only, of no source: remote read-aheads and the tar layer's ranged walk
//! both cut their ranges so.

use std::ops::Range;

/// The parts of a range: `first` bytes, then each twice the one
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
