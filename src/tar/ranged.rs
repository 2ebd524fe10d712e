//! A raw tar read by ranges from somewhere slow (a remote object): the walk
//! fetches the headers, and of the member data only what costs less to
//! read than to skip.
//!
//! Two ways over member data, chosen at each skip from what a request
//! costs ([`Fetch::through_below`]: the bytes a connection brings in one
//! round trip, as measured):
//!
//! - **hop**: a new request at the next header, for a window of a quarter
//!   of a round trip's worth (at least [`WINDOW`] bytes) that doubles (up
//!   to [`MAX_WINDOW`]) while the walk reads on from its end; listing an
//!   archive of large members reads little more than its headers, a round
//!   trip per member;
//! - **read through**: when the data to skip is shorter than a round
//!   trip's worth of bytes, the walk reads on through a read-ahead
//!   ([`Fetch::ahead`]): a span twice a round trip's worth long, in parts
//!   in flight handed on in order, the skipped bytes dropped as they pass;
//!   each span the walk reads to its end makes the next four times
//!   longer. One object alone on a fast link is so read at the speed of a
//!   download, never a round trip per member; a member longer than that
//!   threshold ends the read-ahead and is hopped over.
//!
//! An object walked alone on a link where a request is cheap (loopback)
//! is hopped through whole: once [`JUDGED_AFTER`] members have been
//! passed, if their data averages more than half of what a read-ahead
//! brings in the time of one request ([`Fetch::hop_worth`]), the walk
//! only hops from then on, as under a cap; mixing the two ways there pays
//! both a request per large member and the bytes between them.
//!
//! The data of members the accessors will read (`retain`, the JSON
//! sidecars) is kept as the walk passes it ([`Retained`]), fetched with
//! the header after it in one request when hopping, so that reading them
//! later costs no request. Under a cap on the bytes moved
//! ([`Fetch::budget`]) the walk only hops, in the smallest windows. Names
//! are copied into an arena, as [`FileSource`](super::index::FileSource) keeps
//! them.

use std::collections::VecDeque;
use std::ops::Range;

use bytes::Bytes;

use std::cell::RefCell;

use super::index::{data_in, names_in_arena, Arena, Index, Name, Source};
use super::stream::{keeping, Keep, Retained};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::parts::Parts;

/// Walks the raw tar of `len` bytes at `base` of what `from` fetches
/// (`first`: the object's first bytes, already fetched), keeping the data
/// of the members `keep` picks as the walk passes them (entered through
/// `tar::walk`).
pub(super) fn walk<F: Fetch + ?Sized>(
    from: &F,
    base: u64,
    len: usize,
    first: &[u8],
    keep: &mut dyn Keep,
    limits: &Limits,
) -> Result<(Index, Retained)> {
    let retained = RefCell::new(Retained::default());
    let mut src = RangeSource::new(from, base, len, first);
    src.retained = Some(&retained);
    let index = keeping(&mut src, keep, &retained, limits)?;
    drop(src);
    Ok((index, retained.into_inner()))
}

/// Bytes by range, from an object that is slow to reach.
pub trait Fetch {
    /// The bytes at `range` of the underlying object: exactly those, or an
    /// error.
    fn fetch(&self, range: Range<u64>) -> Result<Vec<u8>>;

    /// Bytes of member data that cost as much to read through as a new
    /// request costs to hop over them; 0 (the default) always hops.
    fn through_below(&self) -> u64 {
        0
    }

    /// The bytes of `range`, in parts of `first` bytes and growing, handed
    /// on in order; the default fetches each when it is asked for, an
    /// object that can have several in flight does so.
    fn ahead<'s>(&'s self, range: Range<u64>, first: u64) -> Result<Box<dyn Ahead + 's>> {
        Ok(Box::new(OneByOne {
            from: self,
            parts: Parts::new(range, first, MAX_PART),
        }))
    }

    /// The bytes reading on brings in the time one hop costs, for an
    /// object walked alone (`None`, the default: not known, or not alone).
    /// A walk whose skipped member data averages more than half of this
    /// hops over every member, as under a cap: mixing the two ways pays both a
    /// request per large member and the bytes between them.
    fn hop_worth(&self) -> Option<u64> {
        None
    }

    /// How many more bytes may be fetched from this object (`None`: no
    /// cap). Under a cap the walk moves the fewest bytes: it hops, in small
    /// windows, and keeps no member data it did not fetch anyway.
    fn budget(&self) -> Option<u64> {
        None
    }
}

