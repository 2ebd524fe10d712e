//! Where the time goes in `get FILE cc-world-size`, phase by phase, in one
//! process (`cargo run --release --example ccphases -- FILE [early]`).
use std::time::Instant;

fn main() {
    let t0 = Instant::now();
    let path = std::env::args().nth(1).unwrap();
    let early = std::env::args().nth(2).is_some_and(|a| a == "early");
    let opts = neff::Options::default().early_cc(early);
    let n = neff::Neff::open_with(&path, &opts).unwrap();
    let t1 = Instant::now();
    let w = neff::accessors::cc_world_size(&n).unwrap();
    let t2 = Instant::now();
    drop(n);
    let t3 = Instant::now();
    eprintln!(
        "open+index {:.2} ms, cc-world-size {:.2} ms, drop {:.2} ms -> {w}",
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        (t3 - t2).as_secs_f64() * 1e3
    );
}
