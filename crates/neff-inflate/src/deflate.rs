//! A small DEFLATE (RFC 1951) decoder that can start in the middle of a
//! stream, at any bit, without the 32 KiB of history that came before.
//!
//! It exists for [`parallel`](super::parallel) inflation and does only what
//! libdeflate cannot: output is 16-bit symbols, where a value below 256 is a
//! byte and `256 + i` stands for byte `i` of the unknown 32 KiB window that
//! preceded the starting point. Back-references copy those markers like
//! bytes, so once the real window is known every marker can be replaced.
//! It is also the block finder: a candidate start must parse as a dynamic
//! Huffman block whose codes are valid and complete, and decode cleanly.
//!
//! Every read is bounds-checked (bytes past the end read as zero and the
//! caller checks the position), every table index is masked, and errors are
//! plain `None`: on any doubt the caller falls back to libdeflate.

/// Size of the DEFLATE history window.
pub(crate) const WINDOW: usize = 32 << 10;
/// First marker value: `MARKER + i` is byte `i` of the unknown window.
pub(crate) const MARKER: u16 = 256;

/// An LSB-first bit reader over a byte slice.
#[derive(Clone)]
pub(crate) struct Bits<'a> {
    data: &'a [u8],
    /// Position in bits.
    pub(crate) pos: usize,
}