/// A part of a read-ahead: its bytes in the pieces they arrived in (a
/// network body's chunks, as the HTTP client received them), in order.
pub type Part = Vec<Bytes>;

/// Parts of a range read ahead, in order.
pub trait Ahead {
    /// The next part (`None` once the range is done).
    fn next_part(&mut self) -> Result<Option<Part>>;
}

/// [`Fetch::ahead`]'s default: one part fetched at a time, when asked.
struct OneByOne<'s, F: Fetch + ?Sized> {
    from: &'s F,
    parts: Parts,
}

impl<F: Fetch + ?Sized> Ahead for OneByOne<'_, F> {
    fn next_part(&mut self) -> Result<Option<Part>> {
        let part = self.parts.next().map(|r| self.from.fetch(r)).transpose()?;
        Ok(part.map(|p| vec![Bytes::from(p)]))
    }
}

/// Tar bytes `at..at + len`, held in the pieces they came in: a part of a
/// read-ahead joins the window without being copied, and bytes the walk
/// has gone past leave it without moving the rest.
#[derive(Default)]
struct Rope {
    chunks: VecDeque<Bytes>,
    at: usize,
    len: usize,
    /// Where the last read found its chunk: (index, its first byte).
    hint: (usize, usize),
    /// A read that spans chunks is gathered here.
    scratch: Vec<u8>,
}

impl Rope {
    fn end(&self) -> usize {
        self.at + self.len
    }

    fn holds(&self, off: usize, len: usize) -> bool {
        off >= self.at && off + len <= self.end()
    }

    /// Nothing held; the next bytes pushed start at `at`.
    fn clear_to(&mut self, at: usize) {
        self.chunks.clear();
        self.at = at;
        self.len = 0;
        self.hint = (0, at);
    }

    /// Appends bytes at the end.
    fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.len += b.len();
            self.chunks.push_back(b);
        }
    }

    /// Drops the bytes before `off` (at most the end).
    fn drop_before(&mut self, off: usize) {
        let mut n = off.saturating_sub(self.at).min(self.len);
        while n > 0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            if front.len() <= n {
                n -= front.len();
                self.len -= front.len();
                self.at += front.len();
                self.chunks.pop_front();
            } else {
                bytes::Buf::advance(front, n);
                self.len -= n;
                self.at += n;
                n = 0;
            }
        }
        self.hint = (0, self.at);
    }

    /// The chunk holding `off` (held): its index and first byte.
    fn find(&self, off: usize) -> (usize, usize) {
        let (mut i, mut pos) = if off >= self.hint.1 && self.hint.0 < self.chunks.len() {
            self.hint
        } else {
            (0, self.at)
        };
        while pos + self.chunks[i].len() <= off {
            pos += self.chunks[i].len();
            i += 1;
        }
        (i, pos)
    }

    /// Bytes `off..off + len` (held): a slice of one chunk, or gathered.
    fn slice(&mut self, off: usize, len: usize) -> &[u8] {
        let (i, pos) = self.find(off);
        self.hint = (i, pos);
        let s = off - pos;
        if s + len <= self.chunks[i].len() {
            return &self.chunks[i][s..s + len];
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.gather(off, len, &mut out);
        self.scratch = out;
        &self.scratch
    }

    /// Appends bytes `off..off + len` (held) to `out`.
    fn gather(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        let (mut i, pos) = self.find(off);
        let mut s = off - pos;
        let mut left = len;
        while left > 0 {
            let c = &self.chunks[i][s..];
            let n = c.len().min(left);
            out.extend_from_slice(&c[..n]);
            left -= n;
            s = 0;
            i += 1;
        }
    }
}

