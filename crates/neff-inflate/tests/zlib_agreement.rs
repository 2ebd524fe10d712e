//! Streams that upstream libdeflate reads and zlib refuses (reserved
//! symbols, too many symbols in a header, the unused half of an incomplete
//! code): every path of the engine refuses them, as zlib-rs does and as
//! the runtime's reader (libarchive, on zlib) does. Each case is checked
//! alone and inside a large stream, where the split and the rounds
//! (libdeflate after a marker-decoded start) reach it. A build linking an
//! unpatched libdeflate fails here (vendor/libdeflate-sys/PATCH.md).
//! Feature `fuzzing` (the forced rounds).

use std::io::Read;

use neff_inflate::{inflate, one_thread, GzReader, GzStream};

/// An LSB-first bit writer (RFC 1951 3.1.1).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, v: u32, n: u32) {
        self.acc |= u64::from(v) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }
    /// A Huffman codeword: sent most significant bit first.
    fn code(&mut self, code: u32, len: u32) {
        for i in (0..len).rev() {
            self.put((code >> i) & 1, 1);
        }
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// The canonical codes of `lens` (RFC 1951 3.2.2): `codes[sym]`.
fn canonical(lens: &[u8]) -> Vec<u32> {
    let mut count = [0u32; 16];
    for &l in lens {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0;
    for l in 1..16 {
        code = (code + count[l - 1]) << 1;
        next[l] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            c
        })
        .collect()
}

/// What a block's body sends.
#[derive(Clone, Copy)]
enum Sym {
    /// A litlen symbol (literal, length or end of block), no extra bits.
    Lit(u16),
    /// A litlen symbol with its extra bits.
    Len(u16, u32, u32),
    /// An offset symbol with its extra bits.
    Dist(u16, u32, u32),
    /// Raw bits (a codeword outside the code, say).
    Raw(u32, u32),
}

fn body(w: &mut Bits, lit: &[u8], dist: &[u8], syms: &[Sym]) {
    let (lc, dc) = (canonical(lit), canonical(dist));
    for s in syms {
        match *s {
            Sym::Lit(s) => w.code(lc[s as usize], u32::from(lit[s as usize])),
            Sym::Len(s, v, n) => {
                w.code(lc[s as usize], u32::from(lit[s as usize]));
                w.put(v, n);
            }
            Sym::Dist(s, v, n) => {
                w.code(dc[s as usize], u32::from(dist[s as usize]));
                w.put(v, n);
            }
            Sym::Raw(v, n) => w.put(v, n),
        }
    }
}

/// The static code's litlen lengths (288 symbols) and offset lengths (32).
fn fixed_lens() -> (Vec<u8>, Vec<u8>) {
    let mut l = vec![8u8; 288];
    l[144..256].fill(9);
    l[256..280].fill(7);
    (l, vec![5; 32])
}

/// A static block sending `syms`.
fn fixed_block(w: &mut Bits, last: bool, syms: &[Sym]) {
    w.put(u32::from(last), 1);
    w.put(1, 2);
    let (l, d) = fixed_lens();
    body(w, &l, &d, syms);
}

/// A dynamic block with these code lengths (HLIT = `lit.len()`, HDIST =
/// `dist.len()`, whatever they are), sent through a precode of sixteen
/// 4-bit codewords for lengths 0 to 15.
fn dynamic_block(w: &mut Bits, last: bool, lit: &[u8], dist: &[u8], syms: &[Sym]) {
    w.put(u32::from(last), 1);
    w.put(2, 2);
    w.put(lit.len() as u32 - 257, 5);
    w.put(dist.len() as u32 - 1, 5);
    w.put(19 - 4, 4);
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let mut pre = [4u8; 19];
    pre[16..].fill(0);
    for i in ORDER {
        w.put(u32::from(pre[i]), 3);
    }
    let pc = canonical(&pre);
    for &l in lit.iter().chain(dist) {
        w.code(pc[l as usize], 4);
    }
    body(w, lit, dist, syms);
}

/// An empty stored block (aligns the stream to a byte).
fn stored_empty(w: &mut Bits, last: bool) {
    w.put(u32::from(last), 1);
    w.put(0, 2);
    if w.n > 0 {
        w.put(0, 8 - w.n);
    }
    w.put(0, 16);
    w.put(0xffff, 16);
}

/// `data` as non-final DEFLATE blocks ending on a byte (a sync flush).
fn deflate_open(data: &[u8]) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::new(6), false);
    let mut out = Vec::with_capacity(data.len() + 1024);
    c.compress_vec(data, &mut out, flate2::FlushCompress::Sync)
        .unwrap();
    while c.total_in() < data.len() as u64 || out.len() == out.capacity() {
        out.reserve(1 << 20);
        let done = c.total_in() as usize;
        c.compress_vec(&data[done..], &mut out, flate2::FlushCompress::Sync)
            .unwrap();
    }
    out
}

