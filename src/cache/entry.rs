//! One compile-cache entry (a `MODULE_<graph hash>+<flags hash>`
//! directory) judged from the files the compiler wrapper leaves in it:
//! `model.neff`, `model.done`, `model.log`, `*.lock`, by the rules of its
//! compiler's era ([`super::era`]). The directory is walked once, without
//! following a link, and the state decided from that one listing, so that
//! an entry changing while it is read (a compile finishing, a lock let go)
//! is reported in a state it really had; a file that vanished between the
//! listing and its reading makes the entry be listed again. A link, a
//! FIFO, a socket, a device or a file the caller cannot read anywhere in
//! the entry stops the judgement: such an entry is `unknown` or
//! `unreadable`, which no selector removes.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::era::Era;
pub use super::state::State;
use super::vllm;
pub(super) use super::vllm::COMPLETE;

/// What the compiler wrapper writes when a compile finished (2.15+).
pub(super) const DONE: &str = "model.done";
/// The compiled NEFF (absent, or a placeholder, when the compile failed).
pub(super) const NEFF: &str = "model.neff";
/// The compile's log (kept when it failed).
pub(super) const LOG: &str = "model.log";
/// Most of a log read for its last error line (its tail).
pub(super) const LOG_TAIL: u64 = 64 << 10;
/// Times an entry is listed again when a file vanished under the reading.
const RELISTS: usize = 3;

/// One object of an entry in a bucket: its name below the entry's
/// prefix, size, modification time.
pub(super) type Obj = (String, u64, SystemTime);

/// Something in an entry that stops it being judged by its files: the
/// first met, the worst kind first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Odd {
    /// A mount point (its name below the entry, `.` for the entry
    /// itself): never crossed, nothing under it read.
    Mount(String),
    /// A FIFO, socket or device (its name below the entry, its kind):
    /// reading it could block or never end.
    Special(String, &'static str),
    /// A file or directory the caller cannot read (its name, why).
    Unreadable(String, String),
    /// A symbolic link (its name): never followed.
    Link(String),
}

impl Odd {
    /// Its kind's rank (the worst first), then its name: the order in
    /// which one is reported, whatever order the files were met in.
    fn rank(&self) -> (u8, &str) {
        match self {
            Odd::Mount(n) => (0, n),
            Odd::Special(n, _) => (1, n),
            Odd::Unreadable(n, _) => (2, n),
            Odd::Link(n) => (3, n),
        }
    }

    /// The state it gives the entry, and why.
    pub(super) fn judged(&self) -> (State, String) {
        match self {
            Odd::Mount(n) => (
                State::Unknown,
                format!("{n} is a mount point: not crossed, nothing under it read"),
            ),
            Odd::Special(n, kind) => (State::Unreadable, format!("{n} is {kind}: not read")),
            Odd::Unreadable(n, why) => (State::Unreadable, format!("{n}: {why}")),
            Odd::Link(n) => (State::Unknown, format!("{n} is a link: not followed")),
        }
    }
}

/// The times of an entry's `model.neff`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct NeffTimes {
    pub(super) modified: Option<SystemTime>,
    /// Its last access, where the file system keeps one (`None` in a
    /// bucket).
    pub(super) accessed: Option<SystemTime>,
}

/// A `graph*.neff` at the top of a vLLM entry: its name, and its size and
/// times where the listing read them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct GraphNeff {
    pub(super) name: String,
    pub(super) size: Option<u64>,
    pub(super) times: NeffTimes,
}

/// What one listing of an entry's directory holds.
#[derive(Debug, Default, Clone)]
pub(crate) struct Listing {
    pub(super) neff: bool,
    pub(super) done: bool,
    pub(super) log: bool,
    /// vLLM's `.compilation_complete`.
    pub(super) complete: bool,
    /// vLLM's NEFFs (`graph_<key>.neff`, `graph.neff`, any other
    /// `graph*.neff` at the entry's top), in the order met.
    pub(super) graph_neffs: Vec<GraphNeff>,
    /// Regular files met, at any depth.
    pub(super) files: usize,
    /// The `*.lock` files, anywhere in the entry.
    pub(super) locks: Vec<PathBuf>,
    /// When each lock was last modified, when the listing read it (a full
    /// listing, a bucket's); `None` when the locks are looked at when
    /// judged.
    pub(super) lock_times: Option<Vec<SystemTime>>,
    /// Bytes of the regular files in the entry, at any depth (a full
    /// listing; 0 otherwise).
    pub(super) bytes: u64,
    /// The newest modification time among them.
    pub(super) newest: Option<SystemTime>,
    /// When anything in the entry last changed: the latest of the
    /// modification and change times of its files and directories, the
    /// entry's own included (a full listing).
    pub(super) changed: Option<SystemTime>,
    /// The NEFF's times (a full listing).
    pub(super) neff_times: NeffTimes,
    /// The first link, special or unreadable file met (the worst kind).
    pub(super) odd: Option<Odd>,
}

