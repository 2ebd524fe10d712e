//! The streamed walk's parallel rounds over one large member: where each
//! round is cut, its segments inflated together, the next round's window
//! passed on, a failed round tried again smaller or handed to one core
//! ([`Resume`]) at the end of the last good one.

use rayon::prelude::*;

use crate::arriving::Gate;
use crate::deflate::{self, WINDOW};
use crate::hooks::Passed;
use crate::stored;

use super::cuts::*;
use super::search::*;
use super::segment::*;

/// Bounded parallel inflation, for the streamed walk: the raw DEFLATE
/// stream is inflated in rounds of N segments, N the threads the caller
/// says it may use ([`set_segments`](Rounds::set_segments), asked before
/// each round; at least 2). Segment A starts at a known block boundary
/// with the known 32 KiB window and is inflated by libdeflate (by zlib-rs
/// in steps, checksummed as it goes, when guessing windows); each later
/// segment, which starts at a block boundary found near its cut, is
/// marker-decoded at the same time on another thread (as the later chunks
/// of [`split_inflate`] are) and resolved once the 32 KiB before it are
/// known. Segments are sized from the ratio seen so far for each to
/// produce about [`seg_out`] bytes (the later segments' share of a round's
/// input is set from the threads' times, since their starts cost more;
/// the thread done with A first finds the next round's cuts; the stream's
/// last round splits what is left), and each may produce at most
/// `out_cap`: memory is one round's output in buffers reused from round
/// to round, never the payload. Nothing here is trusted: a round whose
/// later segment does not decode hands out the segments before it alone
/// (they end at a block boundary) and the next one fails; any failure is
/// [`RoundFailed`], after which the caller takes over on one core from
/// [`Rounds::resume`] (the end of the last good round, with its window);
/// the caller checks the CRC-32 and length of everything produced against
/// the gzip trailer and, on a mismatch, inflates again sequentially.
pub(crate) struct Rounds<'a> {
    pub(super) data: &'a [u8],
    /// Bit where the next round starts; `None` once the stream is done.
    pub(super) next: Option<usize>,
    pub(super) window: Vec<u8>,
    /// Compressed bytes per segment, on average over a round's segments.
    pub(super) seg: usize,
    pub(super) out_cap: usize,
    /// Segments per round (2 or more).
    pub(super) segs: usize,
    /// The segment size has been set from a round's ratio.
    pub(super) learned: bool,
    pub(super) a: Vec<u8>,
    pub(super) a_range: std::ops::Range<usize>,
    /// The CRC-32 of A's output, when its thread took it (long runs).
    pub(super) a_crc: Option<u32>,
    /// Segment A's synthetic input, rebuilt in place every round.
    pub(super) syn_a: Vec<u8>,
    /// The segments after A; the first `used` hold the last round's output.
    pub(super) later: Vec<Later>,
    pub(super) used: usize,
    /// The last round produced hardly more than it read (stored blocks).
    pub(super) incompressible: bool,
    /// The last try's segment A did not decode (over its output cap, or
    /// the member ended inside it).
    pub(super) a_failed: bool,
    /// The next round's cuts, found during this round on the thread that
    /// finished segment A (which has no markers to decode, so it is free
    /// first) instead of before the next round, when every thread waits.
    pub(super) ahead: Option<Ahead>,
    /// A later segment's share of a round's input against A's, in 64ths
    /// of two segments ([`EVEN_SHARE`] at first, then from the threads'
    /// times).
    pub(super) share: usize,
    /// A share the rounds keep whatever the threads' times say (the tests:
    /// times move the cuts, and with them where a round ends).
    pub(super) held_share: Option<usize>,
    /// The last round handed out only the segments before one that did
    /// not decode: the next one fails at once, for one core to go on from
    /// there.
    pub(super) stop: bool,
    /// Rounds that decoded, the marker symbols their later segments
    /// decoded before their windows cleared, and the last round's
    /// segments, input and output (for the debug log).
    pub(super) done: usize,
    pub(super) markers: usize,
    pub(super) last: LastRound,
    /// Later segments take the guessed window soon ([`GUESS_AFTER`]):
    /// the member is long runs ([`Rounds::guess_windows`]), or a start's
    /// window did not clear after [`MARKER_LIMIT`] symbols.
    pub(super) guess: bool,
    /// Segments inflated from a guessed window, and those of them
    /// inflated again (the guess was wrong), for the debug log.
    pub(super) guessed: usize,
    pub(super) redone: usize,
    pub(super) patched: usize,
    /// Guessing never stops ([`Rounds::always_guess`]).
    pub(super) guess_always: bool,
    /// The output a segment is sized for, in place of [`seg_out`]'s (the
    /// tests' small rounds).
    pub(super) fixed_target: Option<usize>,
    /// Told of each segment's input once it is copied, as offsets `base`
    /// bytes further on than the stream's ([`Rounds::release_to`]).
    pub(super) hook: Option<&'a dyn Passed>,
    pub(super) base: usize,
    /// What a round reads is waited for through it, when the input is
    /// still arriving.
    pub(super) gate: Gate<'a>,
}

