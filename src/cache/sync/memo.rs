//! The digests of an entry's files: computed as the bytes are read or
//! written, and, for files on disk, remembered between syncs so that a
//! second sync finds an unchanged file the same without reading it again.
//!
//! A digest is kept under the file's identity as `fstat` gives it (device,
//! inode, size, modification and change times to the nanosecond): any
//! write, truncation, `touch` or rename moves the change time, and the file
//! is hashed again. As git's index does not trust a file changed in the
//! instant it was hashed, no digest is kept for a file changed within
//! [`RACY`] of the moment the memo is saved, nor for one that changed
//! while it was read. The memo is one file of the user's cache directory
//! (`$XDG_CACHE_HOME/neff/sync-digests`, else `~/.cache/neff/…`), read once
//! by the first sync of a process and replaced whole (a new file renamed
//! over it) at the end of each; one that cannot be read or written leaves
//! every file hashed, as without it.

use std::collections::{HashMap, HashSet};
use std::fs::{File, Metadata};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use md5::Md5;
use sha2::{Digest, Sha256};

use super::files::{self, hex, Print, SrcFile};

/// A file changed less than this before the memo is saved is not
/// remembered (its change time may not yet tell a later write).
const RACY: Duration = Duration::from_secs(1);

/// Digests the memo keeps at most (those of the last sync first).
const MOST: usize = 500_000;

/// Entries found not `ok` the memo keeps at most.
const MOST_NOT_OK: usize = 100_000;

/// The largest memo file read (a larger one is not ours).
const MAX_FILE: u64 = 128 << 20;

/// The first line of the memo file.
const HEADER: &str = "neff sync digests 1";

/// A file's identity, and the kind of digest kept for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    /// Modification and change times, nanoseconds since the epoch.
    mtime: i128,
    ctime: i128,
    kind: u8,
}

impl Key {
    fn of(m: &Metadata, kind: u8) -> Key {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Key {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: ns(m.mtime(), m.mtime_nsec()),
            ctime: ns(m.ctime(), m.ctime_nsec()),
            kind,
        }
    }
}

/// The kind of a digest, as a number and as the memo file names it.
fn kind(p: Print) -> (u8, &'static str) {
    match p {
        Print::Md5(_) => (0, "md5"),
        Print::Sha256(_) => (1, "sha256"),
        #[cfg(feature = "remote")]
        Print::Git(_) => (2, "git"),
    }
}

/// The digest of the kind named `name` whose hex digits are `h`.
fn parse_print(name: &str, h: &str) -> Option<Print> {
    match name {
        "md5" => hex(h).map(Print::Md5),
        "sha256" => hex(h).map(Print::Sha256),
        #[cfg(feature = "remote")]
        "git" => hex(h).map(Print::Git),
        _ => None,
    }
}

fn bytes(p: &Print) -> &[u8] {
    match p {
        Print::Md5(b) => b,
        Print::Sha256(b) => b,
        #[cfg(feature = "remote")]
        Print::Git(b) => b,
    }
}

/// What this process knows: read from the memo file, and learnt.
struct Memo {
    path: Option<PathBuf>,
    read: Known,
    /// Learnt or used by this process (kept first when saved).
    learnt: Known,
}

/// Digests of files, and the entries of stores found not `ok` once read.
#[derive(Default)]
struct Known {
    digests: HashMap<Key, Print>,
    /// [`not_ok`]'s prints of those entries' listings.
    not_ok: HashSet<[u8; 32]>,
}

static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();

fn memo() -> std::sync::MutexGuard<'static, Memo> {
    MEMO.get_or_init(|| {
        let path = place();
        let read = path.as_deref().map(load).unwrap_or_default();
        Mutex::new(Memo {
            path,
            read,
            learnt: Known::default(),
        })
    })
    .lock()
    .unwrap_or_else(|e| e.into_inner())
}

/// Where the memo file is: `$XDG_CACHE_HOME/neff/sync-digests`, else
/// `$HOME/.cache/neff/sync-digests` (absolute directories only).
fn place() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_CACHE_HOME")
        .and_then(abs)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(abs)
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("neff").join("sync-digests"))
}

/// What the memo file at `path` holds; nothing when it is missing, too
/// large or not one (a line that does not parse is passed over).
fn load(path: &Path) -> Known {
    let mut out = Known::default();
    let Ok(f) = File::open(path) else {
        return out;
    };
    let mut text = String::new();
    if f.take(MAX_FILE + 1).read_to_string(&mut text).is_err() || text.len() as u64 > MAX_FILE {
        log::debug!("{}: not read (not a memo of digests)", path.display());
        return out;
    }
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return out;
    }
    for line in lines {
        if let Some(h) = line.strip_prefix("not-ok ").and_then(hex) {
            out.not_ok.insert(h);
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        let [dev, ino, size, mtime, ctime, name, h] = f[..] else {
            continue;
        };
        let (Ok(dev), Ok(ino), Ok(size), Ok(mtime), Ok(ctime), Some(p)) = (
            dev.parse(),
            ino.parse(),
            size.parse(),
            mtime.parse(),
            ctime.parse(),
            parse_print(name, h),
        ) else {
            continue;
        };
        let kind = kind(p).0;
        out.digests.insert(
            Key {
                dev,
                ino,
                size,
                mtime,
                ctime,
                kind,
            },
            p,
        );
    }
    log::debug!(
        "{}: {} digests, {} entries not ok remembered",
        path.display(),
        out.digests.len(),
        out.not_ok.len()
    );
    out
}

