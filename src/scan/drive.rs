//! The one walk-and-dispatch of every scan, plain or indexed: how the roots
//! are walked (streamed as found; listed first to be sorted or sharded;
//! bucket prefixes read while they are listed) and in what order what
//! they hold is handed to a [`Visitor`]. The plain scan's visitor reads
//! each file; the catalogue's looks its row up first. Where the walk
//! looked comes back ([`Looked`]): what a catalogue retires rows by.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cache::Met;
use crate::error::Result;
use crate::reader::{Neff, Scratch};
use crate::source::Source;

use super::options::ScanOptions;
use super::record::{cache_entry, record_with, Record};
use super::run::{by_shown, scan_ordered, scan_with};
use super::walk::{self, Found, Seen};

/// One thing a scan found to read (a NEFF, or a compile-cache entry
/// holding none), with what its walk or listing saw of it. (The plain
/// scan reads only its path and entry; a catalogue keys its row on all of
/// it.)
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Find<'a> {
    /// What it is: a local path, or a remote object or prefix.
    pub(crate) source: &'a Source,
    /// What the walk or the listing met of its compile-cache entry.
    pub(crate) met: Option<Met>,
    /// Whether its path goes through a symbolic link the walk followed
    /// (noted only when the visitor asks for places): its real path is then
    /// not its root's joined with the rest.
    pub(crate) linked: bool,
    /// What a listing said of it (size, ETag), if it is a listed object.
    pub(crate) version: Option<(u64, String)>,
}

impl Find<'_> {
    /// Reads it as the plain scan does: its record, and `extra` of the
    /// open NEFF when it opens.
    pub(crate) fn read<T>(
        self,
        opts: &ScanOptions,
        scratch: &mut Scratch,
        extra: impl FnOnce(&Neff) -> T,
    ) -> (Record, Option<T>) {
        record_with(self.source, opts, scratch, self.met, extra)
    }

    #[cfg_attr(not(feature = "catalog"), allow(dead_code))]
    /// Judges its compile-cache entry again into `r` (a record made before,
    /// by an earlier scan) from what this walk met of the entry.
    pub(crate) fn judge_entry(self, r: &mut Record, opts: &ScanOptions) {
        cache_entry(self.source, r, &opts.open, self.met);
    }
}

/// What a scan does with what its walk finds. `visit` runs on the scan's
/// workers, `done` gets each result as it is made (in path order when the
/// scan is sorted), `failed` each walk or listing error as a record.
pub(crate) trait Visitor: Sync {
    /// What a visit makes.
    type Out: Send;
    /// Whether the walk notes where it looked ([`Looked`]).
    fn places(&self) -> bool {
        false
    }
    /// Told once, before the first visit, how many files will be visited
    /// (`None`: not known ahead, the walk or a listing streamed).
    fn start(&self, _files: Option<usize>) -> Result<()> {
        Ok(())
    }
    /// Looks at one thing found.
    fn visit(&self, found: Find<'_>, scratch: &mut Scratch) -> Self::Out;
    /// Takes one visit's result.
    fn done(&self, out: Self::Out);
    /// Takes a walk or listing error.
    fn failed(&self, r: Record);
    /// The path a result is sorted by (as its record shows it).
    fn path(out: &Self::Out) -> &str;
}

/// Where a scan looked (noted when its visitor asks for places: the
/// catalogue's retires rows by it; the plain scan's does not ask).
#[derive(Default)]
#[cfg_attr(not(feature = "catalog"), allow(dead_code))]
pub(crate) struct Looked {
    /// The directories the walk listed whole, and those it failed to.
    pub(crate) walked: crate::places::Walked,
    /// The symbolic links the walk went through.
    pub(crate) linked: HashSet<PathBuf>,
    /// The bucket prefixes whose listing failed: what they hold is unknown.
    pub(crate) unlisted: Vec<PathBuf>,
    /// Sharded: every file of the walk, all shards' (each is still there).
    pub(crate) all: Option<Vec<Source>>,
}

/// Walks `roots` as `opts` says and hands what it finds to `v`; `listed(n)`
/// is told each time `n` more paths are queued (a progress bar's length).
/// The only place a scan's shape is decided:
/// - bucket or repository prefixes among the roots (unsharded): read while
///   listed, the rest listed first; sorted, every result is held and
///   sorted at the end;
/// - unsorted, unsharded, no root inside another: each file read as the
///   walk finds it, nothing kept per file;
/// - otherwise the walk is listed whole (sharded, then sorted by path
///   when asked) before anything is read.
pub(crate) fn drive<V: Visitor>(
    roots: &[Source],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    v: &V,
) -> Result<Looked> {
    let prefixes = streamed_prefixes(roots, opts);
    if prefixes.is_some() && opts.sorted {
        let sorting = Sorting {
            inner: v,
            held: Mutex::new(Vec::new()),
        };
        let got = listed_first(prefixes, roots, opts, listed, &sorting);
        sorting.finish();
        return got;
    }
    if prefixes.is_none() && opts.shard.is_none() && !opts.sorted && disjoint(roots) {
        return streamed(roots, opts, listed, v);
    }
    listed_first(prefixes, roots, opts, listed, v)
}

/// Each thing read as the walk finds it ([`super::streamed`]).
fn streamed<V: Visitor>(
    roots: &[Source],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    v: &V,
) -> Result<Looked> {
    v.start(None)?;
    let kept = super::streamed::stream_with(
        roots,
        opts,
        v.places(),
        listed,
        &|r| v.failed(r),
        &|source, met, linked, scratch| {
            let found = Find {
                source,
                met,
                linked,
                version: None,
            };
            v.visit(found, scratch)
        },
        &|o| v.done(o),
    )?;
    Ok(Looked {
        walked: kept.listed,
        linked: kept.linked,
        ..Looked::default()
    })
}

/// The walk of the local roots and single objects listed first (sharded;
/// sorted by path when asked), then each file read; the bucket prefixes
/// in `prefixes` read while they are listed.
fn listed_first<V: Visitor>(
    prefixes: Option<(Vec<Source>, Vec<Source>)>,
    roots: &[Source],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    v: &V,
) -> Result<Looked> {
    let (prefixes, rest) = match &prefixes {
        Some((p, r)) => (Some(p.as_slice()), r.as_slice()),
        None => (None, roots),
    };
    let Found {
        paths,
        mut errors,
        versions,
        linked,
        met,
        mut unlisted,
        listed: walked,
    } = walk::list_kept(rest, None, &opts.walk, v.places())?;
    // This shard's files; a visitor noting places keeps all of them.
    let (mut mine, all) = match opts.shard {
        None => (paths, None),
        Some(_) if v.places() => (
            crate::places::shard_of(paths.clone(), opts.shard),
            Some(paths),
        ),
        Some(_) => (crate::places::shard_of(paths, opts.shard), None),
    };
    // Sorted here (not when a listing streams: its results are held and
    // sorted), the walk's errors come among the results; else first.
    let ordered = opts.sorted && prefixes.is_none();
    if ordered {
        by_shown(&mut mine);
    } else {
        errors.drain(..).for_each(|r| v.failed(r));
    }
    let seen = match prefixes {
        Some(_) => Seen::keeping(opts.walk.keep()?),
        None => Seen::default(),
    };
    let work = |source: &Source, scratch: &mut Scratch| {
        let path = source.path();
        let found = Find {
            source,
            met: seen.met(&met, path),
            linked: walk::through_link(&linked, path),
            version: seen.version(&versions, path),
        };
        v.visit(found, scratch)
    };
    let done = |o| v.done(o);
    match prefixes {
        #[cfg(feature = "remote")]
        Some(prefixes) => {
            v.start(None)?;
            let fail = |r| v.failed(r);
            super::listing::read_while_listing(
                prefixes, &mine, opts.jobs, &seen, listed, &work, &done, &fail,
            )?;
        }
        _ => {
            v.start(Some(mine.len()))?;
            listed(mine.len());
            if ordered {
                scan_ordered(&mine, errors, opts.jobs, &work, &done, &|r| v.failed(r))?;
            } else {
                scan_with(&mine, opts.jobs, &work, &done)?;
            }
        }
    }
    unlisted.extend(seen.unlisted());
    Ok(Looked {
        walked,
        linked,
        unlisted,
        all,
    })
}

/// A visitor whose results (and failures) are held, to be handed on to
/// `inner` sorted by path at the end: how a sorted scan of prefixes read
/// while they are listed keeps its order, at the cost of holding every
/// result.
struct Sorting<'v, V: Visitor> {
    inner: &'v V,
    held: Mutex<Vec<Held<V::Out>>>,
}

