//! Scanning model zoos and compile caches: find every `*.neff` under some
//! paths, read each in parallel, and produce one [`Record`] per file.
//!
//! A bad file never stops a scan: it yields a record with `ok: false` and
//! its error. Files are listed first (a parallel walk that follows symlinks
//! and detects loops), sorted by path so that `--shard K/N` splits a zoo
//! deterministically, then read by a rayon pool; the objects of a bucket
//! prefix are read as its listing pages arrive ([`scan_listing`]). Each worker reuses one
//! [`Scratch`] (file and inflate buffers) across files, and a record is
//! handed to the caller as soon as it is made: memory does not grow with
//! the number of files beyond the list of paths. At most `jobs` files are
//! open at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::accessors;
use crate::cache::{self, State};
use crate::error::{Error, Result};
use crate::header::hex;
use crate::json::views::{Def, VarType};
use crate::reader::{Neff, Options, Scratch};

/// Count and total bytes of a set of tensors.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tensors {
    /// How many tensors.
    pub count: u64,
    /// The sum of their `size` fields in bytes (a tensor without one counts 0).
    pub bytes: u64,
}

/// One NEFF's line of a scan.
///
/// `ok` says whether the file is a readable NEFF: it is false (with
/// `error`) only when the file cannot be opened, its header is invalid, or
/// its payload or tar cannot be read. A question the reference reader would
/// refuse on a readable NEFF (an MPMD world size, no tensor map, an aliasing
/// guard, mixed arches, JSON of the wrong shape) leaves its field `None`
/// and puts the reason in [`errors`](Record::errors), keyed by field.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The file's path, as found by the walk (or as named).
    pub path: String,
    /// Whether the file is a readable NEFF: opened, header valid, payload and
    /// tar read, and the file unchanged while it was read.
    pub ok: bool,
    /// Why the file is not a readable NEFF; `None` when `ok`.
    pub error: Option<String>,
    /// File size.
    pub bytes: Option<u64>,
    /// Header `pkg_version` (1 or 2); `None` when not `ok`.
    pub pkg_version: Option<u64>,
    /// Whether the payload is gzip; `None` when not `ok`.
    pub compressed: Option<bool>,
    /// Count of regular members of the archive; `None` when not `ok`.
    pub members: Option<usize>,
    /// The kelf's target arch ([`accessors::arch`]); `None` when refused or not `ok`.
    pub arch: Option<String>,
    /// NeuronCores the NEFF needs ([`accessors::num_cores`]); `None` when refused or not `ok`.
    pub num_cores: Option<u64>,
    /// Null when the NEFF has no collective metadata (or it was refused).
    pub cc_world_size: Option<u128>,
    /// Null unless the scan verifies hashes.
    pub hash_ok: Option<bool>,
    /// The header's model UUID, 32 lower-case hex digits; `None` when not `ok`.
    pub uuid: Option<String>,
    /// The header's model name; `None` when not `ok`.
    pub name: Option<String>,
    /// Header `data_size`: payload bytes as stored; `None` when not `ok`.
    pub data_size: Option<u64>,
    /// Count and bytes of def.json's `input` variables; `None` when refused or not `ok`.
    pub inputs: Option<Tensors>,
    /// Count and bytes of def.json's `output` variables; `None` when refused or not `ok`.
    pub outputs: Option<Tensors>,
    /// Number of `alias_map` entries in the tensor map ([`accessors::alias`]);
    /// `None` when refused (e.g. no tensor map) or not `ok`.
    pub aliases: Option<usize>,
    /// [`accessors::must_alias`]; `None` when refused or not `ok`.
    pub must_alias: Option<bool>,
    /// def.json's `neff_features`; `None` when refused or not `ok`.
    pub neff_features: Option<Vec<String>>,
    /// Header `feature_bits`, the capability mask; `None` when not `ok`.
    pub feature_bits: Option<u64>,
    /// For a file of a compile-cache entry (`MODULE_<key>/model.neff`, or a
    /// `graph_*.neff`) and for an entry holding no NEFF: the entry's key.
    pub cache_key: Option<String>,
    /// The compiler version of the `neuronxcc-<version>` directory holding
    /// that entry.
    pub compiler: Option<String>,
    /// The state of that entry, as `neff cache status` judges it (`ok`,
    /// `corrupt`, `failed`, `locked`, `incomplete`, `empty`), judged at
    /// every scan: for an entry's `model.neff`, and for an entry that holds
    /// none (its record's path is the entry's directory).
    pub cache_state: Option<State>,
    /// Why that entry is not `ok` (the NEFF's refusal, the log's last error
    /// line, the lock's age).
    pub cache_reason: Option<String>,
    /// For each field whose question was refused on a readable NEFF, the
    /// reason (empty when none was).
    pub errors: BTreeMap<String, String>,
}