/// Bytes like a NEFF's payload: text-like runs and noise (about 5:4 at
/// level 6: enough compressed bytes for the split and the rounds).
fn corpus(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words: Vec<&[u8]> = vec![
        b"tensor ",
        b"weight ",
        b"sg00/",
        b"def.json ",
        b"kelf ",
        b"0.0 ",
    ];
    let mut out = Vec::with_capacity(n + 64);
    while out.len() < n {
        let r = next();
        if r % 3 != 0 {
            out.extend_from_slice(&r.to_le_bytes());
        } else {
            out.extend_from_slice(words[(r >> 8) as usize % words.len()]);
        }
    }
    out.truncate(n);
    out
}

/// One gzip member of `deflate`, whose trailer describes `claimed` (what a
/// lenient reader makes of it, so that only the bad symbol can refuse it).
fn gzip(deflate: &[u8], claimed: &[u8]) -> Vec<u8> {
    let mut g = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    g.extend_from_slice(deflate);
    g.extend_from_slice(&libdeflater::crc32(claimed).to_le_bytes());
    g.extend_from_slice(&(claimed.len() as u32).to_le_bytes());
    g
}

/// A case: a block writer, and what upstream libdeflate outputs for it
/// given the history before it.
/// Writes a case's block (the flag: whether it is the final one).
type BlockWriter = Box<dyn Fn(&mut Bits, bool)>;
/// What upstream libdeflate outputs for a case's block after a history.
type Lenient = Box<dyn Fn(&[u8]) -> Vec<u8>>;

struct Case {
    name: String,
    block: BlockWriter,
    lenient: Lenient,
    /// Needs 32 KiB of history (an offset of 24,577).
    far: bool,
}

/// A match of `len` at `dist`, appended to `out` (overlap allowed).
fn copy(out: &mut Vec<u8>, dist: usize, len: usize) {
    for _ in 0..len {
        out.push(out[out.len() - dist]);
    }
}

fn with(history: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut h = history.to_vec();
    let n = h.len();
    f(&mut h);
    h.split_off(n)
}

/// A litlen code of 286 symbols, complete: literals 9 bits, 256 and 257
/// 5 bits, 258 to 285 6 bits.
fn lit286() -> Vec<u8> {
    let mut l = vec![9u8; 286];
    l[256..258].fill(5);
    l[258..].fill(6);
    l
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for sym in [286, 287] {
        v.push(Case {
            name: format!("static block, length symbol {sym}"),
            block: Box::new(move |w, last| {
                let syms = [
                    Sym::Lit(b'a'.into()),
                    Sym::Lit(sym),
                    Sym::Dist(0, 0, 0),
                    Sym::Lit(256),
                ];
                fixed_block(w, last, &syms)
            }),
            lenient: Box::new(|h| {
                with(h, |o| {
                    o.push(b'a');
                    copy(o, 1, 258)
                })
            }),
            far: false,
        });
    }
    for (sym, extra) in [(30, 5), (31, 0)] {
        v.push(Case {
            name: format!("static block, offset symbol {sym}"),
            block: Box::new(move |w, last| {
                fixed_block(
                    w,
                    last,
                    &[Sym::Lit(257), Sym::Dist(sym, extra, 13), Sym::Lit(256)],
                )
            }),
            lenient: Box::new(move |h| with(h, |o| copy(o, 24577 + extra as usize, 3))),
            far: true,
        });
    }
    // An offset code of one 1-bit codeword, its unused codeword decoded;
    // an offset code of none, a codeword decoded.
    for (dist, bit, name) in [
        (1, 1, "one-codeword offset code, its unused codeword 1"),
        (0, 0, "empty offset code, an offset decoded"),
    ] {
        v.push(Case {
            name: name.to_string(),
            block: Box::new(move |w, last| {
                let syms = [
                    Sym::Lit(b'a'.into()),
                    Sym::Lit(257),
                    Sym::Raw(bit, 1),
                    Sym::Lit(256),
                ];
                dynamic_block(w, last, &lit286(), &[dist], &syms)
            }),
            lenient: Box::new(|h| {
                with(h, |o| {
                    o.push(b'a');
                    copy(o, 1, 3)
                })
            }),
            far: false,
        });
    }
    v.extend(more_cases());
    v
}

