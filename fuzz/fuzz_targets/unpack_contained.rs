#![no_main]
//! See `neff::fuzzing::unpack_contained`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let scratch = std::env::temp_dir().join("neff-fuzz-unpack");
    neff::fuzzing::unpack_contained(data, &scratch);
});
