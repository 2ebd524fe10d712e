//! One entry copied into a directory under its staging name, checked, and
//! renamed into place; and the staging copies a killed sync left, removed.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
#[cfg(feature = "remote")]
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::files;
use super::local::{dir_flags, existing, failed, fd_path, Dest, Stop};
use super::plan::Planned;
use super::Action;
#[cfg(feature = "remote")]
use super::{files::Print, memo};
use crate::cache::descend::{self, Refused};
use crate::cache::staging;
use crate::cache::status::rejudge;
use crate::cache::{vllm, State};

impl Dest {
    /// Copies the entry `p` into `parent` (`above` below the root): under
    /// its staging name, checked, renamed into place. `Ok(false)` when the
    /// copy of an entry judged `ok` without its NEFF read is not, nor the
    /// source's (its NEFF, read whole in the copy, refused);
    /// `Err` when it is not in place otherwise. Either way the staging copy
    /// is gone.
    pub(super) fn copy(&self, p: &Planned, parent: &OwnedFd, above: &Path) -> Result<bool, Stop> {
        let name = p.name().to_string_lossy();
        let stage = staging::name(&name, &self.host);
        let rel = above.join(&stage);
        let mkdir = || rustix::fs::mkdirat(parent, stage.as_str(), Mode::from_raw_mode(0o777));
        match mkdir() {
            // Left by an earlier process of this pid: not a copy of ours.
            Err(Errno::EXIST) => {
                self.remove(&rel);
                mkdir()
            }
            r => r,
        }
        .map_err(|e| failed(&self.path.join(&rel), e))?;
        let done = rustix::fs::openat(parent, stage.as_str(), dir_flags(), Mode::empty())
            .map_err(|e| failed(&self.path.join(&rel), e))
            .and_then(|fd| {
                write(p, &fd)?;
                match check(p, &fd, parent)? {
                    true => rename(parent, &stage, p.name()).map(Some),
                    false => Ok(None),
                }
            });
        match done {
            Ok(Some(true)) => Ok(true),
            Ok(None) => {
                self.remove(&rel);
                Ok(false)
            }
            Ok(Some(false)) => {
                self.remove(&rel);
                // Another writer put it there meanwhile: compared as any
                // entry the destination holds.
                match existing(p, parent) {
                    (Action::Skipped, _) => Err((
                        Action::Skipped,
                        "the same entry was put in place by another writer meanwhile".into(),
                    )),
                    (a, r) => Err((a, r.unwrap_or_default())),
                }
            }
            Err(s) => {
                self.remove(&rel);
                Err(s)
            }
        }
    }

    /// Removes the directory `rel` below the root, by descriptors.
    fn remove(&self, rel: &Path) {
        let gone = descend::reach(&self.root, rel).and_then(|r| r.remove());
        match gone {
            Ok(()) | Err(Refused::Gone) => {}
            Err(Refused::Left(why)) => log::warn!("{}: {why}", self.path.join(rel).display()),
        }
    }

    /// Removes the staging copies of syncs that are gone (this host's,
    /// whose process is dead; another host's, older than a day) from the
    /// directories the `planned` entries go into.
    pub(super) fn clean(&self, planned: &[Planned]) {
        let dirs: BTreeSet<&Path> = planned
            .iter()
            .map(|p| p.rel.parent().unwrap_or(Path::new("")))
            .collect();
        for above in dirs {
            let Ok(Some(fd)) = self.dir(above, false) else {
                continue;
            };
            let Ok(mut list) = rustix::fs::Dir::read_from(&fd) else {
                continue;
            };
            while let Some(Ok(e)) = list.read() {
                let name = OsStr::from_bytes(e.file_name().to_bytes());
                let Some(s) = name.to_str().and_then(staging::parse) else {
                    continue;
                };
                if self.stale(&s, &fd, name) {
                    log::info!(
                        "{}: a staging copy left by a sync that is gone: removed",
                        self.path.join(above).join(name).display()
                    );
                    self.remove(&above.join(name));
                }
            }
        }
    }

    /// Whether the staging copy `s` (`name` in `dir`) belongs to a sync
    /// that is gone.
    fn stale(&self, s: &staging::Staging, dir: &OwnedFd, name: &OsStr) -> bool {
        if s.host == self.host {
            return s.pid != std::process::id() && !vllm::alive(s.pid);
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return false;
        };
        let secs = st.st_mtime.max(st.st_ctime);
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
        SystemTime::now()
            .duration_since(t)
            .is_ok_and(|age| age > staging::OTHER_HOST_AGE)
    }
}

