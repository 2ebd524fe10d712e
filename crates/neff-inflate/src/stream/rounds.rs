//! The parallel-rounds strategy: a large member's DEFLATE data inflated in
//! bounded rounds on two cores ([`Rounds`]), up to where the member is
//! guessed to end (the trailer before the next gzip header found after
//! it, or the payload's end), checked against its trailer there. Which
//! members get rounds is the [`Plan`]'s to say; the search for member
//! headers that it and [`super::pairs`] share lives here too.

use super::in_place;
use super::walk::{Step, Switch, Walk, MIN_RUN};
use crate::deflate;
use crate::error::Result;
use crate::gzip::{self, Trailer, TRAILER};
use crate::parallel::Rounds;
use crate::stored;
use crate::HEADER_MAX as HEADER_READ;

/// Compressed bytes per segment of the parallel rounds, at first (then
/// sized from the ratio seen so far).
pub(super) const SEGMENT: usize = 2 << 20;
/// From this inflated:compressed ratio (the trailer's word) a member is
/// long runs: its rounds guess windows from the first (see
/// [`MemberRounds::bound`]).
pub(super) const LONG_RUNS: u64 = 12;
/// Most output one segment may produce before the rounds give up.
pub(super) const SEGMENT_OUT: usize = 64 << 20;
/// Members of this many compressed bytes or more are inflated in parallel
/// rounds (each on every thread the caller gives); smaller ones two at a
/// time.
const ROUNDS_FROM: usize = 16 << 20;
/// `MemberRounds::part` when every part of the last round was taken.
const ALL_TAKEN: usize = usize::MAX;
/// How far past a position the next member's header is looked for.
pub(super) const LOOK_AHEAD: usize = 64 << 20;

/// Which members are read in rounds, and how.
pub(super) struct Plan<'a> {
    /// The rounds' first segment size and each segment's output cap.
    seg: usize,
    out_cap: usize,
    /// The least compressed size that makes a member large ([`ROUNDS_FROM`];
    /// the tests' is 0).
    pub(super) from: usize,
    /// The inflated:compressed ratio from which a member's rounds guess
    /// windows from the first ([`LONG_RUNS`]; the tests' is never).
    long_runs: u64,
    /// The payload looks like one member ([`Plan::for_payload`]): the
    /// first member's rounds run to the payload's end without a search for
    /// its end (a wrong guess costs the member's last round, as any).
    pub(super) single: bool,
    /// The last member's rounds, kept for their buffers when they are done.
    pub(super) spent: Option<Rounds<'a>>,
    /// Later segments always guess their windows, each sized to produce
    /// this many bytes ([`Plan::guessing`]).
    guess_always: Option<usize>,
    /// A share of each round for the later segments, held whatever the
    /// threads' times say ([`Rounds::hold_share`]; the tests).
    #[cfg(test)]
    pub(super) share: Option<usize>,
}

