//! Stored DEFLATE blocks (BTYPE 00) found where a block is known to start.
//!
//! Encoders fall back to stored blocks for data they cannot compress
//! (zlib, libdeflate, GNU gzip and pigz all do): the block's bytes are the
//! output's own, in the payload between 5-byte block headers. The stream
//! ([`super::stream`]) reads a run of them in place instead of inflating
//! it: it copies what the tar walk reads and only checksums what the walk
//! skips, on two cores when one is free.
//!
//! A run is entered only at a bit where a block is known to start (a
//! member's first block, or the end of a parallel round that checked out),
//! so every header read here is the one a sequential inflater reads, and
//! the bytes handed out are exactly zlib's. A run ends at a block that is
//! not stored, which starts on a byte (a stored block ends on one): the
//! inflater takes over there, primed with the last 32 KiB of the run.

use std::ops::Range;

/// A stored block's data, as offsets into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub(crate) data: Range<usize>,
    /// BFINAL: the member's DEFLATE data ends with this block.
    pub(crate) last: bool,
}

/// What starts at a block boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum At {
    /// A stored block, whole within the input.
    Stored(Block),
    /// A Huffman block (or the invalid type 3): the inflater's to read.
    Other,
    /// A stored block whose lengths do not match or whose data runs past
    /// the input: corrupt or truncated, as an inflater would find it.
    Bad,
}

/// The block whose header starts at bit `bit` of `input` (bits counted
/// from the least significant of each byte, as DEFLATE packs them).
pub(crate) fn block_at(input: &[u8], bit: usize) -> At {
    let Some(&lo) = input.get(bit / 8) else {
        return At::Bad;
    };
    let hi = input.get(bit / 8 + 1).copied().unwrap_or(0);
    let k = bit % 8;
    if k > 5 && bit / 8 + 1 >= input.len() {
        return At::Bad; // the header's 3 bits run past the input
    }
    let h = ((u16::from(hi) << 8 | u16::from(lo)) >> k) & 7;
    if h >> 1 != 0 {
        return At::Other;
    }
    // BTYPE 00: the rest of the byte is padding, then LEN and NLEN.
    let lens = (bit + 3).div_ceil(8);
    let Some(l) = input.get(lens..lens + 4) else {
        return At::Bad;
    };
    let (len, nlen) = (
        u16::from_le_bytes([l[0], l[1]]),
        u16::from_le_bytes([l[2], l[3]]),
    );
    let start = lens + 4;
    let end = start + usize::from(len);
    if len != !nlen || end > input.len() {
        return At::Bad;
    }
    At::Stored(Block {
        data: start..end,
        last: h & 1 == 1,
    })
}

/// Bytes of stored data in the run of stored blocks starting at bit
/// `bit`, counted until `enough` is reached or the run ends (a block that
/// is not stored, a final block, or a bad one).
pub(crate) fn run_len(input: &[u8], bit: usize, enough: usize) -> usize {
    let (mut at, mut total) = (bit, 0usize);
    while total < enough {
        let At::Stored(b) = block_at(input, at) else {
            break;
        };
        total += b.data.len();
        if b.last {
            break;
        }
        at = b.data.end * 8;
    }
    total
}

