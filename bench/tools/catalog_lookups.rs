//! N lookups by path through `neff::catalog::Catalog`, for measuring their CPU
//! cost apart from the wait for a CPU on a busy machine (PERF.md,
//! catalog-lookup):
//!
//! ```sh
//! perf stat -e task-clock target/release/examples/catalog_lookups zoo.db 0
//! perf stat -e task-clock target/release/examples/catalog_lookups zoo.db 500000
//! ```
//!
//! (CPU time per lookup = the difference / 500,000.) Prints the wall time
//! per lookup too.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let db = args.next().ok_or("usage: catalog_lookups DB N")?;
    let n: usize = args.next().ok_or("usage: catalog_lookups DB N")?.parse()?;
    let cat = neff::catalog::Catalog::open(&db)?;
    let paths: Vec<String> = cat
        .records(&neff::catalog::Filter::default())?
        .into_iter()
        .map(|r| r.path)
        .collect();
    if paths.is_empty() {
        return Err("empty catalogue".into());
    }
    let t = Instant::now();
    let mut bytes = 0;
    for i in 0..n {
        let p = &paths[(i * 7919) % paths.len()];
        bytes += cat.by_path(p)?.ok_or("vanished")?.path.len();
    }
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{n} lookups over {} paths: {:.2} µs wall each ({bytes} path bytes)",
        paths.len(),
        wall / n.max(1) as f64 * 1e6
    );
    Ok(())
}
