//! The command-line contract of design/CLI.md: exit codes, keys, outputs.

mod common;

use common::*;

fn fixture(rel: &str) -> String {
    root().join(rel).to_str().unwrap().to_string()
}

#[test]
fn missing_file_is_an_io_error_exit_3() {
    let o = neff(&["ls", "/nonexistent/x.neff"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("neff: /nonexistent/x.neff: "));
}

#[test]
fn usage_errors_exit_2() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    assert_eq!(neff(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(neff(&["ls"]).status.code(), Some(2));
    assert_eq!(neff(&["cat", &f, "("]).status.code(), Some(2));
    assert_eq!(neff(&["get", &f, "nonsense"]).status.code(), Some(2));
    assert_eq!(neff(&["ls", &f, "--bogus"]).status.code(), Some(2));
}

#[test]
fn cat_with_no_match_is_refused() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    let reason = assert_refused(&["cat", &f, "no-such-member"], std::path::Path::new(&f));
    assert_eq!(reason, "no member matches no-such-member");
}

#[test]
fn cat_picks_the_first_match_in_sorted_order() {
    // sg00/def.json sorts before sg01/def.json whatever the archive order.
    let f = fixture("fixtures/acc/two-sg-raw.neff");
    let n = neff::Neff::open(&f).unwrap();
    let want = n
        .data(n.files().find(|e| n.name(e) == b"sg00/def.json").unwrap())
        .to_vec();
    assert_eq!(neff_ok(&["cat", &f, r"def\.json"]), want);
}

#[test]
fn verify_passes_on_every_fixture_and_fails_on_a_flipped_byte() {
    let mut args = vec!["verify".to_string()];
    for dir in ["fixtures/interop", "fixtures/acc"] {
        args.extend(neffs(dir).iter().map(|p| p.to_str().unwrap().to_string()));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = String::from_utf8(neff_ok(&argv)).unwrap();
    assert_eq!(out.lines().count(), args.len() - 1);
    assert!(out.lines().all(|l| l.starts_with("OK ")));

    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "fixtures/interop/gnutar-pax-gz.neff",
        "fixtures/interop/gnutar-pax-raw.neff",
    ] {
        let mut bytes = std::fs::read(root().join(name)).unwrap();
        let last = bytes.len() - 600;
        bytes[last] ^= 1;
        let p = tmp.path().join("flipped.neff");
        std::fs::write(&p, &bytes).unwrap();
        let o = neff(&["verify", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stdout).contains("mismatch"));
    }
}

#[test]
fn info_json_has_the_contract_keys() {
    for f in [
        "fixtures/interop/gnutar-pax-gz.neff",
        "fixtures/interop/gnutar-pax-raw.neff",
    ] {
        let v: serde_json::Value =
            serde_json::from_slice(&neff_ok(&["info", &fixture(f), "--json"])).unwrap();
        for k in [
            "pkg_version",
            "header_size",
            "data_size",
            "version_major",
            "version_minor",
            "build_version",
            "hash",
            "uuid",
            "name",
            "requested_tpb_count",
            "feature_bits",
            "vnc_size",
            "compressed",
            "members",
        ] {
            assert!(v.get(k).is_some(), "{f}: info --json lacks {k}");
        }
        let gz = f.ends_with("gz.neff");
        assert_eq!(v["compressed"], gz);
        assert_eq!(v["hash"].as_str().unwrap().len(), if gz { 32 } else { 64 });
        assert_eq!(v["uuid"].as_str().unwrap().len(), 32);
        assert_eq!(v["header_size"], 1024);
        let plain = String::from_utf8(neff_ok(&["info", &fixture(f)])).unwrap();
        assert!(plain.contains("Package Version:") && plain.contains(v["hash"].as_str().unwrap()));
    }
}

#[test]
fn get_prints_compact_json_and_accepts_getter_names() {
    let f = fixture("fixtures/acc/cc-replica-groups-gz.neff");
    assert_eq!(neff_ok(&["get", &f, "cc-world-size"]), b"2\n");
    assert_eq!(neff_ok(&["get", &f, "getCCRankWorldSize"]), b"2\n");
    let def = neff_ok(&["get", &f, "def"]);
    assert_eq!(def.iter().filter(|&&b| b == b'\n').count(), 1);
    let _: serde_json::Value = serde_json::from_slice(&def).unwrap();
}

#[test]
fn guard_strings_reach_stderr_verbatim() {
    let cases = [
        (
            "cc-none-gz.neff",
            "cc-world-size",
            "NEFF does not have CC op",
        ),
        (
            "cc-replica-groups-empty-gz.neff",
            "cc-world-size",
            "Empty replica_groups found",
        ),
        (
            "cc-src-target-pairs-empty-gz.neff",
            "cc-world-size",
            "Empty src_target_pairs found",
        ),
        (
            "cc-empty-topology-gz.neff",
            "cc-world-size",
            "Empty topology found at index 0, possible MPMD neff file",
        ),
        (
            "cc-mpmd-inconsistent-gz.neff",
            "cc-world-size",
            "Inconsistent worker count across topologies",
        ),
        (
            "tm-duplicate-input-gz.neff",
            "alias",
            "1 input aliasing to multiple outputs is not supported",
        ),
        (
            "kelf-target-list-mixed-gz.neff",
            "arch",
            "mixed accelerator usage is not supported",
        ),
    ];
    for (file, acc, want) in cases {
        let f = fixture(&format!("fixtures/acc/{file}"));
        let reason = assert_refused(&["get", &f, acc], std::path::Path::new(&f));
        assert!(reason.contains(want), "{file}: {reason:?}");
    }
}
