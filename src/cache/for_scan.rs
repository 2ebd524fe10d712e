//! A compile-cache entry as a scan sees it: which entry a scanned path
//! belongs to (its `model.neff`, or the entry itself when it holds no
//! NEFF), and that entry's state, judged again on every scan (a state is
//! not part of a NEFF's identity: a lock goes, a `model.done` appears), by
//! the same rules as [`super::status`].

use std::ffi::OsStr;
use std::path::Path;

use super::entry::{self, Listing, Odd, State, NEFF};
use super::era;
use super::found::{vllm_lock, VERSION_PREFIX};
use crate::error::{Error, ErrorKind};
use crate::source::Source;

pub(crate) use super::entry::Read;

/// The state of the entry a scanned path belongs to, and why it is not
/// `ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryState {
    pub(crate) state: State,
    pub(crate) reason: Option<String>,
}

/// Whether `name` is an entry directory's (`MODULE_<graph>+<flags>`).
pub(crate) fn is_entry_name(name: &str) -> bool {
    entry::hashes(name).is_some()
}

/// The entry `path` belongs to: its parent when `path` is the
/// `model.neff` of a `MODULE_*` directory (or the `graph*.neff` of a vLLM
/// cache's `<32 hex key>` directory), `path` itself when it names a
/// `MODULE_*` directory (or, in a bucket, prefix).
pub(crate) fn entry_dir(path: &Path) -> Option<&Path> {
    let name = path.file_name()?.to_str()?;
    if name == NEFF {
        let dir = path.parent()?;
        return is_entry_name(dir.file_name()?.to_str()?).then_some(dir);
    }
    if name.starts_with("graph") && name.ends_with(".neff") {
        let dir = path.parent()?;
        return era::is_vllm_key(dir.file_name()?.to_str()?).then_some(dir);
    }
    is_entry_name(name).then_some(path)
}

/// The rules the entry `dir` is judged by: vLLM's for a `<32 hex key>`
/// directory, else its compiler's era.
fn era_of(dir: &Path) -> era::Era {
    match dir.file_name().and_then(OsStr::to_str) {
        Some(k) if era::is_vllm_key(k) => era::Era::Vllm,
        _ => era::era(compiler_of(dir).as_deref()),
    }
}

/// The compiler version of the `neuronxcc-<version>` directory holding the
/// entry `dir`, if one does.
pub(crate) fn compiler_of(dir: &Path) -> Option<String> {
    let v = dir.parent()?.file_name()?.to_str()?;
    v.strip_prefix(VERSION_PREFIX).map(str::to_string)
}

/// How reading a NEFF failed, as a judgement takes it: gone (list the
/// entry again), not readable by the caller (an I/O failure), left unread
/// so as not to move its access time, or refused.
pub(crate) fn read_error<T>(e: Error) -> Read<T> {
    match e {
        e @ Error::AtimeKept { .. } => Read::Unread(format!("{NEFF} {e}")),
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => Read::Vanished,
        Error::Remote {
            io: std::io::ErrorKind::NotFound,
            ..
        } => Read::Vanished,
        e if e.kind() == ErrorKind::Io => Read::Unreadable(format!("model.neff: {e}")),
        e => Read::Refused(e.to_string()),
    }
}

/// An entry's files as a scan's own walk (or a bucket's listing) met
/// them: judging from it spares listing the entry again. A sorted scan
/// keeps one per compile-cache entry, so the common entry (its files
/// named, no lock, link or odd file) is 16 bytes; the rest is a whole
/// [`Listing`], boxed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Met {
    plain: Plain,
    full: Option<Box<Listing>>,
}

/// What a [`Met`] keeps of a common entry: which of the files an entry's
/// state is judged by are there, and how many files in all.
#[derive(Debug, Default, Clone, Copy)]
struct Plain {
    neff: bool,
    done: bool,
    log: bool,
    complete: bool,
    files: u32,
}

impl Met {
    /// The whole listing, made from the common part the first time more
    /// than that is met.
    fn full(&mut self) -> &mut Listing {
        let p = self.plain;
        self.full.get_or_insert_with(|| {
            Box::new(Listing {
                neff: p.neff,
                done: p.done,
                log: p.log,
                complete: p.complete,
                files: p.files as usize,
                ..Listing::default()
            })
        })
    }

    /// What was met, as a listing.
    fn into_listing(mut self) -> Listing {
        std::mem::take(self.full())
    }

