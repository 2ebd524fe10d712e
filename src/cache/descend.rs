//! A compile-cache entry reached and removed the way the most careful `rm`
//! does it: the root opened once, each directory below it opened relative
//! to its parent with `O_NOFOLLOW | O_DIRECTORY` (no name resolved twice,
//! no link followed), no mount crossed, a bind mount of the same file
//! system included (`statx`'s `STATX_ATTR_MOUNT_ROOT`, which sees it where
//! `st_dev` does not), and every name unlinked relative to the descriptor
//! of the directory that holds it. The entry is judged again through its
//! own descriptor (`/proc/self/fd/N`), so what is judged is what goes.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxAttributes, StatxFlags};

/// Most directories deep an entry is descended (an entry the compiler
/// writes is one or two deep).
const MAX_DEPTH: usize = 64;

/// Whether the directory or file `fd` names is the root of a mount, and
/// when it last changed (the later of its modification and change times).
/// `None` for the first when the kernel does not say (before Linux 5.8).
pub(super) fn mount_root_fd(fd: BorrowedFd<'_>) -> io::Result<(Option<bool>, Option<SystemTime>)> {
    let s = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::MTIME | StatxFlags::CTIME,
    )?;
    Ok(of_statx(&s))
}

/// [`mount_root_fd`] for a path; a link is followed only when `follow`
/// (the root, a `/proc/self/fd` path).
pub(super) fn mount_root(
    path: &Path,
    follow: bool,
) -> io::Result<(Option<bool>, Option<SystemTime>)> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let s = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        flags | AtFlags::NO_AUTOMOUNT,
        StatxFlags::MTIME | StatxFlags::CTIME,
    )?;
    Ok(of_statx(&s))
}

fn of_statx(s: &rustix::fs::Statx) -> (Option<bool>, Option<SystemTime>) {
    let known = s.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT);
    let root = known.then(|| s.stx_attributes.contains(StatxAttributes::MOUNT_ROOT));
    let t = |ts: rustix::fs::StatxTimestamp| {
        let d = Duration::new(ts.tv_sec.unsigned_abs(), ts.tv_nsec);
        if ts.tv_sec >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(d)
        } else {
            SystemTime::UNIX_EPOCH.checked_sub(d)
        }
    };
    (root, t(s.stx_mtime).max(t(s.stx_ctime)))
}

/// The later of a file's modification and change times: a copy that keeps
/// old modification times (`cp -p`, `rsync -a`) still changed now.
pub(super) fn changed(meta: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let c = u64::try_from(meta.ctime()).ok().and_then(|s| {
        let n = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(s, n))
    });
    meta.modified().ok().max(c)
}

/// An entry reached from its cache's root by descriptors: the directory
/// holding it, its name there, and the entry itself.
pub(super) struct Reached {
    parent: OwnedFd,
    name: OsString,
    entry: OwnedFd,
}

/// Why an entry could not be reached, or was not removed.
#[derive(Debug)]
pub(super) enum Refused {
    /// It is gone (another prune removed it first).
    Gone,
    /// It was left, and why.
    Left(String),
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Refused {
        Refused::Left(format!("{e}: left"))
    }
}

/// The root `root`, opened once (followed should it be a link, as the walk
/// that found the entries followed it).
pub(super) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Reaches the entry at `rel` (plain names) below the opened root: each
/// directory opened relative to the one before, no link followed, no
/// mount crossed.
pub(super) fn reach(root: &OwnedFd, rel: &Path) -> Result<Reached, Refused> {
    let names: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(Refused::Left(
                "not a plain path under the root: left".into(),
            )),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, above)) = names.split_last() else {
        return Err(Refused::Left(
            "the root itself is not an entry: left".into(),
        ));
    };
    let mut parent =
        rustix::fs::openat(root, ".", dir_flags(), Mode::empty()).map_err(io::Error::from)?;
    let mut at = PathBuf::new();
    for n in above {
        at.push(n);
        parent = open_dir(&parent, n, &at)?;
    }
    at.push(last);
    let entry = open_dir(&parent, last, &at)?;
    Ok(Reached {
        parent,
        name: last.to_os_string(),
        entry,
    })
}

fn dir_flags() -> OFlags {
    OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC
}

/// Opens the directory `name` below `dir` (`at`: its path below the root,
/// for messages): never a link, never a mount point.
fn open_dir(dir: &OwnedFd, name: &OsStr, at: &Path) -> Result<OwnedFd, Refused> {
    let shown = || at.to_string_lossy().into_owned();
    let fd = match rustix::fs::openat(dir, name, dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(Refused::Gone),
        // O_DIRECTORY meets a link before O_NOFOLLOW does: ENOTDIR.
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            let link = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
            let what = if link {
                "is a link: not followed"
            } else {
                "is not a directory"
            };
            return Err(Refused::Left(format!("{} {what}, left", shown())));
        }
        Err(e) => return Err(Refused::Left(format!("{}: {e}: left", shown()))),
    };
    if mount_root_fd(fd.as_fd())?.0 == Some(true) {
        return Err(Refused::Left(format!(
            "{} is a mount point: not crossed, left",
            shown()
        )));
    }
    Ok(fd)
}

