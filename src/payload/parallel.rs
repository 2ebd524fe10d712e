//! Inflating one large gzip member on several cores.
//!
//! DEFLATE is sequential: each block may copy from the 32 KiB before it. To
//! split the work anyway (as pugz and rapidgzip do), the compressed stream is
//! cut into as many chunks as there are threads:
//!
//! 1. near each cut, the [block finder](super::deflate::plausible_start)
//!    looks for the bit where a block starts;
//! 2. chunk 0 is inflated by libdeflate, given the stream up to the first
//!    block boundary with a final empty block appended;
//! 3. every other chunk is decoded by the marker decoder until its last
//!    32 KiB of output no longer depend on the unknown window, and from that
//!    block on by libdeflate, primed with those 32 KiB;
//! 4. the chunks are joined in order, each chunk's markers resolved from the
//!    bytes before it.
//!
//! Nothing here is trusted: the caller checks the joined output's length
//! and CRC-32 against the gzip trailer, and on any failure (no boundary
//! found, a window that never clears, a mismatch) inflates sequentially.

use libdeflater::Decompressor;
use rayon::prelude::*;

use super::deflate::{self, Bits, Decoder, Step, MARKER, WINDOW};

/// Compressed payloads smaller than this are inflated on one thread.
pub const MIN_PARALLEL: usize = 8 << 20;
/// How far past a cut the block finder looks, in bytes.
const SEARCH: usize = 1 << 20;
/// The most symbols a chunk may marker-decode before giving up.
const MARKER_LIMIT: usize = 4 << 20;

/// Where the raw DEFLATE data of a single-member gzip stream starts.
pub fn deflate_start(gz: &[u8]) -> Option<usize> {
    if gz.len() < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 {
        return None;
    }
    let flg = gz[3];
    let mut p = 10usize;
    if flg & 4 != 0 {
        let xlen = usize::from(u16::from_le_bytes([*gz.get(p)?, *gz.get(p + 1)?]));
        p += 2 + xlen;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            p += memchr::memchr(0, gz.get(p..)?)? + 1;
        }
    }
    if flg & 2 != 0 {
        p += 2;
    }
    (p + 8 <= gz.len()).then_some(p)
}

/// The first plausible block start at or after bit `from`.
fn find_block(data: &[u8], from: usize) -> Option<usize> {
    let end = (from / 8 + SEARCH).min(data.len().saturating_sub(16));
    for byte in from / 8..end {
        // After a stored block the next block starts exactly on a byte.
        if byte >= 5 {
            let len = u16::from_le_bytes([data[byte - 4], data[byte - 3]]);
            let nlen = u16::from_le_bytes([data[byte - 2], data[byte - 1]]);
            let after = byte + usize::from(len);
            if len == !nlen
                && after * 8 >= from
                && after + 2 < data.len()
                && deflate::plausible_start(data, after * 8, true)
            {
                return Some(after * 8);
            }
        }
        for bit in 0..8 {
            let pos = byte * 8 + bit;
            if pos >= from && deflate::plausible_start(data, pos, false) {
                return Some(pos);
            }
        }
    }
    None
}

/// Sets `n` bits of `v` at bit `at` of `buf` (which must be long enough).
fn put_bits(buf: &mut [u8], at: usize, v: u32, n: u32) {
    for i in 0..n as usize {
        let (byte, bit) = ((at + i) / 8, (at + i) % 8);
        if (v >> i) & 1 == 1 {
            buf[byte] |= 1 << bit;
        } else {
            buf[byte] &= !(1 << bit);
        }
    }
}

/// A stream libdeflate can inflate: `prefix` (ending `from % 8` bits into a
/// byte), then `src` from bit `from`, ending at bit `to` with a final empty
/// stored block, or running to the stream's own end.
fn synth(prefix: &deflate::BitWriter, src: &[u8], from: usize, to: Option<usize>) -> Vec<u8> {
    let k = from % 8;
    let mut out = prefix.bytes.clone();
    let first = from / 8;
    let end = to.map_or(src.len(), |t| t.div_ceil(8).min(src.len()));
    if k > 0 {
        let last = out.pop().unwrap_or(0);
        let mask = (1u8 << k) - 1;
        out.push((last & mask) | (src[first] & !mask));
        out.extend_from_slice(&src[first + 1..end.max(first + 1)]);
    } else {
        out.extend_from_slice(&src[first..end]);
    }
    if let Some(t) = to {
        let at = prefix.bit_len() + (t - from);
        out.truncate(at.div_ceil(8));
        out.resize(at.div_ceil(8) + 6, 0);
        // BFINAL 1, BTYPE 00, pad, LEN 0, NLEN 0xffff.
        put_bits(&mut out, at, 1, 3);
        let body = (at + 3).div_ceil(8);
        out.truncate(body);
        out.extend_from_slice(&[0, 0, 0xff, 0xff]);
    }
    out
}

/// One decoded chunk: marker symbols, then plain bytes (`window`, then
/// `bytes[range]`, the part libdeflate inflated after priming, in a
/// huge-page mapping so that writing it costs few page faults).
struct Chunk {
    symbols: Vec<u16>,
    window: Vec<u8>,
    bytes: Option<super::HugeBuf>,
    range: std::ops::Range<usize>,
}

