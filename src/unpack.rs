//! Extracting a NEFF into a directory without ever writing outside it.
//!
//! Containment holds by construction, in two layers:
//!
//! 1. **The plan** ([`plan`]) validates the whole index before the first
//!    byte is written: every name is made relative and normalized, and
//!    refused when it is absolute, climbs out with `..`, holds a NUL, is too
//!    long to create, repeats another member's name, or passes through a
//!    symlink member (any symlink of the archive, wherever it stands in it).
//!    Every symlink's target is resolved against the archive's *final* tree,
//!    following the other symlink members as the kernel would, so a chain
//!    (`s -> .`, then `r -> s/s/../..`) or an order trick (`t -> s/..` before
//!    `s -> .`) that would resolve outside the directory at the end of the
//!    extraction is refused. Hard links must name a regular member.
//! 2. **The writes** go through a descriptor of the target directory, with
//!    `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has
//!    it, else a component-by-component `O_NOFOLLOW` walk: no write can
//!    follow a symlink, whoever made it. Files are created `O_EXCL`;
//!    directories come first, then files, hard links and, last, symlinks.
//!    FIFOs and devices are skipped with a warning. The target directory
//!    must be empty.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use crate::error::{Error, Result};
use crate::reader::Neff;
use crate::tar::{Entry, Kind, Piece};

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
    Error::UnsafePath {
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
    let mut symlinks: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut files: HashSet<Vec<u8>> = HashSet::new();
    for (i, e) in entries.iter().enumerate() {
        let name = neff.name(e);
        let path = safe_path(name)?;
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
        let action = action_of(neff, e, name, &files)?;
        if !matches!(action, Action::Skip(_)) {
            // Directories may repeat (tar writes parents again); nothing else may.
            if !seen.insert(path.clone()) && action != Action::Dir {
                return Err(unsafe_name(name, "a second member has the same name"));
            }
        }
        match &action {
            Action::Symlink(t) => {
                symlinks.insert(path.clone(), t.clone());
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
    check_tree(&steps, &symlinks)?;
    Ok(steps)
}

/// The path member `name` is extracted to, below the target directory:
/// normalized, or refused (absolute, climbing out, a NUL, too long).
fn safe_path(name: &[u8]) -> Result<Vec<u8>> {
    let parts = normalize(&[], name)
        .ok_or_else(|| unsafe_name(name, "absolute, or climbs out of the directory with '..'"))?;
    if name.contains(&0) {
        return Err(unsafe_name(name, "contains a NUL byte"));
    }
    let path = parts.join(&b'/');
    if path.len() > MAX_PATH || parts.iter().any(|c| c.len() > MAX_COMPONENT) {
        return Err(unsafe_name(
            name,
            format!(
                "too long to extract (a path over {MAX_PATH} bytes or a name over \
                 {MAX_COMPONENT})"
            ),
        ));
    }
    Ok(path)
}

/// What extracting entry `e` (named `name`) does, or why it is refused;
/// `files`: the regular members before it (a hard link's only targets).
fn action_of(neff: &Neff, e: &Entry, name: &[u8], files: &HashSet<Vec<u8>>) -> Result<Action> {
    Ok(match e.kind {
        Kind::Dir => Action::Dir,
        Kind::File => Action::File,
        Kind::Symlink => {
            let target = neff.link(e).unwrap_or_default();
            if target.is_empty() {
                return Err(unsafe_name(name, "symlink with an empty target"));
            }
            if target.starts_with(b"/") {
                return Err(unsafe_name(name, "symlink target is absolute"));
            }
            if target.contains(&0) || target.len() > MAX_PATH {
                return Err(unsafe_name(
                    name,
                    "symlink target holds a NUL or is too long",
                ));
            }
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
    })
}

/// The checks of the whole tree the steps make: every symlink resolves
/// inside the directory once all exist (whatever their order), no member
/// is written through a symlink member, and no name is both a directory
/// and another kind of member.
fn check_tree(steps: &[Step], symlinks: &HashMap<Vec<u8>, Vec<u8>>) -> Result<()> {
    // Every symlink resolves inside the directory once all of them exist,
    // whatever their order in the archive.
    let mut budget = CHECK_BUDGET;
    for s in steps {
        if let Action::Symlink(target) = &s.action {
            let link = &s.path;
            let parent = &link[..link.iter().rposition(|&b| b == b'/').unwrap_or(0)];
            resolve_in_final_tree(parent, target, symlinks, &mut budget)
                .map_err(|why| unsafe_name(link, why))?;
        }
    }
    // No member is written through any symlink member of the archive,
    // before or after it.
    for s in steps {
        let mut p: &[u8] = &s.path;
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            if symlinks.contains_key(p) {
                return Err(unsafe_name(
                    &s.path,
                    format!(
                        "would be written through the symlink member {}",
                        String::from_utf8_lossy(p)
                    ),
                ));
            }
        }
    }
    // A name used both as a directory (its own entry, or the parent of
    // another member) and as a file or link would make one write through
    // the other: refuse.
    let mut dirs: HashSet<&[u8]> = HashSet::new();
    for s in steps {
        if s.action == Action::Dir {
            dirs.insert(&s.path);
        }
        let mut p: &[u8] = &s.path;
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            dirs.insert(p);
        }
    }
    for s in steps {
        if !matches!(s.action, Action::Dir | Action::Skip(_)) && dirs.contains(s.path.as_slice()) {
            return Err(unsafe_name(
                &s.path,
                "is both a directory and another kind of member",
            ));
        }
    }
    Ok(())
}

/// Longest path the extraction creates (PATH_MAX less its NUL).
const MAX_PATH: usize = 4095;
/// Longest single name (NAME_MAX).
const MAX_COMPONENT: usize = 255;
/// Symlinks followed in one resolution before it counts as a loop (as the
/// kernel's ELOOP limit).
const MAX_HOPS: usize = 40;

/// Resolves `target`, read in directory `parent`, against the extracted
/// tree as it will stand at the end: each component that names a symlink
/// member is replaced by that member's target, as the kernel would. Fails
/// if the walk ever climbs above the root, meets an absolute target,
/// follows more than [`MAX_HOPS`] symlinks, or the archive's symlinks take
/// more than `budget` component steps in all (hostile chains cannot make
/// the check itself expensive).
fn resolve_in_final_tree(
    parent: &[u8],
    target: &[u8],
    symlinks: &HashMap<Vec<u8>, Vec<u8>>,
    budget: &mut usize,
) -> std::result::Result<(), String> {
    // The path walked so far as one key (`a/b/c`), and where each of its
    // components starts, so `..` and a followed link pop in O(1).
    let mut key: Vec<u8> = parent.to_vec();
    let mut starts: Vec<usize> = Vec::new();
    if !key.is_empty() {
        starts.push(0);
        for (i, &b) in parent.iter().enumerate() {
            if b == b'/' {
                starts.push(i + 1);
            }
        }
    }
    let pop = |key: &mut Vec<u8>, starts: &mut Vec<usize>| -> bool {
        match starts.pop() {
            Some(s) => {
                key.truncate(s.saturating_sub(1));
                true
            }
            None => false,
        }
    };
    let mut pending: VecDeque<&[u8]> = target.split(|&b| b == b'/').collect();
    let mut hops = 0;
    while let Some(c) = pending.pop_front() {
        *budget = budget
            .checked_sub(1)
            .ok_or("the archive's symlinks are too many or too deep to check")?;
        match c {
            b"" | b"." => {}
            b".." => {
                if !pop(&mut key, &mut starts) {
                    return Err("symlink target resolves outside the directory".into());
                }
            }
            _ => {
                starts.push(if key.is_empty() { 0 } else { key.len() + 1 });
                if !key.is_empty() {
                    key.push(b'/');
                }
                key.extend_from_slice(c);
                if let Some(t) = symlinks.get(&key) {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return Err("symlink targets loop".into());
                    }
                    if t.starts_with(b"/") {
                        return Err("symlink target leads through an absolute symlink".into());
                    }
                    pop(&mut key, &mut starts);
                    for part in t.split(|&b| b == b'/').rev() {
                        pending.push_front(part);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Component steps all symlink checks of one archive may take.
const CHECK_BUDGET: usize = 1 << 24;

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
                return Err(Error::refused(format!(
                    "target directory {} is not empty",
                    dir.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir_all(dir)?,
        Err(e) => return Err(e.into()),
    }
    let root = Beneath::root(dir)?;
    let entries = neff.entries();
    let mut report = Report::default();
    let mut dir_times: Vec<(&[u8], u32, i64)> = Vec::new();
    // Parents of every path first: plain directories we create.
    let mut made: HashSet<&[u8]> = HashSet::new();
    for s in &steps {
        let mut ends: Vec<usize> = s
            .path
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'/')
            .map(|(i, _)| i)
            .collect();
        if s.action == Action::Dir {
            ends.push(s.path.len());
        }
        for end in ends {
            let p = &s.path[..end];
            if made.insert(p) {
                root.mkdir(p)?;
            }
        }
    }
    let mut cursor = neff.cursor();
    for s in &steps {
        let e: &Entry = &entries[s.entry];
        match &s.action {
            Action::Dir => {
                dir_times.push((&s.path, e.mode, e.mtime));
                report.dirs += 1;
            }
            Action::File => {
                let mut f = root.create(&s.path)?;
                if e.is_sparse() {
                    // Holes stay holes: seek over them (the file is new
                    // and empty), then set the length a trailing hole ends at.
                    cursor.pieces(e, &mut |p| match p {
                        Piece::Data(d) => f.write_all(d).map_err(Error::Io),
                        Piece::Hole(n) => {
                            let n = i64::try_from(n).map_err(|_| {
                                Error::Io(std::io::Error::other("a hole of 2^63 bytes or more"))
                            })?;
                            f.seek(SeekFrom::Current(n)).map(drop).map_err(Error::Io)
                        }
                    })?;
                    f.set_len(e.size)?;
                } else {
                    cursor.copy(e, &mut f)?;
                }
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
            root.hard_link(t, &s.path)?;
            report.links += 1;
        }
    }
    for s in &steps {
        if let Action::Symlink(t) = &s.action {
            root.symlink(t, &s.path)?;
            report.links += 1;
        }
    }
    // Directory times and modes last (writing inside a directory moves its
    // mtime), deepest first so a read-only parent cannot block a child.
    dir_times.sort_by(|a, b| b.0.cmp(a.0));
    for (p, mode, t) in dir_times {
        let d = fs::File::from(root.open(p, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())?);
        d.set_modified(mtime(t))?;
        d.set_permissions(fs::Permissions::from_mode(mode & 0o777))?;
    }
    Ok(report)
}

/// The target directory as a descriptor; every path below is opened
/// beneath it without following any symlink.
struct Beneath {
    fd: OwnedFd,
}

impl Beneath {
    fn root(dir: &Path) -> std::io::Result<Beneath> {
        let fd = rustix::fs::open(
            dir,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Beneath { fd })
    }

    /// Opens `rel` (normalized, relative; empty for the root itself) with
    /// no symlink followed anywhere on the way: `openat2` with
    /// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or, on a kernel without it,
    /// one `O_NOFOLLOW` open per component.
    fn open(&self, rel: &[u8], flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
        let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
        let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
        match rustix::fs::openat2(&self.fd, rel, flags, mode, resolve) {
            Err(rustix::io::Errno::NOSYS) => self.walk(rel, flags, mode),
            r => Ok(r?),
        }
    }

    fn walk(&self, rel: &[u8], flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
        let parts: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
            .collect();
        let dir_flags = OFlags::DIRECTORY | OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut cur = rustix::fs::openat(&self.fd, ".", dir_flags, Mode::empty())?;
        let Some((last, parents)) = parts.split_last() else {
            return Ok(rustix::fs::openat(&self.fd, ".", flags, mode)?);
        };
        for c in parents {
            cur = rustix::fs::openat(&cur, *c, dir_flags, Mode::empty())?;
        }
        Ok(rustix::fs::openat(&cur, *last, flags, mode)?)
    }

    /// The parent directory of `rel` (opened beneath) and its last name.
    fn parent<'a>(&self, rel: &'a [u8]) -> std::io::Result<(OwnedFd, &'a [u8])> {
        let (dir, name) = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&b""[..], rel),
        };
        let fd = self.open(dir, OFlags::DIRECTORY | OFlags::PATH, Mode::empty())?;
        Ok((fd, name))
    }

    fn mkdir(&self, rel: &[u8]) -> std::io::Result<()> {
        let (parent, name) = self.parent(rel)?;
        match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
            Err(rustix::io::Errno::EXIST) => {
                // Only a directory may already stand there (a repeated
                // directory entry); anything else is an error below.
                self.open(rel, OFlags::DIRECTORY | OFlags::PATH, Mode::empty())
                    .map(drop)
            }
            r => Ok(r?),
        }
    }

    fn create(&self, rel: &[u8]) -> std::io::Result<fs::File> {
        let fd = self.open(
            rel,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(fs::File::from(fd))
    }

    fn hard_link(&self, target: &[u8], rel: &[u8]) -> std::io::Result<()> {
        let (tdir, tname) = self.parent(target)?;
        let (ldir, lname) = self.parent(rel)?;
        // No AT_SYMLINK_FOLLOW: a symlink target would be linked, not followed.
        Ok(rustix::fs::linkat(
            &tdir,
            tname,
            &ldir,
            lname,
            rustix::fs::AtFlags::empty(),
        )?)
    }

    fn symlink(&self, target: &[u8], rel: &[u8]) -> std::io::Result<()> {
        let (ldir, lname) = self.parent(rel)?;
        Ok(rustix::fs::symlinkat(target, &ldir, lname)?)
    }
}

fn mtime(t: i64) -> std::time::SystemTime {
    if t >= 0 {
        UNIX_EPOCH + Duration::from_secs(t as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(t.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_beneath_the_target_never_follow_a_planted_symlink() {
        // A process racing an extraction could plant a symlink in the
        // target after the plan was checked: every write goes beneath the
        // directory's descriptor with no symlink followed, so it fails.
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        fs::create_dir(&out).unwrap();
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("sg00")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), out.join("f")).unwrap();
        let root = Beneath::root(&out).unwrap();
        assert!(
            root.create(b"sg00/def.json").is_err(),
            "through a planted dir link"
        );
        assert!(root.create(b"f").is_err(), "onto a planted file link");
        assert!(root.mkdir(b"sg00").is_err(), "a link is not the directory");
        assert!(root.mkdir(b"sg00/x").is_err());
        assert!(root.symlink(b"y", b"sg00/y").is_err());
        assert!(root.hard_link(b"sg00/z", b"h").is_err());
        assert!(
            fs::read_dir(&outside).unwrap().next().is_none(),
            "nothing outside"
        );
        // And the walk used on kernels without openat2 refuses the same.
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        assert!(root
            .walk(b"sg00/def.json", flags, Mode::from_raw_mode(0o600))
            .is_err());
        assert!(root.walk(b"f", flags, Mode::from_raw_mode(0o600)).is_err());
        assert!(fs::read_dir(&outside).unwrap().next().is_none());
        // Ordinary paths work.
        root.mkdir(b"d").unwrap();
        root.create(b"d/file").unwrap();
        root.walk(b"d/other", flags, Mode::from_raw_mode(0o600))
            .unwrap();
        assert!(out.join("d/file").is_file() && out.join("d/other").is_file());
    }

    #[test]
    fn final_tree_resolution_follows_later_symlinks_and_bounds_its_work() {
        let links = |pairs: &[(&str, &str)]| -> HashMap<Vec<u8>, Vec<u8>> {
            pairs
                .iter()
                .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
                .collect()
        };
        let mut budget = CHECK_BUDGET;
        let l = links(&[("s", "."), ("d/up", "../x/.."), ("x", "d/up")]);
        assert!(resolve_in_final_tree(b"", b"s/s/..", &l, &mut budget).is_err());
        assert!(resolve_in_final_tree(b"", b"s/s/d", &l, &mut budget).is_ok());
        assert!(resolve_in_final_tree(b"d", b"up", &l, &mut budget).is_err());
        let l = links(&[("a", "b"), ("b", "a")]);
        let e = resolve_in_final_tree(b"", b"a", &l, &mut budget).unwrap_err();
        assert!(e.contains("loop"), "{e}");
        let mut small = 10;
        let e = resolve_in_final_tree(b"", &b"x/".repeat(20), &l, &mut small).unwrap_err();
        assert!(e.contains("too many or too deep"), "{e}");
    }
}