impl Record {
    /// Whether some question was refused on this (readable) NEFF.
    pub fn has_refusals(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// How a scan walks the directories it is given (files named directly are
/// read whatever these say).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Walk {
    /// Globs in gitignore syntax, as ripgrep's `--glob` takes them: a file
    /// is kept when it matches one of them (none given: every `*.neff`);
    /// one starting with `!` excludes what it matches (a directory so
    /// excluded is not entered). Matched against paths relative to each
    /// root.
    pub globs: Vec<String>,
    /// How deep to go below each root (1: its own entries only); `None`:
    /// no limit.
    pub max_depth: Option<usize>,
    /// Follow symbolic links (the default; a loop is reported once). Off,
    /// a link is neither entered nor read.
    pub follow_links: bool,
}

impl Default for Walk {
    fn default() -> Walk {
        Walk {
            globs: Vec::new(),
            max_depth: None,
            follow_links: true,
        }
    }
}

impl Walk {
    /// Sets `globs`: gitignore-syntax globs (`!` to exclude).
    #[must_use]
    pub fn globs(mut self, v: Vec<String>) -> Self {
        self.globs = v;
        self
    }

    /// Sets `max_depth`: how deep to go below each root.
    #[must_use]
    pub fn max_depth(mut self, v: Option<usize>) -> Self {
        self.max_depth = v;
        self
    }

    /// Sets `follow_links`: follow symbolic links.
    #[must_use]
    pub fn follow_links(mut self, v: bool) -> Self {
        self.follow_links = v;
        self
    }

    /// Checks that every glob compiles: a bad one is a usage error naming
    /// it.
    pub fn check(&self) -> Result<()> {
        self.overrides(Path::new(".")).map(drop)
    }

    /// The globs of `root`, compiled (a bad one is a usage error).
    fn overrides(&self, root: &Path) -> Result<Option<ignore::overrides::Override>> {
        if self.globs.is_empty() {
            return Ok(None);
        }
        let mut b = ignore::overrides::OverrideBuilder::new(root);
        for g in &self.globs {
            b.add(g).map_err(|e| Error::usage(format!("{e}")))?;
        }
        b.build()
            .map(Some)
            .map_err(|e| Error::usage(format!("--glob: {e}")))
    }
}

/// How to scan.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ScanOptions {
    /// How directories are walked (globs, depth, links).
    pub walk: Walk,
    /// How each NEFF is opened (read mode, limits).
    pub open: Options,
    /// Worker threads (0: the library's worker count, [`crate::set_threads`],
    /// one per core unless set).
    pub jobs: usize,
    /// Keep only files whose sorted index i has i mod n == k - 1.
    pub shard: Option<(usize, usize)>,
    /// Check each payload's hash (costs a full read of every file).
    pub verify: bool,
}

impl ScanOptions {
    /// Sets `walk`: how directories are walked (globs, depth, links).
    #[must_use]
    pub fn walk(mut self, v: Walk) -> Self {
        self.walk = v;
        self
    }

    /// Sets `open`: how each NEFF is opened (read mode, limits).
    #[must_use]
    pub fn open(mut self, v: Options) -> Self {
        self.open = v;
        self
    }

    /// Sets `jobs`: worker threads (0: the library's worker count, `crate::set_threads`, one per core unless set).
    #[must_use]
    pub fn jobs(mut self, v: usize) -> Self {
        self.jobs = v;
        self
    }

    /// Sets `shard`: keep only files whose sorted index i has i mod n == k - 1.
    #[must_use]
    pub fn shard(mut self, v: Option<(usize, usize)>) -> Self {
        self.shard = v;
        self
    }

    /// Sets `verify`: check each payload's hash (costs a full read of every file).
    #[must_use]
    pub fn verify(mut self, v: bool) -> Self {
        self.verify = v;
        self
    }
}

/// The paths of a list, one a line (`find -print`) or, with `nul`, each
/// ended by a NUL byte (`find -print0`, for names holding newlines): as
/// `neff scan --files-from FILE` (or `-`, standard input) takes them. Empty
/// entries are skipped; names need not be UTF-8.
///
/// ```
/// let got = neff::scan::path_list(&b"a.neff\0dir/\nname.neff\0"[..], true)?;
/// assert_eq!(got, ["a.neff", "dir/\nname.neff"].map(std::path::PathBuf::from));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn path_list(mut r: impl std::io::Read, nul: bool) -> std::io::Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)?;
    let sep = if nul { 0 } else { b'\n' };
    Ok(bytes
        .split(|&b| b == sep)
        .map(|p| {
            if nul {
                p
            } else {
                p.strip_suffix(b"\r").unwrap_or(p)
            }
        })
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect())
}

/// Lists every `*.neff` under `roots` (files named directly are kept
/// whatever their name), and every compile-cache entry (`MODULE_*`
/// directory) that holds no `model.neff` (a failed, locked or empty
/// entry gets a record too), sorted by path and sharded. Walk errors (a
/// symlink loop, an unreadable directory) come back as records, not
/// failures.
pub fn list(roots: &[PathBuf], shard: Option<(usize, usize)>) -> (Vec<PathBuf>, Vec<Record>) {
    let found = list_versions(roots, shard, &Walk::default())
        .expect("the default walk has no globs to refuse");
    (found.paths, found.errors)
}

/// [`list`] as `opts` says: its shard, and its [`Walk`] (globs, depth,
/// links). `Err` only for a glob that does not compile.
pub fn list_with(roots: &[PathBuf], opts: &ScanOptions) -> Result<Walked> {
    let found = list_versions(roots, opts.shard, &opts.walk)?;
    Ok(Walked {
        paths: found.paths,
        errors: found.errors,
        met: found.met,
    })
}

