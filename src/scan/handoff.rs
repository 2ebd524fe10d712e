//! How a streamed walk's finds reach the readers: in batches through a
//! queue of bounded length, each batch as long as about a millisecond of
//! the readers' work, so that cheap reads (a warm rescan, answered from
//! the catalogue in tens of microseconds) do not pay a hand-off each and
//! costly ones (a NEFF read and inflated) are not held behind each other.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The most finds in one batch.
pub(super) const MOST: usize = 64;

/// The readers' work a batch is sized to: small beside a hand-off's cost
/// (a few microseconds, when a reader waits), and the most one reader can
/// be left with while the others have nothing (the last batches).
const BATCH_WORK: Duration = Duration::from_millis(1);

/// The longest a find waits in a batch that is not full: a slow walk's
/// finds still reach idle readers soon.
const HOLD: Duration = Duration::from_millis(2);

/// How long a walk whose queue is full waits before it looks again.
const FULL_WAIT: Duration = Duration::from_millis(1);

/// The walk's end of the queue to its readers (the queue ends when it is
/// dropped), and the readers' pace.
pub(super) struct Handoff<'p, T> {
    tx: mpsc::SyncSender<Vec<T>>,
    pace: &'p Pace,
    /// The most finds queued and not yet taken by a reader.
    ahead: usize,
}

/// What the readers tell the walk: what one find has cost them lately,
/// how many finds are queued, and whether they have stopped.
#[derive(Default)]
pub(super) struct Pace {
    /// In nanoseconds: a running mean, 0 until a read has been timed.
    per_find: AtomicU64,
    queued: AtomicUsize,
    stopped: AtomicBool,
}

impl<'p, T> Handoff<'p, T> {
    /// A queue of at most `ahead` finds (in batches of at most [`MOST`])
    /// sized by `pace`, and the end the readers take batches from.
    pub(super) fn new(ahead: usize, pace: &'p Pace) -> (Handoff<'p, T>, mpsc::Receiver<Vec<T>>) {
        let ahead = ahead.max(1);
        let (tx, rx) = mpsc::sync_channel(ahead);
        (Handoff { tx, pace, ahead }, rx)
    }

    /// Waits until `n` more finds fit in the queue (or it is empty, or the
    /// readers have stopped), and counts them in.
    fn room_for(&self, n: usize) {
        let p = self.pace;
        loop {
            let q = p.queued.load(Ordering::Acquire);
            if q == 0 || q + n <= self.ahead || p.stopped.load(Ordering::Acquire) {
                break;
            }
            std::thread::sleep(FULL_WAIT);
        }
        p.queued.fetch_add(n, Ordering::AcqRel);
    }

    /// How many finds a batch holds now: one until a read has been timed,
    /// else about [`BATCH_WORK`] of reading, between 1 and [`MOST`].
    fn batch_len(&self) -> usize {
        self.pace.batch_len()
    }

    /// A batch a walk's thread fills and hands on.
    pub(super) fn batch(&self) -> Batch<'_, 'p, T> {
        Batch {
            to: self,
            finds: Vec::new(),
            since: None,
        }
    }
}

impl Pace {
    /// Notes that a reader took a batch of `n` finds off the queue.
    pub(super) fn taken(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::AcqRel);
    }

    /// Notes that the readers have stopped (a walk waiting for room goes on
    /// to find its sends refused).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// Notes what one find cost a reader.
    pub(super) fn took(&self, work: Duration) {
        let ns = u64::try_from(work.as_nanos()).unwrap_or(u64::MAX).max(1);
        let was = self.per_find.load(Ordering::Relaxed);
        // Racing readers may lose each other's notes: a pace, not a count.
        let now = match was {
            0 => ns,
            _ => was - was / 8 + ns / 8,
        };
        self.per_find.store(now.max(1), Ordering::Relaxed);
    }

    fn batch_len(&self) -> usize {
        match self.per_find.load(Ordering::Relaxed) {
            0 => 1,
            ns => {
                let n = BATCH_WORK.as_nanos() as u64 / ns;
                n.clamp(1, MOST as u64) as usize
            }
        }
    }
}

