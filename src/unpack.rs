//! Extracting a NEFF into a directory without ever writing outside it.
//!
//! The whole index is validated before the first byte is written ([`plan`]):
//! every name is made relative and normalized, and refused when it is
//! absolute, climbs out with `..`, repeats another member's name, or passes
//! through a symlink member; every link's target must stay inside the
//! directory. Only then are directories created, files written (with
//! `create_new`, so nothing pre-existing is followed), hard links made and,
//! last, symlinks, so that nothing is ever written through one. FIFOs and
//! devices are skipped with a warning. The target directory must be empty.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::neff::Neff;
use crate::tar::{Entry, Kind};

/// What to do with one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create a directory (its mode and mtime are set last, once everything
    /// inside it is written).
    Dir,
    /// Write a regular file with `create_new`, then set its mode and mtime.
    File,
    /// A hard link to an earlier regular member (normalized name).
    Hardlink(Vec<u8>),
    /// A symlink with this target text.
    Symlink(Vec<u8>),
    /// Skipped (FIFO, device, the root entry), with the reason.
    Skip(String),
}

/// One validated step of an extraction.
#[derive(Debug, Clone)]
pub struct Step {
    /// Index into the NEFF's entries.
    pub entry: usize,
    /// Normalized relative path (components joined by `/`).
    pub path: Vec<u8>,
    /// What extracting the entry does.
    pub action: Action,
}

fn unsafe_name(name: &[u8], reason: impl Into<String>) -> Error {
    Error::Unsafe {
        name: String::from_utf8_lossy(name).into_owned(),
        reason: reason.into(),
    }
}

/// Lexically normalizes a relative path; `None` if it is absolute or
/// climbs above its start.
fn normalize(base: &[&[u8]], path: &[u8]) -> Option<Vec<Vec<u8>>> {
    if path.starts_with(b"/") {
        return None;
    }
    let mut parts: Vec<Vec<u8>> = base.iter().map(|c| c.to_vec()).collect();
    for c in path.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            c => parts.push(c.to_vec()),
        }
    }
    Some(parts)
}

/// Validates every entry and returns the steps of a safe extraction.
pub fn plan(neff: &Neff) -> Result<Vec<Step>> {
    let entries = neff.entries();
    let mut steps = Vec::with_capacity(entries.len());
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut symlinks: HashSet<Vec<u8>> = HashSet::new();
    let mut files: HashSet<Vec<u8>> = HashSet::new();
    for (i, e) in entries.iter().enumerate() {
        let name = neff.name(e);
        let parts = normalize(&[], name).ok_or_else(|| {
            unsafe_name(name, "absolute, or climbs out of the directory with '..'")
        })?;
        if name.contains(&0) {
            return Err(unsafe_name(name, "contains a NUL byte"));
        }
        let path = parts.join(&b'/');
        if path.is_empty() {
            if e.kind == Kind::Dir {
                steps.push(Step {
                    entry: i,
                    path,
                    action: Action::Skip("the directory itself".into()),
                });
                continue;
            }
            return Err(unsafe_name(name, "names the target directory itself"));
        }
        // No member may be written through a symlink member.
        for k in 1..parts.len() {
            let prefix = parts[..k].join(&b'/');
            if symlinks.contains(&prefix) {
                return Err(unsafe_name(
                    name,
                    "would be written through the symlink member before it",
                ));
            }
        }
        let action = match e.kind {
            Kind::Dir => Action::Dir,
            Kind::File => Action::File,
            Kind::Symlink => {
                let target = neff.link(e).unwrap_or_default();
                let parent: Vec<&[u8]> =
                    parts[..parts.len() - 1].iter().map(Vec::as_slice).collect();
                check_symlink_target(&parent, target, &symlinks)
                    .map_err(|why| unsafe_name(name, why))?;
                Action::Symlink(target.to_vec())
            }
            Kind::Hardlink => {
                let target = neff.link(e).unwrap_or_default();
                let t = normalize(&[], target)
                    .ok_or_else(|| unsafe_name(name, "hard link target is outside the directory"))?
                    .join(&b'/');
                if !files.contains(&t) {
                    return Err(unsafe_name(
                        name,
                        "hard link target is not an earlier regular member",
                    ));
                }
                Action::Hardlink(t)
            }
            Kind::Other => Action::Skip(format!(
                "type '{}' (FIFO, device or other) is not extracted",
                e.typeflag as char
            )),
        };
        if !matches!(action, Action::Skip(_)) {
            // Directories may repeat (tar writes parents again); nothing else may.
            if !seen.insert(path.clone()) && action != Action::Dir {
                return Err(unsafe_name(name, "a second member has the same name"));
            }
        }
        match &action {
            Action::Symlink(_) => {
                symlinks.insert(path.clone());
            }
            Action::File | Action::Hardlink(_) => {
                files.insert(path.clone());
            }
            _ => {}
        }
        steps.push(Step {
            entry: i,
            path,
            action,
        });
    }
    // A name used both as a directory (its own entry, or the parent of
    // another member) and as a file or link would make one write through
    // the other: refuse.
    let mut dirs: HashSet<&[u8]> = HashSet::new();
    for s in &steps {
        if s.action == Action::Dir {
            dirs.insert(&s.path);
        }
        let mut p: &[u8] = &s.path;
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            dirs.insert(p);
        }
    }
    for s in &steps {
        if !matches!(s.action, Action::Dir | Action::Skip(_)) && dirs.contains(s.path.as_slice()) {
            return Err(unsafe_name(
                &s.path,
                "is both a directory and another kind of member",
            ));
        }
    }
    Ok(steps)
}

