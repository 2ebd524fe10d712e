//! The files of an entry a sync copies (every regular file but its
//! `*.lock` files, no link followed; in a store, every object but those),
//! listed and read.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[cfg(feature = "remote")]
use crate::cache::entry::Obj;
#[cfg(feature = "remote")]
use crate::remote::Listed;

use super::Action;

/// One file of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SrcFile {
    /// Its path below the entry.
    pub(super) rel: PathBuf,
    pub(super) size: u64,
    /// When it was last modified (`None` where the listing does not say:
    /// the hub's).
    pub(super) modified: Option<SystemTime>,
    /// The digest of its bytes its store's listing gave, if any.
    pub(super) print: Option<Print>,
}

/// A digest of a file's bytes, as a listing gave it or as computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// (Only listings make one: a build without `remote` has none.)
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(super) enum Print {
    /// MD5: an S3 or GCS ETag of 32 hex digits (or, from a GCS
    /// emulator, its 24 base64 digits). Not always the bytes' MD5 (an
    /// object put in parts, or encrypted with KMS, has another ETag of
    /// that shape), so a mismatch is checked by the bytes.
    Md5([u8; 16]),
    /// SHA-256: a hub file kept in LFS (its `lfs.oid`).
    Sha256([u8; 32]),
    /// Git's blob id: SHA-1 of `blob <size>\0` and the bytes (a hub file
    /// kept in git).
    #[cfg(feature = "remote")]
    Git([u8; 20]),
}

impl Print {
    /// The digest the `version` a listing gave for the object at `url`
    /// is, when it is one (`None`: an Azure ETag, a multipart ETag, a
    /// time).
    #[cfg(feature = "remote")]
    pub(super) fn of(url: &str, version: &str) -> Option<Print> {
        let scheme = url.split_once("://")?.0.to_ascii_lowercase();
        let v = version.trim_matches('"');
        match (scheme.as_str(), v.len()) {
            ("s3" | "gs", 32) => hex(v).map(Print::Md5),
            ("gs", 24) => {
                use base64::Engine as _;
                let b = base64::engine::general_purpose::STANDARD.decode(v).ok()?;
                b.try_into().ok().map(Print::Md5)
            }
            ("hf", 64) => hex(v).map(Print::Sha256),
            ("hf", 40) => hex(v).map(Print::Git),
            _ => None,
        }
    }

    /// Whether a mismatch proves the bytes differ (an ETag may not be the
    /// bytes' MD5).
    pub(super) fn exact(self) -> bool {
        !matches!(self, Print::Md5(_))
    }

    /// The digest as its kind and its bytes (fixed bytes for a listing's
    /// print, whatever the build prints it as).
    pub(super) fn tagged(&self) -> (u8, &[u8]) {
        match self {
            Print::Md5(d) => (1, d),
            Print::Sha256(d) => (2, d),
            #[cfg(feature = "remote")]
            Print::Git(d) => (3, d),
        }
    }

    pub(super) fn same_kind(self, other: Print) -> bool {
        std::mem::discriminant(&self) == std::mem::discriminant(&other)
    }
}

/// `N` bytes from `2N` hex digits.
pub(super) fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Some(out)
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

/// The objects of the entry at `url` as listed now, locks left out,
/// sorted by name.
#[cfg(feature = "remote")]
fn list_objects(url: &str) -> Result<Vec<SrcFile>, (Action, String)> {
    let dir = url.trim_end_matches('/');
    let objects = crate::remote::list_all(&format!("{dir}/"))
        .map_err(|e| (Action::Error, format!("{url}: {e}")))?;
    Ok(of_objects(dir, &objects))
}

