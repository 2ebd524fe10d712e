//! Finding where a DEFLATE block starts near a cut, and inflating from
//! there: the synthetic streams (a block's bits re-aligned behind a
//! prefix) that libdeflate inflates, checked against the stream's
//! CRC-32 where asked, and the bridge between two known points.

use libdeflater::Decompressor;

use crate::deflate::{self, WINDOW};

/// Fewest compressed bytes per chunk of a whole-payload split.
pub(super) const MIN_CHUNK: usize = 4 << 20;
/// How far past a cut the block finder looks, in bytes.
pub(super) const SEARCH: usize = 1 << 20;
/// The most symbols a chunk may marker-decode before giving up.
pub(super) const MARKER_LIMIT: usize = 4 << 20;
/// Room in front of a later segment's output for its marker-decoded
/// start: the decoder stops past [`MARKER_LIMIT`] symbols, after the block
/// it is in (a match, or a stored block of up to 64 KiB), and the last
/// 32 KiB it decodes are the window libdeflate outputs again.
pub(super) const MARKS_ROOM: usize = MARKER_LIMIT + WINDOW + (128 << 10);

/// The first plausible block start at or after bit `from`.
pub(super) fn find_block(data: &[u8], from: usize) -> Option<usize> {
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
        // The first 13 bits of a dynamic block's header, tested at each bit
        // of one load before the whole test.
        let w = data
            .get(byte..byte + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
        for bit in 0..8 {
            if !deflate::dynamic_header_start(w >> bit) {
                continue;
            }
            let pos = byte * 8 + bit;
            if pos >= from && deflate::plausible_start(data, pos, false) {
                return Some(pos);
            }
        }
    }
    None
}

/// Sets `n` bits of `v` at bit `at` of `buf` (which must be long enough).
pub(super) fn put_bits(buf: &mut [u8], at: usize, v: u32, n: u32) {
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
pub(super) fn synth(
    prefix: &deflate::BitWriter,
    src: &[u8],
    from: usize,
    to: Option<usize>,
) -> Vec<u8> {
    let mut out = Vec::new();
    synth_into(&mut out, prefix, src, from, to);
    out
}

/// [`synth`] into `out` (cleared first), whose capacity is reused: the
/// rounds keep one such buffer per segment, so that copying a segment's
/// input costs no fresh pages.
pub(super) fn synth_into(
    out: &mut Vec<u8>,
    prefix: &deflate::BitWriter,
    src: &[u8],
    from: usize,
    to: Option<usize>,
) {
    let k = from % 8;
    out.clear();
    out.extend_from_slice(&prefix.bytes);
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
        // BFINAL 1, BTYPE 00, pad, LEN, NLEN, then the nonce: the output
        // ends with it only if the data before the cut had no final block
        // of its own (libdeflate stops at the first final block and does not
        // say where; a stream that ended early would otherwise pass).
        put_bits(out, at, 1, 3);
        let body = (at + 3).div_ceil(8);
        out.truncate(body);
        let len = NONCE.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(&NONCE[..]);
    }
}

/// Bytes a synthetic closing block outputs: random per process, so that
/// no input can end with them by design.
pub(super) static NONCE: std::sync::LazyLock<[u8; 16]> = std::sync::LazyLock::new(|| {
    let mut n = [0u8; 16];
    if getrandom::fill(&mut n).is_err() {
        // No entropy source: the time and the process id still differ from
        // run to run.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        n.copy_from_slice(&(t ^ (u128::from(std::process::id()) << 64)).to_le_bytes());
    }
    n
});

/// Room a synthetic stream's output needs beyond its real bytes.
pub(super) const NONCE_ROOM: usize = 16;

/// Inflates the synthetic stream `s` (from [`synth`]) into `out`: when it
/// was cut (`cut`), its output must end with the nonce, which is dropped;
/// when it runs to the real stream's end, it is inflated by zlib-rs, which
/// says how much input it used, and it must have used all of it (nothing
/// may follow the final block but the gzip trailer).
pub(super) fn inflate_synth(s: &[u8], out: &mut [u8], cut: bool) -> Option<usize> {
    if cut {
        let n = Decompressor::new().deflate_decompress(s, out).ok()?;
        let real = n.checked_sub(NONCE.len())?;
        (out[real..n] == NONCE[..]).then_some(real)
    } else {
        let mut z = flate2::Decompress::new(false);
        let done = z.decompress(s, out, flate2::FlushDecompress::Finish);
        let whole =
            matches!(done, Ok(flate2::Status::StreamEnd)) && z.total_in() as usize == s.len();
        whole.then_some(z.total_out() as usize)
    }
}

/// Output step of [`inflate_synth_crc`]: a step's bytes are still in
/// the core's cache when they are checksummed.
pub(super) const CRC_STEP: usize = 512 << 10;

/// As [`inflate_synth`], by zlib-rs in steps of [`CRC_STEP`], also
/// taking the CRC-32 of the output from byte `skip` on (the window a
/// primer outputs first is not the segment's), each step while it is in
/// cache: the segments of long runs checksum their own output on their
/// own threads, where the consumer would read it all again from memory
/// between rounds. The output's real length and its CRC-32.
pub(super) fn inflate_synth_crc(
    s: &[u8],
    out: &mut [u8],
    cut: bool,
    skip: usize,
) -> Option<(usize, u32)> {
    let mut z = flate2::Decompress::new(false);
    let mut crc = libdeflater::Crc::new();
    // A cut stream's last bytes are the nonce, not output.
    let hold = if cut { NONCE.len() } else { 0 };
    let mut summed = skip;
    loop {
        let (i, o) = (z.total_in() as usize, z.total_out() as usize);
        let end = o.saturating_add(CRC_STEP).min(out.len());
        let status = z
            .decompress(
                s.get(i..)?,
                out.get_mut(o..end)?,
                flate2::FlushDecompress::None,
            )
            .ok()?;
        let n = z.total_out() as usize;
        let upto = n.saturating_sub(hold);
        if upto > summed {
            crc.update(&out[summed..upto]);
            summed = upto;
        }
        if status == flate2::Status::StreamEnd {
            break;
        }
        if n == o && z.total_in() as usize == i {
            // No progress: the input ended early, or the output is full.
            return None;
        }
    }
    let n = z.total_out() as usize;
    let real = n.checked_sub(hold)?;
    let whole = if cut {
        out[real..n] == NONCE[..]
    } else {
        z.total_in() as usize == s.len()
    };
    (whole && real >= skip).then_some((real, crc.sum()))
}

/// Inflates `data` from bit `from`, where a block starts after `window`
/// (the 32 KiB before it), to bit `to`, where another block must start:
/// into `out`, whose range that holds the output (the window dropped) is
/// returned. `None` when `to` is not a block boundary (the synthetic final
/// block there does not end the output with the nonce), the data between
/// does not inflate, or the output does not fit.
pub(crate) fn inflate_between(
    data: &[u8],
    window: &[u8],
    from: usize,
    to: usize,
    out: &mut [u8],
) -> Option<std::ops::Range<usize>> {
    if to <= from || to.div_ceil(8) > data.len() {
        return None;
    }
    let s = synth(
        &deflate::primer(window, (from % 8) as u32),
        data,
        from,
        Some(to),
    );
    let n = inflate_synth(&s, out, true)?;
    (n >= window.len()).then_some(window.len()..n)
}

/// Room `inflate_between`'s output needs beyond the window and the bytes.
pub(crate) const BETWEEN_ROOM: usize = NONCE_ROOM;
