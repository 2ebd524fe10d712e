//! The skim handoff: a large def.json's collective keys skimmed on a
//! helper thread while the tar walk that found it goes on.
//!
//! For a one-shot `cc-world-size` or `has-cc` on a mapped raw NEFF, the
//! walk over every tar header and the skim of a 20 MB def.json each take
//! milliseconds; run one after the other they add up. The reader walks
//! the tar, inside [`Helper::during`], and shows this module each regular
//! member as the walk meets it: the first def.json worth skimming starts
//! the skim ([`skim::lower`]) on a helper thread. When the walk is done
//! and the reader says that member is indeed the one the accessors read,
//! the walking thread joins the skim from halfway through what is left
//! ([`skim::upper`]); otherwise the skim is cancelled. This module walks
//! no tar and picks no member: it is handed names and bytes.

use super::skim;
use super::CC_TOP_KEYS;
use crate::error::Result;
use crate::limits::Limits;
use crate::pool;

/// A CPU other than the walking thread's, to skim on.
pub(crate) struct Helper {
    cpu: usize,
}

/// The helper CPU the skim would run on; `None` with one CPU (the reader
/// then walks plainly, and the skim runs later if asked for).
pub(crate) fn helper() -> Option<Helper> {
    pool::helper_cpu().map(|cpu| Helper { cpu })
}

/// What [`Helper::during`]'s walk shows of each regular member it meets:
/// its name, the offset of its data, and its data where the walk's bytes
/// hold it whole (`None`: a sparse member, or one cut short).
pub(crate) type Met<'m, 'd> = &'m mut dyn FnMut(&[u8], u64, Option<&'d [u8]>);

impl Helper {
    /// Runs `walk`, which shows each regular member it meets to the
    /// [`Met`] it is given and returns what it learned and the data
    /// offset of the def.json the accessors read (if any); the first
    /// def.json large enough to skim is skimmed meanwhile on the helper
    /// CPU. The skim of the accessors' def.json, if one ran on it (`None`
    /// inside: the skim refused it).
    pub(crate) fn during<'d, T>(
        self,
        limits: &Limits,
        walk: impl FnOnce(Met<'_, 'd>) -> Result<(T, Option<u64>)>,
    ) -> Result<(T, Option<Option<skim::Found>>)> {
        let depth = limits.max_json_depth;
        let shared = skim::Shared::default();
        std::thread::scope(|s| {
            let shared = &shared;
            let mut spec = None;
            // A guess, checked once the walk is done (by the accessors'
            // own pattern and sorted-order rule).
            let walked = walk(&mut |name, at, data| {
                if let (None, true, Some(data)) = (&spec, name.ends_with(b"/def.json"), data) {
                    if skim::worth_it(data.len() as u64, limits) {
                        let low = pool::spawn_on(s, self.cpu, move || {
                            skim::lower(data, &CC_TOP_KEYS, depth, Some(shared))
                        });
                        // No thread to be had: def_cc skims later, as usual.
                        spec = low.map(|low| (at, data, low));
                    }
                }
            });
            let (learned, def) = match walked {
                Ok(walked) => walked,
                Err(err) => {
                    shared.cancel();
                    return Err(err);
                }
            };
            let def_skim = match (spec, def) {
                (Some((at, data, low)), Some(def)) if at == def => {
                    let up = skim::upper(data, &CC_TOP_KEYS, depth, shared);
                    Some(low.join().ok().and_then(|low| skim::finish(low, up)))
                }
                (Some((_, _, low)), _) => {
                    shared.cancel();
                    let _ = low.join();
                    None
                }
                (None, _) => None,
            };
            Ok((learned, def_skim))
        })
    }
}
