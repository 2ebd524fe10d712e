#![no_main]
//! See `neff::harness::whole_neff`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::harness::whole_neff(data));
