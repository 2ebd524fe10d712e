//! Where a round is cut: the block starts found near each cut (in input
//! that may still be arriving, only as far as it was waited for), the
//! segments' sizes and output caps, and the one failure a round has.

use crate::arriving::Gate;

use super::search::*;

/// A round that did not decode: no block boundary near a cut, a segment
/// over its output cap, or corrupt data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundFailed;

impl From<std::io::Error> for RoundFailed {
    fn from(_: std::io::Error) -> RoundFailed {
        RoundFailed
    }
}

/// Where a round's segments lie: the bit where each segment after A
/// starts (none: A takes the rest), and where the last one ends (`None`:
/// at the stream's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cuts {
    pub(super) starts: Vec<usize>,
    pub(super) end: Option<usize>,
}

/// The cuts of a round found ahead of it: valid for a round that starts at
/// bit `from` with `segs` segments of `seg` bytes.
pub(super) struct Ahead {
    pub(super) from: usize,
    pub(super) seg: usize,
    pub(super) segs: usize,
    pub(super) cuts: std::result::Result<Cuts, RoundFailed>,
}

/// Compressed bytes of segment A and of each later segment, for `n`
/// segments of `seg` bytes on average of which each later one weighs
/// `share` and A `64 - share`.
pub(super) fn sizes(seg: usize, share: usize, n: usize) -> (usize, usize) {
    let n = n.max(2);
    let total = seg.saturating_mul(n);
    let weight = (64 - share) + (n - 1) * share;
    let seg_b = (total / weight).saturating_mul(share).max(1 << 10);
    let seg_a = (total / weight).saturating_mul(64 - share).max(1 << 10);
    (seg_a, seg_b)
}

/// A round's cuts from bit `a`, for `n` segments of `seg` bytes on
/// average, weighted by `share` ([`sizes`]). When less than two rounds'
/// input is left, two rounds take half of it each; when less than one
/// round's is left, the round is the stream's last and takes it all,
/// split by the same weights among as many segments as get [`TAIL_MIN`]
/// each: a last round of full segments and a short one, or of one segment
/// alone, would leave threads idle while one inflates the tail.
pub(super) fn cuts(
    data: &[u8],
    seg: usize,
    share: usize,
    n: usize,
    a: usize,
    gate: Gate<'_>,
) -> std::result::Result<Cuts, RoundFailed> {
    let (mut seg_a, mut seg_b) = sizes(seg, share, n);
    let mut round = seg_a + (n.max(2) - 1) * seg_b;
    let left = data.len().saturating_sub(a / 8);
    if left < 2 * round + SEARCH && left >= round + SEARCH && left >= 4 * SEARCH {
        // Less than two rounds left: two of half of it each, not a round
        // and then up to one and a half (whose output, held while it is
        // handed out, would be the stream's peak memory).
        let scale = |x: usize| (x as u64 * (left / 2) as u64 / round as u64) as usize;
        (seg_a, seg_b) = (scale(seg_a).max(1 << 10), scale(seg_b).max(1 << 10));
        round = seg_a + (n.max(2) - 1) * seg_b;
    }
    if left >= round * 3 / 2 + SEARCH {
        let mut starts = Vec::with_capacity(n - 1);
        let (mut from, mut len) = (a, seg_a);
        for _ in 1..n {
            match cut_after(data, len, seg_b, from, gate)? {
                Some(b) => starts.push(b),
                None => break,
            }
            (from, len) = (*starts.last().unwrap_or(&a), seg_b);
        }
        let end = match starts.last() {
            Some(&last) => cut_after(data, seg_b, round / 2, last, gate)?,
            None => None,
        };
        return Ok(Cuts { starts, end });
    }
    let k = n.min(left / TAIL_MIN);
    let mut starts = Vec::new();
    if k >= 2 {
        let (tail_a, tail_b) = sizes(left / k, share, k);
        let mut at = a / 8 + tail_a;
        for _ in 1..k {
            // No block start found near a cut: the segment before takes
            // the rest.
            match find_block(search_view(&gate, data, at)?, at * 8) {
                Some(b) if b > *starts.last().unwrap_or(&a) && b / 8 < data.len() => {
                    starts.push(b);
                    at = b / 8 + tail_b;
                }
                _ => break,
            }
        }
    }
    Ok(Cuts { starts, end: None })
}

/// The least input any segment of a stream's last round gets.
pub(super) const TAIL_MIN: usize = 256 << 10;
/// A later segment's weight against A's at first, in 64ths of two
/// segments (even); then set from the threads' times, since a later
/// segment also marker-decodes its start.
pub(super) const EVEN_SHARE: usize = 32;
/// The range the later segments' share is kept in, in 64ths.
pub(super) const SHARES: std::ops::RangeInclusive<usize> = 16..=40;