/// What the last round did, for the debug log and the speed model (PERF.md,
/// inflate-threads): its segments, the compressed bytes it read and the
/// bytes it produced, and how long segment A and the slowest later segment took
/// (their difference is a later segment's fixed cost: its marker-decoded
/// start, and its share of the threads).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LastRound {
    pub(crate) segments: usize,
    pub(crate) read: usize,
    pub(crate) produced: usize,
    pub(crate) a_secs: f64,
    pub(crate) slowest_secs: f64,
}

/// Where a sequential inflater takes over from the rounds: `head`, a
/// synthetic stream that outputs the known window (`window_len` bytes,
/// to be dropped) and ends mid-byte exactly where the real data resumes,
/// then the real data from byte `from` on.
pub(crate) struct Resume {
    pub(crate) head: Vec<u8>,
    pub(crate) window_len: usize,
    pub(crate) from: usize,
}

/// What `f` returns and the seconds it took.
pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = std::time::Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// The smallest segment a failed round is tried again with.
pub(super) const MIN_SEG: usize = 64 << 10;

impl<'a> Rounds<'a> {
    /// Rounds of two segments over the raw DEFLATE stream `data`, starting
    /// with segments of `seg` compressed bytes.
    pub(crate) fn new(data: &'a [u8], seg: usize, out_cap: usize) -> Rounds<'a> {
        Rounds {
            data,
            next: Some(0),
            window: Vec::new(),
            seg: seg.max(1 << 10),
            out_cap,
            segs: 2,
            learned: false,
            a: Vec::new(),
            a_range: 0..0,
            a_crc: None,
            syn_a: Vec::new(),
            later: Vec::new(),
            used: 0,
            incompressible: false,
            a_failed: false,
            ahead: None,
            share: EVEN_SHARE,
            held_share: None,
            stop: false,
            done: 0,
            markers: 0,
            last: LastRound::default(),
            guess: false,
            guessed: 0,
            redone: 0,
            patched: 0,
            guess_always: false,
            fixed_target: None,
            hook: None,
            base: 0,
            gate: Gate::WHOLE,
        }
    }

    /// Tells `hook` of each segment's input once the segment has copied
    /// it (its synthetic stream), as offsets `base` bytes further on than
    /// the stream's: a mapped file's pages then leave memory while the
    /// round runs, not after it (at N segments, N segments' input).
    pub(crate) fn release_to(&mut self, hook: Option<&'a dyn Passed>, base: usize) {
        (self.hook, self.base) = (hook, base);
    }

    /// Waits for each range of input a round reads through `gate` (the
    /// stream's, at the offset where these rounds' data starts).
    pub(crate) fn arriving(&mut self, gate: Gate<'a>) {
        self.gate = gate;
    }

    /// Cuts the rounds from now on into `n` segments (2 to [`MAX_SEGS`]).
    /// Before the first round's ratio is known, the segments shrink as
    /// their output target does ([`seg_out`]), so that the first round's
    /// memory is what later ones take.
    pub(crate) fn set_segments(&mut self, n: usize) {
        let n = n.clamp(2, MAX_SEGS);
        if !self.learned && n != self.segs {
            let scaled = self.seg as u64 * self.target_for(n) as u64 / self.target() as u64;
            self.seg = usize::try_from(scaled).unwrap_or(usize::MAX).max(MIN_SEG);
        }
        self.segs = n;
    }

    /// The output each segment of a round of `n` is sized to produce:
    /// [`seg_out`], or [`GUESS_ROUND`] shared out when guessing windows.
    pub(super) fn target_for(&self, n: usize) -> usize {
        if let Some(t) = self.fixed_target {
            return t;
        }
        if self.guess {
            seg_out(n).max(GUESS_ROUND / n.max(1))
        } else {
            seg_out(n)
        }
    }

    /// The output each segment of the next round is sized to produce.
    pub(super) fn target(&self) -> usize {
        self.target_for(self.segs)
    }

    /// Segments per round.
    pub(crate) fn segments(&self) -> usize {
        self.segs
    }

    /// Whether the last round produced less than 2% more bytes than it read
    /// (stored blocks, incompressible data) and some of the stream is left:
    /// the rounds cost more than one sequential pass there, whose copy is
    /// all the work. (After the last round nothing is left to hand over.)
    pub(crate) fn incompressible(&self) -> bool {
        self.incompressible && self.next.is_some()
    }

    /// Where a sequential inflater can take over: at the start of the next
    /// round (the end of the last one that succeeded), with its window.
    /// After a failed round this is where that round started.
    pub(crate) fn resume(&self) -> Option<Resume> {
        let bit = self.next?;
        let k = bit % 8;
        let mut head = deflate::primer(&self.window, k as u32).bytes;
        let mut from = bit / 8;
        if k > 0 {
            let last = head.pop().unwrap_or(0);
            let mask = (1u8 << k) - 1;
            self.gate.wait(self.data, from, from + 1).ok()?;
            head.push((last & mask) | (*self.data.get(from)? & !mask));
            from += 1;
        }
        Some(Resume {
            head,
            window_len: self.window.len(),
            from,
        })
    }

    /// The bit where the next round starts, when a run of stored blocks
    /// holding at least `enough` bytes starts there. That bit is a known
    /// block boundary (the member's start, or the end of a round that
    /// checked out), so the run is the one any inflater reads.
    pub(crate) fn stored_next(&self, enough: usize) -> Option<usize> {
        let bit = self.next?;
        // Of input still arriving, what the run's first `enough` bytes
        // and its last block whole take.
        let reach = (bit / 8).saturating_add(enough + 2 * (65_535 + 5));
        let data = self.gate.upto(self.data, bit / 8, reach).ok()?;
        (stored::run_len(data, bit, enough) >= enough).then_some(bit)
    }

    /// The bit where the next round starts (`None` once the stream is done).
    pub(crate) fn next_bit(&self) -> Option<usize> {
        self.next
    }

    /// The 32 KiB before [`next_bit`](Self::next_bit) (less at the start).
    pub(crate) fn window(&self) -> &[u8] {
        &self.window
    }

    /// Goes on from byte `byte` of the stream (where a block starts) with
    /// `window`, the 32 KiB before it: after a run of stored blocks that
    /// the caller read in place up to there. `false` (and nothing changed)
    /// when that byte is not inside the stream: the caller's inflater
    /// reads what is there (the gzip trailer, taken for a block header by
    /// any inflater: a corrupt member).
    pub(crate) fn restart(&mut self, byte: usize, window: Vec<u8>) -> bool {
        if byte >= self.data.len() {
            return false;
        }
        self.next = Some(byte * 8);
        self.window = window;
        self.incompressible = false;
        self.a_failed = false;
        self.ahead = None;
        self.stop = false;
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        true
    }

    /// Ends the stream's input at byte `len` (where the caller guesses a
    /// gzip member ends), when that is not before the next round's start;
    /// cuts found ahead for the longer input are dropped.
    pub(crate) fn truncate(&mut self, len: usize) {
        if self.next.is_some_and(|bit| bit <= len * 8) && len < self.data.len() {
            self.data = &self.data[..len];
            self.ahead = None;
        }
    }

    /// Bytes of input before the next round's start (done with).
    pub(crate) fn consumed(&self) -> usize {
        self.next.map_or(self.data.len(), |bit| bit / 8)
    }

    /// Part `i` of the last round's output, in order (A, then each later
    /// segment); `None` past the last.
    pub(crate) fn part(&self, i: usize) -> Option<&[u8]> {
        if i == 0 {
            return Some(&self.a[self.a_range.clone()]);
        }
        let l = self.later[..self.used].get(i - 1)?;
        Some(&l.buf[l.start..l.len])
    }

    /// The CRC-32 of part `i`, when the thread that produced it took it
    /// (the rounds of long runs, [`Rounds::guess_windows`]).
    pub(crate) fn part_crc(&self, i: usize) -> Option<u32> {
        if i == 0 {
            return self.a_crc;
        }
        self.later[..self.used].get(i - 1)?.crc
    }

    /// The output of the last round, in order.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &[u8]> {
        (0..).map_while(|i| self.part(i))
    }

