#![no_main]
//! See `neff::fuzzing::json_skim`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::fuzzing::json_skim(data));