impl Listing {
    /// Notes `odd`, keeping the worst kind met (of one kind, the first
    /// name).
    pub(super) fn note(&mut self, odd: Odd) {
        if self.odd.as_ref().is_none_or(|o| odd.rank() < o.rank()) {
            self.odd = Some(odd);
        }
    }

    /// Notes one file by its name below the entry (`sub/x.lock`) and
    /// whether it stands at the entry's top.
    pub(super) fn file(&mut self, rel: &OsStr, at: &Path) {
        self.files += 1;
        let top = Path::new(rel).components().count() == 1;
        let name = Path::new(rel).file_name().and_then(OsStr::to_str);
        match name {
            Some(NEFF) if top => self.neff = true,
            Some(DONE) if top => self.done = true,
            Some(LOG) if top => self.log = true,
            Some(COMPLETE) if top => self.complete = true,
            Some(n) if top && n.starts_with("graph") && n.ends_with(".neff") => {
                self.graph_neffs.push(GraphNeff {
                    name: n.to_string(),
                    ..GraphNeff::default()
                });
            }
            Some(n) if n.ends_with(".lock") => self.locks.push(at.to_path_buf()),
            _ => {}
        }
    }

    /// Lists the entry `dir` once, at every depth, following no link.
    /// `full`: with each file's size and times (a report's listing); else
    /// by names and kinds only (a scan's judgement), a lock's time read
    /// when it is judged. Files the caller may not read are noted, so an
    /// entry is never judged on part of what it holds.
    pub(super) fn walk(dir: &Path, full: bool) -> io::Result<Listing> {
        // The entry itself must list: an error here is the entry's.
        std::fs::read_dir(dir)?;
        let mut l = Listing {
            lock_times: full.then(Vec::new),
            ..Listing::default()
        };
        // A mount point is never crossed: not the entry itself, not a
        // directory in it (a bind mount of the same file system too).
        let (mount, changed) = super::descend::mount_root(dir, true)?;
        if mount == Some(true) {
            l.note(Odd::Mount(".".into()));
            return Ok(l);
        }
        if full {
            l.changed = changed;
        }
        let mounts = std::cell::RefCell::new(Vec::new());
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| {
                if !e.file_type().is_dir() {
                    return true;
                }
                match super::descend::mount_root(e.path(), false) {
                    Ok((Some(true), _)) => {
                        let rel = e.path().strip_prefix(dir).unwrap_or(e.path());
                        mounts.borrow_mut().push(rel.display().to_string());
                        false
                    }
                    _ => true,
                }
            });
        let mut graphs = 0;
        for e in walk {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    let rel = err
                        .path()
                        .and_then(|p| p.strip_prefix(dir).ok())
                        .map_or_else(|| ".".into(), |p| p.display().to_string());
                    match err.io_error() {
                        Some(io) if io.kind() == io::ErrorKind::NotFound => {}
                        Some(io) => l.note(Odd::Unreadable(rel, io.to_string())),
                        None => l.note(Odd::Unreadable(rel, err.to_string())),
                    }
                    continue;
                }
            };
            let rel = e.path().strip_prefix(dir).unwrap_or(e.path());
            let shown = || rel.display().to_string();
            let t = e.file_type();
            if t.is_symlink() {
                l.note(Odd::Link(shown()));
                continue;
            }
            if t.is_dir() {
                if full {
                    if let Ok(meta) = e.metadata() {
                        l.changed = l.changed.max(super::descend::changed(&meta));
                    }
                }
                continue;
            }
            if let Some(kind) = special(&t) {
                l.note(Odd::Special(shown(), kind));
                continue;
            }
            if let Err(err) = readable(e.path()) {
                if err.kind() != io::ErrorKind::NotFound {
                    l.note(Odd::Unreadable(shown(), err.to_string()));
                }
                continue;
            }
            l.file(rel.as_os_str(), e.path());
            let graph = l.graph_neffs.len();
            if !full {
                // A vLLM NEFF's size is compared with what its marker says.
                if let Some(g) = l.graph_neffs.last_mut().filter(|_| graph > graphs) {
                    g.size = e.metadata().ok().map(|m| m.len());
                }
                graphs = graph;
            }
            if full {
                // A file may go between the listing and its stat: it
                // counts nothing then.
                let Ok(meta) = e.metadata() else { continue };
                l.bytes += meta.len();
                let modified = meta.modified().ok();
                l.newest = l.newest.max(modified);
                let changed = super::descend::changed(&meta);
                l.changed = l.changed.max(changed);
                let name = rel.as_os_str().to_str();
                if name.is_some_and(|n| n.ends_with(".lock")) {
                    if let (Some(times), Some(m)) = (l.lock_times.as_mut(), changed) {
                        times.push(m);
                    }
                }
                let times = NeffTimes {
                    modified,
                    accessed: meta.accessed().ok(),
                };
                if name == Some(NEFF) {
                    l.neff_times = times;
                }
                if let Some(g) = l.graph_neffs.last_mut().filter(|_| graph > graphs) {
                    (g.size, g.times) = (Some(meta.len()), times);
                }
                graphs = graph;
            }
        }
        for m in mounts.into_inner() {
            l.note(Odd::Mount(m));
        }
        Ok(l)
    }
}

