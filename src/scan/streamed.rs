//! A scan read while its walk goes on: each NEFF (each compile-cache
//! entry, once walked whole) handed to the readers as the walk finds it,
//! in batches through a queue of bounded length ([`super::handoff`]); the
//! walk keeps nothing per file.

use crate::cache::Met;
use crate::error::Result;
use crate::reader::Scratch;
use crate::source::Source;

use super::handoff::{Handoff, Pace};
use super::options::*;
use super::record::*;
use super::run::{counted, pool_for};
use super::walk::{Find, Kept};

/// How many things a streamed walk may have found ahead of the readers.
const AHEAD: usize = 1024;

/// What a streamed scan does with one thing found: its path, what the walk
/// met of its compile-cache entry, whether its path goes through a link
/// the walk followed, the worker's scratch.
pub(super) type Visit<'a, T> = dyn Fn(&Source, Option<Met>, bool, &mut Scratch) -> T + Sync + 'a;

/// Runs `visit` on each thing a walk of `roots` finds (its path, what the
/// walk met of its compile-cache entry, whether its path goes through a
/// link the walk followed) as soon as it is found, on a pool of
/// `opts.jobs` threads, and `done` on what it made; walk errors go to
/// `fail`, `listed(1)` is told of each thing found. With `places`, the
/// walk notes where it looked (what a catalogue retires rows by) and
/// returns it.
pub(super) fn stream_with<T: Send>(
    roots: &[Source],
    opts: &ScanOptions,
    places: bool,
    listed: &(dyn Fn(usize) + Sync),
    fail: &(dyn Fn(Record) + Sync),
    visit: &Visit<'_, T>,
    done: &(dyn Fn(T) + Sync),
) -> Result<Kept> {
    use rayon::iter::{ParallelBridge, ParallelIterator};
    let pace = Pace::default();
    let (to, rx) = Handoff::new(AHEAD, &pace);
    let pool = pool_for(roots.iter().any(Source::is_remote), opts.jobs)?;
    std::thread::scope(|scope| {
        // The walk owns its end of the queue: the queue ends with the walk.
        let walker =
            scope.spawn(move || super::walk::stream(roots, &opts.walk, places, to, listed, fail));
        // The readers stopping, by their end or by a panic, lets a walk
        // waiting for room in the queue go on (and end).
        let stopped = Stopped(&pace);
        pool.install(|| {
            rx.into_iter().par_bridge().for_each_init(
                Scratch::default,
                |scratch, batch: Vec<Find>| {
                    pace.taken(batch.len());
                    for (p, met, linked) in batch {
                        let t0 = std::time::Instant::now();
                        done(counted(|| visit(&p, met, linked, scratch)));
                        pace.took(t0.elapsed());
                    }
                },
            );
        });
        drop(stopped);
        walker.join().expect("the walk does not panic")
    })
}

/// Tells the walk the readers have stopped, when dropped.
struct Stopped<'p>(&'p Pace);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}
