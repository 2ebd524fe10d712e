//! Finding what to read: the walk of local roots (each compile-cache
//! entry walked whole in one step), its finds kept (sorted, sharded) or
//! handed on as found; the listing of bucket prefixes; what the walk met
//! of each compile-cache entry, and the paths a list file names.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cache::{self};
use crate::error::{Error, Result};
use crate::source::Source;

use super::handoff::{Batch, Handoff};
use super::options::*;
use super::record::*;
use super::run::*;

/// The longest path a list may hold, in bytes: Linux's `PATH_MAX` (4096,
/// its ending NUL included) less that NUL. A longer line names no file
/// the system could open, so the list is refused instead of read on.
pub const LIST_LINE_MAX: usize = 4095;

/// The paths of a list, one a line (`find -print`) or, with `nul`, each
/// ended by a NUL byte (`find -print0`, for names holding newlines): as
/// `neff scan --files-from FILE` (or `-`, standard input) takes them. Empty
/// entries are skipped; names need not be UTF-8. The list is read a line
/// at a time: a line longer than [`LIST_LINE_MAX`] bytes (a `\r` before
/// its newline aside) is an `InvalidData` error, read no further than its
/// limit, whatever the length of the stream.
///
/// ```
/// let got = neff::scan::path_list(&b"a.neff\0dir/\nname.neff\0"[..], true)?;
/// assert_eq!(got, ["a.neff", "dir/\nname.neff"].map(std::path::PathBuf::from));
/// let long = vec![b'a'; neff::scan::LIST_LINE_MAX + 1];
/// assert!(neff::scan::path_list(&long[..], false).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn path_list(r: impl std::io::Read, nul: bool) -> std::io::Result<Vec<PathBuf>> {
    use std::io::{BufRead, Read};
    use std::os::unix::ffi::OsStrExt;
    let sep = if nul { 0 } else { b'\n' };
    // A line's bytes, its `\r` and its separator.
    let most = LIST_LINE_MAX + 2;
    let mut r = std::io::BufReader::new(r);
    let mut out = Vec::new();
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        let got = (&mut r).take(most as u64).read_until(sep, &mut line)?;
        if got == 0 {
            break;
        }
        let ended = line.last() == Some(&sep);
        if ended {
            line.pop();
        }
        let p = if nul {
            &line[..]
        } else {
            line.strip_suffix(b"\r").unwrap_or(&line)
        };
        if p.len() > LIST_LINE_MAX || !ended && got == most {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "entry {n} of the list is longer than a path may be ({LIST_LINE_MAX} bytes)"
                ),
            ));
        }
        if !p.is_empty() {
            out.push(PathBuf::from(std::ffi::OsStr::from_bytes(p)));
        }
    }
    Ok(out)
}

/// Lists every `*.neff` under `roots` (files named directly are kept
/// whatever their name), and every compile-cache entry (`MODULE_*`
/// directory) that holds no `model.neff` (a failed, locked or empty
/// entry gets a record too), sorted by path and sharded. Walk errors (a
/// symlink loop, an unreadable directory) come back as records, not
/// failures.
pub fn list(
    roots: &[impl Clone + Into<Source>],
    shard: Option<(usize, usize)>,
) -> (Vec<PathBuf>, Vec<Record>) {
    let roots = crate::source::all_of(roots);
    let found = list_kept(&roots, shard, &Walk::default(), false)
        .expect("the default walk has no globs to refuse");
    (paths_of(found.paths), found.errors)
}

/// The paths of `sources`, as named.
fn paths_of(sources: Vec<Source>) -> Vec<PathBuf> {
    sources.into_iter().map(Source::into_path).collect()
}

