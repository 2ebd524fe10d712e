//! A sync into a store's prefix (`s3://`, `gs://`, `az://`, through
//! `object_store`'s one interface): a store has no rename, so an entry's
//! objects are put under their final keys, each with a conditional put
//! (never over an object that is there), their sizes checked by a listing,
//! and the entry's marker last (`model.done`; vLLM's
//! `.compilation_complete`; the NEFF itself in eras that write no marker):
//! a compiler or loader that goes by the marker never takes a half entry.
//! A sync killed before the marker leaves the objects it put; the next one
//! finds them (each the source's), puts the rest and the marker.
//!
//! The destination is listed once, whole; an entry there is compared with
//! the source's by that listing (names, sizes, and the digests it gives:
//! [`super::same`]), so an unchanged entry costs no request of its own.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use super::files::{self, Print, SrcFile};
use super::memo;
use super::plan::Planned;
use super::same::{differs, same_file};
use super::{Action, SyncEntry, SyncOptions};
use crate::cache::entry::{DONE, NEFF};
use crate::cache::status::rejudge;
use crate::cache::vllm::COMPLETE;
use crate::cache::State;
use crate::error::{Error, Result};
use crate::remote::{list_all, object_url, put_new, redact, Listed, Put};

/// Why an entry is not (all) copied.
type Stop = (Action, String);

/// The largest object one PUT writes (S3's limit).
const MAX_PUT: u64 = 5 << 30;

/// Bytes of objects held in memory to be put, at most, across every
/// entry copied at once (one object larger than this is put alone).
const PUT_MEMORY: u64 = 1 << 30;

/// Copies the `planned` entries under the store prefix `dst`; the record
/// of each, in order, and how many were passed over (not `ok` once read
/// whole). `Err` when the destination cannot be listed.
pub(super) fn sync(
    dst: &str,
    planned: &[Planned],
    opts: &SyncOptions,
) -> Result<(Vec<SyncEntry>, usize)> {
    // Spelled as its listing spells its keys.
    let dst = crate::remote::canonical(dst);
    let root = dst.trim_end_matches('/');
    let listing = list_all(&format!("{root}/")).map_err(|e| at_destination(&dst, e))?;
    let url = |p: &Planned| object_url(root, &p.rel.to_string_lossy());
    let at = |p: &Planned| PathBuf::from(url(p));
    Ok(super::each(planned, opts, at, |p| {
        if p.rel.to_str().is_none() {
            let why = "its path is not UTF-8: no key names it".into();
            return p.ok_read_whole().then_some((Action::Left, Some(why)));
        }
        let url = url(p);
        let there = files::under(&listing, &url);
        match one(p, &url, there, opts.dry_run) {
            Ok(a) => a.map(|a| (a, None)),
            Err((a, r)) => Some((a, Some(r))),
        }
    }))
}

/// An error listing the destination `dst`, naming it.
fn at_destination(dst: &str, e: Error) -> Error {
    let reason = format!("the destination {}: {e}", redact(dst));
    match e {
        Error::Remote { io, .. } => Error::Remote { reason, io },
        e => Error::Remote {
            reason,
            io: match e {
                Error::Io(io) => io.kind(),
                _ => std::io::ErrorKind::Other,
            },
        },
    }
}

