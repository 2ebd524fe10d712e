//! `neff optimize` and `neff::optimize`: raw payload, verified hash, debug
//! members dropped by the documented rule, everything else kept byte for
//! byte, every accessor and `mem` answering the same, reproducible output.

use std::path::{Path, PathBuf};

use crate::common::{neff, neff_ok, root};
use neff::accessors::Accessor;
use neff::optimize::{optimize, OptimizeOptions};
use neff::{Kind, Neff, Options};

fn all_fixtures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for d in [
        "fixtures/interop",
        "fixtures/acc",
        "fixtures/mem",
        "fixtures/diff",
    ] {
        v.extend(crate::common::neffs(d));
    }
    v
}

fn answers(n: &Neff) -> Vec<String> {
    let mut v: Vec<String> = Accessor::ALL
        .iter()
        .map(|a| {
            let mut buf = Vec::new();
            match a.write_json(n, &mut buf) {
                Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
                Err(e) => format!("error: {e}"),
            }
        })
        .collect();
    v.push(format!(
        "{:?}",
        neff::mem::estimate(n).map_err(|e| e.to_string())
    ));
    v
}

fn optimized(n: &Neff, keep_debug: bool) -> (Neff, Vec<u8>, Vec<String>) {
    let (bytes, report) = optimize(n, &OptimizeOptions::default().keep_debug(keep_debug)).unwrap();
    let out = Neff::from_bytes(bytes.clone(), &Options::default()).unwrap();
    (out, bytes, report.dropped)
}

#[test]
fn output_is_raw_verifies_and_keeps_the_header_identity() {
    for f in all_fixtures() {
        let n = Neff::open(&f).unwrap();
        let (o, bytes, _) = optimized(&n, false);
        neff::verify_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!o.is_compressed());
        let (h, g) = (n.header(), o.header());
        assert_eq!(g.pkg_version(), 1);
        assert_eq!(g.header_size(), 1024);
        assert_eq!(g.data_size() as usize, bytes.len() - 1024);
        assert_eq!(g.num_tpb(), 0);
        assert_eq!(h.name(), g.name());
        assert_eq!(h.uuid(), g.uuid());
        assert_eq!(h.build_version(), g.build_version());
        assert_eq!(h.version_major(), g.version_major());
        assert_eq!(h.version_minor(), g.version_minor());
        assert_eq!(h.feature_bits(), g.feature_bits());
        assert_eq!(h.vnc_size(), g.vnc_size());
        assert_eq!(h.requested_tpb_count(), g.requested_tpb_count());
        assert_eq!(h.tpb_per_node(), g.tpb_per_node());
    }
}

#[test]
fn every_accessor_and_mem_answer_the_same_on_every_fixture() {
    for f in all_fixtures() {
        let n = Neff::open(&f).unwrap();
        for keep in [false, true] {
            let (o, _, _) = optimized(&n, keep);
            assert_eq!(
                answers(&n),
                answers(&o),
                "{} keep_debug={keep}",
                f.display()
            );
        }
    }
}

#[test]
fn kept_members_are_byte_for_byte_with_their_metadata() {
    for f in all_fixtures() {
        let n = Neff::open(&f).unwrap();
        let (o, _, dropped) = optimized(&n, false);
        let kept: Vec<_> = n
            .entries()
            .iter()
            .filter(|e| !dropped.contains(&n.name_str(e).into_owned()))
            .collect();
        assert_eq!(kept.len(), o.entries().len(), "{}", f.display());
        for (a, b) in kept.iter().zip(o.entries()) {
            assert_eq!(n.name(a), o.name(b));
            assert_eq!(a.kind, b.kind);
            assert_eq!(n.data(a).unwrap(), o.data(b).unwrap());
            assert_eq!((a.mode, a.mtime), (b.mode, b.mtime));
            assert_eq!(n.link(a), o.link(b));
        }
    }
}

#[test]
fn keep_debug_keeps_the_whole_tar() {
    for f in all_fixtures() {
        let n = Neff::open(&f).unwrap();
        let (o, _, dropped) = optimized(&n, true);
        assert!(dropped.is_empty());
        assert_eq!(n.tar(), o.tar(), "{}", f.display());
    }
}

