//! Removing the compile-cache entries a user selects: dry by default (the
//! plan and its bytes), exactly those entries with `apply`. An entry
//! holding a fresh lock (a compile in progress) is never selected, a link
//! is never followed out of the cache, and each entry is listed again just
//! before it goes: one that changed since it was judged is left alone.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::entry::{Listing, Quick, State};
use super::status::{version_order, CacheEntry, CacheStatus};

/// Which entries [`prune`] removes, and whether it does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneOptions {
    /// Failed compiles (`model.log`, no NEFF): replayed until removed.
    pub failed: bool,
    /// Entries whose NEFF is refused, or missing beside `model.done`.
    pub corrupt: bool,
    /// Locked entries whose newest lock is at least this old (a compile
    /// that died holding it). Entries holding a younger lock are never
    /// removed; without this, no entry holding a lock is.
    pub locked_older_than: Option<Duration>,
    /// Incomplete entries (a NEFF without `model.done`, no lock) untouched
    /// for at least this long.
    pub incomplete_older_than: Option<Duration>,
    /// Every entry of compiler versions older than the newest `N`.
    pub keep_versions: Option<usize>,
    /// Remove the selected entries (else only say which they are).
    pub apply: bool,
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

    /// Selects every entry of all but the newest `n` compiler versions.
    #[must_use]
    pub fn keep_versions(mut self, n: usize) -> Self {
        self.keep_versions = Some(n);
        self
    }

    /// Removes what is selected (else a dry run).
    #[must_use]
    pub fn apply(mut self, yes: bool) -> Self {
        self.apply = yes;
        self
    }

    /// Whether any selector is set.
    pub fn selects_any(&self) -> bool {
        self.failed
            || self.corrupt
            || self.locked_older_than.is_some()
            || self.incomplete_older_than.is_some()
            || self.keep_versions.is_some()
    }
}

/// One entry [`prune`] selected: why, and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Removal {
    /// The entry's directory.
    pub path: String,
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
    /// Why it was left although selected, or why removing it failed.
    pub error: Option<String>,
}

/// The entries of `status` (a cache at `root`) that `opts` selects, in
/// order; removed when `opts.apply`. A removal that fails, or an entry left
/// because it changed since it was judged or sits behind a link, carries
/// its reason in [`Removal::error`].
pub fn prune(root: &Path, status: &CacheStatus, opts: &PruneOptions) -> Vec<Removal> {
    let mut versions: Vec<&str> = status
        .entries
        .iter()
        .filter_map(|e| e.compiler.as_deref())
        .collect();
    versions.sort_by(|a, b| version_order(Some(b), Some(a)));
    versions.dedup();
    let kept: &[&str] = match opts.keep_versions {
        Some(n) => &versions[..n.min(versions.len())],
        None => &versions,
    };
    let mut out = Vec::new();
    for e in &status.entries {
        let Some(why) = selected(e, opts, kept) else {
            continue;
        };
        let mut r = Removal {
            path: e.path.clone(),
            compiler: e.compiler.clone(),
            state: e.state,
            bytes: e.bytes,
            why,
            removed: false,
            error: None,
        };
        if opts.apply {
            match remove(root, e, opts) {
                Ok(()) => r.removed = true,
                Err(why) => r.error = Some(why),
            }
        }
        out.push(r);
    }
    out
}

/// Why `opts` selects `e` (`None`: it does not). `kept` are the compiler
/// versions kept.
fn selected(e: &CacheEntry, opts: &PruneOptions, kept: &[&str]) -> Option<String> {
    if fresh_lock(e.lock_age_s, opts) {
        return None;
    }
    let secs = |d: Duration| d.as_secs();
    match e.state {
        State::Failed if opts.failed => return Some("failed compile".into()),
        State::Corrupt if opts.corrupt => return Some("corrupt".into()),
        State::Locked => {
            if let (Some(d), Some(age)) = (opts.locked_older_than, e.lock_age_s) {
                if age >= secs(d) {
                    return Some(format!("lock older than {}", super::entry::human(d)));
                }
            }
        }
        State::Incomplete => {
            if let (Some(d), Some(age)) = (opts.incomplete_older_than, e.age_s) {
                if age >= secs(d) {
                    return Some(format!(
                        "incomplete, untouched for {}",
                        super::entry::human(d)
                    ));
                }
            }
        }
        _ => {}
    }
    match (opts.keep_versions, e.compiler.as_deref()) {
        (Some(n), Some(v)) if !kept.contains(&v) => {
            Some(format!("compiler {v} is not among the {n} newest versions"))
        }
        _ => None,
    }
}

/// Whether a lock of this age (`None`: no lock) is fresh: younger than
/// `--locked-older-than`, or any lock when that is not given.
fn fresh_lock(lock_age_s: Option<u64>, opts: &PruneOptions) -> bool {
    match (lock_age_s, opts.locked_older_than) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(age), Some(d)) => age < d.as_secs(),
    }
}

/// Removes the entry `e` of the cache at `root`, after checking that no
/// link stands between the root and it and that it is as it was judged.
fn remove(root: &Path, e: &CacheEntry, opts: &PruneOptions) -> Result<(), String> {
    // As it stands now: no fresh lock, the state it was judged in.
    let unchanged = |now: &Listing| -> Result<(), String> {
        let lock_age = now.newest_lock().map(|t| {
            std::time::SystemTime::now()
                .duration_since(t)
                .unwrap_or_default()
                .as_secs()
        });
        if fresh_lock(lock_age, opts) {
            return Err(
                "a fresh lock appeared since it was judged (a compile in progress): left".into(),
            );
        }
        if !same_quick(e.state, now.quick()) {
            return Err("changed since it was judged: left".into());
        }
        Ok(())
    };
    #[cfg(feature = "remote")]
    if let Some(url) = root.to_str().filter(|r| crate::remote::is_url(r)) {
        let base = format!("{}/", url.trim_end_matches('/'));
        if !e.path.starts_with(&base) {
            return Err("outside the cache root: left".into());
        }
        return super::bucket::remove(&e.path, unchanged);
    }
    let dir = Path::new(&e.path);
    let rel = dir
        .strip_prefix(root)
        .map_err(|_| "outside the cache root: left".to_string())?;
    let mut at = root.to_path_buf();
    for c in rel.components() {
        let std::path::Component::Normal(c) = c else {
            return Err("not a plain path under the root: left".into());
        };
        at.push(c);
        let meta = at.symlink_metadata().map_err(|e| e.to_string())?;
        if meta.file_type().is_symlink() {
            return Err(format!("{} is a link: not followed", at.display()));
        }
    }
    unchanged(&Listing::of(dir).map_err(|e| e.to_string())?)?;
    std::fs::remove_dir_all(dir).map_err(|e| e.to_string())
}

/// Whether a listing taken now gives the state an entry was judged in.
fn same_quick(was: State, now: Quick) -> bool {
    match was {
        State::Ok => now == Quick::Whole,
        State::Corrupt => matches!(now, Quick::Whole | Quick::NoNeff),
        State::Failed => now == Quick::Failed,
        State::Locked => now == Quick::Locked,
        State::Incomplete => now == Quick::Incomplete,
        State::Empty => now == Quick::Empty,
    }
}
