//! One compile-cache entry (a `MODULE_<graph hash>+<flags hash>`
//! directory) judged from the files the compiler wrapper leaves in it:
//! `model.neff`, `model.done`, `model.log`, `*.lock`. The directory is
//! listed once and the state decided from that one listing, so that an
//! entry changing while it is read (a compile finishing, a lock let go) is
//! reported in a state it really had; a file that vanished between the
//! listing and its reading makes the entry be listed again.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// What the compiler wrapper writes when a compile finished.
pub(super) const DONE: &str = "model.done";
/// The compiled NEFF (absent when the compile failed).
pub(super) const NEFF: &str = "model.neff";
/// The compile's log (kept when it failed).
pub(super) const LOG: &str = "model.log";
/// Most of a log read for its last error line (its tail).
pub(super) const LOG_TAIL: u64 = 64 << 10;
/// Times an entry is listed again when a file vanished under the reading.
const RELISTS: usize = 3;

/// The state of a compile-cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// `model.neff` and `model.done`, and the NEFF reads.
    Ok,
    /// `model.done`, but the NEFF is refused (or missing).
    Corrupt,
    /// `model.log` and no `model.neff`: a failed compile, replayed from
    /// the cache until the entry is removed.
    Failed,
    /// A `*.lock` and no `model.done`: a compile in progress, or one that
    /// died holding its lock.
    Locked,
    /// `model.neff` without `model.done`, and no lock: a compile stopped
    /// while it wrote its output.
    Incomplete,
    /// None of the files above.
    Empty,
}

impl State {
    /// Every state, in the order reports list them.
    pub const ALL: [State; 6] = [
        State::Ok,
        State::Corrupt,
        State::Failed,
        State::Locked,
        State::Incomplete,
        State::Empty,
    ];

    /// The state's name, as JSON and the catalogue spell it.
    pub fn name(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Corrupt => "corrupt",
            State::Failed => "failed",
            State::Locked => "locked",
            State::Incomplete => "incomplete",
            State::Empty => "empty",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One object of an entry in a bucket: its name below the entry's
/// prefix, size, modification time.
pub(super) type Obj = (String, u64, SystemTime);

/// What one listing of an entry's directory holds.
#[derive(Debug, Default, Clone)]
pub(super) struct Listing {
    pub(super) neff: bool,
    pub(super) done: bool,
    pub(super) log: bool,
    /// The `*.lock` files.
    pub(super) locks: Vec<PathBuf>,
    /// When each lock was last modified, as a store's listing said (an
    /// entry in a bucket); `None` for a directory, whose locks are looked
    /// at again when judged.
    pub(super) lock_times: Option<Vec<SystemTime>>,
    /// Bytes of the files in the directory (subdirectories included, links
    /// not followed).
    pub(super) bytes: u64,
    /// The newest modification time among them.
    pub(super) newest: Option<SystemTime>,
}

impl Listing {
    /// Lists `dir` once, by names only: what a state needs (a scan's
    /// judgement), without the size and time of each file (`bytes` 0,
    /// `newest` `None`); a lock's time is read when it is judged.
    pub(super) fn names_of(dir: &Path) -> io::Result<Listing> {
        let mut l = Listing::default();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name();
            match name.to_str() {
                Some(NEFF) => l.neff = true,
                Some(DONE) => l.done = true,
                Some(LOG) => l.log = true,
                Some(n) if n.ends_with(".lock") => l.locks.push(e.path()),
                _ => {}
            }
        }
        Ok(l)
    }

    /// Lists `dir` once.
    pub(super) fn of(dir: &Path) -> io::Result<Listing> {
        let mut l = Listing::default();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            match &*name {
                NEFF => l.neff = true,
                DONE => l.done = true,
                LOG => l.log = true,
                n if n.ends_with(".lock") => l.locks.push(e.path()),
                _ => {}
            }
            // A file may go between the listing and its stat: it counts
            // nothing then.
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            l.bytes += if meta.is_dir() {
                tree_bytes(&e.path())
            } else {
                meta.len()
            };
            if let Ok(t) = meta.modified() {
                l.newest = l.newest.max(Some(t));
            }
        }
        Ok(l)
    }
}

