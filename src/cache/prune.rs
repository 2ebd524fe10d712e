//! Removing the compile-cache entries a user selects: dry by default,
//! exactly those entries with `apply`. The dry run and `apply` run the
//! same checks on each entry (reached from the root by descriptors, no
//! link or mount on the way, judged again now in the state it was
//! selected in, no fresh or held lock, nothing in it changed within
//! `--min-age`): a dry run says what `apply` will do. No entry is selected
//! whose state is not certain (`unreadable`, `unknown`), nor one holding a
//! fresh lock or one a live process holds.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::entry::State;
use super::era;
use super::found::{lossy, spelled};
use super::status::{CacheEntry, CacheStatus};
use super::time::human_bytes;
use crate::error::{Error, Result};

/// The `--min-age` a prune keeps by default: an hour. A compile writes its
/// log and lock as it runs and a copy writes file after file, so an entry
/// still being written has changed well within it; a failed compile an hour
/// old is still removed by an hourly prune.
pub const DEFAULT_MIN_AGE: Duration = Duration::from_secs(3600);

/// Which entries [`prune`] removes, and whether it does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneOptions {
    /// Failed compiles (`model.log`, no NEFF or a placeholder): replayed
    /// until removed.
    pub failed: bool,
    /// Entries whose NEFF is refused, or missing beside `model.done`.
    pub corrupt: bool,
    /// Locked entries whose newest lock is at least this old (a compile
    /// that died holding it). Entries holding a younger lock are never
    /// removed; without this, no entry holding a lock is. Refused while a
    /// `neuronx-cc` process runs on the host.
    pub locked_older_than: Option<Duration>,
    /// Incomplete entries (a NEFF without `model.done`, no lock) untouched
    /// for at least this long.
    pub incomplete_older_than: Option<Duration>,
    /// Every entry of compiler releases older than the newest `N` (at
    /// least 1; builds of one release count as one).
    pub keep_versions: Option<usize>,
    /// `ok` entries, least recently used first, until the cache's entries
    /// hold at most this many bytes.
    pub max_size: Option<u64>,
    /// With `max_size`: entries of the newest compiler release may go too.
    pub include_current: bool,
    /// Remove the selected entries (else only say which they are).
    pub apply: bool,
    /// No selector removes an entry anything in which changed (the later
    /// of modification and change time, temporary files included) within
    /// this long ([`DEFAULT_MIN_AGE`]; `None` or zero: off).
    pub min_age: Option<Duration>,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            failed: false,
            corrupt: false,
            locked_older_than: None,
            incomplete_older_than: None,
            keep_versions: None,
            max_size: None,
            include_current: false,
            apply: false,
            min_age: Some(DEFAULT_MIN_AGE),
        }
    }
}

impl PruneOptions {
    /// Selects failed compiles.
    #[must_use]
    pub fn failed(mut self, yes: bool) -> Self {
        self.failed = yes;
        self
    }

    /// Selects corrupt entries.
    #[must_use]
    pub fn corrupt(mut self, yes: bool) -> Self {
        self.corrupt = yes;
        self
    }

    /// Selects locked entries whose lock is at least `age` old.
    #[must_use]
    pub fn locked_older_than(mut self, age: Duration) -> Self {
        self.locked_older_than = Some(age);
        self
    }

    /// Selects incomplete entries untouched for at least `age`.
    #[must_use]
    pub fn incomplete_older_than(mut self, age: Duration) -> Self {
        self.incomplete_older_than = Some(age);
        self
    }

    /// Selects every entry of all but the newest `n` compiler releases.
    #[must_use]
    pub fn keep_versions(mut self, n: usize) -> Self {
        self.keep_versions = Some(n);
        self
    }

    /// Selects `ok` entries, least recently used first, until the cache
    /// holds at most `bytes`.
    #[must_use]
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    /// Lets `max_size` take entries of the newest compiler release too.
    #[must_use]
    pub fn include_current(mut self, yes: bool) -> Self {
        self.include_current = yes;
        self
    }

    /// Removes what is selected (else a dry run).
    #[must_use]
    pub fn apply(mut self, yes: bool) -> Self {
        self.apply = yes;
        self
    }

    /// Keeps every entry that changed within `age` (zero: none kept for
    /// its age).
    #[must_use]
    pub fn min_age(mut self, age: Duration) -> Self {
        self.min_age = (!age.is_zero()).then_some(age);
        self
    }

