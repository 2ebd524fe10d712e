//! Criterion benchmarks of the reader's steps, on NEFFs generated here (so
//! they run without the bench corpus):
//!
//! - `index`: open + index a raw NEFF (3,000 members) and a gzip one;
//! - `inflate`: one gzip payload inflated by libdeflate into a fresh
//!   huge-page buffer (what `neff` does), a fresh 4 KiB-page vector, a
//!   reused vector (the floor), on all cores, and streamed through a 1 MiB
//!   buffer with zlib-rs (the alternative the design weighed);
//! - `json`: def.json access on an open NEFF (100 KB and 20 MB), the 20 MB
//!   parse with simd-json next to serde_json, the skim of its CC keys, and
//!   a copy of the member against a copy-on-write map of it.
//!
//! `cargo bench --bench read`; `NEFF_BENCH_CORPUS=/tmp/neff-bench` adds the
//! bench corpus's big files (`large/big_pkg1.neff`, `large/big_pkg2.neff`) to
//! `index` and `inflate`. `python3 bench/make_corpus.py` writes that corpus,
//! by default to `/tmp/neff-bench`.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use neff::pack::{pack, PackEntry, PackOptions};
use neff::{accessors, Neff, Options, ReadMode};

/// Deterministic bytes: half text-like, half noise (compresses ~2:1).
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 2 == 0 {
            v.extend_from_slice(b"model.layers.17.self_attn.q_proj.weight ");
        } else {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v.truncate(n);
    v
}

/// A def.json of `vars` variables (about 100 bytes each), with CC keys.
fn def_json(vars: usize) -> Vec<u8> {
    let mut s = String::from("{\"name\":\"definition\",\"version\":\"0.6\",\"var\":{");
    for i in 0..vars {
        if i > 0 {
            s.push(',');
        }
        let ty = ["input", "output", "tmp-buf", "virtual", "file"][i % 5];
        s.push_str(&format!(
            "\"tensor_{i}\":{{\"var_id\":{i},\"type\":\"{ty}\",\"size\":{},\"dtype\":\"bfloat16\",\"shape\":[{},128]}}",
            (i % 977) * 256,
            i % 64 + 1
        ));
    }
    s.push_str("},\"replica_groups\":[[[0,1,2,3,4,5,6,7]]],\"#rank_world_size\":8}");
    s.into_bytes()
}

struct Inputs {
    _dir: tempfile::TempDir,
    raw: PathBuf,
    gz: PathBuf,
    def_small: Vec<u8>,
    def_big: Vec<u8>,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let def_small = def_json(1_000);
    let def_big = def_json(200_000);
    let mut entries = vec![
        PackEntry::file(
            "kelf-0.json",
            &b"{\"graphs\":[{},{}],\"target\":\"cayman\"}"[..],
            0,
        ),
        PackEntry::file("sg00/def.json", def_big.clone(), 0),
        PackEntry::file("sg01/def.json", def_small.clone(), 0),
    ];
    for i in 0..3000 {
        let name = format!("sg0{}/weights/model.layers.{}.weight.bin", i % 2, i);
        entries.push(PackEntry::file(&name, bytes(16 << 10, i as u64), 0));
    }
    let write = |name: &str, no_gzip: bool| {
        let p = dir.path().join(name);
        let opts = PackOptions::default().no_gzip(no_gzip).mtime(Some(0));
        std::fs::write(&p, pack(&entries, &opts).unwrap()).unwrap();
        p
    };
    let raw = write("raw.neff", true);
    let gz = write("gz.neff", false);
    Inputs {
        _dir: dir,
        raw,
        gz,
        def_small,
        def_big,
    }
}

fn corpus(name: &str) -> Option<PathBuf> {
    let p = Path::new(&std::env::var("NEFF_BENCH_CORPUS").ok()?)
        .join("large")
        .join(name);
    p.exists().then_some(p)
}

fn index(c: &mut Criterion, inp: &Inputs) {
    let mut g = c.benchmark_group("index");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    let mut files = vec![("raw_3000", inp.raw.clone()), ("gzip_3000", inp.gz.clone())];
    files.extend(corpus("big_pkg1.neff").map(|p| ("big_pkg1", p)));
    files.extend(corpus("big_pkg2.neff").map(|p| ("big_pkg2", p)));
    for (name, path) in files {
        g.bench_function(name, |b| {
            b.iter(|| Neff::open(black_box(&path)).unwrap().entries().len())
        });
    }
    // The header walk alone, over tar bytes already in memory.
    let mut whole = Options::default();
    whole.limits.inflate_budget = u64::MAX;
    let tar = Neff::open_with(&inp.gz, &whole)
        .unwrap()
        .tar()
        .expect("inflated whole")
        .to_vec();
    g.bench_function("walk_only/gzip_3000", |b| {
        b.iter(|| {
            neff::fuzzing::steps::index(black_box(&tar), &neff::Limits::default())
                .unwrap()
                .entries
                .len()
        })
    });
    g.finish();
}

