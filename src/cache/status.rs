//! Every entry of a cache judged: the walk that finds the entries (no link
//! followed below the root), the NEFF an `ok` entry holds read whole, the
//! records and the sums per compiler version.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rayon::prelude::*;
use serde::Serialize;

use super::entry::{self, Listing, Odd, Read, State};
use super::era;
use super::found::{
    lossy, spelled, vllm_lock, vllm_lock_in, CacheError, CacheNote, Found, Kind, Walked,
    VERSION_PREFIX,
};
use super::time;
use super::vllm::{self, Child};
use crate::accessors;
use crate::error::{Error, Result};
use crate::reader::{Neff, Options, Scratch};

/// One compile-cache entry: where it is, what its name says, its state,
/// and its times (absolute: two reports of an unchanged cache are equal).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct CacheEntry {
    /// The entry's directory, by the bytes the file system gave (a
    /// bucket's: its URL). JSON spells it as text: exact when it is
    /// UTF-8, else lossily with the bytes in [`path_bytes`](Self::path_bytes).
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    /// The path's bytes in base64 when they are not UTF-8; `None` when
    /// `path` is exact.
    pub path_bytes: Option<String>,
    /// The compiler version of the `neuronxcc-<version>` directory holding
    /// it (`None` for an entry directly under the root).
    pub compiler: Option<String>,
    /// The graph hash of its name (`MODULE_<graph>+<flags>`).
    pub graph_hash: String,
    /// The flags hash of its name, when it has one.
    pub flags_hash: Option<String>,
    /// Its state.
    pub state: State,
    /// Why it is not `ok`: the NEFF's refusal, the log's last error line,
    /// the lock's time, what could not be read; `None` for `ok` and
    /// `empty`.
    pub reason: Option<String>,
    /// Bytes of its files, at every depth.
    pub bytes: u64,
    /// When its newest file was last modified.
    #[serde(serialize_with = "time::serialize")]
    pub modified: Option<SystemTime>,
    /// When anything in it last changed: the latest modification or
    /// change time of its files and directories (a copy that kept old
    /// modification times changed when it was copied). In a bucket, its
    /// newest object's last-modified time. `prune --min-age` goes by it.
    #[serde(serialize_with = "time::serialize")]
    pub changed: Option<SystemTime>,
    /// When its newest `*.lock` was last modified or changed (any entry
    /// holding one: a fresh lock is a compile in progress).
    #[serde(serialize_with = "time::serialize")]
    pub lock_modified: Option<SystemTime>,
    /// When its `model.neff` was last modified.
    #[serde(serialize_with = "time::serialize")]
    pub neff_modified: Option<SystemTime>,
    /// When its `model.neff` was last read, where the file system keeps
    /// access times (`None` in a bucket).
    #[serde(serialize_with = "time::serialize")]
    pub neff_accessed: Option<SystemTime>,
    /// What the NEFF needs, for `ok` entries: its architecture, NeuronCores
    /// and collective world size (null when it has no collectives).
    pub arch: Option<String>,
    /// NeuronCores the NEFF needs.
    pub num_cores: Option<u64>,
    /// The NEFF's collective world size.
    pub cc_world_size: Option<u128>,
    /// Its `*.lock` files as the judgement met them (a prune asks whether
    /// a live process holds one).
    #[serde(skip)]
    pub(crate) locks: Vec<PathBuf>,
}

/// Every entry of a cache, and what could not be read.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CacheStatus {
    /// The entries, sorted by compiler version and path.
    pub entries: Vec<CacheEntry>,
    /// The parts that could not be read.
    pub errors: Vec<CacheError>,
    /// The parts of the layout that are not entries (vLLM's `nki/`).
    pub notes: Vec<CacheNote>,
}

/// Entries and bytes per state for one compiler version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionSummary {
    /// The compiler version (`None`: entries directly under the root).
    pub compiler: Option<String>,
    /// For each state met: entries and their bytes.
    pub states: BTreeMap<State, (usize, u64)>,
}