/// The dynamic-block cases, each its own code.
fn more_cases() -> Vec<Case> {
    let case = |name: &str, block: fn(&mut Bits, bool), lenient: fn(&[u8]) -> Vec<u8>| Case {
        name: name.to_string(),
        block: Box::new(block),
        lenient: Box::new(lenient),
        far: false,
    };
    vec![
        case(
            "dynamic header, 288 litlen symbols",
            |w, last| {
                let (l, _) = fixed_lens();
                dynamic_block(
                    w,
                    last,
                    &l,
                    &[1, 1],
                    &[Sym::Lit(b'a'.into()), Sym::Lit(b'b'.into()), Sym::Lit(256)],
                )
            },
            |h| with(h, |o| o.extend_from_slice(b"ab")),
        ),
        case(
            "dynamic header, 287 litlen symbols",
            |w, last| {
                let (mut l, _) = fixed_lens();
                l.truncate(287);
                l[286] = 7;
                dynamic_block(
                    w,
                    last,
                    &l,
                    &[1, 1],
                    &[Sym::Lit(b'a'.into()), Sym::Lit(256)],
                )
            },
            |h| with(h, |o| o.push(b'a')),
        ),
        case(
            "dynamic header, 31 offset symbols",
            |w, last| {
                let mut d = vec![5u8; 31];
                d[0] = 4;
                dynamic_block(
                    w,
                    last,
                    &lit286(),
                    &d,
                    &[
                        Sym::Lit(b'a'.into()),
                        Sym::Lit(257),
                        Sym::Dist(0, 0, 0),
                        Sym::Lit(256),
                    ],
                )
            },
            |h| {
                with(h, |o| {
                    o.push(b'a');
                    copy(o, 1, 3)
                })
            },
        ),
        case(
            "dynamic header, 32 offset symbols",
            |w, last| {
                dynamic_block(
                    w,
                    last,
                    &lit286(),
                    &[5; 32],
                    &[Sym::Lit(b'z'.into()), Sym::Lit(256)],
                )
            },
            |h| with(h, |o| o.push(b'z')),
        ),
        case(
            "dynamic block without an end-of-block code",
            |w, last| {
                let mut l = lit286();
                l[256] = 0;
                l[257] = 4; // keeps the code complete
                dynamic_block(
                    w,
                    last,
                    &l,
                    &[1, 1],
                    &[Sym::Lit(b'a'.into()), Sym::Lit(b'b'.into())],
                )
            },
            |h| with(h, |o| o.extend_from_slice(b"ab")),
        ),
        case(
            "one-codeword litlen code, its unused codeword 1",
            |w, last| {
                let mut l = vec![0u8; 257];
                l[256] = 1;
                dynamic_block(w, last, &l, &[0], &[Sym::Raw(1, 1)])
            },
            |_| Vec::new(),
        ),
    ]
}

/// Whether zlib-rs (through flate2) reads `gz` as one member.
fn zlib_reads(gz: &[u8]) -> bool {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .is_ok()
}

/// Every path of the engine on `gz`: the name of each that read it.
fn paths_that_read(gz: &[u8]) -> Vec<String> {
    let cap = 1 << 30;
    let mut read = Vec::new();
    if inflate(gz, cap, one_thread).is_ok() {
        read.push("one-shot".to_string());
    }
    for n in [2, 4, 8] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        if pool.install(|| inflate(gz, cap, neff_inflate::pool_threads).is_ok()) {
            read.push(format!("split on {n}"));
        }
        if pool
            .install(|| {
                GzStream::new_parallel(gz, cap, neff_inflate::pool_threads)
                    .map(|mut s| s.read_all().0.is_ok())
            })
            .unwrap_or(false)
        {
            read.push(format!("rounds on {n}"));
        }
    }
    for seg in [1 << 10, 64 << 10] {
        if GzStream::parallel_with(gz, cap, seg, 1 << 20)
            .map(|mut s| s.read_all().0.is_ok())
            .unwrap_or(false)
        {
            read.push(format!("forced rounds of {seg}"));
        }
    }
    if GzStream::new(gz, cap)
        .map(|mut s| s.read_all().0.is_ok())
        .unwrap_or(false)
    {
        read.push("stream".to_string());
    }
    let mut out = Vec::new();
    if GzReader::new(gz, cap).read_to_end(&mut out).is_ok() {
        read.push("pieces".to_string());
    }
    read
}

