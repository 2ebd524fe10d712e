//! Walking a tar archive while it is inflated, in a bounded window.
//!
//! [`StreamSource`] is the [`Source`] the walk reads when a gzip payload is
//! too large to inflate whole: headers and extended headers are read from a
//! window of the stream (a few hundred KiB, or one extended header, capped),
//! member data is inflated and dropped, and only two things are kept: names
//! (in an arena, as [`FileSource`](super::index::FileSource) does) and the data of
//! members the walk's caller asks for ([`Retained`]: the JSON members the
//! accessors will read). Memory follows the window and what is retained,
//! never the payload.
//!
//! The tar layer knows nothing of gzip: the stream is any [`ByteStream`]
//! (the reader hands it an inflating gzip stream). What to keep is the
//! caller's policy ([`Keep`], which every kind of archive is walked with);
//! that a first pass may have to start over, and when, is decided here
//! ([`walk`], entered through `tar::walk`), on the stream's
//! state, never on an error's text.

use std::cell::RefCell;
use std::collections::HashMap;

use super::index::walk::headers;
use super::index::{names_in_arena, Arena, Entry, Index, Kind, Name, Source};
use crate::error::{Error, Result};
use crate::limits::Limits;

/// A stream of tar bytes, produced as they are asked for (for a NEFF, a
/// gzip payload being inflated).
pub(crate) trait ByteStream {
    /// Fills `out` from the stream; 0 at its end.
    fn fill(&mut self, out: &mut [u8]) -> Result<usize>;
    /// Produces and drops `n` bytes (through `window`); fewer at the end.
    fn skip(&mut self, n: u64, window: &mut [u8]) -> Result<u64>;
    /// Produces what is left, checking it as a whole (every gzip trailer);
    /// the stream's total length.
    fn finish(&mut self, window: &mut [u8]) -> Result<u64>;
    /// Bytes produced so far.
    fn produced(&self) -> u64;
    /// Whether bytes already produced may be wrong (an inflater's parallel
    /// round failed its check), so that a walk must start over on a
    /// [`Pass::Careful`] stream.
    fn doubtful(&self) -> bool;
}

/// A boxed stream is one (a reader of member data holds whichever kind
/// its payload needs).
impl<S: ByteStream + ?Sized> ByteStream for Box<S> {
    fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        (**self).fill(out)
    }
    fn skip(&mut self, n: u64, window: &mut [u8]) -> Result<u64> {
        (**self).skip(n, window)
    }
    fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        (**self).finish(window)
    }
    fn produced(&self) -> u64 {
        (**self).produced()
    }
    fn doubtful(&self) -> bool {
        (**self).doubtful()
    }
}

/// Which pass of a streamed walk a stream is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// The first: the stream may take shortcuts that are checked only at
    /// its end (parallel rounds), and say [`ByteStream::doubtful`].
    Fast,
    /// After a doubtful first pass: no shortcuts.
    Careful,
}

/// A walk's policy: which members' data to keep, where the archive is not
/// held (a stream, ranged reads), and what its caller watches for; each
/// regular member is offered as soon as its header is read.
pub(crate) trait Keep {
    /// Whether to keep the data of `e` (named `name`), now shown;
    /// `release` drops a member kept earlier (by its data offset).
    fn offer(&mut self, e: &Entry, name: &[u8], release: &mut dyn FnMut(u64)) -> bool;
    /// Forgets every member offered: a streamed walk starts over.
    fn restart(&mut self) {}
}

/// Walks the tar archive of the stream `open` gives, keeping what `keep`
/// picks. Every byte of the stream is produced and checked, as a
/// whole read would: when the walk fails, the rest of the stream is still
/// produced so that a fault of the stream further on is reported first
/// (the stream's own failures end it at once). A first pass whose stream
/// turns out [`doubtful`](ByteStream::doubtful) is run again on a
/// [`Pass::Careful`] stream (`keep` restarted). Returns the index, the
/// kept data and the stream's length.
pub(super) fn walk<S: ByteStream>(
    open: &mut dyn FnMut(Pass) -> Result<S>,
    keep: &mut dyn Keep,
    limits: &Limits,
) -> Result<(Index, Retained, u64)> {
    let (walked, doubt) = walk_once(open(Pass::Fast)?, keep, limits);
    if !doubt {
        return walked;
    }
    keep.restart();
    walk_once(open(Pass::Careful)?, keep, limits).0
}

/// Walks the tar `src` reads, offering each regular member to `keep`
/// (which the source keeps in `retained`); a member `keep` lets go of is
/// released from `retained`.
pub(super) fn keeping<S: Source>(
    src: S,
    keep: &mut dyn Keep,
    retained: &RefCell<Retained>,
    limits: &Limits,
) -> Result<Index> {
    headers(src, limits, &mut |e, name| {
        e.kind == Kind::File && keep.offer(e, name, &mut |old| retained.borrow_mut().release(old))
    })
}