impl Chunk {
    fn markers_only(symbols: Vec<u16>) -> Chunk {
        Chunk {
            symbols,
            window: Vec::new(),
            bytes: None,
            range: 0..0,
        }
    }
    fn tail(&self) -> &[u8] {
        self.bytes.as_ref().map_or(&[], |b| &b[self.range.clone()])
    }
    fn len(&self) -> usize {
        self.symbols.len() + self.window.len() + self.tail().len()
    }
}

/// Chunk 0: plain libdeflate up to the first boundary, into `out`.
fn first_chunk(data: &[u8], to: usize, out: &mut [u8]) -> Option<usize> {
    let s = synth(&deflate::BitWriter::default(), data, 0, Some(to));
    Decompressor::new().deflate_decompress(&s, out).ok()
}

/// A later chunk, from bit `from` to bit `to` (or the end of the stream).
fn later_chunk(data: &[u8], from: usize, to: Option<usize>, cap: usize) -> Option<Chunk> {
    let mut d = Decoder::new();
    let mut b = Bits::new(data, from);
    loop {
        let Some(Step::Ended(last)) = d.block(&mut b, WINDOW + MARKER_LIMIT) else {
            return None;
        };
        match to {
            Some(t) if b.pos == t => return Some(Chunk::markers_only(d.produced().to_vec())),
            Some(t) if b.pos > t || last => return None,
            None if last => return Some(Chunk::markers_only(d.produced().to_vec())),
            _ => {}
        }
        if d.window_is_clean() {
            break;
        }
    }
    let prefix = deflate::primer(&d.window(), (b.pos % 8) as u32);
    let s = synth(&prefix, data, b.pos, to);
    let mut bytes = super::HugeBuf::new(cap + WINDOW, false).ok()?;
    let n = Decompressor::new()
        .deflate_decompress(&s, &mut bytes)
        .ok()?;
    let produced = d.produced();
    let symbols = produced[..produced.len() - WINDOW].to_vec();
    Some(Chunk {
        symbols,
        window: d.window(),
        bytes: Some(bytes),
        range: WINDOW.min(n)..n,
    })
}

/// Inflates the raw DEFLATE stream `data` into `out` on up to `threads`
/// threads; returns the bytes written, or `None` to fall back.
pub fn inflate(data: &[u8], out: &mut [u8], threads: usize) -> Option<usize> {
    split_inflate(data, out, threads, MIN_PARALLEL / 2)
}

/// [`inflate`] with chunks of at least `min_chunk` compressed bytes.
pub fn split_inflate(
    data: &[u8],
    out: &mut [u8],
    threads: usize,
    min_chunk: usize,
) -> Option<usize> {
    let k = threads.min(data.len() / min_chunk.max(1)).min(16);
    if k < 2 {
        return None;
    }
    let cuts: Vec<usize> = (1..k).map(|i| data.len() * i / k * 8).collect();
    let found: Vec<Option<usize>> = cuts.par_iter().map(|&c| find_block(data, c)).collect();
    let mut bounds = vec![0usize];
    for f in found {
        let f = f?;
        if f <= *bounds.last()? {
            return None;
        }
        bounds.push(f);
    }
    let ends: Vec<Option<usize>> = bounds[1..].iter().map(|&b| Some(b)).chain([None]).collect();
    let cap = out.len();
    let (head, rest) = rayon::join(
        || first_chunk(data, bounds[1], out),
        || {
            (1..bounds.len())
                .into_par_iter()
                .map(|i| later_chunk(data, bounds[i], ends[i], cap))
                .collect::<Vec<_>>()
        },
    );
    let mut pos = head?;
    for (i, chunk) in rest.into_iter().enumerate() {
        let window_start = pos.checked_sub(WINDOW)?;
        let Some(chunk) = chunk else {
            // This chunk's window never cleared (highly repetitive data
            // keeps copying from the unknown window): now that the bytes
            // before it are known, inflate the rest on this thread,
            // primed with the real window, straight into place (the primer
            // re-emits the window bytes already there).
            let from = bounds[i + 1];
            let prefix = deflate::primer(&out[window_start..pos], (from % 8) as u32);
            let s = synth(&prefix, data, from, None);
            let n = Decompressor::new()
                .deflate_decompress(&s, &mut out[window_start..])
                .ok()?;
            return Some(window_start + n);
        };
        if pos + chunk.len() > out.len() {
            return None;
        }
        let n = chunk.symbols.len();
        let (before, after) = out.split_at_mut(pos);
        let window = &before[window_start..];
        for (dst, &s) in after[..n].iter_mut().zip(&chunk.symbols) {
            *dst = if s < MARKER {
                s as u8
            } else {
                window[usize::from(s - MARKER)]
            };
        }
        pos += n;
        for part in [&chunk.window[..], chunk.tail()] {
            // The big copy runs on every core.
            out[pos..pos + part.len()]
                .par_chunks_mut(4 << 20)
                .zip(part.par_chunks(4 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            pos += part.len();
        }
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn split_inflate_equals_sequential_for_every_chunk_count_and_level() {
        for (lvl, seed) in [(0, 1), (1, 2), (6, 3), (12, 4)] {
            let data = corpus(1 << 20, seed);
            let mut c = Compressor::new(CompressionLvl::new(lvl).unwrap());
            let mut z = vec![0u8; c.deflate_compress_bound(data.len())];
            let n = c.deflate_compress(&data, &mut z).unwrap();
            z.truncate(n);
            let mut split = 0;
            for threads in [2, 3, 5] {
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
}
