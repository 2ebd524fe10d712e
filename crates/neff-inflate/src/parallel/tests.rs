//! The parallel paths against libdeflate and zlib: every split, round
//! and hand-over gives the bytes one core gives.

use super::cuts::*;
use super::search::*;
use super::segment::*;
use super::streamed::*;
use super::*;
use crate::arriving::Gate;
use crate::deflate::WINDOW;
use libdeflater::{CompressionLvl, Compressor};

/// Text-like runs, repeats far apart, and incompressible stretches.
fn corpus(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words: Vec<&[u8]> = vec![
        b"replica_groups",
        b"tensor_map",
        b"\"var\": {",
        b"0123456789",
        b"sg00/def.json ",
    ];
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        match rnd() % 4 {
            0 => (0..(rnd() % 3000)).for_each(|_| v.push(rnd() as u8)),
            1 if v.len() > 40000 => {
                let from = v.len() - 1 - (rnd() as usize % 32000);
                for i in 0..(rnd() % 200) as usize {
                    v.push(v[from + i % (v.len() - from)]);
                }
            }
            _ => (0..(rnd() % 50))
                .for_each(|_| v.extend_from_slice(words[rnd() as usize % words.len()])),
        }
    }
    v.truncate(n);
    v
}

/// Raw DEFLATE of `corpus(n, seed)` at libdeflate's level 6.
fn deflated(n: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let data = corpus(n, seed);
    let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
    let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
    let len = c.deflate_compress(&data, &mut z).unwrap();
    z.truncate(len);
    (data, z)
}

