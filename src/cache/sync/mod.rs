//! `neff cache sync SRC DST`: every entry judged `ok` at the source that
//! the destination lacks, copied so that no reader of the destination ever
//! sees half an entry under its final name; nothing else ever is (failed,
//! locked, incomplete, corrupt, unknown or unreadable entries, links,
//! locks). An entry the destination already holds is skipped when it is the
//! same (every file's size and bytes: [`same`]), reported as a conflict and
//! left untouched when it differs, and left alone when a compile holds a
//! lock in it. Nothing at the destination is ever overwritten.
//!
//! Each side is a directory or a store's prefix (`s3://`, `gs://`,
//! `az://`, all through `object_store`'s one interface); the source may
//! also be a hub repository (`hf://`). A store's cache is listed once and
//! its entries judged from that listing ([`super::status()`]'s rules, no
//! object read); an entry is read whole only where it is copied or
//! compared with a different one (its copy judged in staging, or the
//! entry itself), and one not `ok` then is passed over. An unchanged entry
//! is found the same by the listings' digests (an ETag that is an MD5, the
//! hub's SHA-256 or git blob id) checked against the bytes on disk: a
//! second sync of an unchanged cache reads no object's body.
//!
//! On disk ([`local`]): each entry is written under a staging name beside
//! its final one ([`super::staging`]), checked (every size against the
//! source's, the entry judged `ok` with its NEFF read whole, vLLM's
//! `neff_size` compared), then renamed into place with
//! `RENAME_NOREPLACE`; the destination is reached by descriptors, no link
//! followed. A sync killed at any point leaves at most a staging copy,
//! which the next sync removes once its process is gone. In a store
//! ([`bucket`]): conditional puts, the marker last.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
//! let e = src.join("neuronxcc-2.15.128.0+56dc5a86/MODULE_1+ab");
//! std::fs::create_dir_all(&e)?;
//! std::fs::write(e.join("model.log"), "ERROR 70 [neuronx-cc]: bad op\n")?;
//! let done = neff::cache::sync(&src, &dst, &neff::cache::SyncOptions::default())?;
//! // A failed compile is never copied.
//! assert!(done.entries.is_empty());
//! assert_eq!(done.passed_over, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "remote")]
mod bucket;
mod files;
mod local;
mod memo;
mod plan;
mod same;
mod stage;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::found::{lossy, spelled, CacheError};
use super::root::url_of;
use crate::error::{Error, Result};

/// Which entries [`sync`] copies, and whether it does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncOptions {
    /// Say what would be done, and write nothing.
    pub dry_run: bool,
    /// Only entries of these compiler versions (`2.15` names every build
    /// of 2.15, `2.15.128.0+56dc5a86` one build); empty: every version,
    /// and entries of no version (vLLM's).
    pub versions: Vec<String>,
    /// Only entries whose name (`MODULE_…`, a vLLM key) matches one of
    /// these patterns (`*` any run of characters, `?` one); empty: all.
    pub globs: Vec<String>,
    /// Only entries whose newest file was modified at or after this time.
    pub since: Option<SystemTime>,
    /// Entries copied at once (at least 1); `None`: the process's I/O
    /// depth ([`crate::set_io_depth`], 32 by default).
    pub io_depth: Option<usize>,
}

impl SyncOptions {
    /// Say what would be done, and write nothing.
    pub fn dry_run(mut self, yes: bool) -> Self {
        self.dry_run = yes;
        self
    }

    /// Adds a compiler version entries may be of.
    pub fn version(mut self, v: impl Into<String>) -> Self {
        self.versions.push(v.into());
        self
    }

    /// Adds a pattern entry names may match.
    pub fn glob(mut self, g: impl Into<String>) -> Self {
        self.globs.push(g.into());
        self
    }

    /// Only entries modified at or after `t`.
    pub fn since(mut self, t: SystemTime) -> Self {
        self.since = Some(t);
        self
    }

    /// Entries copied at once (0 is taken as 1).
    pub fn io_depth(mut self, n: usize) -> Self {
        self.io_depth = Some(n.max(1));
        self
    }

    /// Entries copied at once, as asked or the process's I/O depth.
    fn depth(&self) -> usize {
        self.io_depth.unwrap_or_else(crate::pool::io_depth).max(1)
    }
}

/// What [`sync`] did with one entry of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Action {
    /// It would be copied (a dry run).
    Copy,
    /// It was copied, checked and renamed into place.
    Copied,
    /// The destination holds the same entry (every file's size and hash).
    Skipped,
    /// The destination holds a different entry, or one not `ok`, under its
    /// name: left untouched.
    Conflict,
    /// A compile holds a lock in the destination's entry: left alone.
    Locked,
    /// Not copied: what stood in the way (a link or a mount point at the
    /// destination, the source entry changed or went while it was copied,
    /// the copy not judged `ok`).
    Left,
    /// Not copied: reading or writing failed (permissions, a full disk,
    /// a bucket's refusal).
    Error,
}