#[test]
fn debug_only_members_are_dropped_by_the_rule() {
    let n = Neff::open(root().join("fixtures/mem/mem-rules-gz.neff")).unwrap();
    let (o, _, dropped) = optimized(&n, false);
    assert_eq!(
        dropped,
        [
            "debug_info",
            "debug_info/backend.pe.dbg",
            "sg00/pe.asm",
            "sg00/wavegraph-bin.json",
            "sg00/debug_info_asm.pe.dbg",
        ]
    );
    assert!(o.member(b"hlo_stats.json").is_some());
    assert!(o.member(b"sg00/act_table_bkt.bin").is_some());
    assert!(o
        .entries()
        .iter()
        .all(|e| e.kind != Kind::File || !neff::optimize::is_debug_only(o.name(e))));
}

#[test]
fn a_hard_link_keeps_its_debug_target() {
    use neff::pack::{pack, PackEntry, PackKind, PackOptions};
    let entries = vec![
        PackEntry::file("sg00/pe.asm", "disasm", 0),
        PackEntry {
            name: b"sg00/copy.txt".to_vec(),
            kind: PackKind::Hardlink(b"sg00/pe.asm".to_vec()),
            mode: 0o644,
            mtime: 0,
        },
        PackEntry::file("sg00/x.asm", "gone", 0),
    ];
    let bytes = pack(&entries, &PackOptions::default().uuid(Some([2; 16]))).unwrap();
    let n = Neff::from_bytes(bytes, &Options::default()).unwrap();
    let (o, _, dropped) = optimized(&n, false);
    assert_eq!(dropped, ["sg00/x.asm"]);
    assert!(o.member(b"sg00/pe.asm").is_some());
}

fn run_optimize(input: &Path, out: &Path, epoch: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .env("SOURCE_DATE_EPOCH", epoch)
        .args([
            "optimize",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap()
}

#[test]
fn cli_output_verifies_and_is_reproducible_under_source_date_epoch() {
    let t = tempfile::tempdir().unwrap();
    let f = root().join("fixtures/mem/mem-rules-gz.neff");
    let (a, b, c) = (
        t.path().join("a.neff"),
        t.path().join("b.neff"),
        t.path().join("c.neff"),
    );
    assert!(run_optimize(&f, &a, "0").status.success());
    assert!(run_optimize(&f, &b, "0").status.success());
    assert!(run_optimize(&f, &c, "1700000000").status.success());
    let (x, y, z) = (
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        std::fs::read(&c).unwrap(),
    );
    assert_eq!(x, y);
    assert_eq!(x, z);
    let out = neff_ok(&["verify", a.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out).starts_with("OK "));
    // Only the output is in the directory: no temporary file left behind.
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 3);
}

#[test]
fn cli_optimizes_a_file_in_place() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("m.neff");
    std::fs::copy(root().join("fixtures/mem/mem-rules-gz.neff"), &p).unwrap();
    let before = answers(&Neff::open(&p).unwrap());
    let ps = p.to_str().unwrap();
    neff_ok(&["optimize", ps, "-o", ps]);
    let n = Neff::open(&p).unwrap();
    assert!(!n.is_compressed());
    assert_eq!(before, answers(&n));
    neff_ok(&["verify", ps]);
}

#[test]
fn cli_refuses_a_corrupt_neff_and_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let bad = root().join("tests/hostile/gzip-truncated-gz.neff");
    let out = t.path().join("o.neff");
    crate::common::assert_refused(
        &[
            "optimize",
            bad.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &bad,
    );
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    let o = neff(&[
        "optimize",
        "/nonexistent/x.neff",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn hostile_files_are_optimized_or_refused_without_a_panic() {
    for f in crate::common::neffs("tests/hostile") {
        let Ok(n) = Neff::open(&f) else { continue };
        if let Ok((bytes, _)) = optimize(&n, &OptimizeOptions::default()) {
            neff::verify_bytes(&bytes).unwrap();
            let o = Neff::from_bytes(bytes, &Options::default())
                .unwrap_or_else(|e| panic!("{}: output does not open: {e}", f.display()));
            assert!(!o.is_compressed());
        }
    }
}