    /// The last 32 KiB produced: the window, then the last round's parts.
    pub(super) fn tail_window(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(2 * WINDOW);
        for part in std::iter::once(&self.window[..]).chain(self.parts()) {
            w.extend_from_slice(&part[part.len().saturating_sub(WINDOW)..]);
            if w.len() > WINDOW {
                w.drain(..w.len() - WINDOW);
            }
        }
        w
    }

    /// Inflates the next round ([`parts`](Self::parts)): `Ok(false)` when
    /// the stream is done. A round whose segment A fails is tried again
    /// with segments a quarter the size (down to 64 KiB): a segment whose
    /// output is over the cap (long runs: zeros at 1000:1) or that runs
    /// into the member's end then has its cut moved nearer. Nothing is
    /// handed out before a round succeeds, so a retry starts from the same
    /// place.
    pub(crate) fn next_round(&mut self) -> std::result::Result<bool, RoundFailed> {
        loop {
            self.a_failed = false;
            match self.try_round() {
                // Only segment A's failure is worth a nearer cut: when A
                // decoded and a later one did not (corrupt data, a later
                // segment over its cap), the parts before it were handed
                // out and one core goes on from there.
                Err(RoundFailed) if self.a_failed && self.seg > MIN_SEG => {
                    self.seg = (self.seg / 4).max(MIN_SEG);
                }
                done => return done,
            }
        }
    }

