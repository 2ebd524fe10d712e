//! A gzip payload inflated as a bounded stream: bytes come out in the
//! caller's window, so memory follows the window, never the payload.
//!
//! This is the path for payloads too large to inflate whole (over
//! [`Limits::inflate_budget`](crate::Limits::inflate_budget)) and for those
//! whose trailer cannot be trusted. [`GzStream`] owns the gzip framing and
//! is a small state machine ([`Mode`]) over the ways a member's DEFLATE
//! data is read, each a type of its own behind one interface (`fill` and
//! `skip` give a [`Step`]):
//!
//! - [`OneCore`] (`one_core.rs`): zlib-rs through flate2's raw-DEFLATE
//!   interface, as fast as one-shot libdeflate on `big_pkg2.neff` and 17
//!   times faster on zeros, since its output stays in cache (PERF.md,
//!   inflaters-in-process);
//!   with [`Pairs`] (`pairs.rs`), smaller members two at a time: the next
//!   member is inflated ahead on the free core from the first gzip header
//!   found, and taken over when the member before really ends there;
//! - [`MemberRounds`] (`rounds.rs`): a member of 16 MiB of gzip or more,
//!   with a core free ([`GzStream::new_parallel`], the caller's `Threads`),
//!   in parallel rounds of its own over its DEFLATE data up to the next
//!   gzip header found after it (a guess, checked at its end); a round that
//!   does not decode hands over to [`OneCore`] at the end of the last good
//!   round, primed with its last 32 KiB (nothing is inflated twice);
//! - [`InPlace`] (`in_place.rs`): a run of stored blocks (incompressible
//!   data), copied out or checksummed where it lies.
//!
//! The switches between them live here, in [`GzStream::switch`]. Until a
//! member begun in rounds has its trailer matched, any failure is doubtful
//! (the rounds' bytes may be at fault): [`GzStream::doubtful`] tells the
//! walk to read the payload again on one core. The debug log (`log`
//! facade) names each decision: rounds and why not, hand-overs and their
//! reason, runs read in place.
//!
//! The payload is read member by member, with the strict framing of
//! [`super::gzip`]:
//!
//! - every member header is checked (magic, method 8, no reserved flag
//!   bits, every optional field inside the input);
//! - every member's DEFLATE stream must end (a final block), and its
//!   trailer must match the CRC-32 and length of what it produced;
//! - after a member, only another member or zero padding to the end
//!   (libarchive pads to its block size) may follow;
//! - the total output is capped by [`Limits::max_inflated`](crate::Limits::max_inflated).
//!
//! Failures carry the texts of [`super::gzip`], which the one-shot path
//! uses too, so that both paths give a file the same answer.

mod in_place;
mod one_core;
mod pairs;
mod rounds;
#[cfg(test)]
mod tests;
mod walk;

use crate::arriving::{Arriving, Gate};
use crate::deflate;
use crate::error::Result;
use crate::gzip;
use crate::hooks::{Passed, Threads};
use crate::parallel::PARALLEL_FROM;
use in_place::InPlace;
use one_core::OneCore;
use pairs::Pairs;
use rounds::{MemberRounds, Plan};
use walk::{Step, Switch, Walk, MIN_RUN};

/// Which strategy reads the member now.
enum Mode<'a> {
    /// Between members: the next header (or the payload's end) is next.
    Between,
    /// The one-core inflater (members two at a time when [`Pairs`] is on).
    OneCore,
    /// Parallel rounds over a large member.
    Rounds(MemberRounds<'a>),
    /// A run of stored blocks; the rounds it interrupted, if any, go on
    /// after it.
    InPlace(InPlace, Option<MemberRounds<'a>>),
    /// Every member read and checked.
    Done,
    /// A switch between strategies failed half-way: no more bytes.
    Failed,
}

/// What the tests ask of a stream: which strategies ran, how often.
#[derive(Debug, Default)]
struct Counts {
    /// Members whose rounds were set up, and the times rounds handed over
    /// to one core.
    members_in_rounds: usize,
    handovers: usize,
    /// Runs of stored blocks entered.
    runs_in_place: usize,
}

/// A gzip payload being inflated, one window at a time.
pub struct GzStream<'a> {
    walk: Walk<'a>,
    mode: Mode<'a>,
    /// The one-core inflater, kept from member to member.
    one: OneCore,
    /// Members two at a time (see [`Pairs`]), when several members may
    /// follow and a core is free.
    pairs: Option<Pairs>,
    /// How large members are read in parallel rounds (`None`: never).
    plan: Option<Plan<'a>>,
    /// From this payload size a run of stored blocks is looked for soon
    /// after each member's start ([`PARALLEL_FROM`]; the tests' is 0).
    bridge_from: usize,
    /// A failure while the member was unchecked: what was produced is not
    /// to be trusted (see [`doubtful`](GzStream::doubtful)).
    doubt: bool,
    counts: Counts,
}