/// The case's block alone as a whole stream, and deep inside a large one
/// (after 20 MiB and before 4 MiB of ordinary blocks), with trailers
/// describing what upstream libdeflate makes of them.
fn streams(
    case: &Case,
    before: &[u8],
    after: &[u8],
    open_before: &[u8],
    open_after: &[u8],
) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    if !case.far {
        let mut w = Bits::default();
        (case.block)(&mut w, true);
        v.push(("alone".to_string(), gzip(&w.finish(), &(case.lenient)(&[]))));
    }
    let mut w = Bits::default();
    for &b in open_before {
        w.put(u32::from(b), 8);
    }
    (case.block)(&mut w, false);
    stored_empty(&mut w, false);
    for &b in open_after {
        w.put(u32::from(b), 8);
    }
    stored_empty(&mut w, true);
    let mut claimed = before.to_vec();
    claimed.extend((case.lenient)(before));
    claimed.extend_from_slice(after);
    v.push(("inside 24 MiB".to_string(), gzip(&w.finish(), &claimed)));
    v
}

#[test]
fn what_zlib_refuses_every_path_refuses() {
    let before = corpus(20 << 20, 7);
    let after = corpus(4 << 20, 11);
    let (ob, oa) = (deflate_open(&before), deflate_open(&after));
    assert!(
        ob.len() + oa.len() > neff_inflate::PARALLEL_FROM,
        "too small to split: {}",
        ob.len() + oa.len()
    );
    let mut failures = Vec::new();
    for case in cases() {
        for (place, gz) in streams(&case, &before, &after, &ob, &oa) {
            // The oracle first: a case zlib reads would test nothing.
            assert!(
                !zlib_reads(&gz),
                "{} ({place}): zlib-rs reads it",
                case.name
            );
            let read = paths_that_read(&gz);
            if !read.is_empty() {
                failures.push(format!(
                    "{} ({place}): read by {}",
                    case.name,
                    read.join(", ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The cases' streams are built right: with the bad symbol replaced by a
/// valid one (a length 285, a complete code), every path reads them, and
/// as zlib-rs does. (So the test above fails for the symbol alone.)
#[test]
fn the_same_streams_with_valid_symbols_are_read_alike() {
    let before = corpus(20 << 20, 7);
    let (ob, oa) = (deflate_open(&before), deflate_open(b""));
    // A static block with length symbol 285, a far offset (symbol 29) and
    // extra bits on both.
    let mut w = Bits::default();
    for &b in &ob {
        w.put(u32::from(b), 8);
    }
    fixed_block(
        &mut w,
        false,
        &[
            Sym::Lit(b'a'.into()),
            Sym::Lit(285),
            Sym::Dist(0, 0, 0),
            Sym::Lit(257),
            Sym::Dist(29, 5, 13),
            Sym::Len(265, 1, 1),
            Sym::Dist(4, 1, 1),
            Sym::Lit(256),
        ],
    );
    // A dynamic block of 286 and 30 symbols.
    dynamic_block(
        &mut w,
        false,
        &lit286(),
        &[5u8; 30]
            .iter()
            .enumerate()
            .map(|(i, &l)| if i < 2 { 4 } else { l })
            .collect::<Vec<_>>(),
        &[Sym::Lit(b'q'.into()), Sym::Lit(256)],
    );
    stored_empty(&mut w, false);
    for &b in &oa {
        w.put(u32::from(b), 8);
    }
    stored_empty(&mut w, true);
    let mut want = before.clone();
    want.push(b'a');
    copy(&mut want, 1, 258);
    copy(&mut want, 24577 + 5, 3);
    copy(&mut want, 6, 12);
    want.push(b'q');
    let gz = gzip(&w.finish(), &want);
    let mut theirs = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut theirs)
        .unwrap();
    assert!(theirs == want, "zlib-rs read other bytes");
    let read = paths_that_read(&gz);
    assert_eq!(read.len(), 11, "only {read:?} read it");
    let one = inflate(&gz, 1 << 30, one_thread).unwrap();
    assert!(one[..] == want[..]);
}
