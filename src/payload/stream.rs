//! A gzip payload inflated as a bounded stream: bytes come out in the
//! caller's window, so memory follows the window, never the payload.
//!
//! This is the path for payloads too large to inflate whole (over
//! [`Limits::inflate_budget`](crate::Limits::inflate_budget)) and for those
//! whose trailer cannot be trusted. The inflater is zlib-rs (through
//! flate2's raw-DEFLATE interface), which measured as fast as one-shot
//! libdeflate on `big_pkg2.neff` and 17 times faster on a payload of zeros,
//! since its output stays in cache (PERF.md §10). With a core free
//! (`GzStream::new_parallel`, `parallel::core_free`) and 16 MiB of gzip or
//! more, two cores share the work:
//!
//! - every member of 16 MiB of gzip or more (`ROUNDS_FROM`) is inflated in
//!   parallel rounds of its own (`parallel::Rounds`, their buffers and
//!   learned segment size kept from member to member), over its DEFLATE
//!   data up to the next gzip header found after it (or the payload's end),
//!   and checked against its trailer at its end. That end is a guess
//!   (header-like bytes occur inside DEFLATE data): where the member's
//!   final block does not end there, its last round fails and one core
//!   takes over, as below. A round that does not decode
//!   (the member ends inside it, a segment over its output cap, no block
//!   start found) or that finds stored blocks (incompressible data, where
//!   copying is all the work and one core is faster) hands over to the
//!   one-core inflater, primed with the last 32 KiB the rounds produced, at
//!   the end of the last good round: nothing is inflated twice
//!   (`NEFF_DEBUG=1` prints why). Until the member's trailer matches, any
//!   failure is doubtful (the rounds' bytes may be at fault): the walk
//!   reads the payload again on one core;
//! - smaller members are inflated two at a time (`member_round`): while
//!   one member goes on, the next is inflated ahead from the first gzip
//!   header after the input position, and taken over when the member
//!   before really ends there. Each side produces at most 16 MiB a round.
//!   A large member is not inflated ahead (on one core): it waits for its
//!   own rounds.
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

use flate2::{Decompress, FlushDecompress, Status};

use super::deflate::{self, WINDOW};
use super::gzip::{self, Trailer, TRAILER};
use super::parallel::{self, Rounds, PARALLEL_FROM};
use super::stored::{self, At};
use crate::error::{debug, Error, Result};

/// Compressed bytes per segment of the parallel rounds, at first (then
/// sized from the ratio seen so far).
const SEGMENT: usize = 4 << 20;
/// From this inflated:compressed ratio (the trailer's word) a single
/// member is not inflated in rounds: see [`GzStream::new_parallel`].
const LONG_RUNS: u64 = 12;
/// Most output one segment may produce before the rounds give up.
const SEGMENT_OUT: usize = 64 << 20;
/// Members of this many compressed bytes or more are inflated in parallel
/// rounds (each on both cores); smaller ones two at a time.
const ROUNDS_FROM: usize = 16 << 20;

/// Output of the parallel rounds waiting to be taken.
struct Par<'a> {
    rounds: Rounds<'a>,
    /// Where the rounds' raw DEFLATE data starts in the payload.
    base: usize,
    /// Which of the round's parts is being taken, and how far.
    part: usize,
    pos: usize,
    /// Where the rounds' input ends ([`GzStream::bound_rounds`]).
    end: MemberEnd,
}

/// Where a member's rounds take their input to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemberEnd {
    /// Not looked for yet: before the first round, the next gzip header is
    /// searched for.
    Unknown,
    /// The payload looks like one member: its last 8 bytes are taken for
    /// this member's trailer, without a search.
    Payload,
    /// The input is cut where the member is guessed to end.
    Cut,
}

/// Most output one side of a member round produces.
const MEMBER_OUT: usize = 16 << 20;
/// How far past the input position the next member's header is looked for.
const LOOK_AHEAD: usize = 64 << 20;

/// A member inflated ahead, from a header found by search (not yet known
/// to be the next member's start).
struct Ahead {
    /// Where its header starts, and its DEFLATE data.
    at: usize,
    data: usize,
    /// The input position its inflater reached.
    pos: usize,
    inflater: Decompress,
    crc: libdeflater::Crc,
    /// Its output, `buf[..len]` (all it produced).
    buf: Vec<u8>,
    len: usize,
    /// Its DEFLATE stream ended at `pos`.
    ended: bool,
}

/// Stored data a run must hold before it is read in place: below this the
/// inflater's copy costs about what leaving and priming it again does.
const MIN_RUN: usize = 256 << 10;
/// Most stored data one skip checksums at a time (its pieces are listed
/// first, then summed, on two cores when one is free).
const SKIP_BATCH: usize = 64 << 20;
/// A skip of stored data from this size is checksummed on two cores.
const CRC_SPLIT_FROM: usize = 1 << 20;

/// How far past the end of a run of stored blocks the next run is looked
/// for, and the most output what lies between may inflate to.
const BRIDGE_SEARCH: usize = 256 << 10;
const BRIDGE_OUT: usize = 4 << 20;

/// A run of stored blocks being read in place ([`stored`]): their bytes
/// are the output, copied out or checksummed where they lie.
struct InPlace {
    /// The current block's data not yet handed out (payload offsets).
    data: std::ops::Range<usize>,
    /// The current block is the member's last.
    last: bool,
    /// The latest blocks' data, newest last: at least the 32 KiB window
    /// once the run holds that much, for the inflater that takes over.
    recent: std::collections::VecDeque<std::ops::Range<usize>>,
    recent_len: usize,
    /// The parallel rounds go on after the run (else the one-core inflater).
    rounds: bool,
}

impl InPlace {
    fn new(b: stored::Block, rounds: bool) -> InPlace {
        let mut ip = InPlace {
            data: b.data.clone(),
            last: b.last,
            recent: std::collections::VecDeque::new(),
            recent_len: 0,
            rounds,
        };
        ip.remember(b.data);
        ip
    }

    fn remember(&mut self, data: std::ops::Range<usize>) {
        // Empty blocks add nothing to the window: kept, a run of millions
        // of them (5 bytes each) would grow this list with the input.
        if data.is_empty() {
            return;
        }
        self.recent_len += data.len();
        self.recent.push_back(data);
        while let Some(f) = self.recent.front() {
            if self.recent_len - f.len() < WINDOW {
                break;
            }
            self.recent_len -= f.len();
            self.recent.pop_front();
        }
    }

    /// The last 32 KiB of the run (all of it when shorter).
    fn window(&self, gz: &[u8]) -> Vec<u8> {
        let mut w = Vec::with_capacity(self.recent_len);
        for r in &self.recent {
            w.extend_from_slice(&gz[r.clone()]);
        }
        w.drain(..w.len().saturating_sub(WINDOW));
        w
    }
}

/// Inflates from `input` into `buf` until the DEFLATE stream ends, `buf`
/// is full or no progress is made: (input used, bytes written, ended).
fn inflate_some(
    z: &mut Decompress,
    input: &[u8],
    buf: &mut [u8],
) -> std::result::Result<(usize, usize, bool), ()> {
    let (in0, out0) = (z.total_in(), z.total_out());
    loop {
        let (used, n) = (
            (z.total_in() - in0) as usize,
            (z.total_out() - out0) as usize,
        );
        if n == buf.len() {
            return Ok((used, n, false));
        }
        let status = z
            .decompress(&input[used..], &mut buf[n..], FlushDecompress::None)
            .map_err(|_| ())?;
        let (used2, n2) = (
            (z.total_in() - in0) as usize,
            (z.total_out() - out0) as usize,
        );
        if status == Status::StreamEnd {
            return Ok((used2, n2, true));
        }
        if used2 == used && n2 == n {
            return Ok((used2, n2, false));
        }
    }
}