/// Writes every file of `p` into the staging directory `stage`: each
/// created new (never through a link), its bytes copied, its size checked
/// against the source's, its modification time kept, synced; then every
/// directory synced.
fn write(p: &Planned, stage: &OwnedFd) -> Result<(), Stop> {
    let mut dirs: Vec<(PathBuf, OwnedFd)> = Vec::new();
    for f in &p.files {
        let above = f.rel.parent().unwrap_or(Path::new(""));
        let mut at = rustix::fs::openat(stage, ".", dir_flags(), Mode::empty())
            .map_err(|e| failed(&f.rel, e))?;
        let mut made = PathBuf::new();
        for n in above.iter() {
            made.push(n);
            if let Some((_, fd)) = dirs.iter().find(|(d, _)| *d == made) {
                at = fd.try_clone().map_err(|e| failed(&made, e))?;
                continue;
            }
            match rustix::fs::mkdirat(&at, n, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(failed(&made, e)),
            }
            at = rustix::fs::openat(&at, n, dir_flags(), Mode::empty())
                .map_err(|e| failed(&made, e))?;
            dirs.push((made.clone(), at.try_clone().map_err(|e| failed(&made, e))?));
        }
        let file_name = f.rel.file_name().unwrap_or_default();
        let flags =
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let out = rustix::fs::openat(&at, file_name, flags, Mode::from_raw_mode(0o666))
            .map_err(|e| failed(&f.rel, e))?;
        let mut out = File::from(out);
        let src_path = p.entry.path.join(&f.rel);
        #[cfg(feature = "remote")]
        if super::url_of(&p.entry.path).is_some() {
            // The listing's digest, remembered for the copy: an ETag
            // when the bytes came with the same (the store's word for
            // them); an exact digest (the hub's) checked against the
            // bytes, hashed as they come.
            let listed = f.print;
            let hash = listed.filter(|l| l.exact() || f.size == 0);
            let read = memo::read(&p.entry.path, f, hash, &mut |c| out.write_all(c))
                .map_err(|e| failed(&f.rel, e))?;
            let url = files::url_of_file(&p.entry.path.to_string_lossy(), &f.rel);
            let came = read.etag.and_then(|e| Print::of(&url, &e));
            let got = read.digest.or(came.filter(|c| Some(*c) == listed));
            if let (Some(got), Some(listed)) = (read.digest, listed) {
                if got != listed && listed.exact() {
                    return Err((
                        Action::Left,
                        format!(
                            "{}: the bytes read are not those its listing's digest names \
                             (it changed since it was listed): not copied",
                            src_path.display()
                        ),
                    ));
                }
            }
            if let Some(m) = f.modified {
                out.set_modified(m).map_err(|e| failed(&f.rel, e))?;
            }
            out.sync_all().map_err(|e| failed(&f.rel, e))?;
            if let Some(got) = got {
                memo::wrote(&out, got);
            }
            continue;
        }
        let mut src = files::open(&p.entry.path, &f.rel).map_err(|e| failed(&src_path, e))?;
        let n = io::copy(&mut src, &mut out).map_err(|e| failed(&f.rel, e))?;
        let now = src.metadata().map(|m| m.len()).unwrap_or(n);
        if n != f.size || now != f.size {
            return Err((
                Action::Left,
                format!(
                    "{} changed while it was copied ({n} bytes read, {} listed): not copied",
                    src_path.display(),
                    f.size
                ),
            ));
        }
        if let Some(m) = f.modified {
            out.set_modified(m).map_err(|e| failed(&f.rel, e))?;
        }
        out.sync_all().map_err(|e| failed(&f.rel, e))?;
    }
    for (d, fd) in dirs.iter().rev() {
        rustix::fs::fsync(fd).map_err(|e| failed(d, e))?;
    }
    rustix::fs::fsync(stage).map_err(|e| failed(Path::new("."), e))
}

/// Checks the copy in `stage` (in `parent`): the files and sizes of the
/// source, and judged `ok` as `cache status` judges the entry. `Ok(false)`
/// when it is not, and neither is the source's entry (a store's, of the
/// same bytes, is taken as not; one on disk is read).
fn check(p: &Planned, stage: &OwnedFd, parent: &OwnedFd) -> Result<bool, Stop> {
    let dir = fd_path(stage);
    let ours = files::list(&dir)?;
    let sized = |f: &[files::SrcFile]| {
        f.iter()
            .map(|f| (f.rel.clone(), f.size))
            .collect::<Vec<_>>()
    };
    if sized(&ours) != sized(&p.files) {
        return Err((
            Action::Left,
            "the copy's files or sizes are not the source's: not put in place".into(),
        ));
    }
    let judged = rejudge(&p.entry, None, Some((dir, fd_path(parent))));
    // The source was judged without its NEFF read: a copy that is not
    // `ok` is of a source that is not (in a store, of the same bytes; on
    // disk, read now to tell which).
    if judged.state != State::Ok && (p.objects.is_some() || !p.ok_read_whole()) {
        if p.objects.is_some() {
            p.found_not_ok(judged.state);
        }
        return Ok(false);
    }
    if judged.state != State::Ok {
        return Err((
            Action::Left,
            format!(
                "the copy is judged {}{}: not put in place",
                judged.state,
                judged.reason.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
        ));
    }
    Ok(true)
}

/// Renames `stage` to `name` in `parent`, never over anything: `false`
/// when something stands under the name. Where the file system has no
/// `RENAME_NOREPLACE` (NFS), the name is looked at first and a plain
/// rename, which fails over a non-empty directory, does it.
fn rename(parent: &OwnedFd, stage: &str, name: &OsStr) -> Result<bool, Stop> {
    let shown = || PathBuf::from(name);
    let r = rustix::fs::renameat_with(parent, stage, parent, name, RenameFlags::NOREPLACE);
    let moved = match r {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
            log::debug!(
                "{}: no RENAME_NOREPLACE here: looked at, then renamed",
                shown().display()
            );
            match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(_) => false,
                Err(Errno::NOENT) => match rustix::fs::renameat(parent, stage, parent, name) {
                    Ok(()) => true,
                    Err(Errno::EXIST | Errno::NOTEMPTY | Errno::ISDIR | Errno::NOTDIR) => false,
                    Err(e) => return Err(failed(&shown(), e)),
                },
                Err(e) => return Err(failed(&shown(), e)),
            }
        }
        Err(e) => return Err(failed(&shown(), e)),
    };
    if moved {
        rustix::fs::fsync(parent).map_err(|e| failed(&shown(), e))?;
    }
    Ok(moved)
}