/// The finds one thread of a walk has yet to hand on; handed on when full,
/// when its first find has waited [`HOLD`], and when dropped.
pub(super) struct Batch<'h, 'p, T> {
    to: &'h Handoff<'p, T>,
    finds: Vec<T>,
    since: Option<Instant>,
}

impl<T> Batch<'_, '_, T> {
    /// Adds a find, handing the batch on when it is due.
    pub(super) fn push(&mut self, find: T) {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.finds.push(find);
        if self.finds.len() >= self.to.batch_len() || since.elapsed() >= HOLD {
            self.hand_on();
        }
    }

    fn hand_on(&mut self) {
        self.since = None;
        if !self.finds.is_empty() {
            self.to.room_for(self.finds.len());
            // The readers gone (they stopped): nothing to do.
            let _ = self.to.tx.send(std::mem::take(&mut self.finds));
        }
    }
}

impl<T> Drop for Batch<'_, '_, T> {
    fn drop(&mut self) {
        self.hand_on();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_the_readers_pace_and_a_dropped_one_is_handed_on() {
        let pace = Pace::default();
        let (h, rx) = Handoff::<u32>::new(1024, &pace);
        // Nothing timed yet: one find a batch.
        let mut b = h.batch();
        b.push(1);
        assert_eq!(rx.try_recv().unwrap(), vec![1]);
        // Reads of 10 µs: batches of 64 (1 ms would be 100).
        pace.took(Duration::from_micros(10));
        assert_eq!(h.batch_len(), MOST);
        // Reads of 250 µs: batches of 4; then of 50 ms: of 1.
        let slow = Pace::default();
        slow.took(Duration::from_micros(250));
        assert_eq!(slow.batch_len(), 4);
        slow.took(Duration::from_millis(50));
        assert_eq!(slow.batch_len(), 1);
        // A batch not full is handed on when dropped.
        b.push(2);
        b.push(3);
        assert!(rx.try_recv().is_err());
        drop(b);
        assert_eq!(rx.try_recv().unwrap(), vec![2, 3]);
        // The queue ends when the walk's end is dropped.
        drop(h);
        assert!(rx.recv().is_err());
    }

    #[test]
    fn the_queue_holds_no_more_finds_than_asked_until_readers_take_some() {
        let pace = Pace::default();
        pace.took(Duration::from_micros(1));
        let (h, rx) = Handoff::<u32>::new(100, &pace);
        let sent = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut b = h.batch();
                for i in 0..1000 {
                    b.push(i);
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            });
            std::thread::sleep(Duration::from_millis(50));
            // 100 queued, and at most a batch more on the walk's side.
            let ahead = sent.load(Ordering::SeqCst);
            assert!((100..=100 + MOST).contains(&ahead), "{ahead} sent");
            let mut got = 0;
            while got < 1000 {
                let batch = rx.recv().unwrap();
                pace.taken(batch.len());
                got += batch.len();
            }
        });
        // Readers that stop (and are gone) leave no walk waiting for room.
        let stopped = Pace::default();
        let (h, rx) = Handoff::<u32>::new(1, &stopped);
        stopped.stop();
        drop(rx);
        let mut b = h.batch();
        b.push(1);
        b.push(2);
        b.push(3);
    }

    #[test]
    fn a_find_waits_no_longer_than_the_hold() {
        let pace = Pace::default();
        let (h, rx) = Handoff::<u32>::new(1024, &pace);
        pace.took(Duration::from_micros(1));
        let mut b = h.batch();
        b.push(1);
        std::thread::sleep(HOLD + Duration::from_millis(1));
        b.push(2);
        assert_eq!(rx.try_recv().unwrap(), vec![1, 2]);
    }
}