    /// One try at [`next_round`](Self::next_round).
    pub(super) fn try_round(&mut self) -> std::result::Result<bool, RoundFailed> {
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        let Some(a) = self.next else {
            return Ok(false);
        };
        if self.stop {
            return Err(RoundFailed);
        }
        let (data, seg, share, n) = (self.data, self.seg, self.share, self.segs);
        // Cuts found ahead with the share and segment size of the round
        // before are as good (any block boundary is a correct cut) when
        // that size is within a quarter of this one's: the size follows
        // each round's ratio, and a search for new cuts here runs while
        // every other thread waits (long runs: 1.3 ms a round, a fifth of
        // it, for two searches through 17 KiB blocks).
        let Cuts { starts, end } = match self.ahead.take() {
            Some(ahead)
                if ahead.from == a && ahead.seg.abs_diff(seg) <= seg / 4 && ahead.segs == n =>
            {
                ahead.cuts?
            }
            _ => cuts(data, seg, share, n, a, self.gate)?,
        };
        // Where the next round starts, should this one decode.
        let end = if starts.is_empty() { None } else { end };
        let cap = seg_cap(self.out_cap, n);
        let size = cap + WINDOW + NONCE_ROOM;
        self.round_buffers(starts.len(), size);
        let first_cut = starts.first().copied();
        let ends: Vec<Option<usize>> = starts
            .iter()
            .skip(1)
            .map(|&s| Some(s))
            .chain([end])
            .collect();
        // Every segment's input, to the round's end (the stream's, for its
        // last round), is in place before any segment starts.
        let gate = self.gate;
        gate.wait(data, a / 8, end.map_or(data.len(), |e| e / 8 + 16))?;
        let round = RoundPlan {
            a,
            first_cut,
            end,
            seg,
            share,
            segs: n,
        };
        let release = Release {
            hook: self.hook,
            base: self.base,
        };
        // Each segment writes at most `cap` (its buffer may be larger,
        // from rounds of fewer segments).
        let a_side = SegmentA {
            data,
            window: &self.window,
            gate,
            release: &release,
            guess: self.guess,
        };
        let (buf_a, syn_a) = (&mut self.a[..size], &mut self.syn_a);
        let later = &mut self.later[..starts.len()];
        let guess = self.guess;
        let (((first, ahead), time_a), rest) = rayon::join(
            || timed(|| a_side.inflate(round, syn_a, buf_a)),
            || {
                later
                    .par_iter_mut()
                    .zip(starts.par_iter().zip(ends.par_iter()))
                    .map(|(l, (&from, &to))| {
                        timed(|| later_segment(data, (from, to), cap, l, &release, guess))
                    })
                    .collect::<Vec<_>>()
            },
        );
        self.ahead = ahead;
        self.a_failed = first.is_none();
        (self.a_range, self.a_crc) = first.ok_or(RoundFailed)?;
        // The slowest later segment's rate (input per second), among those
        // with a cut at both ends.
        let mut rate_b = f64::INFINITY;
        let slowest = rest.iter().map(|(_, t)| *t).fold(0.0, f64::max);
        self.last.a_secs = time_a;
        self.last.slowest_secs = slowest;
        // The later segments that decoded, up to the first that did not
        // (over its output cap, or the member ends inside it). The
        // parts before end at its start, a block boundary (the nonce proved
        // it): they are handed out, and the next round fails at once, so
        // that one core goes on from there with their window (nothing is
        // inflated again).
        let good = rest.iter().take_while(|(ok, _)| *ok).count();
        let failed = (good < rest.len()).then_some(good);
        for (i, (_, time)) in rest.iter().enumerate().take(good) {
            if let Some(to) = ends[i] {
                rate_b = rate_b.min((to - starts[i]) as f64 / time.max(1e-6));
            }
        }
        let waiting = self.resolve_windows(good)?;
        let (good, failed) = self.settle_waiting(waiting, cap, good, failed)?;
        self.used = good;
        if let Some(i) = failed {
            self.stop = true;
            self.ahead = None; // found for a round from the last end
            return Ok(self.finish_round(a, Some(starts[i]), None));
        }
        let rates = match first_cut {
            Some(b) if rate_b.is_finite() => Some(((b - a) as f64 / time_a.max(1e-6), rate_b)),
            _ => None,
        };
        Ok(self.finish_round(a, end, rates))
    }