/// The digest of the kind of `like` remembered for the file `m` is the
/// metadata of, if any.
fn recall(m: &Metadata, like: Print) -> Option<Print> {
    let key = Key::of(m, kind(like).0);
    let mut memo = memo();
    let p = memo
        .read
        .digests
        .get(&key)
        .or_else(|| memo.learnt.digests.get(&key))
        .copied()?;
    memo.learnt.digests.insert(key, p);
    Some(p)
}

/// Remembers that the file `m` is the metadata of holds bytes of digest
/// `p`.
fn note(m: &Metadata, p: Print) {
    memo().learnt.digests.insert(Key::of(m, kind(p).0), p);
}

/// Whether the entry of a store whose listing has the print `listing`
/// ([`super::plan::Planned::listing_print`]) was found not `ok` once read
/// (by a sync before, or this one): unless an object of it changed, it is
/// not read again.
pub(super) fn known_not_ok(listing: &[u8; 32]) -> bool {
    let mut memo = memo();
    let known = memo.read.not_ok.contains(listing) || memo.learnt.not_ok.contains(listing);
    if known {
        memo.learnt.not_ok.insert(*listing);
    }
    known
}

/// Remembers that the entry of a store whose listing has the print
/// `listing` was found not `ok` once read.
pub(super) fn not_ok(listing: [u8; 32]) {
    memo().learnt.not_ok.insert(listing);
}

/// Remembers that `file`, just written and synced, holds bytes of digest
/// `p`.
#[cfg(feature = "remote")]
pub(super) fn wrote(file: &File, p: Print) {
    if let Ok(m) = file.metadata() {
        note(&m, p);
    }
}

/// Writes what this process knows to the memo file (a new file renamed
/// over it), those it learnt or used first; a file changed within
/// [`RACY`] of now is left out.
pub(super) fn save() {
    let Some(memo) = MEMO.get() else { return };
    let memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = memo.path.as_deref() else {
        return;
    };
    if memo.learnt.digests.is_empty() && memo.learnt.not_ok.is_empty() {
        return;
    }
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let settled = i128::try_from(now.saturating_sub(RACY).as_nanos()).unwrap_or(i128::MAX);
    let mut text = format!("{HEADER}\n");
    let hexed = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let not_ok = (memo.learnt.not_ok.iter())
        .chain(memo.read.not_ok.difference(&memo.learnt.not_ok))
        .take(MOST_NOT_OK);
    for h in not_ok {
        text.push_str(&format!("not-ok {}\n", hexed(h)));
    }
    let kept = (memo.learnt.digests.iter())
        .filter(|(k, _)| k.ctime < settled)
        .chain((memo.read.digests.iter()).filter(|(k, _)| !memo.learnt.digests.contains_key(k)))
        .take(MOST);
    for (k, p) in kept {
        let h = hexed(bytes(p));
        text.push_str(&format!(
            "{} {} {} {} {} {} {h}\n",
            k.dev,
            k.ino,
            k.size,
            k.mtime,
            k.ctime,
            kind(*p).1
        ));
    }
    if let Err(e) = replace(path, text.as_bytes()) {
        log::debug!("{}: not saved: {e}", path.display());
    }
}

/// Puts `text` at `path` whole: written to a file of its own beside it,
/// synced, renamed over it.
fn replace(path: &Path, text: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".sync-digests.{}", std::process::id()));
    let mut f = File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let done = f
        .write_all(text)
        .and_then(|()| f.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// A digest being computed, of one kind.
pub(super) enum Hasher {
    Md5(Md5),
    Sha256(Sha256),
    #[cfg(feature = "remote")]
    Git(sha1::Sha1),
}

impl Hasher {
    /// A digest of the kind of `like`, of a file of `size` bytes.
    #[cfg_attr(not(feature = "remote"), allow(unused_variables))]
    pub(super) fn like(like: Print, size: u64) -> Hasher {
        match like {
            Print::Md5(_) => Hasher::Md5(Md5::new()),
            Print::Sha256(_) => Hasher::Sha256(Sha256::new()),
            #[cfg(feature = "remote")]
            Print::Git(_) => {
                let mut h = sha1::Sha1::new();
                h.update(format!("blob {size}\0"));
                Hasher::Git(h)
            }
        }
    }

    pub(super) fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(b),
            Hasher::Sha256(h) => h.update(b),
            #[cfg(feature = "remote")]
            Hasher::Git(h) => h.update(b),
        }
    }

    pub(super) fn finish(self) -> Print {
        match self {
            Hasher::Md5(h) => Print::Md5(h.finalize().into()),
            Hasher::Sha256(h) => Print::Sha256(h.finalize().into()),
            #[cfg(feature = "remote")]
            Hasher::Git(h) => Print::Git(h.finalize().into()),
        }
    }
}

