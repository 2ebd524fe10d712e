#![no_main]
//! See `neff::fuzzing::whole_neff`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff::fuzzing::whole_neff(data));