    /// Room for a round of segment A and `later` later segments of `size`
    /// bytes each: zeroed pages from the kernel, touched only as written;
    /// a later segment's buffer has room in front for its marker-decoded
    /// start.
    fn round_buffers(&mut self, later: usize, size: usize) {
        if self.later.len() < later {
            self.later.resize_with(later, Later::default);
        }
        if self.a.len() < size {
            self.a = vec![0u8; size];
        }
        for l in &mut self.later[..later] {
            if l.buf.len() < size + MARKS_ROOM {
                l.buf = vec![0u8; size + MARKS_ROOM];
            }
        }
    }

    /// The 32 KiB before each of the `good` later segments: A's tail for
    /// the first; for the others, the tail of the segment before, known
    /// without resolving its start when its window cleared inside it.
    /// Those are resolved on every thread at once; returns, per segment,
    /// whether it waits for the one before (which ended before its window
    /// cleared), to be resolved in order.
    fn resolve_windows(&mut self, good: usize) -> std::result::Result<Vec<bool>, RoundFailed> {
        let tail_a = self.tail_window();
        if good > 0 && tail_a.len() < WINDOW {
            return Err(RoundFailed);
        }
        let tails: Vec<Option<Vec<u8>>> = self.later[..good.saturating_sub(1)]
            .iter()
            .map(|l| l.clean_tail().map(<[u8]>::to_vec))
            .collect();
        let windows: Vec<Option<&[u8]>> = std::iter::once(Some(&tail_a[..]))
            .chain(tails.iter().map(Option::as_deref))
            .collect();
        self.later[..good]
            .par_iter_mut()
            .zip(windows.par_iter())
            .for_each(|(l, w)| {
                if let Some(w) = w {
                    resolve(l, w);
                }
            });
        Ok(windows.iter().take(good).map(Option::is_none).collect())
    }

