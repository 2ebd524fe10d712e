#![no_main]
//! Arbitrary bytes as gzip, through every path of the engine: against
//! zlib-rs, one thread against four, the one-shot path against the stream,
//! and the stream's forced parallel rounds against its sequential read
//! (`neff_inflate::fuzzing`). Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run inflate`
//! from this directory's parent.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    neff_inflate::fuzzing::matches_zlib_rs(data);
    neff_inflate::fuzzing::parallel_matches_sequential(data);
});