/// What [`list_with`] found: the paths to read and the walk's errors, and
/// what the walk saw of each compile-cache entry, so that
/// [`Walked::scan`] judges the entries without listing them again (a
/// request per entry, in a bucket).
#[derive(Debug)]
#[non_exhaustive]
pub struct Walked {
    /// The files (and compile-cache entries holding no NEFF) to read,
    /// sorted and sharded.
    pub paths: Vec<PathBuf>,
    /// The walk's errors (a symlink loop, an unreadable directory), as
    /// records.
    pub errors: Vec<Record>,
    met: std::collections::HashMap<std::ffi::OsString, cache::Met>,
}

impl Walked {
    /// [`scan`] of [`paths`](Self::paths), each compile-cache entry judged
    /// from what the walk saw of it.
    pub fn scan(&self, opts: &ScanOptions, emit: &(dyn Fn(Record) + Sync)) -> Result<()> {
        scan_with(
            &self.paths,
            opts.jobs,
            &|p, scratch| record_with(p, opts, scratch, met_of(&self.met, p), |_| ()).0,
            emit,
        )
    }
}

/// What a walk met of the compile-cache entry `path` belongs to.
pub(crate) fn met_of(
    met: &std::collections::HashMap<std::ffi::OsString, cache::Met>,
    path: &Path,
) -> Option<cache::Met> {
    cache::entry_dir(path)
        .and_then(|d| met.get(d.as_os_str()))
        .cloned()
}

/// What a store's listing says of each remote object found (key, size,
/// ETag), by its URL as a path: a catalogue's identity of it.
pub(crate) type Versions = std::collections::HashMap<PathBuf, (u64, String)>;

/// [`list`], with what the listings of remote prefixes said of each
/// object (a catalogue keys its rows on it, and so needs no other request).
/// What a walk found: the paths (sorted, sharded), the walk's errors as
/// records, what remote listings said of each object, and the symbolic
/// links the walk went through (a path below none of them is its root's
/// real path joined with the rest).
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Found {
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) errors: Vec<Record>,
    pub(crate) versions: Versions,
    pub(crate) linked: std::collections::HashSet<PathBuf>,
    /// What the walk met of each compile-cache entry (its files' names).
    /// (Keyed by the directory's bytes: hashing them is cheaper than
    /// hashing a path's components.)
    pub(crate) met: std::collections::HashMap<std::ffi::OsString, cache::Met>,
    /// The bucket prefixes whose listing failed: what they hold is unknown.
    pub(crate) unlisted: Vec<PathBuf>,
    /// The directories the walk listed whole, and those it failed to.
    pub(crate) listed: crate::places::Walked,
}

