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

/// The files of the entry `dir` (on disk, or a bucket's URL), locks left
/// out, sorted by path; what stops the copy when it holds a link or
/// anything but files and directories (an `ok` entry holds neither: it
/// changed since it was judged).
pub(super) fn list(dir: &Path) -> Result<Vec<SrcFile>, (Action, String)> {
    #[cfg(feature = "remote")]
    if let Some(url) = super::url_of(dir) {
        return list_objects(url);
    }
    list_local(dir)
}

/// The objects of the entry at `url`, locks left out, sorted by name.
#[cfg(feature = "remote")]
fn list_objects(url: &str) -> Result<Vec<SrcFile>, (Action, String)> {
    let objects =
        crate::cache::bucket::relist(url).map_err(|e| (Action::Error, format!("{url}: {e}")))?;
    let mut out: Vec<SrcFile> = objects
        .into_iter()
        .map(|(name, size, modified)| SrcFile {
            rel: PathBuf::from(crate::remote::key_part(&name).into_owned()),
            size,
            modified: Some(modified),
        })
        .filter(|f| !is_lock(&f.rel))
        .collect();
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

fn list_local(dir: &Path) -> Result<Vec<SrcFile>, (Action, String)> {
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

/// Hands the bytes of the file `f` of the entry `dir` (on disk, or a
/// bucket's URL) to `sink` in order; `Err` when it is not `f.size` bytes
/// long (it changed since it was listed).
pub(super) fn read(
    dir: &Path,
    f: &SrcFile,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    #[cfg(feature = "remote")]
    if let Some(url) = super::url_of(dir) {
        return read_object(url, f, sink);
    }
    let mut file = open(dir, &f.rel)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                sink(&buf[..k])?;
                n += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let now = file.metadata()?.len();
    if n != f.size || now != f.size {
        return Err(changed(dir, f, n));
    }
    Ok(())
}

/// The error of a file that is not the size it was listed with.
fn changed(dir: &Path, f: &SrcFile, n: u64) -> io::Error {
    io::Error::other(format!(
        "{} changed while it was copied ({n} bytes read, {} listed)",
        dir.join(&f.rel).display(),
        f.size
    ))
}

/// [`read`] of an object in a bucket: one GET of its first bytes, then
/// ranged GETs of the rest pinned to its ETag.
#[cfg(feature = "remote")]
fn read_object(
    dir: &str,
    f: &SrcFile,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let url = url_of_file(dir, &f.rel);
    if f.size == 0 {
        return Ok(());
    }
    let err = |e: crate::error::Error| io::Error::other(e.to_string());
    let (object, first) = crate::remote::Object::open(&url).map_err(err)?;
    if object.size() != f.size {
        return Err(changed(Path::new(dir), f, object.size()));
    }
    sink(&first)?;
    let mut sunk = |c: &[u8]| sink(c).map_err(crate::error::Error::Io);
    object
        .stream(first.len() as u64..f.size, &mut sunk)
        .map_err(err)
}

/// The URL of the file `rel` of the entry at `dir` (its name percent
/// encoded where a key's must be).
#[cfg(feature = "remote")]
pub(super) fn url_of_file(dir: &str, rel: &Path) -> String {
    crate::remote::object_url(dir.trim_end_matches('/'), &rel.to_string_lossy())
}

/// The SHA-256 of the file `f` of the entry `dir` (on disk, or a bucket's).
pub(super) fn hash_of(dir: &Path, f: &SrcFile) -> io::Result<[u8; 32]> {
    let mut h = Sha256::new();
    read(dir, f, &mut |c| {
        h.update(c);
        Ok(())
    })?;
    Ok(h.finalize().into())
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