/// One result held, or one failure (boxed: failures are few, results many).
enum Held<O> {
    Done(O),
    Failed(Box<Record>),
}

impl<V: Visitor> Sorting<'_, V> {
    /// Hands on everything held, sorted by path (stably; also when the scan
    /// failed, before its error).
    fn finish(self) {
        fn path<V: Visitor>(h: &Held<V::Out>) -> &str {
            match h {
                Held::Done(o) => V::path(o),
                Held::Failed(r) => &r.path,
            }
        }
        let mut held = self.held.into_inner().expect("lock");
        held.sort_by(|a, b| path::<V>(a).cmp(path::<V>(b)));
        for h in held {
            match h {
                Held::Done(o) => self.inner.done(o),
                Held::Failed(r) => self.inner.failed(*r),
            }
        }
    }
}

impl<V: Visitor> Visitor for Sorting<'_, V> {
    type Out = V::Out;
    fn places(&self) -> bool {
        self.inner.places()
    }
    fn start(&self, files: Option<usize>) -> Result<()> {
        self.inner.start(files)
    }
    fn visit(&self, found: Find<'_>, scratch: &mut Scratch) -> V::Out {
        self.inner.visit(found, scratch)
    }
    fn done(&self, out: V::Out) {
        self.held.lock().expect("lock").push(Held::Done(out));
    }
    fn failed(&self, r: Record) {
        self.held
            .lock()
            .expect("lock")
            .push(Held::Failed(Box::new(r)));
    }
    fn path(out: &V::Out) -> &str {
        V::path(out)
    }
}

/// The roots split into the bucket or repository prefixes to read while
/// they are listed, and the rest (local roots, single objects), when there
/// is any such prefix and the scan is not sharded (a shard is a slice of
/// the sorted whole, so it lists everything first).
fn streamed_prefixes(roots: &[Source], opts: &ScanOptions) -> Option<(Vec<Source>, Vec<Source>)> {
    if opts.shard.is_none() && roots.iter().any(Source::is_prefix) {
        return Some(roots.iter().cloned().partition(Source::is_prefix));
    }
    None
}

/// Whether a streamed walk of `roots` meets each file once: no root is
/// another's ancestor or twin, as the words say (a sorted walk drops the
/// second sighting; a streamed one keeps no list to find it in). Sorted
/// by components, a root's descendants follow it at once: neighbours
/// are enough to compare (a list of 100,000 files is not compared pair
/// by pair).
fn disjoint(roots: &[Source]) -> bool {
    let mut sorted: Vec<&Path> = roots.iter().map(Source::path).collect();
    sorted.sort();
    sorted.windows(2).all(|w| !w[1].starts_with(w[0]))
}