/// A gzip payload being inflated, one window at a time.
pub struct GzStream<'a> {
    gz: &'a [u8],
    /// Input position: the next byte to inflate, or to read as framing.
    pos: usize,
    /// Where the member being inflated starts (for messages).
    member_at: usize,
    in_member: bool,
    inflater: Decompress,
    crc: libdeflater::Crc,
    member_out: u64,
    total_out: u64,
    cap: u64,
    done: bool,
    par: Option<Par<'a>>,
    /// Members inflated two at a time (see [`Ahead`]), when several
    /// members may follow and a core is free.
    members_par: bool,
    /// The segment size and output cap of the parallel rounds a large
    /// member is inflated in (`None`: no rounds), and the least compressed
    /// size that makes a member large ([`ROUNDS_FROM`]; the tests' is 0).
    rounds: Option<(usize, usize)>,
    rounds_from: usize,
    /// The inflated:compressed ratio from which a member is not cut into
    /// rounds ([`LONG_RUNS`]; the tests' is never).
    long_runs: u64,
    /// The payload looks like one member ([`GzStream::new_parallel`]): the
    /// first member's rounds run to the payload's end without a search for
    /// its end (a wrong guess costs the member's last round, as any).
    single: bool,
    /// The last member's rounds, kept for their buffers when they are done.
    old_rounds: Option<Rounds<'a>>,
    /// A large member starts here: it is read in rounds when it starts,
    /// not inflated ahead on the free core while the member before ends.
    large_at: Option<usize>,
    /// A second member was met: members go two at a time from now on.
    several: bool,
    /// The next member, inflated ahead on another core.
    ahead: Option<Ahead>,
    /// Members taken over from the ones inflated ahead.
    adopted: usize,
    /// A header-like offset found not to start the next member (so that
    /// the same false candidate is not tried again).
    not_a_member: usize,
    /// No member header starts before this offset (searched already).
    no_header_before: usize,
    /// Output of a member round (`pending[pending_at..pending_len]` not
    /// yet handed out), and the buffer the next member ahead fills: both
    /// allocated once, of [`MEMBER_OUT`] bytes.
    pending: Vec<u8>,
    pending_at: usize,
    pending_len: usize,
    spare: Vec<u8>,
    /// Bytes of the member being read came from the parallel rounds and
    /// its trailer has not vouched for them yet: a failure now may be the
    /// rounds' own (see [`fill`](GzStream::fill)).
    unchecked: bool,
    /// A failure while [`unchecked`](Self::unchecked): what was produced
    /// is not to be trusted (see [`doubtful`](GzStream::doubtful)).
    doubt: bool,
    /// A run of stored blocks read in place, when the stream is in one.
    in_place: Option<InPlace>,
    /// A run of stored blocks was looked for before the rounds' first.
    bridged_start: bool,
    /// Runs of stored blocks entered (for the tests).
    runs_in_place: usize,
    /// Members whose rounds were set up, and the times the rounds handed
    /// over to one core (for the tests).
    members_in_rounds: usize,
    handovers: usize,
    /// From this payload size a run of stored blocks is looked for soon
    /// after each member's start ([`PARALLEL_FROM`]; the tests' is 0).
    bridge_from: usize,
    /// Told of input ranges the inflater has passed (see
    /// [`release_behind`](GzStream::release_behind)), and how far it was told.
    release: Option<&'a dyn Passed>,
    released: usize,
}

/// What a [`GzStream`] tells of the input it has gone past.
pub(crate) trait Passed {
    /// The input bytes `range` (offsets into the payload) need not stay in
    /// memory: this stream will not read them again, or only looked ahead
    /// at them and reads them again later (from the file).
    fn passed(&self, range: std::ops::Range<usize>);
}

impl<F: Fn(std::ops::Range<usize>)> Passed for F {
    fn passed(&self, range: std::ops::Range<usize>) {
        self(range)
    }
}

/// Input is released behind the inflater in steps of this many bytes.
const RELEASE_STEP: usize = 8 << 20;

impl std::fmt::Debug for GzStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzStream")
            .field("pos", &self.pos)
            .field("total_out", &self.total_out)
            .finish()
    }
}

impl<'a> GzStream<'a> {
    /// A stream over the gzip payload `gz`, producing at most `cap` bytes.
    pub(crate) fn new(gz: &'a [u8], cap: u64) -> Result<GzStream<'a>> {
        gzip::check_len(gz)?;
        Ok(GzStream {
            gz,
            pos: 0,
            member_at: 0,
            in_member: false,
            inflater: Decompress::new(false),
            crc: libdeflater::Crc::new(),
            member_out: 0,
            total_out: 0,
            cap,
            done: false,
            par: None,
            members_par: false,
            rounds: None,
            rounds_from: ROUNDS_FROM,
            long_runs: LONG_RUNS,
            single: false,
            old_rounds: None,
            large_at: None,
            several: false,
            ahead: None,
            adopted: 0,
            not_a_member: 0,
            no_header_before: 0,
            pending: Vec::new(),
            pending_at: 0,
            pending_len: 0,
            spare: Vec::new(),
            unchecked: false,
            doubt: false,
            in_place: None,
            bridged_start: false,
            runs_in_place: 0,
            members_in_rounds: 0,
            handovers: 0,
            bridge_from: PARALLEL_FROM,
            release: None,
            released: 0,
        })
    }

    /// Calls `release` with each range of the input (offsets into `gz`)
    /// that the inflater has gone past, a few MiB at a time, so that the
    /// caller can drop those pages of a mapped file.
    pub(crate) fn release_behind(mut self, release: &'a dyn Passed) -> Self {
        self.release = Some(release);
        self
    }

    /// Tells the release hook that the input before `upto` is done with.
    fn passed(&mut self, upto: usize) {
        if let Some(f) = self.release {
            if upto >= self.released + RELEASE_STEP {
                f.passed(self.released..upto);
                self.released = upto;
            }
        }
    }

    /// [`new`](Self::new), inflating on two cores when the payload is large
    /// and a core is free (not inside a pool that already keeps every core
    /// busy: [`parallel::core_free`]): every member of [`ROUNDS_FROM`]
    /// compressed bytes or more is inflated in parallel rounds, smaller
    /// ones two at a time (see [`parallel_with`](Self::parallel_with)).
    pub(crate) fn new_parallel(gz: &'a [u8], cap: u64) -> Result<GzStream<'a>> {
        if gz.len() < PARALLEL_FROM || !parallel::core_free() {
            return GzStream::new(gz, cap);
        }
        let mut s = GzStream::with_rounds(gz, cap, SEGMENT, SEGMENT_OUT, ROUNDS_FROM)?;
        let isize = u64::from(Trailer::last(gz).isize);
        // One member holding the whole tar, as `pack`, gzip and zlib write
        // it, is the common case: its last trailer gives a size in whole tar
        // blocks, no less than the payload (stored blocks add 5 bytes in
        // 64 KiB). The searches for member ends (80 MiB of input read
        // before the first round: 2-4 % of listing 256 MiB of tar) are
        // then skipped. (Long runs, 12:1 and more, are such a payload too:
        // `bound_rounds` sends them to one core before the first round.)
        let whole_blocks = isize % 512 == 0 && isize >= gz.len() as u64 - gz.len() as u64 / 64;
        s.single = gzip::may_end_with_trailer(gz) && whole_blocks;
        Ok(s)
    }

    /// A stream that takes every parallel path, whatever the payload's
    /// size: every member is inflated in rounds of `seg`-byte segments
    /// producing at most `out_cap` each ([`Rounds`]), checked against its
    /// trailer at its end, and members handed over to one core go two at
    /// a time. When the rounds' bytes do not match a trailer, or the rounds
    /// fail in a way the one-core inflater cannot take over from, the
    /// stream errs and [`doubtful`](Self::doubtful) says so: the caller
    /// starts over with [`new`](Self::new). The tests and fuzz targets force
    /// it on small payloads to compare it with [`new`](Self::new).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn parallel_with(
        gz: &'a [u8],
        cap: u64,
        seg: usize,
        out_cap: usize,
    ) -> Result<GzStream<'a>> {
        let mut s = GzStream::with_rounds(gz, cap, seg, out_cap, 0)?;
        s.long_runs = u64::MAX;
        Ok(s)
    }