impl<'a> Plan<'a> {
    /// Members of `from` compressed bytes or more in rounds of `seg`-byte
    /// segments, each producing at most `out_cap`.
    pub(super) fn new(seg: usize, out_cap: usize, from: usize) -> Plan<'a> {
        Plan {
            seg,
            out_cap,
            from,
            long_runs: LONG_RUNS,
            single: false,
            spent: None,
            guess_always: None,
            #[cfg(test)]
            share: None,
        }
    }

    /// The plan for a large payload `gz` read with a core free.
    pub(super) fn for_payload(gz: &[u8]) -> Plan<'a> {
        let mut plan = Plan::new(SEGMENT, SEGMENT_OUT, ROUNDS_FROM);
        let isize = u64::from(Trailer::last(gz).isize);
        // One member holding the whole tar, as `pack`, gzip and zlib write
        // it, is the common case: its last trailer gives a size in whole tar
        // blocks, no less than the payload (stored blocks add 5 bytes in
        // 64 KiB). The searches for member ends (80 MiB of input read
        // before the first round: 2-4 % of listing 256 MiB of tar) are
        // then skipped. (Long runs, 12:1 and more, are such a payload too:
        // `MemberRounds::bound` sends them to one core before the first
        // round.)
        let whole_blocks = isize % 512 == 0 && isize >= gz.len() as u64 - gz.len() as u64 / 64;
        plan.single = gzip::may_end_with_trailer(gz) && whole_blocks;
        plan
    }

    /// Every member in rounds, long runs too (the tests and fuzz targets).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn forced(seg: usize, out_cap: usize) -> Plan<'a> {
        let mut plan = Plan::new(seg, out_cap, 0);
        plan.long_runs = u64::MAX;
        plan
    }

    /// Every member in rounds whose later segments always guess their
    /// windows, whatever the data, each segment sized to produce `target`
    /// bytes (the tests and fuzz targets).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn guessing(seg: usize, out_cap: usize, target: usize) -> Plan<'a> {
        let mut plan = Plan::forced(seg, out_cap);
        plan.guess_always = Some(target);
        plan
    }

    /// Keeps a member's rounds for their buffers.
    pub(super) fn keep(&mut self, r: MemberRounds<'a>) {
        self.spent = Some(r.rounds);
    }

    /// Rounds over the member whose DEFLATE data starts at the walk's
    /// position (a block boundary), when it is large (to the payload's end
    /// for now: their end is looked for before their first round,
    /// [`MemberRounds::bound`]); and whether another member's header was
    /// found within [`Plan::from`] bytes of it.
    pub(super) fn member(&mut self, w: &Walk<'a>) -> Result<(Option<MemberRounds<'a>>, bool)> {
        let (gz, data) = (w.gz, w.pos);
        let last = gz.len() - TRAILER; // `check_len`: at least a trailer
        if data >= last {
            return Ok((None, false));
        }
        // A member that starts with a run of stored blocks goes to the
        // rounds without the search for its size (1.5 ms of 60 on 256 MiB
        // of them): the run is read in place, and the rounds' first round,
        // if any, is bounded by the member's end as always.
        let stored = in_place::run_len(w, data * 8)? >= MIN_RUN;
        let single = std::mem::take(&mut self.single);
        let mut followed = false;
        if !stored && !single {
            // (A header found near the end of what was waited for, its
            // fields running past it, goes unseen: the rounds check their
            // guess of the member's end.)
            let seen = w.upto(
                data,
                data.saturating_add(self.from).saturating_add(HEADER_READ),
            )?;
            let (large, f) = is_large(seen, gz.len(), data, self.from);
            followed = f;
            if !large {
                return Ok((None, followed));
            }
            // As in `bound`: the pages the size search read go.
            w.looked_ahead(data..data.saturating_add(self.from).min(last));
        }
        let mut rounds = match self.spent.take() {
            Some(mut r) => {
                r.renew(&gz[data..last]);
                r
            }
            None => Rounds::new(&gz[data..last], self.seg, self.out_cap),
        };
        rounds.release_to(w.release_hook(), data);
        rounds.arriving(w.gate.at(data));
        if let Some(target) = self.guess_always {
            rounds.always_guess(target);
        }
        #[cfg(test)]
        if let Some(share) = self.share {
            rounds.hold_share(share);
        }
        let r = MemberRounds {
            rounds,
            base: data,
            part: ALL_TAKEN,
            pos: 0,
            end: if single {
                MemberEnd::Payload
            } else {
                MemberEnd::Unknown
            },
            bridged_start: false,
            long_runs: self.long_runs,
            in_rounds: 0.0,
            began: std::time::Instant::now(),
        };
        Ok((Some(r), followed))
    }
}

/// Where a member's rounds take their input to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemberEnd {
    /// Not looked for yet: before the first round, the next gzip header is
    /// searched for.
    Unknown,
    /// The payload looks like one member: its last 8 bytes are taken for
    /// this member's trailer, without a search.
    Payload,
    /// The input is cut where the member is guessed to end.
    Cut,
}

