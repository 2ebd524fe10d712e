//! What a request costs on the link in use, measured as the process goes:
//! the round trip (the time to a response's first byte) and the bytes a
//! connection brings per second once its body flows. The walk of a raw
//! payload by ranges decides from them whether to read through a member's
//! data or hop over it, and whether to fetch a small object whole
//! ([`through_below`], [`whole_below`]); users who pay for egress cap the
//! bytes moved per object ([`set_cap`]).
//!
//! The throughput is measured per connection, as it is while other
//! requests share the link: with many objects in flight each connection
//! gets its share, reading through costs more, and hopping from header to
//! header wins; one object alone gets the whole link and reads through,
//! unless a request made alone costs less than reading on through its
//! members ([`hop_worth`]: on loopback, ~130 µs).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Round trip assumed before one is measured: a bucket in the same region.
const RTT_GUESS_US: u64 = 20_000;
/// Per-connection throughput assumed before one is measured (bytes/s).
const BW_GUESS: u64 = 50_000_000;
/// Bodies shorter than this say little about throughput (their time is
/// mostly the round trip's jitter): not measured.
const MEASURED_FROM: u64 = 128 << 10;
/// The most a skip is read through, whatever the link: a member larger
/// than this is hopped over.
const MAX_THROUGH: u64 = 64 << 20;

/// Requests made, in flight, and body bytes received, for the process
/// ([`stats`]).
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// What the process asked of remote servers so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Requests sent (each GET, and each listing of a prefix).
    pub requests: u64,
    /// Requests sent and not yet answered in full.
    pub in_flight: u64,
    /// Bytes of response bodies received.
    pub bytes: u64,
}

