//! The floor of a zoo scan: read every NEFF and inflate its payload once with
//! libdeflate into a reused buffer, nothing else, on `--jobs` threads.
//! `cargo run --release --example zoo_floor -- DIR [JOBS]`.

use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let jobs: usize = args.get(2).map_or(2, |s| s.parse().unwrap());
    let (paths, _) = neff::scan::list(&[std::path::PathBuf::from(&args[1])], None);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .unwrap();
    let t = std::time::Instant::now();
    let total: usize = pool.install(|| {
        paths
            .par_iter()
            .map_init(
                || (Vec::new(), Vec::new(), libdeflater::Decompressor::new()),
                |(file, out, d), p| {
                    use std::io::Read;
                    file.clear();
                    std::fs::File::open(p).unwrap().read_to_end(file).unwrap();
                    let gz = &file[1024..];
                    let isize = u32::from_le_bytes(gz[gz.len() - 4..].try_into().unwrap()) as usize;
                    out.resize(isize, 0);
                    d.gzip_decompress(gz, out).unwrap()
                },
            )
            .sum()
    });
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} files, {total} bytes inflated, {s:.2} s, {:.0} NEFFs/s, jobs {jobs}",
        paths.len(),
        paths.len() as f64 / s
    );
}