impl CacheStatus {
    /// Whether every entry is `ok` and nothing failed to read.
    pub fn all_ok(&self) -> bool {
        self.errors.is_empty() && self.entries.iter().all(|e| e.state == State::Ok)
    }

    /// Whether some part of the cache could not be read: an error, or an
    /// `unreadable` entry (the binary's exit 3).
    pub fn has_unreadable(&self) -> bool {
        !self.errors.is_empty() || self.entries.iter().any(|e| e.state == State::Unreadable)
    }

    /// Entries and bytes by state, per compiler version, newest version
    /// first.
    pub fn by_version(&self) -> Vec<VersionSummary> {
        let mut by: BTreeMap<Option<&str>, BTreeMap<State, (usize, u64)>> = BTreeMap::new();
        for e in &self.entries {
            let s = by.entry(e.compiler.as_deref()).or_default();
            let c = s.entry(e.state).or_default();
            c.0 += 1;
            c.1 += e.bytes;
        }
        let mut out: Vec<VersionSummary> = by
            .into_iter()
            .map(|(v, states)| VersionSummary {
                compiler: v.map(str::to_string),
                states,
            })
            .collect();
        out.sort_by(|a, b| era::order(b.compiler.as_deref(), a.compiler.as_deref()));
        out
    }
}

/// Why `root` cannot be a cache root: it is an entry (`MODULE_*`).
fn entry_as_root(root: &Path) -> Option<Error> {
    let name = root.file_name()?.to_str()?;
    entry::hashes(name)?;
    Some(Error::Usage {
        reason: "a compile-cache entry (MODULE_*), not a cache root: give the directory above it"
            .into(),
    })
}

/// The compiler version a root names (a root that is itself a
/// `neuronxcc-<version>` directory holds that version's entries).
pub fn root_version(root: &Path) -> Option<String> {
    let name = root.file_name()?.to_str()?;
    name.strip_prefix(VERSION_PREFIX).map(str::to_string)
}

/// Finds the entries under `root`: `neuronxcc-*/MODULE_*` directories, and
/// `MODULE_*` directories directly under it (a root that is itself a
/// `neuronxcc-*` directory holds its entries directly); in a root of
/// vLLM's Neuron cache, every directory directly under it ([`Shape`]).
/// The root is followed should it be a link; nothing below it is: an
/// entry that is a link is found (and judged `unknown`), a version
/// directory that is one is an error.
fn find(root: &Path, errors: &mut Vec<CacheError>) -> Result<Walked> {
    let meta = std::fs::metadata(root).map_err(Error::Io)?;
    if !meta.is_dir() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory (a compile cache is one)",
        )));
    }
    if let Some(e) = entry_as_root(root) {
        return Err(e);
    }
    let mut w = Walked {
        layout: root_version(root).is_some(),
        ..Walked::default()
    };
    let mut dirs = vec![(root.to_path_buf(), root_version(root))];
    let mut i = 0;
    while i < dirs.len() {
        let (dir, version) = dirs[i].clone();
        i += 1;
        let Some(names) = list(&dir, i == 1, errors)? else {
            continue;
        };
        let shape = match i == 1 && version.is_none() {
            true => Shape::of(&names),
            false => Shape::default(),
        };
        w.layout |= shape.wrapper || shape.vllm;
        for (name, path, kind) in names {
            let any = kind.is_dir() && !shape.wrapper;
            let vllm = || shape.vllm.then(|| Found::vllm(path.clone(), &name, any));
            let f = Found::named(path.clone(), &name, version.clone()).or_else(|| vllm().flatten());
            if let Some(mut f) = f {
                if kind.is_symlink() {
                    f.odd = Some(Odd::Link(".".into()));
                } else if !kind.is_dir() {
                    errors.push(CacheError::new(
                        &path,
                        "an entry that is not a directory".into(),
                    ));
                    continue;
                }
                w.found.push(f);
            } else if shape.vllm && name.to_str().map(vllm::child) == Some(Child::Nki) {
                w.notes.push(CacheNote::new(
                    &path,
                    "vllm-neuron's NKI kernel cache (nki/<key>.json): not a compile entry, \
                     not judged, never removed"
                        .into(),
                ));
            } else if let Some(s) = name.to_str().and_then(super::staging::parse) {
                // A root a sync writes into is a cache, its first entry not
                // yet in place.
                w.layout = true;
                w.notes.push(CacheNote::new(&path, staging_note(&s)));
            } else if let Some(v) = version_dir(&name) {
                // Version directories sit directly under the root only.
                if i != 1 || version.is_some() {
                    continue;
                }
                if kind.is_symlink() {
                    errors.push(CacheError::new(
                        &path,
                        "a compiler version's directory that is a link: not followed \
                         (give its target as a root to read it)"
                            .into(),
                    ));
                } else if kind.is_dir() {
                    if super::descend::mount_root(&path, false).is_ok_and(|m| m.0 == Some(true)) {
                        errors.push(CacheError::new(
                            &path,
                            "a compiler version's directory that is a mount point: not crossed \
                             (give it as a root to read it)"
                                .into(),
                        ));
                        continue;
                    }
                    dirs.push((path, Some(v)));
                }
            }
        }
    }
    Ok(w)
}

