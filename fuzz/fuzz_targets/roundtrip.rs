#![no_main]
//! See `neff::fuzzing::roundtrip`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::fuzzing::roundtrip(data));
