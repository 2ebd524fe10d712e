//! JSON parse speed on one file: simd-json tape vs serde_json (full Value,
//! and skipping everything with IgnoredAny) vs the crate's JSON skim (`neff::fuzzing::steps::top_level_keys`) on one
//! and two threads. `--example jsonspeed -- FILE`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let data = std::fs::read(&path).unwrap();
    let mb = data.len() as f64 / 1e6;
    let mut buffers = simd_json::Buffers::new(data.len());
    let keys = [
        "replica_groups",
        "src_target_pairs",
        "#rank_world_size",
        "CCInfo",
    ];
    for round in 0..5 {
        let t = Instant::now();
        let mut copy = data.clone();
        let tape = simd_json::to_tape_with_buffers(&mut copy, &mut buffers).unwrap();
        let n = tape.0.len();
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let _: serde::de::IgnoredAny = serde_json::from_slice(&data).unwrap();
        let b = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let one = neff::fuzzing::steps::top_level_keys(&data, &keys, 512, false).unwrap();
        let c = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let two = neff::fuzzing::steps::top_level_keys(&data, &keys, 512, true).unwrap();
        let d = t.elapsed().as_secs_f64();
        assert_eq!(one, two);
        println!(
            "round {round}: simd-json tape {:.0} MB/s ({n} nodes), serde IgnoredAny {:.0} MB/s, skim 1 thread {:.0} MB/s, 2 threads {:.0} MB/s",
            mb / a,
            mb / b,
            mb / c,
            mb / d
        );
    }
}
