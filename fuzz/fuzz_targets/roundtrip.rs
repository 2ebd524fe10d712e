#![no_main]
//! See `neff::harness::roundtrip`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::harness::roundtrip(data));