/// One pass of [`walk`]; also says whether its stream was doubtful.
fn walk_once<S: ByteStream>(
    stream: S,
    keep: &mut dyn Keep,
    limits: &Limits,
) -> (Result<(Index, Retained, u64)>, bool) {
    let retained = RefCell::new(Retained::default());
    let mut src = StreamSource::new(stream, &retained);
    let walked = keeping(&mut src, keep, &retained, limits);
    let result = match walked {
        Err(e) if src.failed => Err(e),
        walked => src
            .finish()
            .and_then(|len| walked.map(|index| (index, retained.take(), len))),
    };
    (result, src.stream.doubtful())
}

/// Reads members' data again from a fresh stream, in archive order, a
/// window at a time (for data a streamed walk did not keep).
pub(crate) struct Reread<S> {
    stream: Option<S>,
    window: Vec<u8>,
}

impl<S> Default for Reread<S> {
    fn default() -> Self {
        Reread {
            stream: None,
            window: Vec::new(),
        }
    }
}

impl<S: ByteStream> Reread<S> {
    /// Whether a stream is open.
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Hands the `size` bytes at `offset` (a member's data) to `sink` a window at a time, from the stream
    /// already open if it has not passed `e`, else from `open()`. Returns
    /// whether the stream ended before the data did (the walk saw those
    /// bytes: the caller's file changed).
    pub(crate) fn read(
        &mut self,
        offset: u64,
        size: u64,
        open: &mut dyn FnMut() -> Result<S>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<bool> {
        let restart = match &self.stream {
            Some(s) => s.produced() > offset,
            None => true,
        };
        if restart {
            self.stream = Some(open()?);
        }
        if self.window.is_empty() {
            self.window = vec![0u8; CHUNK];
        }
        let s = self.stream.as_mut().expect("set above");
        let skip = offset - s.produced();
        let mut short = s.skip(skip, &mut self.window)? < skip;
        let mut left = size;
        while left > 0 && !short {
            let want = self
                .window
                .len()
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = s.fill(&mut self.window[..want])?;
            if n == 0 {
                short = true;
                break;
            }
            sink(&self.window[..n])?;
            left -= n as u64;
        }
        Ok(short)
    }
}

/// `r`, noting in `failed` whether it is an error: a stream's own failure
/// (which ends a walk at once) is told from the walk's by where it
/// happened, not by what it says.
fn note<T>(failed: &mut bool, r: Result<T>) -> Result<T> {
    if r.is_err() {
        *failed = true;
    }
    r
}

/// Bytes produced per refill of the window.
pub(crate) const CHUNK: usize = 256 << 10;

/// Member data kept by a streamed walk, by data offset in the tar stream.
#[derive(Debug, Default)]
pub(crate) struct Retained {
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

    /// Keeps `data` as the member whose data starts at `offset`.
    #[cfg(feature = "remote")]
    pub(crate) fn keep(&mut self, offset: u64, data: Box<[u8]>) {
        self.members.insert(offset, data);
    }
}

/// A tar stream walked as it is produced.
pub(crate) struct StreamSource<'r, S> {
    stream: S,
    /// Whether a call on `stream` failed (its error ends the walk).
    failed: bool,
    buf: Vec<u8>,
    /// `buf[lo..hi]` holds the stream bytes from offset `at`.
    lo: usize,
    hi: usize,
    at: usize,
    eof: bool,
    names: Arena,
    retained: &'r RefCell<Retained>,
}

impl<'r, S: ByteStream> StreamSource<'r, S> {
    /// A source over `stream`, keeping retained data in `retained`.
    fn new(stream: S, retained: &'r RefCell<Retained>) -> StreamSource<'r, S> {
        StreamSource {
            stream,
            failed: false,
            buf: vec![0u8; CHUNK],
            lo: 0,
            hi: 0,
            at: 0,
            eof: false,
            names: Arena::default(),
            retained,
        }
    }

    /// Produces what is left (checking it whole); the length of the
    /// whole tar stream.
    fn finish(&mut self) -> Result<u64> {
        self.lo = 0;
        self.hi = 0;
        self.stream.finish(&mut self.buf)
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
            let skipped = note(&mut self.failed, self.stream.skip(skip, &mut self.buf))?;
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
            let n = note(&mut self.failed, self.stream.fill(&mut self.buf[self.hi..]))?;
            if n == 0 {
                self.eof = true;
            }
            self.hi += n;
        }
        Ok(())
    }
}

impl<S: ByteStream> Source for StreamSource<'_, S> {
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
        if !retain {
            // Skipped, not read: a stream that can pass over bytes without
            // producing them (stored blocks, checksummed in place) does.
            let end = usize::try_from(size)
                .ok()
                .and_then(|n| off.checked_add(n))
                .unwrap_or(usize::MAX);
            self.seek(end)?;
            return Ok((self.at < end).then(|| (self.at - off) as u64));
        }
        // A retained member grows with the bytes the stream produces, never
        // with the size its header claims (which may run past the end).
        let mut kept = retain.then(Vec::new);
        let no_memory = |_| Error::no_memory("a retained member");
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