impl Action {
    /// Its name, as records spell it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Copy => "copy",
            Action::Copied => "copied",
            Action::Skipped => "skipped",
            Action::Conflict => "conflict",
            Action::Locked => "locked",
            Action::Left => "left",
            Action::Error => "error",
        }
    }

    /// Whether the entry did not reach the destination although it should
    /// have (the binary's exit 1, or 3 for [`Action::Error`]).
    pub fn is_left(self) -> bool {
        matches!(
            self,
            Action::Conflict | Action::Locked | Action::Left | Action::Error
        )
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One `ok` entry of the source [`sync`] selected, and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncEntry {
    /// The source entry (JSON spells it as
    /// [`CacheEntry::path`](super::CacheEntry::path) does).
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    /// The path's bytes in base64 when they are not UTF-8.
    pub path_bytes: Option<String>,
    /// Where it goes at the destination (the same path below the root).
    #[serde(serialize_with = "lossy")]
    pub dest: PathBuf,
    /// Its compiler version.
    pub compiler: Option<String>,
    /// What was done.
    pub action: Action,
    /// Its bytes (the files copied, or to be: every file but its locks).
    pub bytes: u64,
    /// Its files (locks not counted).
    pub files: usize,
    /// Why it was not copied, or how the destination's entry differs;
    /// `None` when it was copied (or would be) or skipped.
    pub reason: Option<String>,
}

/// What [`sync`] did, or would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Synced {
    /// Every `ok` entry of the source selected, in the order of the
    /// source's status.
    pub entries: Vec<SyncEntry>,
    /// Entries of the source that are not `ok` (never copied).
    pub passed_over: usize,
    /// The parts of the source that could not be read.
    pub errors: Vec<CacheError>,
    /// Requests sent to buckets (listings, reads, writes).
    pub requests: u64,
}

impl Synced {
    /// Entries and bytes with this action.
    pub fn count(&self, action: Action) -> (usize, u64) {
        self.entries
            .iter()
            .filter(|e| e.action == action)
            .fold((0, 0), |(n, b), e| (n + 1, b + e.bytes))
    }

    /// Whether some entry did not reach the destination although selected.
    pub fn has_left(&self) -> bool {
        self.entries.iter().any(|e| e.action.is_left())
    }

    /// Whether reading or writing failed somewhere (the binary's exit 3).
    pub fn has_io_error(&self) -> bool {
        !self.errors.is_empty() || self.entries.iter().any(|e| e.action == Action::Error)
    }
}

/// Copies every `ok` entry of the compile cache `src` that `dst` lacks
/// into `dst`, keeping its path below the root, and reports every `ok`
/// entry selected ([`SyncOptions`]): copied, skipped (the same is there),
/// a conflict (a different entry is there: untouched), locked or left.
/// Each side is a directory or a store's prefix (`s3://`, `gs://`,
/// `az://`); `src` may also be a hub repository (`hf://`). The source is
/// judged as [`super::status()`] judges it (a store's entries from its
/// listing first, each read whole before it is copied or compared; one not
/// `ok` then is passed over); the destination is created when it does
/// not exist.
///
/// `Err` when the source cannot be read as a cache ([`super::status()`]'s
/// refusals), the destination cannot be opened, made or listed, or the
/// pair is not one that syncs (the same cache, an `hf://` or `http(s)://`
/// destination: [`crate::ErrorKind::Usage`]).
pub fn sync(src: &Path, dst: &Path, opts: &SyncOptions) -> Result<Synced> {
    check(src, dst, opts)?;
    let before = requests();
    let (root, status, listing) = source(src)?;
    let (planned, passed_over) = plan::select(&root, &status, listing.as_ref(), opts)?;
    #[cfg(feature = "remote")]
    let (entries, not_ok) = match url_of(dst) {
        Some(url) => bucket::sync(url, &planned, opts)?,
        None => local::sync(dst, &planned, opts)?,
    };
    #[cfg(not(feature = "remote"))]
    let (entries, not_ok) = local::sync(dst, &planned, opts)?;
    memo::save();
    Ok(Synced {
        entries,
        passed_over: passed_over + not_ok,
        errors: status.errors,
        requests: requests() - before,
    })
}

/// The source's root (a store's URL spelled as its listing spells it),
/// its entries judged without their NEFFs read (on disk, by their files;
/// in a store, from one listing: [`plan::Planned::ok_read_whole`] reads
/// those it copies or compares, a copy is read in staging), and, in a
/// store, that listing.
fn source(src: &Path) -> Result<(PathBuf, super::CacheStatus, Option<plan::Listing>)> {
    #[cfg(feature = "remote")]
    if let Some(url) = url_of(src) {
        let root = crate::remote::canonical(url).into_owned();
        let (status, listing) = super::status::listed(&root)?;
        return Ok((PathBuf::from(root), status, Some(listing)));
    }
    Ok((src.to_path_buf(), super::status::unread(src)?, None))
}

