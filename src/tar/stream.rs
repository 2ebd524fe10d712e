//! Walking a tar archive while it is inflated, in a bounded window.
//!
//! [`StreamSource`] is the [`Source`] the walk reads when a gzip payload is
//! too large to inflate whole: headers and extended headers are read from a
//! window of the stream (a few hundred KiB, or one extended header, capped),
//! member data is inflated and dropped, and only two things are kept: names
//! (in an arena, as [`FileSource`](super::FileSource) does) and the data of
//! members the walk's caller asks for ([`Retained`]: the JSON members the
//! accessors will read). Memory follows the window and what is retained,
//! never the payload.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use super::index::{Name, Source};
use crate::error::Result;
use crate::payload::stream::GzStream;

/// Bytes inflated per refill of the window.
pub const CHUNK: usize = 256 << 10;

/// Member data kept by a streamed walk, by data offset in the tar stream.
#[derive(Debug, Default)]
pub struct Retained {
    members: HashMap<u64, Box<[u8]>>,
}

impl Retained {
    /// The data of the member whose data starts at `offset`, if kept.
    pub fn get(&self, offset: u64) -> Option<&[u8]> {
        self.members.get(&offset).map(|b| &b[..])
    }

    /// Drops the data of the member at `offset` (a better candidate came).
    pub fn release(&mut self, offset: u64) {
        self.members.remove(&offset);
    }
}

/// A tar stream inflated as it is walked.
pub struct StreamSource<'a, 'r> {
    gz: GzStream<'a>,
    buf: Vec<u8>,
    /// `buf[lo..hi]` holds the stream bytes from offset `at`.
    lo: usize,
    hi: usize,
    at: usize,
    eof: bool,
    names: Vec<u8>,
    retained: &'r RefCell<Retained>,
}

impl<'a, 'r> StreamSource<'a, 'r> {
    /// A source over `gz`, keeping retained data in `retained`.
    pub fn new(gz: GzStream<'a>, retained: &'r RefCell<Retained>) -> StreamSource<'a, 'r> {
        StreamSource {
            gz,
            buf: vec![0u8; CHUNK],
            lo: 0,
            hi: 0,
            at: 0,
            eof: false,
            names: Vec::new(),
            retained,
        }
    }

    /// Whether the inflater's parallel rounds failed (see
    /// [`GzStream::doubtful`]).
    pub fn doubtful(&self) -> bool {
        self.gz.doubtful()
    }

    /// Inflates what is left (checking every gzip trailer); the length of
    /// the whole tar stream.
    pub fn finish(&mut self) -> Result<u64> {
        self.lo = 0;
        self.hi = 0;
        self.gz.finish(&mut self.buf)
    }

    /// Forgets the bytes before stream offset `off`, skipping (inflating
    /// and dropping) up to it if it lies past the window.
    fn seek(&mut self, off: usize) -> Result<()> {
        let have = self.hi - self.lo;
        if off <= self.at + have {
            self.lo += off.saturating_sub(self.at);
            self.at = self.at.max(off);
        } else {
            let skip = (off - self.at - have) as u64;
            self.lo = 0;
            self.hi = 0;
            self.at += have;
            let skipped = self.gz.skip(skip, &mut self.buf)?;
            self.at += skipped as usize;
            if skipped < skip {
                self.eof = true;
            }
        }
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        }
        Ok(())
    }

    /// Inflates more into the window so that it holds at least `len` bytes
    /// (fewer at the end of the stream).
    fn fill(&mut self, len: usize) -> Result<()> {
        while self.hi - self.lo < len && !self.eof {
            if self.buf.len() - self.lo < len {
                // Not enough room after `lo`: move what is held to the front.
                self.buf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
                if self.buf.len() < len {
                    self.buf.resize(len, 0);
                }
            }
            if self.hi == self.buf.len() {
                self.buf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
            }
            let n = self.gz.fill(&mut self.buf[self.hi..])?;
            if n == 0 {
                self.eof = true;
            }
            self.hi += n;
        }
        Ok(())
    }
}

impl Source for StreamSource<'_, '_> {
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        self.seek(off)?;
        if self.at < off {
            return Ok(&[]); // the stream ended before `off`
        }
        self.fill(len)?;
        let n = len.min(self.hi - self.lo);
        Ok(&self.buf[self.lo..self.lo + n])
    }

    fn data(&mut self, off: usize, size: u64, retain: bool) -> Result<Option<u64>> {
        self.seek(off)?;
        if self.at < off {
            return Ok(Some(0));
        }
        // A retained member grows with the bytes the stream produces, never
        // with the size its header claims (which may run past the end).
        let mut kept = retain.then(Vec::new);
        let no_memory = |_| crate::Error::no_memory("a retained member");
        let mut left = size;
        while left > 0 {
            if self.lo == self.hi {
                self.fill(1)?;
                if self.lo == self.hi {
                    return Ok(Some(size - left));
                }
            }
            let take = (self.hi - self.lo).min(usize::try_from(left).unwrap_or(usize::MAX));
            if let Some(k) = kept.as_mut() {
                k.try_reserve(take).map_err(no_memory)?;
                k.extend_from_slice(&self.buf[self.lo..self.lo + take]);
            }
            self.seek(off + (size - left) as usize + take)?;
            left -= take as u64;
        }
        if let Some(k) = kept {
            self.retained
                .borrow_mut()
                .members
                .insert(off as u64, k.into_boxed_slice());
        }
        Ok(None)
    }

    fn keep(&mut self, _: Range<usize>, bytes: &[u8]) -> Name {
        let start = self.names.len();
        self.names.extend_from_slice(bytes);
        Name::Arena(start..self.names.len())
    }

    fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
        match name {
            Name::Arena(r) => &self.names[r.clone()],
            Name::Joined(b) => b,
            Name::Span(_) => &[],
        }
    }

    fn take_names(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.names)
    }

    fn held(&self) -> usize {
        self.names.len()
    }
}