impl<'a> Bits<'a> {
    /// A reader over `data`, starting `pos` bits in (bit 0 is the least
    /// significant bit of byte 0).
    pub(crate) fn new(data: &'a [u8], pos: usize) -> Bits<'a> {
        Bits { data, pos }
    }

    /// The next `n` (≤ 32) bits without consuming them; past the end, zeros.
    #[inline]
    fn peek(&self, n: u32) -> u32 {
        let byte = self.pos / 8;
        let word = match self.data.get(byte..).and_then(|s| s.first_chunk::<8>()) {
            Some(w) => u64::from_le_bytes(*w),
            None => {
                // The last 7 bytes: what is there, then zeros.
                let mut w = [0u8; 8];
                let avail = self.data.len().saturating_sub(byte).min(8);
                if avail > 0 {
                    w[..avail].copy_from_slice(&self.data[byte..byte + avail]);
                }
                u64::from_le_bytes(w)
            }
        };
        ((word >> (self.pos % 8)) & ((1u64 << n) - 1)) as u32
    }

    #[inline]
    fn take(&mut self, n: u32) -> u32 {
        let v = self.peek(n);
        self.pos += n as usize;
        v
    }

    /// Whether the reader has gone past the end of the data.
    pub(crate) fn overrun(&self) -> bool {
        self.pos > self.data.len() * 8
    }
}

/// A canonical Huffman code as a lookup table over the next `max` bits.
struct Table {
    /// `(symbol << 4) | length`, indexed by the next `max` bits.
    entries: Vec<u16>,
    max: u32,
}

impl Table {
    /// Builds the table; `None` for an over-subscribed or (beyond zlib's one
    /// allowed case) incomplete code.
    fn new(lengths: &[u8]) -> Option<Table> {
        let mut count = [0u16; 16];
        for &l in lengths {
            count[l as usize] += 1;
        }
        count[0] = 0;
        let max = (1..16).rev().find(|&l| count[l] != 0).unwrap_or(0) as u32;
        if max == 0 {
            // No symbols (a literal-only block's distance code): every
            // lookup fails, as zlib does.
            return Some(Table {
                entries: vec![0; 2],
                max: 1,
            });
        }
        let mut left: i32 = 1;
        for &c in &count[1..16] {
            left = 2 * left - i32::from(c);
            if left < 0 {
                return None; // over-subscribed
            }
        }
        if left > 0 && max != 1 {
            return None; // incomplete (zlib allows only a single 1-bit code)
        }
        let mut next = [0u16; 16];
        let mut code = 0u16;
        for l in 1..16 {
            code = (code + count[l - 1]) << 1;
            next[l] = code;
        }
        let size = 1usize << max;
        let mut entries = vec![0u16; size];
        for (sym, &l) in lengths.iter().enumerate() {
            if l == 0 {
                continue;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            // Codes are sent MSB first: reverse to index by stream bits.
            let rev = (c.reverse_bits() >> (16 - l)) as usize;
            let mut i = rev;
            while i < size {
                entries[i] = ((sym as u16) << 4) | u16::from(l);
                i += 1 << l;
            }
        }
        Some(Table { entries, max })
    }

    #[inline]
    fn decode(&self, b: &mut Bits<'_>) -> Option<u16> {
        let e = self.entries[b.peek(self.max) as usize];
        let len = u32::from(e & 15);
        if len == 0 {
            return None;
        }
        b.pos += len as usize;
        Some(e >> 4)
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The header of one block, ready to decode its body.
enum Block {
    Stored { len: usize },
    Huffman { lit: Table, dist: Table },
}

/// Reads a block header (after BFINAL); `None` if it cannot be valid.
fn header(b: &mut Bits<'_>) -> Option<Block> {
    match b.take(2) {
        0 => {
            b.pos = b.pos.div_ceil(8) * 8;
            let len = b.take(16);
            let nlen = b.take(16);
            (len == !nlen & 0xffff).then_some(Block::Stored { len: len as usize })
        }
        1 => {
            let mut l = [0u8; 288];
            l[..144].fill(8);
            l[144..256].fill(9);
            l[256..280].fill(7);
            l[280..].fill(8);
            Some(Block::Huffman {
                lit: Table::new(&l)?,
                dist: Table::new(&[5u8; 32])?,
            })
        }
        2 => {
            let hlit = b.take(5) as usize + 257;
            let hdist = b.take(5) as usize + 1;
            let hclen = b.take(4) as usize + 4;
            if hlit > 286 || hdist > 30 {
                return None;
            }
            let mut cl = [0u8; 19];
            for &i in &CL_ORDER[..hclen] {
                cl[i] = b.take(3) as u8;
            }
            let clt = Table::new(&cl)?;
            let mut lens = [0u8; 316];
            let mut i = 0;
            while i < hlit + hdist {
                let sym = clt.decode(b)?;
                let (val, n) = match sym {
                    0..=15 => (sym as u8, 1),
                    16 => (*lens[..i].last()?, 3 + b.take(2) as usize),
                    17 => (0, 3 + b.take(3) as usize),
                    18 => (0, 11 + b.take(7) as usize),
                    _ => return None,
                };
                if i + n > hlit + hdist {
                    return None;
                }
                lens[i..i + n].fill(val);
                i += n;
            }
            if lens[256] == 0 || !kraft_ok(&lens[..hlit]) || !kraft_ok(&lens[hlit..hlit + hdist]) {
                return None; // no end-of-block code, or an invalid code
            }
            Some(Block::Huffman {
                lit: Table::new(&lens[..hlit])?,
                dist: Table::new(&lens[hlit..hlit + hdist])?,
            })
        }
        _ => None,
    }
}

/// Decoder state: output symbols (the first [`WINDOW`] are the markers of
/// the unknown window) and where the last marker was written.
pub(crate) struct Decoder {
    /// Every symbol decoded so far, after the [`WINDOW`] markers it starts with:
    /// a value below 256 is a byte, `MARKER + i` is byte `i` of the unknown window.
    pub(crate) out: Vec<u16>,
    last_marker: Option<usize>,
}

/// What [`Decoder::block`] found.
pub(crate) enum Step {
    /// A block ended; `true` if it was the final one.
    Ended(bool),
    /// The output passed the limit inside a block: the decoder stopped
    /// after the symbol that passed it (the symbols so far are kept, and
    /// are the block's true start; the rest of it is not decoded).
    Full,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder whose output starts as the [`WINDOW`] markers of the unknown
    /// history (`MARKER`, `MARKER + 1`, …).
    pub(crate) fn new() -> Decoder {
        Decoder {
            out: (0..WINDOW as u16).map(|i| MARKER + i).collect(),
            last_marker: Some(WINDOW - 1),
        }
    }

    /// Starts over as [`new`](Self::new) does, keeping the symbols'
    /// memory: a later segment of the streamed rounds decodes its start
    /// into the same buffer round after round.
    pub(crate) fn reset(&mut self) {
        self.out.clear();
        self.out.extend((0..WINDOW as u16).map(|i| MARKER + i));
        self.last_marker = Some(WINDOW - 1);
    }

    /// Symbols decoded so far (window markers excluded).
    pub(crate) fn produced(&self) -> &[u16] {
        &self.out[WINDOW..]
    }

    /// Whether the last [`WINDOW`] symbols are all real bytes.
    pub(crate) fn window_is_clean(&self) -> bool {
        self.last_marker
            .is_none_or(|m| self.out.len() - (m + 1) >= WINDOW)
    }

    /// The last [`WINDOW`] bytes (only meaningful when the window is clean).
    pub(crate) fn window(&self) -> Vec<u8> {
        self.out[self.out.len() - WINDOW..]
            .iter()
            .map(|&s| s as u8)
            .collect()
    }

    /// Decodes one whole block at `b`, appending to the output. Stops with
    /// [`Step::Full`] once the output holds more than `limit` symbols;
    /// `None` on any invalid input.
    pub(crate) fn block(&mut self, b: &mut Bits<'_>, limit: usize) -> Option<Step> {
        let last = b.take(1) == 1;
        match header(b)? {
            Block::Stored { len } => {
                let start = b.pos / 8;
                let bytes = b.data.get(start..start + len)?;
                self.out.extend(bytes.iter().map(|&x| u16::from(x)));
                b.pos += len * 8;
            }
            Block::Huffman { lit, dist } => loop {
                if b.overrun() {
                    return None;
                }
                if self.out.len() > limit {
                    return Some(Step::Full);
                }
                let sym = lit.decode(b)?;
                if sym < 256 {
                    self.out.push(sym);
                    continue;
                }
                if sym == 256 {
                    break;
                }
                let (len, d) = length_distance(sym, b, &dist)?;
                let from = self.out.len().checked_sub(d)?;
                if self.last_marker.is_some_and(|m| m >= from) {
                    // The source may hold markers: note where they land.
                    for k in 0..len {
                        let v = self.out[from + k];
                        if v >= MARKER {
                            self.last_marker = Some(self.out.len());
                        }
                        self.out.push(v);
                    }
                } else if d >= len {
                    // No marker at or after `from`, no overlap: one copy.
                    self.out.extend_from_within(from..from + len);
                } else {
                    // An overlapping copy of marker-free symbols.
                    for k in 0..len {
                        let v = self.out[from + k];
                        self.out.push(v);
                    }
                }
            },
        }
        if b.overrun() {
            return None;
        }
        Some(Step::Ended(last))
    }
}

/// The length of the match whose length symbol is `sym` (257 to 285) and
/// its distance, read from `b` with the block's distance code `dist`.
#[inline]
fn length_distance(sym: u16, b: &mut Bits<'_>, dist: &Table) -> Option<(usize, usize)> {
    let li = usize::from(sym - 257);
    let len = usize::from(*LEN_BASE.get(li)?) + b.take(u32::from(LEN_EXTRA[li])) as usize;
    let di = usize::from(dist.decode(b)?);
    let d = usize::from(*DIST_BASE.get(di)?) + b.take(u32::from(DIST_EXTRA[di])) as usize;
    Some((len, d))
}

/// Reads one whole block at `b` as [`Decoder::block`] would, after a full
/// window, without producing its output: every code must decode and every
/// distance reach no further back than the window and the block's own
/// output. The block finder's test: a block of long runs (zeros: 4 MiB
/// of output from 16 K symbols) is read in the time of its symbols, not
/// of its bytes. [`Step::Full`] after `symbols` symbols; `None` on any
/// invalid input.
fn skim_block(b: &mut Bits<'_>, symbols: usize) -> Option<Step> {
    let last = b.take(1) == 1;
    match header(b)? {
        Block::Stored { len } => {
            b.pos = (b.pos / 8 + len) * 8;
        }
        Block::Huffman { lit, dist } => {
            let mut produced = 0usize;
            for _ in 0..symbols {
                if b.overrun() {
                    return None;
                }
                let sym = lit.decode(b)?;
                if sym < 256 {
                    produced += 1;
                    continue;
                }
                if sym == 256 {
                    return (!b.overrun()).then_some(Step::Ended(last));
                }
                let (len, d) = length_distance(sym, b, &dist)?;
                if d > WINDOW + produced {
                    return None;
                }
                produced += len;
            }
            return Some(Step::Full);
        }
    }
    (!b.overrun()).then_some(Step::Ended(last))
}

/// Whether `lengths` form a code [`Table::new`] accepts, without building it.
fn kraft_ok(lengths: &[u8]) -> bool {
    let mut count = [0u16; 16];
    for &l in lengths {
        count[usize::from(l & 15)] += 1;
    }
    let max = (1..16).rev().find(|&l| count[l] != 0).unwrap_or(0);
    if max == 0 {
        return true;
    }
    let mut left: i32 = 1;
    for &c in &count[1..16] {
        left = 2 * left - i32::from(c);
        if left < 0 {
            return false;
        }
    }
    left == 0 || max == 1
}

/// Whether the low 13 bits of `bits` (stream order) can start a dynamic
/// block header: BFINAL 0, BTYPE 2, HLIT + 257 <= 286 and HDIST + 1 <= 30.
/// The block finder asks it at every bit (7 in 8 fail at once), before
/// the rest of [`quick_header_check`].
#[inline]
pub(crate) fn dynamic_header_start(bits: u64) -> bool {
    bits & 7 == 0b100 && (bits >> 3) & 31 <= 29 && (bits >> 8) & 31 <= 29
}

/// The cheap part of the block finder's test, allocation-free: a dynamic
/// block header (BFINAL 0) whose code-length code is complete, as zlib's
/// encoder always sends it, with at least two codes. The header and its
/// 19 code lengths take at most 74 bits: one 128-bit load, no bit reader
/// (the finder asks this at every bit of a search).
fn quick_header_check(data: &[u8], pos: usize) -> bool {
    let byte = pos / 8;
    let w = match data.get(byte..).and_then(|s| s.first_chunk::<16>()) {
        Some(w) => u128::from_le_bytes(*w),
        None => {
            // The last 15 bytes: what is there, then zeros (as `Bits`).
            let mut w = [0u8; 16];
            let avail = data.len().saturating_sub(byte).min(16);
            if avail > 0 {
                w[..avail].copy_from_slice(&data[byte..byte + avail]);
            }
            u128::from_le_bytes(w)
        }
    } >> (pos % 8);
    if !dynamic_header_start(w as u64) {
        return false;
    }
    let hclen = ((w >> 13) & 15) as usize + 4;
    let mut count = [0i32; 8];
    let mut lengths = w >> 17;
    for _ in 0..hclen {
        count[(lengths & 7) as usize] += 1;
        lengths >>= 3;
    }
    let mut left = 1i32;
    for &c in &count[1..] {
        left = 2 * left - c;
        if left < 0 {
            return false;
        }
    }
    left == 0 && count[1..].iter().sum::<i32>() >= 2
}

/// Whether a DEFLATE stream can start at byte `at` of `data`: its first
/// block header is valid (a stored block's length matches its complement,
/// a dynamic block's codes are complete; a fixed block always is). A cheap
/// test of a gzip header found by search, which random bytes pass about
/// once in 30 times where the gzip header alone passed.
pub(crate) fn may_start_stream(data: &[u8], at: usize) -> bool {
    let mut b = Bits::new(data, at.saturating_mul(8));
    b.take(1);
    header(&mut b).is_some()
}

/// Whether a dynamic-Huffman block can start at bit `pos` and decode
/// cleanly (the block finder's test): BFINAL 0, BTYPE 2, valid complete
/// codes, a body that decodes to its end-of-block code, and a plausible
/// header for the block after it.
///
/// With `aligned` (the position is known to follow a stored block, so it is
/// exact) any non-final block type is accepted.
pub(crate) fn plausible_start(data: &[u8], pos: usize, aligned: bool) -> bool {
    // BFINAL = 0, BTYPE = 2 (bits 1..2 = 0b10), then a valid code-length code.
    if aligned {
        if Bits::new(data, pos).peek(1) != 0 {
            return false;
        }
    } else if !quick_header_check(data, pos) {
        return false;
    }
    let mut b = Bits::new(data, pos);
    if !matches!(skim_block(&mut b, 4 << 20), Some(Step::Ended(false))) {
        return false;
    }
    let mut next = b.clone();
    next.take(1);
    header(&mut next).is_some()
}

/// A bit writer for the synthetic stream prefixes handed to libdeflate.
#[derive(Default)]
pub(crate) struct BitWriter {
    /// The bytes written so far; the last one may be partly filled (unused bits zero).
    pub(crate) bytes: Vec<u8>,
    bits: usize,
}

impl BitWriter {
    /// Appends the low `n` bits of `v`, least significant bit first (DEFLATE's
    /// order for everything but Huffman codes).
    pub(crate) fn put(&mut self, v: u32, n: u32) {
        for i in 0..n {
            if self.bits % 8 == 0 {
                self.bytes.push(0);
            }
            let bit = ((v >> i) & 1) as u8;
            let last = self.bytes.len() - 1;
            self.bytes[last] |= bit << (self.bits % 8);
            self.bits += 1;
        }
    }

    /// Writes a Huffman code (sent MSB first).
    pub(crate) fn code(&mut self, code: u32, len: u32) {
        for i in (0..len).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    /// How many bits have been written.
    pub(crate) fn bit_len(&self) -> usize {
        self.bits
    }

    /// Pads to a byte boundary with zeros.
    pub(crate) fn align(&mut self) {
        self.bits = self.bits.div_ceil(8) * 8;
    }

    /// Appends whole bytes at a byte boundary ([`align`](Self::align) first).
    pub(crate) fn put_bytes(&mut self, b: &[u8]) {
        debug_assert_eq!(self.bits % 8, 0);
        self.bytes.extend_from_slice(b);
        self.bits += 8 * b.len();
    }
}

/// A dynamic-Huffman block that outputs nothing and is 95 bits long (an
/// odd length, which fixed-Huffman blocks cannot have): a literal/length
/// code of two 1-bit codes (literal 0, end-of-block), a distance code of two
/// 1-bit codes, sent with a code-length code of two 1-bit codes (lengths 1
/// and 18), all 19 code-length code lengths present.
fn empty_dynamic_block(w: &mut BitWriter) {
    w.put(0, 1); // BFINAL
    w.put(2, 2); // BTYPE = dynamic
    w.put(0, 5); // HLIT = 257
    w.put(1, 5); // HDIST = 2
    w.put(15, 4); // HCLEN = 19
    for &sym in &CL_ORDER {
        w.put(u32::from(sym == 1 || sym == 18), 3);
    }
    // Canonical codes: length-symbol 1 is `0`, 18 is `1`.
    w.code(0, 1); // literal 0: length 1
    w.code(1, 1); // 138 zeros (literals 1..=138)
    w.put(138 - 11, 7);
    w.code(1, 1); // 117 zeros (literals 139..=255)
    w.put(117 - 11, 7);
    w.code(0, 1); // end-of-block (256): length 1
    w.code(0, 1); // distance 0: length 1
    w.code(0, 1); // distance 1: length 1
                  // Literal 0 has code `0`, end-of-block `1`.
    w.code(1, 1);
}

/// A prefix that primes libdeflate's history with `window` and ends `k`
/// bits into a byte (`k` = the bit offset where the real stream resumes),
/// without outputting anything after the window, so the history stays
/// exactly the window.
pub(crate) fn primer(window: &[u8], k: u32) -> BitWriter {
    let mut w = BitWriter::default();
    // A stored block holding the window: BFINAL 0, BTYPE 00, LEN, NLEN.
    w.put(0, 3);
    w.align();
    let len = window.len() as u16;
    w.put_bytes(&len.to_le_bytes());
    w.put_bytes(&(!len).to_le_bytes());
    w.put_bytes(window);
    // Empty fixed-Huffman blocks are 10 bits (2 mod 8), the empty dynamic
    // block 95 (7 mod 8): combine them to end k bits into a byte.
    let mut empties = k / 2;
    if k % 2 == 1 {
        empty_dynamic_block(&mut w);
        empties = ((k + 8 - 7) % 8) / 2;
    }
    for _ in 0..empties {
        w.put(0, 1);
        w.put(1, 2);
        w.code(0, 7);
    }
    debug_assert_eq!(w.bit_len() % 8, k as usize);
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header check as the bit reader reads it, field by field.
    fn header_check_by_fields(b: &mut Bits<'_>) -> bool {
        if b.take(3) != 0b100 {
            return false;
        }
        let hlit = b.take(5) as usize + 257;
        let hdist = b.take(5) as usize + 1;
        let hclen = b.take(4) as usize + 4;
        if hlit > 286 || hdist > 30 {
            return false;
        }
        let mut cl = [0u8; 19];
        for &i in &CL_ORDER[..hclen] {
            cl[i] = b.take(3) as u8;
        }
        kraft_ok(&cl) && cl.iter().filter(|&&l| l != 0).count() >= 2
    }

    #[test]
    fn the_one_load_header_check_agrees_with_the_bit_reader_at_every_bit() {
        // Noise, real DEFLATE data (where the check passes at block
        // starts), and the last bytes of each (read past their end as
        // zeros).
        let mut x = 7u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let text = b"\"replica_groups\": [[0, 1, 2, 3]], sg07/def.json ".repeat(5000);
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(6).unwrap());
        let mut z = vec![0u8; c.deflate_compress_bound(text.len())];
        let n = c.deflate_compress(&text, &mut z).unwrap();
        z.truncate(n);
        let mut passed = 0;
        for data in [&noise[..], &z[..]] {
            for pos in 0..data.len() * 8 {
                let fast = quick_header_check(data, pos);
                assert_eq!(
                    fast,
                    header_check_by_fields(&mut Bits::new(data, pos)),
                    "bit {pos}"
                );
                passed += usize::from(fast);
            }
        }
        assert!(
            passed > 0,
            "the check never passed: the test proves nothing"
        );
    }

    #[test]
    fn primer_ends_k_bits_into_a_byte_and_outputs_only_the_window() {
        let window: Vec<u8> = (0..WINDOW).map(|i| (i * 7 % 251) as u8).collect();
        for k in 0..8u32 {
            let mut w = primer(&window, k);
            assert_eq!(w.bit_len() % 8, k as usize);
            // End the stream: a final empty stored block.
            w.put(1, 3);
            w.align();
            w.put(0, 16);
            w.put(0xffff, 16);
            let mut out = vec![0u8; WINDOW + 16];
            let n = libdeflater::Decompressor::new()
                .deflate_decompress(&w.bytes, &mut out)
                .unwrap_or_else(|e| panic!("k={k}: {e:?}"));
            assert_eq!(&out[..n], &window[..], "k={k}");
        }
    }
}
