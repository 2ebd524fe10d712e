use flate2::{Decompress, FlushDecompress, Status};

use super::gzip::compress as gzip;
use super::rounds::{member_end, MemberEnd, SEGMENT, SEGMENT_OUT};
use super::*;
use crate::gzip::TRAILER;
use crate::stored;

impl<'a> GzStream<'a> {
    /// Members of `from` compressed bytes or more in rounds of `seg`-byte
    /// segments (each producing at most `out_cap`), smaller ones two at a
    /// time.
    fn with_rounds(
        gz: &'a [u8],
        cap: u64,
        seg: usize,
        out_cap: usize,
        from: usize,
    ) -> Result<GzStream<'a>> {
        GzStream::with_plan(gz, cap, Plan::new(seg, out_cap, from))
    }

    fn in_rounds(&self) -> bool {
        matches!(self.mode, Mode::Rounds(_))
    }

    fn pairs(&self) -> &Pairs {
        self.pairs.as_ref().expect("members two at a time")
    }

    fn take_for_one_member(&mut self) {
        self.plan.as_mut().expect("rounds").single = true;
    }

    fn taken_for_one_member(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.single)
    }
}

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
    s.read_all()
}

#[test]
fn parallel_rounds_give_the_sequential_bytes() {
    let data = corpus();
    let gz = gzip(&data);
    for seg in [4 << 10, 64 << 10, 300 << 10] {
        let mut s = GzStream::parallel_with(&gz, 1 << 30, seg, SEGMENT_OUT).unwrap();
        let mut first = [0u8; 1];
        assert_eq!(s.fill(&mut first).unwrap(), 1);
        assert!(s.in_rounds());
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
    let (out, doubt) = drain(GzStream::parallel_with(&gz, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap());
    assert!(out.is_err() && doubt);
    // A copy of the trailer after the real one: the rounds must not
    // stop at the final block and match the copy (the sequential
    // stream refuses the copy as neither a member nor padding).
    let mut copy = gzip(&data);
    let n = copy.len();
    let t = copy[n - 8..].to_vec();
    copy.extend_from_slice(&t);
    let (out, _) = drain(GzStream::parallel_with(&copy, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap());
    assert!(out.is_err(), "the rounds accepted a trailer copy");
    let (out, _) = drain(GzStream::new(&copy, 1 << 30).unwrap());
    assert!(out.is_err());
}

/// Drains `s` in windows of 100,000 bytes; also says whether the
/// rounds were left for one core, and the input the sequential
/// inflater read.
fn drain_handover(mut s: GzStream<'_>) -> (Vec<u8>, bool, u64) {
    let out = drain_ok(&mut s);
    (out, !s.in_rounds(), s.one.total_in())
}

#[test]
fn rounds_reaching_a_member_end_hand_over_to_one_core_without_starting_again() {
    // Members of 2 MiB or so: the rounds' last one (when less than a
    // round and a half and 1 MiB of search is left it takes the rest)
    // does not span the whole first member.
    let data: Vec<u8> = crate::samples::noise(8 << 20, 5)
        .iter()
        .map(|b| b & 15)
        .collect();
    let half = data.len() / 2;
    let mut two = gzip(&data[..half]);
    let first = two.len();
    two.extend(gzip(&data[half..]));
    // Where the last good round ends follows the later segments' share,
    // which the threads' times set (other tests on the pool move it): it
    // is held at each value the times can give.
    for share in crate::parallel::Rounds::shares().step_by(4) {
        // Taken for one member (what `new_parallel` guesses from a last
        // trailer that looks like a whole tar's), the first member's
        // rounds run past its end and fail there: one core takes over
        // from the last good round, and the second member gets rounds of
        // its own.
        let mut s = GzStream::parallel_with(&two, 1 << 30, 64 << 10, SEGMENT_OUT).unwrap();
        s.take_for_one_member();
        s.plan.as_mut().expect("rounds").share = Some(share);
        let (mut out, mut w, mut seq_in) = (Vec::new(), vec![0u8; 100_000], 0);
        loop {
            let n = s.fill(&mut w).expect("reads");
            if s.walk.at == 0 {
                seq_in = s.one.total_in();
            }
            if n == 0 {
                break;
            }
            out.extend_from_slice(&w[..n]);
        }
        assert!(!s.doubtful() && out == data, "share {share}");
        assert_eq!(
            (s.counts.members_in_rounds, s.counts.handovers),
            (2, 1),
            "share {share}"
        );
        // The one-core inflater read the first member's tail only (its
        // input counts the primer too): nothing was inflated twice. (From
        // 335,519 to 1,099,532 bytes of 2,136,464 over the shares; a
        // start again would read all of them.)
        assert!(
            seq_in > 0 && seq_in < first as u64 * 3 / 4,
            "share {share}: {seq_in} of {first}"
        );
    }
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
    assert!(!s.in_rounds(), "not handed over");
    assert!(s.doubtful(), "{e}");
    let (out, doubt) = drain(GzStream::new(&gz, 1 << 30).unwrap());
    assert!(out.is_err() && !doubt);
}

#[test]
fn stored_blocks_leave_the_rounds_after_one_round() {
    let data = crate::samples::noise(6 << 20, 9);
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
    let data = crate::samples::noise(6 << 20, 11);
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
    assert_eq!(s.counts.members_in_rounds, members);
    // Only the member before the padding was handed over to one core:
    // its end was guessed at the next header, after the zeros.
    assert_eq!(s.counts.handovers, 1, "members handed over to one core");
    // With a real threshold, members under it go two at a time from
    // the first one on, and none of them gets rounds.
    let mut s = GzStream::with_rounds(&gz, 1 << 30, 16 << 10, SEGMENT_OUT, gz.len()).unwrap();
    assert!(drain_ok(&mut s) == data);
    assert!(s.pairs().several);
    assert_eq!(s.counts.members_in_rounds, 0);
    assert!(s.pairs().adopted > 0, "no member was inflated ahead");
}

#[test]
fn a_gzip_header_inside_a_member_costs_its_rounds_the_tail_not_the_answer() {
    // A member whose stored data holds a gzip header: its end is
    // guessed there, its last round fails there and one core goes on to
    // the real end; the member after it still gets its own rounds.
    let data = corpus();
    let mut fake = data[..200_000].to_vec();
    fake.extend_from_slice(&crate::samples::noise(50_000, 3));
    // A header as zlib writes it, then an empty fixed-Huffman block.
    fake.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0]);
    fake.extend_from_slice(&crate::samples::noise(50_000, 4));
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
    let (guess, found) = member_end(&gz, gz.len(), 10).unwrap();
    assert!(
        found && guess + TRAILER < second,
        "the member's end was not guessed wrong"
    );
    assert!(drain_ok(&mut s) == want);
    assert_eq!(s.counts.members_in_rounds, 2);
    // One core read the first member's tail, after its last round
    // failed where the member did not end; the second member's rounds
    // ended where its trailer is.
    assert_eq!(s.counts.handovers, 1);
    assert!(guess < second);
}

#[test]
fn a_payload_taken_for_one_member_runs_its_rounds_to_its_end_without_a_search() {
    // (Taken for one member when it is two: see
    // `rounds_reaching_a_member_end_hand_over_to_one_core_without_starting_again`.)
    let data = corpus();
    let gz = gzip(&data);
    let mut s = GzStream::parallel_with(&gz, 1 << 30, 16 << 10, SEGMENT_OUT).unwrap();
    s.take_for_one_member();
    let mut first = [0u8; 1];
    s.fill(&mut first).unwrap();
    assert_eq!(
        match &s.mode {
            Mode::Rounds(r) => Some(r.end),
            _ => None,
        },
        Some(MemberEnd::Cut)
    );
    let got = [&first[..], &drain_ok(&mut s)].concat();
    assert!(got == data);
    assert_eq!((s.counts.members_in_rounds, s.counts.handovers), (1, 0));
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
    assert_eq!((s.pairs().adopted, s.counts.members_in_rounds), (0, 1));
    assert_eq!(s.pairs().large_at, Some(small.len()));
}

/// A stream reading members two at a time (see `member_round`).
fn by_members(gz: &[u8]) -> GzStream<'_> {
    let mut s = GzStream::new(gz, 1 << 30).unwrap();
    s.pairs = Some(Pairs::default());
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
    assert_eq!(s.pairs().adopted, 2, "members taken over");
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
                return Ok(s.counts.runs_in_place);
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
fn a_long_run_skipped_on_two_threads_is_checked_and_its_pages_released() {
    // 8 MiB of noise: one run of stored blocks, skipped in 3 MiB strides
    // (each listed on this thread while the other maps the second half
    // and drops the pages of the strides before): the trailer vouches
    // for what was skipped, and the hook hears of most of the payload,
    // once, inside it.
    let data = crate::samples::noise(8 << 20, 11);
    let gz = zlib_members(&data, 6, false, 1);
    let told = std::sync::Mutex::new(Vec::new());
    let hook = |r: std::ops::Range<usize>| told.lock().expect("not poisoned").push(r);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let mut s = GzStream::parallel_with(&gz, 1 << 30, 1 << 20, SEGMENT_OUT)
            .unwrap()
            .release_behind(&hook);
        let mut w = vec![0u8; 64 << 10];
        let mut at = 0usize;
        loop {
            let n = s.skip(3 << 20, &mut w).unwrap() as usize;
            at += n;
            if n == 0 {
                break;
            }
        }
        assert_eq!(at, data.len());
        assert_eq!(s.fill(&mut w).unwrap(), 0);
        assert!(s.counts.runs_in_place >= 1 && !s.doubtful());
    });
    let mut told = told.into_inner().expect("not poisoned");
    told.sort_by_key(|r| r.start);
    let mut covered = 0;
    for (i, r) in told.iter().enumerate() {
        assert!(r.end <= gz.len(), "{r:?} past {}", gz.len());
        assert!(
            i == 0 || told[i - 1].end <= r.start,
            "{:?} {r:?}",
            told[i - 1]
        );
        covered += r.len();
    }
    assert!(
        covered > gz.len() * 3 / 4,
        "{covered} of {}: {told:?}",
        gz.len()
    );
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
        let ok =
            u16::from_le_bytes([gz[l], gz[l + 1]]) == !u16::from_le_bytes([gz[l + 2], gz[l + 3]]);
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
fn a_member_whose_trailer_says_long_runs_guesses_windows_until_its_rounds_say_otherwise() {
    if rayon::current_num_threads() < 2 {
        return; // no second core: neither gets rounds
    }
    // 4 bits of entropy a byte: about 2:1, over PARALLEL_FROM compressed.
    let data: Vec<u8> = crate::samples::noise(2 * PARALLEL_FROM + (4 << 20), 11)
        .iter()
        .map(|b| b & 15)
        .collect();
    let mut gz = gzip(&data);
    assert!(gz.len() > PARALLEL_FROM);
    let mut first = [0u8; 1 << 16];
    let guesses = |s: &GzStream<'_>| match &s.mode {
        Mode::Rounds(r) => r.guesses(),
        _ => panic!("not in rounds"),
    };
    let mut s = GzStream::new_parallel(&gz, u64::MAX, crate::hooks::pool_threads).unwrap();
    s.fill(&mut first).unwrap();
    assert_eq!(guesses(&s), (false, 0), "an honest trailer: no guess");
    assert!(first[..] == data[..first.len()]);
    // The same length, claiming to inflate 250:1 (in whole tar blocks:
    // taken for one member, read to the payload's end): the first round
    // guesses, finds 2:1 and stops guessing; its bytes are the true ones.
    let n = gz.len();
    gz[n - 4..].copy_from_slice(&0xffff_fe00_u32.to_le_bytes());
    let mut s = GzStream::new_parallel(&gz, u64::MAX, crate::hooks::pool_threads).unwrap();
    assert!(s.taken_for_one_member());
    s.fill(&mut first).unwrap();
    assert!(first[..] == data[..first.len()]);
    let (guessing, guessed) = guesses(&s);
    assert!(!guessing && guessed >= 1, "{guessing} {guessed}");
    assert_eq!((s.counts.members_in_rounds, s.counts.handovers), (1, 0));
    // Followed by another member: that member's trailer is the last, and
    // the first member's is read where its end is guessed, before its
    // first round.
    gz.extend(gzip(b"end"));
    let mut s = GzStream::new_parallel(&gz, u64::MAX, crate::hooks::pool_threads).unwrap();
    assert!(!s.taken_for_one_member());
    s.fill(&mut first).unwrap();
    let (guessing, guessed) = guesses(&s);
    assert!(!guessing && guessed >= 1, "{guessing} {guessed}");
}

