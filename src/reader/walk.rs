//! The reader's one call into the tar walk ([`walk`]), and the archives
//! it builds for it: what the reader holds decides both the
//! [`Archive`] (tar bytes in memory, a raw tar in a map, a gzip payload
//! inflated as it is walked, [`inflating`], or ranged reads of a remote
//! object) and what the walk keeps of it: where the archive is not held,
//! the members the accessors will read ([`select::Retention`]); where it
//! is, nothing, or for the early skim ([`walk_early`]) each def.json
//! shown to [`json::early`] as the walk meets it.

use std::fs::File;

use crate::error::Result;
use crate::json::{self, skim};
use crate::limits::Limits;
use crate::payload;
use crate::select::{self, Known};
use crate::tar::{self, Archive, ByteStream, Entry, Index, Keep, Pass, Walked};

/// Walks `archive` into an index. An archive not held (a stream, ranged
/// reads) keeps the members the accessors will read as the walk passes
/// them; one held whole keeps nothing, and shows each regular member to
/// `watch`, if any.
pub(super) fn walk(
    archive: Archive<'_>,
    watch: Option<&mut dyn Keep>,
    limits: &Limits,
) -> Result<Walked> {
    let mut accessors;
    let keep: Option<&mut dyn Keep> = match (&archive, watch) {
        (Archive::Bytes(_) | Archive::Mapped { .. }, Some(watch)) => Some(watch),
        (Archive::Bytes(_) | Archive::Mapped { .. }, None) => None,
        _ => {
            accessors = select::Retention::new(limits);
            Some(&mut accessors)
        }
    };
    tar::walk(archive, keep, limits)
}

/// A gzip payload `gz` as an archive inflated as it is walked: first with
/// parallel rounds where a core is free, again sequentially if they did
/// not check out. `release` is told of the input ranges passed (see
/// `GzStream::release_behind`); `arriving` makes each read wait for its
/// bytes (a payload landing as it is fetched).
pub(super) fn inflating<'a>(
    gz: &'a [u8],
    limits: &Limits,
    release: &'a dyn payload::Passed,
    arriving: Option<&'a dyn payload::Arriving>,
) -> Archive<'a> {
    let cap = limits.max_inflated;
    Archive::Stream(Box::new(move |pass| {
        let parallel = pass == Pass::Fast;
        let s = payload::stream(gz, cap, parallel, arriving)?;
        let s: Box<dyn ByteStream + 'a> = Box::new(s.release_behind(release));
        Ok(s)
    }))
}

/// What [`walk_early`] learned besides the index.
pub(super) struct Early {
    /// The regular members in sorted name order ([`select::sorted_files`]).
    pub(super) sorted: Vec<u32>,
    /// The member each [`Known`] pattern picks.
    pub(super) known: [Option<u32>; 6],
    /// The skim of the accessors' def.json, if one ran (`None` inside:
    /// the skim refused it).
    pub(super) def_skim: Option<Option<skim::Found>>,
}

/// Walks the raw tar mapped at `stored` (`base` bytes into `file`) as
/// [`Archive::Mapped`], with the early skim ([`json::early`]): each
/// def.json the walk meets is shown to it with its bytes in the map, and
/// once the walk is done, it is told which the accessors read. With one
/// CPU, this is the plain walk.
pub(super) fn walk_early(
    file: &File,
    base: u64,
    stored: &[u8],
    limits: &Limits,
) -> Result<(Index, Option<Early>)> {
    let mapped = || Archive::Mapped {
        file,
        base,
        len: stored.len(),
    };
    let Some(helper) = json::early::helper() else {
        return Ok((walk(mapped(), None, limits)?.index, None));
    };
    let ((index, sorted, known), def_skim) = helper.during(limits, |met| {
        let index = walk(mapped(), Some(&mut Watch { met, stored }), limits)?.index;
        let sorted = select::sorted_files(&index, stored);
        let known = select::resolve_known(&sorted, &index, stored);
        let def = known[Known::Def as usize].map(|i| index.entries[i as usize].offset);
        Ok(((index, sorted, known), def))
    })?;
    let early = Early {
        sorted,
        known,
        def_skim,
    };
    Ok((index, Some(early)))
}

/// Shows the early skim each regular member of a mapped raw tar, with its
/// data where the map holds it whole.
struct Watch<'m, 'd> {
    met: json::early::Met<'m, 'd>,
    stored: &'d [u8],
}

impl Keep for Watch<'_, '_> {
    fn offer(&mut self, e: &Entry, name: &[u8], _: &mut dyn FnMut(u64)) -> bool {
        // (Shown before the walk has checked that the data exists: a
        // member cut short is not skimmed, and the walk refuses it.)
        // (A sparse member's stored bytes are not its content.)
        let data = usize::try_from(e.offset)
            .ok()
            .filter(|_| !e.is_sparse())
            .zip(usize::try_from(e.size).ok())
            .and_then(|(at, n)| self.stored.get(at..at.checked_add(n)?));
        (self.met)(name, e.offset, data);
        false
    }
}
