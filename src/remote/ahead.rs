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
use std::sync::{Mutex, PoisonError};

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
pub(crate) struct Alive;

impl Alive {
    pub(crate) fn start() -> Alive {
        ALIVE.fetch_add(1, Ordering::Relaxed);
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        if ALIVE.fetch_sub(1, Ordering::Relaxed) == 1 {
            // The last read-ahead done: its spare buffers go too.
            spare().clear();
        }
    }
}

/// Part buffers the walk is done with, for the next parts to be read
/// into: a read-through of a 1 GiB object into fresh buffers faulted in
/// 1 GiB of new pages, a fifth of its CPU time on loopback, where the
/// walk keeps only a few parts' bytes at a time. Kept while any
/// read-ahead is alive, at most [`SPARE_MOST`] of them (the parts in
/// flight, one waiting and the walk's window).
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const SPARE_MOST: usize = 10;
/// Smaller buffers are not worth keeping (the allocator reuses them).
const SPARE_FROM: usize = 256 << 10;

fn spare() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    SPARE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An empty buffer for a part of `len` bytes: a spare one that holds it
/// when there is one, else a new one.
pub(crate) fn buffer(len: usize) -> Vec<u8> {
    let mut spare = spare();
    match spare.iter().position(|b| b.capacity() >= len) {
        Some(i) => {
            let mut b = spare.swap_remove(i);
            b.clear();
            b
        }
        None => Vec::with_capacity(len),
    }
}

/// Hands back a part's buffer the walk is done with.
pub(crate) fn give_back(b: Vec<u8>) {
    if b.capacity() < SPARE_FROM || ALIVE.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut spare = spare();
    if spare.len() < SPARE_MOST {
        spare.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_buffer_handed_back_is_reused_while_a_read_ahead_lives_and_dropped_after() {
        let alive = Alive::start();
        let b = buffer(1 << 20);
        let at = b.as_ptr();
        give_back(b);
        // Small buffers are not kept.
        give_back(Vec::with_capacity(1024));
        let again = buffer(512 << 10);
        assert_eq!(again.as_ptr(), at, "the spare buffer was not reused");
        assert!(again.is_empty() && again.capacity() >= 1 << 20);
        give_back(again);
        drop(alive);
        // No read-ahead alive: the spares are gone, and none is taken back.
        assert!(spare().is_empty());
        give_back(Vec::with_capacity(1 << 20));
        assert!(spare().is_empty());
    }
}