    /// Resolves, in order, the later segments that waited for the one
    /// before, and settles those inflated from a guessed window (held,
    /// patched, or inflated again from the true one); returns the segments
    /// that decoded and the first that did not (`good`, `failed` as they
    /// stand, cut short where a redone guess does not decode either).
    fn settle_waiting(
        &mut self,
        waiting: Vec<bool>,
        cap: usize,
        mut good: usize,
        mut failed: Option<usize>,
    ) -> std::result::Result<(usize, Option<usize>), RoundFailed> {
        let (mut guessed_now, mut redone_now) = (0, 0);
        for (i, waits) in waiting.into_iter().enumerate() {
            self.markers += self.later[i].marks;
            if waits || self.later[i].guessed {
                // Segment i - 1 is resolved now: the last 32 KiB of the
                // round's parts up to it are this one's window.
                self.used = i;
                let w = self.tail_window();
                if w.len() < WINDOW {
                    return Err(RoundFailed);
                }
                let l = &mut self.later[i];
                if !l.guessed {
                    resolve(l, &w);
                    continue;
                }
                self.guessed += 1;
                guessed_now += 1;
                match settle_guess(l, &w) {
                    Settled::Held => continue,
                    Settled::Patched => {
                        self.patched += 1;
                        continue;
                    }
                    Settled::Wrong => {}
                }
                self.redone += 1;
                redone_now += 1;
                if !redo_guess(cap, l, &w) {
                    // It does not decode from the true window either: the
                    // parts before it are handed out, as for any later
                    // segment that does not decode.
                    (good, failed) = (i, Some(i));
                    break;
                }
            }
        }
        self.adapt_guess(guessed_now, redone_now);
        Ok((good, failed))
    }

    /// Whether later segments guess their window from now on, from how
    /// many guesses of this round (`guessed`) were wrong (`redone`).
    fn adapt_guess(&mut self, guessed: usize, redone: usize) {
        if self.guess && 2 * redone > guessed && !self.guess_always {
            // Runs of something else than zeros: a guess costs a second
            // inflation, in order. The marker decoder's full limit again.
            log::debug!(
                "{redone} of {guessed} guessed windows were wrong: later segments no \
                 longer guess"
            );
            self.guess = false;
        } else if !self.guess && guessed > 0 && 2 * redone <= guessed {
            log::debug!(
                "a later segment's window did not clear after {MARKER_LIMIT} symbols (long \
                 runs): later segments take a guessed window from now on"
            );
            self.guess = true;
        }
    }