/// What a status says of a staging copy of `neff cache sync`.
fn staging_note(s: &super::staging::Staging) -> String {
    format!(
        "a copy of {} that `neff cache sync` (process {} on {}) makes before it renames it \
         into place, or one a killed sync left: not an entry, never judged or pruned; the next \
         sync removes it once its process is gone",
        s.entry, s.pid, s.host
    )
}

/// One directory's children: name, path, kind, sorted by name; `None`
/// when it cannot be listed (an error noted), `Err` for the root itself.
type Names = Vec<(std::ffi::OsString, PathBuf, std::fs::FileType)>;

fn list(dir: &Path, root: bool, errors: &mut Vec<CacheError>) -> Result<Option<Names>> {
    let list = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if root => return Err(Error::Io(e)),
        Err(e) => {
            errors.push(CacheError::new(dir, e.to_string()));
            return Ok(None);
        }
    };
    let mut names = Vec::new();
    for e in list {
        match e.and_then(|e| Ok((e.file_name(), e.path(), e.file_type()?))) {
            Ok(n) => names.push(n),
            Err(e) => errors.push(CacheError::new(dir, e.to_string())),
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(names))
}

/// Which layouts a root's children show: the compiler wrapper's
/// (`neuronxcc-*`, `MODULE_*`), vLLM's (a `<32 hex key>` directory, one set
/// aside beside it, `nki/`, a `.<key>.compilation_metadata.lock`, or a
/// directory holding `graph.hlo` or `.compilation_complete`). In a root
/// that is vLLM's alone, every directory is an entry: one whose name is
/// not a key is `unknown`, never passed over.
#[derive(Debug, Default, Clone, Copy)]
struct Shape {
    wrapper: bool,
    vllm: bool,
}

impl Shape {
    fn of(names: &Names) -> Shape {
        let mut s = Shape::default();
        for (name, path, kind) in names {
            s.wrapper |=
                version_dir(name).is_some() || Found::named(path.clone(), name, None).is_some();
            let text = name.to_str();
            let dirlike = kind.is_dir() || kind.is_symlink();
            s.vllm |= match text.map_or(Child::Other, vllm::child) {
                Child::Other if kind.is_dir() => vllm::holds_entry_files(path),
                Child::Other => text.is_some_and(vllm::is_root_file),
                Child::Sync => false,
                _ => dirlike,
            };
        }
        s
    }
}

/// The compiler version a directory's name gives (`neuronxcc-<version>`).
fn version_dir(name: &OsStr) -> Option<String> {
    name.to_str()?
        .strip_prefix(VERSION_PREFIX)
        .map(str::to_string)
}