#[cfg(feature = "remote")]
impl Listing {
    /// The listing of an entry in a bucket: each object's name below the
    /// entry's prefix (`model.neff`, `sub/x`), size and modification time.
    pub(super) fn of_objects<'a>(
        objects: impl IntoIterator<Item = (&'a str, u64, SystemTime)>,
    ) -> Listing {
        let mut l = Listing {
            lock_times: Some(Vec::new()),
            ..Listing::default()
        };
        for (name, size, modified) in objects {
            match name {
                NEFF => l.neff = true,
                DONE => l.done = true,
                LOG => l.log = true,
                n if n.ends_with(".lock") && !n.contains('/') => {
                    l.locks.push(PathBuf::from(n));
                    if let Some(t) = l.lock_times.as_mut() {
                        t.push(modified);
                    }
                }
                _ => {}
            }
            l.bytes += size;
            l.newest = l.newest.max(Some(modified));
        }
        l
    }
}

/// What a listing alone says of an entry (reading its NEFF tells `ok`
/// from `corrupt` when it is [`Quick::Whole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quick {
    /// `model.neff` and `model.done`: the NEFF is to be read.
    Whole,
    /// `model.log` and no `model.neff`.
    Failed,
    /// A lock and no `model.done`.
    Locked,
    /// `model.neff` without `model.done`, and no lock.
    Incomplete,
    /// `model.done` and no `model.neff` (nor a log).
    NoNeff,
    /// None of the compiler's files.
    Empty,
}

impl Listing {
    /// The state this listing gives, the NEFF unread.
    pub(super) fn quick(&self) -> Quick {
        if self.neff && self.done {
            Quick::Whole
        } else if !self.neff && self.log {
            Quick::Failed
        } else if !self.done && !self.locks.is_empty() {
            Quick::Locked
        } else if self.neff && !self.done {
            Quick::Incomplete
        } else if self.done && !self.neff {
            Quick::NoNeff
        } else {
            Quick::Empty
        }
    }

    /// When the newest lock was last modified (`None` when every lock went
    /// since the listing).
    pub(super) fn newest_lock(&self) -> Option<SystemTime> {
        if let Some(times) = &self.lock_times {
            return times.iter().copied().max();
        }
        self.locks
            .iter()
            .filter_map(|p| p.symlink_metadata().ok()?.modified().ok())
            .max()
    }
}

/// Bytes of the regular files under `dir` (links not followed).
fn tree_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// What reading an entry's NEFF said: `Ok` with what the caller keeps of
/// it, or the refusal; a NEFF that vanished under the reading is
/// [`Read::Vanished`] (the entry is listed again).
pub(crate) enum Read<T> {
    Ok(T),
    Refused(String),
    Vanished,
}

/// An entry's judged state, with its reason and what was read.
pub(super) struct Judged<T> {
    pub(super) state: State,
    /// Why the entry is not `ok` (the NEFF's refusal, the log's last error
    /// line, the lock's age), when it is not.
    pub(super) reason: Option<String>,
    /// How long ago the newest lock was last modified (any entry holding
    /// one).
    pub(super) lock_age: Option<Duration>,
    pub(super) listing: Listing,
    /// What reading the NEFF gave (ok entries).
    pub(super) read: Option<T>,
}

/// Judges the entry `dir`: its state from one listing, the NEFF read by
/// `read` when the listing says it should be whole (`model.neff` and
/// `model.done`).
pub(super) fn judge<T>(
    dir: &Path,
    now: SystemTime,
    mut read: impl FnMut(&Path) -> Read<T>,
) -> io::Result<Judged<T>> {
    let neff = dir.join(NEFF);
    judge_with(
        || Listing::of(dir),
        now,
        || read(&neff),
        || last_error_line(&dir.join(LOG)),
    )
}