#[test]
fn the_cap_stops_a_bomb_as_bytes_are_produced() {
    let gz = gzip(&vec![0u8; 8 << 20]);
    let mut s = GzStream::new(&gz, 1 << 20).unwrap();
    let e = s.finish(&mut [0u8; 4096]).unwrap_err().to_string();
    assert!(e.contains("over the cap"), "{e}");
}

#[test]
fn every_thread_count_gives_the_sequential_bytes_across_member_and_block_boundaries() {
    // Rounds of as many segments as the pool has threads (1 asks for the
    // least, 2), over every shape, drained; and over several members with
    // stored runs between them (member ends and block boundaries inside
    // rounds, runs read in place), read by fills and skips as a tar walk
    // reads them.
    let shapes: Vec<(Vec<u8>, Vec<u8>)> = (0..6).map(shape).collect();
    let stored = [stored_shape(7, 6, true, 3), stored_shape(8, 1, false, 1)];
    for threads in [1, 2, 3, 8, 17] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            for (i, (data, gz)) in shapes.iter().enumerate() {
                let s = GzStream::parallel_with(gz, 1 << 30, 24 << 10, 8 << 20).unwrap();
                let (out, doubt) = drain(s);
                assert!(!doubt, "{threads} threads, shape {i}");
                assert!(out.unwrap() == *data, "{threads} threads, shape {i}");
            }
            for (i, (data, gz)) in stored.iter().enumerate() {
                let s = GzStream::parallel_with(gz, 1 << 30, 64 << 10, 8 << 20).unwrap();
                // Each fill is compared with the data; skips are checked by
                // the stream's own trailer checks.
                fill_and_skip(s, data, i as u64)
                    .unwrap_or_else(|e| panic!("{threads} threads, stored shape {i}: {e}"));
            }
        });
    }
}