/// Every entry of the compile cache at `root`, judged, in parallel: an `ok`
/// entry's NEFF is read whole, as `neff scan` reads it (and what it needs
/// given).
/// `Err` when the root itself cannot be read, is an entry rather than
/// a root ([`Error::Usage`]), or holds no compile cache of any layout
/// ([`Error::Refused`]: a home directory, an empty directory); parts below it that cannot be read are
/// [`CacheStatus::errors`], or entries in state `unreadable`.
///
/// `root` may be a bucket prefix (`s3://bucket/prefix/`, feature `remote`):
/// its entries are found from one listing of its keys and judged from it,
/// each `ok` entry's NEFF read by ranged requests.
pub fn status(root: &Path) -> Result<CacheStatus> {
    let mut errors = Vec::new();
    #[cfg(feature = "remote")]
    let walked = match super::root::url_of(root) {
        Some(url) => {
            if let Some(e) = entry_as_root(Path::new(url.trim_end_matches('/'))) {
                return Err(e);
            }
            super::bucket::find(url, &mut errors)?
        }
        None => find(root, &mut errors)?,
    };
    #[cfg(not(feature = "remote"))]
    let walked = find(root, &mut errors)?;
    judged(walked, errors, true)
}

/// The entries under the bucket prefix (or hub repository) `url` judged
/// from one listing alone, no object read: an entry whose listing says it
/// finished (its marker and NEFF there, no lock) is `ok` until its NEFF is
/// read ([`rejudge`] reads it). With that listing.
#[cfg(feature = "remote")]
pub(super) fn listed(url: &str) -> Result<(CacheStatus, Vec<crate::remote::Listed>)> {
    if let Some(e) = entry_as_root(Path::new(url.trim_end_matches('/'))) {
        return Err(e);
    }
    let mut errors = Vec::new();
    let (walked, listing) = super::bucket::find_listed(url, &mut errors)?;
    Ok((judged(walked, errors, false)?, listing))
}

/// The entries of the compile cache at the directory `root` judged as
/// [`status`] judges them but for their NEFFs, which are not read: an
/// entry whose files say it finished is `ok` until its NEFF is read
/// ([`rejudge`] reads it). Its logs and markers are read.
pub(super) fn unread(root: &Path) -> Result<CacheStatus> {
    let mut errors = Vec::new();
    let walked = find(root, &mut errors)?;
    judged(walked, errors, false)
}

/// Every entry `walked` found, judged (`reads`: each NEFF read whole; a
/// bucket's logs and markers read too; else a bucket's entries from its
/// listing alone, and on disk no NEFF read), sorted.
fn judged(walked: Walked, errors: Vec<CacheError>, reads: bool) -> Result<CacheStatus> {
    if walked.found.is_empty() && !walked.layout && errors.is_empty() {
        return Err(Error::refused(
            "holds no compile cache of any layout: no neuronxcc-*/ or MODULE_*/ (the compiler \
             wrapper's), no <32 hex key>/ (vLLM's Neuron cache, the LNL stack's)",
        ));
    }
    let mut entries: Vec<CacheEntry> = walked
        .found
        .into_par_iter()
        .map_init(Scratch::default, |scratch, f| {
            let on_disk = f.objects.is_none();
            let e = judge(f, scratch, reads);
            // Removed while it was read (by a prune, or the compiler's
            // own clean-up): it is no longer in the cache, so it is not
            // reported, rather than reported unreadable.
            (!(on_disk && e.state != State::Ok && vanished(&e.path))).then_some(e)
        })
        .flatten()
        .collect();
    entries.sort_by(|a, b| {
        era::order(a.compiler.as_deref(), b.compiler.as_deref()).then(a.path.cmp(&b.path))
    });
    Ok(CacheStatus {
        entries,
        errors,
        notes: walked.notes,
    })
}