/// A symlink at `parent/…` with `target` must resolve inside the directory,
/// and may not climb (`..`) out of a path that is itself a symlink member.
fn check_symlink_target(
    parent: &[&[u8]],
    target: &[u8],
    symlinks: &HashSet<Vec<u8>>,
) -> std::result::Result<(), String> {
    if target.is_empty() {
        return Err("symlink with an empty target".into());
    }
    if target.starts_with(b"/") {
        return Err("symlink target is absolute".into());
    }
    let mut parts: Vec<&[u8]> = parent.to_vec();
    for c in target.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                if symlinks.contains(&parts.join(&b'/')) {
                    return Err("symlink target climbs out of another symlink".into());
                }
                if parts.pop().is_none() {
                    return Err("symlink target resolves outside the directory".into());
                }
            }
            c => parts.push(c),
        }
    }
    Ok(())
}

/// What an extraction did.
#[derive(Debug, Default)]
pub struct Report {
    /// Regular files written.
    pub files: usize,
    /// Directory entries created (parents made implicitly are not counted).
    pub dirs: usize,
    /// Hard links and symlinks made.
    pub links: usize,
    /// Bytes of regular file data written.
    pub bytes: u64,
    /// One line per skipped entry.
    pub warnings: Vec<String>,
}

/// Extracts every member of `neff` under `dir` (created if missing; it must
/// be empty). Validation happens first: on refusal nothing is written.
pub fn unpack(neff: &Neff, dir: &Path) -> Result<Report> {
    let steps = plan(neff)?;
    match fs::read_dir(dir) {
        Ok(mut it) => {
            if it.next().is_some() {
                return Err(Error::Refused(format!(
                    "target directory {} is not empty",
                    dir.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir_all(dir)?,
        Err(e) => return Err(e.into()),
    }
    let entries = neff.entries();
    let at = |p: &[u8]| dir.join(OsStr::from_bytes(p));
    let mut report = Report::default();
    let mut dir_times: Vec<(PathBuf, u32, i64)> = Vec::new();
    // Parents of every path first: they are plain directories we create.
    for s in &steps {
        if let Some(parent) = Path::new(OsStr::from_bytes(&s.path)).parent() {
            fs::create_dir_all(dir.join(parent))?;
        }
    }
    for s in &steps {
        let e: &Entry = &entries[s.entry];
        match &s.action {
            Action::Dir => {
                let p = at(&s.path);
                fs::create_dir_all(&p)?;
                dir_times.push((p, e.mode, e.mtime));
                report.dirs += 1;
            }
            Action::File => {
                let p = at(&s.path);
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&p)?;
                std::io::Write::write_all(&mut f, neff.data(e))?;
                f.set_permissions(fs::Permissions::from_mode(e.mode & 0o777))?;
                f.set_modified(mtime(e.mtime))?;
                report.files += 1;
                report.bytes += e.size;
            }
            Action::Skip(why) => {
                if s.path.is_empty() {
                    continue;
                }
                report.warnings.push(format!(
                    "skipped {}: {why}",
                    String::from_utf8_lossy(&s.path)
                ));
            }
            _ => {}
        }
    }
    for s in &steps {
        if let Action::Hardlink(t) = &s.action {
            fs::hard_link(at(t), at(&s.path))?;
            report.links += 1;
        }
    }
    for s in &steps {
        if let Action::Symlink(t) = &s.action {
            std::os::unix::fs::symlink(OsStr::from_bytes(t), at(&s.path))?;
            report.links += 1;
        }
    }
    // Directory times and modes last (writing inside a directory moves its
    // mtime), deepest first so a read-only parent cannot block a child.
    dir_times.sort_by(|a, b| b.0.cmp(&a.0));
    for (p, mode, t) in dir_times {
        fs::File::open(&p)?.set_modified(mtime(t))?;
        fs::set_permissions(&p, fs::Permissions::from_mode(mode & 0o777))?;
    }
    Ok(report)
}

fn mtime(t: i64) -> std::time::SystemTime {
    if t >= 0 {
        UNIX_EPOCH + Duration::from_secs(t as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(t.unsigned_abs())
    }
}
