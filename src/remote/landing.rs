//! A remote object spooled to a temporary file while the file's map is
//! read: the parts land in the file as they arrive, several in flight, and
//! a reader of the map waits ([`Landing::wait`]) for each range before it
//! reads it. A large gzip payload so feeds parallel inflation as it
//! downloads, not after.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;

use super::ahead;
use super::failure::remote;
use super::object::{spool_file, Miss, Object, PART};
use super::store::runtime;
use crate::error::{Error, Result};

/// Which bytes of a spool have landed: the first bytes (held before the
/// spool began) and, of each part after them, how many from its start.
#[derive(Debug)]
pub struct Landing {
    /// Where the first part starts: every byte before it has landed.
    start: u64,
    /// The object's size, and its parts after `start`.
    size: u64,
    parts: usize,
    state: Mutex<Landed>,
    landed: Condvar,
    /// The reader failed: the download stops.
    stop: AtomicBool,
    /// The download stopped because the reader failed (its error is then
    /// the reader's, not the download's).
    stopped: AtomicBool,
}

#[derive(Debug)]
struct Landed {
    /// Bytes in place from the start of each part begun (not sized from
    /// the size the server claims: a part is begun as its bytes come).
    filled: BTreeMap<usize, u64>,
    /// The download failed or stopped: what has not landed never will.
    over: bool,
}

impl Landing {
    fn new(start: u64, size: u64) -> Landing {
        let parts =
            usize::try_from(size.saturating_sub(start).div_ceil(PART)).unwrap_or(usize::MAX);
        Landing {
            start,
            size,
            parts,
            state: Mutex::new(Landed {
                filled: BTreeMap::new(),
                over: false,
            }),
            landed: Condvar::new(),
            stop: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        }
    }

    /// Part `i`'s range of the object.
    fn part(&self, i: usize) -> Range<u64> {
        let at = self.start + i as u64 * PART;
        at..(at + PART).min(self.size)
    }

    /// Returns once the object's bytes `range` are in the spool's file, or
    /// fails when the download ended without them (the reader's error is
    /// then the download's own, which [`Object::spool_landing`] returns).
    pub fn wait(&self, range: Range<u64>) -> std::io::Result<()> {
        let range = range.start.max(self.start)..range.end.min(self.size);
        if range.start >= range.end {
            return Ok(());
        }
        let first = ((range.start - self.start) / PART) as usize;
        let last = ((range.end - 1 - self.start) / PART) as usize;
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let missing = (first..=last).any(|i| {
                let part = self.part(i);
                part.start + s.filled_of(i) < range.end.min(part.end)
            });
            if !missing {
                return Ok(());
            }
            if s.over {
                return Err(std::io::Error::other("the object's download stopped"));
            }
            s = self.landed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// `n` more bytes of part `i` are in the file.
    fn filled(&self, i: usize, n: u64) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *s.filled.entry(i).or_default() += n;
        drop(s);
        self.landed.notify_all();
    }

    /// The download is over: waiters for what never landed are told.
    fn over(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.over = true;
        drop(s);
        self.landed.notify_all();
    }

    /// Bytes of part `i` already in place.
    fn filled_of(&self, i: usize) -> u64 {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.filled_of(i)
    }
}

impl Landed {
    fn filled_of(&self, i: usize) -> u64 {
        self.filled.get(&i).copied().unwrap_or(0)
    }
}