    /// After a round from bit `a` that decoded: the window, the next
    /// segment's size, the later segments' share (from `rates`: A's input
    /// per second and the slowest later segment's, when both were timed
    /// between cuts), and the next round's start, `end`. Always `true` (a
    /// round was produced).
    pub(super) fn finish_round(
        &mut self,
        a: usize,
        end: Option<usize>,
        rates: Option<(f64, f64)>,
    ) -> bool {
        let produced: usize = self.parts().map(<[u8]>::len).sum();
        self.window = self.tail_window();
        if let Some((rate_a, rate_b)) = rates {
            // Every thread busy for as long: the share from the rates,
            // halfway towards the balance.
            let balance = 64.0 * rate_b / (rate_a + rate_b);
            let next = ((self.share as f64 + balance) / 2.0).round() as usize;
            self.share = next.clamp(*SHARES.start(), *SHARES.end());
        }
        if let Some(held) = self.held_share {
            self.share = held;
        }
        let consumed = end.unwrap_or(self.data.len() * 8).saturating_sub(a) / 8;
        if consumed > 0 && produced > 0 {
            self.incompressible = produced < consumed + consumed / 50;
            let ratio = produced.div_ceil(consumed).max(1);
            if self.guess && produced / consumed < GUESS_BELOW && !self.guess_always {
                log::debug!("rounds at {ratio}:1: later segments no longer guess their windows");
                self.guess = false;
            }
            self.seg = (self.target() / ratio).clamp(16 << 10, 16 << 20);
            self.learned = true;
        }
        (self.last.segments, self.last.read, self.last.produced) =
            (1 + self.used, consumed, produced);
        self.next = end;
        self.done += 1;
        true
    }

    /// Rounds over another raw DEFLATE stream `data` (the next gzip member
    /// of the same payload), in these rounds' buffers: a member's rounds
    /// write into pages already faulted in, not fresh ones (32 members of
    /// 100 MiB each faulted 1.2 GiB of pages in). The segment size, count
    /// and share are kept: the next member is likely of the same kind of
    /// data.
    pub(crate) fn renew(&mut self, data: &'a [u8]) {
        self.data = data;
        self.next = Some(0);
        self.window.clear();
        self.a_range = 0..0;
        self.a_crc = None;
        self.used = 0;
        self.incompressible = false;
        self.a_failed = false;
        self.ahead = None;
        self.stop = false;
        self.done = 0;
        self.markers = 0;
        self.guess = self.guess_always;
        self.guessed = 0;
        self.redone = 0;
        self.patched = 0;
    }