#[test]
fn rounds_of_guessed_windows_give_the_sequential_bytes_on_long_runs_of_any_byte() {
    // Zero padding between islands of noise (most guesses hold, a few
    // starts are written again), and padding of another byte (every guess
    // that copies from before its cut is wrong and is inflated again),
    // read by fills as a walk reads them, on 2, 3 and 8 threads.
    for fill in [0u8, 0x41] {
        let data = crate::samples::long_runs(96 << 20, fill, 0x1234_5678 + u64::from(fill));
        let gz = gzip(&data);
        for threads in [2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (out, guessed, counts) = pool.install(|| {
                let mut s =
                    GzStream::guessing_with(&gz, 1 << 30, (64 << 10, 1 << 20), 64 << 20).unwrap();
                let (mut out, mut guessed) = (Vec::with_capacity(data.len()), 0);
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = s.fill(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&buf[..n]);
                    if let Mode::Rounds(r) = &s.mode {
                        guessed = guessed.max(r.guesses().1);
                    }
                }
                assert!(!s.doubtful());
                let c = &s.counts;
                let counts = format!(
                    "{} members in rounds, {} handovers",
                    c.members_in_rounds, c.handovers
                );
                (out, guessed, counts)
            });
            let at = format!("fill {fill:#x}, {threads} threads: {guessed} guessed, {counts}");
            assert!(out == data, "{at}");
            assert!(guessed > 0, "{at}");
            // Skips take each whole part's CRC-32 from its thread, the rest
            // of a part from the whole's: the trailer checks them.
            pool.install(|| {
                let s = GzStream::guessing_with(&gz, 1 << 30, (64 << 10, 1 << 20), 64 << 20);
                fill_and_skip(s.unwrap(), &data, u64::from(fill) + threads as u64)
            })
            .unwrap_or_else(|e| panic!("{at}, skipping: {e}"));
        }
    }
}

