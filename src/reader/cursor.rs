//! Reading member data again: the [`DataCursor`] over a streamed payload
//! (inflated again from the start, once for the members read in archive
//! order, a window at a time), and the byte streams the tar layer
//! re-reads (the inflating gzip stream; a remote payload's pieces).

use std::borrow::Cow;

#[cfg_attr(not(feature = "remote"), allow(unused_imports))]
use super::neff::{changed, Neff, Tar};
#[cfg(feature = "remote")]
use super::remote_plan::remote_gz;
use crate::error::{Error, Result};
use crate::payload::{self, GzStream};
use crate::tar::{self, Entry, Expander, Piece, Reread};

/// Reads member data from a [`Neff`]. Held data is borrowed; a streamed
/// payload is inflated again from the start, once for all the members a
/// caller reads in archive order (a member before the last one read starts
/// the inflation over). Memory is one window, whatever the members' sizes.
pub struct DataCursor<'n> {
    neff: &'n Neff,
    reread: Reread<Box<dyn tar::ByteStream + 'n>>,
}

impl std::fmt::Debug for DataCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataCursor")
            .field("open", &self.reread.is_open())
            .finish()
    }
}

impl<'n> DataCursor<'n> {
    /// A cursor over `neff`'s members, no stream open yet.
    pub(super) fn new(neff: &'n Neff) -> DataCursor<'n> {
        DataCursor {
            neff,
            reread: Reread::default(),
        }
    }

    /// The data of `e`, borrowed when held, else inflated into a buffer
    /// (a GNU sparse member is expanded into one: holes as zeros).
    pub fn read(&mut self, e: &Entry) -> Result<Cow<'n, [u8]>> {
        if let Some(d) = self.neff.held(e) {
            return Ok(Cow::Borrowed(d));
        }
        if e.is_sparse() && e.size > self.neff.limits.max_inflated {
            // Its holes are not stored: held whole, it could outgrow the
            // file by any factor. Capped as an inflation is (copy_data and
            // unpack stream it instead).
            return Err(Error::Limit {
                what: "expanded size of a sparse member read whole",
                found: e.size,
                cap: self.neff.limits.max_inflated,
            });
        }
        let mut v = Vec::new();
        v.try_reserve_exact(usize::try_from(e.size).unwrap_or(usize::MAX))
            .map_err(|_| Error::no_memory("the member's data"))?;
        self.pieces(e, &mut |p| {
            match p {
                Piece::Data(d) => v.extend_from_slice(d),
                Piece::Hole(n) => v.resize(v.len() + n as usize, 0),
            }
            Ok(())
        })?;
        Ok(Cow::Owned(v))
    }

    /// Writes the data of `e` to `out` (a sparse member's holes as zeros,
    /// a window at a time).
    pub fn copy(&mut self, e: &Entry, out: &mut dyn std::io::Write) -> Result<()> {
        if let Some(d) = self.neff.held(e) {
            return out.write_all(d).map_err(Error::Io);
        }
        self.pieces(e, &mut |p| match p {
            Piece::Data(d) => out.write_all(d).map_err(Error::Io),
            Piece::Hole(mut n) => {
                static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
                while n > 0 {
                    let k = n.min(ZEROS.len() as u64) as usize;
                    out.write_all(&ZEROS[..k]).map_err(Error::Io)?;
                    n -= k as u64;
                }
                Ok(())
            }
        })
    }

    /// Hands the content of `e` to `sink` in pieces: its data, and for a
    /// GNU sparse member its holes (which a writer may seek over).
    pub fn pieces(
        &mut self,
        e: &Entry,
        sink: &mut dyn FnMut(Piece<'_>) -> Result<()>,
    ) -> Result<()> {
        let Some(segs) = self.neff.index.segments(e) else {
            return match self.neff.held(e) {
                Some(d) => sink(Piece::Data(d)),
                None => self.stream(e.offset, e.size, &mut |d| sink(Piece::Data(d))),
            };
        };
        let mut x = Expander::new(segs, e.size);
        match self.neff.stored(e) {
            Some(d) => x.feed(d, sink)?,
            None => {
                let len = self.neff.index.stored_len(e);
                self.stream(e.offset, len, &mut |d| x.feed(d, sink))?;
            }
        }
        x.finish(sink)
    }

    /// Inflates up to the `len` stored bytes at `offset` and hands them to
    /// `sink` a window at a time.
    fn stream(
        &mut self,
        offset: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let neff = self.neff;
        #[cfg(feature = "remote")]
        if let Tar::Remote { object, .. } = &neff.tar {
            let start = neff.span.start as u64 + offset;
            return object.stream(start..start + len, sink);
        }
        let short = self
            .reread
            .read(offset, len, &mut || restream(neff), sink)?;
        neff.check_unchanged()?;
        if short {
            // The walk saw these bytes: a payload that now inflates shorter
            // was read from a file that changed (or, remote, is not the
            // object every read is pinned to).
            return Err(changed());
        }
        Ok(())
    }
}

/// The inflating gzip stream is the tar layer's byte stream.
impl tar::ByteStream for GzStream<'_> {
    fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        Ok(GzStream::fill(self, out)?)
    }
    fn skip(&mut self, n: u64, window: &mut [u8]) -> Result<u64> {
        Ok(GzStream::skip(self, n, window)?)
    }
    fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        Ok(GzStream::finish(self, window)?)
    }
    fn produced(&self) -> u64 {
        GzStream::produced(self)
    }
    fn doubtful(&self) -> bool {
        GzStream::doubtful(self)
    }
}

/// A gzip payload inflated from a `Read` is the tar layer's byte stream
/// too (a remote object's, as it arrives).
#[cfg(feature = "remote")]
impl<R: std::io::Read> tar::ByteStream for payload::Pieces<R> {
    fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        payload::Pieces::fill(self, out)
    }
    fn skip(&mut self, n: u64, window: &mut [u8]) -> Result<u64> {
        payload::Pieces::skip(self, n, window)
    }
    fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        payload::Pieces::finish(self, window)
    }
    fn produced(&self) -> u64 {
        payload::Pieces::produced(self)
    }
    fn doubtful(&self) -> bool {
        false
    }
}

impl Neff {
    /// A reader of member data that inflates a streamed payload once for
    /// many members taken in archive order (see [`DataCursor`]).
    pub fn cursor(&self) -> DataCursor<'_> {
        DataCursor::new(self)
    }
}

/// A new stream over `neff`'s streamed payload, from its start: from the
/// map, or from a new read of the remote object it came from.
fn restream(neff: &Neff) -> Result<Box<dyn tar::ByteStream + '_>> {
    let cap = neff.limits.max_inflated;
    #[cfg(feature = "remote")]
    if let Tar::Streamed {
        object: Some(object),
        ..
    } = &neff.tar
    {
        let busy = crate::pool::saturated();
        return Ok(Box::new(remote_gz(
            object, &neff.file, neff.span, cap, busy,
        )?));
    }
    Ok(Box::new(
        payload::stream(neff.stored_payload(), cap, false, None)?.release_behind(neff),
    ))
}