/// The objects of the entry at `dir` (a URL) among `listing` (sorted by
/// URL, as [`crate::remote::list_all`] gives it): every one, locks too.
#[cfg(feature = "remote")]
pub(super) fn under<'a>(listing: &'a [Listed], dir: &str) -> &'a [Listed] {
    let pre = format!("{}/", dir.trim_end_matches('/'));
    let start = listing.partition_point(|o| o.url.as_str() < pre.as_str());
    let n = listing[start..]
        .iter()
        .take_while(|o| o.url.starts_with(&pre))
        .count();
    &listing[start..start + n]
}

/// The files of the entry at `dir` (a URL) from its `objects`: locks left
/// out, sorted by path, each with the digest its listing gave.
#[cfg(feature = "remote")]
pub(super) fn of_objects(dir: &str, objects: &[Listed]) -> Vec<SrcFile> {
    let mut out: Vec<SrcFile> = objs(dir, objects)
        .into_iter()
        .zip(objects)
        .map(|((name, size, modified), o)| SrcFile {
            rel: PathBuf::from(crate::remote::key_part(&name).into_owned()),
            size,
            // The hub's listing gives no time (the epoch stands for it).
            modified: (modified != SystemTime::UNIX_EPOCH).then_some(modified),
            print: Print::of(&o.url, &o.version),
        })
        .filter(|f| !is_lock(&f.rel))
        .collect();
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// The `objects` of the entry at `dir` (a URL) as a judgement takes them:
/// each one's name below the entry (as its URL spells it), size and time.
#[cfg(feature = "remote")]
pub(super) fn objs(dir: &str, objects: &[Listed]) -> Vec<Obj> {
    let pre = format!("{}/", dir.trim_end_matches('/'));
    objects
        .iter()
        .map(|o| {
            let name = o.url.strip_prefix(&pre).unwrap_or(&o.url).to_string();
            (name, o.size, o.modified)
        })
        .collect()
}

/// Whether any of `objects` is a lock.
#[cfg(feature = "remote")]
pub(super) fn has_lock(objects: &[Listed]) -> bool {
    objects.iter().any(|o| is_lock(Path::new(&o.url)))
}

fn list_local(dir: &Path) -> Result<Vec<SrcFile>, (Action, String)> {
    list_local_locks(dir).map(|(files, _)| files)
}

/// The files of the entry `dir` on disk, locks left out, sorted by path,
/// and whether it holds a lock.
pub(super) fn list_local_locks(dir: &Path) -> Result<(Vec<SrcFile>, bool), (Action, String)> {
    let mut out = Vec::new();
    let mut locks = false;
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
            locks = true;
            continue;
        }
        let meta = e
            .metadata()
            .map_err(|err| (Action::Error, format!("{}: {err}", rel.display())))?;
        out.push(SrcFile {
            rel,
            size: meta.len(),
            modified: meta.modified().ok(),
            print: None,
        });
    }
    Ok((out, locks))
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

/// Hands the bytes of the file `f` of the entry `dir` on disk, opened as
/// `file`, to `sink` in order; `Err` when it is not `f.size` bytes long
/// (it changed since it was listed).
pub(super) fn read_open(
    file: &mut File,
    dir: &Path,
    f: &SrcFile,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
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

/// Hands the bytes of the file `f` of the entry at `dir` (a store's URL)
/// to `sink` in order: one GET of its first bytes, then ranged GETs of the
/// rest pinned to its ETag; `Err` when it is not `f.size` bytes long.
/// The ETag the bytes came with, if the store gave one.
#[cfg(feature = "remote")]
pub(super) fn read_object(
    dir: &str,
    f: &SrcFile,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Option<String>> {
    let url = url_of_file(dir, &f.rel);
    if f.size == 0 {
        return Ok(None);
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
        .map_err(err)?;
    Ok(object.etag().map(str::to_string))
}

/// The URL of the file `rel` of the entry at `dir` (its name percent
/// encoded where a key's must be).
#[cfg(feature = "remote")]
pub(super) fn url_of_file(dir: &str, rel: &Path) -> String {
    crate::remote::object_url(dir.trim_end_matches('/'), &rel.to_string_lossy())
}