/// Syncs one entry to `url`, where the destination's listing gave `there`:
/// put when nothing is there, else compared with what is (and a copy a
/// killed sync left, finished). `Ok(None)`: the source's entry is not
/// `ok` once read whole (it is read so before anything but an unchanged
/// entry is reported).
fn one(p: &Planned, url: &str, there: &[Listed], dry: bool) -> Result<Option<Action>, Stop> {
    if there.is_empty() {
        if !p.ok_read_whole() {
            return Ok(None);
        }
        if !dry {
            put_all(p, url, &[])?;
        }
        return Ok(Some(if dry { Action::Copy } else { Action::Copied }));
    }
    let theirs = files::of_objects(url, there);
    let how = differs(&p.entry.path, &p.files, Path::new(url), &theirs);
    if matches!(how, Ok(None)) && !files::has_lock(there) {
        return Ok(Some(Action::Skipped));
    }
    if !p.ok_read_whole() {
        return Ok(None);
    }
    let how = how?;
    let mut entry = p.entry.clone();
    entry.path = PathBuf::from(url);
    let judged = rejudge(&entry, Some(files::objs(url, there)), None);
    match (judged.state, how) {
        (State::Ok, None) => Ok(Some(Action::Skipped)),
        (State::Ok, Some(how)) => Err((
            Action::Conflict,
            format!("the bucket holds another entry under its name: {how}; untouched"),
        )),
        (State::Locked, _) => Err((
            Action::Locked,
            "a compile holds a lock in the bucket's entry: left alone".into(),
        )),
        (s, _) if part_of(p, url, &theirs)? => {
            if dry {
                return Ok(Some(Action::Copy));
            }
            log::info!("{}: a copy a killed sync left ({s}): finished", redact(url));
            let present: Vec<PathBuf> = theirs.into_iter().map(|f| f.rel).collect();
            put_all(p, url, &present)?;
            Ok(Some(Action::Copied))
        }
        (s, _) => Err((
            Action::Conflict,
            format!(
                "the bucket's entry is {s}{}: untouched",
                judged.reason.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
        )),
    }
}

/// Whether the bucket's entry (`theirs`) holds part of the source's, all
/// of it the source's bytes, and not its marker: what a sync killed before
/// the marker leaves.
fn part_of(p: &Planned, url: &str, theirs: &[SrcFile]) -> Result<bool, Stop> {
    let last = marker(p).map(|f| &f.rel);
    for t in theirs {
        let Some(f) = p.files.iter().find(|f| f.rel == t.rel && f.size == t.size) else {
            return Ok(false);
        };
        let same = same_file(&p.entry.path, f, Path::new(url), t)
            .map_err(|e| (Action::Error, format!("{}: {e}", redact(url))))?;
        if Some(&f.rel) == last || !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The file written last: the marker the layout has (`model.done`,
/// `.compilation_complete`), else the NEFF.
fn marker(p: &Planned) -> Option<&SrcFile> {
    [DONE, COMPLETE, NEFF]
        .iter()
        .find_map(|m| p.files.iter().find(|f| f.rel == Path::new(m)))
}

/// Puts every file of `p` not in `present` under `url`, each only where
/// no object is, their sizes checked by a listing before the marker goes
/// last.
fn put_all(p: &Planned, url: &str, present: &[PathBuf]) -> Result<(), Stop> {
    let last = marker(p);
    let rest = p
        .files
        .iter()
        .filter(|f| Some(*f) != last && !present.contains(&f.rel));
    for f in rest {
        put_one(p, url, f)?;
    }
    let listed = files::list(Path::new(url))?;
    for f in p.files.iter().filter(|f| Some(*f) != last) {
        if !listed.iter().any(|t| t.rel == f.rel && t.size == f.size) {
            return Err((
                Action::Left,
                format!(
                    "{} is not in the bucket with the source's size after it was put: the \
                     marker is not written",
                    f.rel.display()
                ),
            ));
        }
    }
    match last {
        Some(m) => put_one(p, url, m),
        None => Ok(()),
    }
}

/// Puts the file `f` of `p` under `url`, where no object is.
fn put_one(p: &Planned, url: &str, f: &SrcFile) -> Result<(), Stop> {
    if f.size > MAX_PUT {
        return Err((
            Action::Left,
            format!(
                "{} is larger than one PUT writes (5 GiB): not copied",
                f.rel.display()
            ),
        ));
    }
    let _held = Held::take(f.size);
    let mut bytes = Vec::with_capacity(usize::try_from(f.size).unwrap_or(0));
    let key = files::url_of_file(url, &f.rel);
    let read = memo::read(&p.entry.path, f, None, &mut |c| {
        bytes.extend_from_slice(c);
        Ok(())
    })
    .map_err(|e| (Action::Error, format!("{}: {e}", p.entry.path.display())))?;
    match put_new(&key, bytes) {
        Ok(Put::Written(etag)) => {
            // The store's digest of the bytes (an S3 or GCS ETag),
            // remembered for the source's file: the next sync finds it
            // the same by the listing without reading it.
            if let Some(p) = etag.and_then(|e| Print::of(&key, &e)) {
                read.remember(p);
            }
            Ok(())
        }
        // Another writer (a sync of the same cache from another host) put
        // it meanwhile: the same bytes are as good as ours.
        Ok(Put::Exists) if appeared_same(p, url, f)? => {
            log::info!(
                "{}: put meanwhile by another writer, the same",
                redact(&key)
            );
            Ok(())
        }
        Ok(Put::Exists) => Err((
            Action::Conflict,
            format!(
                "an object appeared under {} while the entry was put, not the source's: not \
                 overwritten",
                f.rel.display()
            ),
        )),
        Err(e) => Err((Action::Error, format!("{}: {e}", redact(&key)))),
    }
}

/// Whether the object that stands under the file `f` of the entry at
/// `url` (found there by a put) holds the source's bytes.
fn appeared_same(p: &Planned, url: &str, f: &SrcFile) -> Result<bool, Stop> {
    let theirs = files::list(Path::new(url))?;
    let Some(t) = theirs.iter().find(|t| t.rel == f.rel) else {
        return Ok(false);
    };
    same_file(&p.entry.path, f, Path::new(url), t)
        .map_err(|e| (Action::Error, format!("{}: {e}", redact(url))))
}

/// Bytes held in memory for puts, and the wait for them to fall.
static HELD: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// A share of [`PUT_MEMORY`], given back when dropped.
struct Held(u64);

impl Held {
    /// Waits until `n` bytes more stay within [`PUT_MEMORY`] (or nothing
    /// else is held), then holds them.
    fn take(n: u64) -> Held {
        let (m, freed) = &HELD;
        let mut used = m.lock().unwrap_or_else(|e| e.into_inner());
        while *used > 0 && *used + n > PUT_MEMORY {
            used = freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += n;
        Held(n)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (m, freed) = &HELD;
        let mut used = m.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.0;
        freed.notify_all();
    }
}
