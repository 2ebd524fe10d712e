#![no_main]
//! See `neff::harness::json_members`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::harness::json_members(data));
