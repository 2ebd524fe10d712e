//! `neuron-packager optimize` (docs/FORMAT.md §6): a NEFF rewritten to load
//! fast, with a raw (uncompressed) tar payload and the header that goes with
//! one, without its debug-only members unless asked to keep them.
//!
//! The tar is the original's, byte for byte, minus the blocks of the dropped
//! members (their header blocks, extended headers and data): every member
//! kept keeps its name, mode, mtime, owner and bytes, so whatever the
//! runtime and the accessors read answers the same. The header is the
//! original's with the fields a raw payload takes: package version 1,
//! `header_size` 1024, `data_size` the tar's length, the SHA-256 of the tar
//! in all 32 hash bytes, and `num_tpb` 0 where it held the runtime's "payload
//! is gzip" 1. Name, uuid, versions, feature bits and core counts are kept.
//! The output is a function of the input alone, so it is reproducible
//! (`SOURCE_DATE_EPOCH` has nothing to change).
//!
//! **The debug-only rule** (from §2.4's member taxonomy), applied to each
//! entry's whole name: a member (or directory) is dropped when its name ends in
//! `wavegraph-bin.json` (the debug IR the runtime itself skips), ends in
//! `.dbg` or `_dbg` (protobuf debug info), ends in `.asm` (disassembly text,
//! read by nobody), or has a path component `debug_info`. A dropped member
//! that a kept hard link points to is kept.

use std::io::{Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};
use zerocopy::{FromBytes, IntoBytes};

use crate::error::{Error, Result};
use crate::header::{Header, HEADER_SIZE};
use crate::reader::Neff;
use crate::tar::{Kind, BLOCK};

/// What [`optimize_to`] does.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct OptimizeOptions {
    /// Keep the debug-only members.
    pub keep_debug: bool,
}

impl OptimizeOptions {
    /// Sets `keep_debug`: keep the debug-only members.
    #[must_use]
    pub fn keep_debug(mut self, v: bool) -> Self {
        self.keep_debug = v;
        self
    }
}

/// What [`optimize_to`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Names of the members dropped, in archive order.
    pub dropped: Vec<String>,
    /// Bytes of the tar written (the new `data_size`).
    pub tar_bytes: u64,
}

/// Whether a member is debug-only by the module's rule.
pub fn is_debug_only(name: &[u8]) -> bool {
    name.ends_with(b"wavegraph-bin.json")
        || name.ends_with(b".dbg")
        || name.ends_with(b"_dbg")
        || name.ends_with(b".asm")
        || name.split(|&b| b == b'/').any(|c| c == b"debug_info")
}

/// Indices (into [`Neff::entries`]) of the entries dropped under `opts`.
pub(crate) fn dropped(neff: &Neff, opts: &OptimizeOptions) -> Vec<usize> {
    if opts.keep_debug {
        return Vec::new();
    }
    let entries = neff.entries();
    let mut drop: Vec<bool> = entries
        .iter()
        .map(|e| is_debug_only(neff.name(e)))
        .collect();
    // Keep the target of any kept hard link.
    let targets: std::collections::HashSet<&[u8]> = entries
        .iter()
        .zip(&drop)
        .filter(|(e, d)| !**d && e.kind == Kind::Hardlink)
        .filter_map(|(e, _)| neff.link(e))
        .collect();
    if !targets.is_empty() {
        for (e, d) in entries.iter().zip(drop.iter_mut()) {
            if *d && targets.contains(neff.name(e)) {
                *d = false;
            }
        }
    }
    drop.iter()
        .enumerate()
        .filter(|(_, d)| **d)
        .map(|(i, _)| i)
        .collect()
}

/// Writes the optimized NEFF to `w` (header first, rewritten at the end,
/// so `w` must seek) and says what was dropped.
pub fn optimize_to<W: Write + Seek>(
    neff: &Neff,
    opts: &OptimizeOptions,
    w: &mut W,
) -> Result<Report> {
    let tar = neff.tar().ok_or_else(|| {
        Error::usage(
            "optimize rewrites the tar and needs it whole: open the NEFF with an \
             inflate_budget over its tar size",
        )
    })?;
    let entries = neff.entries();
    let gone = dropped(neff, opts);
    // Byte ranges of the tar to leave out: each dropped entry's blocks,
    // from its first (extended) header up to the next entry's first header
    // (for the last entry, to the end of its padded data).
    let mut holes: Vec<(usize, usize)> = gone
        .iter()
        .map(|&i| {
            let e = &entries[i];
            let end = match entries.get(i + 1) {
                Some(next) => next.header_offset,
                None => e.offset + neff.stored_len(e).div_ceil(BLOCK as u64) * BLOCK as u64,
            };
            let end = end.min(tar.len() as u64) as usize;
            let start = (e.header_offset as usize).min(end);
            (start, end)
        })
        .collect();
    holes.sort_unstable();

    let start = w.stream_position()?;
    w.write_all(&[0u8; HEADER_SIZE])?;
    let mut sha = Sha256::new();
    let mut written = 0u64;
    let mut at = 0usize;
    let mut put = |chunk: &[u8], w: &mut W| -> Result<u64> {
        sha.update(chunk);
        w.write_all(chunk)?;
        Ok(chunk.len() as u64)
    };
    for &(a, b) in &holes {
        if a > at {
            written += put(&tar[at..a], w)?;
        }
        at = at.max(b);
    }
    if at < tar.len() {
        written += put(&tar[at..], w)?;
    }
    if written == 0 {
        // Nothing left: an empty archive (its two zero blocks), not an
        // empty payload, which no reader accepts.
        written += put(&[0u8; 2 * BLOCK], w)?;
    }
    let digest = sha.finalize();

    let mut header = Header::read_from_bytes(neff.header().as_bytes()).expect("1024 bytes");
    header.pkg_version.set(1);
    header.header_size.set(HEADER_SIZE as u64);
    header.data_size.set(written);
    header.hash.copy_from_slice(&digest);
    if header.num_tpb.get() == 1 {
        header.num_tpb.set(0);
    }
    w.seek(SeekFrom::Start(start))?;
    w.write_all(header.as_bytes())?;
    w.seek(SeekFrom::Start(start + HEADER_SIZE as u64 + written))?;
    Ok(Report {
        dropped: gone
            .iter()
            .map(|&i| neff.name_str(&entries[i]).into_owned())
            .collect(),
        tar_bytes: written,
    })
}

/// The optimized NEFF in memory.
pub fn optimize(neff: &Neff, opts: &OptimizeOptions) -> Result<(Vec<u8>, Report)> {
    let mut c = std::io::Cursor::new(Vec::with_capacity(HEADER_SIZE + neff.tar_len() as usize));
    let r = optimize_to(neff, opts, &mut c)?;
    Ok((c.into_inner(), r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_rule_names() {
        for n in [
            "sg00/wavegraph-bin.json",
            "debug_info/x.pb",
            "sg00/debug_info/y",
            "sg00/debug_info_backend.pe.dbg",
            "sg00/pe.asm",
            "sg00/pe_asm_dbg",
        ] {
            assert!(is_debug_only(n.as_bytes()), "{n}");
        }
        for n in [
            "sg00/def.json",
            "sg00/pe.bin",
            "neff.json",
            "kelf-0.json",
            "hlo_stats.json",
            "debug_info.json",
            "sg00/act_table_bkt.bin",
        ] {
            assert!(!is_debug_only(n.as_bytes()), "{n}");
        }
    }
}
