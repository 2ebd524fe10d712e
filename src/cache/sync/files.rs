//! The files of a source entry a sync copies (every regular file but its
//! `*.lock` files, no link followed), read, and hashed to tell the same
//! entry from a different one.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::Action;

/// One file of a source entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SrcFile {
    /// Its path below the entry.
    pub(super) rel: PathBuf,
    pub(super) size: u64,
    pub(super) modified: Option<SystemTime>,
}

/// Whether a file named so is a lock (never copied).
pub(super) fn is_lock(rel: &Path) -> bool {
    rel.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".lock"))
}

/// The files of the entry `dir` on disk, locks left out, sorted by path;
/// what stops the copy when it holds a link or anything but files and
/// directories (an `ok` entry holds neither: it changed since it was
/// judged).
pub(super) fn list(dir: &Path) -> Result<Vec<SrcFile>, (Action, String)> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name();
    for e in walk {
        let e = e.map_err(|err| (Action::Error, format!("the source entry: {err}")))?;
        let rel = e.path().strip_prefix(dir).unwrap_or(e.path()).to_path_buf();
        let t = e.file_type();
        if t.is_dir() {
            continue;
        }
        if !t.is_file() {
            return Err((
                Action::Left,
                format!(
                    "{} is not a regular file (it changed since it was judged): not copied",
                    rel.display()
                ),
            ));
        }
        if is_lock(&rel) {
            continue;
        }
        let meta = e
            .metadata()
            .map_err(|err| (Action::Error, format!("{}: {err}", rel.display())))?;
        out.push(SrcFile {
            rel,
            size: meta.len(),
            modified: meta.modified().ok(),
        });
    }
    Ok(out)
}

/// Opens the file `rel` of the entry `dir` for reading, never through a
/// link at its last name.
pub(super) fn open(dir: &Path, rel: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(rel))
}

/// The SHA-256 of what `r` reads, and its length.
pub(super) fn hash(mut r: impl Read) -> io::Result<([u8; 32], u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((h.finalize().into(), n))
}