/// The kind of a FIFO, socket or device (`None` for files, directories
/// and links).
pub(super) fn special(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device")
    } else {
        None
    }
}

/// Whether the caller (its effective identity) may read `path`.
fn readable(path: &Path) -> io::Result<()> {
    use rustix::fs::{Access, AtFlags, CWD};
    rustix::fs::accessat(CWD, path, Access::READ_OK, AtFlags::EACCESS).map_err(io::Error::from)
}

#[cfg(feature = "remote")]
impl Listing {
    /// The listing of an entry in a bucket: each object's name below the
    /// entry's prefix (`model.neff`, `sub/x.lock`), size and modification
    /// time.
    pub(super) fn of_objects<'a>(
        objects: impl IntoIterator<Item = (&'a str, u64, SystemTime)>,
    ) -> Listing {
        let mut l = Listing {
            lock_times: Some(Vec::new()),
            ..Listing::default()
        };
        for (name, size, modified) in objects {
            let graphs = l.graph_neffs.len();
            l.file(OsStr::new(name), Path::new(name));
            if l.graph_neffs.len() > graphs {
                if let Some(g) = l.graph_neffs.last_mut() {
                    g.size = Some(size);
                    g.times.modified = Some(modified);
                }
            }
            if name.ends_with(".lock") {
                if let Some(t) = l.lock_times.as_mut() {
                    t.push(modified);
                }
            }
            if name == NEFF {
                l.neff_times.modified = Some(modified);
            }
            l.bytes += size;
            l.newest = l.newest.max(Some(modified));
            // An object's last-modified time stands for both.
            l.changed = l.newest;
        }
        l
    }
}

impl Listing {
    /// Adds a lock met outside the entry's directory (vLLM's, beside it),
    /// with its time when the listing keeps times.
    pub(super) fn add_lock(&mut self, lock: PathBuf) {
        if let Some(times) = self.lock_times.as_mut() {
            match lock
                .symlink_metadata()
                .ok()
                .and_then(|m| super::descend::changed(&m))
            {
                Some(t) => times.push(t),
                None => return,
            }
        }
        self.locks.push(lock);
    }

    /// When the newest lock was last modified (`None` when every lock went
    /// since the listing).
    pub(super) fn newest_lock(&self) -> Option<SystemTime> {
        if let Some(times) = &self.lock_times {
            return times.iter().copied().max();
        }
        self.locks
            .iter()
            .filter_map(|p| super::descend::changed(&p.symlink_metadata().ok()?))
            .max()
    }
}

/// What reading an entry's NEFF said: `Ok` with what the caller keeps of
/// it, the refusal, or that it could not be read (permissions, a bucket's
/// 403); a NEFF that vanished under the reading is [`Read::Vanished`] (the
/// entry is listed again); one left unread so as not to move its access
/// time is [`Read::Unread`] (the entry is `unknown`).
pub(crate) enum Read<T> {
    Ok(T),
    Refused(String),
    Unreadable(String),
    Vanished,
    Unread(String),
}

/// An entry's judged state, with its reason and what was read.
pub(super) struct Judged<T> {
    pub(super) state: State,
    /// Why the entry is not `ok` (the NEFF's refusal, the log's last error
    /// line, the lock's time), when it is not.
    pub(super) reason: Option<String>,
    /// When its newest `*.lock` was last modified (any entry holding one).
    pub(super) lock_time: Option<SystemTime>,
    pub(super) listing: Listing,
    /// What reading the NEFF gave (ok entries).
    pub(super) read: Option<T>,
}

