#![no_main]
//! See `neff::harness::json_skim`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::harness::json_skim(data));
