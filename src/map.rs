//! The bytes of a NEFF file: memory-mapped, or read into memory.
//!
//! This module holds the crate's two `unsafe` blocks, and no other module
//! has any: the read-only shared map of a whole file ([`FileBytes::open`])
//! and the private copy-on-write map of one member's pages
//! ([`FileBytes::private_pages`]). Everything above it sees a plain `&[u8]`.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::{Mmap, MmapMut, MmapOptions};

use crate::error::Result;

/// The whole file's bytes, however they were obtained.
#[derive(Debug)]
pub enum FileBytes {
    /// A read-only shared mapping of the file (the file is kept open for
    /// copy-on-write mappings of its members).
    Mapped(Mmap, File),
    /// The file read into (or built in) memory.
    Owned(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m, _) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

/// How to bring a file into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Map files of at least 64 KiB, read smaller ones (a read of a small
    /// file is cheaper than setting up and tearing down a mapping).
    #[default]
    Auto,
    /// Always memory-map.
    Map,
    /// Always read into memory.
    Read,
}

/// Files below this size are read rather than mapped in [`ReadMode::Auto`].
pub const MAP_THRESHOLD: u64 = 64 << 10;

impl FileBytes {
    /// Opens `path` and returns its bytes (mapped or read, per `mode`).
    pub fn open(path: &Path, mode: ReadMode) -> Result<FileBytes> {
        FileBytes::open_reusing(path, mode, Vec::new())
    }

    /// [`open`](Self::open), reading into `buf` (cleared first) when the
    /// file is read rather than mapped, so a scan can reuse one buffer.
    pub fn open_reusing(path: &Path, mode: ReadMode, mut buf: Vec<u8>) -> Result<FileBytes> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let map = match mode {
            ReadMode::Map => len > 0,
            ReadMode::Read => false,
            ReadMode::Auto => len >= MAP_THRESHOLD,
        };
        if !map {
            buf.clear();
            buf.reserve(len as usize);
            use std::io::Read;
            (&file).read_to_end(&mut buf)?;
            return Ok(FileBytes::Owned(buf));
        }
        // SAFETY: the mapping is read-only and private to this process. The
        // one hazard is another process truncating or rewriting the file while
        // it is mapped: a truncation turns reads past the new end into SIGBUS,
        // a rewrite changes bytes under us. Every length we use is checked
        // against the mapping's length, so a concurrent rewrite can only make
        // us read different (still bounded) bytes; truncation of a NEFF being
        // read is outside what this tool defends against, as for ripgrep and
        // every other mmap-based reader.
        let map = unsafe { Mmap::map(&file)? };
        Ok(FileBytes::Mapped(map, file))
    }

    /// A private, copy-on-write mapping of `len` bytes at `offset` of the
    /// file, or `None` when the bytes are not mapped from a file.
    pub fn private_pages(&self, offset: usize, len: usize) -> Option<Result<PrivatePages>> {
        let FileBytes::Mapped(_, file) = self else {
            return None;
        };
        if len == 0 {
            return None;
        }
        // SAFETY: as for the shared mapping above. The mapping is private:
        // writes through it go to this process's copies of the pages and
        // never reach the file or the shared mapping.
        let map = unsafe {
            MmapOptions::new()
                .offset(offset as u64)
                .len(len)
                .map_copy(file)
        };
        Some(map.map(|map| PrivatePages { map }).map_err(Into::into))
    }
}

impl FileBytes {
    /// Gives back the vector of bytes that were read, for reuse.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        match self {
            FileBytes::Owned(v) => Some(v),
            FileBytes::Mapped(..) => None,
        }
    }

    /// Prefaults the page tables for `len` bytes at `offset` in one call
    /// (`MADV_POPULATE_READ`), for a range about to be read whole. A no-op
    /// for bytes read into memory.
    pub fn populate(&self, offset: usize, len: usize) {
        if let FileBytes::Mapped(m, _) = self {
            if len > 0 && offset.checked_add(len).is_some_and(|end| end <= m.len()) {
                // A hint: without it the pages fault in as they are read.
                let _ = m.advise_range(memmap2::Advice::PopulateRead, offset, len);
            }
        }
    }

    /// The open file behind a mapping.
    pub fn file(&self) -> Option<&File> {
        match self {
            FileBytes::Mapped(_, f) => Some(f),
            FileBytes::Owned(_) => None,
        }
    }

    /// Tells the kernel how the mapping will be read: `Random` for a raw tar
    /// (only header pages are touched, so no readahead or fault-around
    /// should pull in member data), `Sequential` for a payload inflated or
    /// hashed front to back. A no-op for bytes read into memory.
    pub fn advise(&self, advice: memmap2::Advice) {
        if let FileBytes::Mapped(m, _) = self {
            // Advice is a hint; failure changes nothing but speed.
            let _ = m.advise(advice);
        }
    }
}

/// A private copy-on-write window of a mapped file.
#[derive(Debug)]
pub struct PrivatePages {
    map: MmapMut,
}

impl PrivatePages {
    /// The window's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The window's bytes, writable (writes copy the touched pages).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }
}
