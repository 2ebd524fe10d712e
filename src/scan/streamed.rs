//! A scan read while its walk goes on: each NEFF (each compile-cache
//! entry, once walked whole) handed to the readers as the walk finds it,
//! through a queue of bounded length; the walk keeps nothing per file.

use std::path::PathBuf;

use crate::error::Result;
use crate::reader::Scratch;

use super::options::*;
use super::record::*;
use super::run::{counted, pool_for};

/// How many things a streamed walk may have found ahead of the readers.
const AHEAD: usize = 1024;

/// Scans what a walk of `roots` finds, each thing read as soon as it is
/// found ([`super::walk::stream`]) on a pool of `opts.jobs` threads: the
/// first record comes after the first directories, not the whole walk,
/// and nothing is kept per file.
pub(super) fn scan(
    roots: &[PathBuf],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    use rayon::iter::{ParallelBridge, ParallelIterator};
    let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
    let pool = pool_for(roots.iter().any(|p| is_url(p)), opts.jobs)?;
    std::thread::scope(|scope| {
        let walker = scope.spawn(|| super::walk::stream(roots, &opts.walk, tx, listed, emit));
        pool.install(|| {
            rx.into_iter()
                .par_bridge()
                .for_each_init(Scratch::default, |scratch, (p, met)| {
                    emit(counted(|| record_with(&p, opts, scratch, met, |_| ()).0))
                });
        });
        walker.join().expect("the walk does not panic")
    })
}