    /// Whether `e` changed within `--min-age` of `now` (an entry whose
    /// change time is not known counts as young).
    fn young(&self, e: &CacheEntry, now: SystemTime) -> Option<String> {
        let d = self.min_age?;
        match e.changed {
            Some(t) if since(now, t) >= d => None,
            // The time, not the age: two dry runs print the same record.
            Some(t) => Some(format!(
                "changed {}, within --min-age {}",
                super::time::rfc3339(t),
                humantime::format_duration(d)
            )),
            None => Some(format!(
                "its change time is not known: kept by --min-age {}",
                humantime::format_duration(d)
            )),
        }
    }

    /// Whether any selector is set.
    pub fn selects_any(&self) -> bool {
        self.failed
            || self.corrupt
            || self.locked_older_than.is_some()
            || self.incomplete_older_than.is_some()
            || self.keep_versions.is_some()
            || self.max_size.is_some()
    }

    /// The options' own errors: no selector, `keep_versions` 0 (every
    /// entry), `include_current` without `max_size`.
    pub fn check(&self) -> Result<()> {
        let usage = |reason: &str| {
            Err(Error::Usage {
                reason: reason.into(),
            })
        };
        if !self.selects_any() {
            return usage(
                "nothing selected: give --failed, --corrupt, --locked-older-than, \
                 --incomplete-older-than, --keep-versions or --max-size",
            );
        }
        if self.keep_versions == Some(0) {
            return usage("--keep-versions 0 would select every entry: keep at least 1");
        }
        if self.include_current && self.max_size.is_none() {
            return usage("--include-current goes with --max-size");
        }
        Ok(())
    }
}

/// One entry [`prune`] selected: why, and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Removal {
    /// The entry's directory, by the bytes it was judged under (JSON
    /// spells it as [`CacheEntry::path`] does).
    #[serde(serialize_with = "lossy")]
    pub path: std::path::PathBuf,
    /// The path's bytes in base64 when they are not UTF-8.
    pub path_bytes: Option<String>,
    /// Its compiler version.
    pub compiler: Option<String>,
    /// Its state when judged.
    pub state: State,
    /// Its bytes.
    pub bytes: u64,
    /// Which selector chose it.
    pub why: String,
    /// Whether it was removed (never in a dry run).
    pub removed: bool,
    /// Why it is (or, dry, would be) left although selected, or why
    /// removing it failed; `None`: it went (or, dry, would go).
    pub error: Option<String>,
    /// Why the options keep it although a selector chose it (it changed
    /// within `--min-age`): not an error, and never removed.
    pub kept: Option<String>,
    /// Whether it was already gone when its turn came (another prune
    /// removed it): not an error.
    pub gone: bool,
}

impl Removal {
    /// Whether it was left although it should have gone: not removed (or,
    /// dry, not to be), not kept by the options, not already gone.
    pub fn is_left(&self) -> bool {
        self.error.is_some()
    }
}

/// What [`prune`] did, or would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// Every entry a selector chose, in order: removed (or to be), kept,
    /// left, or already gone.
    pub removals: Vec<Removal>,
    /// With `max_size`: why the cache stays above it, when it does (what
    /// holds the rest of the bytes).
    pub short: Option<String>,
}

/// The entries of `status` (a cache at `root`) that `opts` selects, in
/// order; removed when `opts.apply`. Each is checked as `apply` would
/// check it, dry or not; one left (it changed since it was judged, it sits
/// behind a link or a mount, a live process holds its lock, its removal
/// failed) carries why in [`Removal::error`], one `--min-age` keeps carries
/// why in [`Removal::kept`]. With `apply`, two prunes of one cache take
/// turns (a lock on the root directory itself: nothing is written), and an
/// entry the other removed first is [`Removal::gone`].
/// `Err` for options that select nothing or everything, for a root that
/// is `/` or the user's home directory, and for `--locked-older-than`
/// while a `neuronx-cc` process runs.
pub fn prune(root: &Path, status: &CacheStatus, opts: &PruneOptions) -> Result<Pruned> {
    opts.check()?;
    super::root::refuse_pruning(root)?;
    if opts.locked_older_than.is_some() {
        if let Some(pid) = super::host::running_compiler() {
            return Err(Error::refused(format!(
                "neuronx-cc is running (pid {pid}): locks are not judged stale while a compile \
                 may hold them; prune again once it has finished"
            )));
        }
    }
    let at = super::remove::At::open(root, opts.apply)?;
    let now = SystemTime::now();
    let releases = era::releases(status.entries.iter().filter_map(|e| e.compiler.as_deref()));
    let kept = |v: &str, n: usize| era::kept(&releases, v, n);
    let mut out = Vec::new();
    for e in &status.entries {
        if let Some(why) = selected(e, opts, now, &kept) {
            out.push(settle(&at, e, why, opts, now));
        }
    }
    let mut short = None;
    if let Some(max) = opts.max_size {
        short = evict(&at, status, opts, &releases, max, now, &mut out);
    }
    Ok(Pruned {
        removals: out,
        short,
    })
}