/// The first window after a jump: a header and one more block (a PAX
/// record block or a long name, then the header they describe, usually
/// fit), so that listing an archive of large members fetches about 2 KiB a
/// member; more is fetched, doubling, only while the walk reads on.
pub const WINDOW: usize = 2 << 10;
/// The largest window.
pub const MAX_WINDOW: usize = 8 << 20;
/// The largest part of a read-ahead: with 8 in flight, 64 MiB on the
/// way (4 MiB parts took 1.3x as long to list a 1 GiB NEFF 20 ms away).
pub const MAX_PART: u64 = 8 << 20;

/// The smallest first part of a read-ahead.
const MIN_PART: u64 = 64 << 10;
/// Members passed before the walk judges whether to hop over them all
/// ([`Fetch::hop_worth`]).
const JUDGED_AFTER: u64 = 4;
/// Hopping only is chosen when the members passed average more than
/// `1 / HOP_BIAS` of a hop's worth: where the two ways cost about the
/// same, hopping moves a hundredth of the bytes (egress is billed), and
/// on loopback both pure ways took about as long as the download where
/// the mix between them took twice as long (PERF.md, remote-ls-1g).
const HOP_BIAS: u64 = 2;

/// Walks the `len` tar bytes that start `base` bytes into what `F` fetches.
pub struct RangeSource<'a, F: Fetch + ?Sized> {
    from: &'a F,
    base: u64,
    len: usize,
    /// Tar bytes the walk may read without a request.
    window: Rope,
    next: usize,
    /// The read-ahead in use: its next part starts where the window ends.
    ahead: Option<Box<dyn Ahead + 'a>>,
    /// The length of the next read-ahead (0: twice a round trip's worth).
    span: u64,
    /// Members whose data the walk passed without keeping it, and their
    /// bytes: what [`Fetch::hop_worth`] is weighed against ([`Self::judge`]). Empty members
    /// and ones over [`MAX_PART`] are left out: a few of those would
    /// outweigh the many smaller ones the choice is about.
    passed: u64,
    passed_bytes: u64,
    /// The walk only hops from here on ([`Self::judge`]): once chosen,
    /// it stands for the rest of the walk (going back and forth is the
    /// mix that pays both ways).
    hopping: bool,
    names: Arena,
    /// Where the data of members asked to be retained goes (none: not kept).
    retained: Option<&'a RefCell<Retained>>,
}

