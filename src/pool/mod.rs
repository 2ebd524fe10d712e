//! Where the library's work runs, sized by one setting: the worker count
//! ([`set_threads`]; the machine's cores by default) that a scan's and a
//! catalogue's pools, rayon's global pool (`neff mem`, the whole-payload
//! split) and the remote I/O runtime all take. A scan's pool counts the
//! files its workers read ([`Job`]), so that a large payload read beside
//! idle workers inflates on them ([`idle_threads`]); short-lived helper
//! threads are pinned to another CPU ([`helper_cpu`], [`spawn_on`]).
//!
//! Nothing here knows a NEFF: the pools run whatever their callers give.

mod helper;

use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use helper::{helper_cpu, spawn_on};

/// The worker count set by [`set_threads`] (0: the machine's cores).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the one worker count every pool of the library takes: a scan's
/// and a catalogue's workers (unless their `jobs` says otherwise), rayon's
/// global pool (when it has not started yet) and the remote I/O runtime
/// (when it has not started yet). `0`: one per core, the default. The
/// `neff` binary sets it from `-j/--threads`.
pub fn set_threads(n: usize) {
    THREADS.store(n, Ordering::Relaxed);
    // Already started (a caller's own global pool): left as it is.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
}

/// The worker count: [`set_threads`]'s, else the machine's cores.
pub(crate) fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Remote requests a scan keeps in flight ([`set_io_depth`]; 0: the default).
static IO_DEPTH: AtomicUsize = AtomicUsize::new(0);

/// How many remote objects a scan reads at once unless [`set_io_depth`] says otherwise.
pub const DEFAULT_IO_DEPTH: usize = 32;

/// Sets how many remote objects a scan reads at once (`neff --io-depth`):
/// its workers wait on the network, not on a core, so a scan of URLs runs
/// at least this many of them, whatever the worker count. `0`: the
/// default, [`DEFAULT_IO_DEPTH`].
pub fn set_io_depth(n: usize) {
    IO_DEPTH.store(n, Ordering::Relaxed);
}

/// The remote objects a scan reads at once.
pub(crate) fn io_depth() -> usize {
    match IO_DEPTH.load(Ordering::Relaxed) {
        0 => DEFAULT_IO_DEPTH,
        n => n,
    }
}

/// `jobs` workers, or the worker count when `jobs` is 0.
pub(crate) fn workers(jobs: usize) -> usize {
    if jobs == 0 {
        threads()
    } else {
        jobs
    }
}

/// Files being read by the workers of a pool made by [`counting_pool`]
/// (a scan's): see [`idle_threads`].
type InFlight = std::sync::Arc<AtomicUsize>;

thread_local! {
    /// On a worker of a [`counting_pool`], that pool's files in flight.
    static IN_FLIGHT: std::cell::OnceCell<InFlight> = const { std::cell::OnceCell::new() };
}

/// A pool of [`workers`]`(jobs)` threads that count the files they read
/// ([`Job`]), so that a large payload read on one of them knows whether
/// another worker is idle ([`idle_threads`]).
pub(crate) fn counting_pool(
    jobs: usize,
) -> std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    counting_pool_of(workers(jobs))
}

/// A [`counting_pool`] for reading remote objects: [`workers`]`(jobs)`
/// threads, and at least [`io_depth`] (each waits on its requests).
pub(crate) fn remote_pool(
    jobs: usize,
) -> std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    counting_pool_of(workers(jobs).max(io_depth()))
}

fn counting_pool_of(
    n: usize,
) -> std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let count = InFlight::default();
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("neff-worker-{i}"))
        .start_handler(move |_| {
            IN_FLIGHT.with(|c| {
                c.get_or_init(|| count.clone());
            });
        })
        .build()
}

/// Held by a worker of a [`counting_pool`] while it reads one file
/// ([`Job::start`]); elsewhere it counts nothing.
#[derive(Debug)]
pub(crate) struct Job(Option<InFlight>);

impl Job {
    /// Counts one more file in flight in this worker's pool until the
    /// guard is dropped.
    pub(crate) fn start() -> Job {
        let count = IN_FLIGHT.with(|c| c.get().cloned());
        if let Some(c) = &count {
            c.fetch_add(1, Ordering::Relaxed);
        }
        Job(count)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The threads a read may use now, its own included (a second one is
/// free when this is 2 or more). Outside any pool: the global pool's. On
/// a [`counting_pool`]'s worker: its own and the idle workers' (a scan of
/// a directory holding one big NEFF, or the tail of a zoo: the idle
/// workers steal the rest of each `rayon::join`; a scan whose every
/// worker reads a file gives each one). On a worker of any other pool
/// (`neff mem`'s, a caller's), one: it is taken to be as busy as its pool.
pub(crate) fn idle_threads() -> usize {
    let threads = rayon::current_num_threads();
    if rayon::current_thread_index().is_none() {
        return threads;
    }
    IN_FLIGHT
        .with(|c| {
            c.get()
                .map_or(1, |c| threads.saturating_sub(c.load(Ordering::Relaxed)) + 1)
        })
        .min(threads)
}

/// Whether this thread is a worker of a [`counting_pool`] (a scan's)
/// whose every other worker is reading a file: no thread to spare for a
/// large payload's parallel rounds now. On any other thread, false (a
/// caller's own pool says nothing of how busy it is).
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(crate) fn saturated() -> bool {
    rayon::current_thread_index().is_some()
        && IN_FLIGHT.with(|c| c.get().is_some())
        && idle_threads() < 2
}

/// The runtime remote requests run on, one for the process: as many
/// workers as the worker count, at most four (they wait on the network,
/// not on a core), at least two.
#[cfg(feature = "remote")]
pub(crate) fn io_runtime() -> std::result::Result<&'static tokio::runtime::Runtime, String> {
    static RT: std::sync::OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads().clamp(2, 4))
            .thread_name("neff-remote")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_of_zero_take_the_worker_count() {
        assert_eq!(workers(3), 3);
        assert!(workers(0) >= 1);
        assert_eq!(workers(0), threads());
    }

    #[test]
    fn a_pool_worker_has_a_free_core_only_while_fewer_files_than_workers_are_read() {
        let pool = counting_pool(2).unwrap();
        pool.install(|| {
            let _a = Job::start();
            assert_eq!(idle_threads(), 2, "one file in flight on two workers");
            let _b = Job::start();
            assert_eq!(idle_threads(), 1, "two files in flight on two workers");
        });
        pool.install(|| assert_eq!(idle_threads(), 2, "the jobs ended"));
        assert!(
            !counting_pool(1).unwrap().install(|| idle_threads() >= 2),
            "a one-thread pool"
        );
    }

    #[test]
    fn only_a_counting_pools_worker_with_every_other_worker_busy_is_saturated() {
        let pool = counting_pool(2).unwrap();
        pool.install(|| {
            let _a = Job::start();
            assert!(!saturated(), "one file in flight on two workers");
            let _b = Job::start();
            assert!(saturated(), "two files in flight on two workers");
        });
        // Off a counting pool nothing is known of how busy the threads are.
        assert!(!saturated(), "the caller's thread");
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert!(!other.install(saturated), "a pool that does not count");
    }

    #[test]
    fn a_worker_of_a_pool_that_does_not_count_is_never_free() {
        // `neff mem` reads its files on the global pool: every worker may be
        // reading one, so none inflates on a second core.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(!pool.install(|| idle_threads() >= 2));
        assert!(!pool.install(|| {
            let _a = Job::start();
            idle_threads() >= 2
        }));
    }
}