pub(crate) fn list_versions(
    roots: &[PathBuf],
    shard: Option<(usize, usize)>,
    walk: &Walk,
) -> Result<Found> {
    #[allow(unused_mut)]
    let mut versions = Versions::new();
    #[allow(unused_mut)]
    let mut unlisted = Vec::new();
    let found = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    // The directories symlink loops led back to (each loop reported once).
    let loops = Mutex::new(std::collections::HashSet::new());
    let linked = Mutex::new(std::collections::HashSet::new());
    // What the walk met of each compile-cache entry, by the entry's
    // directory: every entry is a key (those holding no NEFF get a record).
    let met: Mutex<std::collections::HashMap<std::ffi::OsString, cache::Met>> = Mutex::default();
    let places = crate::places::Places::default();
    for root in roots {
        #[cfg(feature = "remote")]
        if let Some(url) = root.to_str().filter(|p| crate::remote::is_url(p)) {
            if url.ends_with(".neff") || !crate::remote::is_listable(url) {
                // One object, named as a file is.
                found.lock().expect("lock").push(root.clone());
                continue;
            }
            match crate::remote::list_all(url) {
                Ok(objects) => {
                    let keep = crate::places::Keep::new(&walk.globs, walk.max_depth)?;
                    let mut found = found.lock().expect("lock");
                    for o in objects {
                        meet_object(&o, &mut met.lock().expect("lock"));
                        if o.url.ends_with(".neff") && keep.keeps_listed(url, &o.url) {
                            let p = PathBuf::from(&o.url);
                            versions.insert(p.clone(), (o.size, o.version));
                            found.push(p);
                        }
                    }
                }
                Err(e) => {
                    unlisted.push(root.clone());
                    errors.lock().expect("lock").push(failed(root, &e, None));
                }
            }
            continue;
        }
        match std::fs::metadata(root) {
            Ok(m) if m.is_file() => {
                found.lock().expect("lock").push(root.clone());
                continue;
            }
            Ok(m) if !m.is_dir() => {
                // A FIFO or device would block or never end: refuse it.
                let e = Error::refused("not a regular file or directory");
                errors.lock().expect("lock").push(failed(root, &e, None));
                continue;
            }
            Err(e) => {
                errors
                    .lock()
                    .expect("lock")
                    .push(failed(root, &Error::Io(e), None));
                continue;
            }
            Ok(_) => {}
        }
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .standard_filters(false)
            .hidden(false)
            .follow_links(walk.follow_links)
            .max_depth(walk.max_depth);
        if let Some(o) = walk.overrides(root)? {
            builder.overrides(o);
        }
        builder.build_parallel().run(|| {
            Box::new(|ent| {
                match ent {
                    Ok(e) => {
                        places.entry(root, &e, walk.max_depth);
                        if e.path_is_symlink() {
                            linked.lock().expect("lock").insert(e.path().to_path_buf());
                        }
                        let kind = e.file_type();
                        // What an entry holds, as this walk meets it.
                        if let Some(dir) = entry_above(e.path(), e.file_name()) {
                            let rel = e.path().strip_prefix(dir).unwrap_or(e.path());
                            let (link, path) = (e.path_is_symlink(), e.path());
                            let mut met = met.lock().expect("lock");
                            match met.get_mut(dir.as_os_str()) {
                                Some(m) => m.file(rel.as_os_str(), path, link, kind),
                                None => met.entry(dir.as_os_str().to_owned()).or_default().file(
                                    rel.as_os_str(),
                                    path,
                                    link,
                                    kind,
                                ),
                            }
                        }
                        let is_file = kind.is_some_and(|t| t.is_file());
                        if is_file && e.path().extension().is_some_and(|x| x == "neff") {
                            found.lock().expect("lock").push(e.into_path());
                        } else if kind.is_some_and(|t| t.is_dir())
                            && e.file_name().to_str().is_some_and(cache::is_entry_name)
                        {
                            met.lock()
                                .expect("lock")
                                .entry(e.path().as_os_str().to_owned())
                                .or_default();
                        }
                    }
                    Err(err) => {
                        places.error(&err);
                        // A loop met again through another link is the
                        // same loop: reported once.
                        if let Some(a) = loop_ancestor(&err) {
                            let a = std::fs::canonicalize(a).unwrap_or_else(|_| a.to_path_buf());
                            if !loops.lock().expect("lock").insert(a) {
                                return ignore::WalkState::Continue;
                            }
                        }
                        let path = walk_error_path(&err).unwrap_or_else(|| root.clone());
                        let msg = Error::Io(std::io::Error::other(err.to_string()));
                        errors.lock().expect("lock").push(failed(&path, &msg, None));
                    }
                }
                ignore::WalkState::Continue
            })
        });
    }
    let mut paths = found.into_inner().expect("lock");
    paths.sort();
    paths.dedup();
    let met = met.into_inner().expect("lock");
    // An entry holding any NEFF (its model.neff, or an older layout's
    // graph_*.neff) is that NEFF's record; one holding none gets its own.
    let parents: std::collections::HashSet<&Path> =
        paths.iter().filter_map(|p| p.parent()).collect();
    let bare: Vec<PathBuf> = met
        .keys()
        .map(PathBuf::from)
        .filter(|d| !parents.contains(d.as_path()))
        .collect();
    drop(parents);
    if !bare.is_empty() {
        paths.extend(bare);
        paths.sort();
    }
    Ok(Found {
        paths: shard_of(paths, shard),
        errors: errors.into_inner().expect("lock"),
        versions,
        linked: linked.into_inner().expect("lock"),
        met,
        unlisted,
        listed: places.into_lists(),
    })
}

/// The compile-cache entry directory a walked file belongs to: its parent
/// when that is a `MODULE_*` directory, or, for a `*.lock` file, the
/// nearest `MODULE_*` directory above it (a lock anywhere in an entry
/// counts).
fn entry_above<'p>(path: &'p Path, name: &std::ffi::OsStr) -> Option<&'p Path> {
    let is_entry = |d: &Path| {
        d.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(cache::is_entry_name)
    };
    let parent = path.parent()?;
    if is_entry(parent) {
        return Some(parent);
    }
    if !name.to_str().is_some_and(|n| n.ends_with(".lock")) {
        return None;
    }
    parent.ancestors().skip(1).take(4).find(|d| is_entry(d))
}

/// Notes a listed object in what the walk met of each compile-cache
/// entry above its key (every `MODULE_*` prefix is one).
#[cfg(feature = "remote")]
fn meet_object(
    o: &crate::remote::Listed,
    met: &mut std::collections::HashMap<std::ffi::OsString, cache::Met>,
) {
    let mut at = 0;
    for part in o.url.split('/') {
        at += part.len() + 1;
        if cache::is_entry_name(part) && at <= o.url.len() {
            met.entry(o.url[..at - 1].into())
                .or_default()
                .object(&o.url[at..], o.modified);
        }
    }
}

pub(crate) use crate::places::shard_of;
use crate::places::{loop_ancestor, walk_error_path};

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
fn is_url(p: &Path) -> bool {
    p.to_str().is_some_and(crate::remote::is_url)
}

/// Whether `p` names a remote object or prefix: never, in a build
/// without remote I/O.
#[cfg(not(feature = "remote"))]
fn is_url(_: &Path) -> bool {
    false
}

