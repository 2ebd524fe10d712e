//! The skim handoff: a large def.json's collective keys skimmed on a
//! helper thread while the tar walk that found it goes on.
//!
//! For a one-shot `cc-world-size` or `has-cc` on a mapped raw NEFF, the
//! walk over every tar header and the skim of a 20 MB def.json each take
//! milliseconds; run one after the other they add up. [`walk_raw`] starts
//! the skim ([`skim::lower`]) as soon as the walk meets a def.json worth
//! skimming; when the walk is done and that member is indeed the one the
//! accessors read, the walking thread joins the skim from halfway through
//! what is left ([`skim::upper`]); otherwise the skim is cancelled.

use std::fs::File;

use super::skim;
use super::CC_TOP_KEYS;
use crate::error::Result;
use crate::limits::Limits;
use crate::pool;
use crate::select::{self, Known};
use crate::tar::{FileSource, Index, Kind};

/// What [`walk_raw`] learned besides the index.
pub(crate) struct Early {
    /// The regular members in sorted name order ([`select::sorted_files`]).
    pub(crate) sorted: Vec<u32>,
    /// The member each [`Known`] pattern picks.
    pub(crate) known: [Option<u32>; 6],
    /// The skim of the accessors' def.json, if one ran (`None` inside:
    /// the skim refused it).
    pub(crate) def_skim: Option<Option<skim::Found>>,
}

/// Walks a mapped raw tar (as [`FileSource`] does) and, as soon as it meets
/// a def.json large enough to skim, starts skimming its CC keys on a helper
/// thread on another CPU ([`skim::lower`]). When the walk is done and
/// that member is indeed the one the accessors read, this thread joins the
/// skim from halfway through what is left ([`skim::upper`]); otherwise
/// the skim is cancelled. With one CPU, this is the plain walk.
pub(crate) fn walk_raw(
    f: &File,
    start: u64,
    stored: &[u8],
    limits: &Limits,
) -> Result<(Index, Option<Early>)> {
    let src = FileSource::new(f, start, stored.len());
    let Some(cpu) = pool::helper_cpu() else {
        return Ok((Index::build_from(src, limits)?, None));
    };
    let depth = limits.max_json_depth;
    let shared = skim::Shared::default();
    std::thread::scope(|s| {
        let shared = &shared;
        let mut spec = None;
        let walked = Index::build_with(src, limits, &mut |e, name| {
            // A guess, checked once the walk is done (by the accessors'
            // own pattern and sorted-order rule).
            // (Shown before the walk has checked that the data exists: a
            // member cut short is not skimmed, and the walk refuses it.)
            // (A sparse member's stored bytes are not its content.)
            let data = usize::try_from(e.offset)
                .ok()
                .filter(|_| !e.is_sparse())
                .zip(usize::try_from(e.size).ok())
                .and_then(|(at, n)| stored.get(at..at.checked_add(n)?));
            if let (None, Kind::File, true, true, Some(data)) = (
                &spec,
                e.kind,
                skim::worth_it(e.size, limits),
                name.ends_with(b"/def.json"),
                data,
            ) {
                let low = pool::spawn_on(s, cpu, move || {
                    skim::lower(data, &CC_TOP_KEYS, depth, Some(shared))
                });
                // No thread to be had: def_cc skims later, as usual.
                spec = low.map(|low| (e.offset, low));
            }
            false
        });
        let index = match walked {
            Ok(index) => index,
            Err(err) => {
                shared.cancel();
                return Err(err);
            }
        };
        let sorted = select::sorted_files(&index, stored);
        let known = select::resolve_known(&sorted, &index, stored);
        let def_skim = match (spec, known[Known::Def as usize]) {
            (Some((offset, low)), Some(i)) if index.entries[i as usize].offset == offset => {
                let data = index.stored(&index.entries[i as usize], stored);
                let up = skim::upper(data, &CC_TOP_KEYS, depth, shared);
                Some(low.join().ok().and_then(|low| skim::finish(low, up)))
            }
            (Some((_, low)), _) => {
                shared.cancel();
                let _ = low.join();
                None
            }
            (None, _) => None,
        };
        Ok((
            index,
            Some(Early {
                sorted,
                known,
                def_skim,
            }),
        ))
    })
}