impl Object {
    /// Spools the whole object into an unlinked temporary file while `read`
    /// reads the file (what [`spool`](Self::spool) does with a `read` that
    /// only takes the file): `read`
    /// gets the file (sized to the object, its first bytes written) at
    /// once, and must [`wait`](Landing::wait) for each range before it
    /// reads it. The parts are asked for in order, the last one first (a
    /// gzip trailer is read before the rest), the object's share of
    /// `--io-depth` in flight, each pinned to the ETag. When `read`
    /// returns, the download is stopped (if `read` failed) or waited for;
    /// a failed download is the error, whatever `read` said of it.
    pub fn spool_landing<T>(
        &self,
        first: &[u8],
        read: impl FnOnce(File, &Landing) -> Result<T>,
    ) -> Result<T> {
        if let Some(whole) = self.whole.get() {
            // The server ignored a Range before: the object is whole on
            // disk already, every byte landed.
            return read(
                whole.try_clone()?,
                &Landing::new(self.pin.size, self.pin.size),
            );
        }
        let file = spool_file()?;
        file.set_len(self.pin.size)?;
        file.write_all_at(first, 0)?;
        let start = first.len() as u64;
        self.check_range(&(start..self.pin.size))?;
        self.charge(self.pin.size - start)?;
        let landing = Landing::new(start, self.pin.size);
        let reader_file = file.try_clone()?;
        std::thread::scope(|scope| {
            let download = scope.spawn(|| {
                let got = self.land(&file, &landing);
                landing.over();
                got
            });
            let read = read(reader_file, &landing);
            if read.is_err() {
                landing.stop.store(true, Ordering::Relaxed);
            }
            let downloaded = download
                .join()
                .unwrap_or_else(|_| Err(remote("the download's thread panicked")));
            match (read, downloaded) {
                (Ok(v), Ok(())) => Ok(v),
                (Err(e), Err(_)) if landing.stopped.load(Ordering::Relaxed) => Err(e),
                (_, Err(e)) => Err(e),
                (Err(e), Ok(())) => Err(e),
            }
        })
    }

    /// Fetches every part of the spool into `file`, telling `landing` of
    /// each chunk written.
    fn land(&self, file: &File, landing: &Landing) -> Result<()> {
        let parts = landing.parts;
        if parts == 0 {
            return Ok(());
        }
        let order = std::iter::once(parts - 1).chain(0..parts - 1);
        let _alive = ahead::alive();
        let fetches = order.map(|i| {
            let part = landing.part(i);
            async move {
                let mut pos = part.start;
                self.pin
                    .get(part, &mut |c: Bytes| {
                        if landing.stop.load(Ordering::Relaxed) {
                            landing.stopped.store(true, Ordering::Relaxed);
                            return Err(remote("the spool's reader stopped"));
                        }
                        file.write_all_at(&c, pos).map_err(Error::Io)?;
                        pos += c.len() as u64;
                        landing.filled(i, c.len() as u64);
                        Ok(())
                    })
                    .await
            }
        });
        let got = runtime()?.block_on(async {
            let mut fetches = futures_util::stream::iter(fetches).buffer_unordered(ahead::depth());
            while let Some(r) = fetches.next().await {
                r?;
            }
            Ok::<(), Miss>(())
        });
        match got {
            Ok(()) => Ok(()),
            Err(Miss::Failed(e)) => Err(e),
            Err(Miss::IgnoredRange) => {
                // The server answered a part with the whole object: that
                // copy (one GET, kept by the object) fills the spool.
                let whole = self.whole()?;
                let mut buf = vec![0u8; 1 << 20];
                for i in 0..parts {
                    let part = landing.part(i);
                    let mut at = part.start + landing.filled_of(i);
                    while at < part.end {
                        let n = buf.len().min((part.end - at) as usize);
                        whole.read_exact_at(&mut buf[..n], at)?;
                        file.write_all_at(&buf[..n], at)?;
                        landing.filled(i, n as u64);
                        at += n as u64;
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_returns_once_its_range_has_landed_in_every_part_it_spans() {
        let l = Landing::new(100, 100 + 2 * PART + 5);
        // The first bytes, held before the spool, have landed.
        l.wait(0..100).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| l.wait(150..100 + PART + 10));
            l.filled(0, 60);
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished(), "returned before part 0 landed");
            l.filled(0, PART - 60);
            l.filled(1, 9);
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished(), "returned before part 1's 10th byte");
            l.filled(1, 1);
            waiter.join().unwrap().unwrap();
        });
        // The last part, short: its 5 bytes.
        l.filled(2, 5);
        l.wait(100 + 2 * PART..100 + 2 * PART + 5).unwrap();
        // A download that ends without part 1's rest fails its waiters,
        // and every later wait for it.
        std::thread::scope(|s| {
            let waiter = s.spawn(|| l.wait(100 + PART..100 + 2 * PART));
            std::thread::sleep(std::time::Duration::from_millis(20));
            l.over();
            assert!(waiter.join().unwrap().is_err());
        });
        assert!(l.wait(100 + PART + 20..100 + PART + 30).is_err());
        l.wait(100 + PART..100 + PART + 10).unwrap();
    }
}
