//! Checks the fuzz target (`fuzz/`) and the tests drive: each panics only
//! when an invariant breaks (a real bug); a refusal is an expected outcome.
//! Not part of the API (feature `fuzzing`).

use crate::GzStream;

/// What zlib-rs (a reader nobody here wrote, through flate2) makes of
/// `gz` as one gzip member with nothing after it, capped at `cap` bytes of
/// output: the bytes, or `None` when it refuses, passes the cap or leaves
/// input over (several members and padding are compared between the
/// engine's own paths only).
fn zlib_rs_reads(gz: &[u8], cap: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut rest = gz;
    let mut out = Vec::new();
    flate2::bufread::GzDecoder::new(&mut rest)
        .take(cap + 1)
        .read_to_end(&mut out)
        .ok()?;
    (rest.is_empty() && out.len() as u64 <= cap).then_some(out)
}

/// Every path of the engine against zlib-rs on arbitrary bytes: where
/// both read `gz`, the bytes agree (the one-shot path on one thread and
/// split on four, and the stream); and the one-shot path, the stream and
/// the reader of pieces read or refuse it alike. (Refusals are not compared with zlib-rs's:
/// it checks a header CRC that gzip's other readers, and this one, skip.)
pub fn matches_zlib_rs(gz: &[u8]) {
    let cap = 64 << 20;
    let theirs = zlib_rs_reads(gz, cap);
    let one = crate::inflate(gz, cap, crate::hooks::one_thread).ok();
    let many = crate::inflate(gz, cap, || 4).ok();
    let streamed = stream_all(GzStream::new(gz, cap)).0.ok();
    for (what, ours) in [("one-shot", &one), ("split", &many)] {
        if let (Some(t), Some(o)) = (&theirs, ours) {
            assert!(t[..] == o[..], "{what}: bytes differ from zlib-rs's");
        }
    }
    match (&one, &many) {
        (Some(a), Some(b)) => assert!(a[..] == b[..], "one thread and four differ"),
        (None, None) => {}
        _ => panic!("one thread and four read it differently"),
    }
    if let (Some(t), Some(o)) = (&theirs, &streamed) {
        assert!(t[..] == o[..], "stream: bytes differ from zlib-rs's");
    }
    // Pieces of every size read as the slice stream reads (inputs under
    // the header bound, where the two may differ).
    if gz.len() < crate::HEADER_MAX {
        for most in [1, 13, 4096] {
            let pieces = read_in_pieces(gz, most, cap);
            match (&pieces, &streamed) {
                (Some(a), Some(b)) => assert!(a[..] == b[..], "pieces of {most}: bytes differ"),
                (None, None) => {}
                _ => panic!(
                    "pieces of {most}: {:?} but the stream {:?}",
                    pieces.as_ref().map(Vec::len),
                    streamed.as_ref().map(Vec::len)
                ),
            }
        }
    }
    // The one-shot path and the stream give an input one answer.
    match (&one, &streamed) {
        (Some(a), Some(b)) => assert!(a[..] == b[..], "one-shot and stream differ"),
        (None, None) => {}
        _ => panic!(
            "one-shot {:?} but stream {:?}",
            one.as_ref().map(|o| o.len()),
            streamed.as_ref().map(Vec::len)
        ),
    }
}

/// What [`crate::GzReader`] makes of `gz` handed out in pieces of 1 to
/// `most` bytes: the bytes, or `None` when it refuses.
fn read_in_pieces(gz: &[u8], most: usize, cap: u64) -> Option<Vec<u8>> {
    struct Pieces<'a>(&'a [u8], usize, usize);
    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.2 = self.2.wrapping_mul(31).wrapping_add(7);
            let n = (1 + self.2 % self.1).min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut crate::GzReader::new(Pieces(gz, most, 0), cap),
        &mut out,
    )
    .ok()
    .map(|_| out)
}

/// Everything `s` produces, 70,000 bytes at a time, and whether it said
/// it was doubtful.
fn stream_all(s: crate::Result<GzStream<'_>>) -> (Result<Vec<u8>, String>, bool) {
    match s {
        Ok(mut s) => {
            let (out, doubt) = s.read_all();
            (out.map_err(|e| e.to_string()), doubt)
        }
        Err(e) => (Err(e.to_string()), false),
    }
}

/// The bounded stream's parallel paths, forced on `gz` whatever its size
/// (rounds with segments of 1 KiB and of 16 KiB, each producing at most
/// 1 MiB, handing over to one core; members two at a time; and rounds
/// whose later segments always guess their windows, with 16 KiB
/// segments), give the bytes the sequential stream gives, or refuse what
/// it refuses, and so do they over input said to be still arriving
/// ([`GzStream::arriving_with`]). Only a stream whose rounds said they were doubtful (its
/// answer to be discarded and the payload read again sequentially) may
/// err where the sequential stream reads.
pub fn parallel_matches_sequential(gz: &[u8]) {
    let cap = 64 << 20;
    let (seq, _) = stream_all(GzStream::new(gz, cap));
    // The same paths over input said to be still arriving (it is all
    // there: every wait returns at once), which read it in other steps.
    let arrived = |_: std::ops::Range<usize>| Ok(());
    let ways = [(1 << 10, false), (16 << 10, false), (16 << 10, true)];
    for ((seg, guess), arriving) in ways.into_iter().flat_map(|w| [(w, false), (w, true)]) {
        let s = match (guess, arriving) {
            (true, false) => GzStream::guessing_with(gz, cap, (seg, 256 << 10), 1 << 20),
            (false, false) => GzStream::parallel_with(gz, cap, seg, 1 << 20),
            (true, true) => {
                GzStream::arriving_with(gz, cap, (seg, 1 << 20, Some(256 << 10)), &arrived)
            }
            (false, true) => GzStream::arriving_with(gz, cap, (seg, 1 << 20, None), &arrived),
        };
        let (par, doubt) = stream_all(s);
        match (&seq, &par) {
            (Ok(a), Ok(b)) => assert!(a == b, "parallel bytes differ (segment {seg}, {guess})"),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(_)) if doubt => {}
            _ => panic!(
                "sequential {:?} but parallel {:?} (segment {seg}, guessing {guess})",
                seq.as_ref().map(Vec::len),
                par.as_ref().map(Vec::len)
            ),
        }
    }
}
