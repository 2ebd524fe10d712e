//! The shape of a read-ahead over one object: how many of its parts
//! ([`crate::parts::Parts`]) are in flight ([`depth`]). The read-ahead itself is
//! [`super::ReadAhead`].
//!
//! Memory: at most `depth` parts in flight and one waiting, each at most
//! 8 MiB (the tar walk's largest part); `depth` is the object's share of
//! `--io-depth` among the read-aheads alive, so that all of them together
//! hold about `--io-depth` parts.

use std::sync::atomic::{AtomicUsize, Ordering};

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
