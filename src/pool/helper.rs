//! Short-lived helper threads, placed on a CPU other than the caller's.
//!
//! Linux starts a new thread on its parent's CPU and leaves it there until
//! the load balancer next runs, which on a small VM was measured at 4–12 ms:
//! longer than the whole job a helper is spawned for (a two-thread skim of a
//! 20 MB def.json takes ~8 ms). So a helper pins itself to another CPU of
//! the process's affinity set before it starts work. With only one CPU
//! allowed, [`helper_cpu`] says so and callers stay on one thread.

use std::thread::{Scope, ScopedJoinHandle};

use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};

/// A CPU the caller may use other than the one it is running on, if any:
/// the next allowed one after it, so that helpers of callers spread over a
/// large machine spread too (rather than all landing on CPU 0).
pub fn helper_cpu() -> Option<usize> {
    let allowed = sched_getaffinity(None).ok()?;
    let here = sched_getcpu();
    (1..CpuSet::MAX_CPU)
        .map(|step| (here + step) % CpuSet::MAX_CPU)
        .find(|&c| allowed.is_set(c))
}

/// Spawns `f` on `scope`, pinned to `cpu` (as [`helper_cpu`] chose); `None`
/// if the system refuses a thread (the caller then does the work itself).
/// If the pin is refused, the thread runs wherever the scheduler puts it.
pub fn spawn_on<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    cpu: usize,
    f: F,
) -> Option<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    std::thread::Builder::new()
        .name("neff-helper".into())
        .spawn_scoped(scope, move || {
            let mut set = CpuSet::new();
            set.set(cpu);
            let _ = sched_setaffinity(None, &set);
            f()
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_runs_on_the_cpu_it_was_given() {
        let Some(cpu) = helper_cpu() else {
            return; // one CPU allowed: nothing to place
        };
        let ran_on =
            std::thread::scope(|s| spawn_on(s, cpu, sched_getcpu).unwrap().join().unwrap());
        assert_eq!(ran_on, cpu);
    }
}