impl Reached {
    /// A path that names the entry's directory itself, through its
    /// descriptor (`/proc/self/fd/N`): judging it reads what was reached.
    pub(super) fn entry_path(&self) -> PathBuf {
        fd_path(&self.entry)
    }

    /// A path naming the directory holding the entry, through its
    /// descriptor.
    pub(super) fn parent_path(&self) -> PathBuf {
        fd_path(&self.parent)
    }

    /// Removes the entry: every name below it unlinked relative to the
    /// descriptor of its directory, never through a link or across a
    /// mount. Everything is looked at first; a mount point, a directory
    /// deeper than [`MAX_DEPTH`] or what cannot be opened stops the removal
    /// before anything goes.
    pub(super) fn remove(self) -> Result<(), Refused> {
        let mut plan = Tree::default();
        plan.read(&self.entry, Path::new(""), 0)?;
        plan.unlink(&self.entry)?;
        match rustix::fs::unlinkat(&self.parent, &self.name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(()),
            Err(rustix::io::Errno::NOTEMPTY) => Err(Refused::Left(
                "a file appeared in it while it was removed: left (partly removed)".into(),
            )),
            Err(e) => Err(Refused::Left(format!("{e}: left (partly removed)"))),
        }
    }
}

fn fd_path(fd: &OwnedFd) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// What one directory of an entry holds, looked at before anything is
/// removed: its files by name, its directories opened.
#[derive(Default)]
struct Tree {
    files: Vec<OsString>,
    dirs: Vec<(OsString, OwnedFd, Tree)>,
}

impl Tree {
    /// Reads the directory `dir` (`at` below the entry) and, depth first,
    /// every directory in it.
    fn read(&mut self, dir: &OwnedFd, at: &Path, depth: usize) -> Result<(), Refused> {
        if depth > MAX_DEPTH {
            return Err(Refused::Left(format!(
                "more than {MAX_DEPTH} directories deep: left"
            )));
        }
        let mut d = rustix::fs::Dir::read_from(dir).map_err(io::Error::from)?;
        while let Some(e) = d.read() {
            let e = e.map_err(io::Error::from)?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match e.file_type() {
                FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|s| FileType::from_raw_mode(s.st_mode))
                    .map_err(io::Error::from)?,
                k => k,
            };
            if kind == FileType::Directory {
                let below = at.join(name);
                let fd = open_dir(dir, name, &below).map_err(|r| match r {
                    // Gone under the look: nothing there to remove.
                    Refused::Gone => Refused::Left(format!(
                        "{} went while it was looked at: left",
                        below.to_string_lossy()
                    )),
                    r => r,
                })?;
                let mut sub = Tree::default();
                sub.read(&fd, &below, depth + 1)?;
                self.dirs.push((name.to_os_string(), fd, sub));
            } else {
                self.files.push(name.to_os_string());
            }
        }
        Ok(())
    }

    /// Unlinks what [`Tree::read`] found, relative to `dir`; a name that
    /// went meanwhile is passed over.
    fn unlink(self, dir: &OwnedFd) -> Result<(), Refused> {
        for f in self.files {
            match rustix::fs::unlinkat(dir, &f, AtFlags::empty()) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                Err(e) => return Err(Refused::Left(format!("{e}: left (partly removed)"))),
            }
        }
        for (name, fd, sub) in self.dirs {
            sub.unlink(&fd)?;
            match rustix::fs::unlinkat(dir, &name, AtFlags::REMOVEDIR) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                Err(e) => return Err(Refused::Left(format!("{e}: left (partly removed)"))),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_reached_and_removed_by_descriptors_and_a_link_stops_it() {
        let d = tempfile::tempdir().unwrap();
        let e = d.path().join("v/MODULE_1+2");
        std::fs::create_dir_all(e.join("sub/deeper")).unwrap();
        std::fs::write(e.join("model.log"), "x").unwrap();
        std::fs::write(e.join("sub/deeper/a.lock"), "").unwrap();
        let root = open_root(d.path()).unwrap();
        let r = reach(&root, Path::new("v/MODULE_1+2")).unwrap();
        assert!(r.entry_path().join("model.log").exists());
        r.remove().unwrap();
        assert!(!e.exists());
        assert!(d.path().join("v").exists());
        assert!(matches!(
            reach(&root, Path::new("v/MODULE_1+2")),
            Err(Refused::Gone)
        ));
        // A version directory that is a link is not followed.
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(out.path().join("MODULE_3+4")).unwrap();
        std::os::unix::fs::symlink(out.path(), d.path().join("w")).unwrap();
        match reach(&root, Path::new("w/MODULE_3+4")) {
            Err(Refused::Left(why)) => assert!(why.contains("is a link"), "{why}"),
            _ => panic!("a link was followed"),
        }
        assert!(out.path().join("MODULE_3+4").exists());
    }
}
