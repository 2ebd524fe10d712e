//! Where the time goes when indexing a gzip NEFF: prints the median of N
//! runs of each step. `cargo run --release --example anatomy -- FILE [N]`.

use std::time::Instant;

use neff::fuzzing::steps::FileBytes;
use neff::ReadMode;
use neff::{Header, Limits};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time<T>(n: usize, mut f: impl FnMut() -> T) -> f64 {
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let n: usize = args.get(2).map_or(5, |s| s.parse().unwrap());
    let file = FileBytes::open(path, ReadMode::Map).unwrap();
    let h = Header::from_file_bytes(&file).unwrap();
    let span = h.locate_payload(&file).unwrap();
    let gz = &file[span.start..span.start + span.len];
    let isize = u32::from_le_bytes(gz[gz.len() - 4..].try_into().unwrap()) as usize;
    println!("payload {} bytes, inflates to {isize}", gz.len());
    println!(
        "touch input pages      {:.5} s",
        time(n, || gz
            .iter()
            .step_by(4096)
            .map(|&b| b as u64)
            .sum::<u64>())
    );
    println!(
        "inflate into Vec (4K)  {:.5} s",
        time(n, || {
            let mut out = vec![0u8; isize];
            libdeflater::Decompressor::new()
                .gzip_decompress(gz, &mut out)
                .unwrap()
        })
    );
    println!("inflate, reused buffer {:.5} s", {
        let mut out = vec![0u8; isize];
        time(n, || {
            libdeflater::Decompressor::new()
                .gzip_decompress(gz, &mut out)
                .unwrap()
        })
    });
    println!(
        "payload::inflate (THP) {:.5} s",
        time(n, || neff::fuzzing::steps::inflate(gz, 4 << 30)
            .unwrap()
            .len())
    );
    let tar = neff::fuzzing::steps::inflate(gz, 4 << 30).unwrap();
    println!(
        "tar walk               {:.5} s",
        time(n, || neff::fuzzing::steps::index(&tar, &Limits::default())
            .unwrap()
            .entries
            .len())
    );
    println!(
        "crc32 of output        {:.5} s",
        time(n, || libdeflater::crc32(&tar))
    );
    let start = neff::fuzzing::steps::member_header(gz).unwrap();
    let data = &gz[start..gz.len() - 8];
    for threads in [2, 4] {
        let mut out = vec![0u8; isize];
        let t = Instant::now();
        let r = neff::fuzzing::steps::parallel::split_inflate(data, &mut out, threads, 256 << 10);
        let ok = r == Some(isize) && out[..] == tar[..];
        if let Some(i) = out.iter().zip(tar.iter()).position(|(a, b)| a != b) {
            let last = out
                .iter()
                .zip(tar.iter())
                .rposition(|(a, b)| a != b)
                .unwrap();
            let n = out.iter().zip(tar.iter()).filter(|(a, b)| a != b).count();
            println!("first mismatch at {i}, last at {last}, {n} bytes differ");
        }
        println!(
            "parallel inflate x{threads}  {:.5} s  result {r:?} matches {ok}",
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "fresh 4K pages touched {:.5} s",
        time(n, || {
            let mut v = vec![0u8; isize];
            for i in (0..isize).step_by(4096) {
                v[i] = 1;
            }
            v.len()
        })
    );
}