/// The pool a scan reads on: `jobs` workers, or for remote objects more
/// workers than cores, each waiting on its requests (`--io-depth`).
fn pool_for(remote: bool, jobs: usize) -> Result<rayon::ThreadPool> {
    if remote {
        crate::pool::remote_pool(jobs)
    } else {
        crate::pool::counting_pool(jobs)
    }
    .map_err(|e| Error::usage(format!("cannot start {jobs} workers: {e}")))
}

/// Runs one file's work counted in flight, so that a big payload read
/// while other workers are idle uses them for its inflate.
fn counted<T>(work: impl FnOnce() -> T) -> T {
    let _job = crate::pool::Job::start();
    work()
}

/// Lists `roots` and scans what it finds, as [`list_with`] then
/// [`Walked::scan`] do, except that each object under a bucket or
/// repository prefix is read as soon as its listing page has arrived: a
/// prefix of 100,000 keys (100 pages, each a round trip) is scanned while
/// it is listed, not after. Local roots and single objects are listed
/// first, as [`list_with`] lists them. `listed(n)` is told each time `n`
/// more paths are queued (a progress bar's length); the walk's and the
/// listings' errors come to `emit` as records. A sharded scan
/// (`opts.shard`) lists everything first: a shard is a slice of the
/// sorted whole.
///
/// A `model.neff` in a compile-cache entry waits until the listing has
/// passed the entry's last key (a store lists in key order), so that its
/// record judges the entry from all of its files; entries holding no NEFF
/// are read when their prefixes' listings end.
pub fn scan_listing(
    roots: &[PathBuf],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    #[cfg(feature = "remote")]
    if let Some((prefixes, rest)) = streamed_prefixes(roots, opts) {
        return listing::scan(&prefixes, &rest, opts, listed, emit);
    }
    let walked = list_with(roots, opts)?;
    for r in walked.errors.iter().cloned() {
        emit(r);
    }
    listed(walked.paths.len());
    walked.scan(opts, emit)
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

/// What the listings of a scan read while it lists have seen so far,
/// shared with the workers reading what they found.
#[derive(Default)]
#[cfg_attr(not(all(feature = "remote", feature = "catalog")), allow(dead_code))]
pub(crate) struct Seen {
    /// What the listings met of each compile-cache entry.
    met: Mutex<std::collections::HashMap<std::ffi::OsString, cache::Met>>,
    /// What the listings said of each NEFF (size, ETag).
    versions: Mutex<Versions>,
    /// The prefixes whose listing failed, whole or part way: what they
    /// held is unknown.
    unlisted: Mutex<Vec<PathBuf>>,
    /// Which listed objects the globs and the depth keep.
    keep: Option<crate::places::Keep>,
}

#[cfg_attr(not(all(feature = "remote", feature = "catalog")), allow(dead_code))]
impl Seen {
    /// Nothing seen yet; listed objects kept as `keep` says.
    pub(crate) fn keeping(keep: crate::places::Keep) -> Seen {
        Seen {
            keep: Some(keep),
            ..Seen::default()
        }
    }

    /// What a walk (`local`) or the listings met of `path`'s compile-cache
    /// entry.
    pub(crate) fn met(
        &self,
        local: &std::collections::HashMap<std::ffi::OsString, cache::Met>,
        path: &Path,
    ) -> Option<cache::Met> {
        met_of(local, path).or_else(|| met_of(&self.met.lock().expect("lock"), path))
    }

    /// What a listing said of `path` (size, ETag), if it is a listed object.
    pub(crate) fn version(&self, local: &Versions, path: &Path) -> Option<(u64, String)> {
        if let Some(v) = local.get(path) {
            return Some(v.clone());
        }
        self.versions.lock().expect("lock").get(path).cloned()
    }

    /// The prefixes whose listing failed.
    pub(crate) fn unlisted(self) -> Vec<PathBuf> {
        self.unlisted.into_inner().expect("lock")
    }
}

fn failed(path: &Path, e: &Error, bytes: Option<u64>) -> Record {
    Record {
        path: crate::shown::path(path),
        ok: false,
        error: Some(e.to_string()),
        bytes,
        ..Record::default()
    }
}

/// Reads one NEFF into its record, and, when it opens, runs `extra` on it
/// too (the index reads its member, tensor and alias rows this way, from
/// the same single open). `met`: what the walk saw of the compile-cache
/// entry the NEFF belongs to (`None`: the entry is listed now).
pub(crate) fn record_with<T>(
    path: &Path,
    opts: &ScanOptions,
    scratch: &mut Scratch,
    met: Option<cache::Met>,
    extra: impl FnOnce(&Neff) -> T,
) -> (Record, Option<T>) {
    if is_bare_entry(path) {
        let mut r = Record {
            path: crate::shown::path(path),
            ..Record::default()
        };
        cache_entry(path, &mut r, &opts.open, met);
        let state = r.cache_state.map_or("unreadable", State::name);
        r.error = Some(match r.cache_state {
            Some(State::Ok) => {
                "a compile-cache entry whose model.neff appeared after the walk (scan again)".into()
            }
            _ => match &r.cache_reason {
                Some(why) => format!("a compile-cache entry with no model.neff ({state}: {why})"),
                None => format!("a compile-cache entry with no model.neff ({state})"),
            },
        });
        return (r, None);
    }
    let bytes = std::fs::metadata(path).ok().map(|m| m.len());
    let (mut r, t) = match Neff::open_scratch(path, &opts.open, scratch) {
        Err(e) => (failed(path, &e, bytes), None),
        Ok(neff) => {
            let bytes = bytes.or(Some(neff.file_len()));
            let r = fill(&neff, path, bytes, opts);
            let t = extra(&neff);
            match neff.check_unchanged() {
                // Zeros were read where the file's pages had been: no answer.
                Err(e) => (failed(path, &e, bytes), None),
                Ok(()) => {
                    neff.recycle(scratch);
                    (r, Some(t))
                }
            }
        }
    };
    cache_entry(path, &mut r, &opts.open, met);
    (r, t)
}

/// Whether `path` is a compile-cache entry that holds no NEFF (the walk
/// lists such an entry's directory, or its prefix in a bucket).
fn is_bare_entry(path: &Path) -> bool {
    if cache::entry_dir(path) != Some(path) {
        return false;
    }
    #[cfg(feature = "remote")]
    if let Some(url) = path.to_str().filter(|p| crate::remote::is_url(p)) {
        return !url.ends_with(".neff");
    }
    path.is_dir()
}

fn fill(neff: &Neff, path: &Path, bytes: Option<u64>, opts: &ScanOptions) -> Record {
    let h = neff.header();
    let mut errors = BTreeMap::new();
    let mut note = |fields: &[&str], e: Error| {
        for f in fields {
            errors.insert((*f).to_string(), e.to_string());
        }
    };
    let mut r = Record {
        path: crate::shown::path(path),
        ok: true,
        bytes,
        pkg_version: Some(h.pkg_version.get()),
        compressed: Some(neff.is_compressed()),
        members: Some(neff.files().count()),
        uuid: Some(hex(&h.uuid)),
        name: Some(h.name()),
        data_size: Some(h.data_size.get()),
        feature_bits: Some(h.feature_bits.get()),
        ..Record::default()
    };
    if opts.verify {
        r.hash_ok = Some(crate::verify::verify_open(neff).is_ok());
    }
    match accessors::arch(neff) {
        Ok(a) => r.arch = Some(a.to_string()),
        Err(e) => note(&["arch"], e),
    }
    match accessors::num_cores(neff) {
        Ok(n) => r.num_cores = Some(n),
        Err(e) => note(&["num_cores"], e),
    }
    match accessors::def(neff) {
        Ok(m) => {
            if let Some(def) = Def::new(m.json) {
                let (mut i, mut o) = (Tensors::default(), Tensors::default());
                for v in def.vars() {
                    let t = match v.var_type() {
                        Some(VarType::Input) => &mut i,
                        Some(VarType::Output) => &mut o,
                        _ => continue,
                    };
                    t.count += 1;
                    t.bytes += v.size().unwrap_or(0);
                }
                r.inputs = Some(i);
                r.outputs = Some(o);
                r.neff_features = Some(
                    def.neff_features()
                        .into_iter()
                        .map(str::to_string)
                        .collect(),
                );
            } else {
                let e = Error::shape(m.name, "def.json is not an object");
                note(&["inputs", "outputs", "neff_features"], e);
            }
        }
        Err(e) => note(&["inputs", "outputs", "neff_features"], e),
    }
    match accessors::has_cc(neff) {
        Ok(true) => match accessors::cc_world_size(neff) {
            Ok(n) => r.cc_world_size = Some(n),
            Err(e) => note(&["cc_world_size"], e),
        },
        Ok(false) => {}
        Err(e) => note(&["cc_world_size"], e),
    }
    match accessors::alias(neff) {
        Ok(a) => r.aliases = Some(a.len()),
        Err(e) => note(&["aliases"], e),
    }
    match accessors::must_alias(neff) {
        Ok(m) => r.must_alias = Some(m),
        Err(e) => note(&["must_alias"], e),
    }
    r.errors = errors;
    r
}

/// Whether the file at `path` (a local one) exists and the caller may not
/// read it.
fn unreadable(path: &Path) -> bool {
    use rustix::fs::{Access, AtFlags, CWD};
    #[cfg(feature = "remote")]
    if path.to_str().is_some_and(crate::remote::is_url) {
        return false;
    }
    matches!(
        rustix::fs::accessat(CWD, path, Access::READ_OK, AtFlags::EACCESS),
        Err(e) if e != rustix::io::Errno::NOENT
    )
}

/// Fills `cache_key`, `compiler`, `cache_state` and `cache_reason` for a
/// file of a Neuron compile-cache entry (a `graph_*.neff`, or a NEFF in a
/// `MODULE_*` directory) or an entry holding no NEFF. The state is judged
/// now, from one listing of the entry, with the record's own answer for
/// its NEFF (an entry holding none has its NEFF read, should one have
/// appeared since the walk): a warm catalogue hit judges it again too.
pub(crate) fn cache_entry(path: &Path, r: &mut Record, open: &Options, met: Option<cache::Met>) {
    let parent = path.parent();
    let dir = parent
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned());
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_cache =
        file.starts_with("graph_") || dir.as_deref().is_some_and(|d| d.starts_with("MODULE_"));
    if is_cache {
        r.cache_key = dir.map(|d| d.strip_prefix("MODULE_").map(str::to_string).unwrap_or(d));
    }
    let Some(entry) = cache::entry_dir(path) else {
        return;
    };
    if entry == path {
        r.cache_key = file.strip_prefix("MODULE_").map(str::to_string);
    }
    r.compiler = cache::compiler_of(entry);
    let own = (entry != path).then(|| (r.ok, r.error.clone()));
    let read = || match &own {
        Some((true, _)) => cache::Read::Ok(()),
        // A NEFF the caller may not read says nothing of the entry.
        Some((false, e)) if unreadable(path) => {
            cache::Read::Unreadable(format!("model.neff: {}", e.clone().unwrap_or_default()))
        }
        Some((false, e)) => cache::Read::Refused(e.clone().unwrap_or_default()),
        // An entry listed bare: its NEFF appeared since the walk.
        None => {
            let neff = entry.join("model.neff");
            match Neff::open_with(&neff, open).and_then(|n| n.check_unchanged()) {
                Ok(()) => cache::Read::Ok(()),
                Err(e) => cache::read_error(e),
            }
        }
    };
    match cache::judge_entry(entry, met, read) {
        Ok(s) => {
            r.cache_state = Some(s.state);
            r.cache_reason = s.reason;
        }
        Err(e) => {
            r.cache_state = None;
            r.cache_reason = Some(format!("the entry could not be listed: {e}"));
        }
    }
}