/// [`list`] as `opts` says: its shard, and its [`Walk`] (globs, depth,
/// links). `Err` only for a glob that does not compile.
pub fn list_with(roots: &[impl Clone + Into<Source>], opts: &ScanOptions) -> Result<Walked> {
    let roots = crate::source::all_of(roots);
    let found = list_kept(&roots, opts.shard, &opts.walk, false)?;
    Ok(Walked {
        paths: paths_of(found.paths),
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
    pub(super) met: std::collections::HashMap<std::ffi::OsString, cache::Met>,
}

impl Walked {
    /// [`scan`] of [`paths`](Self::paths), each compile-cache entry judged
    /// from what the walk saw of it.
    pub fn scan(&self, opts: &ScanOptions, emit: &(dyn Fn(Record) + Sync)) -> Result<()> {
        let sources: Vec<Source> = self.paths.iter().map(Source::of).collect();
        scan_with(
            &sources,
            opts.jobs,
            &|s, scratch| record_with(s, opts, scratch, met_of(&self.met, s.path()), |_| ()).0,
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
    pub(crate) paths: Vec<Source>,
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

/// Finds what to read under `roots` (see [`Found`]): the local roots
/// walked in parallel, the bucket prefixes listed; sorted, then sharded;
/// the directories the walk listed whole noted when `places` (what a
/// catalogue retires rows by: [`Found::listed`]).
pub(crate) fn list_kept(
    roots: &[Source],
    shard: Option<(usize, usize)>,
    walk: &Walk,
    places: bool,
) -> Result<Found> {
    let c = Collect {
        out: Out::Keep { places },
        ..Collect::default()
    };
    for root in roots {
        match root.local_path() {
            Some(dir) => c.local_root(dir, walk)?,
            #[cfg(feature = "remote")]
            None => c.remote_root(root, walk)?,
            #[cfg(not(feature = "remote"))]
            None => {}
        }
    }
    Ok(c.finish(shard))
}

/// One thing a streamed walk found to read: a NEFF, or a compile-cache
/// entry holding none, with what the walk met of its entry, and (noted
/// only when the walk notes its places) whether its path goes through a
/// symbolic link the walk followed (its real path is then not its root's
/// joined with the rest).
pub(super) type Find = (Source, Option<cache::Met>, bool);

/// What a streamed walk noted, when asked to, of where it looked: the
/// directories it listed whole, and the links it went through.
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Kept {
    pub(crate) listed: crate::places::Walked,
    pub(crate) linked: std::collections::HashSet<PathBuf>,
}

/// Walks `roots` (local directories and files, single objects) and hands
/// each thing to read to `to` as soon as it is found (a compile-cache
/// entry once the walk has met all of its files; each thread of the walk
/// hands its finds on in batches, [`Handoff`]); walk errors go to
/// `fail` as records, and `listed(1)` is told of each thing sent. Nothing
/// is kept per file: what the walk holds is the directories it has yet
/// to read, and, with `places`, the directories it listed (not a
/// compile-cache entry's: `places`) and the links it met, which it
/// returns. `Err` only for a glob that does not compile.
pub(super) fn stream(
    roots: &[Source],
    walk: &Walk,
    places: bool,
    to: Handoff<'_, Find>,
    listed: &(dyn Fn(usize) + Sync),
    fail: &(dyn Fn(Record) + Sync),
) -> Result<Kept> {
    let c = Collect {
        out: Out::Send {
            to: &to,
            listed,
            fail,
            places,
        },
        ..Collect::default()
    };
    for root in roots {
        match root.local_path() {
            Some(dir) => c.local_root(dir, walk)?,
            // One object (the prefixes are listed, not streamed).
            None => c.send(&mut c.batch(), root.clone(), None),
        }
    }
    Ok(Kept {
        listed: c.places.into_lists(),
        linked: c.linked.into_inner().expect("lock"),
    })
}

/// Where a walk's finds go.
enum Out<'a> {
    /// Kept, to be sorted and sharded at the end ([`Collect::finish`]),
    /// with the directories listed whole and the links met when
    /// `places`.
    Keep { places: bool },
    /// Handed on as found, errors too; the directories listed whole and
    /// the links met noted when `places`.
    Send {
        to: &'a Handoff<'a, Find>,
        listed: &'a (dyn Fn(usize) + Sync),
        fail: &'a (dyn Fn(Record) + Sync),
        places: bool,
    },
}

impl Default for Out<'_> {
    fn default() -> Self {
        Out::Keep { places: false }
    }
}

/// What one step of a walk found: the NEFFs, and what it met of each
/// compile-cache entry (every entry directory is a key, whether it holds a
/// NEFF or not). A compile-cache entry is walked whole in one step.
#[derive(Default)]
struct Finds {
    neffs: Vec<PathBuf>,
    met: MetBy,
}

/// What a walk met of each compile-cache entry, by the entry's directory.
type MetBy = std::collections::HashMap<std::ffi::OsString, cache::Met>;

impl Finds {
    fn one(p: PathBuf) -> Finds {
        Finds {
            neffs: vec![p],
            ..Finds::default()
        }
    }
}

/// What a walk gathers, from every thread of it.
#[derive(Default)]
struct Collect<'a> {
    out: Out<'a>,
    found: Mutex<Vec<Source>>,
    errors: Mutex<Vec<Record>>,
    versions: Mutex<Versions>,
    unlisted: Mutex<Vec<PathBuf>>,
    /// The directories symlink loops led back to (each loop reported once).
    loops: Mutex<std::collections::HashSet<PathBuf>>,
    linked: Mutex<std::collections::HashSet<PathBuf>>,
    /// What the walk met of each compile-cache entry, by the entry's
    /// directory: every entry is a key (those holding no NEFF get a record).
    met: Mutex<MetBy>,
    /// What the listings of bucket prefixes met of each compile-cache
    /// entry, by the entry's prefix.
    #[cfg(feature = "remote")]
    listed_met: Mutex<MetBy>,
    places: crate::places::Places,
}

impl Collect<'_> {
    /// A walk error at the local `path`, reported as a record.
    fn fail(&self, path: &Path, e: &Error) {
        self.report(failed(&Source::local(path.to_path_buf()), e, None));
    }

    /// A record of an error: kept, or handed on.
    fn report(&self, r: Record) {
        match &self.out {
            Out::Keep { .. } => self.errors.lock().expect("lock").push(r),
            Out::Send { fail, .. } => fail(r),
        }
    }

    /// Hands on what one step of the walk found: kept, or added to this
    /// thread's `batch` (each NEFF with what was met of its entry, then the
    /// entries holding none).
    fn deliver(&self, batch: &mut Option<Batch<'_, '_, Find>>, finds: Finds) {
        let Out::Send { .. } = &self.out else {
            let neffs = finds.neffs.into_iter().map(Source::local);
            self.found.lock().expect("lock").extend(neffs);
            if !finds.met.is_empty() {
                self.met.lock().expect("lock").extend(finds.met);
            }
            return;
        };
        let parents: std::collections::HashSet<&Path> =
            finds.neffs.iter().filter_map(|p| p.parent()).collect();
        let mut bare: Vec<PathBuf> = finds
            .met
            .keys()
            .map(PathBuf::from)
            .filter(|d| !parents.contains(d.as_path()))
            .collect();
        bare.sort();
        for p in finds.neffs.into_iter().chain(bare) {
            let met = met_of(&finds.met, &p);
            self.send(batch, Source::local(p), met);
        }
    }

    /// A batch for one thread of the walk to hand its finds on in (`None`
    /// for a walk whose finds are kept).
    fn batch(&self) -> Option<Batch<'_, '_, Find>> {
        match &self.out {
            Out::Send { to, .. } => Some(to.batch()),
            Out::Keep { .. } => None,
        }
    }

    /// Adds one thing found, with what the walk met of its entry, to the
    /// batch handed on to the readers.
    fn send(
        &self,
        batch: &mut Option<Batch<'_, '_, Find>>,
        found: Source,
        met: Option<cache::Met>,
    ) {
        if let (Out::Send { listed, .. }, Some(batch)) = (&self.out, batch) {
            listed(1);
            let linked = self.places() && self.through_link(found.path());
            batch.push((found, met, linked));
        }
    }

    /// Whether the directories listed and the links met are noted.
    fn places(&self) -> bool {
        match self.out {
            Out::Keep { places } | Out::Send { places, .. } => places,
        }
    }

    /// Whether `p` is, or is below, a link the walk met (each met before
    /// what the walk found through it).
    fn through_link(&self, p: &Path) -> bool {
        through_link(&self.linked.lock().expect("lock"), p)
    }

    /// A root that is a URL: one object, or a prefix listed whole.
    #[cfg(feature = "remote")]
    fn remote_root(&self, root: &Source, walk: &Walk) -> Result<()> {
        let Some(url) = root.url().filter(|_| root.is_prefix()) else {
            // One object, named as a file is.
            self.found.lock().expect("lock").push(root.clone());
            return Ok(());
        };
        match crate::remote::list_all(url) {
            Ok(objects) => {
                let keep = walk.keep()?;
                let mut found = self.found.lock().expect("lock");
                let mut versions = self.versions.lock().expect("lock");
                for o in objects {
                    meet_object(&o, &mut self.listed_met.lock().expect("lock"));
                    if o.url.ends_with(".neff") && keep.keeps_listed(url, &o.url) {
                        versions.insert(PathBuf::from(&o.url), (o.size, o.version));
                        found.push(Source::remote(o.url));
                    }
                }
            }
            Err(e) => {
                self.unlisted
                    .lock()
                    .expect("lock")
                    .push(root.path().to_path_buf());
                self.report(failed(root, &e, None));
            }
        }
        Ok(())
    }

    /// A local root: a file is read as it is, a FIFO or device refused, a
    /// directory walked in parallel.
    fn local_root(&self, root: &Path, walk: &Walk) -> Result<()> {
        match std::fs::metadata(root) {
            Ok(m) if m.is_file() => {
                self.deliver(&mut self.batch(), Finds::one(root.to_path_buf()));
                return Ok(());
            }
            Ok(m) if !m.is_dir() => {
                // A FIFO or device would block or never end: refuse it.
                self.fail(root, &Error::refused("not a regular file or directory"));
                return Ok(());
            }
            Err(e) => {
                self.fail(root, &Error::Io(e));
                return Ok(());
            }
            Ok(_) => {}
        }
        let overrides = walk.overrides(root)?;
        let builder = walker(root, walk, walk.max_depth, overrides.as_ref());
        let at = Walking {
            root,
            walk,
            overrides: overrides.as_ref(),
        };
        let at = &at;
        builder.build_parallel().run(|| {
            // Each thread's finds go in a batch of its own, handed on
            // when due and when the thread ends.
            let mut batch = self.batch();
            Box::new(move |ent| self.visit(at, &mut batch, ent))
        });
        Ok(())
    }

    /// One step of a local walk: a file or directory met, or an error. A
    /// compile-cache entry's directory is walked whole here, so that the
    /// entry is handed on complete.
    fn visit(
        &self,
        at: &Walking<'_>,
        batch: &mut Option<Batch<'_, '_, Find>>,
        ent: std::result::Result<ignore::DirEntry, ignore::Error>,
    ) -> ignore::WalkState {
        let e = match ent {
            Ok(e) => e,
            Err(err) => {
                self.walk_error(at.root, &err);
                return ignore::WalkState::Continue;
            }
        };
        self.place(at, &e, e.depth());
        if matches!(self.out, Out::Keep { places: true }) {
            // A catalogue keeps the whole walk anyway: the parallel walk
            // goes into each entry (its directory read once, not again by
            // a walk of the entry), and what it meets is noted as met.
            let mut neffs = Vec::new();
            self.meet(&mut self.met.lock().expect("lock"), &mut neffs, &e);
            if !neffs.is_empty() {
                let mut found = self.found.lock().expect("lock");
                found.extend(neffs.into_iter().map(Source::local));
            }
            return ignore::WalkState::Continue;
        }
        let is_entry = e.file_type().is_some_and(|t| t.is_dir())
            && e.file_name().to_str().is_some_and(cache::is_entry_name);
        let mut finds = Finds::default();
        self.meet(&mut finds.met, &mut finds.neffs, &e);
        if is_entry {
            self.walk_entry(at, &e, &mut finds);
        }
        if !finds.neffs.is_empty() || !finds.met.is_empty() {
            self.deliver(batch, finds);
        }
        if is_entry {
            ignore::WalkState::Skip
        } else {
            ignore::WalkState::Continue
        }
    }

    /// Notes a directory the walk lists, when asked to (what a catalogue
    /// retires rows by).
    fn place(&self, at: &Walking<'_>, e: &ignore::DirEntry, depth: usize) {
        if self.places() {
            let entry = e.file_name().to_str().is_some_and(cache::is_entry_name);
            self.places
                .entry(at.root, e, depth, at.walk.max_depth, entry);
        }
    }

    /// A walk error: noted (the directory it names was not listed whole)
    /// and reported, a loop met again through another link once.
    fn walk_error(&self, root: &Path, err: &ignore::Error) {
        self.places.error(err);
        if let Some(a) = loop_ancestor(err) {
            let a = std::fs::canonicalize(a).unwrap_or_else(|_| a.to_path_buf());
            if !self.loops.lock().expect("lock").insert(a) {
                return;
            }
        }
        let path = walk_error_path(err).unwrap_or_else(|| root.to_path_buf());
        self.fail(&path, &Error::Io(std::io::Error::other(err.to_string())));
    }

    /// Notes what the walk met at `e` in `finds`: a file of a compile-cache
    /// entry, a NEFF, an entry's directory.
    fn meet(&self, met: &mut MetBy, neffs: &mut Vec<PathBuf>, e: &ignore::DirEntry) {
        let link = e.path_is_symlink();
        if link && self.places() {
            self.linked
                .lock()
                .expect("lock")
                .insert(e.path().to_path_buf());
        }
        meet_parts(met, neffs, e.path(), e.file_name(), link, e.file_type());
    }

    /// Walks the compile-cache entry at `e` whole, one directory after
    /// another on this thread, as the parallel walk would (its globs, its
    /// depth, its links, its loops), into `finds`.
    fn walk_entry(&self, at: &Walking<'_>, e: &ignore::DirEntry, finds: &mut Finds) {
        let depth = e.depth();
        if at.walk.max_depth.is_some_and(|m| depth >= m) {
            return;
        }
        if walk_flat(at, e.path(), finds) {
            return;
        }
        let max_depth = at.walk.max_depth.map(|m| m - depth);
        for ent in walker(e.path(), at.walk, max_depth, at.overrides).build() {
            match ent {
                Ok(sub) if sub.depth() == 0 => {}
                Ok(sub) => {
                    self.place(at, &sub, depth + sub.depth());
                    self.meet(&mut finds.met, &mut finds.neffs, &sub);
                }
                Err(err) => self.walk_error(at.root, &as_walked(err, at.root, e.path())),
            }
        }
    }

    /// The paths sorted (an entry holding any NEFF is that NEFF's record;
    /// one holding none gets its own), then sharded.
    fn finish(self, shard: Option<(usize, usize)>) -> Found {
        let mut paths = self.found.into_inner().expect("lock");
        paths.sort();
        paths.dedup();
        #[allow(unused_mut)]
        let mut met = self.met.into_inner().expect("lock");
        let parents: std::collections::HashSet<&Path> =
            paths.iter().filter_map(|p| p.path().parent()).collect();
        let bare_in = |met: &MetBy| -> Vec<PathBuf> {
            met.keys()
                .map(PathBuf::from)
                .filter(|d| !parents.contains(d.as_path()))
                .collect()
        };
        #[allow(unused_mut)]
        let mut bare: Vec<Source> = bare_in(&met).into_iter().map(Source::local).collect();
        #[cfg(feature = "remote")]
        {
            let listed = self.listed_met.into_inner().expect("lock");
            let urls = bare_in(&listed).into_iter();
            bare.extend(urls.map(|u| Source::remote(u.to_string_lossy().into_owned())));
            met.extend(listed);
        }
        drop(parents);
        if !bare.is_empty() {
            paths.extend(bare);
            paths.sort();
        }
        Found {
            paths: shard_of(paths, shard),
            errors: self.errors.into_inner().expect("lock"),
            versions: self.versions.into_inner().expect("lock"),
            linked: self.linked.into_inner().expect("lock"),
            met,
            unlisted: self.unlisted.into_inner().expect("lock"),
            listed: self.places.into_lists(),
        }
    }
}

/// Notes in `finds` what a walk met at `path` (named `name`, of kind
/// `kind`, a link when `link`): a file of a compile-cache entry, a NEFF,
/// an entry's directory.
fn meet_parts(
    met: &mut MetBy,
    neffs: &mut Vec<PathBuf>,
    path: &Path,
    name: &std::ffi::OsStr,
    link: bool,
    kind: Option<std::fs::FileType>,
) {
    if let Some(dir) = entry_above(path, name) {
        let rel = path.strip_prefix(dir).unwrap_or(path);
        met.entry(dir.as_os_str().to_owned())
            .or_default()
            .file(rel.as_os_str(), path, link, kind);
    }
    let is_file = kind.is_some_and(|t| t.is_file());
    if is_file && path.extension().is_some_and(|x| x == "neff") {
        neffs.push(path.to_path_buf());
    } else if kind.is_some_and(|t| t.is_dir()) && name.to_str().is_some_and(cache::is_entry_name) {
        met.entry(path.as_os_str().to_owned()).or_default();
    }
}

/// The walk of the common compile-cache entry, a directory of files only:
/// one `read_dir`, each file's kind as the directory gives it, each kept or
/// not by the globs as the walk keeps a file. `false`, nothing noted, when
/// the entry holds a directory or a link or its listing fails: it is then
/// walked as the parallel walk would walk it (its subdirectories, links,
/// loops and errors).
fn walk_flat(at: &Walking<'_>, dir: &Path, finds: &mut Finds) -> bool {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut files = Vec::new();
    for ent in listing {
        let Ok(ent) = ent else { return false };
        let Ok(kind) = ent.file_type() else {
            return false;
        };
        if kind.is_dir() || kind.is_symlink() {
            return false;
        }
        files.push((ent.path(), ent.file_name(), kind));
    }
    for (path, name, kind) in files {
        if let Some(o) = at.overrides {
            // As the walk matches: a leading `./` dropped.
            let p = path.strip_prefix("./").unwrap_or(&path);
            if o.matched(p, false).is_ignore() {
                continue;
            }
        }
        meet_parts(
            &mut finds.met,
            &mut finds.neffs,
            &path,
            &name,
            false,
            Some(kind),
        );
    }
    true
}

/// Whether `p` is, or is below, one of the links a walk went through.
pub(super) fn through_link(linked: &std::collections::HashSet<PathBuf>, p: &Path) -> bool {
    !linked.is_empty() && p.ancestors().any(|a| linked.contains(a))
}

/// The walker of `root` as `walk` says (links, file systems, the globs in
/// `overrides`), to `max_depth` below it: a root's parallel walk and a
/// compile-cache entry's walk alike.
fn walker(
    root: &Path,
    walk: &Walk,
    max_depth: Option<usize>,
    overrides: Option<&ignore::overrides::Override>,
) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.standard_filters(false)
        .hidden(false)
        .follow_links(walk.follow_links)
        .same_file_system(walk.one_file_system)
        .max_depth(max_depth);
    if let Some(o) = overrides {
        b.overrides(o.clone());
    }
    b
}

