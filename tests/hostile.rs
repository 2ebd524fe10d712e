//! Every malformed file in `tests/hostile/` is refused with exit 1 and one
//! line naming the file and the reason, by every read command; nothing panics.

mod common;

use common::*;
use neff::{Accessor, Limits, Neff, Options};

/// Files whose only defect is the header hash: read commands accept them.
fn hash_only(name: &str) -> bool {
    name.contains("mismatch")
}

/// Stand-in bombs: refused under a 1 MiB inflate cap.
fn bomb(name: &str) -> bool {
    name.contains("bomb")
}

#[test]
fn every_hostile_file_is_refused_in_one_line() {
    for f in neffs("tests/hostile") {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        let fs = f.to_str().unwrap();
        if hash_only(&name) {
            neff_ok(&["ls", fs]);
            let o = neff(&["verify", fs]);
            assert_eq!(o.status.code(), Some(1), "{name}: verify should fail");
            let out = String::from_utf8(o.stdout).unwrap();
            assert!(
                out.starts_with(&format!("FAIL {fs}: ")) && out.contains("mismatch"),
                "{out}"
            );
            continue;
        }
        let cap: &[&str] = if bomb(&name) {
            &["--max-inflated", "1M"]
        } else {
            &[]
        };
        for cmd in [
            &["ls", fs][..],
            &["info", fs],
            &["cat", fs, "."],
            &["get", fs, "def"],
        ] {
            let mut args = cmd.to_vec();
            args.extend_from_slice(cap);
            let reason = assert_refused(&args, &f);
            assert!(!reason.is_empty(), "{name}: empty reason");
        }
    }
}

#[test]
fn reasons_name_the_defect() {
    let cases = [
        ("empty.neff", "shorter than the 1024-byte NEFF header"),
        ("short-1023.neff", "shorter than the 1024-byte NEFF header"),
        ("header-size-beyond-file-gz.neff", "header_size"),
        ("data-size-beyond-file-raw.neff", "data_size"),
        ("pkg-version-7-gz.neff", "package version 7"),
        ("gzip-truncated-gz.neff", "gzip"),
        ("gzip-bad-crc-gz.neff", "gzip"),
        ("tar-bad-checksum-raw.neff", "checksum"),
        ("tar-size-nonoctal-raw.neff", "non-octal"),
        ("tar-truncated-raw.neff", "runs past the end"),
        ("pax-len-zero-raw.neff", "length is 0"),
        ("pax-len-too-big-raw.neff", "runs past the extended header"),
        ("pax-no-equals-raw.neff", "no '='"),
        ("gnu-longname-last-raw.neff", "not followed by an entry"),
        ("base256-size-negative-raw.neff", "negative base-256"),
        ("base256-size-overflow-raw.neff", "overflows"),
        ("member-size-past-end-raw.neff", "runs past the end"),
    ];
    for (file, want) in cases {
        let f = root().join("tests/hostile").join(file);
        let reason = assert_refused(&["ls", f.to_str().unwrap()], &f);
        assert!(reason.contains(want), "{file}: {reason:?} lacks {want:?}");
    }
}

#[test]
fn bombs_are_refused_at_the_cap_and_read_without_it() {
    for file in ["gzip-bomb-zeros-gz.neff", "gzip-bomb-member-gz.neff"] {
        let f = root().join("tests/hostile").join(file);
        let reason = assert_refused(&["ls", f.to_str().unwrap(), "--max-inflated", "1M"], &f);
        assert!(reason.contains("over the cap"), "{file}: {reason}");
    }
    // Under the default cap the member bomb is an ordinary 10 MiB archive.
    let f = root().join("tests/hostile/gzip-bomb-member-gz.neff");
    let n = Neff::open(&f).unwrap();
    assert!(n.tar().len() > 10 << 20);
}

#[test]
fn library_survives_every_entry_point_on_hostile_files() {
    let limits = Limits {
        max_inflated: 1 << 20,
        ..Limits::default()
    };
    for f in neffs("tests/hostile") {
        let bytes = std::fs::read(&f).unwrap();
        let _ = neff::verify::verify_file(&bytes);
        if let Ok(n) = Neff::from_bytes(
            bytes,
            &Options {
                limits,
                ..Options::default()
            },
        ) {
            for e in n.entries() {
                let _ = n.data(e);
            }
            for a in Accessor::ALL {
                let _ = a.write_json(&n, &mut Vec::new());
            }
        }
    }
}