impl<'a, F: Fetch + ?Sized> RangeSource<'a, F> {
    /// A source over `len` tar bytes at `base`, with `first` (the first
    /// bytes of the object, already fetched, maybe none) as its window.
    pub fn new(from: &'a F, base: u64, len: usize, first: &[u8]) -> RangeSource<'a, F> {
        let skip = (base as usize).min(first.len());
        let have = &first[skip..];
        let mut window = Rope::default();
        window.push(Bytes::copy_from_slice(&have[..have.len().min(len)]));
        RangeSource {
            from,
            base,
            len,
            window,
            next: WINDOW,
            ahead: None,
            span: 0,
            passed: 0,
            passed_bytes: 0,
            hopping: false,
            names: Arena::default(),
            retained: None,
        }
    }

    fn end(&self) -> usize {
        self.window.end()
    }

    /// [`Fetch::through_below`], or 0 when bytes are capped: a walk under
    /// a cap moves the fewest bytes (headers, in small windows) and fails
    /// only if they alone pass it.
    fn through(&self) -> u64 {
        if self.from.budget().is_some() || self.hopping {
            return 0;
        }
        self.from.through_below()
    }

    /// Counts a member whose data the walk passes, and judges whether
    /// the members passed so far cost less to hop over, one request each,
    /// than to read through ([`Fetch::hop_worth`], with [`HOP_BIAS`]),
    /// once [`JUDGED_AFTER`] have been.
    fn judge(&mut self, size: u64) {
        self.passed += 1;
        self.passed_bytes += size;
        if self.hopping || self.passed < JUDGED_AFTER {
            return;
        }
        let mean = self.passed_bytes / self.passed;
        let Some(worth) = self.from.hop_worth() else {
            return;
        };
        if mean.saturating_mul(HOP_BIAS) > worth {
            self.hopping = true;
            log::debug!(
                "ranged walk: {} members passed, {mean} bytes on average, a hop worth {worth}: hopping only",
                self.passed
            );
        }
    }

    /// Makes the window hold `off..off + len` (within the tar): read on
    /// through the read-ahead when the bytes before `off` cost less than a
    /// request, else a request at `off` for `len + more` bytes at least.
    fn cover(&mut self, off: usize, len: usize, more: usize) -> Result<()> {
        if self.window.holds(off, len) {
            return Ok(());
        }
        loop {
            let end = self.end();
            let through = self.through();
            let cheap = off >= self.window.at && (off.saturating_sub(end) as u64) <= through;
            if !(cheap && through > 0) {
                break;
            }
            if self.ahead.is_none() {
                // A span of twice a round trip's worth at first, four
                // times longer each time the walk reads on to its end (one
                // object alone on a fast link soon reads in long spans),
                // small again after a hop: bytes asked for ahead are
                // bytes moved whether the walk wants them or not.
                let need = (off + len).saturating_sub(end) as u64;
                let span = self.span.max(through * 2).max(need);
                let stop = (end as u64).saturating_add(span).min(self.len as u64);
                let first = through.clamp(MIN_PART, MAX_PART);
                let at = self.base + end as u64;
                self.ahead = Some(self.from.ahead(at..self.base + stop, first)?);
                self.span = span.saturating_mul(4);
            }
            if self.read_on(off, len)? {
                return Ok(());
            }
            // The span ended before `off + len`: decide again from there.
        }
        self.ahead = None;
        self.span = 0;
        self.hop(off, len, more)
    }

    /// Takes parts of the read-ahead until the window holds `off..off +
    /// len`, dropping the bytes before `off`; false when the read-ahead
    /// ended first (the window then ends where it did).
    fn read_on(&mut self, off: usize, len: usize) -> Result<bool> {
        while !self.window.holds(off, len) {
            let Some(ahead) = self.ahead.as_mut() else {
                break;
            };
            let Some(part) = ahead.next_part()? else {
                self.ahead = None;
                break;
            };
            for chunk in part {
                self.window.push(chunk);
            }
            // What the walk has gone past leaves (a part wholly before
            // `off` at once).
            self.window.drop_before(off);
        }
        Ok(self.window.holds(off, len))
    }

    /// One request at `off`: `len + more` bytes, or the growing window.
    fn hop(&mut self, off: usize, len: usize, more: usize) -> Result<()> {
        // Grown only when the walk read the whole window and goes on at
        // its end (small members); any skip over member data starts small.
        self.next = if off == self.end() {
            (self.next * 2).min(MAX_WINDOW)
        } else {
            WINDOW
        };
        // A quarter of a round trip's worth of bytes after the header costs
        // a quarter of a trip, and saves one when small members follow.
        let worth = (self.through() / 4).min(MAX_WINDOW as u64) as usize;
        let n = (len + more).max(self.next).max(worth).min(self.len - off);
        let at = self.base + off as u64;
        let got = self.from.fetch(at..at + n as u64)?;
        if got.len() != n {
            return Err(Error::Remote {
                reason: format!("{} bytes fetched of the {n} asked for", got.len()),
                io: std::io::ErrorKind::UnexpectedEof,
            });
        }
        self.window.clear_to(off);
        self.window.push(Bytes::from(got));
        Ok(())
    }
}

impl<F: Fetch + ?Sized> Source for RangeSource<'_, F> {
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        let len = len.min(self.len.saturating_sub(off));
        if len == 0 {
            return Ok(&[]);
        }
        self.cover(off, len, 0)?;
        Ok(self.window.slice(off, len))
    }
    fn data(&mut self, off: usize, size: u64, retain: bool) -> Result<Option<u64>> {
        if let Some(left) = data_in(self.len, off, size) {
            return Ok(Some(left));
        }
        if !retain && size > 0 && size <= MAX_PART {
            self.judge(size);
        }
        if let Some(kept) = self.retained.filter(|_| retain && size > 0) {
            let n = size as usize;
            if (self.from.budget().is_some() || self.hopping) && !self.window.holds(off, n) {
                // Bytes are counted, or a request costs less than reading
                // on: fetched when an accessor asks, not for a listing
                // that may never.
                return Ok(None);
            }
            // Read now (it will be), with the next header in the same
            // request when hopping.
            self.cover(off, n, WINDOW)?;
            let mut data = Vec::new();
            data.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
                what: "a member's data",
            })?;
            self.window.gather(off, n, &mut data);
            kept.borrow_mut().keep(off as u64, data.into_boxed_slice());
        }
        Ok(None)
    }
    names_in_arena!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::pack::{pack, PackEntry, PackOptions};
    use crate::tar::index::walk::headers;
    use crate::tar::index::SliceSource;
    use crate::tar::Index;
    use std::cell::RefCell;

    /// The walk over the headers `src` reads, keeping nothing.
    fn walked<S: Source>(src: S) -> Result<Index> {
        headers(src, &Limits::default(), &mut |_, _| false)
    }

    /// An object in memory that records each range fetched; it reads
    /// through skips shorter than `.2` bytes (0: always hops).
    struct Counted(Vec<u8>, RefCell<Vec<Range<u64>>>, u64);
    impl Counted {
        fn new(bytes: Vec<u8>, through: u64) -> Counted {
            Counted(bytes, RefCell::new(Vec::new()), through)
        }
        fn fetched(&self) -> u64 {
            self.1.borrow().iter().map(|r| r.end - r.start).sum()
        }
    }
    impl Fetch for Counted {
        fn fetch(&self, r: Range<u64>) -> Result<Vec<u8>> {
            self.1.borrow_mut().push(r.clone());
            Ok(self.0[r.start as usize..r.end as usize].to_vec())
        }
        fn through_below(&self) -> u64 {
            self.2
        }
    }

    fn raw(entries: &[PackEntry]) -> Vec<u8> {
        let opts = PackOptions {
            no_gzip: true,
            mtime: Some(0),
            ..Default::default()
        };
        pack(entries, &opts).unwrap()
    }

    /// `n` members named by `name` holding `data`, packed raw and walked
    /// by ranges from an empty first window: the index and the ranges
    /// fetched.
    fn walk(n: usize, name: &str, data: Vec<u8>) -> (Vec<u8>, Index, Vec<Range<u64>>) {
        let entries: Vec<PackEntry> = (0..n)
            .map(|i| PackEntry::file(&format!("sg00/{name}{i}"), data.clone(), 0))
            .collect();
        let neff = raw(&entries);
        let from = Counted::new(neff.clone(), 0);
        let mut src = RangeSource::new(&from, 1024, neff.len() - 1024, &[]);
        let got = walked(&mut src).unwrap();
        drop(src);
        assert_eq!(got.entries.len(), n);
        (neff, got, from.1.into_inner())
    }

    /// The window of chunks reads, gathers and drops as one slice would,
    /// whatever the chunk sizes (empty ones too) and wherever a read
    /// starts: forwards, backwards, across several chunks.
    #[test]
    fn a_window_of_chunks_reads_as_one_slice_would() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for sizes in [
            vec![5000],
            vec![1, 0, 511, 512, 1, 3975],
            vec![13; 385],
            vec![4096, 904],
        ] {
            let mut rope = Rope::default();
            rope.clear_to(100);
            let mut at = 0;
            for &n in &sizes {
                let n = n.min(bytes.len() - at);
                rope.push(Bytes::copy_from_slice(&bytes[at..at + n]));
                at += n;
            }
            rope.push(Bytes::copy_from_slice(&bytes[at..]));
            assert_eq!((rope.at, rope.end()), (100, 5100));
            for (off, len) in [
                (0, 5000),
                (4999, 1),
                (510, 3),
                (0, 1),
                (1, 1024),
                (2000, 700),
                (12, 13),
            ] {
                assert!(rope.holds(100 + off, len));
                assert_eq!(
                    rope.slice(100 + off, len),
                    &bytes[off..off + len],
                    "{sizes:?} {off}+{len}"
                );
                let mut g = Vec::new();
                rope.gather(100 + off, len, &mut g);
                assert_eq!(g, &bytes[off..off + len]);
            }
            assert!(!rope.holds(99, 1) && !rope.holds(5100, 1));
            rope.drop_before(100 + 1234);
            assert_eq!((rope.at, rope.end()), (1334, 5100));
            assert_eq!(rope.slice(1334, 3766), &bytes[1234..]);
            assert!(!rope.holds(1333, 1));
            rope.drop_before(9999);
            assert_eq!((rope.at, rope.end(), rope.chunks.len()), (5100, 5100, 0));
        }
    }

    #[test]
    fn a_walk_by_ranges_indexes_as_the_walk_in_memory_does_and_skips_large_members() {
        let entries: Vec<PackEntry> = (0..6)
            .map(|i| PackEntry::file(&format!("sg00/m{i}.bin"), vec![i as u8; 3 << 20], 0))
            .collect();
        let neff = raw(&entries);
        let tar = &neff[1024..];
        let want = walked(SliceSource(tar)).unwrap();
        let from = Counted::new(neff.clone(), 0);
        let mut src = RangeSource::new(&from, 1024, tar.len(), &neff[..4096]);
        let got = walked(&mut src).unwrap();
        drop(src);
        assert_eq!(got.entries.len(), want.entries.len());
        for (a, b) in got.entries.iter().zip(&want.entries) {
            assert_eq!((a.offset, a.size), (b.offset, b.size));
            assert_eq!(got.resolve(&a.name, &[]), want.resolve(&b.name, tar));
        }
        let fetched = from.fetched();
        assert!(fetched < (WINDOW as u64) * 8, "fetched {fetched} bytes");
    }

    /// The walk of `neff`'s tar by ranges from `from` (first window: the
    /// header), checked against the walk in memory; the JSON members'
    /// data as kept.
    fn walked_as_in_memory(neff: &[u8], from: &Counted) -> (Index, Retained) {
        let tar = &neff[1024..];
        let want = walked(SliceSource(tar)).unwrap();
        struct Json;
        impl Keep for Json {
            fn offer(
                &mut self,
                _: &crate::tar::Entry,
                name: &[u8],
                _: &mut dyn FnMut(u64),
            ) -> bool {
                name.ends_with(b".json")
            }
        }
        let (got, kept) = super::walk(
            from,
            1024,
            tar.len(),
            &neff[..1024],
            &mut Json,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(got.entries.len(), want.entries.len());
        for (a, b) in got.entries.iter().zip(&want.entries) {
            assert_eq!((a.offset, a.size), (b.offset, b.size));
            assert_eq!(got.resolve(&a.name, &[]), want.resolve(&b.name, tar));
            if got.resolve(&a.name, &[]).ends_with(b".json") {
                let data = &tar[a.offset as usize..(a.offset + a.size) as usize];
                assert_eq!(kept.get(a.offset), Some(data));
            } else {
                assert_eq!(kept.get(a.offset), None);
            }
        }
        (got, kept)
    }

    #[test]
    fn skips_shorter_than_a_round_trip_are_read_through_in_a_few_growing_parts() {
        // 300 members of 20 KiB, 6 MiB of tar: hopping would be 300 requests.
        let entries: Vec<PackEntry> = (0..300)
            .map(|i| PackEntry::file(&format!("sg00/w{i}.bin"), vec![i as u8; 20 << 10], 0))
            .collect();
        let neff = raw(&entries);
        let from = Counted::new(neff.clone(), 256 << 10);
        walked_as_in_memory(&neff, &from);
        let ranges = from.1.borrow();
        // Spans of 512 KiB, 2 MiB, 8 MiB, in parts growing from 256 KiB.
        assert!(ranges.len() <= 12, "{} requests: {ranges:?}", ranges.len());
        // Contiguous, in order: read on, never fetched twice.
        for w in ranges.windows(2) {
            assert_eq!(w[0].end, w[1].start, "{ranges:?}");
        }
    }

    #[test]
    fn a_member_longer_than_a_round_trip_is_hopped_over_and_small_ones_read_through() {
        // Small programs and JSON between 4 MiB weights.
        let mut entries = Vec::new();
        for i in 0..10 {
            entries.push(PackEntry::file(
                &format!("sg00/p{i}.json"),
                vec![b' '; 3000],
                0,
            ));
            entries.push(PackEntry::file(
                &format!("sg00/q{i}.bin"),
                vec![1u8; 5000],
                0,
            ));
            entries.push(PackEntry::file(
                &format!("sg00/w{i}.bin"),
                vec![2u8; 4 << 20],
                0,
            ));
        }
        let neff = raw(&entries);
        let from = Counted::new(neff.clone(), 64 << 10);
        walked_as_in_memory(&neff, &from);
        let fetched = from.fetched();
        assert!(
            fetched * 20 < neff.len() as u64,
            "fetched {fetched} of {}",
            neff.len()
        );
        // One request after each weight (a round trip's worth of bytes: the
        // small members and the next weight's header), not one per member.
        let n = from.1.borrow().len();
        assert!(n <= 11, "{n} requests: {:?}", from.1.borrow());
    }

    #[test]
    fn kept_json_is_fetched_with_the_header_after_it_when_hopping() {
        let mut entries = Vec::new();
        for i in 0..5 {
            entries.push(PackEntry::file(
                &format!("sg00/w{i}.bin"),
                vec![2u8; 1 << 20],
                0,
            ));
            entries.push(PackEntry::file(
                &format!("sg0{i}/def.json"),
                vec![b'x'; 40 << 10],
                0,
            ));
        }
        let neff = raw(&entries);
        let from = Counted::new(neff.clone(), 0);
        walked_as_in_memory(&neff, &from);
        // Two requests per weight hopped over (always hopping: its header,
        // then the JSON after it with the next header), none later.
        let n = from.1.borrow().len();
        assert!(n <= 11, "{n} requests: {:?}", from.1.borrow());
    }

    #[test]
    fn under_a_cap_on_bytes_the_walk_hops_in_small_windows_and_keeps_nothing_extra() {
        struct Capped(Counted);
        impl Fetch for Capped {
            fn fetch(&self, r: Range<u64>) -> Result<Vec<u8>> {
                self.0.fetch(r)
            }
            fn through_below(&self) -> u64 {
                1 << 30
            }
            fn budget(&self) -> Option<u64> {
                Some(1 << 20)
            }
        }
        let mut entries = Vec::new();
        for i in 0..40 {
            entries.push(PackEntry::file(
                &format!("sg{i:02}/def.json"),
                vec![b'x'; 30 << 10],
                0,
            ));
            entries.push(PackEntry::file(
                &format!("sg{i:02}/w.bin"),
                vec![3u8; 100 << 10],
                0,
            ));
        }
        let neff = raw(&entries);
        let from = Capped(Counted::new(neff.clone(), 0));
        let tar = &neff[1024..];
        let json =
            |_: &crate::tar::Entry, name: &[u8], _: &mut dyn FnMut(u64)| name.ends_with(b".json");
        struct Json<F>(F);
        impl<F: FnMut(&crate::tar::Entry, &[u8], &mut dyn FnMut(u64)) -> bool> Keep for Json<F> {
            fn offer(
                &mut self,
                e: &crate::tar::Entry,
                name: &[u8],
                r: &mut dyn FnMut(u64),
            ) -> bool {
                (self.0)(e, name, r)
            }
        }
        let (got, kept) = super::walk(
            &from,
            1024,
            tar.len(),
            &[],
            &mut Json(json),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(got.entries.len(), 80);
        // Headers only, a small window each: no read-ahead, no JSON.
        let ranges = from.0 .1.borrow();
        assert!(
            ranges.iter().all(|r| r.end - r.start <= 2 * WINDOW as u64),
            "{ranges:?}"
        );
        assert!(from.0.fetched() * 20 < tar.len() as u64);
        assert!(got.entries.iter().all(|e| kept.get(e.offset).is_none()));
    }

    #[test]
    fn an_object_alone_whose_members_average_more_than_a_hop_is_walked_by_hops_only() {
        // 200 members of 200 KiB: a round trip's worth (1 MiB) is more
        // than each, so the walk alone reads through them all; a hop that
        // costs 64 KiB of reading on (loopback: a quick request, a fast
        // read-ahead) makes hopping over every one cheaper.
        struct Alone(Counted, Option<u64>);
        impl Fetch for Alone {
            fn fetch(&self, r: Range<u64>) -> Result<Vec<u8>> {
                self.0.fetch(r)
            }
            fn through_below(&self) -> u64 {
                self.0 .2
            }
            fn hop_worth(&self) -> Option<u64> {
                self.1
            }
        }
        let entries: Vec<PackEntry> = (0..200)
            .map(|i| PackEntry::file(&format!("sg00/w{i}.bin"), vec![i as u8; 200 << 10], 0))
            .collect();
        let neff = raw(&entries);
        let walk_with = |worth| {
            let from = Alone(Counted::new(neff.clone(), 1 << 20), worth);
            let mut src = RangeSource::new(&from, 1024, neff.len() - 1024, &[]);
            let got = walked(&mut src).unwrap();
            drop(src);
            assert_eq!(got.entries.len(), 200);
            let requests = from.0 .1.borrow().len();
            (from.0.fetched(), requests)
        };
        let len = neff.len() as u64;
        // Not known (other objects open): read through, a few requests.
        let (through, n) = walk_with(None);
        assert!(through * 10 > len * 9, "fetched {through} of {len}");
        assert!(n <= 20, "{n} requests");
        // Members average less than a hop's worth: read through still.
        assert_eq!(walk_with(Some(1 << 20)).0, through);
        // More: after the first few, a small window per member.
        let (hopped, n) = walk_with(Some(64 << 10));
        assert!(hopped * 20 < len, "fetched {hopped} of {len}");
        assert!((190..=205).contains(&n), "{n} requests");
    }

    #[test]
    fn listing_members_of_a_few_hundred_kib_fetches_under_one_percent() {
        // The shape of a compile cache's big NEFF (members of ~300 KiB):
        // one window a member, so the window after a skip sets the share.
        let (neff, _, ranges) = walk(300, "w", vec![0; 256 << 10]);
        let fetched: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert!(
            fetched * 100 <= neff.len() as u64,
            "fetched {fetched} of {} bytes",
            neff.len()
        );
    }

    #[test]
    fn many_small_members_are_read_in_growing_windows() {
        // 4 MB of tar: 2 KiB, 4 KiB, ... a dozen requests, not 1,000.
        let (_, _, ranges) = walk(4000, "s", vec![b' '; 100]);
        assert!(ranges.len() <= 12, "{} requests", ranges.len());
    }

    #[test]
    fn a_fetch_that_comes_back_short_is_an_error_not_a_short_read() {
        struct Short;
        impl Fetch for Short {
            fn fetch(&self, _: Range<u64>) -> Result<Vec<u8>> {
                Ok(vec![0; 10])
            }
        }
        let mut src = RangeSource::new(&Short, 0, 1 << 20, &[]);
        let e = walked(&mut src).unwrap_err();
        drop(src);
        assert!(e.to_string().contains("fetched"), "{e}");
    }
}