/// Whether the entry directory at `dir` is gone.
fn vanished(dir: &Path) -> bool {
    matches!(std::fs::symlink_metadata(dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// What an `ok` entry's NEFF needs.
#[derive(Default)]
struct Needs {
    arch: Option<String>,
    num_cores: Option<u64>,
    cc_world_size: Option<u128>,
}

/// Reads the NEFF at `path` whole (payload, tar) and what it needs; a
/// refusal as `neff scan` words it, an I/O failure (permissions) as
/// unreadable. A NEFF whose access time the read would move, where the
/// caller may not read it without (it is not its owner, nor root), is not
/// read: `--max-size` evicts by that time ([`Options::keep_atime`]).
fn read_neff(path: &Path, scratch: &mut Scratch) -> Read<Needs> {
    let opts = Options::default().keep_atime(true);
    let neff = match Neff::open_scratch(path, &opts, scratch) {
        Ok(n) => n,
        // Named as it is (vLLM's `graph*.neff` too).
        Err(e @ Error::AtimeKept { .. }) => {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            return Read::Unread(format!("{name} {e}"));
        }
        Err(e) => return super::for_scan::read_error(e),
    };
    let needs = Needs {
        arch: accessors::arch(&neff).ok().map(str::to_string),
        num_cores: accessors::num_cores(&neff).ok(),
        cc_world_size: match accessors::has_cc(&neff) {
            Ok(true) => accessors::cc_world_size(&neff).ok(),
            _ => None,
        },
    };
    if let Err(e) = neff.check_unchanged() {
        return Read::Refused(e.to_string());
    }
    neff.recycle(scratch);
    Read::Ok(needs)
}

/// Judges one entry found by the walk; an entry that cannot even be
/// listed is `unreadable`.
fn judge(f: Found, scratch: &mut Scratch, reads: bool) -> CacheEntry {
    let era = match f.kind {
        Kind::Wrapper => era::era(f.compiler.as_deref()),
        _ => era::Era::Vllm,
    };
    let mut e = CacheEntry {
        path_bytes: spelled(&f.dir),
        path: f.dir.clone(),
        compiler: f.compiler.clone(),
        graph_hash: f.graph_hash.clone(),
        flags_hash: f.flags_hash.clone(),
        state: State::Unreadable,
        reason: None,
        bytes: 0,
        modified: None,
        changed: None,
        lock_modified: None,
        neff_modified: None,
        neff_accessed: None,
        arch: None,
        num_cores: None,
        cc_world_size: None,
        locks: Vec::new(),
    };
    if matches!(f.kind, Kind::Aside(_) | Kind::NotAKey) {
        set_aside(&f, &mut e);
        return e;
    }
    let key = match f.kind {
        Kind::Wrapper => "",
        _ => f.graph_hash.as_str(),
    };
    let read = |neff: &Path| match reads {
        true => read_neff(neff, scratch),
        false => Read::Ok(Needs::default()),
    };
    #[cfg(feature = "remote")]
    let judged = match &f.objects {
        Some(first) => {
            let url = f.dir.display().to_string();
            let mut first = Some(first.clone());
            let mut read = read;
            entry::judge_with(
                || match first.take() {
                    Some(objects) => Ok(super::bucket::listing(&objects)),
                    None => super::bucket::relist(&url).map(|o| super::bucket::listing(&o)),
                },
                era,
                key,
                entry::Readers {
                    read: |name: &str| read(Path::new(&format!("{url}/{name}"))),
                    log_line: || match reads {
                        true => super::bucket::log_line(&url),
                        false => Ok("(the log not read)".into()),
                    },
                    marker: || match reads {
                        true => super::bucket::marker_text(&url),
                        false => Ok(String::new()),
                    },
                },
            )
        }
        None => local(&f, era, read),
    };
    #[cfg(not(feature = "remote"))]
    let judged = local(&f, era, read);
    match judged {
        Ok(j) => {
            if let Some(n) = j.read {
                (e.arch, e.num_cores, e.cc_world_size) = (n.arch, n.num_cores, n.cc_world_size);
            }
            e.state = j.state;
            e.reason = j.reason;
            e.bytes = j.listing.bytes;
            e.modified = j.listing.newest;
            e.changed = j.listing.changed;
            e.lock_modified = j.lock_time;
            let times = match f.kind {
                Kind::Wrapper => j.listing.neff_times,
                _ => entry::loader(&j.listing, key)
                    .map(|g| g.times)
                    .unwrap_or_default(),
            };
            e.neff_modified = times.modified;
            e.neff_accessed = times.accessed;
            e.locks = j.listing.locks;
        }
        Err(err) => e.reason = Some(format!("the entry cannot be listed: {err}")),
    }
    e
}

/// Judges a directory under a vLLM root that is no entry of its own: one
/// a fetch set aside beside an entry (by whether its process lives on this
/// host; in a bucket that cannot be told), or one whose name is no key
/// (`unknown`). Its bytes and times are listed; nothing in it is read.
fn set_aside(f: &Found, e: &mut CacheEntry) {
    #[cfg(feature = "remote")]
    let listed = match &f.objects {
        Some(objects) => Ok(super::bucket::listing(objects)),
        None => local_listing(f),
    };
    #[cfg(not(feature = "remote"))]
    let listed = local_listing(f);
    let l = match listed {
        Ok(l) => l,
        Err(err) => {
            e.reason = Some(format!("the entry cannot be listed: {err}"));
            return;
        }
    };
    (e.bytes, e.modified, e.changed) = (l.bytes, l.newest, l.changed);
    let (state, why) = match (&l.odd, f.kind) {
        (Some(odd), _) => odd.judged(),
        (None, Kind::Aside(a)) => {
            vllm::aside_state(a, f.objects.is_none().then(|| vllm::alive(a.pid)))
        }
        _ => (
            State::Unknown,
            vllm::not_a_key(&f.dir.file_name().unwrap_or_default().to_string_lossy()),
        ),
    };
    (e.state, e.reason) = (state, Some(why));
}

/// The listing of an entry on disk (an entry that is a link: that alone).
fn local_listing(f: &Found) -> std::io::Result<Listing> {
    match &f.odd {
        // The entry itself is a link: nothing below it is looked at.
        Some(odd) => {
            let mut l = Listing::default();
            l.note(odd.clone());
            Ok(l)
        }
        None => Listing::walk(&f.dir, true),
    }
}

/// Judges an entry on disk: walked whole (no link followed), its log
/// and marker read only when they are regular files.
fn local(
    f: &Found,
    era: era::Era,
    mut read: impl FnMut(&Path) -> Read<Needs>,
) -> std::io::Result<entry::Judged<Needs>> {
    let log = f.dir.join(entry::LOG);
    let list = || {
        let mut l = local_listing(f)?;
        if f.odd.is_none() && f.kind == Kind::Key {
            let lock = match &f.parent {
                Some(p) => vllm_lock_in(p, &f.graph_hash),
                None => vllm_lock(&f.dir),
            };
            if let Some(lock) = lock {
                l.add_lock(lock);
            }
        }
        Ok(l)
    };
    let key = match f.kind {
        Kind::Wrapper => "",
        _ => f.graph_hash.as_str(),
    };
    entry::judge_with(
        list,
        era,
        key,
        entry::Readers {
            read: |name: &str| read(&f.dir.join(name)),
            log_line: || entry::last_error_line(&log),
            marker: || entry::marker_text(&f.dir),
        },
    )
}

/// The entry `e` judged again now, as [`status`] judged it (in a bucket,
/// from `objects`, its keys as listed now). On disk, `at` names it through
/// the descriptors a prune reached it by (the entry, the directory holding
/// it), so that what is judged is what would be removed.
pub(super) fn rejudge(
    e: &CacheEntry,
    objects: Option<Vec<entry::Obj>>,
    at: Option<(PathBuf, PathBuf)>,
) -> CacheEntry {
    let name = e.path.file_name().unwrap_or_default();
    let f = Found::named(e.path.clone(), name, e.compiler.clone())
        .or_else(|| Found::vllm(e.path.clone(), name, true))
        .map(|mut f| {
            f.objects = objects;
            if let Some((dir, parent)) = at {
                f.dir = dir;
                f.parent = Some(parent);
            }
            f
        });
    match f {
        Some(f) => judge(f, &mut Scratch::default(), true),
        None => CacheEntry {
            state: State::Unknown,
            ..e.clone()
        },
    }
}
