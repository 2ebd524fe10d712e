//! Reading what was found, in parallel: the pools (counting, so that a
//! large payload's inflate knows the idle workers), a bucket prefix read
//! while it is listed, and what the listings have seen so far.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::reader::Scratch;

use super::options::*;
use super::record::*;

/// Scans `paths` on a pool of `opts.jobs` threads, calling `emit` with each
/// record as it is made (from the worker threads; `emit` serializes).
pub fn scan(paths: &[PathBuf], opts: &ScanOptions, emit: &(dyn Fn(Record) + Sync)) -> Result<()> {
    scan_with(
        paths,
        opts.jobs,
        &|p, scratch| record_with(p, opts, scratch, None, |_| ()).0,
        emit,
    )
}

/// [`scan`] with the per-file work given: `work` runs on a pool of `jobs`
/// threads (each reusing one [`Scratch`]), `emit` gets each result as it
/// is made. The index uses it to read a file's rows along with its record.
pub(crate) fn scan_with<T: Send>(
    paths: &[PathBuf],
    jobs: usize,
    work: &(dyn Fn(&Path, &mut Scratch) -> T + Sync),
    emit: &(dyn Fn(T) + Sync),
) -> Result<()> {
    use rayon::prelude::*;
    let pool = pool_for(paths.iter().any(|p| is_url(p)), jobs)?;
    pool.install(|| {
        paths
            .par_iter()
            .for_each_init(Scratch::default, |scratch, p| {
                emit(counted(|| work(p, scratch)))
            });
    });
    Ok(())
}

/// Whether `p` names a remote object or prefix.
#[cfg(feature = "remote")]
pub(super) fn is_url(p: &Path) -> bool {
    p.to_str().is_some_and(crate::remote::is_url)
}

/// Whether `p` names a remote object or prefix: never, in a build
/// without remote I/O.
#[cfg(not(feature = "remote"))]
pub(super) fn is_url(_: &Path) -> bool {
    false
}

/// The pool a scan reads on: `jobs` workers, or for remote objects more
/// workers than cores, each waiting on its requests (`--io-depth`).
pub(super) fn pool_for(remote: bool, jobs: usize) -> Result<rayon::ThreadPool> {
    if remote {
        crate::pool::remote_pool(jobs)
    } else {
        crate::pool::counting_pool(jobs)
    }
    .map_err(|e| Error::usage(format!("cannot start {jobs} workers: {e}")))
}

/// Runs one file's work counted in flight, so that a big payload read
/// while other workers are idle uses them for its inflate.
pub(super) fn counted<T>(work: impl FnOnce() -> T) -> T {
    let _job = crate::pool::Job::start();
    work()
}

/// The roots split into the bucket or repository prefixes to read while
/// they are listed, and the rest (local roots, single objects), when there
/// is any such prefix and the scan is not sharded (a shard is a slice of
/// the sorted whole, so it lists everything first).
#[cfg_attr(not(any(feature = "remote", feature = "catalog")), allow(dead_code))]
pub(crate) fn streamed_prefixes(
    roots: &[PathBuf],
    opts: &ScanOptions,
) -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
    #[cfg(feature = "remote")]
    {
        let prefix = |r: &PathBuf| {
            r.to_str().is_some_and(|u| {
                crate::remote::is_url(u) && !u.ends_with(".neff") && crate::remote::is_listable(u)
            })
        };
        if opts.shard.is_none() && roots.iter().any(prefix) {
            return Some(roots.iter().cloned().partition(prefix));
        }
    }
    let _ = (roots, opts);
    None
}