#[cfg(all(feature = "remote", feature = "catalog"))]
pub(crate) use listing::read_while_listing;

/// The scan of bucket prefixes pipelined with their listings
/// ([`scan_listing`]).
#[cfg(feature = "remote")]
mod listing {
    use std::collections::{HashSet, VecDeque};
    use std::path::{Path, PathBuf};
    use std::sync::mpsc;

    use rayon::prelude::*;

    use super::{failed, list_versions, meet_object, record_with, ScanOptions, Seen};
    use super::{Record, Result, Scratch};
    use crate::cache;
    use crate::remote::Listed;

    /// NEFFs listed and not yet handed to the workers: each waits until
    /// the listing has passed its compile-cache entry's last key.
    #[derive(Default)]
    pub(super) struct Held {
        waiting: VecDeque<(PathBuf, Option<String>)>,
        /// The last key seen, and whether keys have come in order so far
        /// (a store that lists out of order has everything held to the end).
        last: Option<String>,
        ordered: bool,
    }

    impl Held {
        pub(super) fn new() -> Held {
            Held {
                ordered: true,
                ..Held::default()
            }
        }

        /// Notes the key `url` (the listing has reached it) and, if it is a
        /// NEFF, holds it; hands on each NEFF held whose entry is now
        /// complete, in key order.
        pub(super) fn key(&mut self, url: &str, out: &mut dyn FnMut(PathBuf)) {
            if self.ordered && self.last.as_deref().is_some_and(|l| url < l) {
                let url = crate::shown::path(Path::new(url));
                log::warn!("{url}: listed out of key order: the rest is read after the listing");
                self.ordered = false;
            }
            self.last = Some(url.to_string());
            if self.ordered {
                while let Some((_, entry)) = self.waiting.front() {
                    if entry.as_deref().is_some_and(|e| url.starts_with(e)) {
                        break;
                    }
                    out(self.waiting.pop_front().expect("front").0);
                }
            }
            if url.ends_with(".neff") {
                let p = PathBuf::from(url);
                let entry = cache::entry_dir(&p).map(|d| format!("{}/", d.display()));
                self.waiting.push_back((p, entry));
            }
        }

