//! Reading a sparse member's map where it lies (the old GNU header and its
//! extension blocks, PAX records, or the start of its data in PAX 1.0):
//! the walk's side of sparse files, reading through the walk's [`Source`]
//! and handing the bytes to the pure decoders of [`crate::tar::sparse`].

use zerocopy::IntoBytes;

use super::{Name, Source};
use crate::error::Error;
use crate::limits::Limits;
use crate::tar::block::{Block, BLOCK};
use crate::tar::sparse::{
    check, in_data, old_extension, old_header, Fault, InData, Pax, Records, Segment,
};

/// A sparse entry's map as read, before it goes into the arena.
pub(super) struct Found {
    /// The segments, checked.
    pub(super) segs: Vec<Segment>,
    /// Where its stored segments start in the tar stream.
    pub(super) data_at: usize,
    /// Their total length.
    pub(super) stored: u64,
}

/// Reads the map of the sparse entry whose header (`block`) is at `pos`:
/// from the header and its extension blocks (old GNU), from its PAX
/// `records`, or from the start of its data (PAX 1.0), whose stored size
/// the header says is `size`. `held` segments are in the arena already.
/// Returns the map and the member's real size.
pub(super) fn read_map<S: Source>(
    src: &mut S,
    pos: usize,
    block: &Block,
    records: Option<&Records<Name>>,
    size: u64,
    held: usize,
    limits: &Limits,
) -> std::result::Result<(Found, u64), Fault> {
    let data = pos + BLOCK;
    let cap = limits.max_sparse_segments.saturating_sub(held);
    let over = |n: usize| {
        Fault::Other(Error::Limit {
            what: "sparse map segments",
            found: (held + n) as u64,
            cap: limits.max_sparse_segments as u64,
        })
    };
    let (segs, real, data_at, stored) = match records {
        Some(r) if block.is_old_gnu_sparse() && r.has_map() => {
            // GNU tar reads the header's map, libarchive the records'.
            return Err(
                "an old GNU sparse header (typeflag S) under PAX GNU.sparse map \
                 records (GNU tar reads the header's map, libarchive the records')"
                    .into(),
            );
        }
        // Old GNU (a PAX GNU.sparse.name still names it).
        _ if block.is_old_gnu_sparse() => {
            let (mut segs, real, mut ext) = old_header(block.as_bytes())?;
            let mut at = data;
            while ext {
                if segs.len() > cap {
                    return Err(over(segs.len()));
                }
                let b = src.read(at, BLOCK)?;
                if b.len() < BLOCK {
                    return Err("the archive ends inside its sparse extension blocks".into());
                }
                ext = old_extension(b, &mut segs)?;
                at += BLOCK;
            }
            (segs, real, at, size)
        }
        None => return Err("no sparse map (neither typeflag S nor GNU.sparse records)".into()),
        Some(r) => match r.encoding()? {
            Pax::InRecords(segs, real) => (segs, real, data, size),
            Pax::InData(real) => {
                // The map text grows with the segments it lists: read more
                // of the data until it is whole (never more than exists).
                let most = (cap as u64)
                    .saturating_mul(42)
                    .saturating_add(BLOCK as u64 + 21);
                let mut want = BLOCK as u64;
                loop {
                    let n = want.min(size);
                    let b = src.read(data, n as usize)?;
                    if (b.len() as u64) < n {
                        return Err("the archive ends inside its PAX 1.0 sparse map".into());
                    }
                    match in_data(b, n == size, cap)? {
                        InData::Done(segs, used) => {
                            if used > size {
                                return Err(format!(
                                    "its PAX 1.0 sparse map takes {used} bytes, the member stores {size}"
                                )
                                .into());
                            }
                            break (segs, real, data + used as usize, size - used);
                        }
                        InData::More if want >= most => return Err(over(cap + 1)),
                        InData::More => want = want.saturating_mul(2),
                    }
                }
            }
        },
    };
    if segs.len() > cap {
        return Err(over(segs.len()));
    }
    check(&segs, real, stored, limits)?;
    Ok((
        Found {
            segs,
            data_at,
            stored,
        },
        real,
    ))
}