fn payload_of(path: &Path) -> Vec<u8> {
    let mut f = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut f)
        .unwrap();
    f.split_off(1024)
}

fn inflate(c: &mut Criterion, inp: &Inputs) {
    let mut g = c.benchmark_group("inflate");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let mut files = vec![("gzip_3000", inp.gz.clone())];
    files.extend(corpus("big_pkg2.neff").map(|p| ("big_pkg2", p)));
    for (name, path) in files {
        let gz = payload_of(&path);
        let isize = u32::from_le_bytes(gz[gz.len() - 4..].try_into().unwrap()) as usize;
        g.throughput(Throughput::Bytes(isize as u64));
        g.bench_function(BenchmarkId::new("libdeflate_thp_buffer", name), |b| {
            b.iter(|| {
                neff::fuzzing::steps::inflate(black_box(&gz), 4 << 30)
                    .unwrap()
                    .len()
            })
        });
        g.bench_function(BenchmarkId::new("libdeflate_fresh_vec", name), |b| {
            b.iter(|| {
                let mut out = vec![0u8; isize];
                libdeflater::Decompressor::new()
                    .gzip_decompress(&gz, &mut out)
                    .unwrap()
            })
        });
        let mut reused = vec![0u8; isize];
        g.bench_function(BenchmarkId::new("libdeflate_reused_vec", name), |b| {
            b.iter(|| {
                libdeflater::Decompressor::new()
                    .gzip_decompress(&gz, &mut reused)
                    .unwrap()
            })
        });
        let start = neff::fuzzing::steps::member_header(&gz).unwrap();
        let data = &gz[start..gz.len() - 8];
        let threads = rayon::current_num_threads();
        g.bench_function(BenchmarkId::new("parallel_reused_vec", name), |b| {
            b.iter(|| neff::fuzzing::steps::parallel::inflate(data, &mut reused, threads))
        });
        g.bench_function(BenchmarkId::new("zlib_rs_stream_1mib", name), |b| {
            let mut buf = vec![0u8; 1 << 20];
            b.iter(|| {
                let mut d = flate2::read::MultiGzDecoder::new(&gz[..]);
                let mut n = 0;
                loop {
                    let k = d.read(&mut buf).unwrap();
                    if k == 0 {
                        break n;
                    }
                    n += k;
                }
            })
        });
    }
    g.finish();
}

fn json(c: &mut Criterion, inp: &Inputs) {
    let mut g = c.benchmark_group("json");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    let opts = Options::default().read_mode(ReadMode::Map);
    let n = Neff::open_with(&inp.raw, &opts).unwrap();
    for (name, member) in [("def_100k", "sg01/def.json"), ("def_20m", "sg00/def.json")] {
        let e = n.find_pattern(member).unwrap();
        g.throughput(Throughput::Bytes(e.size));
        g.bench_function(BenchmarkId::new("simd_json_copy", name), |b| {
            b.iter(|| {
                n.parse_json(black_box(e))
                    .unwrap()
                    .root()
                    .object()
                    .is_some()
            })
        });
    }
    let big = &inp.def_big;
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function(BenchmarkId::new("serde_json_value", "def_20m"), |b| {
        b.iter(|| {
            serde_json::from_slice::<serde_json::Value>(black_box(big))
                .unwrap()
                .is_object()
        })
    });
    let keys = [
        "replica_groups",
        "src_target_pairs",
        "#rank_world_size",
        "CCInfo",
    ];
    g.bench_function(BenchmarkId::new("serde_json_ignored_any", "def_20m"), |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(big)).is_ok())
    });
    for (name, two) in [
        ("skim_cc_keys_1_thread", false),
        ("skim_cc_keys_2_threads", true),
    ] {
        g.bench_function(BenchmarkId::new(name, "def_20m"), |b| {
            b.iter(|| {
                neff::fuzzing::steps::top_level_keys(black_box(big), &keys, 512, two).is_some()
            })
        });
    }
    for (name, early_cc) in [
        ("cc_world_size_fresh_open", false),
        ("cc_world_size_fresh_open_early", true),
    ] {
        let opts = Options::default().early_cc(early_cc);
        g.bench_function(BenchmarkId::new(name, "def_20m"), |b| {
            b.iter(|| {
                let n = Neff::open_with(&inp.raw, &opts).unwrap();
                accessors::cc_world_size(&n).unwrap()
            })
        });
    }
    g.bench_function(BenchmarkId::new("cc_world_size_cached", "def_20m"), |b| {
        b.iter(|| accessors::cc_world_size(black_box(&n)).unwrap())
    });
    black_box(&inp.def_small);
    g.finish();
}

fn all(c: &mut Criterion) {
    let inp = inputs();
    index(c, &inp);
    inflate(c, &inp);
    json(c, &inp);
}

criterion_group!(benches, all);
criterion_main!(benches);