    /// One file, noted as a [`Listing`] notes it: in the common part when
    /// that is all it changes.
    fn note_file(&mut self, rel: &OsStr, path: &Path) {
        if let Some(l) = &mut self.full {
            return l.file(rel, path);
        }
        let mut one = Listing::default();
        one.file(rel, path);
        if one.locks.is_empty() && one.graph_neffs.is_empty() && self.plain.files < u32::MAX {
            let p = &mut self.plain;
            p.neff |= one.neff;
            p.done |= one.done;
            p.log |= one.log;
            p.complete |= one.complete;
            p.files += 1;
        } else {
            let l = self.full();
            let graphs = l.graph_neffs.len();
            l.file(rel, path);
            // A vLLM NEFF's size is compared with what its marker says.
            if l.graph_neffs.len() > graphs {
                if let Some(g) = l.graph_neffs.last_mut() {
                    g.size = path.symlink_metadata().ok().map(|m| m.len());
                }
            }
        }
    }

    /// One file of the entry, met by the walk at `path` (`rel`: its name
    /// below the entry), of kind `kind`, a link when `link` (the walk may
    /// follow links: `kind` is then its target's).
    pub(crate) fn file(
        &mut self,
        rel: &OsStr,
        path: &Path,
        link: bool,
        kind: Option<std::fs::FileType>,
    ) {
        let shown = || Path::new(rel).display().to_string();
        if link {
            self.full().note(Odd::Link(shown()));
        } else if let Some(k) = kind.as_ref().and_then(entry::special) {
            self.full().note(Odd::Special(shown(), k));
        } else if kind.is_some_and(|k| k.is_file()) {
            self.note_file(rel, path);
        }
    }

    /// One object of the entry in a bucket: its name below the entry's
    /// prefix and its modification time.
    #[cfg(feature = "remote")]
    pub(crate) fn object(&mut self, name: &str, size: u64, modified: std::time::SystemTime) {
        let l = self.full();
        let times = l.lock_times.get_or_insert_with(Vec::new);
        if name.ends_with(".lock") {
            times.push(modified);
        }
        let graphs = l.graph_neffs.len();
        l.file(OsStr::new(name), Path::new(name));
        if l.graph_neffs.len() > graphs {
            if let Some(g) = l.graph_neffs.last_mut() {
                (g.size, g.times.modified) = (Some(size), Some(modified));
            }
        }
    }
}

/// Judges the entry at `place` (a directory, or a bucket prefix), from
/// what the walk `met` of it when given (else from a listing of it now):
/// `read` says how a NEFF of it (named below the entry) reads, asked only
/// when the listing says the NEFF decides the state. Should the NEFF
/// vanish under the reading, the entry is listed again.
pub(crate) fn judge_entry(
    place: &Source,
    met: Option<Met>,
    mut read: impl FnMut(&str) -> Read<()>,
) -> std::io::Result<EntryState> {
    let dir = place.path();
    let era = era_of(dir);
    let key = match era {
        era::Era::Vllm => dir.file_name().and_then(OsStr::to_str).unwrap_or(""),
        _ => "",
    };
    let mut met = met.map(Met::into_listing);
    #[cfg(feature = "remote")]
    if let Some(url) = place.url() {
        let j = entry::judge_with(
            || match met.take() {
                Some(l) => Ok(l),
                None => super::bucket::relist(url).map(|o| super::bucket::listing(&o)),
            },
            era,
            key,
            entry::Readers {
                read: &mut read,
                log_line: || super::bucket::log_line(url),
                marker: || super::bucket::marker_text(url),
            },
        )?;
        return Ok(EntryState {
            state: j.state,
            reason: j.reason,
        });
    }
    let log = dir.join(entry::LOG);
    let j = entry::judge_with(
        || {
            let mut l = match met.take() {
                Some(l) => l,
                None => Listing::walk(dir, false)?,
            };
            if let Some(lock) = (era == era::Era::Vllm).then(|| vllm_lock(dir)).flatten() {
                l.add_lock(lock);
            }
            Ok(l)
        },
        era,
        key,
        entry::Readers {
            read: &mut read,
            log_line: || entry::last_error_line(&log),
            marker: || entry::marker_text(dir),
        },
    )?;
    Ok(EntryState {
        state: j.state,
        reason: j.reason,
    })
}