/// What one judgement came to, before it is kept: a state and reason, or
/// a file that vanished (list again).
pub(super) enum Verdict {
    Is(State, Option<String>),
    Again,
}

/// How an entry's files are read, wherever it lives: `read` reads a NEFF
/// (given its name below the entry), `log_line` gives its log's last
/// error line, `marker` the text of vLLM's `.compilation_complete` (or
/// what stops either being read).
pub(super) struct Readers<R, L, M> {
    pub(super) read: R,
    pub(super) log_line: L,
    pub(super) marker: M,
}

/// Judges an entry wherever it lives, by the rules of `era`: `list` lists
/// it (again, when a file vanished under the reading), `key` is its name
/// (a vLLM entry's NEFF is named for it), `r` reads its files.
pub(super) fn judge_with<T, R, L, M>(
    mut list: impl FnMut() -> io::Result<Listing>,
    era: Era,
    key: &str,
    mut r: Readers<R, L, M>,
) -> io::Result<Judged<T>>
where
    R: FnMut(&str) -> Read<T>,
    L: FnMut() -> Result<String, Odd>,
    M: FnMut() -> Result<String, Odd>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        let last = tries >= RELISTS;
        let mut listing = list()?;
        // The newest lock's time; every lock gone between the listing and
        // its stat lists the entry again (the last time, it is judged as
        // it stands: without them).
        let lock_time = if listing.locks.is_empty() {
            None
        } else {
            match listing.newest_lock() {
                Some(t) => Some(t),
                None if last => {
                    listing.locks.clear();
                    None
                }
                None => continue,
            }
        };
        let mut got = None;
        // The first NEFF read whole is the one the entry is judged by (a
        // vLLM entry's other NEFFs are read after it).
        let verdict = decide(
            &listing,
            (era, key),
            lock_time,
            &mut |name: &str| match (r.read)(name) {
                Read::Ok(t) => {
                    got.get_or_insert(t);
                    Read::Ok(())
                }
                Read::Refused(w) => Read::Refused(w),
                Read::Unreadable(w) => Read::Unreadable(w),
                Read::Vanished => Read::Vanished,
                Read::Unread(w) => Read::Unread(w),
            },
            &mut r.log_line,
            &mut r.marker,
        );
        let (state, reason) = match verdict {
            Verdict::Is(s, r) => (s, r),
            Verdict::Again if !last => continue,
            Verdict::Again => (
                State::Unknown,
                Some("the NEFF vanished while it was read".into()),
            ),
        };
        return Ok(Judged {
            state,
            reason,
            lock_time,
            listing,
            read: if state == State::Ok { got } else { None },
        });
    }
}

