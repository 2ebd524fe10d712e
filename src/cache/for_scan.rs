//! A compile-cache entry as a scan sees it: which entry a scanned path
//! belongs to (its `model.neff`, or the entry itself when it holds no
//! NEFF), and that entry's state, judged again on every scan (a state is
//! not part of a NEFF's identity: a lock goes, a `model.done` appears).

use std::path::Path;
use std::time::SystemTime;

use super::entry::{self, Listing, State, NEFF};
use super::found::VERSION_PREFIX;

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
/// `model.neff` of a `MODULE_*` directory, `path` itself when it names a
/// `MODULE_*` directory (or, in a bucket, prefix).
pub(crate) fn entry_dir(path: &Path) -> Option<&Path> {
    let name = path.file_name()?.to_str()?;
    if name == NEFF {
        let dir = path.parent()?;
        return is_entry_name(dir.file_name()?.to_str()?).then_some(dir);
    }
    is_entry_name(name).then_some(path)
}

/// The compiler version of the `neuronxcc-<version>` directory holding the
/// entry `dir`, if one does.
pub(crate) fn compiler_of(dir: &Path) -> Option<String> {
    let v = dir.parent()?.file_name()?.to_str()?;
    v.strip_prefix(VERSION_PREFIX).map(str::to_string)
}

/// An entry's files as a scan's own walk (or a bucket's listing) met
/// them: judging from it spares listing the entry again.
#[derive(Debug, Default, Clone)]
pub(crate) struct Met(Listing);

impl Met {
    /// One file of the entry, met by the walk at `path`.
    pub(crate) fn file(&mut self, name: &str, path: &Path) {
        match name {
            NEFF => self.0.neff = true,
            entry::DONE => self.0.done = true,
            entry::LOG => self.0.log = true,
            n if n.ends_with(".lock") => self.0.locks.push(path.to_path_buf()),
            _ => {}
        }
    }

    /// One object of the entry in a bucket: its name below the entry's
    /// prefix and its modification time.
    #[cfg(feature = "remote")]
    pub(crate) fn object(&mut self, name: &str, modified: SystemTime) {
        let times = self.0.lock_times.get_or_insert_with(Vec::new);
        if name.ends_with(".lock") && !name.contains('/') {
            times.push(modified);
        }
        let path = Path::new(name);
        self.file(name, path);
    }
}

/// Judges the entry `dir` (a directory, or a bucket prefix's URL), from
/// what the walk `met` of it when given (else from a listing of it now):
/// `read` says how its NEFF reads, asked only when the listing says the
/// entry should be whole (`model.neff` and `model.done`). Should the NEFF
/// vanish under the reading, the entry is listed again.
pub(crate) fn judge_entry(
    dir: &Path,
    met: Option<Met>,
    read: impl FnMut() -> Read<()>,
) -> std::io::Result<EntryState> {
    let now = SystemTime::now();
    let mut met = met.map(|m| m.0);
    #[cfg(feature = "remote")]
    if let Some(url) = dir.to_str().filter(|d| crate::remote::is_url(d)) {
        let j = entry::judge_with(
            || match met.take() {
                Some(l) => Ok(l),
                None => super::bucket::relist(url).map(|o| super::bucket::listing(&o)),
            },
            now,
            read,
            || super::bucket::log_line(url),
        )?;
        return Ok(EntryState {
            state: j.state,
            reason: j.reason,
        });
    }
    let j = entry::judge_with(
        || match met.take() {
            Some(l) => Ok(l),
            None => entry::Listing::names_of(dir),
        },
        now,
        read,
        || entry::last_error_line(&dir.join(entry::LOG)),
    )?;
    Ok(EntryState {
        state: j.state,
        reason: j.reason,
    })
}