/// A member being read in parallel rounds, and the output of the last
/// round waiting to be taken.
pub(super) struct MemberRounds<'a> {
    rounds: Rounds<'a>,
    /// Where the rounds' raw DEFLATE data starts in the payload.
    base: usize,
    /// Which of the round's parts is being taken, and how far.
    part: usize,
    pos: usize,
    /// Where the rounds' input ends ([`MemberRounds::bound`]).
    pub(super) end: MemberEnd,
    /// A run of stored blocks was looked for before the first round.
    bridged_start: bool,
    long_runs: u64,
    /// Seconds spent running rounds, and when the member's rounds began
    /// (the rest is the consumer's: handing out, checksums, the tar walk).
    in_rounds: f64,
    began: std::time::Instant,
}

impl<'a> MemberRounds<'a> {
    /// Hands out the rounds' output into `out`, running the next round
    /// when the last one's is taken.
    pub(super) fn fill(&mut self, w: &mut Walk<'_>, out: &mut [u8]) -> Result<Step> {
        loop {
            match self.rounds.part(self.part) {
                Some(p) if self.pos < p.len() => break,
                Some(_) => {
                    self.part += 1;
                    self.pos = 0;
                    continue;
                }
                None => {}
            }
            if let Some(step) = self.between_rounds(w)? {
                return Ok(step);
            }
        }
        let from = &self.rounds.part(self.part).unwrap_or_default()[self.pos..];
        let n = out.len().min(from.len());
        out[..n].copy_from_slice(&from[..n]);
        self.pos += n;
        w.emit(&out[..n])?;
        Ok(Step::Out(n))
    }

    /// Every part of the last round handed out: the next round starts at a
    /// known block boundary. Runs it, or says what comes instead: a run of
    /// stored blocks (read in place), one core (the member's data hardly
    /// compresses, or a round did not decode), or the member's end.
    fn between_rounds(&mut self, w: &mut Walk<'_>) -> Result<Option<Step>> {
        let base = self.base;
        if let Some(bit) = self.rounds.stored_next(MIN_RUN) {
            // `stored_next` found a stored block there.
            let at = base * 8 + bit;
            log::debug!(
                "gzip member at offset {}: stored blocks (incompressible data) from offset {}: \
                 read in place, checksummed on the free core",
                w.at,
                at / 8
            );
            return Ok(Some(Step::Switch(Switch::Stored(at))));
        }
        // Before the first round, and after a round of data that hardly
        // compresses: a run of stored blocks soon after is read in place,
        // what lies before it inflated at once.
        if !self.bridged_start || self.rounds.incompressible() {
            self.bridged_start = true;
            if let Some(bit) = self.rounds.next_bit() {
                let (at, window) = (base * 8 + bit, self.rounds.window().to_vec());
                if let Some(run) = in_place::bridge(w, at, &window)? {
                    // `bridge` found a stored block at `run`.
                    log::debug!(
                        "gzip member at offset {}: stored blocks (incompressible data) after \
                         offset {}: read in place, checksummed on the free core",
                        w.at,
                        at / 8
                    );
                    return Ok(Some(Step::Switch(Switch::Stored(run))));
                }
            }
        }
        if self.rounds.incompressible() {
            log::debug!(
                "gzip member at offset {}: stored blocks (incompressible data) from offset {}: \
                 inflating the rest on one core, where copying is all the work",
                w.at,
                base + self.rounds.consumed()
            );
            return Ok(Some(Step::Switch(Switch::OneCore)));
        }
        self.bound(w)?;
        // As many segments as the caller says threads are free now (at
        // least two: a member begun in rounds goes on in rounds).
        self.rounds.set_segments((w.threads)());
        let started = std::time::Instant::now();
        let round = self.rounds.next_round();
        self.in_rounds += started.elapsed().as_secs_f64();
        match round {
            Ok(true) => {
                self.part = 0;
                self.pos = 0;
                w.passed(base + self.rounds.consumed());
                let r = self.rounds.last_round();
                log::debug!(
                    "gzip member at offset {}: round at offset {}: segments={}, {} bytes in, {} \
                     bytes out, segment A {:.1} ms, the slowest other {:.1} ms",
                    w.at,
                    base + self.rounds.consumed() - r.read,
                    r.segments,
                    r.read,
                    r.produced,
                    r.a_secs * 1e3,
                    r.slowest_secs * 1e3,
                );
                Ok(None)
            }
            Ok(false) => {
                let (rounds, markers, share) = self.rounds.stats();
                let (guessed, patched, redone) = self.rounds.guesses();
                log::debug!(
                    "gzip member at offset {}: {rounds} parallel rounds of up to {} segments in \
                     {:.1} ms ({:.1} ms since the first began), {markers} symbols \
                     marker-decoded, {guessed} segments from a guessed window ({patched} \
                     with their start written again, {redone} inflated again), the later segments' last share {share}/64",
                    w.at,
                    self.rounds.segments(),
                    self.in_rounds * 1e3,
                    self.began.elapsed().as_secs_f64() * 1e3,
                );
                // The member's DEFLATE stream ended where its trailer was
                // expected: everything produced must be what that trailer
                // says. The caller goes on to the next member.
                let end = base + self.rounds.consumed();
                w.pos = end;
                w.passed(end);
                Ok(Some(Step::End(0)))
            }
            Err(_) => {
                // No block start near a cut, a window that never cleared, a
                // segment over its output cap, the member's end (another
                // member follows) or corrupt data: the rest is inflated on
                // one core from where the last good round ended, with its
                // window (nothing is inflated twice). Corrupt data is then
                // refused there.
                log::debug!(
                    "gzip member at offset {}: a parallel round from offset {} did not decode: \
                     inflating the rest on one core",
                    w.at,
                    base + self.rounds.consumed()
                );
                Ok(Some(Step::Switch(Switch::OneCore)))
            }
        }
    }

