//! The engine's paths side by side with the libraries it is built from,
//! on generated gzip of three shapes (text and noise mixed at zlib level 1,
//! float-like words at level 6, and one member of stored blocks), each
//! 48 MiB inflated (over `PARALLEL_FROM` compressed where the shape allows):
//!
//! - `libdeflate` / `zlib-rs`: one pass of each library alone, the floor
//!   one core reaches;
//! - `one-shot/N`: [`neff_inflate::inflate`] on N threads (1: libdeflate
//!   into a huge-page buffer; 2+: the marker-decoding split);
//! - `stream/N`: [`neff_inflate::GzStream`] through a 256 KiB window,
//!   sequential (1) and in parallel rounds (2);
//! - `pieces/1`: [`neff_inflate::GzReader`], the input handed over 64 KiB
//!   at a time.
//!
//! `cargo bench -p neff-inflate` (on a quiet machine; PERF.md, gzip-inflaters,
//! quotes its libdeflate medians).

use std::io::Write;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const SIZE: usize = 48 << 20;
/// The output cap: the address space an input the one-shot path cannot
/// take whole (several members, or noise in many stored blocks) reserves.
const CAP: u64 = 1 << 30;

fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Lines of text between runs of noise: a tar of JSON and weights.
fn mixed() -> Vec<u8> {
    let mut next = xorshift(1);
    let mut v = Vec::with_capacity(SIZE);
    while v.len() < SIZE {
        for i in 0..200 {
            writeln!(v, "{{\"name\": \"sg00/tensor_{i}\", \"shape\": [1, {i}]}}").unwrap();
        }
        v.extend((0..64 << 10).map(|_| next() as u8));
    }
    v.truncate(SIZE);
    v
}

/// float32 words of a slowly varying signal: weights.
fn floats() -> Vec<u8> {
    let mut next = xorshift(2);
    let mut v = Vec::with_capacity(SIZE);
    let mut x = 0f32;
    while v.len() < SIZE {
        x += ((next() % 1000) as f32 - 500.0) / 1e5;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

/// Noise, which every encoder keeps in stored blocks.
fn noise() -> Vec<u8> {
    let mut next = xorshift(3);
    (0..SIZE).map(|_| next() as u8).collect()
}

/// A source that hands out its bytes 64 KiB at a time.
struct Chunked<'a>(&'a [u8]);

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.0.len()).min(64 << 10);
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bench(c: &mut Criterion) {
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let (one, two) = (pool(1), pool(2));
    for (name, data, level) in [
        ("mixed-zlib1", mixed(), 1),
        ("float32-zlib6", floats(), 6),
        ("stored", noise(), 6),
    ] {
        let gz = gzip(&data, level);
        let mut g = c.benchmark_group(name);
        g.sample_size(10)
            .throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function("libdeflate", |b| {
            let mut out = vec![0u8; data.len()];
            let mut d = libdeflater::Decompressor::new();
            b.iter(|| d.gzip_decompress(&gz, &mut out).unwrap())
        });
        g.bench_function("zlib-rs", |b| {
            let mut out = vec![0u8; data.len()];
            b.iter(|| {
                let mut z = flate2::Decompress::new(false);
                let start = neff_inflate::gzip::member_header(&gz).unwrap();
                z.decompress(&gz[start..], &mut out, flate2::FlushDecompress::Finish)
                    .unwrap();
                assert_eq!(z.total_out() as usize, data.len());
            })
        });
        g.bench_function("pieces/1", |b| {
            // The input as a network body gives it: 64 KiB at a time.
            let mut window = vec![0u8; 256 << 10];
            b.iter(|| {
                let mut r = neff_inflate::GzReader::new(Chunked(&gz[..]), CAP);
                let mut n = 0;
                loop {
                    match r.fill(&mut window).unwrap() {
                        0 => break,
                        k => n += k,
                    }
                }
                assert_eq!(n, data.len());
            })
        });
        for (n, p) in [(1, &one), (2, &two)] {
            g.bench_function(format!("one-shot/{n}"), |b| {
                b.iter(|| {
                    p.install(|| {
                        let out =
                            neff_inflate::inflate(&gz, CAP, neff_inflate::pool_threads).unwrap();
                        assert_eq!(out.len(), data.len());
                    })
                })
            });
            g.bench_function(format!("stream/{n}"), |b| {
                let mut window = vec![0u8; 256 << 10];
                b.iter(|| {
                    p.install(|| {
                        let mut s = neff_inflate::GzStream::new_parallel(
                            &gz,
                            CAP,
                            neff_inflate::pool_threads,
                        )
                        .unwrap();
                        assert_eq!(s.finish(&mut window).unwrap(), data.len() as u64);
                    })
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
