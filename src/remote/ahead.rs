//! A read-ahead over one object: the parts of a range fetched by ranged
//! GETs with several in flight (pinned to the ETag), handed to the
//! caller's thread in order through a channel of one. Dropping it cancels
//! the requests still in flight.
//!
//! Memory: at most `depth` parts in flight and one waiting, each at most
//! 8 MiB (the tar walk's largest part); `depth` is the object's share of
//! `--io-depth` among the read-aheads alive ([`depth`]), so that all of
//! them together hold about `--io-depth` parts.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;

use super::{read_local, runtime, Miss, Object, Pinned};
use crate::error::{Error, Result};
use crate::tar::{Ahead, Parts};

/// Read-aheads alive in the process.
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// Parts in flight for one more read-ahead: its share of the process's
/// I/O depth, between 1 and 8.
fn depth() -> usize {
    let alive = ALIVE.load(Ordering::Relaxed) + 1;
    (crate::pool::io_depth() / alive).clamp(1, 8)
}

/// The read-ahead of [`Object`]'s [`Fetch::ahead`](crate::tar::Fetch::ahead).
pub(crate) struct ReadAhead<'o> {
    object: &'o Object,
    /// The parts not yet handed on, in order (the task's, mirrored).
    parts: VecDeque<Range<u64>>,
    rx: tokio::sync::mpsc::Receiver<std::result::Result<Vec<u8>, Miss>>,
    task: tokio::task::JoinHandle<()>,
    /// Once the server ignored a Range: the rest comes from the whole copy.
    local: bool,
}

impl<'o> ReadAhead<'o> {
    /// Starts fetching the parts of `range` (the first `first` bytes long).
    pub(crate) fn start(object: &'o Object, range: Range<u64>, first: u64) -> Result<Self> {
        let parts: VecDeque<Range<u64>> = Parts::new(range, first).collect();
        if object.whole.get().is_some() {
            // The server ignores Range: every part from the whole copy.
            ALIVE.fetch_add(1, Ordering::Relaxed);
            return Ok(ReadAhead {
                object,
                parts,
                rx: tokio::sync::mpsc::channel(1).1,
                task: runtime()?.spawn(async {}),
                local: true,
            });
        }
        let depth = depth();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let pin: Pinned = object.pin.clone();
        let todo: Vec<Range<u64>> = parts.iter().cloned().collect();
        log::debug!(
            "{}: reading ahead {} parts from byte {}, {depth} in flight",
            object.pin.url,
            todo.len(),
            todo.first().map_or(0, |r| r.start)
        );
        let task = runtime()?.spawn(async move {
            let pin = &pin;
            let fetches = futures_util::stream::iter(todo).map(|r| async move {
                let mut held = Vec::with_capacity((r.end - r.start) as usize);
                pin.get(r, &mut |c| {
                    held.extend_from_slice(c);
                    Ok(())
                })
                .await
                .map(|()| held)
            });
            let mut fetches = std::pin::pin!(fetches.buffered(depth));
            while let Some(part) = fetches.next().await {
                let failed = part.is_err();
                if tx.send(part).await.is_err() || failed {
                    break;
                }
            }
        });
        ALIVE.fetch_add(1, Ordering::Relaxed);
        Ok(ReadAhead {
            object,
            parts,
            rx,
            task,
            local: false,
        })
    }
}

impl Ahead for ReadAhead<'_> {
    fn next_part(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(range) = self.parts.pop_front() else {
            return Ok(None);
        };
        self.object.charge(range.end - range.start)?;
        if !self.local {
            let got = runtime()?.block_on(self.rx.recv());
            match got {
                Some(Ok(part)) => return Ok(Some(part)),
                Some(Err(Miss::Failed(e))) => return Err(e),
                Some(Err(Miss::IgnoredRange)) => {
                    self.task.abort();
                    self.local = true;
                }
                None => {
                    return Err(Error::Remote {
                        reason: "the read-ahead ended before its range".into(),
                        io: std::io::ErrorKind::UnexpectedEof,
                    })
                }
            }
        }
        let mut part = Vec::with_capacity((range.end - range.start) as usize);
        read_local(self.object.whole()?, range, &mut |c| {
            part.extend_from_slice(c);
            Ok(())
        })?;
        Ok(Some(part))
    }
}

impl Drop for ReadAhead<'_> {
    fn drop(&mut self) {
        self.task.abort();
        ALIVE.fetch_sub(1, Ordering::Relaxed);
    }
}
