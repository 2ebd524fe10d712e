//! The tar bytes of a payload. A raw payload's are the file's own (a
//! window of the map) and never come here; a gzip payload's come from the
//! `neff-inflate` engine (`crates/neff-inflate`): inflated whole in one
//! pass, or walked as a bounded stream, on one core or several.
//!
//! This module owns the glue, and no inflation of its own: how many
//! threads the engine may use at a moment (the idle workers of the pool
//! that runs the read, [`crate::pool`]), and the engine's errors as the
//! crate's (`Error::Gzip`, `Error::Limit`, `Error::Io`, with the same
//! texts on every path).

use crate::error::Result;

pub(crate) use neff_inflate::{GzStream, Inflated, Passed, Whole};

/// How many threads the engine may use now: the pool's idle workers and
/// the caller's own (`-j/--threads` sizes the pool).
pub(crate) fn threads() -> usize {
    crate::pool::idle_threads()
}

/// [`neff_inflate::inflate_within`] on the pool's idle threads.
pub(crate) fn inflate_within(
    gz: &[u8],
    cap: u64,
    budget: u64,
    reuse: Option<Vec<u8>>,
) -> Result<Whole> {
    Ok(neff_inflate::inflate_within(
        gz, cap, budget, reuse, threads,
    )?)
}

/// A stream over `gz`, in parallel rounds on the pool's idle threads
/// when `parallel` and the payload is large; else on the calling thread.
pub(crate) fn stream(gz: &[u8], cap: u64, parallel: bool) -> Result<GzStream<'_>> {
    Ok(match parallel {
        true => GzStream::new_parallel(gz, cap, threads)?,
        false => GzStream::new(gz, cap)?,
    })
}

/// Inflates a whole gzip payload into one buffer of at most `cap` bytes
/// (every member; padding allowed).
#[cfg(any(test, feature = "fuzzing"))]
pub fn inflate(gz: &[u8], cap: u64) -> Result<Inflated> {
    Ok(neff_inflate::inflate(gz, cap, threads)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_worker_may_split_only_while_another_worker_is_idle() {
        let pool = crate::pool::counting_pool(2).unwrap();
        pool.install(|| {
            let _me = crate::pool::Job::start();
            assert_eq!(threads(), 2, "the other worker is idle");
            let _other = crate::pool::Job::start();
            assert_eq!(threads(), 1, "both workers read a file");
        });
        // A caller's own pool of three, with no scan bookkeeping: busy.
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        other.install(|| assert_eq!(threads(), 1));
    }
}
