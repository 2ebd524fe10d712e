//! What the caller hands the engine beside its input: how many threads it
//! may use ([`Threads`], with [`pool_threads`] and [`one_thread`]), and
//! whom to tell of the input it has gone past ([`Passed`]). The stream,
//! the parallel rounds and the one-shot path take them from here.

/// How many threads the engine may use at this moment, asked before each
/// parallel step (a split, a member's rounds, a long checksum). 1 or less
/// keeps the work on the calling thread. The work runs on the current
/// rayon pool.
pub type Threads = fn() -> usize;

/// What a [`GzStream`](crate::GzStream) tells of the input it has gone
/// past, so that a caller reading from a memory map can drop those pages.
/// It may be told from any of the engine's threads (a parallel round's
/// segments each say when they have copied their input), so it must be
/// `Sync`.
pub trait Passed: Sync {
    /// The input bytes `range` (offsets into the payload) need not stay in
    /// memory: this stream will not read them again, or only looked ahead
    /// at them and reads them again later (from the file).
    fn passed(&self, range: std::ops::Range<usize>);
}

impl<F: Fn(std::ops::Range<usize>) + Sync> Passed for F {
    fn passed(&self, range: std::ops::Range<usize>) {
        self(range)
    }
}

/// Every thread of the current rayon pool: a [`Threads`] for a caller
/// that has the pool to itself.
pub fn pool_threads() -> usize {
    rayon::current_num_threads()
}

/// One thread: a [`Threads`] that keeps all work on the calling thread.
pub fn one_thread() -> usize {
    1
}
