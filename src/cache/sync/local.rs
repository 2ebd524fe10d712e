//! A sync into a directory: the destination's root opened once, every
//! directory below it opened relative to its parent with `O_NOFOLLOW |
//! O_DIRECTORY` (made when missing), no link followed, no mount crossed.
//! Each entry is written under its staging name beside its final one,
//! every file created new, written, synced and its size checked; the copy
//! is judged as `cache status` judges an entry (it must be `ok`: its NEFF
//! read whole, vLLM's `neff_size` compared) and renamed into place with
//! `RENAME_NOREPLACE`, so a reader sees the whole entry or nothing. Before
//! anything is written, the staging copies a killed sync left in the
//! directories this sync writes into are removed (by descriptors) once
//! their process is gone.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::files;
use super::plan::Planned;
use super::{Action, Outcome, SyncEntry, SyncOptions};
use crate::cache::descend;
use crate::cache::found::vllm_lock_in;
use crate::cache::host::lock_held;
use crate::cache::staging;
use crate::cache::status::rejudge;
use crate::cache::State;
use crate::error::{Error, Result};

/// Why an entry is not copied.
pub(super) type Stop = (Action, String);

/// The destination's root, opened once.
pub(super) struct Dest {
    pub(super) root: OwnedFd,
    pub(super) path: PathBuf,
    pub(super) host: String,
}

/// Copies the `planned` entries into `dst`, `opts.io_depth` at once; the
/// record of each, in order, and how many were passed over (not `ok`
/// once read whole).
pub(super) fn sync(
    dst: &Path,
    planned: &[Planned],
    opts: &SyncOptions,
) -> Result<(Vec<SyncEntry>, usize)> {
    let dest = Dest::open(dst, opts.dry_run)?;
    if let (Some(d), false) = (&dest, opts.dry_run) {
        d.clean(planned);
    }
    let at = |p: &Planned| dst.join(&p.rel);
    Ok(super::each(planned, opts, at, |p| match &dest {
        None => p.ok_read_whole().then_some((Action::Copy, None)),
        Some(d) => d.one(p, opts.dry_run),
    }))
}

pub(super) fn dir_flags() -> OFlags {
    OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC
}

/// A path naming what `fd` opened (`/proc/self/fd/N`).
pub(super) fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// An I/O failure as a stop, naming `what`.
pub(super) fn failed(what: &Path, e: impl std::fmt::Display) -> Stop {
    (Action::Error, format!("{}: {e}", what.display()))
}

impl Dest {
    /// Opens the root `dst` (followed should it be a link), made when it
    /// does not exist; `None` in a dry run where it does not exist.
    fn open(dst: &Path, dry: bool) -> Result<Option<Dest>> {
        // Named: the caller names the source.
        let named = |e: std::io::Error| {
            let why = format!("the destination {}: {e}", dst.display());
            Error::Io(std::io::Error::new(e.kind(), why))
        };
        if !dry {
            std::fs::create_dir_all(dst).map_err(named)?;
        }
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        let root = match rustix::fs::open(dst, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if dry => return Ok(None),
            Err(e) => return Err(named(e.into())),
        };
        Ok(Some(Dest {
            root,
            path: dst.to_path_buf(),
            host: staging::host(),
        }))
    }

