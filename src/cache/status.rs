//! Every entry of a cache judged: the walk that finds the entries, the NEFF
//! an `ok` entry holds read whole, the records and the sums per compiler
//! version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rayon::prelude::*;
use serde::Serialize;

use super::entry::{self, Read, State};
use super::found::{CacheError, Found, VERSION_PREFIX};
use crate::accessors;
use crate::error::{Error, Result};
use crate::reader::{Neff, Options, Scratch};

/// One compile-cache entry: where it is, what its name says, its state.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct CacheEntry {
    /// The entry's directory.
    pub path: String,
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
    /// the lock's age; `None` for `ok` and `empty`.
    pub reason: Option<String>,
    /// Bytes of its files.
    pub bytes: u64,
    /// Seconds since its newest file was last modified.
    pub age_s: Option<u64>,
    /// Seconds since its newest `*.lock` was last modified (any entry
    /// holding one: a fresh lock is a compile in progress).
    pub lock_age_s: Option<u64>,
    /// What the NEFF needs, for `ok` entries: its architecture, NeuronCores
    /// and collective world size (null when it has no collectives).
    pub arch: Option<String>,
    /// NeuronCores the NEFF needs.
    pub num_cores: Option<u64>,
    /// The NEFF's collective world size.
    pub cc_world_size: Option<u128>,
}

/// Every entry of a cache, and what could not be read.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CacheStatus {
    /// The entries, sorted by compiler version and path.
    pub entries: Vec<CacheEntry>,
    /// The parts that could not be read.
    pub errors: Vec<CacheError>,
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
        out.sort_by(|a, b| version_order(b.compiler.as_deref(), a.compiler.as_deref()));
        out
    }
}

/// Compares two compiler versions by their numbers (`2.15.128.0+56dc5a86`
/// before `2.16.0.1+...`), `None` first.
pub(super) fn version_order(a: Option<&str>, b: Option<&str>) -> std::cmp::Ordering {
    fn key(v: &str) -> (Vec<u64>, &str) {
        let nums = v.split(['+', '-']).next().unwrap_or("");
        let n = nums
            .split('.')
            .map(|p| p.parse::<u64>().unwrap_or(0))
            .collect();
        (n, v)
    }
    match (a, b) {
        (Some(a), Some(b)) => key(a).cmp(&key(b)),
        _ => a.is_some().cmp(&b.is_some()),
    }
}

/// Finds the entries under `root`: `neuronxcc-*/MODULE_*` directories, and
/// `MODULE_*` directories directly under it (a root that is itself a
/// `neuronxcc-*` directory holds its entries directly). Links are followed
/// for reading, two levels deep at most, so a loop cannot trap the walk.
fn find(root: &Path, errors: &mut Vec<CacheError>) -> Result<Vec<Found>> {
    let meta = std::fs::metadata(root).map_err(Error::Io)?;
    if !meta.is_dir() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory (a compile cache is one)",
        )));
    }
    let mut found = Vec::new();
    let root_version = root
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(VERSION_PREFIX))
        .map(str::to_string);
    let mut note = |path: &Path, reason: String| {
        errors.push(CacheError {
            path: path.display().to_string(),
            reason,
        })
    };
    let mut dirs = vec![(root.to_path_buf(), root_version)];
    let mut i = 0;
    while i < dirs.len() {
        let (dir, version) = dirs[i].clone();
        i += 1;
        let list = match std::fs::read_dir(&dir) {
            Ok(l) => l,
            Err(e) => {
                note(&dir, e.to_string());
                continue;
            }
        };
        let mut names: Vec<(String, PathBuf)> = Vec::new();
        for e in list {
            match e {
                Ok(e) => names.push((e.file_name().to_string_lossy().into_owned(), e.path())),
                Err(e) => note(&dir, e.to_string()),
            }
        }
        names.sort();
        for (name, path) in names {
            let is_dir = std::fs::metadata(&path).map(|m| m.is_dir());
            if let Some((graph_hash, flags_hash)) = entry::hashes(&name) {
                match is_dir {
                    Ok(true) => found.push(Found {
                        dir: path,
                        compiler: version.clone(),
                        graph_hash,
                        flags_hash,
                        objects: None,
                    }),
                    Ok(false) => note(&path, "an entry that is not a directory".into()),
                    Err(e) => note(&path, e.to_string()),
                }
            } else if let Some(v) = name.strip_prefix(VERSION_PREFIX) {
                // Version directories sit directly under the root only.
                if i == 1 && version.is_none() && matches!(is_dir, Ok(true)) {
                    dirs.push((path, Some(v.to_string())));
                }
            }
        }
    }
    Ok(found)
}

