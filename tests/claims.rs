//! Nothing on a file's word: memory grows with the bytes a payload really
//! inflates to, never with what its gzip trailer claims. (One test in its
//! own binary: it reads the peak RSS of its children.)

#[path = "it/common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use neff::pack::{pack, PackEntry, PackOptions};

/// A gzip NEFF of about `mb` MiB of incompressible data whose trailer's
/// ISIZE is replaced by `isize`.
fn lying_trailer(mb: usize, isize: u32) -> Vec<u8> {
    let noise = common::noise(mb << 20, 0x9e37_79b9_7f4a_7c15);
    let entries = vec![
        PackEntry::file("kelf-0.json", &br#"{"target":"trn1"}"#[..], 0),
        PackEntry::file("sg00/noise.bin", noise, 0),
    ];
    let opts = PackOptions::default().mtime(Some(0));
    let mut bytes = pack(&entries, &opts).unwrap();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&isize.to_le_bytes());
    bytes
}

fn peak_rss_of_children_kib() -> i64 {
    // SAFETY: getrusage writes into the struct we pass; a zeroed rusage is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(r, 0);
    ru.ru_maxrss
}

#[test]
fn a_trailer_that_claims_4_gib_costs_what_the_data_inflates_to() {
    let tmp = tempfile::tempdir().unwrap();
    for (mb, name) in [(4, "small.neff"), (12, "large.neff")] {
        let p = tmp.path().join(name);
        std::fs::write(&p, lying_trailer(mb, u32::MAX)).unwrap();
        for cmd in [
            &["ls"][..],
            &["get", "--max-inflated", "4G"][..],
            &["info"][..],
        ] {
            let mut args: Vec<&str> = cmd.to_vec();
            args.insert(1.min(args.len()), p.to_str().unwrap());
            if args[0] == "get" {
                args = vec!["get", p.to_str().unwrap(), "arch"];
            }
            let t = Instant::now();
            let o = Command::new(env!("CARGO_BIN_EXE_neff"))
                .args(&args)
                .output()
                .unwrap();
            assert_eq!(
                o.status.code(),
                Some(1),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{args:?} took {:?}",
                t.elapsed()
            );
        }
    }
    let peak = peak_rss_of_children_kib();
    assert!(peak < 256 << 10, "peak RSS {peak} KiB for a claim of 4 GiB");
}