/// `--max-size`: `ok` entries, least recently used first, until the cache
/// holds at most `max` bytes; why it stays above, when it does.
fn evict(
    at: &super::remove::At,
    status: &CacheStatus,
    opts: &PruneOptions,
    releases: &[Vec<&str>],
    max: u64,
    now: SystemTime,
    out: &mut Vec<Removal>,
) -> Option<String> {
    let newest = releases.first().cloned().unwrap_or_default();
    // The newest release's entries, and those no version dates (vLLM's,
    // an unversioned root's, a version that cannot be ordered: as new as
    // can be told), stay unless --include-current.
    let current = |e: &CacheEntry| {
        e.compiler
            .as_deref()
            .is_none_or(|v| newest.contains(&v) || !era::orderable(v))
    };
    let clock = Clock::of(at.root());
    let total: u64 = status.entries.iter().map(|e| e.bytes).sum();
    let gone: u64 = out.iter().filter(|r| went(r)).map(|r| r.bytes).sum();
    let mut size = total.saturating_sub(gone);
    let mut lru: Vec<&CacheEntry> = status
        .entries
        .iter()
        .filter(|e| e.state == State::Ok && !fresh_lock(e, opts, now))
        .filter(|e| opts.include_current || !current(e))
        .filter(|e| opts.young(e, now).is_none())
        .filter(|e| !out.iter().any(|r| r.path == e.path))
        .collect();
    lru.sort_by_key(|e| (clock.used(e), e.path.clone()));
    for e in lru {
        if size <= max {
            break;
        }
        let when = clock
            .used(e)
            .map_or_else(|| "never".into(), super::time::rfc3339);
        let why = format!(
            "least recently used (last {} {when}): the cache is over --max-size",
            clock.verb()
        );
        let r = settle(at, e, why, opts, now);
        if went(&r) {
            size = size.saturating_sub(r.bytes);
        }
        out.push(r);
    }
    (size > max).then(|| short_of(status, opts, out, &current, size, max))
}

/// Whether `r` went (or, dry, would go), or was gone already.
fn went(r: &Removal) -> bool {
    r.error.is_none() && r.kept.is_none()
}

/// Why `--max-size` could not bring the cache to `max`: the bytes of what
/// it may not take, by reason.
fn short_of(
    status: &CacheStatus,
    opts: &PruneOptions,
    out: &[Removal],
    current: &dyn Fn(&CacheEntry) -> bool,
    size: u64,
    max: u64,
) -> String {
    let mut by: [(u64, &str); 5] = [
        (0, "the newest compiler release's, or no release dates them (--include-current lets them go)"),
        (0, "changed within --min-age"),
        (0, "left (see each)"),
        (0, "locked"),
        (0, "not ok (other selectors judge those)"),
    ];
    for e in &status.entries {
        let r = out.iter().find(|r| r.path == e.path);
        if r.is_some_and(went) {
            continue;
        }
        let i = match r {
            Some(r) if r.kept.is_some() => 1,
            Some(_) => 2,
            None if e.state != State::Ok => 4,
            None if e.lock_modified.is_some() => 3,
            None if !opts.include_current && current(e) => 0,
            None => 1,
        };
        by[i].0 += e.bytes;
    }
    let held: Vec<String> = by
        .iter()
        .filter(|(b, _)| *b > 0)
        .map(|(b, why)| format!("{} {why}", human_bytes(*b)))
        .collect();
    format!(
        "--max-size {} not reached: {} remain; of them {}",
        human_bytes(max),
        human_bytes(size),
        held.join(", ")
    )
}

/// The time `--max-size` evicts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// The NEFF's last access (a file system that keeps access times).
    Accessed,
    /// The NEFF's last modification (`noatime`, a bucket).
    Modified,
}