/// A local root being walked, and how.
struct Walking<'w> {
    root: &'w Path,
    walk: &'w Walk,
    overrides: Option<&'w ignore::overrides::Override>,
}

/// A loop the walk of an entry found, named as the walk of `root` names
/// it: a link back to a directory at or above the entry (the entry's walk
/// knows it by its real path) points to that directory's path in the walk.
fn as_walked(err: ignore::Error, root: &Path, entry: &Path) -> ignore::Error {
    use std::os::unix::fs::MetadataExt;
    match err {
        ignore::Error::WithDepth { depth, err } => ignore::Error::WithDepth {
            depth,
            err: Box::new(as_walked(*err, root, entry)),
        },
        ignore::Error::WithPath { path, err } => ignore::Error::WithPath {
            path,
            err: Box::new(as_walked(*err, root, entry)),
        },
        ignore::Error::Loop { ancestor, child } => {
            let id = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
            let target = id(&ancestor);
            let walked = entry
                .ancestors()
                .take_while(|a| a.starts_with(root))
                .find(|a| target.is_some() && id(a) == target);
            ignore::Error::Loop {
                ancestor: walked.map_or(ancestor, Path::to_path_buf),
                child,
            }
        }
        e => e,
    }
}

/// The compile-cache entry directory a walked file belongs to: its parent
/// when that is a `MODULE_*` directory, or, for a `*.lock` file, the
/// nearest `MODULE_*` directory above it (a lock anywhere in an entry
/// counts).
pub(super) fn entry_above<'p>(path: &'p Path, name: &std::ffi::OsStr) -> Option<&'p Path> {
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
pub(super) fn meet_object(
    o: &crate::remote::Listed,
    met: &mut std::collections::HashMap<std::ffi::OsString, cache::Met>,
) {
    let mut at = 0;
    for part in o.url.split('/') {
        at += part.len() + 1;
        if cache::is_entry_name(part) && at <= o.url.len() {
            met.entry(o.url[..at - 1].into())
                .or_default()
                .object(&o.url[at..], o.size, o.modified);
        }
    }
}

pub(crate) use crate::places::shard_of;
use crate::places::{loop_ancestor, walk_error_path};

/// What the listings of a scan read while it lists have seen so far,
/// shared with the workers reading what they found.
#[derive(Default)]
#[cfg_attr(not(all(feature = "remote", feature = "catalog")), allow(dead_code))]
pub(crate) struct Seen {
    /// What the listings met of each compile-cache entry.
    pub(super) met: Mutex<std::collections::HashMap<std::ffi::OsString, cache::Met>>,
    /// What the listings said of each NEFF (size, ETag).
    pub(super) versions: Mutex<Versions>,
    /// The prefixes whose listing failed, whole or part way: what they
    /// held is unknown.
    pub(super) unlisted: Mutex<Vec<PathBuf>>,
    /// Which listed objects the globs and the depth keep.
    pub(super) keep: Option<crate::places::Keep>,
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