/// Every entry of the compile cache at `root`, judged, in parallel: an `ok`
/// entry's NEFF is read whole, as `neff scan` reads it (and what it needs
/// given).
/// `Err` when the root itself cannot be read; parts below it that cannot
/// be read are [`CacheStatus::errors`].
///
/// `root` may be a bucket prefix (`s3://bucket/prefix/`, feature `remote`):
/// its entries are found from one listing of its keys and judged from it,
/// each `ok` entry's NEFF read by ranged requests.
pub fn status(root: &Path) -> Result<CacheStatus> {
    let mut errors = Vec::new();
    #[cfg(feature = "remote")]
    let found = match root.to_str().filter(|r| crate::remote::is_url(r)) {
        Some(url) => super::bucket::find(url, &mut errors)?,
        None => find(root, &mut errors)?,
    };
    #[cfg(not(feature = "remote"))]
    let found = find(root, &mut errors)?;
    let now = SystemTime::now();
    let judged: Vec<std::result::Result<CacheEntry, CacheError>> = found
        .into_par_iter()
        .map_init(Scratch::default, |scratch, f| judge(f, now, scratch))
        .collect();
    let mut entries = Vec::with_capacity(judged.len());
    for j in judged {
        match j {
            Ok(e) => entries.push(e),
            Err(e) => errors.push(e),
        }
    }
    entries.sort_by(|a, b| {
        version_order(a.compiler.as_deref(), b.compiler.as_deref()).then(a.path.cmp(&b.path))
    });
    Ok(CacheStatus { entries, errors })
}

/// What an `ok` entry's NEFF needs.
#[derive(Default)]
struct Needs {
    arch: Option<String>,
    num_cores: Option<u64>,
    cc_world_size: Option<u128>,
}

/// Reads the NEFF at `path` whole (payload, tar) and what it needs; a
/// refusal as `neff scan` words it.
fn read_neff(path: &Path, scratch: &mut Scratch) -> Read<Needs> {
    let neff = match Neff::open_scratch(path, &Options::default(), scratch) {
        Ok(n) => n,
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Read::Vanished,
        Err(Error::Remote {
            io: std::io::ErrorKind::NotFound,
            ..
        }) => return Read::Vanished,
        Err(e) => return Read::Refused(e.to_string()),
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

/// Judges one entry found by the walk.
fn judge(
    f: Found,
    now: SystemTime,
    scratch: &mut Scratch,
) -> std::result::Result<CacheEntry, CacheError> {
    let read = |neff: &Path| read_neff(neff, scratch);
    #[cfg(feature = "remote")]
    let judged = match f.objects {
        Some(first) => {
            let url = f.dir.display().to_string();
            let neff = format!("{url}/{}", entry::NEFF);
            let mut first = Some(first);
            let mut read = read;
            entry::judge_with(
                || match first.take() {
                    Some(objects) => Ok(super::bucket::listing(&objects)),
                    None => super::bucket::relist(&url).map(|o| super::bucket::listing(&o)),
                },
                now,
                || read(Path::new(&neff)),
                || super::bucket::log_line(&url),
            )
        }
        None => entry::judge(&f.dir, now, read),
    };
    #[cfg(not(feature = "remote"))]
    let judged = entry::judge(&f.dir, now, read);
    let j = judged.map_err(|e| CacheError {
        path: f.dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let secs =
        |t: Option<SystemTime>| t.map(|t| now.duration_since(t).unwrap_or_default().as_secs());
    let needs = j.read.unwrap_or_default();
    Ok(CacheEntry {
        path: f.dir.display().to_string(),
        compiler: f.compiler,
        graph_hash: f.graph_hash,
        flags_hash: f.flags_hash,
        state: j.state,
        reason: j.reason,
        bytes: j.listing.bytes,
        age_s: secs(j.listing.newest),
        lock_age_s: j.lock_age.map(|d| d.as_secs()),
        arch: needs.arch,
        num_cores: needs.num_cores,
        cc_world_size: needs.cc_world_size,
    })
}
