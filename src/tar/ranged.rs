//! A raw tar read by ranges from somewhere slow (a remote object): the walk
//! fetches windows around the headers it reads, never member data.
//!
//! A window starts at [`WINDOW`] bytes and doubles (up to [`MAX_WINDOW`])
//! while the walk reads on exactly from its end (an archive of many small
//! members is then read in a few large requests); after a skip over member
//! data it starts small again, so that listing an archive of large members
//! reads little more than its headers. Names are copied into
//! an arena, as [`FileSource`](super::FileSource) keeps them.

use std::ops::Range;

use super::index::{data_in, Arena, Name, Source};
use crate::error::Result;

/// Bytes by range: exactly the bytes of `range`, or an error.
pub trait Fetch {
    /// The bytes at `range` of the underlying object.
    fn fetch(&self, range: Range<u64>) -> Result<Vec<u8>>;
}

/// The first window after a jump: a header and one more block (a PAX
/// record block or a long name, then the header they describe, usually
/// fit), so that listing an archive of large members fetches about 2 KiB a
/// member; more is fetched, doubling, only while the walk reads on.
pub const WINDOW: usize = 2 << 10;
/// The largest window.
pub const MAX_WINDOW: usize = 8 << 20;

/// Walks the `len` tar bytes that start `base` bytes into what `F` fetches.
pub struct RangeSource<'a, F: Fetch + ?Sized> {
    from: &'a F,
    base: u64,
    len: usize,
    window: Vec<u8>,
    window_at: usize,
    next: usize,
    names: Arena,
}

impl<'a, F: Fetch + ?Sized> RangeSource<'a, F> {
    /// A source over `len` tar bytes at `base`, with `first` (the first
    /// bytes of the object, already fetched, maybe none) as its window.
    pub fn new(from: &'a F, base: u64, len: usize, first: &[u8]) -> RangeSource<'a, F> {
        let skip = (base as usize).min(first.len());
        let have = &first[skip..];
        RangeSource {
            from,
            base,
            len,
            window: have[..have.len().min(len)].to_vec(),
            window_at: 0,
            next: WINDOW,
            names: Arena::default(),
        }
    }
}

impl<F: Fetch + ?Sized> Source for RangeSource<'_, F> {
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8]> {
        let len = len.min(self.len.saturating_sub(off));
        if len == 0 {
            return Ok(&[]);
        }
        let end = self.window_at + self.window.len();
        if off < self.window_at || off + len > end {
            // Grown only when the walk read the whole window and goes on at
            // its end (small members); any skip over member data starts small.
            self.next = if off == end {
                (self.next * 2).min(MAX_WINDOW)
            } else {
                WINDOW
            };
            let n = len.max(self.next).min(self.len - off);
            let at = self.base + off as u64;
            self.window = self.from.fetch(at..at + n as u64)?;
            if self.window.len() != n {
                return Err(crate::error::Error::Remote {
                    reason: format!("{} bytes fetched of the {n} asked for", self.window.len()),
                    io: std::io::ErrorKind::UnexpectedEof,
                });
            }
            self.window_at = off;
        }
        let at = off - self.window_at;
        Ok(&self.window[at..at + len])
    }
    fn data(&mut self, off: usize, size: u64, _: bool) -> Result<Option<u64>> {
        Ok(data_in(self.len, off, size))
    }
    fn keep(&mut self, _: Range<usize>, bytes: &[u8]) -> Name {
        self.names.keep(bytes)
    }
    fn name<'s>(&'s self, name: &'s Name) -> &'s [u8] {
        self.names.name(name)
    }
    fn take_names(&mut self) -> Vec<u8> {
        self.names.take()
    }
    fn held(&self) -> usize {
        self.names.held()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::pack::{pack, PackEntry, PackOptions};
    use crate::tar::Index;
    use std::cell::RefCell;

    struct Counted(Vec<u8>, RefCell<Vec<Range<u64>>>);
    impl Fetch for Counted {
        fn fetch(&self, r: Range<u64>) -> Result<Vec<u8>> {
            self.1.borrow_mut().push(r.clone());
            Ok(self.0[r.start as usize..r.end as usize].to_vec())
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
        let from = Counted(neff.clone(), RefCell::new(Vec::new()));
        let mut src = RangeSource::new(&from, 1024, neff.len() - 1024, &[]);
        let got = Index::build_from(&mut src, &Limits::default()).unwrap();
        assert_eq!(got.entries.len(), n);
        (neff, got, from.1.into_inner())
    }

    #[test]
    fn a_walk_by_ranges_indexes_as_the_walk_in_memory_does_and_skips_large_members() {
        let entries: Vec<PackEntry> = (0..6)
            .map(|i| PackEntry::file(&format!("sg00/m{i}.bin"), vec![i as u8; 3 << 20], 0))
            .collect();
        let neff = raw(&entries);
        let tar = &neff[1024..];
        let want = Index::build(tar, &Limits::default()).unwrap();
        let from = Counted(neff.clone(), RefCell::new(Vec::new()));
        let mut src = RangeSource::new(&from, 1024, tar.len(), &neff[..4096]);
        let got = Index::build_from(&mut src, &Limits::default()).unwrap();
        assert_eq!(got.entries.len(), want.entries.len());
        for (a, b) in got.entries.iter().zip(&want.entries) {
            assert_eq!((a.offset, a.size), (b.offset, b.size));
            assert_eq!(got.resolve(&a.name, &[]), want.resolve(&b.name, tar));
        }
        let fetched: u64 = from.1.borrow().iter().map(|r| r.end - r.start).sum();
        assert!(fetched < (WINDOW as u64) * 8, "fetched {fetched} bytes");
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
        let e = Index::build_from(&mut src, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("fetched"), "{e}");
    }
}