/// The process's remote requests and bytes so far: what a progress line
/// shows.
pub fn stats() -> Stats {
    Stats {
        requests: REQUESTS.load(Ordering::Relaxed),
        in_flight: IN_FLIGHT.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}

/// A request in flight, counted from [`Request::start`] until dropped.
pub(crate) struct Request {
    /// No other request was in flight when this one started: its round
    /// trip is the link's own, with no queueing behind the process's
    /// other requests.
    alone: bool,
}

impl Request {
    pub(crate) fn start() -> Request {
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        let before = IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        Request { alone: before == 0 }
    }
    /// Whether no other request was in flight when this one started.
    pub(crate) fn alone(&self) -> bool {
        self.alone
    }
    /// Notes `n` more body bytes received.
    pub(crate) fn got(&self, n: u64) {
        BYTES.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Round trip, microseconds (moving average; 0 until measured).
static RTT_US: AtomicU64 = AtomicU64::new(0);
/// Round trip of requests made alone (no other in flight), microseconds
/// (moving average; 0 until measured): what a hop from header to header
/// costs one object walked alone.
static RTT_ALONE_US: AtomicU64 = AtomicU64::new(0);
/// Remote objects open in the process ([`open`]).
static OPEN: AtomicUsize = AtomicUsize::new(0);
/// Bytes per second per connection (moving average; 0 until measured).
static BW: AtomicU64 = AtomicU64::new(0);
/// Most bytes moved per object (0: no cap).
static CAP: AtomicU64 = AtomicU64::new(0);

/// A moving average that weighs the newest observation by 1/4.
fn blend(slot: &AtomicU64, x: u64) {
    let old = slot.load(Ordering::Relaxed);
    let new = if old == 0 { x } else { (old * 3 + x) / 4 };
    slot.store(new.max(1), Ordering::Relaxed);
}

/// Notes one response: `first` from the request to its headers, then
/// `bytes` of body in `body`; `alone`: no other request was in flight
/// when it was made ([`Request::alone`]).
pub(crate) fn observe(first: Duration, bytes: u64, body: Duration, alone: bool) {
    let first_us = first.as_micros().min(u64::MAX as u128) as u64;
    blend(&RTT_US, first_us);
    if alone {
        blend(&RTT_ALONE_US, first_us);
    }
    if bytes >= MEASURED_FROM {
        let us = body.as_micros().max(50) as u64;
        blend(&BW, bytes.saturating_mul(1_000_000) / us);
    }
}

/// The round trip and per-connection throughput as measured (or assumed
/// before any response).
pub(crate) fn estimate() -> (Duration, u64) {
    let rtt = match RTT_US.load(Ordering::Relaxed) {
        0 => RTT_GUESS_US,
        r => r,
    };
    let bw = match BW.load(Ordering::Relaxed) {
        0 => BW_GUESS,
        b => b,
    };
    (Duration::from_micros(rtt), bw)
}

/// The bytes a connection brings in one round trip: a skip over member
/// data shorter than this costs less to read through than to hop over
/// (a new request waits a round trip; reading on waits for the bytes).
pub fn through_below() -> u64 {
    let (rtt, bw) = estimate();
    let bytes = (rtt.as_secs_f64() * bw as f64) as u64;
    bytes.min(MAX_THROUGH)
}

/// The bytes one object read on alone brings in the time a hop costs
/// (a request made alone: no queueing behind its own read-ahead), at its
/// share of the link (`depth` parts of a read-ahead in flight, each at a
/// connection's throughput); `None` while other objects are open, whose requests
/// overlap its own (their round trips hide behind each other, and the
/// walk's choice per member stands).
///
/// A walk whose skipped members average more than this moves less and
/// ends sooner hopping over every one, a request each, than reading on
/// through them: on loopback a request costs ~130 µs, and reading on
/// through the same archive costs its download.
pub(crate) fn hop_worth(depth: usize) -> Option<u64> {
    if OPEN.load(Ordering::Relaxed) > 1 {
        return None;
    }
    let (rtt, bw) = estimate();
    let alone = match RTT_ALONE_US.load(Ordering::Relaxed) {
        0 => rtt,
        r => Duration::from_micros(r),
    };
    let bytes = alone.as_secs_f64() * bw as f64 * depth.max(1) as f64;
    Some(bytes as u64)
}

/// A count held while a value lives: one more at [`Gauge::hold`], one
/// less when dropped (the objects open here, the read-aheads alive in
/// [`super::ahead`]).
#[derive(Debug)]
pub(crate) struct Gauge(&'static AtomicUsize);

impl Gauge {
    pub(crate) fn hold(count: &'static AtomicUsize) -> Gauge {
        count.fetch_add(1, Ordering::Relaxed);
        Gauge(count)
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A remote object open, counted until dropped ([`hop_worth`] knows
/// whether it is alone).
pub(crate) fn open() -> Gauge {
    Gauge::hold(&OPEN)
}

/// Objects no larger than this are fetched whole in one request rather
/// than walked: a few round trips' worth of bytes (a walk costs at least
/// that many), and at most `most` (the caller's memory bound).
pub fn whole_below(most: u64) -> u64 {
    let by_cost = through_below().saturating_mul(4);
    let cap = cap().unwrap_or(u64::MAX);
    by_cost.min(most).min(cap)
}

/// Caps the bytes moved for one object (index, members and all): a read
/// that would pass it fails, naming the object. `None` lifts the cap.
/// Reading through member data is chosen only while it stays under it.
pub fn set_cap(bytes: Option<u64>) {
    CAP.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// Refuses `moved` bytes from one object when they pass the cap of
/// [`set_cap`].
pub(crate) fn within_cap(moved: u64) -> crate::error::Result<()> {
    match cap() {
        Some(cap) if moved > cap => Err(crate::error::Error::Limit {
            what: "bytes moved from this object (--max-bytes-moved)",
            found: moved,
            cap,
        }),
        _ => Ok(()),
    }
}

/// The cap of [`set_cap`], if any.
pub fn cap() -> Option<u64> {
    match CAP.load(Ordering::Relaxed) {
        0 => None,
        c => Some(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_round_trip_on_a_fast_link_reads_through_more_than_a_fast_one() {
        // One test owns the process-wide estimates (tests run in threads).
        RTT_US.store(0, Ordering::Relaxed);
        BW.store(0, Ordering::Relaxed);
        let guess = through_below();
        assert_eq!(
            guess,
            (RTT_GUESS_US * BW_GUESS / 1_000_000).min(MAX_THROUGH)
        );
        // 25 ms away, 8 MiB in 80 ms on this connection (~100 MB/s).
        for _ in 0..20 {
            observe(
                Duration::from_millis(25),
                8 << 20,
                Duration::from_millis(80),
                false,
            );
        }
        let far = through_below();
        assert!((2_400_000..2_800_000).contains(&far), "{far}");
        // Small bodies move the round trip, not the throughput.
        for _ in 0..20 {
            observe(
                Duration::from_millis(1),
                2048,
                Duration::from_micros(10),
                false,
            );
        }
        let near = through_below();
        assert!(near < far / 10, "{near} vs {far}");
        assert_eq!(whole_below(8 << 20), (near * 4).min(8 << 20));
        set_cap(Some(1000));
        assert_eq!(whole_below(8 << 20), 1000.min(near * 4));
        set_cap(None);
        RTT_US.store(0, Ordering::Relaxed);
        BW.store(0, Ordering::Relaxed);
    }
}
