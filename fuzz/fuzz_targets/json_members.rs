#![no_main]
//! See `neff::fuzzing::json_members`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::fuzzing::json_members(data));