impl std::fmt::Debug for GzStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzStream")
            .field("pos", &self.walk.pos)
            .field("total_out", &self.walk.total_out())
            .finish()
    }
}

impl<'a> GzStream<'a> {
    /// A stream over the gzip payload `gz`, producing at most `cap` bytes,
    /// on the calling thread alone.
    pub fn new(gz: &'a [u8], cap: u64) -> Result<GzStream<'a>> {
        gzip::check_len(gz)?;
        Ok(GzStream {
            walk: Walk::new(gz, cap),
            mode: Mode::Between,
            one: OneCore::new(),
            pairs: None,
            plan: None,
            bridge_from: PARALLEL_FROM,
            doubt: false,
            counts: Counts::default(),
        })
    }

    /// Calls `release` with each range of the input (offsets into `gz`)
    /// that the inflater has gone past, a few MiB at a time, so that the
    /// caller can drop those pages of a mapped file.
    pub fn release_behind(mut self, release: &'a dyn Passed) -> Self {
        self.walk.release_behind(release);
        self
    }

    /// [`new`](Self::new), inflating on more than one thread when the
    /// payload is large and `threads()` says 2 or more (inside a pool that
    /// already keeps every core busy it should say 1): every large member
    /// is inflated in parallel rounds (`Plan`), smaller ones two at a
    /// time (`Pairs`), and long checksums split.
    pub fn new_parallel(gz: &'a [u8], cap: u64, threads: Threads) -> Result<GzStream<'a>> {
        if gz.len() < PARALLEL_FROM || threads() < 2 {
            return GzStream::new(gz, cap);
        }
        let mut s = GzStream::new(gz, cap)?;
        s.walk.threads = threads;
        s.pairs = Some(Pairs::default());
        s.plan = Some(Plan::for_payload(gz));
        Ok(s)
    }

    /// [`new_parallel`](Self::new_parallel) over input that is still
    /// arriving: every read waits for its bytes ([`Arriving`]). Members are
    /// not read two at a time (that looks 64 MiB ahead of each); `threads`
    /// [`one_thread`](crate::hooks::one_thread) gives [`new`](Self::new)'s
    /// one-core stream.
    pub fn arriving(
        gz: &'a [u8],
        cap: u64,
        threads: Threads,
        input: &'a dyn Arriving,
    ) -> Result<GzStream<'a>> {
        // The last trailer is read now, to plan the rounds.
        GzStream::trailer_first(gz, input)?;
        GzStream::new_parallel(gz, cap, threads).map(|s| s.arrive(input))
    }

    /// Waits for the payload's last trailer, the first read of input
    /// still arriving.
    fn trailer_first(gz: &[u8], input: &dyn Arriving) -> Result<()> {
        gzip::check_len(gz)?;
        let len = gz.len();
        Ok(Gate::new(Some(input), 0).wait(gz, len - gzip::TRAILER, len)?)
    }

    /// This stream reading `input` as it arrives, members one at a time.
    fn arrive(mut self, input: &'a dyn Arriving) -> Self {
        self.pairs = None;
        self.walk.gate = Gate::new(Some(input), 0);
        self
    }

    /// [`arriving`](Self::arriving) with every parallel path forced, as
    /// [`parallel_with`](Self::parallel_with) forces it (the tests and
    /// fuzz targets), and `guess`: later segments guess their windows, each
    /// sized to produce that many bytes, as
    /// [`guessing_with`](Self::guessing_with).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn arriving_with(
        gz: &'a [u8],
        cap: u64,
        (seg, out_cap, guess): (usize, usize, Option<usize>),
        input: &'a dyn Arriving,
    ) -> Result<GzStream<'a>> {
        GzStream::trailer_first(gz, input)?;
        let plan = match guess {
            Some(target) => Plan::guessing(seg, out_cap, target),
            None => Plan::forced(seg, out_cap),
        };
        GzStream::with_plan(gz, cap, plan).map(|s| s.arrive(input))
    }

    /// A stream that takes every parallel path, whatever the payload's
    /// size: every member is inflated in rounds of `seg`-byte segments
    /// producing at most `out_cap` each, checked against its trailer at its
    /// end, and members handed over to one core go two at a time. When the
    /// rounds' bytes do not match a trailer, or the rounds fail in a way
    /// the one-core inflater cannot take over from, the stream errs and
    /// [`doubtful`](Self::doubtful) says so: the caller starts over with
    /// [`new`](Self::new). The tests and fuzz targets force it on small
    /// payloads to compare it with [`new`](Self::new).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn parallel_with(
        gz: &'a [u8],
        cap: u64,
        seg: usize,
        out_cap: usize,
    ) -> Result<GzStream<'a>> {
        GzStream::with_plan(gz, cap, Plan::forced(seg, out_cap))
    }

    /// As [`parallel_with`](Self::parallel_with), with rounds whose later
    /// segments always inflate from a guessed window (after a
    /// marker-decoded start of 64 K symbols), checked once the true one is
    /// known, each sized to produce `target` bytes: the path of long runs,
    /// forced on any data.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn guessing_with(
        gz: &'a [u8],
        cap: u64,
        (seg, target): (usize, usize),
        out_cap: usize,
    ) -> Result<GzStream<'a>> {
        GzStream::with_plan(gz, cap, Plan::guessing(seg, out_cap, target))
    }

    /// A stream whose members go to rounds by `plan`, two at a time
    /// otherwise, on the current pool's threads.
    #[cfg(any(test, feature = "fuzzing"))]
    fn with_plan(gz: &'a [u8], cap: u64, plan: Plan<'a>) -> Result<GzStream<'a>> {
        let mut s = GzStream::new(gz, cap)?;
        s.pairs = Some(Pairs::default());
        s.plan = Some(plan);
        s.walk.threads = crate::hooks::pool_threads;
        Ok(s)
    }

    /// Whether this stream's parallel rounds failed or did not check out:
    /// its error (and anything read before it) is to be discarded and the
    /// payload inflated again sequentially.
    pub fn doubtful(&self) -> bool {
        self.doubt
    }

    /// Bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.walk.total_out()
    }

    /// Inflates into `out`; the number of bytes written, 0 only at the end
    /// of the payload (every member's trailer checked). A failure of the
    /// member the parallel rounds began, before its trailer matched, is
    /// [`doubtful`](Self::doubtful) (the rounds' bytes may be at fault, not
    /// the file's): the caller reads the payload again sequentially.
    pub fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        self.fill_any(out).inspect_err(|_| self.failed())
    }

    /// Everything the stream produces, 70,000 bytes at a time, or its
    /// error; and whether it said it was doubtful (the tests and fuzz
    /// targets compare paths with it).
    #[cfg(any(test, feature = "fuzzing"))]
    #[doc(hidden)]
    pub fn read_all(&mut self) -> (Result<Vec<u8>>, bool) {
        let mut out = Vec::new();
        let mut w = vec![0u8; 70_000];
        loop {
            match self.fill(&mut w) {
                Ok(0) => return (Ok(out), self.doubtful()),
                Ok(n) => out.extend_from_slice(&w[..n]),
                Err(e) => return (Err(e), self.doubtful()),
            }
        }
    }

    /// Skips `n` bytes of output using `window` as scratch; the bytes
    /// skipped (fewer than `n` only at the end of the payload).
    pub fn skip(&mut self, mut n: u64, window: &mut [u8]) -> Result<u64> {
        let mut done = 0;
        while n > 0 {
            let got = self.skip_in_place(n).inspect_err(|_| self.failed())?;
            if got > 0 {
                done += got as u64;
                n -= got as u64;
                continue;
            }
            let want = window.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            let got = self.fill(&mut window[..want])?;
            if got == 0 {
                break;
            }
            done += got as u64;
            n -= got as u64;
        }
        Ok(done)
    }

    /// Inflates the rest of the payload, discarding it, so that every
    /// trailer is checked; the total produced.
    pub fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        self.skip(u64::MAX, window)?;
        Ok(self.walk.total_out())
    }

    /// After a failure: doubtful if the member was unchecked.
    fn failed(&mut self) {
        self.doubt |= self.walk.unchecked;
    }

    /// The state machine: ready bytes first, then whichever strategy reads
    /// the member now; member starts, ends and switches in between.
    fn fill_any(&mut self, out: &mut [u8]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(n) = self.walk.take_ready(out)? {
                return Ok(n);
            }
            let w = &mut self.walk;
            let step = match &mut self.mode {
                Mode::Done => return Ok(0),
                Mode::Failed => return Err(w.corrupt()),
                Mode::Between => {
                    self.start_member()?;
                    continue;
                }
                Mode::OneCore => {
                    if let Some(p) = self.pairs.as_mut().filter(|p| p.several) {
                        let from = self.plan.as_ref().map(|p| p.from);
                        if let Some(ended) = p.round(w, &mut self.one, from)? {
                            if ended {
                                self.end_member()?;
                            }
                            continue;
                        }
                    }
                    self.one.fill(w, out)?
                }
                Mode::Rounds(r) => r.fill(w, out)?,
                Mode::InPlace(ip, _) => ip.fill(w, out)?,
            };
            match step {
                Step::Out(n) => return Ok(n),
                Step::End(n) => {
                    self.end_member()?;
                    if n > 0 {
                        return Ok(n);
                    }
                }
                Step::Switch(s) => self.switch(s)?,
            }
        }
    }

    /// Skips up to `n` bytes where they lie (ready bytes, the rounds'
    /// output, a stored run): 0 when the current strategy has none to skip
    /// so (the caller fills a window instead).
    fn skip_in_place(&mut self, n: u64) -> Result<usize> {
        if !self.walk.ready.is_empty() {
            return self.walk.skip_ready(n);
        }
        match &mut self.mode {
            Mode::Rounds(r) => r.skip(&mut self.walk, n),
            Mode::InPlace(ip, _) => ip.skip(&mut self.walk, n),
            _ => Ok(0),
        }
    }

    /// Starts the next member at the position, after skipping zero
    /// padding (or takes over the one inflated ahead); at the end of the
    /// input, [`Mode::Done`].
    fn start_member(&mut self) -> Result<()> {
        let w = &mut self.walk;
        if let Some(p) = self.pairs.as_mut() {
            if let Some(ended) = p.adopt(w, &mut self.one)? {
                self.mode = Mode::OneCore;
                if ended {
                    self.end_member()?;
                }
                return Ok(());
            }
        }
        let Some(member) = next_member(w)? else {
            w.pos = w.gz.len();
            self.mode = Mode::Done;
            return Ok(());
        };
        (w.at, w.pos) = (member.at, member.data);
        w.crc = libdeflater::Crc::new();
        w.out = 0;
        self.one.reset();
        self.mode = self.member_mode()?;
        // Members two at a time once a second member is met.
        if let Some(p) = self.pairs.as_mut() {
            if self.walk.at > 0 && !p.several {
                p.several = true;
                log::debug!(
                    "a second gzip member at offset {}: members are inflated two at a time",
                    self.walk.at
                );
            }
        }
        Ok(())
    }

    /// How the member whose DEFLATE data starts at the position is read:
    /// in rounds when it is large, in place when a run of stored blocks
    /// starts it (or soon after, in a payload large enough for the search
    /// to pay), else on one core.
    fn member_mode(&mut self) -> Result<Mode<'a>> {
        let w = &mut self.walk;
        if let Some(plan) = self.plan.as_mut() {
            let (rounds, followed) = plan.member(w)?;
            if let Some(p) = self.pairs.as_mut() {
                if followed && !p.several {
                    log::debug!(
                        "gzip member at offset {}: another member starts within {} bytes: \
                         members are inflated two at a time",
                        w.at,
                        plan.from
                    );
                }
                p.several |= followed;
            }
            if rounds.is_some() {
                log::debug!(
                    "gzip member at offset {}: {} bytes or more: inflated in parallel rounds",
                    w.at,
                    plan.from
                );
            }
            if let Some(r) = rounds {
                w.unchecked = true;
                self.counts.members_in_rounds += 1;
                return Ok(Mode::Rounds(r));
            }
        }
        let from = w.pos * 8;
        let run = if in_place::run_len(w, from)? >= MIN_RUN {
            InPlace::at(w, from)?
        } else if w.gz.len() >= self.bridge_from {
            match in_place::bridge(w, from, &[])? {
                Some(bit) => InPlace::at(w, bit)?,
                None => None,
            }
        } else {
            None
        };
        let Some(run) = run else {
            return Ok(Mode::OneCore);
        };
        log::debug!(
            "gzip member at offset {}: stored blocks (incompressible data) at or soon after its \
             start: read in place",
            w.at
        );
        self.counts.runs_in_place += 1;
        Ok(Mode::InPlace(run, None))
    }

    /// The member's DEFLATE data ended at the position: its trailer is
    /// checked, the rounds it was read in (if any) kept for their buffers,
    /// and the next member is next.
    fn end_member(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.mode, Mode::Between) {
            Mode::Rounds(r) | Mode::InPlace(_, Some(r)) => self.retire(r),
            _ => {}
        }
        self.walk.end_member()?;
        if let Some(p) = self.pairs.as_mut() {
            p.after_member(self.walk.pos);
        }
        Ok(())
    }

    /// Keeps a member's rounds for their buffers (the next member's rounds
    /// renew them).
    fn retire(&mut self, r: MemberRounds<'a>) {
        if let Some(plan) = self.plan.as_mut() {
            plan.keep(r);
        }
    }

    /// Moves the member on to the strategy `s` asks for.
    fn switch(&mut self, s: Switch) -> Result<()> {
        let mode = std::mem::replace(&mut self.mode, Mode::Failed);
        self.mode = match (mode, s) {
            (Mode::Rounds(r), Switch::Stored(bit)) => {
                let run = InPlace::at(&self.walk, bit)?.ok_or_else(|| self.walk.corrupt())?;
                self.counts.runs_in_place += 1;
                Mode::InPlace(run, Some(r))
            }
            (Mode::Rounds(r), Switch::OneCore) => self.hand_over(r)?,
            (Mode::InPlace(run, rounds), Switch::RunEnd) => self.leave_run(run, rounds)?,
            _ => return Err(self.walk.corrupt()),
        };
        Ok(())
    }

    /// Leaves the rounds for the one-core inflater, which takes over at the
    /// end of the last round delivered (every byte before it already given
    /// out and counted in the member's CRC-32), primed with that round's
    /// window.
    fn hand_over(&mut self, r: MemberRounds<'a>) -> Result<Mode<'a>> {
        self.counts.handovers += 1;
        let (resume, rounds) = r.hand_over();
        self.retire(rounds);
        // The rounds finished: nothing is left to inflate but the check.
        let (at, head, window_len) = resume.ok_or_else(|| self.walk.corrupt())?;
        self.one.prime(&self.walk, &head, window_len)?;
        self.walk.pos = at;
        Ok(Mode::OneCore)
    }

    /// At the end of a run of stored blocks, where the block after it
    /// starts (on the byte where the run ends): another run soon after is
    /// bridged to, else the rounds go on from there, else one core, primed
    /// with the run's last 32 KiB.
    fn leave_run(&mut self, run: InPlace, rounds: Option<MemberRounds<'a>>) -> Result<Mode<'a>> {
        let end = run.end();
        let window = run.window(self.walk.gz);
        let next = in_place::bridge(&mut self.walk, end * 8, &window)?;
        let next = match next {
            Some(bit) => InPlace::at(&self.walk, bit)?,
            None => None,
        };
        if let Some(next) = next {
            self.counts.runs_in_place += 1;
            return Ok(Mode::InPlace(next, rounds));
        }
        if let Some(mut r) = rounds {
            if r.restart(end, window.clone()) {
                return Ok(Mode::Rounds(r));
            }
            self.retire(r);
        }
        self.one
            .prime(&self.walk, &deflate::primer(&window, 0).bytes, window.len())?;
        self.walk.pos = end;
        Ok(Mode::OneCore)
    }
}

/// [`gzip::next_member`] at the walk's position, reading only input it
/// waited for: zero padding is passed a MiB at a time, and a header read
/// from its first [`HEADER_MAX`](crate::HEADER_MAX) bytes, or from the
/// rest of the payload when its fields run longer (the answer, and its
/// error's text, are the same as from the whole input).
fn next_member(w: &Walk<'_>) -> Result<Option<gzip::Member>> {
    if w.gate.whole() {
        return gzip::next_member(w.gz, w.pos);
    }
    let len = w.gz.len();
    let mut at = w.pos;
    if at > 0 {
        loop {
            if at >= len {
                return Ok(None);
            }
            let to = at.saturating_add(1 << 20).min(len);
            w.need(at..to)?;
            match w.gz[at..to].iter().position(|&b| b != 0) {
                Some(skip) => {
                    at += skip;
                    break;
                }
                None => at = to,
            }
        }
    }
    let head = w.upto(at, at.saturating_add(crate::HEADER_MAX))?;
    match gzip::next_member(head, at) {
        Ok(Some(m)) => Ok(Some(m)),
        _ if head.len() < len => gzip::next_member(w.upto(at, len)?, at),
        other => other,
    }
}
