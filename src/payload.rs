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

use crate::error::{Error, Result};

#[cfg(feature = "remote")]
pub(crate) use neff_inflate::PARALLEL_FROM;
pub(crate) use neff_inflate::{Arriving, GzStream, Inflated, Passed, Whole};

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
/// `arriving`: the payload is still arriving under its map (a remote
/// object's spool, `remote::Landing`), and each range (payload offsets)
/// is waited for before it is read.
pub(crate) fn stream<'a>(
    gz: &'a [u8],
    cap: u64,
    parallel: bool,
    arriving: Option<&'a dyn Arriving>,
) -> Result<GzStream<'a>> {
    let threads = match parallel {
        true => threads,
        false => neff_inflate::one_thread,
    };
    let s = match arriving {
        Some(input) => GzStream::arriving(gz, cap, threads, input),
        None => GzStream::new_parallel(gz, cap, threads),
    };
    s.map_err(unwrap_source)
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

/// Input still arriving ([`stream`]) read from a map whose pages stay
/// unreadable until waited for ([`crate::map::lazy`]).
#[cfg(all(test, feature = "fuzzing", feature = "remote"))]
mod arriving_tests {
    use crate::map::lazy::lazy;
    use std::io::Write;

    fn gz(data: &[u8], level: u32, name: Option<&str>) -> Vec<u8> {
        let mut b = flate2::GzBuilder::new();
        if let Some(n) = name {
            b = b.filename(n);
        }
        let mut e = b.write(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Text, noise (stored blocks), long zero runs, from `seed`.
    fn mixed(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let words = [
            &b"tensor "[..],
            b"neff ",
            b"kelf-0.json ",
            b"sg00/def.json ",
            b"0.125, ",
        ];
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            let k = (rnd() % (192 << 10)) as usize;
            match rnd() % 3 {
                0 => (0..k).for_each(|_| v.push(rnd() as u8)),
                1 => v.extend(std::iter::repeat_n(0u8, k * 4)),
                _ => {
                    while v.len() < n && k > 0 && v.len() % (k + 1) != 0 {
                        v.extend_from_slice(words[(rnd() % 5) as usize]);
                    }
                    v.extend_from_slice(words[(rnd() % 5) as usize]);
                }
            }
        }
        v
    }

    #[test]
    fn a_payload_read_through_a_map_as_it_lands_reads_only_bytes_that_landed() {
        // Shapes: one member; several with a named header and zero
        // padding after them; stored blocks alone; one large enough for
        // the engine's own plan of rounds.
        let a = mixed(3 << 20, 7);
        let mut several = gz(&a[..1 << 20], 6, Some("first.tar"));
        several.extend(gz(&a[1 << 20..2 << 20], 1, None));
        several.extend(gz(&a[2 << 20..], 9, Some("third")));
        several.extend(vec![0u8; 1000]);
        let noise: Vec<u8> = mixed(6 << 20, 3).iter().map(|b| b ^ 0x5a).collect();
        let big = mixed(40 << 20, 11);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("one member", gz(&a, 6, None)),
            ("several members", several),
            ("stored", gz(&noise, 0, None)),
            ("large", gz(&big, 1, None)),
        ];
        for (what, payload) in &cases {
            let want = neff_inflate::GzStream::new(payload, 1 << 34)
                .unwrap()
                .read_all()
                .0
                .unwrap();
            for fill in [0u8, 0xa5] {
                let plans: [Option<(usize, usize, Option<usize>)>; 3] = [
                    None,
                    Some((64 << 10, 8 << 20, None)),
                    Some((256 << 10, 8 << 20, Some(1 << 20))),
                ];
                for plan in plans {
                    let (landing, map) = lazy(payload, fill);
                    let input = |r: std::ops::Range<usize>| landing.wait(r);
                    let mut s = match plan {
                        None => crate::payload::stream(&map, 1 << 34, true, Some(&input)).unwrap(),
                        Some(p) => {
                            neff_inflate::GzStream::arriving_with(&map, 1 << 34, p, &input).unwrap()
                        }
                    };
                    let (got, doubt) = s.read_all();
                    let at = format!("{what}, fill {fill:#x}, plan {plan:?}");
                    assert!(!doubt, "{at}: doubtful");
                    assert!(got.unwrap() == want, "{at}: other bytes");
                    // Skipped (stored runs checksummed in place, the
                    // rounds' output unread), every trailer still checked.
                    let (landing, map) = lazy(payload, fill);
                    let input = |r: std::ops::Range<usize>| landing.wait(r);
                    let mut s = crate::payload::stream(&map, 1 << 34, true, Some(&input)).unwrap();
                    let n = s.finish(&mut vec![0u8; 1 << 16]).unwrap();
                    assert_eq!(n, want.len() as u64, "{at}: skipped");
                }
            }
        }
    }
}