/// Input said to be arriving: every wait is recorded, and a wait for any
/// of the bytes `never` fails as a broken download would.
struct Recorded {
    waits: std::sync::Mutex<Vec<std::ops::Range<usize>>>,
    never: std::ops::Range<usize>,
}

impl Recorded {
    fn new(never: std::ops::Range<usize>) -> Recorded {
        Recorded {
            waits: std::sync::Mutex::new(Vec::new()),
            never,
        }
    }
}

impl Arriving for Recorded {
    fn wait(&self, range: std::ops::Range<usize>) -> std::io::Result<()> {
        assert!(range.start < range.end, "an empty wait");
        self.waits.lock().unwrap().push(range.clone());
        if range.start < self.never.end && self.never.start < range.end {
            return Err(std::io::Error::other("the download broke"));
        }
        Ok(())
    }
}

#[test]
fn input_still_arriving_gives_the_whole_inputs_bytes_on_every_path_tail_first() {
    let mut x = 0xa77e_u64;
    for seed in 0..6 {
        let (data, gz) = shape(seed);
        for guess in [None, Some(256 << 10)] {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let seg = 1024 + (x >> 40) as usize % (511 << 10);
            let out_cap = (1 << 20) + (x >> 20) as usize % (7 << 20);
            let input = Recorded::new(0..0);
            let s = GzStream::arriving_with(&gz, 1 << 30, (seg, out_cap, guess), &input).unwrap();
            let (out, doubt) = drain(s);
            let at = format!("seed {seed} seg {seg} cap {out_cap} guess {guess:?}");
            assert!(!doubt && out.unwrap() == data, "{at}");
            let waits = input.waits.into_inner().unwrap();
            // The last trailer first (the plan reads it), then the
            // payload from its start, every byte of it asked for.
            assert_eq!(waits[0], gz.len() - TRAILER..gz.len(), "{at}");
            assert_eq!(waits[1].start, 0, "{at}");
            let mut seen = vec![false; gz.len()];
            for w in &waits {
                seen[w.clone()].iter_mut().for_each(|b| *b = true);
            }
            assert!(seen.iter().all(|&b| b), "{at}: a byte never waited for");
        }
        // Stored runs read in place, by fills and skips.
        let (data, gz) = stored_shape(seed, 6, seed % 2 == 0, 1 + seed as usize % 3);
        let input = Recorded::new(0..0);
        let s = GzStream::arriving_with(&gz, 1 << 30, (64 << 10, 8 << 20, None), &input).unwrap();
        fill_and_skip(s, &data, seed).unwrap();
        // And the one-core stream (the careful pass).
        let input = Recorded::new(0..0);
        let s = GzStream::arriving(&gz, 1 << 30, crate::hooks::one_thread, &input).unwrap();
        assert!(drain(s).0.unwrap() == data);
    }
}

#[test]
fn input_that_stops_arriving_fails_with_its_own_error_on_every_path() {
    let (_, gz) = shape(3);
    // (The last trailer arrives: a download fetches it first.)
    for cut in [gz.len() / 3, gz.len() - 20] {
        for forced in [true, false] {
            let input = Recorded::new(cut..gz.len() - TRAILER);
            let s = match forced {
                true => GzStream::arriving_with(&gz, 1 << 30, (32 << 10, 8 << 20, None), &input),
                false => GzStream::arriving(&gz, 1 << 30, crate::hooks::one_thread, &input),
            };
            let (out, _) = drain(s.unwrap());
            match out {
                Err(crate::Error::Io(e)) => assert_eq!(e.to_string(), "the download broke"),
                other => panic!("cut {cut} forced {forced}: {:?}", other.map(|v| v.len())),
            }
        }
    }
    // Not even the last trailer arrives: refused before any byte.
    let input = Recorded::new(0..gz.len());
    assert!(matches!(
        GzStream::arriving(&gz, 1 << 30, crate::hooks::pool_threads, &input),
        Err(crate::Error::Io(_))
    ));
}
