#![no_main]
//! See `neff_oracles::vs_libarchive`: neff refuses or lists what the system libarchive lists.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_oracles::vs_libarchive(data));