        /// The listing ended: every NEFF still held.
        pub(super) fn end(&mut self, out: &mut dyn FnMut(PathBuf)) {
            for (p, _) in self.waiting.drain(..) {
                out(p);
            }
        }
    }

    pub(super) fn scan(
        prefixes: &[PathBuf],
        rest: &[PathBuf],
        opts: &ScanOptions,
        listed: &(dyn Fn(usize) + Sync),
        emit: &(dyn Fn(Record) + Sync),
    ) -> Result<()> {
        // Local roots and single objects: listed first, as `list_with` does.
        let local = list_versions(rest, None, &opts.walk)?;
        for r in local.errors {
            emit(r);
        }
        let seen = Seen::keeping(crate::places::Keep::new(
            &opts.walk.globs,
            opts.walk.max_depth,
        )?);
        read_while_listing(
            prefixes,
            &local.paths,
            opts.jobs,
            &seen,
            listed,
            &|p, scratch| record_with(p, opts, scratch, seen.met(&local.met, p), |_| ()).0,
            emit,
            emit,
        )
    }

    /// Runs `work` on each of `paths` (listed already) and of the NEFFs
    /// and bare compile-cache entries under `prefixes` as their listings
    /// find them, on the remote pool of `jobs`; `emit` gets each result,
    /// `fail` each listing's error (as a record naming the prefix). What
    /// the listings see goes into `seen` before the path it concerns is
    /// handed to `work`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_while_listing<T: Send>(
        prefixes: &[PathBuf],
        paths: &[PathBuf],
        jobs: usize,
        seen: &Seen,
        listed: &(dyn Fn(usize) + Sync),
        work: &(dyn Fn(&Path, &mut Scratch) -> T + Sync),
        emit: &(dyn Fn(T) + Sync),
        fail: &(dyn Fn(Record) + Sync),
    ) -> Result<()> {
        let (tx, rx) = mpsc::channel::<PathBuf>();
        let pool = super::pool_for(true, jobs)?;
        std::thread::scope(|scope| {
            let lister = scope.spawn(|| {
                listed(paths.len());
                for p in paths.iter().cloned() {
                    let _ = tx.send(p);
                }
                // A single object named beside a prefix holding it is read once.
                let sent = paths.iter().cloned().collect();
                list_prefixes(prefixes, sent, seen, &tx, listed, fail);
                drop(tx);
            });
            pool.install(|| {
                rx.into_iter()
                    .par_bridge()
                    .for_each_init(Scratch::default, |scratch, p| {
                        emit(super::counted(|| work(&p, scratch)))
                    });
            });
            lister.join().expect("the lister does not panic");
        });
        Ok(())
    }

    /// Lists each prefix, sending each NEFF to the workers once its entry
    /// is complete, then the entries that hold none.
    fn list_prefixes(
        prefixes: &[PathBuf],
        // Paths sent already (roots may overlap).
        mut sent: HashSet<PathBuf>,
        seen: &Seen,
        tx: &mpsc::Sender<PathBuf>,
        listed: &(dyn Fn(usize) + Sync),
        fail: &(dyn Fn(Record) + Sync),
    ) {
        {
            let mut send = |p: PathBuf| {
                if sent.insert(p.clone()) {
                    listed(1);
                    let _ = tx.send(p);
                }
            };
            for root in prefixes {
                let url = root.to_str().expect("a prefix is a URL");
                let mut held = Held::new();
                let got = crate::remote::list_each(url, &mut |o: Listed| {
                    meet_object(&o, &mut seen.met.lock().expect("lock"));
                    if seen
                        .keep
                        .as_ref()
                        .is_some_and(|k| !k.keeps_listed(url, &o.url))
                    {
                        return;
                    }
                    if o.url.ends_with(".neff") {
                        seen.versions
                            .lock()
                            .expect("lock")
                            .insert(PathBuf::from(&o.url), (o.size, o.version.clone()));
                    }
                    held.key(&o.url, &mut send);
                });
                held.end(&mut send);
                if let Err(e) = got {
                    seen.unlisted.lock().expect("lock").push(root.clone());
                    fail(failed(root, &e, None));
                }
            }
        }
        // Entries holding no NEFF, once every listing is done.
        let parents: HashSet<&std::path::Path> = sent.iter().filter_map(|p| p.parent()).collect();
        let mut bare: Vec<PathBuf> = seen
            .met
            .lock()
            .expect("lock")
            .keys()
            .map(PathBuf::from)
            .filter(|d| !parents.contains(d.as_path()))
            .collect();
        bare.sort();
        listed(bare.len());
        for d in bare {
            let _ = tx.send(d);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn run(keys: &[&str]) -> Vec<(usize, String)> {
            // (keys seen when handed on, path)
            let mut held = Held::new();
            let mut out = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                held.key(k, &mut |p| out.push((i, p.display().to_string())));
            }
            held.end(&mut |p| out.push((keys.len(), p.display().to_string())));
            out
        }

        #[test]
        fn a_neff_in_an_entry_waits_for_the_entrys_last_key_and_others_go_at_once() {
            let got = run(&[
                "s3://b/c/MODULE_1+a/model.done",
                "s3://b/c/MODULE_1+a/model.neff",
                "s3://b/c/MODULE_1+a/model.neff.lock",
                "s3://b/c/MODULE_2+b/model.neff",
                "s3://b/c/MODULE_2+b/x.log",
                "s3://b/d/one.neff",
                "s3://b/d/two.neff",
                "s3://b/e/MODULE_3+c/model.neff",
            ]);
            assert_eq!(
                got,
                [
                    (3, "s3://b/c/MODULE_1+a/model.neff".into()),
                    (5, "s3://b/c/MODULE_2+b/model.neff".into()),
                    (6, "s3://b/d/one.neff".into()),
                    (7, "s3://b/d/two.neff".into()),
                    (8, "s3://b/e/MODULE_3+c/model.neff".into()),
                ]
            );
        }

        #[test]
        fn keys_out_of_order_hold_every_neff_to_the_end_of_the_listing() {
            let got = run(&[
                "s3://b/z/MODULE_1+a/model.neff",
                "s3://b/a/MODULE_2+b/model.neff",
                "s3://b/zz/x",
            ]);
            assert_eq!(got.len(), 2);
            assert!(got.iter().all(|(i, _)| *i == 3), "{got:?}");
        }

        #[test]
        fn an_entry_name_that_prefixes_another_does_not_hold_it() {
            // MODULE_1+a/ is passed by MODULE_1+ab/...
            let got = run(&[
                "s3://b/MODULE_1+a/model.neff",
                "s3://b/MODULE_1+ab/model.neff",
            ]);
            assert_eq!(got[0], (1, "s3://b/MODULE_1+a/model.neff".into()));
        }
    }
}