/// What a [`read`] learnt of the file it read.
pub(super) struct Read {
    /// The digest asked for, from the bytes.
    pub(super) digest: Option<Print>,
    /// A store's object: the ETag its bytes came with, if given.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(super) etag: Option<String>,
    /// On disk: the file, unchanged while it was read.
    unchanged: Option<Metadata>,
}

impl Read {
    /// Remembers that the file read (on disk, unchanged while read) holds
    /// bytes of digest `p`.
    pub(super) fn remember(&self, p: Print) {
        if let Some(m) = &self.unchanged {
            note(m, p);
        }
    }
}

/// Hands the bytes of the file `f` of the entry `dir` (on disk, or a
/// store's URL) to `sink` in order, computing on the way the digest of
/// the kind of `like`, if given; on disk, that digest is remembered for
/// a file unchanged while it was read.
pub(super) fn read(
    dir: &Path,
    f: &SrcFile,
    like: Option<Print>,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Read> {
    #[cfg(feature = "remote")]
    if let Some(url) = super::url_of(dir) {
        let mut h = like.map(|l| Hasher::like(l, f.size));
        let etag = files::read_object(url, f, &mut |c| {
            if let Some(h) = h.as_mut() {
                h.update(c);
            }
            sink(c)
        })?;
        return Ok(Read {
            digest: h.map(Hasher::finish),
            etag,
            unchanged: None,
        });
    }
    read_open(files::open(dir, &f.rel)?, dir, f, like, sink)
}

/// [`read`] of the file `f` of the entry `dir` on disk, opened as `file`.
fn read_open(
    mut file: File,
    dir: &Path,
    f: &SrcFile,
    like: Option<Print>,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Read> {
    let mut h = like.map(|l| Hasher::like(l, f.size));
    let before = file.metadata()?;
    files::read_open(&mut file, dir, f, &mut |c| {
        if let Some(h) = h.as_mut() {
            h.update(c);
        }
        sink(c)
    })?;
    let after = file.metadata()?;
    let read = Read {
        digest: h.map(Hasher::finish),
        etag: None,
        unchanged: (Key::of(&before, 0) == Key::of(&after, 0)).then_some(after),
    };
    if let Some(p) = read.digest {
        read.remember(p);
    }
    Ok(read)
}

/// The digest of the kind of `like` of the file `f` of the entry `dir`:
/// on disk, the one remembered for it when it is unchanged since; else
/// from its bytes.
pub(super) fn digest(dir: &Path, f: &SrcFile, like: Print) -> io::Result<Print> {
    let r = match super::url_of(dir) {
        Some(_) => read(dir, f, Some(like), &mut |_| Ok(()))?,
        // Opened once: what is recalled, or read, is that file.
        None => {
            let file = files::open(dir, &f.rel)?;
            if let Some(p) = recall(&file.metadata()?, like) {
                return Ok(p);
            }
            read_open(file, dir, f, Some(like), &mut |_| Ok(()))?
        }
    };
    Ok(r.digest.unwrap_or(like))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, bytes: &[u8]) -> SrcFile {
        std::fs::write(dir.join(name), bytes).unwrap();
        SrcFile {
            rel: PathBuf::from(name),
            size: bytes.len() as u64,
            modified: None,
            print: None,
        }
    }

    #[test]
    fn a_digest_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), "a", b"hello");
        let like = Print::Md5([0; 16]);
        let first = digest(dir.path(), &f, like).unwrap();
        assert_eq!(
            first,
            Print::Md5(Md5::digest(b"hello").into()),
            "computed from the bytes"
        );
        let m = std::fs::metadata(dir.path().join("a")).unwrap();
        assert_eq!(recall(&m, like), Some(first), "remembered");
        // Rewritten with other bytes of the same size and time: the change
        // time moves, so the memo is not used.
        let t = m.modified().unwrap();
        std::fs::write(dir.path().join("a"), b"world").unwrap();
        File::options()
            .write(true)
            .open(dir.path().join("a"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(
            digest(dir.path(), &f, like).unwrap(),
            Print::Md5(Md5::digest(b"world").into())
        );
    }

    #[test]
    fn the_memo_file_round_trips_and_refuses_what_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let p = Print::Sha256([7; 32]);
        let k = Key {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: 4,
            ctime: 5,
            kind: kind(p).0,
        };
        let h: String = bytes(&p).iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{HEADER}\n1 2 3 4 5 sha256 {h}\nbad line\nnot-ok {h}\n");
        std::fs::write(&path, text).unwrap();
        let known = load(&path);
        assert_eq!(known.digests.get(&k), Some(&p));
        assert_eq!(known.digests.len(), 1);
        assert!(known.not_ok.contains(&[7; 32]) && known.not_ok.len() == 1);
        std::fs::write(&path, format!("other\n1 2 3 4 5 sha256 {h}\n")).unwrap();
        assert!(load(&path).digests.is_empty());
        replace(&path, b"x").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }
}