/// The CRC-32 of `pieces` in order, continuing `crc`, computed on two
/// cores when `split` (the first half of the bytes on this thread, the
/// second on another, joined with zlib's CRC combination).
pub(crate) fn crc(pieces: &[&[u8]], crc: u32, split: bool) -> u32 {
    let sum = |init: u32, ps: &[&[u8]]| {
        let mut c = libdeflater::Crc::with_initial(init);
        for p in ps {
            c.update(p);
        }
        c.sum()
    };
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    if !split || total < 2 {
        return sum(crc, pieces);
    }
    // Cut at half the bytes, inside the piece that holds the middle (the
    // rounds hand over three pieces, one of them most of the bytes).
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let mut seen = 0usize;
    for &p in pieces {
        let cut = (total / 2).saturating_sub(seen).min(p.len());
        if cut > 0 {
            first.push(&p[..cut]);
        }
        if cut < p.len() {
            second.push(&p[cut..]);
        }
        seen += p.len();
    }
    let (a, b) = rayon::join(|| sum(crc, &first), || sum(0, &second));
    zlib_rs::crc32::crc32_combine(a, b, (total - total / 2) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw DEFLATE stream of `parts`, each a stored block (the last
    /// final), the first header starting `k` bits into the first byte.
    fn stream(parts: &[&[u8]], k: u32) -> Vec<u8> {
        let mut w = crate::deflate::BitWriter::default();
        w.put(0, k);
        for (i, p) in parts.iter().enumerate() {
            w.put(u32::from(i + 1 == parts.len()), 3);
            w.align();
            let len = p.len() as u32;
            w.put(len, 16);
            w.put(!len & 0xffff, 16);
            for &b in p.iter() {
                w.put(u32::from(b), 8);
            }
        }
        w.bytes
    }

    #[test]
    fn a_run_of_stored_blocks_is_read_at_any_bit_and_ends_at_its_final_block() {
        let (a, b) = (vec![7u8; 1000], vec![9u8; 300]);
        for k in 0..8 {
            let s = stream(&[&a, &b], k);
            let At::Stored(first) = block_at(&s, k as usize) else {
                panic!("k={k}: not stored");
            };
            assert!(!first.last);
            assert_eq!(&s[first.data.clone()], &a[..]);
            let At::Stored(second) = block_at(&s, first.data.end * 8) else {
                panic!("k={k}: second block");
            };
            assert!(second.last);
            assert_eq!(&s[second.data.clone()], &b[..]);
            assert_eq!(run_len(&s, k as usize, usize::MAX), 1300);
            assert_eq!(run_len(&s, k as usize, 10), 1000, "stops once enough");
            let mut out = vec![0u8; 2000];
            let n = libdeflater::Decompressor::new()
                .deflate_decompress(&s[..], &mut out)
                .unwrap_or(0);
            if k == 0 {
                assert_eq!(&out[..n], [a.clone(), b.clone()].concat());
            }
        }
    }

    #[test]
    fn huffman_blocks_bad_lengths_and_truncation_are_told_apart() {
        // A fixed-Huffman block: BTYPE 01.
        assert_eq!(block_at(&[0b011, 0, 0, 0, 0], 0), At::Other);
        let mut s = stream(&[b"abc"], 0);
        assert!(matches!(block_at(&s, 0), At::Stored(_)));
        s[3] ^= 1; // NLEN no longer the complement of LEN
        assert_eq!(block_at(&s, 0), At::Bad);
        let s = stream(&[b"abcdef"], 0);
        assert_eq!(block_at(&s[..s.len() - 1], 0), At::Bad);
        assert_eq!(block_at(&s[..3], 0), At::Bad);
        assert_eq!(block_at(&[], 0), At::Bad);
    }

    #[test]
    fn the_crc_of_pieces_is_the_same_on_two_cores() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let pieces: Vec<Range<usize>> = (0..200_000)
            .step_by(7_000)
            .map(|s| s..(s + 6_000).min(200_000))
            .collect();
        let mut whole = libdeflater::Crc::with_initial(0x1234_5678);
        for p in &pieces {
            whole.update(&data[p.clone()]);
        }
        let slices: Vec<&[u8]> = pieces.iter().map(|p| &data[p.clone()]).collect();
        for split in [false, true] {
            assert_eq!(crc(&slices, 0x1234_5678, split), whole.sum());
        }
        assert_eq!(crc(&slices[..1], 0, true), libdeflater::crc32(slices[0]));
        // One piece holding most of the bytes is cut inside.
        let uneven: Vec<&[u8]> = vec![&data[..10], &data[10..190_000], &data[190_000..]];
        assert_eq!(crc(&uneven, 7, true), crc(&uneven, 7, false));
    }
}
