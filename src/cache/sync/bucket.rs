//! A sync into a bucket prefix (`s3://`): a bucket has no rename, so an
//! entry's objects are put under their final keys, each with a conditional
//! put (never over an object that is there), their sizes checked by a
//! listing, and the entry's marker last (`model.done`; vLLM's
//! `.compilation_complete`; the NEFF itself in eras that write no marker):
//! a compiler or loader that goes by the marker never takes a half entry.
//! A sync killed before the marker leaves the objects it put; the next one
//! finds them (each the source's, by size and SHA-256), puts the rest and
//! the marker.

use std::path::{Path, PathBuf};

use super::files::{self, SrcFile};
use super::plan::Planned;
use super::{Action, SyncEntry, SyncOptions};
use crate::cache::bucket::relist;
use crate::cache::entry::{DONE, NEFF};
use crate::cache::status::rejudge;
use crate::cache::vllm::COMPLETE;
use crate::cache::State;
use crate::remote::{object_url, put_new, Put};

/// Why an entry is not (all) copied.
type Stop = (Action, String);

/// The largest object one PUT writes (S3's limit).
const MAX_PUT: u64 = 5 << 30;

/// Copies the `planned` entries under the bucket prefix `dst`; the record
/// of each, in order.
pub(super) fn sync(dst: &str, planned: &[Planned], opts: &SyncOptions) -> Vec<SyncEntry> {
    let root = dst.trim_end_matches('/');
    let url = |p: &Planned| object_url(root, &p.rel.to_string_lossy());
    let at = |p: &Planned| PathBuf::from(url(p));
    super::each(planned, opts, at, |p| {
        if p.rel.to_str().is_none() {
            return (
                Action::Left,
                Some("its path is not UTF-8: no key names it".into()),
            );
        }
        match one(p, &url(p), opts.dry_run) {
            Ok(a) => (a, None),
            Err((a, r)) => (a, Some(r)),
        }
    })
}

/// Syncs one entry to `url`: put when the bucket holds nothing under it,
/// else compared with what is there (and a copy a killed sync left,
/// finished).
fn one(p: &Planned, url: &str, dry: bool) -> Result<Action, Stop> {
    let objects = relist(url).map_err(|e| (Action::Error, format!("{url}: {e}")))?;
    if objects.is_empty() {
        if dry {
            return Ok(Action::Copy);
        }
        put_all(p, url, &[])?;
        return Ok(Action::Copied);
    }
    let mut there = p.entry.clone();
    there.path = PathBuf::from(url);
    let judged = rejudge(&there, Some(objects), None);
    let theirs = files::list(Path::new(url))?;
    match judged.state {
        State::Ok => same(p, url, &theirs).map(|()| Action::Skipped),
        State::Locked => Err((
            Action::Locked,
            "a compile holds a lock in the bucket's entry: left alone".into(),
        )),
        s => {
            if !part_of(p, url, &theirs)? {
                return Err((
                    Action::Conflict,
                    format!(
                        "the bucket's entry is {s}{}: untouched",
                        judged.reason.map(|r| format!(" ({r})")).unwrap_or_default()
                    ),
                ));
            }
            if dry {
                return Ok(Action::Copy);
            }
            log::info!("{url}: a copy a killed sync left ({s}): finished");
            let present: Vec<PathBuf> = theirs.into_iter().map(|f| f.rel).collect();
            put_all(p, url, &present)?;
            Ok(Action::Copied)
        }
    }
}

/// `Ok` when the bucket's entry holds the source's files (names, sizes,
/// SHA-256), else how it differs.
fn same(p: &Planned, url: &str, theirs: &[SrcFile]) -> Result<(), Stop> {
    let sized = |f: &[SrcFile]| {
        f.iter()
            .map(|f| (f.rel.clone(), f.size))
            .collect::<Vec<_>>()
    };
    if sized(theirs) != sized(&p.files) {
        return Err((
            Action::Conflict,
            "the bucket holds another entry under its name: its files or sizes differ; untouched"
                .into(),
        ));
    }
    for (f, t) in p.files.iter().zip(theirs) {
        if !same_bytes(p, f, url, t)? {
            return Err((
                Action::Conflict,
                format!(
                    "the bucket holds another entry under its name: {} differs (same size, \
                     another SHA-256); untouched",
                    f.rel.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether the bucket's entry holds part of the source's, all of it the
/// source's bytes, and not its marker: what a sync killed before the
/// marker leaves.
fn part_of(p: &Planned, url: &str, theirs: &[SrcFile]) -> Result<bool, Stop> {
    let last = marker(p).map(|f| &f.rel);
    for t in theirs {
        let Some(f) = p.files.iter().find(|f| f.rel == t.rel && f.size == t.size) else {
            return Ok(false);
        };
        if Some(&f.rel) == last || !same_bytes(p, f, url, t)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the source's `f` and the bucket's `t` hold the same bytes.
fn same_bytes(p: &Planned, f: &SrcFile, url: &str, t: &SrcFile) -> Result<bool, Stop> {
    let ours = files::hash_of(&p.entry.path, f)
        .map_err(|e| (Action::Error, format!("{}: {e}", p.entry.path.display())))?;
    let theirs =
        files::hash_of(Path::new(url), t).map_err(|e| (Action::Error, format!("{url}: {e}")))?;
    Ok(ours == theirs)
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
    let mut bytes = Vec::with_capacity(usize::try_from(f.size).unwrap_or(0));
    files::read(&p.entry.path, f, &mut |c| {
        bytes.extend_from_slice(c);
        Ok(())
    })
    .map_err(|e| (Action::Error, format!("{}: {e}", p.entry.path.display())))?;
    let key = files::url_of_file(url, &f.rel);
    match put_new(&key, bytes) {
        Ok(Put::Written) => Ok(()),
        Ok(Put::Exists) => Err((
            Action::Conflict,
            format!(
                "an object appeared under {} while the entry was put: not overwritten",
                f.rel.display()
            ),
        )),
        Err(e) => Err((Action::Error, format!("{key}: {e}"))),
    }
}
