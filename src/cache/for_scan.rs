//! A compile-cache entry as a scan sees it: which entry a scanned path
//! belongs to (its `model.neff`, or the entry itself when it holds no
//! NEFF), and that entry's state, judged again on every scan (a state is
//! not part of a NEFF's identity: a lock goes, a `model.done` appears).

use std::path::Path;
use std::time::SystemTime;

use super::entry::{self, State, NEFF};
use super::status::VERSION_PREFIX;

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

/// Judges the entry `dir` (a directory, or a bucket prefix's URL): `read`
/// says how its NEFF reads, asked only when the listing says the entry
/// should be whole (`model.neff` and `model.done`).
pub(crate) fn judge_entry(
    dir: &Path,
    read: impl FnMut() -> Read<()>,
) -> std::io::Result<EntryState> {
    let now = SystemTime::now();
    #[cfg(feature = "remote")]
    if let Some(url) = dir.to_str().filter(|d| crate::remote::is_url(d)) {
        let j = entry::judge_with(
            || super::bucket::relist(url).map(|o| super::bucket::listing(&o)),
            now,
            read,
            || super::bucket::log_line(url),
        )?;
        return Ok(EntryState {
            state: j.state,
            reason: j.reason,
        });
    }
    let mut read = read;
    let j = entry::judge(dir, now, |_| read())?;
    Ok(EntryState {
        state: j.state,
        reason: j.reason,
    })
}