/// Refuses what does not sync: the same cache on both sides, a
/// destination that cannot be written (`hf://`, `http(s)://`), a source
/// that cannot be listed (`http(s)://`), `--since` of a hub repository
/// (its listing gives no times).
fn check(src: &Path, dst: &Path, opts: &SyncOptions) -> Result<()> {
    let scheme = |u: &str| u.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    let refuse = |reason: &str| {
        Err(Error::Usage {
            reason: reason.into(),
        })
    };
    let same = |a: &Path, b: &Path| {
        std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
    };
    let (s, d) = (url_of(src), url_of(dst));
    let spelled = |u: &str| {
        #[cfg(feature = "remote")]
        let u = crate::remote::canonical(u).to_ascii_lowercase();
        u.trim_end_matches('/').to_string()
    };
    if same(src, dst) || s.zip(d).is_some_and(|(s, d)| spelled(s) == spelled(d)) {
        return refuse("SRC and DST are the same cache");
    }
    if cfg!(not(feature = "remote")) && s.or(d).is_some() {
        return refuse("this build reads no bucket or hub (built without the feature `remote`)");
    }
    // A compiler version's directory holds its entries directly: one side
    // that is one and the other not (or another's) puts them where the
    // compiler does not look.
    let version = |p: &Path| {
        let name = p.to_str().map_or_else(
            || {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            },
            |t| {
                t.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            },
        );
        name.starts_with(super::found::VERSION_PREFIX)
            .then_some(name)
    };
    if version(src) != version(dst) {
        let (v, side) = match version(src) {
            Some(v) => (v, "SRC"),
            None => (version(dst).unwrap_or_default(), "DST"),
        };
        return refuse(&format!(
            "{side} is the compiler version's directory {v}: give both sides as such a directory \
             of the same version, or both as the cache roots above them"
        ));
    }
    match d.and_then(scheme).as_deref() {
        Some("hf") => {
            return refuse(
                "a hub repository (hf://) is read, never written here: it can be SRC, not DST",
            )
        }
        Some("http" | "https") => {
            return refuse("an http(s):// server cannot be written: DST is a directory or an s3://, gs:// or az:// prefix")
        }
        _ => {}
    }
    match s.and_then(scheme).as_deref() {
        Some("http" | "https") => refuse(
            "an http(s):// server cannot be listed: SRC is a directory, an s3://, gs:// or az:// \
             prefix, or an hf:// repository",
        ),
        Some("hf") if opts.since.is_some() => {
            refuse("--since: the hub's listing gives no times (an hf:// SRC)")
        }
        _ => Ok(()),
    }
}

/// Requests sent to buckets so far by this process.
#[cfg(feature = "remote")]
fn requests() -> u64 {
    crate::remote::stats().requests
}

#[cfg(not(feature = "remote"))]
fn requests() -> u64 {
    0
}

/// What became of one entry, and why; `None` when the source's entry,
/// read whole, is not `ok` after all (passed over).
type Outcome = Option<(Action, Option<String>)>;

/// Runs `one` on each planned entry (its files listed first, on disk),
/// `opts.io_depth` at once: the record of each (where it goes, `dest`;
/// what became of it), in order, and how many were passed over.
fn each(
    planned: &[plan::Planned],
    opts: &SyncOptions,
    dest: impl Fn(&plan::Planned) -> PathBuf + Sync,
    one: impl Fn(&plan::Planned) -> Outcome + Sync,
) -> (Vec<SyncEntry>, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let out: Vec<Mutex<Option<SyncEntry>>> = planned.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let passed = AtomicUsize::new(0);
    let workers = opts.depth().min(planned.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = planned.get(i) else { break };
                let p = &p.listed();
                let done = match &p.trouble {
                    Some((a, r)) => Some((*a, Some(r.clone()))),
                    None => one(p),
                };
                let Some((action, reason)) = done else {
                    passed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let e = SyncEntry::new(p, dest(p), action, reason);
                log::debug!("{}: {}", e.dest.display(), e.action);
                *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            });
        }
    });
    let entries = out
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    (entries, passed.into_inner())
}

impl SyncEntry {
    fn new(p: &plan::Planned, dest: PathBuf, action: Action, reason: Option<String>) -> Self {
        SyncEntry {
            path_bytes: spelled(&p.entry.path),
            path: p.entry.path.clone(),
            dest,
            compiler: p.entry.compiler.clone(),
            action,
            bytes: p.bytes(),
            files: p.files.len(),
            reason,
        }
    }
}