/// Judges an entry wherever it lives: `list` lists it (again, when a file
/// vanished under the reading), `read` reads its NEFF, `log_line` gives
/// its log's last error line.
pub(super) fn judge_with<T>(
    mut list: impl FnMut() -> io::Result<Listing>,
    now: SystemTime,
    mut read: impl FnMut() -> Read<T>,
    log_line: impl FnOnce() -> String,
) -> io::Result<Judged<T>> {
    let mut tries = 0;
    loop {
        tries += 1;
        let last = tries >= RELISTS;
        let mut listing = list()?;
        // The newest lock's age; every lock gone between the listing and
        // its stat lists the entry again (the last time, it is judged as
        // it stands: without them).
        let lock_age = if listing.locks.is_empty() {
            None
        } else {
            match listing.newest_lock() {
                Some(t) => Some(now.duration_since(t).unwrap_or_default()),
                None if last => {
                    listing.locks.clear();
                    None
                }
                None => continue,
            }
        };
        let mut j = Judged {
            state: State::Empty,
            reason: None,
            lock_age,
            listing,
            read: None,
        };
        let l = &j.listing;
        match l.quick() {
            Quick::Whole => match read() {
                Read::Ok(t) => {
                    j.state = State::Ok;
                    j.read = Some(t);
                }
                Read::Refused(why) => {
                    j.state = State::Corrupt;
                    j.reason = Some(why);
                }
                Read::Vanished if !last => continue,
                Read::Vanished => {
                    j.state = State::Corrupt;
                    j.reason = Some("model.neff vanished while it was read".into());
                }
            },
            Quick::Failed => {
                j.state = State::Failed;
                j.reason = Some(log_line());
            }
            Quick::Locked => {
                let age = lock_age.unwrap_or_default();
                j.state = State::Locked;
                j.reason = Some(format!("locked, lock last touched {} ago", human(age)));
            }
            Quick::Incomplete => {
                j.state = State::Incomplete;
                j.reason = Some("model.neff without model.done, and no lock".into());
            }
            Quick::NoNeff => {
                j.state = State::Corrupt;
                j.reason = Some("model.done but no model.neff".into());
            }
            Quick::Empty => {}
        }
        return Ok(j);
    }
}

/// The last line of a compile log that says `error` (any case), else its
/// last non-empty line; read from its last [`LOG_TAIL`] bytes.
pub(super) fn last_error_line(log: &Path) -> String {
    use std::io::{Read as _, Seek, SeekFrom};
    let tail = (|| -> io::Result<String> {
        let mut f = std::fs::File::open(log)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL)))?;
        let mut buf = Vec::new();
        f.take(LOG_TAIL).read_to_end(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    })();
    match tail {
        Ok(t) => error_line(&t),
        Err(e) => format!("model.log unreadable: {e}"),
    }
}

/// The last line of a log's tail `text` that says `error` (any case), else
/// its last non-empty line.
pub(super) fn error_line(text: &str) -> String {
    let lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let line = lines
        .clone()
        .rfind(|l| l.to_ascii_lowercase().contains("error"))
        .or_else(|| lines.clone().next_back());
    match line {
        Some(l) => l.chars().take(500).collect(),
        None => "failed compile (model.log is empty)".into(),
    }
}

/// `d` as people read it: `42s`, `17m`, `5h`, `3d`.
pub(super) fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The graph and flags hashes of an entry directory's name
/// (`MODULE_<graph>+<flags>`); `None` when it is not an entry's.
pub(super) fn hashes(name: &str) -> Option<(String, Option<String>)> {
    let rest = name.strip_prefix("MODULE_")?;
    Some(match rest.split_once('+') {
        Some((g, f)) => (g.to_string(), Some(f.to_string())),
        None => (rest.to_string(), None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_name_gives_its_graph_and_flags_hashes() {
        assert_eq!(
            hashes("MODULE_123+ab12"),
            Some(("123".into(), Some("ab12".into())))
        );
        assert_eq!(hashes("MODULE_9"), Some(("9".into(), None)));
        assert_eq!(hashes("neuronxcc-2.15"), None);
    }

    #[test]
    fn the_last_error_line_of_a_log_is_its_reason() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(LOG);
        std::fs::write(
            &p,
            "info: start\nERROR 70 [neuronx-cc]: bad op\nINFO done\n\n",
        )
        .unwrap();
        assert_eq!(last_error_line(&p), "ERROR 70 [neuronx-cc]: bad op");
        std::fs::write(&p, "killed\n").unwrap();
        assert_eq!(last_error_line(&p), "killed");
        std::fs::write(&p, "").unwrap();
        assert!(last_error_line(&p).contains("empty"));
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(Duration::from_secs(42)), "42s");
        assert_eq!(human(Duration::from_secs(17 * 60)), "17m");
        assert_eq!(human(Duration::from_secs(5 * 3600)), "5h");
        assert_eq!(human(Duration::from_secs(3 * 86_400)), "3d");
    }
}