    /// A stream whose members of `from` compressed bytes or more are
    /// inflated in parallel rounds of `seg`-byte segments (each producing
    /// at most `out_cap`); smaller members go two at a time.
    fn with_rounds(
        gz: &'a [u8],
        cap: u64,
        seg: usize,
        out_cap: usize,
        from: usize,
    ) -> Result<GzStream<'a>> {
        let mut s = GzStream::new(gz, cap)?;
        s.members_par = true;
        s.rounds = Some((seg, out_cap));
        s.rounds_from = from;
        Ok(s)
    }

    /// Where the member whose DEFLATE data starts at `data` may end: the
    /// offset of the trailer before the first gzip header found within
    /// [`LOOK_AHEAD`] bytes, else of the payload's last 8 bytes. A guess
    /// (a header's bytes can occur inside DEFLATE data, and a member can
    /// be longer than the search): the rounds over `data..end` check it.
    /// The second value says whether a header was found.
    fn member_end(&self, data: usize) -> Option<(usize, bool)> {
        let gz = self.gz;
        let limit = data.saturating_add(LOOK_AHEAD).min(gz.len());
        let (end, found) = match self.header_after(data, limit) {
            Some((at, _)) => (at.checked_sub(TRAILER)?, true),
            None => (gz.len().checked_sub(TRAILER)?, false),
        };
        (end >= data).then_some((end, found))
    }

    /// The first gzip member header starting in `from..to` that looks as
    /// encoders write them (XFL 0, 2 or 4; an OS code RFC 1952 lists, or
    /// 255) and whose DEFLATE data may start a stream
    /// ([`deflate::may_start_stream`]): its offset, and its data's.
    /// Header-like bytes inside DEFLATE data are mostly passed over (one
    /// 256 MiB payload of GNU gzip -9 held one that passed the gzip tests
    /// alone), not all: the callers treat the answer as a guess. (A real
    /// member this passes over is only not read ahead or in rounds of its
    /// own: it is still read where the member before ends.)
    fn header_after(&self, mut from: usize, to: usize) -> Option<(usize, usize)> {
        while from < to {
            let (at, data) = gzip::header_after(self.gz, from, to)?;
            let (xfl, os) = (self.gz[at + 8], self.gz[at + 9]);
            if matches!(xfl, 0 | 2 | 4)
                && (os <= 13 || os == 255)
                && deflate::may_start_stream(self.gz, data)
            {
                return Some((at, data));
            }
            from = at + 1;
        }
        None
    }

    /// Sets up parallel rounds over the member whose DEFLATE data starts at
    /// `data` (a block boundary), to the payload's end for now (their end
    /// is looked for before their first round: [`bound_rounds`](Self::bound_rounds)).
    /// `false` (nothing changed) when rounds are off or the member is
    /// smaller than `rounds_from`; then, when another member follows,
    /// members go two at a time from this one on.
    fn member_rounds(&mut self, data: usize) -> bool {
        let Some((seg, out_cap)) = self.rounds else {
            return false;
        };
        let gz = self.gz;
        let last = gz.len() - TRAILER; // `check_len`: at least a trailer
        if data >= last {
            return false;
        }
        // A member that starts with a run of stored blocks goes to the
        // rounds without the search for its size (1.5 ms of 60 on 256 MiB
        // of them): the run is read in place, and the rounds' first round,
        // if any, is bounded by the member's end as always.
        let stored = stored::run_len(gz, data * 8, MIN_RUN) >= MIN_RUN;
        let single = std::mem::take(&mut self.single);
        if !stored && !single {
            let (large, followed) = self.size(data);
            self.several |= followed;
            if !large {
                return false;
            }
            // As in `bound_rounds`: the pages the size search read go.
            if let Some(f) = self.release {
                f.passed(data..data.saturating_add(self.rounds_from).min(last));
            }
        }
        let rounds = match self.old_rounds.take() {
            Some(mut r) => {
                r.renew(&gz[data..last]);
                r
            }
            None => Rounds::new(&gz[data..last], seg, out_cap),
        };
        self.par = Some(Par {
            rounds,
            base: data,
            part: 3,
            pos: 0,
            end: if single {
                MemberEnd::Payload
            } else {
                MemberEnd::Unknown
            },
        });
        self.unchecked = true;
        self.bridged_start = false;
        self.members_in_rounds += 1;
        true
    }

    /// Before a member's first round: its rounds' input is cut at the end
    /// [`member_end`](Self::member_end) guesses (or, for a payload taken for
    /// one member, left to the payload's end). `true` when the trailer there
    /// says the member inflates [`LONG_RUNS`]:1 or more: such data is long
    /// runs (zero padding between small stretches), which zlib-rs inflates
    /// in cache faster than the rounds' second segment can be decoded (its
    /// window never clears of the unknown bytes the runs copy), so the
    /// rounds would only fail and hand over (3 GiB of zeros with 3 % noise:
    /// 0.67 s against 0.54 s on one core); the caller hands over at once,
    /// and `NEFF_DEBUG=1` says so. (ISIZE is the size mod 2³²: past 4 GiB a
    /// long-run member may still be tried in rounds; and a wrong guess may
    /// read a stray ISIZE: then one member is read on one core.)
    fn bound_rounds(&mut self) -> bool {
        let par = self.par.as_ref().expect("parallel");
        let (base, from, end) = (par.base, par.base + par.rounds.consumed(), par.end);
        let end = match end {
            MemberEnd::Cut => return false,
            MemberEnd::Payload => self.gz.len() - TRAILER,
            MemberEnd::Unknown => {
                let Some((end, found)) = self.member_end(from) else {
                    return false;
                };
                // The search read ahead of the rounds: those pages are
                // dropped (the rounds fault them in again from the page
                // cache when they get there), so that memory follows the
                // rounds, not the search (up to 64 MiB more otherwise: 77
                // -> 116 MiB on 256 MiB of tar).
                if let Some(f) = self.release {
                    let searched = if found {
                        end + TRAILER
                    } else {
                        from.saturating_add(LOOK_AHEAD).min(self.gz.len())
                    };
                    f.passed(from..searched);
                }
                end
            }
        };
        let len = (end - base).max(1);
        let isize = Trailer::at(self.gz, end).map_or(0, |t| u64::from(t.isize));
        let par = self.par.as_mut().expect("parallel");
        par.end = MemberEnd::Cut;
        par.rounds.truncate(end - base);
        if isize >= (len as u64).saturating_mul(self.long_runs) {
            debug(format_args!(
                "gzip member at offset {} of {len} bytes inflating to {isize} ({}:1, long runs): \
                 inflated on one core, where that is fastest",
                self.member_at,
                isize / len as u64
            ));
            return true;
        }
        false
    }

    /// Whether this stream's parallel rounds failed or did not check out:
    /// its error (and anything read before it) is to be discarded and the
    /// payload inflated again sequentially.
    pub fn doubtful(&self) -> bool {
        self.doubt
    }

    /// [`fill`](Self::fill) from the parallel rounds.
    fn fill_par(&mut self, out: &mut [u8]) -> Result<usize> {
        loop {
            let par = self.par.as_mut().expect("parallel");
            if par.part < 3 && par.pos < par.rounds.parts()[par.part].len() {
                break;
            }
            if par.part < 3 {
                par.part += 1;
                par.pos = 0;
                continue;
            }
            // Every part handed out: the next round starts at a known block
            // boundary. Stored blocks from there are read in place.
            if let Some(bit) = par.rounds.stored_next(MIN_RUN) {
                let at = par.base * 8 + bit;
                debug(format_args!(
                    "gzip member at offset {}: stored blocks (incompressible data) from offset {}: \
                     read in place, checksummed on the free core",
                    self.member_at,
                    at / 8
                ));
                // `stored_next` found a stored block there: entered.
                self.enter_in_place(at, true);
                return self.fill_any(out);
            }
            // Before the first round, and after a round of data that hardly
            // compresses: a run of stored blocks soon after is read in place,
            // what lies before it inflated at once.
            if !self.bridged_start || par.rounds.incompressible() {
                self.bridged_start = true;
                if let Some(bit) = par.rounds.next_bit() {
                    let (at, window) = (par.base * 8 + bit, par.rounds.window().to_vec());
                    if self.bridge_to_stored(at, &window, true)? {
                        debug(format_args!(
                            "gzip member at offset {}: stored blocks (incompressible data) after \
                             offset {}: read in place, checksummed on the free core",
                            self.member_at,
                            at / 8
                        ));
                        return self.fill_any(out);
                    }
                }
            }
            let par = self.par.as_mut().expect("parallel");
            if par.rounds.incompressible() {
                debug(format_args!(
                    "gzip member at offset {}: stored blocks (incompressible data) from offset {}: \
                     inflating the rest on one core, where copying is all the work",
                    self.member_at,
                    par.base + par.rounds.consumed()
                ));
                return self.resume_sequential(out);
            }
            if self.bound_rounds() {
                return self.resume_sequential(out);
            }
            let par = self.par.as_mut().expect("parallel");
            match par.rounds.next_round() {
                Ok(true) => {
                    par.part = 0;
                    par.pos = 0;
                    let upto = par.base + par.rounds.consumed();
                    self.passed(upto);
                }
                Ok(false) => {
                    let (rounds, markers, share) = par.rounds.stats();
                    debug(format_args!(
                        "gzip member at offset {}: {rounds} parallel rounds, {markers} symbols \
                         marker-decoded, segment B's last share {share}/64",
                        self.member_at
                    ));
                    // The member's DEFLATE stream ended where its trailer
                    // was expected: everything produced must be what that
                    // trailer says. The caller goes on to the next member.
                    let end = par.base + par.rounds.consumed();
                    self.old_rounds = self.par.take().map(|p| p.rounds);
                    self.pos = end;
                    self.passed(end);
                    self.end_member()?;
                    return Ok(0);
                }
                Err(_) => {
                    // No block start near a cut, a window that never
                    // cleared, a segment over its output cap, the member's
                    // end (another member follows) or corrupt data: the
                    // rest is inflated on one core from where the last
                    // good round ended, with its window (nothing is
                    // inflated twice). Corrupt data is then refused there.
                    debug(format_args!(
                        "gzip member at offset {}: a parallel round from offset {} did not decode: \
                         inflating the rest on one core",
                        self.member_at,
                        par.base + par.rounds.consumed()
                    ));
                    return self.resume_sequential(out);
                }
            }
        }
        let par = self.par.as_mut().expect("parallel");
        let from = &par.rounds.parts()[par.part][par.pos..];
        let n = out.len().min(from.len());
        out[..n].copy_from_slice(&from[..n]);
        par.pos += n;
        self.crc.update(&out[..n]);
        self.member_out += n as u64;
        self.count_out(n)?;
        Ok(n)
    }

    /// Skips up to `n` bytes of the parallel rounds' output without copying
    /// it: its CRC-32 is taken where it lies, on two cores when it is large.
    /// 0 once the round's parts are all handed out (the caller goes on
    /// through [`fill`](Self::fill), which runs the next round).
    fn skip_par(&mut self, n: u64) -> Result<u64> {
        let par = self.par.as_mut().expect("parallel");
        let mut left = usize::try_from(n).unwrap_or(usize::MAX);
        let (mut part, mut pos) = (par.part, par.pos);
        let parts = par.rounds.parts();
        let mut pieces = Vec::with_capacity(3);
        while part < 3 && left > 0 {
            let p = &parts[part][pos.min(parts[part].len())..];
            let take = p.len().min(left);
            if take > 0 {
                pieces.push(&p[..take]);
            }
            left -= take;
            if take == p.len() {
                part += 1;
                pos = 0;
            } else {
                pos += take;
            }
        }
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let split = total >= CRC_SPLIT_FROM && parallel::core_free();
        let crc = stored::crc(&pieces, self.crc.sum(), split);
        (par.part, par.pos) = (part, pos);
        self.crc = libdeflater::Crc::with_initial(crc);
        self.member_out += total as u64;
        self.count_out(total)?;
        Ok(total as u64)
    }

    /// Leaves the parallel rounds for the sequential inflater, which takes
    /// over at the end of the last round delivered (every byte before it
    /// already given out and counted in the member's CRC-32), primed with
    /// that round's window; then fills `out` from there.
    fn resume_sequential(&mut self, out: &mut [u8]) -> Result<usize> {
        let par = self.par.take().expect("parallel");
        self.handovers += 1;
        let resume = par.rounds.resume();
        self.old_rounds = Some(par.rounds);
        let Some(r) = resume else {
            // The rounds finished: nothing is left to inflate but the check.
            return Err(self.corrupt());
        };
        self.in_member = true;
        self.prime(&r.head, r.window_len)?;
        self.pos = par.base + r.from;
        self.fill_any(out)
    }

    /// Starts the one-core inflater afresh on `head`, a synthetic stream
    /// that outputs the known window (`window_len` bytes, dropped) and ends
    /// where the real data resumes.
    fn prime(&mut self, head: &[u8], window_len: usize) -> Result<()> {
        self.inflater.reset(false);
        let mut scratch = vec![0u8; window_len + 64];
        let done = self
            .inflater
            .decompress(head, &mut scratch, FlushDecompress::None);
        let primed = matches!(done, Ok(Status::Ok))
            && self.inflater.total_in() == head.len() as u64
            && self.inflater.total_out() == window_len as u64;
        if !primed {
            return Err(self.corrupt());
        }
        Ok(())
    }

    /// Enters the run of stored blocks whose first header starts at bit
    /// `bit` of the payload (a known block boundary); `false` when no
    /// stored block starts there.
    fn enter_in_place(&mut self, bit: usize, rounds: bool) -> bool {
        match stored::block_at(self.gz, bit) {
            At::Stored(b) => {
                self.in_place = Some(InPlace::new(b, rounds));
                self.runs_in_place += 1;
                true
            }
            At::Other | At::Bad => false,
        }
    }

    /// In a run whose current block is done: moves into the next block
    /// if it is stored too; `false` when the run ends here (the member's
    /// final block, or a block that is not stored).
    fn next_stored_block(&mut self) -> Result<bool> {
        let ip = self.in_place.as_mut().expect("in place");
        if ip.last {
            return Ok(false);
        }
        match stored::block_at(self.gz, ip.data.end * 8) {
            At::Stored(b) => {
                ip.data = b.data.clone();
                ip.last = b.last;
                ip.remember(b.data);
                Ok(true)
            }
            At::Other => Ok(false),
            At::Bad => Err(self.corrupt()),
        }
    }

    /// Leaves the run at its end: the member ends with it (its trailer is
    /// checked), or the block after it, which starts on the byte where the
    /// run ends, goes to the rounds or to the one-core inflater, primed
    /// with the run's last 32 KiB.
    fn leave_in_place(&mut self) -> Result<()> {
        let ip = self.in_place.take().expect("in place");
        let end = ip.data.end;
        self.passed(end);
        if ip.last {
            self.old_rounds = self.par.take().map(|p| p.rounds);
            self.pos = end;
            return self.end_member();
        }
        let window = ip.window(self.gz);
        if self.bridge_to_stored(end * 8, &window, ip.rounds)? {
            return Ok(());
        }
        if ip.rounds {
            let par = self.par.as_mut().expect("parallel");
            if par.rounds.restart(end - par.base, window.clone()) {
                par.part = 3;
                par.pos = 0;
                return Ok(());
            }
            self.old_rounds = self.par.take().map(|p| p.rounds);
        }
        self.in_member = true;
        self.prime(&deflate::primer(&window, 0).bytes, window.len())?;
        self.pos = end;
        Ok(())
    }

    /// At bit `from`, a known block boundary after `window`, where a
    /// Huffman block starts (after a run of stored blocks, a tar header
    /// amid incompressible data, say; or the start of a member whose first
    /// blocks are compressible): looks for the next run of stored blocks
    /// within [`BRIDGE_SEARCH`] bytes, inflates what lies between
    /// (checked to end exactly where the run's first block starts, by the
    /// rounds' test: `parallel::inflate_between`) into `pending`, and
    /// enters that run. `false` when there is no such run.
    fn bridge_to_stored(&mut self, from: usize, window: &[u8], rounds: bool) -> Result<bool> {
        let gz = self.gz;
        let q = from / 8;
        let end = q
            .saturating_add(BRIDGE_SEARCH)
            .min(gz.len().saturating_sub(4));
        for l in q + 1..end {
            let (len, nlen) = (
                u16::from_le_bytes([gz[l], gz[l + 1]]),
                u16::from_le_bytes([gz[l + 2], gz[l + 3]]),
            );
            if len != !nlen {
                continue;
            }
            // The header's 3 bits end in the byte before LEN, padding after.
            for e in (l * 8).saturating_sub(10)..=(l * 8).saturating_sub(3) {
                if e <= from || (e + 3).div_ceil(8) != l {
                    continue;
                }
                if stored::run_len(gz, e, MIN_RUN) < MIN_RUN {
                    continue;
                }
                let mut buf = std::mem::take(&mut self.pending);
                let room = BRIDGE_OUT + window.len() + parallel::BETWEEN_ROOM;
                if buf.len() < room {
                    buf = vec![0u8; room];
                }
                let got = parallel::inflate_between(gz, window, from, e, &mut buf);
                let Some(r) = got else {
                    self.pending = buf;
                    continue;
                };
                self.crc.update(&buf[r.clone()]);
                self.member_out += r.len() as u64;
                self.pending = buf;
                self.pending_at = r.start;
                self.pending_len = r.end;
                self.enter_in_place(e, rounds);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// [`fill`](Self::fill) from a run of stored blocks.
    fn fill_in_place(&mut self, out: &mut [u8]) -> Result<usize> {
        loop {
            let ip = self.in_place.as_mut().expect("in place");
            if !ip.data.is_empty() {
                let from = ip.data.start;
                let n = out.len().min(ip.data.len());
                ip.data.start += n;
                out[..n].copy_from_slice(&self.gz[from..from + n]);
                self.crc.update(&out[..n]);
                self.member_out += n as u64;
                self.count_out(n)?;
                self.passed(from + n);
                return Ok(n);
            }
            if !self.next_stored_block()? {
                self.leave_in_place()?;
                return self.fill_any(out);
            }
        }
    }

    /// Skips up to `n` bytes of a run of stored blocks without copying
    /// them: their CRC-32 is taken where they lie, on two cores when the
    /// stretch is large and a core is free. The bytes skipped; 0 when the
    /// run's current block is done and it ends there (the caller goes on
    /// through [`fill`](Self::fill), which leaves the run).
    fn skip_in_place(&mut self, n: u64) -> Result<u64> {
        let want = usize::try_from(n).unwrap_or(usize::MAX).min(SKIP_BATCH);
        let mut pieces = Vec::new();
        let mut total = 0usize;
        while total < want {
            let ip = self.in_place.as_mut().expect("in place");
            if ip.data.is_empty() {
                if !self.next_stored_block()? {
                    break;
                }
                continue;
            }
            let take = ip.data.len().min(want - total);
            pieces.push(ip.data.start..ip.data.start + take);
            ip.data.start += take;
            total += take;
        }
        let Some(end) = pieces.last().map(|p| p.end) else {
            return Ok(0);
        };
        let split = total >= CRC_SPLIT_FROM && parallel::core_free();
        let slices: Vec<&[u8]> = pieces.iter().map(|p| &self.gz[p.clone()]).collect();
        let crc = stored::crc(&slices, self.crc.sum(), split);
        self.crc = libdeflater::Crc::with_initial(crc);
        self.member_out += total as u64;
        self.count_out(total)?;
        self.passed(end);
        Ok(total as u64)
    }

    /// Counts `n` more bytes handed out; past the cap, refuses them.
    fn count_out(&mut self, n: usize) -> Result<()> {
        self.total_out += n as u64;
        if self.total_out > self.cap {
            return Err(Error::Limit {
                what: "inflated payload size",
                found: self.total_out,
                cap: self.cap,
            });
        }
        Ok(())
    }

    /// Bytes produced so far.
    pub(crate) fn produced(&self) -> u64 {
        self.total_out
    }

    fn corrupt(&self) -> Error {
        gzip::corrupt(self.member_at)
    }

    /// Starts the next member at `pos`, after skipping zero padding; `false`
    /// at the end of the input.
    fn start_member(&mut self) -> Result<bool> {
        let Some(member) = gzip::next_member(self.gz, self.pos)? else {
            self.pos = self.gz.len();
            return Ok(false);
        };
        self.member_at = member.at;
        self.pos = member.data;
        self.in_member = true;
        self.inflater.reset(false);
        self.crc = libdeflater::Crc::new();
        self.member_out = 0;
        if self.member_rounds(self.pos) {
            return Ok(true);
        }
        // The member's first block starts on its first byte: a run of
        // stored blocks there, or soon after (in a payload large enough
        // for the search to pay), is read in place.
        let from = self.pos * 8;
        if stored::run_len(self.gz, from, MIN_RUN) >= MIN_RUN {
            self.enter_in_place(from, false);
        } else if self.gz.len() >= self.bridge_from {
            self.bridge_to_stored(from, &[], false)?;
        }
        if self.in_place.is_some() {
            debug(format_args!(
                "gzip member at offset {}: stored blocks (incompressible data) at or soon after \
                 its start: read in place",
                self.member_at
            ));
        }
        Ok(true)
    }

    /// Inflates into `out`; the number of bytes written, 0 only at the end
    /// of the payload (every member's trailer checked). A failure of the
    /// member the parallel rounds began, before its trailer matched, is
    /// [`doubtful`](Self::doubtful) (the rounds' bytes may be at fault, not
    /// the file's): the caller reads the payload again sequentially.
    pub(crate) fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        self.fill_any(out)
            .inspect_err(|_| self.doubt |= self.unchecked)
    }

    /// [`fill`](Self::fill), from the rounds or not.
    fn fill_any(&mut self, out: &mut [u8]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_place.is_some() {
                if let Some(n) = self.take_pending(out)? {
                    return Ok(n);
                }
                return self.fill_in_place(out);
            }
            if self.par.is_some() {
                let n = self.fill_par(out)?;
                if n > 0 || self.par.is_some() {
                    return Ok(n);
                }
                // The rounds ended their member: on to the next.
                continue;
            }
            if let Some(n) = self.take_pending(out)? {
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            if !self.in_member {
                if self.members_par && self.adopt_ahead()? {
                    continue;
                }
                if !self.start_member()? {
                    self.done = true;
                    return Ok(0);
                }
                // Members two at a time once a second member is met.
                if self.members_par && self.member_at > 0 && !self.several {
                    self.several = true;
                    debug(format_args!(
                        "a second gzip member at offset {}: members are inflated two at a time",
                        self.member_at
                    ));
                }
                continue;
            }
            if self.several {
                if let Some(c) = self.candidate() {
                    self.member_round(c)?;
                    continue;
                }
            }
            let (in0, out0) = (self.inflater.total_in(), self.inflater.total_out());
            let status = self
                .inflater
                .decompress(&self.gz[self.pos..], out, FlushDecompress::None)
                .map_err(|_| self.corrupt())?;
            let used = (self.inflater.total_in() - in0) as usize;
            let n = (self.inflater.total_out() - out0) as usize;
            self.pos += used;
            self.passed(self.pos);
            self.crc.update(&out[..n]);
            self.member_out += n as u64;
            self.count_out(n)?;
            if status == Status::StreamEnd {
                self.end_member()?;
            } else if n == 0 && used == 0 {
                // No progress with input left to give: the member is cut short.
                return Err(self.corrupt());
            }
            if n > 0 {
                return Ok(n);
            }
        }
    }

    /// Hands out output a member round left, if any.
    fn take_pending(&mut self, out: &mut [u8]) -> Result<Option<usize>> {
        let (from, to) = (self.pending_at, self.pending_len);
        if from == to {
            return Ok(None);
        }
        let n = out.len().min(to - from);
        out[..n].copy_from_slice(&self.pending[from..from + n]);
        self.pending_at += n;
        self.count_out(n)?;
        Ok(Some(n))
    }

    /// At a member's start (the one before ended at `pos`): takes over
    /// the member inflated ahead if it starts where the walk finds the
    /// next member; `false` when there is none to take.
    fn adopt_ahead(&mut self) -> Result<bool> {
        let Some(a) = self.ahead.take() else {
            return Ok(false);
        };
        // The next member's real start, read as the sequential walk reads it.
        match gzip::next_member(self.gz, self.pos)? {
            Some(m) if m.at == a.at && m.data == a.data => {
                self.member_at = m.at;
                self.in_member = true;
                self.inflater = a.inflater;
                self.crc = a.crc;
                self.member_out = a.len as u64;
                self.pos = a.pos;
                self.spare = std::mem::replace(&mut self.pending, a.buf);
                self.pending_at = 0;
                self.pending_len = a.len;
                self.adopted += 1;
                if a.ended {
                    self.end_member()?;
                }
                Ok(true)
            }
            _ => {
                self.not_a_member = self.not_a_member.max(a.at);
                self.spare = a.buf;
                Ok(false)
            }
        }
    }

    /// A header that may start the next member, searched for within
    /// [`LOOK_AHEAD`] bytes of input past the position (and past any
    /// candidate found wrong, and any stretch already searched). A large
    /// member (see [`member_rounds`](Self::member_rounds)) is not a
    /// candidate: inflated ahead it would be read on one core, where it
    /// starts its own rounds once the member before ends.
    fn candidate(&mut self) -> Option<(usize, usize)> {
        if self.ahead.is_some() || self.large_at.is_some_and(|at| at >= self.pos) {
            return None;
        }
        let from = self
            .pos
            .max(self.not_a_member + 1)
            .max(self.no_header_before);
        let end = self.pos.saturating_add(LOOK_AHEAD).min(self.gz.len());
        if from >= end {
            return None;
        }
        let found = self.header_after(from, end);
        match found {
            None => self.no_header_before = end,
            Some((at, data)) if self.rounds.is_some() && self.size(data).0 => {
                self.large_at = Some(at);
                return None;
            }
            Some(_) => {}
        }
        found
    }

    /// Whether the member whose DEFLATE data would start at `data` holds
    /// `rounds_from` bytes or more (no gzip header starts before then, and
    /// the payload goes on), and whether a gzip header follows within them.
    fn size(&self, data: usize) -> (bool, bool) {
        let to = data.saturating_add(self.rounds_from);
        let followed = self.header_after(data, to.min(self.gz.len())).is_some();
        (
            !followed && to < self.gz.len().saturating_sub(TRAILER),
            followed,
        )
    }

    /// One member round: the member being inflated goes on (up to
    /// [`MEMBER_OUT`] bytes, into `pending`) while, on another core, the
    /// member that may start at `candidate` is inflated ahead (up to
    /// [`MEMBER_OUT`] too). When the member being read ends, the next one
    /// is read from its real start: if that is where the one ahead
    /// started, its output and inflater are taken over (nothing inflated
    /// twice); else (header-like bytes inside DEFLATE data) it is dropped.
    fn member_round(&mut self, candidate: (usize, usize)) -> Result<()> {
        let gz = self.gz;
        let mut here_buf = std::mem::take(&mut self.pending);
        let mut ahead_buf = std::mem::take(&mut self.spare);
        for b in [&mut here_buf, &mut ahead_buf] {
            if b.len() < MEMBER_OUT {
                *b = vec![0u8; MEMBER_OUT];
            }
        }
        let (inflater, crc, pos) = (&mut self.inflater, &mut self.crc, self.pos);
        let (here, ahead) = rayon::join(
            || {
                let r = inflate_some(inflater, &gz[pos..], &mut here_buf);
                if let Ok((_, n, _)) = r {
                    crc.update(&here_buf[..n]);
                }
                r
            },
            || {
                let (at, data) = candidate;
                let mut z = Decompress::new(false);
                let r = inflate_some(&mut z, &gz[data..], &mut ahead_buf);
                r.map(|(used, n, ended)| {
                    let mut c = libdeflater::Crc::new();
                    c.update(&ahead_buf[..n]);
                    (at, data, used, n, ended, z, c)
                })
            },
        );
        self.pending = here_buf;
        self.pending_at = 0;
        self.pending_len = 0;
        match ahead {
            Ok((at, data, used, len, ended, inflater, crc)) => {
                self.ahead = Some(Ahead {
                    at,
                    data,
                    pos: data + used,
                    inflater,
                    crc,
                    len,
                    buf: ahead_buf,
                    ended,
                });
            }
            Err(()) => {
                self.not_a_member = candidate.0;
                self.spare = ahead_buf;
            }
        }
        let (used, n, ended) = here.map_err(|()| self.corrupt())?;
        self.pending_len = n;
        self.pos += used;
        self.passed(self.pos);
        self.member_out += n as u64;
        if ended {
            self.end_member()?;
        } else if n == 0 && used == 0 {
            return Err(self.corrupt());
        }
        if let Some(a) = self.ahead.take() {
            if a.at < self.pos {
                // The member being read runs over it: not a member start.
                self.not_a_member = a.at;
                self.spare = a.buf;
            } else {
                self.ahead = Some(a);
            }
        }
        Ok(())
    }

    /// Checks the trailer of the member whose DEFLATE stream just ended.
    fn end_member(&mut self) -> Result<()> {
        let t = Trailer::at(self.gz, self.pos).ok_or_else(|| self.corrupt())?;
        if !t.describes(self.crc.sum(), self.member_out) {
            return Err(self.corrupt());
        }
        self.pos += TRAILER;
        self.in_member = false;
        self.unchecked = false;
        Ok(())
    }

    /// Skips `n` bytes of output using `window` as scratch; the bytes
    /// skipped (fewer than `n` only at the end of the payload).
    pub(crate) fn skip(&mut self, mut n: u64, window: &mut [u8]) -> Result<u64> {
        let mut done = 0;
        while n > 0 {
            if self.par.is_some() && self.in_place.is_none() {
                let got = self
                    .skip_par(n)
                    .inspect_err(|_| self.doubt |= self.unchecked)?;
                if got > 0 {
                    done += got;
                    n -= got;
                    continue;
                }
            }
            if self.in_place.is_some() && self.pending_at == self.pending_len {
                let got = self
                    .skip_in_place(n)
                    .inspect_err(|_| self.doubt |= self.unchecked)?;
                if got > 0 {
                    done += got;
                    n -= got;
                    continue;
                }
            }
            if self.pending_at < self.pending_len {
                // Output a member round or a bridge left: its CRC-32 was
                // taken as it was produced, so skipping it copies nothing.
                let left = usize::try_from(n).unwrap_or(usize::MAX);
                let take = (self.pending_len - self.pending_at).min(left);
                self.pending_at += take;
                self.count_out(take)
                    .inspect_err(|_| self.doubt |= self.unchecked)?;
                done += take as u64;
                n -= take as u64;
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
    pub(crate) fn finish(&mut self, window: &mut [u8]) -> Result<u64> {
        self.skip(u64::MAX, window)?;
        Ok(self.total_out)
    }
}

#[cfg(test)]
mod tests {
    use super::gzip::compress as gzip;
    use super::*;

    fn all(gz: &[u8], window: usize) -> Result<Vec<u8>> {
        let mut s = GzStream::new(gz, 1 << 30)?;
        let mut out = Vec::new();
        let mut w = vec![0u8; window];
        loop {
            let n = s.fill(&mut w)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&w[..n]);
        }
    }

    #[test]
    fn streams_every_member_past_padding_in_any_window() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut gz = gzip(&data);
        gz.extend(vec![0u8; 100]);
        gz.extend(gzip(b"second member"));
        let want = [&data[..], b"second member"].concat();
        for w in [1, 7, 4096, 1 << 20] {
            assert!(all(&gz, w).unwrap() == want, "window {w}");
        }
    }

    #[test]
    fn a_bad_trailer_reserved_flag_or_truncation_is_refused() {
        let gz = gzip(&b"abc".repeat(1000));
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 8] ^= 1;
        assert!(all(&bad, 64).is_err(), "CRC");
        let mut bad = gz.clone();
        bad[n - 1] ^= 1;
        assert!(all(&bad, 64).is_err(), "ISIZE");
        let mut bad = gz.clone();
        bad[3] |= 0x20;
        assert!(all(&bad, 64).is_err(), "reserved flag");
        assert!(all(&gz[..n - 3], 64).is_err(), "trailer cut");
        assert!(all(&gz[..n / 2], 64).is_err(), "data cut");
        let mut junk = gz.clone();
        junk.extend_from_slice(b"junk");
        let e = all(&junk, 64).unwrap_err().to_string();
        assert!(e.contains("neither a gzip member"), "{e}");
    }

    /// Text-like data with repeats and noise, over 1 MiB.
    fn corpus() -> Vec<u8> {
        let mut x = 3u64;
        let mut v = Vec::new();
        while v.len() < 3 << 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 3 {
                0 => v.extend_from_slice(&x.to_le_bytes()),
                1 => v.extend_from_slice(b"\"replica_groups\": [[0, 1, 2, 3]], "),
                _ => v.extend_from_slice(format!("sg{:02}/def.json ", x % 97).as_bytes()),
            }
        }
        v
    }

    fn drain(mut s: GzStream<'_>) -> (Result<Vec<u8>>, bool) {
        let mut out = Vec::new();
        let mut w = vec![0u8; 100_000];
        loop {
            match s.fill(&mut w) {
                Ok(0) => return (Ok(out), s.doubtful()),
                Ok(n) => out.extend_from_slice(&w[..n]),
                Err(e) => return (Err(e), s.doubtful()),
            }
        }
    }

    #[test]
    fn parallel_rounds_give_the_sequential_bytes() {
        let data = corpus();
        let gz = gzip(&data);
        for seg in [4 << 10, 64 << 10, 300 << 10] {
            let mut s = GzStream::parallel_with(&gz, 1 << 30, seg, SEGMENT_OUT).unwrap();
            let mut first = [0u8; 1];
            assert_eq!(s.fill(&mut first).unwrap(), 1);
            assert!(s.par.is_some());
            let (out, doubt) = drain(s);
            let out = out.map(|o| [&first[..], &o].concat());
            assert!(!doubt, "segment {seg}");
            assert!(out.unwrap() == data, "segment {seg}");
        }
    }

    #[test]
    fn parallel_rounds_that_do_not_check_out_are_doubted_not_trusted() {
        let data = corpus();
        let mut gz = gzip(&data);
        let n = gz.len();
        gz[n - 8] ^= 1; // the CRC: the rounds' bytes cannot be verified
        let (out, doubt) =
            drain(GzStream::parallel_with(&gz, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap());
        assert!(out.is_err() && doubt);
        // A copy of the trailer after the real one: the rounds must not
        // stop at the final block and match the copy (the sequential
        // stream refuses the copy as neither a member nor padding).
        let mut copy = gzip(&data);
        let n = copy.len();
        let t = copy[n - 8..].to_vec();
        copy.extend_from_slice(&t);
        let (out, _) =
            drain(GzStream::parallel_with(&copy, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap());
        assert!(out.is_err(), "the rounds accepted a trailer copy");
        let (out, _) = drain(GzStream::new(&copy, 1 << 30).unwrap());
        assert!(out.is_err());
    }

    /// Drains `s` in windows of 100,000 bytes; also says whether the
    /// rounds were left for one core, and the input the sequential
    /// inflater read.
    fn drain_handover(mut s: GzStream<'_>) -> (Vec<u8>, bool, u64) {
        let out = drain_ok(&mut s);
        (out, s.par.is_none(), s.inflater.total_in())
    }

    #[test]
    fn rounds_reaching_a_member_end_hand_over_to_one_core_without_starting_again() {
        // Members of 2 MiB or so: the rounds' last one (when less than a
        // round and a half and 1 MiB of search is left it takes the rest)
        // does not span the whole first member.
        let data: Vec<u8> = crate::payload::noise(8 << 20, 5)
            .iter()
            .map(|b| b & 15)
            .collect();
        let half = data.len() / 2;
        let mut two = gzip(&data[..half]);
        let first = two.len();
        two.extend(gzip(&data[half..]));
        // Taken for one member (what `new_parallel` guesses from a last
        // trailer that looks like a whole tar's), the first member's rounds
        // run past its end and fail there: one core takes over from the
        // last good round, and the second member gets rounds of its own.
        let mut s = GzStream::parallel_with(&two, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap();
        s.single = true;
        let (mut out, mut w, mut seq_in) = (Vec::new(), vec![0u8; 100_000], 0);
        loop {
            let n = s.fill(&mut w).expect("reads");
            if s.member_at == 0 {
                seq_in = s.inflater.total_in();
            }
            if n == 0 {
                break;
            }
            out.extend_from_slice(&w[..n]);
        }
        assert!(!s.doubtful() && out == data);
        assert_eq!((s.members_in_rounds, s.handovers), (2, 1));
        // The one-core inflater read the first member's tail only (its input
        // counts the primer too): nothing was inflated twice.
        assert!(
            seq_in > 0 && seq_in < first as u64 / 2,
            "{seq_in} of {first}"
        );
    }

    #[test]
    fn a_round_over_its_output_cap_hands_over_where_the_last_round_ended() {
        // Text, then 16 MiB of zeros (one segment would produce far more
        // than the 1 MiB cap), then text again.
        let mut data = corpus();
        let text = data.clone();
        data.extend(vec![0u8; 16 << 20]);
        data.extend_from_slice(&text);
        let gz = gzip(&data);
        let s = GzStream::parallel_with(&gz, 1 << 30, 64 << 10, 1 << 20).unwrap();
        let (out, handed_over, seq_in) = drain_handover(s);
        assert!(out == data);
        assert!(handed_over);
        // The first round (two segments of 64 KiB) was not read again.
        assert!(
            seq_in < gz.len() as u64 - (128 << 10),
            "{seq_in} of {}",
            gz.len()
        );
    }

    #[test]
    fn a_member_begun_in_rounds_that_fails_its_trailer_after_the_hand_over_is_doubted() {
        // As above, with the CRC-32 off: the bytes the rounds handed out are
        // checked only by that trailer, so its mismatch may be theirs; the
        // sequential pass gives the answer.
        let mut data = corpus();
        data.extend(vec![0u8; 16 << 20]);
        let mut gz = gzip(&data);
        let n = gz.len();
        gz[n - 8] ^= 1;
        let mut s = GzStream::parallel_with(&gz, 1 << 30, 64 << 10, 1 << 20).unwrap();
        let mut w = vec![0u8; 100_000];
        let e = loop {
            match s.fill(&mut w) {
                Ok(0) => panic!("a bad CRC-32 passed"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(s.par.is_none(), "not handed over");
        assert!(s.doubtful(), "{e}");
        let (out, doubt) = drain(GzStream::new(&gz, 1 << 30).unwrap());
        assert!(out.is_err() && !doubt);
    }

    #[test]
    fn stored_blocks_leave_the_rounds_after_one_round() {
        let data = crate::payload::noise(6 << 20, 9);
        let gz = gzip(&data);
        let s = GzStream::parallel_with(&gz, 1 << 30, 1 << 20, SEGMENT_OUT).unwrap();
        let (out, handed_over, seq_in) = drain_handover(s);
        assert!(out == data);
        assert!(handed_over);
        // One round of two 1 MiB segments, then one core for the rest.
        assert!(seq_in < gz.len() as u64 - (1 << 20), "{seq_in}");
    }

    #[test]
    fn a_last_round_of_stored_blocks_is_checked_not_doubted() {
        // Noise only, in one round (segment B runs to the stream's end):
        // the round finds stored blocks, but nothing is left to hand over,
        // so the trailer is checked, not the payload read again.
        let data = crate::payload::noise(6 << 20, 11);
        let gz = gzip(&data);
        let s = GzStream::parallel_with(&gz, 1 << 30, SEGMENT, SEGMENT_OUT).unwrap();
        let (out, doubt) = drain(s);
        assert!(!doubt, "the rounds were doubted");
        assert!(out.unwrap() == data);
    }

    /// Drains `s` in windows of 100,000 bytes, expecting no failure.
    fn drain_ok(s: &mut GzStream<'_>) -> Vec<u8> {
        let mut got = Vec::new();
        let mut w = vec![0u8; 100_000];
        loop {
            let n = s.fill(&mut w).expect("reads");
            if n == 0 {
                assert!(!s.doubtful());
                return got;
            }
            got.extend_from_slice(&w[..n]);
        }
    }

    #[test]
    fn every_large_member_is_inflated_in_its_own_rounds() {
        // Four members, each large enough for rounds (the forced threshold
        // is 0), padding between two of them: each gets rounds, each but
        // the one before the padding ends its rounds where its trailer is.
        let data = corpus();
        let quarter = data.len() / 4;
        let mut gz = Vec::new();
        for (i, part) in data.chunks(quarter).enumerate() {
            gz.extend(gzip(part));
            if i == 1 {
                gz.extend(vec![0u8; 100]);
            }
        }
        let members = data.chunks(quarter).count();
        let mut s = GzStream::parallel_with(&gz, 1 << 30, 16 << 10, SEGMENT_OUT).unwrap();
        let got = drain_ok(&mut s);
        assert!(got == data);
        assert_eq!(s.members_in_rounds, members);
        // Only the member before the padding was handed over to one core:
        // its end was guessed at the next header, after the zeros.
        assert_eq!(s.handovers, 1, "members handed over to one core");
        // With a real threshold, members under it go two at a time from
        // the first one on, and none of them gets rounds.
        let mut s = GzStream::with_rounds(&gz, 1 << 30, 16 << 10, SEGMENT_OUT, gz.len()).unwrap();
        assert!(drain_ok(&mut s) == data);
        assert!(s.several);
        assert_eq!(s.members_in_rounds, 0);
        assert!(s.adopted > 0, "no member was inflated ahead");
    }

    #[test]
    fn a_gzip_header_inside_a_member_costs_its_rounds_the_tail_not_the_answer() {
        // A member whose stored data holds a gzip header: its end is
        // guessed there, its last round fails there and one core goes on to
        // the real end; the member after it still gets its own rounds.
        let data = corpus();
        let mut fake = data[..200_000].to_vec();
        fake.extend_from_slice(&crate::payload::noise(50_000, 3));
        // A header as zlib writes it, then an empty fixed-Huffman block.
        fake.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0]);
        fake.extend_from_slice(&crate::payload::noise(50_000, 4));
        fake.extend_from_slice(&data[..200_000]);
        // zlib at level 6 keeps the noise, header and all, in stored blocks.
        let mut gz = {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
            e.write_all(&fake).unwrap();
            e.finish().unwrap()
        };
        let header = memchr::memmem::find(&gz[10..], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
        assert!(header.is_some(), "the header is not in the member's bytes");
        let second = gz.len();
        gz.extend(gzip(&data));
        let want = [&fake[..], &data[..]].concat();
        let mut s = GzStream::parallel_with(&gz, 1 << 30, 16 << 10, SEGMENT_OUT).unwrap();
        let (guess, found) = s.member_end(10).unwrap();
        assert!(
            found && guess + TRAILER < second,
            "the member's end was not guessed wrong"
        );
        assert!(drain_ok(&mut s) == want);
        assert_eq!(s.members_in_rounds, 2);
        // One core read the first member's tail, after its last round
        // failed where the member did not end; the second member's rounds
        // ended where its trailer is.
        assert_eq!(s.handovers, 1);
        assert!(guess < second);
    }

    #[test]
    fn a_payload_taken_for_one_member_runs_its_rounds_to_its_end_without_a_search() {
        // (Taken for one member when it is two: see
        // `rounds_reaching_a_member_end_hand_over_to_one_core_without_starting_again`.)
        let data = corpus();
        let gz = gzip(&data);
        let mut s = GzStream::parallel_with(&gz, 1 << 30, 16 << 10, SEGMENT_OUT).unwrap();
        s.single = true;
        let mut first = [0u8; 1];
        s.fill(&mut first).unwrap();
        assert_eq!(s.par.as_ref().map(|p| p.end), Some(MemberEnd::Cut));
        let got = [&first[..], &drain_ok(&mut s)].concat();
        assert!(got == data);
        assert_eq!((s.members_in_rounds, s.handovers), (1, 0));
    }

    #[test]
    fn a_large_member_is_not_inflated_ahead_but_in_its_own_rounds() {
        // A small member, then a large one: while the small one is read,
        // the large one is not inflated ahead on the free core (it would
        // then be read on one core); it gets rounds when it starts.
        let data = corpus();
        let small = gzip(&data[..50_000]);
        let mut gz = small.clone();
        gz.extend(gzip(&data));
        let from = small.len() + 1;
        let mut s = GzStream::with_rounds(&gz, 1 << 30, 16 << 10, SEGMENT_OUT, from).unwrap();
        let got = drain_ok(&mut s);
        assert!(got[..50_000] == data[..50_000] && got[50_000..] == data[..]);
        assert_eq!((s.adopted, s.members_in_rounds), (0, 1));
        assert_eq!(s.large_at, Some(small.len()));
    }

    /// A stream reading members two at a time (see `member_round`).
    fn by_members(gz: &[u8]) -> GzStream<'_> {
        let mut s = GzStream::new(gz, 1 << 30).unwrap();
        s.members_par = true;
        s
    }

    #[test]
    fn members_inflated_two_at_a_time_give_the_sequential_bytes() {
        let data = corpus();
        // Members of uneven sizes (one over a round's output), zero padding
        // between two of them and at the end, and a member whose stored
        // data holds a gzip header (a false next-member candidate).
        let mut fake = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        fake.extend_from_slice(&data[..5000]);
        let stored = {
            let mut g = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 1];
            let len = fake.len() as u16;
            g.extend_from_slice(&len.to_le_bytes());
            g.extend_from_slice(&(!len).to_le_bytes());
            g.extend_from_slice(&fake);
            g.extend_from_slice(&gzip::trailer_of(&fake));
            g
        };
        let big = [&data[..], &vec![7u8; 20 << 20][..]].concat();
        let parts: Vec<&[u8]> = vec![&data[..1000], &big, &data[..300_000], &data[5..]];
        let mut gz = Vec::new();
        let mut want = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            gz.extend(gzip(p));
            want.extend_from_slice(p);
            if i == 1 {
                gz.extend(vec![0u8; 33]);
                gz.extend_from_slice(&stored);
                want.extend_from_slice(&fake);
            }
        }
        gz.extend(vec![0u8; 512]);
        let mut s = by_members(&gz);
        let mut got = Vec::new();
        let mut w = vec![0u8; 100_000];
        loop {
            let n = s.fill(&mut w).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&w[..n]);
        }
        assert!(!s.doubtful());
        assert!(got == want);
        // Inflated ahead while the member before went on: the stored member
        // (beside the big one) and the last (beside the 300 KB one).
        assert_eq!(s.adopted, 2, "members taken over");
        // A corrupt trailer in the middle: the sequential refusal, word for word.
        let mut bad = gzip(&data[..1000]);
        let at = bad.len();
        bad.extend(gzip(&data));
        bad.extend(gzip(b"last"));
        let n = at + gzip(&data).len();
        bad[n - 3] ^= 1;
        let e1 = drain(by_members(&bad)).0.unwrap_err().to_string();
        let e2 = drain(GzStream::new(&bad, 1 << 30).unwrap())
            .0
            .unwrap_err()
            .to_string();
        assert_eq!(e1, e2);
        assert!(e1.contains(&format!("offset {at}")), "{e1}");
    }

    /// Xorshift draws from `seed` (never the all-zero state).
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `data` as `members` gzip members compressed by zlib-rs at `level`,
    /// sync-flushed every 128 KiB (as pigz does) when `sync`.
    fn zlib_members(data: &[u8], level: u32, sync: bool, members: usize) -> Vec<u8> {
        use flate2::{Compress, Compression, FlushCompress};
        let mut gz = Vec::new();
        for part in data.chunks(data.len().div_ceil(members)) {
            let mut c = Compress::new(Compression::new(level), false);
            let mut raw = Vec::with_capacity(part.len() + (part.len() >> 6) + 4096);
            let step = if sync { 128 << 10 } else { part.len() };
            let pieces: Vec<&[u8]> = part.chunks(step).collect();
            for (i, piece) in pieces.iter().enumerate() {
                let last = i + 1 == pieces.len();
                let flush = if last {
                    FlushCompress::Finish
                } else {
                    FlushCompress::Sync
                };
                let mut fed = 0;
                loop {
                    raw.reserve(256 << 10);
                    let before = c.total_in();
                    let st = c.compress_vec(&piece[fed..], &mut raw, flush).unwrap();
                    fed += (c.total_in() - before) as usize;
                    if (last && st == flate2::Status::StreamEnd)
                        || (!last && fed == piece.len() && raw.capacity() > raw.len())
                    {
                        break;
                    }
                }
            }
            gz.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
            gz.extend_from_slice(&raw);
            gz.extend_from_slice(&gzip::trailer_of(part));
        }
        gz
    }

    /// A small payload of one of the shapes users ship, from `seed`: noise
    /// (stored blocks), zero runs (long matches), text, float-like bytes,
    /// compressed at a level from 0 to 9, sync-flushed as pigz does, or as
    /// several members.
    fn shape(seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut rnd = xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let text = corpus();
        let mut data = Vec::new();
        while data.len() < 2 << 20 {
            let n = (rnd() % (256 << 10)) as usize;
            match rnd() % 4 {
                0 => data.extend((0..n).map(|_| rnd() as u8)),
                1 => data.extend(vec![0u8; n * 4]),
                2 => {
                    let at = (rnd() as usize) % (text.len() - n);
                    data.extend_from_slice(&text[at..at + n]);
                }
                _ => data.extend((0..n / 4).flat_map(|_| {
                    let f = (rnd() % 2000) as f32 / 1000.0 - 1.0;
                    f.to_le_bytes()
                })),
            }
        }
        let level = (rnd() % 10) as u32;
        let members = 1 + (rnd() % 3) as usize * (rnd() % 5) as usize;
        let sync = rnd() % 3 == 0;
        let gz = zlib_members(&data, level, sync, members);
        (data, gz)
    }

    #[test]
    fn parallel_paths_equal_sequential_bytes_at_random_cuts_on_every_shape() {
        let mut x = 0x5eed_u64;
        for seed in 0..6 {
            let (data, gz) = shape(seed);
            assert!(drain(GzStream::new(&gz, 1 << 30).unwrap()).0.unwrap() == data);
            for _ in 0..2 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Cuts anywhere: segments of 1 KiB to 512 KiB, output caps
                // of 1 to 8 MiB (smaller caps fail rounds mid-stream).
                let seg = 1024 + (x >> 40) as usize % (511 << 10);
                let out_cap = (1 << 20) + (x >> 20) as usize % (7 << 20);
                let s = GzStream::parallel_with(&gz, 1 << 30, seg, out_cap).unwrap();
                let (out, doubt) = drain(s);
                assert!(!doubt, "seed {seed} seg {seg} cap {out_cap}");
                assert!(out.unwrap() == data, "seed {seed} seg {seg} cap {out_cap}");
            }
        }
    }

    /// A tar-like stream: runs of noise (stored blocks at any level) of
    /// 300 KiB to 700 KiB between 512-byte text headers, compressed by
    /// zlib at `level`, sync-flushed every 128 KiB (as pigz) when `sync`,
    /// as `members` gzip members.
    fn stored_shape(seed: u64, level: u32, sync: bool, members: usize) -> (Vec<u8>, Vec<u8>) {
        let mut rnd = xorshift(seed);
        let text = corpus();
        let mut data = Vec::new();
        while data.len() < 5 << 19 {
            let at = (rnd() as usize) % (text.len() - 512);
            data.extend_from_slice(&text[at..at + 512]);
            let n = (300 << 10) + (rnd() % (400 << 10)) as usize;
            data.extend((0..n).map(|_| rnd() as u8));
        }
        let gz = zlib_members(&data, level, sync, members);
        (data, gz)
    }

    /// Reads `s` by fills and skips of pseudo-random sizes (as a tar walk
    /// does), comparing each fill with `data` and checking what is
    /// skipped only by the stream's own trailer checks.
    fn fill_and_skip(mut s: GzStream<'_>, data: &[u8], seed: u64) -> Result<usize> {
        let mut x = seed | 1;
        let (mut at, mut w) = (0usize, vec![0u8; 64 << 10]);
        loop {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            if x >> 63 == 1 {
                let n = s.skip((x >> 20) % (3 << 20), &mut w)?;
                at += n as usize;
            } else {
                let k = 1 + (x >> 30) as usize % w.len();
                let n = s.fill(&mut w[..k])?;
                if n == 0 {
                    assert_eq!(at, data.len());
                    return Ok(s.runs_in_place);
                }
                assert!(w[..n] == data[at..at + n], "at {at}");
                at += n;
            }
        }
    }

    #[test]
    fn stored_blocks_are_read_in_place_and_give_the_inflated_bytes() {
        // zlib-rs at level 1 writes fixed-Huffman blocks only (zlib-ng's
        // quick strategy): read right, none in place. The others fall back
        // to stored blocks for the noise, as zlib, gzip and pigz do.
        for (i, (level, sync, members)) in [
            (1, false, 1),
            (2, false, 1),
            (6, false, 1),
            (9, false, 3),
            (6, true, 1),
        ]
        .into_iter()
        .enumerate()
        {
            let (data, gz) = stored_shape(i as u64 + 7, level, sync, members);
            let what = format!("level {level} sync {sync} members {members}");
            let mut s = GzStream::new(&gz, 1 << 30).unwrap();
            s.bridge_from = 0;
            let runs = fill_and_skip(s, &data, 1).unwrap();
            let stored = level > 1;
            assert!(
                !stored || runs >= members,
                "{what}: the sequential stream read {runs} runs in place"
            );
            // Segments of 256 KiB: the rounds' first cut falls before the
            // first run (bridged to), later ones inside runs.
            let seg = 256 << 10;
            let s = GzStream::parallel_with(&gz, 1 << 30, seg, 8 << 20).unwrap();
            let runs = fill_and_skip(s, &data, seg as u64).unwrap();
            assert!(
                !stored || runs >= 1,
                "{what} seg {seg}: no run read in place"
            );
        }
    }

    #[test]
    fn a_bad_byte_or_length_inside_a_stored_run_is_refused_as_zlib_refuses_it() {
        let (data, gz) = stored_shape(3, 6, false, 1);
        let zlib_refuses = |g: &[u8]| {
            let mut z = Decompress::new(false);
            let mut out = vec![0u8; data.len() + 1024];
            let r = z.decompress(&g[10..], &mut out, FlushDecompress::Finish);
            !matches!(r, Ok(Status::StreamEnd)) || out[..z.total_out() as usize] != data[..]
        };
        // The LEN of a stored block after 1 MiB of input, in a long run.
        let mut found = None;
        for l in (1 << 20)..gz.len() - 4 {
            let ok = u16::from_le_bytes([gz[l], gz[l + 1]])
                == !u16::from_le_bytes([gz[l + 2], gz[l + 3]]);
            if ok && stored::run_len(&gz, l * 8 - 8, 512 << 10) >= 512 << 10 {
                found = Some(l);
                break;
            }
        }
        let l = found.expect("a run of stored blocks");
        let mut flipped = gz.clone();
        flipped[l + 100] ^= 0x40; // a data byte: the CRC-32 disagrees
        let mut bad_len = gz.clone();
        bad_len[l + 2] ^= 0x01; // NLEN no longer LEN's complement
        for g in [&flipped, &bad_len] {
            assert!(zlib_refuses(g));
            let mut seq = GzStream::new(g, 1 << 30).unwrap();
            seq.bridge_from = 0;
            for s in [
                seq,
                GzStream::parallel_with(g, 1 << 30, 256 << 10, 8 << 20).unwrap(),
            ] {
                let e = fill_and_skip(s, &data, 5).unwrap_err().to_string();
                assert!(e.contains("corrupt or truncated gzip member"), "{e}");
            }
        }
    }

    #[test]
    fn a_member_whose_trailer_says_long_runs_is_not_cut_into_rounds() {
        if rayon::current_num_threads() < 2 {
            return; // no second core: neither gets rounds
        }
        // 4 bits of entropy a byte: about 2:1, over PARALLEL_FROM compressed.
        let data: Vec<u8> = super::super::noise(2 * PARALLEL_FROM + (4 << 20), 11)
            .iter()
            .map(|b| b & 15)
            .collect();
        let mut gz = gzip(&data);
        assert!(gz.len() > PARALLEL_FROM);
        let mut first = [0u8; 1 << 16];
        let mut s = GzStream::new_parallel(&gz, u64::MAX).unwrap();
        s.fill(&mut first).unwrap();
        assert!(s.par.is_some(), "not cut into rounds");
        // The same length, claiming to inflate 250:1 (in whole tar blocks:
        // taken for one member, read to the payload's end): handed over to
        // one core before the first round.
        let n = gz.len();
        gz[n - 4..].copy_from_slice(&0xffff_fe00_u32.to_le_bytes());
        let mut s = GzStream::new_parallel(&gz, u64::MAX).unwrap();
        assert!(s.single);
        s.fill(&mut first).unwrap();
        assert!(s.par.is_none());
        assert_eq!((s.members_in_rounds, s.handovers), (1, 1));
        assert_eq!(s.old_rounds.as_ref().map(|r| r.stats().0), Some(0));
        // Followed by another member: that member's trailer is the last, and
        // the first member's is read where its end is guessed, before its
        // first round, which is never run.
        gz.extend(gzip(b"end"));
        let mut s = GzStream::new_parallel(&gz, u64::MAX).unwrap();
        assert!(!s.single);
        s.fill(&mut first).unwrap();
        assert!(s.par.is_none());
        assert_eq!((s.members_in_rounds, s.handovers), (1, 1));
        assert_eq!(s.old_rounds.as_ref().map(|r| r.stats().0), Some(0));
    }

    #[test]
    fn the_cap_stops_a_bomb_as_bytes_are_produced() {
        let gz = gzip(&vec![0u8; 8 << 20]);
        let mut s = GzStream::new(&gz, 1 << 20).unwrap();
        let e = s.finish(&mut [0u8; 4096]).unwrap_err().to_string();
        assert!(e.contains("over the cap"), "{e}");
    }
}