/// Output each segment of a round of `n` is sized to produce: 6 MiB at
/// two segments ([`PAIR_OUT`]), [`SEG_OUT`] from three to 16, then
/// [`ROUNDS_OUT`] shared out, down to 4 MiB (a segment's fixed cost, its
/// marker-decoded start and its cut search, is then still a few percent
/// of its work). A round's output is most of the stream's memory: 12 MiB
/// at 2 segments, 64 MiB at 8, 128 MiB from 16 to 32, then 4 MiB more per
/// segment; each segment's input is copied once besides (its synthetic
/// stream), 1/ratio of that, and a later segment's marker-decoded start
/// takes 3 bytes a symbol.
pub(crate) fn seg_out(n: usize) -> usize {
    match n {
        ..=2 => PAIR_OUT,
        _ => (ROUNDS_OUT / n).clamp(4 << 20, SEG_OUT),
    }
}

/// Output a segment is sized to produce at most, from three segments on.
/// Each segment costs a fixed part (its cut search, its marker-decoded
/// start) and each round another (the consumer's turn while the pool
/// waits): rounds of 8 MiB segments listed the 256 MiB shapes as fast as
/// rounds of 16 MiB (mixed zlib-1 343 ms against 366 ms, pigz 320
/// against 310), in 68 MiB against 96 MiB, and at eight threads on two
/// cores spent 1.03–1.34 times one thread's CPU where 6 MiB segments spent
/// 1.09–1.45 (PERF.md, inflate-threads).
pub(super) const SEG_OUT: usize = 8 << 20;

/// Output each of two segments is sized to produce. With two, the round's
/// output is the stream's peak memory (two threads: the small host, and
/// rapidgzip's 23 MiB the yardstick), and the segments' fixed cost is
/// paid once a round: two 6 MiB segments listed mixed zlib-1 in the time
/// two of 8 MiB did, in 38–40 MiB against 47–48 (PERF.md, gzip-shapes).
pub(super) const PAIR_OUT: usize = 6 << 20;

/// The output a round of many segments shares out ([`seg_out`]).
pub(super) const ROUNDS_OUT: usize = 128 << 20;

/// The most one segment of a round of `n` may produce before the round
/// fails (and one core goes on): the stream's cap `out_cap`, down to
/// [`ROUNDS_CAP`] shared out, but never below twice a segment's target.
/// Data that inflates far past its segment's target (a bomb, long runs)
/// so touches at most `max(1 GiB, n × 8 MiB)` in a round, not `n` times
/// the stream's cap.
pub(super) fn seg_cap(out_cap: usize, n: usize) -> usize {
    out_cap.min((ROUNDS_CAP / n.max(1)).max(2 * seg_out(n)))
}

/// The output all segments of a round may produce together before it
/// fails, for rounds of many segments ([`seg_cap`]).
pub(super) const ROUNDS_CAP: usize = 1 << 30;

/// How far past a cut search's end a candidate block start may be read
/// (`deflate::plausible_start` skims the block it starts), of input still
/// arriving: a candidate whose block runs longer is passed over there.
pub(super) const SKIM_READ: usize = 4 << 20;

/// What a cut search from byte `at` ([`find_block`]) may read, of input
/// behind `gate`.
pub(super) fn search_view<'d>(
    gate: &Gate<'_>,
    data: &'d [u8],
    at: usize,
) -> std::result::Result<&'d [u8], RoundFailed> {
    let end = at.saturating_add(SEARCH + SKIM_READ);
    Ok(gate.upto(data, at.saturating_sub(8), end)?)
}

/// How many times a cut whose search found no block start is moved
/// [`SEARCH`] bytes further on before the round gives up.
pub(super) const MOVES: usize = 8;

/// The next block boundary at least `seg` bytes after bit `from`, when
/// at least `room` bytes of input are left after it. A search that finds
/// no block start (long matches can leave no plausible start in a stretch
/// of [`SEARCH`] bytes) moves the cut further on, up to [`MOVES`] times.
pub(super) fn cut_after(
    data: &[u8],
    seg: usize,
    room: usize,
    from: usize,
    gate: Gate<'_>,
) -> std::result::Result<Option<usize>, RoundFailed> {
    let mut at = from / 8 + seg;
    for _ in 0..=MOVES {
        if data.len().saturating_sub(at) < room + SEARCH {
            return Ok(None);
        }
        if let Some(found) = find_block(search_view(&gate, data, at)?, at * 8) {
            return Ok(Some(found));
        }
        at += SEARCH;
    }
    Err(RoundFailed)
}