    /// The directory `rel` below the root, each part opened relative to
    /// the one before and made when missing (with `create`); `None` when
    /// it does not exist and is not to be made.
    pub(super) fn dir(
        &self,
        rel: &Path,
        create: bool,
    ) -> std::result::Result<Option<OwnedFd>, Stop> {
        let here = |at: &Path| self.path.join(at);
        let mut fd = rustix::fs::openat(&self.root, ".", dir_flags(), Mode::empty())
            .map_err(|e| failed(&self.path, e))?;
        let mut at = PathBuf::new();
        for n in rel.iter() {
            at.push(n);
            let open = || rustix::fs::openat(&fd, n, dir_flags(), Mode::empty());
            let next = match open() {
                Err(Errno::NOENT) if !create => return Ok(None),
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&fd, n, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => open(),
                        Err(e) => return Err(failed(&here(&at), e)),
                    }
                }
                r => r,
            };
            fd = match next {
                Ok(fd) => fd,
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    return Err((
                        Action::Left,
                        format!(
                            "{} is a link or not a directory at the destination: not followed",
                            here(&at).display()
                        ),
                    ))
                }
                Err(e) => return Err(failed(&here(&at), e)),
            };
            if descend::mount_root_fd(fd.as_fd())
                .map_err(|e| failed(&here(&at), e))?
                .0
                == Some(true)
            {
                return Err((
                    Action::Left,
                    format!(
                        "{} is a mount point at the destination: not crossed",
                        here(&at).display()
                    ),
                ));
            }
        }
        Ok(Some(fd))
    }

    /// Syncs one entry: copied when the destination lacks it, else
    /// compared with what is there; `None` when the source's entry, read
    /// whole, is not `ok` after all.
    fn one(&self, p: &Planned, dry: bool) -> Outcome {
        let above = p.rel.parent().unwrap_or(Path::new(""));
        let parent = match self.dir(above, !dry) {
            Ok(Some(fd)) => fd,
            Ok(None) => return p.ok_read_whole().then_some((Action::Copy, None)),
            Err((a, r)) => return p.ok_read_whole().then_some((a, Some(r))),
        };
        let name = p.name();
        let (action, why) = match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => return self.absent(p, &parent, above, dry),
            Err(e) => (Action::Error, Some(failed(&self.path.join(&p.rel), e).1)),
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => existing(p, &parent),
                FileType::Symlink => (
                    Action::Conflict,
                    Some("a link stands under its name at the destination: not followed, untouched".into()),
                ),
                _ => (
                    Action::Conflict,
                    Some("a file that is not a directory stands under its name at the destination: untouched".into()),
                ),
            },
        };
        // An entry of a store judged by its listing alone is read whole
        // (its copy was, in staging) only when it is not in place: one
        // that is not `ok` then is passed over, whatever stood in its way.
        let done = matches!(action, Action::Copied | Action::Skipped);
        (done || p.ok_read_whole()).then_some((action, why))
    }
}

impl Dest {
    /// Syncs the entry `p`, which `parent` (`above` below the root) lacks:
    /// copied, unless vLLM compiles it there now (the lock beside its
    /// name held).
    fn absent(&self, p: &Planned, parent: &OwnedFd, above: &Path, dry: bool) -> Outcome {
        let lock = p
            .name()
            .to_str()
            .and_then(|key| vllm_lock_in(&fd_path(parent), key));
        if let Some(why) = lock.and_then(|l| lock_held(&l)) {
            let why = format!("{why} at the destination: left alone");
            return p.ok_read_whole().then_some((Action::Locked, Some(why)));
        }
        if dry {
            return p.ok_read_whole().then_some((Action::Copy, None));
        }
        if p.known_not_ok() {
            return None;
        }
        match self.copy(p, parent, above) {
            Ok(true) => Some((Action::Copied, None)),
            Ok(false) => None,
            Err((a, r)) => p.ok_read_whole().then_some((a, Some(r))),
        }
    }
}

/// What the destination's entry `p` (in `parent`) is to the source's: the
/// same (skipped), locked, or a conflict. Nothing in it is changed.
pub(super) fn existing(p: &Planned, parent: &OwnedFd) -> (Action, Option<String>) {
    let fd = match rustix::fs::openat(parent, p.name(), dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            return (
                Action::Left,
                Some("the destination's entry went while it was looked at: not copied".into()),
            )
        }
        Err(Errno::LOOP | Errno::NOTDIR) => {
            return (
                Action::Conflict,
                Some(
                    "a link stands under its name at the destination: not followed, untouched"
                        .into(),
                ),
            )
        }
        Err(e) => return (Action::Error, Some(format!("the destination's entry: {e}"))),
    };
    let dir = fd_path(&fd);
    // The source's files, byte for byte, and no lock: the same entry,
    // judged by the source's judgement (nothing of it read twice).
    let how = files::list_local_locks(&dir).and_then(|(theirs, locks)| {
        let how = super::same::differs(&p.entry.path, &p.files, &dir, &theirs)?;
        Ok((how, locks))
    });
    if let Ok((None, false)) = how {
        return (Action::Skipped, None);
    }
    let judged = rejudge(&p.entry, None, Some((dir, fd_path(parent))));
    match (judged.state, how) {
        (State::Ok, Ok((None, _))) => (Action::Skipped, None),
        (State::Ok, Ok((Some(how), _))) => (
            Action::Conflict,
            Some(format!(
                "the destination holds another entry under its name: {how}; untouched"
            )),
        ),
        (State::Ok, Err((a, why))) => (a, Some(why)),
        (State::Locked, _) => (
            Action::Locked,
            Some("a compile holds a lock in the destination's entry: left alone".into()),
        ),
        (s, _) => (
            Action::Conflict,
            Some(format!(
                "the destination's entry is {s}{}: untouched",
                judged.reason.map(|r| format!(" ({r})")).unwrap_or_default()
            )),
        ),
    }
}
