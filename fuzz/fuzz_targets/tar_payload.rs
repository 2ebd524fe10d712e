#![no_main]
//! See `neff::fuzzing::tar_payload`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::fuzzing::tar_payload(data));