#[test]
fn the_last_round_splits_what_is_left_between_the_segments() {
    let (_, z) = deflated(12 << 20, 5);
    let left = z.len();
    assert!(left > 2 * TAIL_MIN + SEARCH, "{left}");
    // Segments of an eighth of the stream, two a round: room for a
    // round and a half.
    let c = cuts(&z, left / 8, EVEN_SHARE, 2, 0, Gate::WHOLE).unwrap();
    let (b, end) = (c.starts[0], c.end.unwrap());
    assert_eq!(c.starts.len(), 1);
    assert!(
        b / 8 >= left / 8 && end / 8 >= b / 8 + left / 8,
        "{b} {end}"
    );
    // Three segments of a sixteenth: each cut past the one before.
    let c = cuts(&z, left / 16, EVEN_SHARE, 3, 0, Gate::WHOLE).unwrap();
    assert_eq!(c.starts.len(), 2);
    assert!(c.starts[1] / 8 >= c.starts[0] / 8 + left / 16);
    assert!(c.end.unwrap() > c.starts[1]);
    // Segments as big as the stream: one last round, cut by the share
    // (the later segment's), which runs to the end.
    for share in [EVEN_SHARE, *SHARES.start(), *SHARES.end()] {
        let c = cuts(&z, left, share, 2, 0, Gate::WHOLE).unwrap();
        let at = sizes(left / 2, share, 2).0;
        let b = c.starts[0];
        assert!(
            b / 8 >= at && b / 8 < at + SEARCH,
            "share {share}: {b} for {at}"
        );
        assert_eq!(c.end, None);
    }
    // Between one and two rounds left: the round takes half of it.
    let c = cuts(&z, left * 11 / 40, EVEN_SHARE, 2, 0, Gate::WHOLE).unwrap();
    let end = c.end.unwrap() / 8;
    assert!(
        end >= left / 2 && end < left / 2 + 2 * SEARCH,
        "{end} of {left}"
    );
    // The last round of eight: eight segments, in order, to the end.
    let c = cuts(&z, left, EVEN_SHARE, 8, 0, Gate::WHOLE).unwrap();
    assert_eq!(c.starts.len(), 7, "{c:?}");
    assert!(c.starts.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(c.end, None);
    // Too little for two segments of the least size: one takes it all.
    for n in [2, 8] {
        let c = cuts(&z[..2 * TAIL_MIN - 1], left, EVEN_SHARE, n, 0, Gate::WHOLE).unwrap();
        assert_eq!(
            c,
            Cuts {
                starts: vec![],
                end: None
            }
        );
    }
}

#[test]
fn a_round_whose_later_segment_fails_hands_out_those_before_and_stops_there() {
    // A stream followed by another: the last round's later segment
    // runs into the first stream's final block, which ends before the
    // data does.
    let (data, mut z) = deflated(4 << 20, 3);
    let first_len = z.len();
    z.extend_from_slice(&deflated(64 << 10, 4).1);
    for n in [2, 3] {
        let mut r = Rounds::new(&z, z.len(), 64 << 20);
        r.set_segments(n);
        assert_eq!(r.next_round(), Ok(true));
        let out: Vec<u8> = r.parts().collect::<Vec<_>>().concat();
        assert!(!out.is_empty() && out.len() < data.len(), "{}", out.len());
        assert!(out[..] == data[..out.len()]);
        // The next round fails at once; one core goes on from the
        // failed segment's start.
        let from = r.consumed();
        assert!(from > 0 && from < first_len, "{from} of {first_len}");
        assert_eq!(r.next_round(), Err(RoundFailed));
        assert_eq!(r.consumed(), from);
        assert_eq!(r.window(), &out[out.len() - WINDOW..]);
    }
}

#[test]
fn rounds_give_the_sequential_bytes_whatever_share_and_segment_count() {
    let (data, z) = deflated(6 << 20, 9);
    for (share, n) in [
        (*SHARES.start(), 2),
        (EVEN_SHARE, 2),
        (*SHARES.end(), 2),
        (EVEN_SHARE, 3),
        (*SHARES.start(), 8),
        (EVEN_SHARE, 17),
    ] {
        // Small first segments: the first round is a whole one, not
        // the stream's last.
        let mut r = Rounds::new(&z, 32 << 10, 64 << 20);
        r.share = share;
        r.set_segments(n);
        let (mut out, mut most) = (Vec::new(), 0);
        while r.next_round().unwrap() {
            for p in r.parts() {
                out.extend_from_slice(p);
            }
            most = most.max(r.last_round().segments);
            assert!(SHARES.contains(&r.share), "{}", r.share);
        }
        assert!(
            out == data,
            "share {share}, {n} segments: {} of {} bytes",
            out.len(),
            data.len()
        );
        assert_eq!(most, n, "rounds of {n} segments");
    }
}

#[test]
fn each_segment_releases_its_input_once_copied_in_whole_pages() {
    let (data, z) = deflated(6 << 20, 9);
    for n in [2, 3, 8] {
        let told = std::sync::Mutex::new(Vec::new());
        let hook = |r: std::ops::Range<usize>| told.lock().expect("not poisoned").push(r);
        // The stream starts 1000 bytes into the hook's input (after
        // a gzip header, say).
        let base = 1000;
        let mut r = Rounds::new(&z, 32 << 10, 64 << 20);
        r.release_to(Some(&hook), base);
        r.set_segments(n);
        let mut out: Vec<u8> = Vec::new();
        while r.next_round().unwrap() {
            out.extend(r.parts().flatten().copied());
        }
        assert!(out == data);
        let mut told = told.into_inner().expect("not poisoned");
        told.sort_by_key(|r| r.start);
        let mut covered = 0;
        for (i, r) in told.iter().enumerate() {
            assert!(r.start % 4096 == 0 && r.end % 4096 == 0, "{r:?}");
            assert!(
                r.start >= base && r.start < r.end && r.end <= base + z.len(),
                "{r:?}"
            );
            // Each segment names only its own input: no page twice.
            assert!(
                i == 0 || told[i - 1].end <= r.start,
                "{:?} {r:?}",
                told[i - 1]
            );
            covered += r.len();
        }
        assert!(told.len() >= n, "{n} segments: {told:?}");
        // Whole pages inside each segment's input: most of the stream.
        assert!(
            covered > z.len() * 3 / 4,
            "{n}: {covered} of {}: {told:?}",
            z.len()
        );
    }
}

#[test]
fn each_segment_of_a_round_is_sized_for_its_output_target() {
    assert_eq!(seg_out(2), 6 << 20);
    assert_eq!(seg_out(3), 8 << 20);
    assert_eq!(seg_out(8), 8 << 20);
    assert_eq!(seg_out(16), 8 << 20);
    assert_eq!(seg_out(22), (128 << 20) / 22);
    assert_eq!(seg_out(32), 4 << 20);
    assert_eq!(seg_out(192), 4 << 20);
    // Before a ratio is known, more segments start smaller.
    let z = [0u8; 16];
    let mut r = Rounds::new(&z, 4 << 20, 64 << 20);
    r.set_segments(32);
    assert_eq!(r.seg, (4 << 20) * 4 / 6);
    r.set_segments(8);
    assert_eq!(r.seg, (4 << 20) * 4 / 6 * 8 / 4);
    r.set_segments(1000);
    assert_eq!(r.segments(), MAX_SEGS);
    // What one segment may produce: the stream's cap up to 16
    // segments, then 1 GiB shared out, never below twice the target.
    assert_eq!(seg_cap(64 << 20, 2), 64 << 20);
    assert_eq!(seg_cap(64 << 20, 16), 64 << 20);
    assert_eq!(seg_cap(64 << 20, 32), 32 << 20);
    assert_eq!(seg_cap(64 << 20, 192), 8 << 20);
    assert_eq!(seg_cap(1 << 20, 192), 1 << 20);
    // The weights: a later segment's share against A's.
    let (a, b) = sizes(1 << 20, EVEN_SHARE, 8);
    assert_eq!(a, b);
    let (a, b) = sizes(1 << 20, 16, 4);
    assert!(a == 3 * b && a + 3 * b <= 4 << 20, "{a} {b}");
}

#[test]
fn split_inflate_equals_sequential_for_every_chunk_count_and_level() {
    for (lvl, seed) in [(0, 1), (1, 2), (6, 3), (12, 4)] {
        let data = corpus(1 << 20, seed);
        let mut c = Compressor::new(CompressionLvl::new(lvl).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
        let n = c.deflate_compress(&data, &mut z).unwrap();
        z.truncate(n);
        let mut split = 0;
        for threads in [2, 3, 5, 32] {
            let mut out = vec![0u8; data.len()];
            let got = split_inflate(&z, &mut out, threads, 8 << 10);
            // None (no boundary near a cut) is allowed; a wrong answer is not.
            if let Some(len) = got {
                assert_eq!(len, data.len(), "level {lvl}, {threads} threads");
                assert!(out == data, "level {lvl}, {threads} threads: bytes differ");
                split += 1;
            }
        }
        assert!(split > 0, "level {lvl}: never split");
    }
}

#[test]
fn a_window_that_never_clears_falls_back_to_the_known_bytes() {
    // One phrase repeated with noise between: every later copy of the
    // phrase chains back into the unknown window, so markers never die.
    let mut data = Vec::new();
    let mut x = 5u64;
    while data.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 2 == 0 {
            data.extend_from_slice(b"model.layers.17.self_attn.q_proj.weight ");
        } else {
            data.extend_from_slice(&x.to_le_bytes());
        }
    }
    let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
    let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
    let n = c.deflate_compress(&data, &mut z).unwrap();
    z.truncate(n);
    let mut out = vec![0u8; data.len()];
    assert_eq!(split_inflate(&z, &mut out, 2, 64 << 10), Some(data.len()));
    assert!(out == data);
}

/// [`crate::samples::long_runs`], and it deflated at level 1.
fn long_runs(n: usize, fill: u8, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let data = crate::samples::long_runs(n, fill, seed);
    let mut c = Compressor::new(CompressionLvl::new(1).unwrap());
    let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
    let len = c.deflate_compress(&data, &mut z).unwrap();
    z.truncate(len);
    (data, z)
}

/// `z` read in rounds of `n` segments of `target` bytes of output that
/// guess their windows from the first round: the bytes, and how many
/// segments guessed and were inflated again.
fn guessed_rounds(z: &[u8], n: usize, target: usize) -> (Vec<u8>, (usize, usize, usize), bool) {
    let mut r = Rounds::new(z, 64 << 10, 64 << 20);
    r.fixed_target = Some(target);
    r.set_segments(n);
    r.guess_windows(20);
    let mut out = Vec::new();
    while r.next_round().unwrap() {
        for p in r.parts() {
            out.extend_from_slice(p);
        }
    }
    (out, r.guesses(), r.guess)
}

#[test]
fn long_runs_are_inflated_from_a_guessed_window_and_checked_against_the_true_one() {
    // Zero padding: most guesses hold, and the rounds go on guessing.
    // Padding of another byte: a segment whose start copies from its
    // window is wrong and is inflated again, and the rounds stop
    // guessing after a round of mostly wrong guesses. Either way the
    // bytes are the sequential ones.
    for (fill, seed) in [(0u8, 3), (0x41, 4)] {
        // 4 MiB of DEFLATE data or so: rounds cut at least [`SEARCH`]
        // before the end.
        let (data, z) = long_runs(96 << 20, fill, seed);
        for (n, target) in [(2, 4 << 20), (3, 2 << 20), (8, 1 << 20)] {
            let (out, (guessed, patched, redone), guessing) = guessed_rounds(&z, n, target);
            let at = format!(
                "fill {fill:#x}, {n} segments of {target}: {guessed} guessed, {patched} \
                 patched, {redone} redone"
            );
            assert!(out == data, "{at}: {} of {} bytes", out.len(), data.len());
            if fill == 0 {
                assert!(guessed >= 8 && redone * 4 < guessed && guessing, "{at}");
            } else {
                assert!(redone >= 1 && !guessing, "{at}");
            }
        }
    }
}

#[test]
fn corrupt_long_runs_read_from_guessed_windows_never_panic() {
    let (_, z) = long_runs(4 << 20, 0, 6);
    let mut x = 91u64;
    for _ in 0..24 {
        let mut bad = z.clone();
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (x >> 33) as usize % bad.len();
        bad[i] ^= (x >> 20) as u8 | 1;
        let mut r = Rounds::new(&bad, 64 << 10, 64 << 20);
        r.fixed_target = Some(256 << 10);
        r.guess_windows(20);
        while let Ok(true) = r.next_round() {}
    }
}

#[test]
fn corrupt_streams_never_panic() {
    let data = corpus(256 << 10, 9);
    let mut c = Compressor::new(CompressionLvl::new(6).unwrap());
    let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
    let n = c.deflate_compress(&data, &mut z).unwrap();
    z.truncate(n);
    let mut x = 77u64;
    for _ in 0..12 {
        let mut bad = z.clone();
        for _ in 0..8 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % bad.len();
            bad[i] ^= (x >> 20) as u8 | 1;
        }
        let mut out = vec![0u8; data.len()];
        let _ = split_inflate(&bad, &mut out, 4, 8 << 10);
    }
}