impl Clock {
    fn of(root: &Path) -> Clock {
        #[cfg(feature = "remote")]
        if super::root::url_of(root).is_some() {
            return Clock::Modified;
        }
        match super::host::keeps_atime(root) {
            Some(true) => Clock::Accessed,
            _ => Clock::Modified,
        }
    }

    fn used(self, e: &CacheEntry) -> Option<SystemTime> {
        let t = match self {
            Clock::Accessed => e.neff_accessed.or(e.neff_modified),
            Clock::Modified => e.neff_modified,
        };
        t.or(e.modified)
    }

    fn verb(self) -> &'static str {
        match self {
            Clock::Accessed => "read",
            Clock::Modified => "written",
        }
    }
}

/// Checks (and, with `apply`, removes) one selected entry; one that
/// changed within `--min-age` is kept.
fn settle(
    at: &super::remove::At,
    e: &CacheEntry,
    why: String,
    opts: &PruneOptions,
    now: SystemTime,
) -> Removal {
    let mut r = Removal {
        path: e.path.clone(),
        path_bytes: spelled(&e.path),
        compiler: e.compiler.clone(),
        state: e.state,
        bytes: e.bytes,
        why,
        removed: false,
        error: None,
        kept: opts.young(e, now),
        gone: false,
    };
    if r.kept.is_some() {
        return r;
    }
    // As it stands now: the state it was selected in, no fresh or held
    // lock, nothing changed within --min-age.
    let unchanged = |again: &CacheEntry| -> std::result::Result<(), String> {
        if let Some(held) = again.locks.iter().find_map(|l| super::host::lock_held(l)) {
            return Err(format!("{held}: left"));
        }
        if lock_is_fresh(again.lock_modified, opts, now) {
            return Err(
                "a fresh lock appeared since it was judged (a compile in progress): left".into(),
            );
        }
        if again.state != e.state {
            return Err(format!(
                "changed since it was judged (now {}): left",
                again.state
            ));
        }
        match opts.young(again, now) {
            Some(young) => Err(format!("{young}: left")),
            None => Ok(()),
        }
    };
    match at.remove(e, opts.apply, &unchanged) {
        Ok(super::remove::Outcome::Went) => r.removed = opts.apply,
        Ok(super::remove::Outcome::Gone) => r.gone = true,
        Err(why) => r.error = Some(why),
    }
    r
}

/// How long ago `t` was (zero for a time to come).
fn since(now: SystemTime, t: SystemTime) -> Duration {
    now.duration_since(t).unwrap_or_default()
}

/// Why `opts` selects `e` (`None`: it does not). `kept(v, n)`: whether
/// version `v` is among the newest `n` releases.
fn selected(
    e: &CacheEntry,
    opts: &PruneOptions,
    now: SystemTime,
    kept: &dyn Fn(&str, usize) -> bool,
) -> Option<String> {
    if !e.state.is_judged() || fresh_lock(e, opts, now) {
        return None;
    }
    match e.state {
        State::Failed if opts.failed => return Some("failed compile".into()),
        State::Corrupt if opts.corrupt => return Some("corrupt".into()),
        State::Locked => {
            if let (Some(d), Some(t)) = (opts.locked_older_than, e.lock_modified) {
                if since(now, t) >= d {
                    return Some(format!("lock older than {}", humantime::format_duration(d)));
                }
            }
        }
        State::Incomplete => {
            if let (Some(d), Some(t)) = (opts.incomplete_older_than, e.changed) {
                if since(now, t) >= d {
                    return Some(format!(
                        "incomplete, untouched for {}",
                        humantime::format_duration(d)
                    ));
                }
            }
        }
        _ => {}
    }
    match (opts.keep_versions, e.compiler.as_deref()) {
        (Some(n), Some(v)) if !kept(v, n) => {
            Some(format!("compiler {v} is not among the {n} newest releases"))
        }
        _ => None,
    }
}

/// Whether the entry holds a fresh lock: younger than
/// `--locked-older-than`, or any lock when that is not given, or one a
/// live process holds whatever its age.
fn fresh_lock(e: &CacheEntry, opts: &PruneOptions, now: SystemTime) -> bool {
    lock_is_fresh(e.lock_modified, opts, now)
        || e.locks.iter().any(|l| super::host::lock_held(l).is_some())
}

/// [`fresh_lock`] for a lock last modified at `t` (`None`: no lock).
fn lock_is_fresh(t: Option<SystemTime>, opts: &PruneOptions, now: SystemTime) -> bool {
    match (t, opts.locked_older_than) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(t), Some(d)) => since(now, t) < d,
    }
}