    names_in_arena!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{write_tar, PackEntry};

    /// A byte stream over `bytes` that can say it is doubtful, fail at an
    /// offset, or fail when finished.
    struct Mem {
        bytes: Vec<u8>,
        pos: usize,
        doubtful: bool,
        fail_at: Option<usize>,
        fail_finish: bool,
    }

    impl Mem {
        fn new(bytes: &[u8]) -> Mem {
            Mem {
                bytes: bytes.to_vec(),
                pos: 0,
                doubtful: false,
                fail_at: None,
                fail_finish: false,
            }
        }
        fn take(&mut self, n: usize) -> Result<usize> {
            let n = n.min(self.bytes.len() - self.pos);
            if self.fail_at.is_some_and(|at| self.pos + n > at) {
                return Err(Error::gzip("the stream's own fault"));
            }
            self.pos += n;
            Ok(n)
        }
    }

    impl ByteStream for Mem {
        fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
            let at = self.pos;
            let n = self.take(out.len())?;
            out[..n].copy_from_slice(&self.bytes[at..at + n]);
            Ok(n)
        }
        fn skip(&mut self, n: u64, _: &mut [u8]) -> Result<u64> {
            Ok(self.take(usize::try_from(n).unwrap())? as u64)
        }
        fn finish(&mut self, _: &mut [u8]) -> Result<u64> {
            assert!(self.fail_at.is_none(), "a failed stream is never finished");
            if self.fail_finish {
                return Err(Error::gzip("a fault after the archive"));
            }
            self.pos = self.bytes.len();
            Ok(self.pos as u64)
        }
        fn produced(&self) -> u64 {
            self.pos as u64
        }
        fn doubtful(&self) -> bool {
            self.doubtful
        }
    }

    /// Keeps every JSON member.
    struct Json;
    impl Keep for Json {
        fn offer(&mut self, _: &Entry, name: &[u8], _: &mut dyn FnMut(u64)) -> bool {
            name.ends_with(b".json")
        }
    }

    fn archive() -> Vec<u8> {
        write_tar(&[
            PackEntry::file("a.json", b"{\"a\":1}".to_vec(), 0),
            PackEntry::file("w.bin", vec![7u8; 300_000], 0),
            PackEntry::file("b.json", b"[2]".to_vec(), 0),
        ])
    }

    #[test]
    fn a_doubtful_first_pass_is_walked_again_on_a_careful_stream() {
        let tar = archive();
        let mut passes = Vec::new();
        let (index, kept, len) = walk(
            &mut |pass| {
                passes.push(pass);
                let mut m = Mem::new(&tar);
                m.doubtful = pass == Pass::Fast;
                Ok(m)
            },
            &mut Json,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(passes, [Pass::Fast, Pass::Careful]);
        assert_eq!(len, tar.len() as u64);
        assert_eq!(index.entries.len(), 3);
        let json: Vec<&[u8]> = [0, 2]
            .iter()
            .map(|&i| kept.get(index.entries[i].offset).unwrap())
            .collect();
        assert_eq!(json, [&b"{\"a\":1}"[..], b"[2]"]);
        assert!(kept.get(index.entries[1].offset).is_none());
    }

    #[test]
    fn a_trusted_first_pass_is_the_answer() {
        let tar = archive();
        let mut passes = Vec::new();
        let walked = walk(
            &mut |pass| {
                passes.push(pass);
                Ok(Mem::new(&tar))
            },
            &mut Json,
            &Limits::default(),
        );
        assert!(walked.is_ok());
        assert_eq!(passes, [Pass::Fast]);
    }

    #[test]
    fn the_streams_own_fault_ends_the_walk_whatever_it_says() {
        let tar = archive();
        let walked = walk(
            &mut |_| {
                let mut m = Mem::new(&tar);
                m.fail_at = Some(100_000);
                Ok(m)
            },
            &mut Json,
            &Limits::default(),
        );
        assert_eq!(
            walked.unwrap_err().to_string(),
            "gzip payload: the stream's own fault"
        );
    }

    #[test]
    fn a_walk_fault_still_finishes_the_stream_whose_later_fault_comes_first() {
        let mut tar = archive();
        tar[1024 + 148] = b'9'; // w.bin's header: its checksum no longer holds
        let mut m = Mem::new(&tar);
        m.fail_finish = true;
        let mut once = Some(m);
        let walked = walk(
            &mut |_| Ok(once.take().unwrap()),
            &mut Json,
            &Limits::default(),
        );
        assert_eq!(
            walked.unwrap_err().to_string(),
            "gzip payload: a fault after the archive"
        );
        // Without the later fault, the walk's own refusal stands.
        let walked = walk(&mut |_| Ok(Mem::new(&tar)), &mut Json, &Limits::default());
        assert!(walked.unwrap_err().to_string().starts_with("tar at byte"));
    }
}
