//! Reading what was found, in parallel: the pools (counting, so that a large payload's inflate knows the idle
//! workers), and a list read in path order a window at a time.

use std::path::Path;

use crate::error::{Error, Result};
use crate::reader::Scratch;
use crate::source::Source;

use super::options::*;
use super::record::*;

/// Scans `paths` on a pool of `opts.jobs` threads, calling `emit` with each
/// record as it is made (from the worker threads; `emit` serializes).
pub fn scan(
    paths: &[impl Clone + Into<Source>],
    opts: &ScanOptions,
    emit: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    let sources = crate::source::all_of(paths);
    scan_with(
        &sources,
        opts.jobs,
        &|p, scratch| record_with(p, opts, scratch, None, |_| ()).0,
        emit,
    )
}

/// [`scan`] with the per-file work given: `work` runs on a pool of `jobs`
/// threads (each reusing one [`Scratch`]), `emit` gets each result as it
/// is made. The index uses it to read a file's rows along with its record.
pub(super) fn scan_with<T: Send>(
    paths: &[Source],
    jobs: usize,
    work: &(dyn Fn(&Source, &mut Scratch) -> T + Sync),
    emit: &(dyn Fn(T) + Sync),
) -> Result<()> {
    use rayon::prelude::*;
    let pool = pool_for(paths.iter().any(Source::is_remote), jobs)?;
    pool.install(|| {
        paths
            .par_iter()
            .for_each_init(Scratch::default, |scratch, p| {
                emit(counted(|| work(p, scratch)))
            });
    });
    Ok(())
}

/// [`scan_with`], results handed on in the order of `paths`, with
/// `errors` (records, sorted by path) among them where their paths fall
/// (before a result of the same path): `paths` is read a window at a
/// time, in parallel, so that at most a window of results is held.
/// `paths` must be sorted as their records' paths are ([`by_shown`]).
pub(super) fn scan_ordered<T: Send>(
    paths: &[Source],
    mut errors: Vec<Record>,
    jobs: usize,
    work: &(dyn Fn(&Source, &mut Scratch) -> T + Sync),
    emit: &(dyn Fn(T) + Sync),
    fail: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    use rayon::prelude::*;
    let pool = pool_for(paths.iter().any(Source::is_remote), jobs)?;
    let window = pool.current_num_threads().saturating_mul(64).max(1024);
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    let mut errors = errors.into_iter().peekable();
    for part in paths.chunks(window) {
        let done: Vec<T> = pool.install(|| {
            part.par_iter()
                .map_init(Scratch::default, |scratch, p| counted(|| work(p, scratch)))
                .collect()
        });
        for (p, t) in part.iter().zip(done) {
            // (A path is shown as a string only while errors wait.)
            if errors.peek().is_some() {
                let shown = p.shown();
                while let Some(e) = errors.next_if(|e| e.path <= shown) {
                    fail(e);
                }
            }
            emit(t);
        }
    }
    errors.for_each(fail);
    Ok(())
}

/// `paths` sorted as their records' paths sort: by [`Record::path`]'s
/// bytes (how a path is shown), not by components.
pub(super) fn by_shown(paths: &mut [Source]) {
    // A UTF-8 path that is not a URL shows as itself: compared in place
    // (no string made per path); the others as they show. Either way the
    // order is that of the shown strings.
    fn plain(p: &Source) -> Option<&str> {
        p.local_path().and_then(Path::to_str)
    }
    paths.sort_by(|a, b| match (plain(a), plain(b)) {
        (Some(x), Some(y)) => x.cmp(y),
        _ => a.shown().cmp(&b.shown()),
    });
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