    /// What the rounds did, for the debug log: rounds decoded, the marker
    /// symbols decoded in all (the later segments' starts), and their last
    /// share in 64ths.
    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        (self.done, self.markers, self.share)
    }

    /// Later segments inflated from a guessed window, how many of them
    /// had their start written again from its resolved symbols, and how
    /// many were inflated again, for the debug log.
    pub(crate) fn guesses(&self) -> (usize, usize, usize) {
        (self.guessed, self.patched, self.redone)
    }

    /// Whether the next round's later segments guess their windows soon.
    #[cfg(test)]
    pub(crate) fn guessing(&self) -> bool {
        self.guess
    }

    /// Later segments guess their windows in every round, whatever the
    /// data and its ratio, and each segment is sized to produce `target`
    /// bytes (the tests and fuzz targets: every guess on data that is not
    /// long runs is wrong, and must be caught).
    pub(crate) fn always_guess(&mut self, target: usize) {
        (self.guess, self.guess_always) = (true, true);
        self.fixed_target = Some(target);
    }

    /// Later segments take `share` 64ths of a round from now on, whatever
    /// the threads' times say (the tests: where a round ends then follows
    /// from the data alone).
    #[cfg(test)]
    pub(crate) fn hold_share(&mut self, share: usize) {
        self.share = share.clamp(*SHARES.start(), *SHARES.end());
        self.held_share = Some(self.share);
    }

    /// The range of shares the threads' times can give (the tests).
    #[cfg(test)]
    pub(crate) fn shares() -> std::ops::RangeInclusive<usize> {
        SHARES
    }

    /// The member is long runs (zero padding between short stretches,
    /// which the trailer says inflates `ratio`:1): a later segment's
    /// window will not clear, since its runs copy from before its cut, so
    /// from now on each is inflated from a guessed window of zeros after
    /// a short marker-decoded start ([`GUESS_AFTER`]) and checked once the
    /// true window is known; and segments are sized for that ratio from
    /// the first round (a first round's default input would otherwise
    /// inflate to 25 times its target).
    pub(crate) fn guess_windows(&mut self, ratio: usize) {
        self.guess = true;
        // Sized for the ratio now, whatever the member before was (and
        // rescaled as any first segment by `set_segments`).
        self.seg = (self.target() / ratio.max(1)).clamp(MIN_SEG, 16 << 20);
    }

    /// What the last round did.
    pub(crate) fn last_round(&self) -> LastRound {
        self.last
    }
}

/// Where one round lies: segment A from bit `a` to the first cut (`None`:
/// A takes the rest), the round's end (where the next round starts), and
/// the segment size, share and count the next round's cuts are found with.
#[derive(Clone, Copy)]
pub(super) struct RoundPlan {
    pub(super) a: usize,
    pub(super) first_cut: Option<usize>,
    pub(super) end: Option<usize>,
    pub(super) seg: usize,
    pub(super) share: usize,
    pub(super) segs: usize,
}

/// What segment A produced: the range of its buffer after the window, and
/// its CRC-32 (where later segments guess).
pub(super) type Produced = (std::ops::Range<usize>, Option<u32>);

/// What segment A of a round reads: the stream, the known window before
/// it, the gate its input waits through, who is told of input passed.
pub(super) struct SegmentA<'r> {
    pub(super) data: &'r [u8],
    pub(super) window: &'r [u8],
    pub(super) gate: Gate<'r>,
    pub(super) release: &'r Release<'r>,
    pub(super) guess: bool,
}

impl SegmentA<'_> {
    /// Inflates segment A of `round` (by libdeflate, primed with the
    /// window; with its CRC-32 where later segments guess) into `buf`
    /// through the synthetic stream `syn`: the range of `buf` it produced
    /// after the window, and its CRC-32; then, A decoded, the next round's
    /// cuts, found while the later segments finish.
    pub(super) fn inflate(
        &self,
        round: RoundPlan,
        syn: &mut Vec<u8>,
        buf: &mut [u8],
    ) -> (Option<Produced>, Option<Ahead>) {
        let (data, window, a) = (self.data, self.window, round.a);
        let primer = deflate::primer(window, (a % 8) as u32);
        synth_into(syn, &primer, data, a, round.first_cut);
        self.release
            .copied(a, round.first_cut.unwrap_or(data.len() * 8));
        let cut = round.first_cut.is_some();
        let (n_out, crc) = if self.guess {
            match inflate_synth_crc(syn, buf, cut, window.len()) {
                Some((n, crc)) => (Some(n), Some(crc)),
                None => (None, None),
            }
        } else {
            (inflate_synth(syn, buf, cut), None)
        };
        let first = n_out
            .filter(|&o| o >= window.len())
            .map(|o| window.len()..o);
        let ahead = match (&first, round.end) {
            (Some(_), Some(from)) => Some(Ahead {
                from,
                seg: round.seg,
                segs: round.segs,
                cuts: cuts(data, round.seg, round.share, round.segs, from, self.gate),
            }),
            _ => None,
        };
        (first.map(|r| (r, crc)), ahead)
    }
}
