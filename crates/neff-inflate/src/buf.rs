//! Memory for inflated bytes: anonymous mappings, 2 MiB-aligned so that
//! transparent huge pages can back all of them (a fresh output buffer then
//! takes 512 times fewer page faults), used by the one-shot
//! path ([`super`]) and by the parallel split ([`super::parallel`]).

use std::ops::{Deref, DerefMut};

use memmap2::{Advice, MmapMut, MmapOptions};

use crate::error::Result;

/// Anonymous memory for inflated bytes, 2 MiB-aligned so that transparent
/// huge pages can back all of it, optionally prefaulted in one call
/// (`MADV_POPULATE_WRITE`) instead of one fault per page.
#[derive(Debug)]
pub(crate) struct HugeBuf {
    map: MmapMut,
    off: usize,
    len: usize,
}

const HUGE: usize = 2 << 20;

impl HugeBuf {
    /// `len` bytes of zeroed memory; `populate` when all of it will be written.
    pub(crate) fn new(len: usize, populate: bool) -> Result<HugeBuf> {
        let pad = if len >= HUGE { HUGE } else { 0 };
        // Memory that fills as bytes are produced is address space, not a
        // commitment: reserved without swap (MAP_NORESERVE), so that a
        // bound of 1032 times the input (what deflate can expand to) maps
        // under the kernel's overcommit heuristic.
        let mut opts = MmapOptions::new();
        opts.len((len + pad).max(1));
        if !populate {
            opts.no_reserve_swap();
        }
        let map = opts.map_anon()?;
        let off = if pad > 0 {
            (HUGE - map.as_ptr() as usize % HUGE) % HUGE
        } else {
            0
        };
        // Advice is a hint; a kernel without THP or MADV_POPULATE_WRITE
        // simply faults pages in as they are written.
        let _ = map.advise(Advice::HugePage);
        if populate && len > 0 {
            let _ = map.advise_range(Advice::PopulateWrite, off, len);
        }
        Ok(HugeBuf { map, off, len })
    }
}

impl Deref for HugeBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.off..self.off + self.len]
    }
}

impl DerefMut for HugeBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.off..self.off + self.len]
    }
}