/// The state of an entry from its listing, by the rules of `era`
/// (docs/GUIDE.md, "Compile caches of every compiler").
fn decide(
    l: &Listing,
    (era, key): (Era, &str),
    lock_time: Option<SystemTime>,
    read_named: &mut dyn FnMut(&str) -> Read<()>,
    log_line: &mut dyn FnMut() -> Result<String, Odd>,
    marker: &mut dyn FnMut() -> Result<String, Odd>,
) -> Verdict {
    if let Some(odd) = &l.odd {
        let (s, why) = odd.judged();
        return Verdict::Is(s, Some(why));
    }
    // What the log says, or what stops it being read.
    let mut failed = || match log_line() {
        Ok(line) => Verdict::Is(State::Failed, Some(line)),
        Err(odd) => {
            let (s, why) = odd.judged();
            Verdict::Is(s, Some(why))
        }
    };
    let locked = || {
        let when = lock_time.map_or_else(|| "gone".into(), super::time::rfc3339);
        Verdict::Is(
            State::Locked,
            Some(format!("locked, lock last modified {when}")),
        )
    };
    if era == Era::Vllm {
        return decide_vllm(l, key, read_named, marker, locked);
    }
    let mut read = || read_named(NEFF);
    // A marker says the era even where no version does.
    let era = if l.done { Era::Marked } else { era };
    let locks = !l.locks.is_empty();
    match era {
        Era::Marked if l.neff && l.done => match read() {
            Read::Ok(()) => Verdict::Is(State::Ok, None),
            Read::Refused(_) if l.log => failed(),
            Read::Refused(why) => Verdict::Is(State::Corrupt, Some(why)),
            Read::Unreadable(why) => Verdict::Is(State::Unreadable, Some(why)),
            Read::Unread(why) => Verdict::Is(State::Unknown, Some(why)),
            Read::Vanished => Verdict::Again,
        },
        Era::Marked if l.done => {
            if l.log {
                failed()
            } else {
                Verdict::Is(State::Corrupt, Some("model.done but no model.neff".into()))
            }
        }
        _ if locks && !(l.neff && era == Era::Unmarked) => locked(),
        _ if !l.neff && l.log => failed(),
        _ if !l.neff => Verdict::Is(State::Empty, None),
        // A model.neff and no model.done, no lock from here on (an
        // unmarked era's may hold a lock left behind).
        Era::Marked if !l.log => Verdict::Is(
            State::Incomplete,
            Some("model.neff without model.done, and no lock".into()),
        ),
        _ => match read() {
            // A placeholder model.neff beside the failed compile's log.
            Read::Refused(_) if l.log => failed(),
            Read::Refused(why) => match era {
                Era::Unmarked if locks => locked(),
                Era::Unmarked => Verdict::Is(State::Corrupt, Some(why)),
                _ => Verdict::Is(
                    State::Unknown,
                    Some(format!(
                        "model.neff is refused ({why}) and no compiler version says whether \
                         the compile finished"
                    )),
                ),
            },
            Read::Ok(()) => match era {
                Era::Unmarked => Verdict::Is(State::Ok, None),
                Era::Marked => Verdict::Is(
                    State::Incomplete,
                    Some("model.neff without model.done, and no lock".into()),
                ),
                Era::Unknown | Era::Vllm => Verdict::Is(
                    State::Unknown,
                    Some(
                        "model.neff reads, but no compiler version says whether a model.done \
                         belongs beside it"
                            .into(),
                    ),
                ),
            },
            Read::Unreadable(why) => Verdict::Is(State::Unreadable, Some(why)),
            Read::Unread(why) => Verdict::Is(State::Unknown, Some(why)),
            Read::Vanished => Verdict::Again,
        },
    }
}

/// The NEFF the loader reads in the entry `key`: `graph_<key>.neff`, else
/// `graph.neff`.
pub(super) fn loader<'a>(l: &'a Listing, key: &str) -> Option<&'a GraphNeff> {
    let own = format!("graph_{key}.neff");
    l.graph_neffs
        .iter()
        .find(|g| g.name == own)
        .or_else(|| l.graph_neffs.iter().find(|g| g.name == "graph.neff"))
}

/// The state of the vLLM entry `key` from its listing: finished when
/// `.compilation_complete` is there; then `ok` when the NEFF the loader
/// reads reads whole and has the size the marker gives (`corrupt`
/// otherwise). Every other `graph*.neff` in it is read too: one refused
/// is said in the reason, and leaves the state to the loader's NEFF.
/// Without the marker: a compile in progress (a lock), or one that failed
/// or stopped, which this layout does not tell apart: `unknown`.
pub(super) fn decide_vllm(
    l: &Listing,
    key: &str,
    read: &mut dyn FnMut(&str) -> Read<()>,
    marker: &mut dyn FnMut() -> Result<String, Odd>,
    locked: impl Fn() -> Verdict,
) -> Verdict {
    let is = |s: State, why: String| Verdict::Is(s, Some(why));
    match (l.complete, loader(l, key)) {
        (true, Some(g)) => {
            let text = match marker() {
                Ok(t) => t,
                Err(odd) => {
                    let (s, why) = odd.judged();
                    return is(s, why);
                }
            };
            match (vllm::neff_size(&text), g.size) {
                (vllm::Said::Size(s), Some(n)) if s != n.to_string() => {
                    return is(
                        State::Corrupt,
                        format!("{} is {n} bytes, but {COMPLETE} says neff_size:{s}", g.name),
                    )
                }
                (vllm::Said::Garbled(v), _) => {
                    return is(
                        State::Unknown,
                        format!("{COMPLETE} says neff_size:{v:?}, not a number of bytes"),
                    )
                }
                _ => {}
            }
            match read(&g.name) {
                Read::Ok(()) => {}
                Read::Refused(why) => return is(State::Corrupt, format!("{}: {why}", g.name)),
                Read::Unreadable(why) => return is(State::Unreadable, why),
                Read::Unread(why) => return is(State::Unknown, why),
                Read::Vanished => return Verdict::Again,
            }
            Verdict::Is(State::Ok, others(l, &g.name, read))
        }
        (true, None) => {
            let other = l.graph_neffs.first().map_or_else(String::new, |g| {
                format!(" ({} is not what it reads)", g.name)
            });
            is(
                State::Corrupt,
                format!("{COMPLETE} but no graph_<key>.neff or graph.neff, the NEFF the loader reads{other}"),
            )
        }
        _ if !l.locks.is_empty() => locked(),
        (false, _) if l.files > 0 => is(
            State::Unknown,
            format!(
                "no {COMPLETE}: a compile in progress, failed or stopped (vLLM's cache keeps \
                 no log to tell which)"
            ),
        ),
        (false, _) => Verdict::Is(State::Empty, None),
    }
}

