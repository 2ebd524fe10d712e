#![no_main]
//! See `neff::harness::tar_payload`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::harness::tar_payload(data));
