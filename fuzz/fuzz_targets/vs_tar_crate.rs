#![no_main]
//! See `neff_oracles::vs_tar_crate`: neff refuses or lists what the tar crate lists.
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_oracles::vs_tar_crate(data));