    /// Skips up to `n` bytes of the rounds' output without copying it: its
    /// CRC-32 is taken where it lies, on two cores when it is large. 0 once
    /// the round's parts are all handed out (the caller goes on through
    /// `fill`, which runs the next round).
    pub(super) fn skip(&mut self, w: &mut Walk<'_>, n: u64) -> Result<usize> {
        let mut left = usize::try_from(n).unwrap_or(usize::MAX);
        let (mut part, mut pos) = (self.part, self.pos);
        // Each piece, and its CRC-32 when it runs to the end of a part
        // whose thread took the part's ([`crc_after`]).
        let mut pieces = Vec::with_capacity(2 * self.rounds.segments());
        while left > 0 {
            let Some(whole) = self.rounds.part(part) else {
                break;
            };
            let p = &whole[pos.min(whole.len())..];
            let take = p.len().min(left);
            if take > 0 {
                let known = match self.rounds.part_crc(part) {
                    Some(c) if take == p.len() && pos <= p.len() => Some(crc_after(whole, pos, c)),
                    _ => None,
                };
                pieces.push((&p[..take], known));
            }
            left -= take;
            if take == p.len() {
                part += 1;
                pos = 0;
            } else {
                pos += take;
            }
        }
        let total: usize = pieces.iter().map(|(p, _)| p.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let split = (w.threads)() >= 2;
        let (mut crc, mut unknown) = (w.crc.sum(), Vec::new());
        for (p, known) in pieces {
            let Some(c) = known else {
                unknown.push(p);
                continue;
            };
            crc = crc_on(&unknown, crc, split);
            unknown.clear();
            crc = zlib_rs::crc32::crc32_combine(crc, c, p.len() as u64);
        }
        let crc = crc_on(&unknown, crc, split);
        (self.part, self.pos) = (part, pos);
        w.skipped(total, crc)?;
        Ok(total)
    }

    /// Before a member's first round: its rounds' input is cut at the end
    /// [`member_end`] guesses (or, for a payload taken for one member, left
    /// to the payload's end). When the trailer there says the member
    /// inflates [`LONG_RUNS`]:1 or more, it is long runs (zero padding
    /// between small stretches): a later segment's window would never
    /// clear of the unknown bytes its runs copy, so the rounds guess
    /// windows from the first ([`Rounds::guess_windows`]; they stop when a
    /// round inflates less than 6:1, as after a trailer that lied, or when
    /// most of a round's guesses were wrong, as on runs of another byte), and
    /// the debug log says so. (ISIZE is the size mod 2³²: past 4 GiB a
    /// long-run member may start without guessing, and a segment whose
    /// start does not clear after 4 M symbols turns guessing on then.)
    fn bound(&mut self, w: &Walk<'_>) -> Result<()> {
        let (base, from) = (self.base, self.base + self.rounds.consumed());
        let gz = w.gz;
        let end = match self.end {
            MemberEnd::Cut => return Ok(()),
            MemberEnd::Payload => gz.len() - TRAILER,
            MemberEnd::Unknown => {
                let seen = w.upto(from, from.saturating_add(LOOK_AHEAD + HEADER_READ))?;
                let Some((end, found)) = member_end(seen, gz.len(), from) else {
                    return Ok(());
                };
                // The search read ahead of the rounds: those pages are
                // dropped (the rounds fault them in again from the page
                // cache when they get there), so that memory follows the
                // rounds, not the search (up to 64 MiB more otherwise: 77
                // -> 116 MiB on 256 MiB of tar).
                let searched = if found {
                    end + TRAILER
                } else {
                    from.saturating_add(LOOK_AHEAD).min(gz.len())
                };
                w.looked_ahead(from..searched);
                end
            }
        };
        let len = (end - base).max(1);
        w.need(end..end + TRAILER)?;
        let isize = Trailer::at(gz, end).map_or(0, |t| u64::from(t.isize));
        self.end = MemberEnd::Cut;
        self.rounds.truncate(end - base);
        if isize >= (len as u64).saturating_mul(self.long_runs) {
            let ratio = usize::try_from(isize / len as u64).unwrap_or(usize::MAX);
            log::debug!(
                "gzip member at offset {} of {len} bytes inflating to {isize} ({ratio}:1, long \
                 runs): later segments inflated from a guessed window, checked",
                w.at,
            );
            self.rounds.guess_windows(ratio);
        }
        Ok(())
    }

    /// Whether the rounds guess windows now, and how many segments did.
    #[cfg(test)]
    pub(super) fn guesses(&self) -> (bool, usize) {
        (self.rounds.guessing(), self.rounds.guesses().0)
    }

    /// Leaves the rounds: where one core takes over (its input offset, the
    /// primer stream and the window's length), `None` when the rounds
    /// finished; and the rounds, to keep for their buffers.
    pub(super) fn hand_over(self) -> (Option<(usize, Vec<u8>, usize)>, MemberRounds<'a>) {
        let resume = self
            .rounds
            .resume()
            .map(|r| (self.base + r.from, r.head, r.window_len));
        (resume, self)
    }

    /// Goes on after a run of stored blocks read in place up to payload
    /// offset `end`, with `window` (the run's last 32 KiB); `false` when
    /// `end` is past the rounds' input.
    pub(super) fn restart(&mut self, end: usize, window: Vec<u8>) -> bool {
        if !self.rounds.restart(end - self.base, window) {
            return false;
        }
        self.part = ALL_TAKEN;
        self.pos = 0;
        true
    }
}

/// The CRC-32 `crc` continued over `pieces`: on two cores when they are
/// large and `split` (another thread is free).
fn crc_on(pieces: &[&[u8]], crc: u32, split: bool) -> u32 {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    stored::crc(pieces, crc, split && total >= super::walk::CRC_SPLIT_FROM)
}

/// The CRC-32 of `part[pos..]`, from `whole`, the CRC-32 of all of `part`
/// (taken by the thread that inflated it, while in cache): that of its
/// first `pos` bytes, which the consumer has just handed out (in cache
/// too), taken out. CRC-32 is linear: crc(a ‖ b) = crc(a)·x^(8|b|) ⊕
/// crc(b), and crc32_combine(crc(a), 0, |b|) is the first term. Reading
/// the rest of the part again from memory costs the rounds of long runs a
/// third of their time.
fn crc_after(part: &[u8], pos: usize, whole: u32) -> u32 {
    if pos == 0 {
        return whole;
    }
    let mut head = libdeflater::Crc::new();
    head.update(&part[..pos]);
    whole ^ zlib_rs::crc32::crc32_combine(head.sum(), 0, (part.len() - pos) as u64)
}

/// Where the member whose DEFLATE data starts at `data` may end (in a
/// payload of `len` bytes, of which `gz` is the start searched): the
/// offset of the trailer before the first gzip header found within
/// [`LOOK_AHEAD`] bytes, else of the payload's last 8 bytes. A guess (a
/// header's bytes can occur inside DEFLATE data, and a member can be
/// longer than the search): the rounds over `data..end` check it. The
/// second value says whether a header was found.
pub(super) fn member_end(gz: &[u8], len: usize, data: usize) -> Option<(usize, bool)> {
    let limit = data.saturating_add(LOOK_AHEAD).min(gz.len());
    let (end, found) = match header_after(gz, data, limit) {
        Some((at, _)) => (at.checked_sub(TRAILER)?, true),
        None => (len.checked_sub(TRAILER)?, false),
    };
    (end >= data).then_some((end, found))
}

/// The first gzip member header starting in `from..to` that looks as
/// encoders write them (XFL 0, 2 or 4; an OS code RFC 1952 lists, or 255)
/// and whose DEFLATE data may start a stream ([`deflate::may_start_stream`]):
/// its offset, and its data's. Header-like bytes inside DEFLATE data are
/// mostly passed over (one 256 MiB payload of GNU gzip -9 held one that
/// passed the gzip tests alone), not all: the callers treat the answer as
/// a guess. (A real member this passes over is only not read ahead or in
/// rounds of its own: it is still read where the member before ends.)
pub(super) fn header_after(gz: &[u8], mut from: usize, to: usize) -> Option<(usize, usize)> {
    while from < to {
        let (at, data) = gzip::header_after(gz, from, to)?;
        let (xfl, os) = (gz[at + 8], gz[at + 9]);
        if matches!(xfl, 0 | 2 | 4)
            && (os <= 13 || os == 255)
            && deflate::may_start_stream(gz, data)
        {
            return Some((at, data));
        }
        from = at + 1;
    }
    None
}

/// Whether the member whose DEFLATE data would start at `data` (in a
/// payload of `len` bytes, of which `gz` is the start searched) holds
/// `from` bytes or more (no gzip header starts before then, and the
/// payload goes on), and whether a gzip header follows within them.
pub(super) fn is_large(gz: &[u8], len: usize, data: usize, from: usize) -> (bool, bool) {
    let to = data.saturating_add(from);
    let followed = header_after(gz, data, to.min(gz.len())).is_some();
    (!followed && to < len.saturating_sub(TRAILER), followed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_of_a_part_after_its_first_bytes_is_the_whole_parts_with_them_taken_out() {
        let part: Vec<u8> = crate::samples::noise(100_000, 3);
        let crc = |b: &[u8]| {
            let mut c = libdeflater::Crc::new();
            c.update(b);
            c.sum()
        };
        let whole = crc(&part);
        for pos in [0, 1, 7, 4096, 65_537, 99_999, 100_000] {
            assert_eq!(crc_after(&part, pos, whole), crc(&part[pos..]), "at {pos}");
        }
    }
}