/// What the `graph*.neff` files beside the loader's (`loaded`) say when
/// one is refused or cannot be read: a note, the state left to the
/// loader's NEFF.
fn others(l: &Listing, loaded: &str, read: &mut dyn FnMut(&str) -> Read<()>) -> Option<String> {
    let mut notes = Vec::new();
    for g in l.graph_neffs.iter().filter(|g| g.name != loaded) {
        match read(&g.name) {
            Read::Refused(why) | Read::Unreadable(why) => notes.push(format!(
                "{} beside it is refused ({why}); the loader reads {loaded}",
                g.name
            )),
            Read::Unread(why) => notes.push(format!("{} beside it: {why}", g.name)),
            Read::Ok(()) | Read::Vanished => {}
        }
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// The last line of the compile log `log` that says `error` (any case),
/// else its last non-empty line; read from its last [`LOG_TAIL`] bytes.
/// A link is not followed, and a log that is not a regular file (a FIFO)
/// is not read: either is what stops the entry being judged.
pub(super) fn last_error_line(log: &Path) -> Result<String, Odd> {
    let buf = tail(log, LOG, LOG_TAIL)?;
    Ok(error_line(&String::from_utf8_lossy(&buf)))
}

/// The text of vLLM's `.compilation_complete` in the entry `dir` (its last
/// [`vllm::MARKER_TAIL`] bytes), read as a log is.
pub(super) fn marker_text(dir: &Path) -> Result<String, Odd> {
    let buf = tail(&dir.join(COMPLETE), COMPLETE, vllm::MARKER_TAIL)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The last `n` bytes of the entry's file at `path` (named `name` below
/// the entry). A link is not followed, and a file that is not a regular
/// one (a FIFO) is not read: either is what stops the entry being judged.
fn tail(path: &Path, name: &str, n: u64) -> Result<Vec<u8>, Odd> {
    use std::io::{Read as _, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) => Odd::Link(name.into()),
        _ => Odd::Unreadable(name.into(), e.to_string()),
    };
    let mut f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if let Some(kind) = special(&meta.file_type()) {
        return Err(Odd::Special(name.into(), kind));
    }
    let len = meta.len();
    f.seek(SeekFrom::Start(len.saturating_sub(n)))
        .map_err(err)?;
    let mut buf = Vec::new();
    f.take(n).read_to_end(&mut buf).map_err(err)?;
    Ok(buf)
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

/// The graph and flags hashes of an entry directory's name
/// (`MODULE_<graph>+<flags>`); `None` when it is not an entry's (a
/// `MODULE_*.lock` file is not).
pub(crate) fn hashes(name: &str) -> Option<(String, Option<String>)> {
    let rest = name.strip_prefix("MODULE_")?;
    if rest.ends_with(".lock") {
        return None;
    }
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
        assert_eq!(hashes("MODULE_9+ab.lock"), None);
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
        assert_eq!(
            last_error_line(&p).unwrap(),
            "ERROR 70 [neuronx-cc]: bad op"
        );
        std::fs::write(&p, "killed\n").unwrap();
        assert_eq!(last_error_line(&p).unwrap(), "killed");
        std::fs::write(&p, "").unwrap();
        assert!(last_error_line(&p).unwrap().contains("empty"));
    }

    #[test]
    fn a_log_that_is_a_link_or_a_fifo_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("credentials");
        std::fs::write(&secret, "aws_secret_access_key = ERROR-SECRET\n").unwrap();
        let p = d.path().join(LOG);
        std::os::unix::fs::symlink(&secret, &p).unwrap();
        assert_eq!(last_error_line(&p), Err(Odd::Link(LOG.into())));
        std::fs::remove_file(&p).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert_eq!(last_error_line(&p), Err(Odd::Special(LOG.into(), "a FIFO")));
    }
}
