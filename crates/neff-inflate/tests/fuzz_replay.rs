//! Replays the fuzz corpus (`fuzz/corpus/inflate`) through the fuzz
//! target's checks, so that an input once found stays fixed where
//! cargo-fuzz (nightly features) does not run. Feature `fuzzing`.

#[test]
fn the_inflate_corpus_reads_alike_on_every_path() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/inflate");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 20, "{} inputs", inputs.len());
    for p in inputs {
        let data = std::fs::read(&p).unwrap();
        let r = std::panic::catch_unwind(|| {
            neff_inflate::fuzzing::matches_zlib_rs(&data);
            neff_inflate::fuzzing::parallel_matches_sequential(&data);
        });
        assert!(r.is_ok(), "{} broke an invariant", p.display());
    }
}
