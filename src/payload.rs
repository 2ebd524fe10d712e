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

#[cfg(feature = "remote")]
use crate::error::Error;
use crate::error::Result;

#[cfg(feature = "remote")]
pub(crate) use neff_inflate::PARALLEL_FROM;
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

/// A stream over `gz`, a payload still arriving under its map (a remote
/// object's spool, [`crate::remote::Landing`]): `wait` is asked for each
/// range (payload offsets) before it is read; in parallel rounds on the
/// pool's idle threads when `parallel`, else on the calling thread.
#[cfg(feature = "remote")]
pub(crate) fn arriving<'a>(
    gz: &'a [u8],
    cap: u64,
    parallel: bool,
    wait: &'a dyn neff_inflate::Arriving,
) -> Result<GzStream<'a>> {
    let threads = match parallel {
        true => threads,
        false => neff_inflate::one_thread,
    };
    GzStream::arriving(gz, cap, threads, wait).map_err(unwrap_source)
}

/// A gzip payload from any `Read` (a remote object's body as its parts
/// arrive), inflated on the calling thread as its pieces come
/// ([`neff_inflate::GzReader`]): the tar layer's byte stream for a payload
/// that is not held. A failure of the source that carries one of this
/// crate's errors (a remote object replaced, cut, refused) comes out as
/// that error, not as an I/O error's text.
#[cfg(feature = "remote")]
pub(crate) struct Pieces<R>(neff_inflate::GzReader<R>);

#[cfg(feature = "remote")]
impl<R: std::io::Read> Pieces<R> {
    pub(crate) fn new(input: R, cap: u64) -> Pieces<R> {
        Pieces(neff_inflate::GzReader::new(input, cap))
    }

    /// Inflates into `out`; 0 only at the end (every trailer checked).
    pub(crate) fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        self.0.fill(out).map_err(unwrap_source)
    }

    /// Produces and drops `n` bytes through `window`; fewer at the end.
    pub(crate) fn skip(&mut self, n: u64, window: &mut [u8]) -> Result<u64> {
        let mut left = n;
        while left > 0 {
            let w = window
                .len()
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            let k = self.fill(&mut window[..w])?;
            if k == 0 {
                break;
            }
            left -= k as u64;
        }
        Ok(n - left)
    }

    /// Produces what is left; the payload's inflated length.
    pub(crate) fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        while self.fill(window)? > 0 {}
        Ok(self.0.produced())
    }

    /// Bytes produced so far.
    pub(crate) fn produced(&self) -> u64 {
        self.0.produced()
    }
}

/// The engine's error as the crate's; an I/O error of the source that
/// wraps one of the crate's errors is that error.
#[cfg(feature = "remote")]
fn unwrap_source(e: neff_inflate::Error) -> Error {
    match e {
        neff_inflate::Error::Io(io) if io.get_ref().is_some_and(|r| r.is::<Error>()) => {
            match io.into_inner().map(|b| b.downcast::<Error>()) {
                Some(Ok(e)) => *e,
                // Checked above: not reached.
                _ => Error::Io(std::io::Error::other("a source error was lost")),
            }
        }
        e => e.into(),
    }
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
