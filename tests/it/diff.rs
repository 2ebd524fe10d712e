//! `neff diff`: each pair of fixtures/diff/ is reported with exactly the
//! difference it was built with, a NEFF against its own `optimize` output
//! differs only in the header and the debug members, and the exit codes.

use std::path::PathBuf;

use crate::common::{neff, root};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/diff").join(format!("{name}.neff"))
}

fn diff_json(a: &std::path::Path, b: &std::path::Path) -> (i32, Value) {
    let o = neff(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = serde_json::from_slice(&o.stdout).unwrap();
    (o.status.code().unwrap(), v)
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| {
            x.get("name")
                .or_else(|| x.get("field"))
                .and_then(Value::as_str)
                .unwrap()
                .to_string()
        })
        .collect()
}

/// What one pair must report, and nothing else.
#[derive(Default)]
struct Want {
    changed: &'static [&'static str],
    added: &'static [&'static str],
    removed: &'static [&'static str],
    vars: Option<(&'static str, Value)>,
    io: Vec<Value>,
    cc: &'static [&'static str],
    alias: Vec<Value>,
    kelf: Vec<Value>,
    accessors: Vec<(&'static str, Value, Value)>,
}

fn check(pair: &str, want: Want) {
    let (code, d) = diff_json(&fixture("base"), &fixture(pair));
    assert_eq!(code, 1, "{pair}");
    assert_eq!(d["same"], false);
    // The payload changed: its hash (and maybe its length) with it; the
    // pairs share every other header field.
    let h = names(&d["header"]);
    assert!(h.contains(&"hash".to_string()), "{pair}: {h:?}");
    assert!(
        h.iter().all(|f| f == "hash" || f == "data_size"),
        "{pair}: {h:?}"
    );
    assert_eq!(names(&d["members"]["changed"]), want.changed, "{pair}");
    assert_eq!(names(&d["members"]["added"]), want.added, "{pair}");
    assert_eq!(names(&d["members"]["removed"]), want.removed, "{pair}");
    for k in ["added", "removed", "resized"] {
        let got = d["vars"][k].as_array().unwrap();
        match &want.vars {
            Some((wk, v)) if *wk == k => assert_eq!(got, &vec![v.clone()], "{pair}"),
            _ => assert!(got.is_empty(), "{pair}: vars.{k} {got:?}"),
        }
    }
    assert_eq!(d["io"].as_array().unwrap(), &want.io, "{pair}");
    assert_eq!(names(&d["cc"]), want.cc, "{pair}");
    assert_eq!(d["alias"].as_array().unwrap(), &want.alias, "{pair}");
    assert_eq!(d["kelf"].as_array().unwrap(), &want.kelf, "{pair}");
    let acc: Vec<(String, Value, Value)> = d["accessors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["a"].clone(),
                c["b"].clone(),
            )
        })
        .collect();
    let want_acc: Vec<(String, Value, Value)> = want
        .accessors
        .into_iter()
        .map(|(f, a, b)| (f.to_string(), a, b))
        .collect();
    assert_eq!(acc, want_acc, "{pair}");
}

const DEF: &str = "sg00/def.json";

#[test]
fn identical_neffs_exit_0_with_nothing_reported() {
    let (code, d) = diff_json(&fixture("base"), &fixture("base"));
    assert_eq!(code, 0);
    assert_eq!(d["same"], true);
    assert!(d["header"].as_array().unwrap().is_empty());
    let o = neff(&[
        "diff",
        fixture("base").to_str().unwrap(),
        fixture("base").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_variable_added() {
    check(
        "var-added",
        Want {
            changed: &[DEF],
            vars: Some((
                "added",
                json!({"member": DEF, "name": "extra", "size": 256}),
            )),
            ..Want::default()
        },
    );
}

#[test]
fn a_variable_removed() {
    check(
        "var-removed",
        Want {
            changed: &[DEF],
            vars: Some((
                "removed",
                json!({"member": DEF, "name": "scratch", "size": 256}),
            )),
            ..Want::default()
        },
    );
}

#[test]
fn a_variable_resized() {
    check(
        "var-resized",
        Want {
            changed: &[DEF],
            vars: Some((
                "resized",
                json!({"member": DEF, "name": "scratch", "a": 256, "b": 512}),
            )),
            ..Want::default()
        },
    );
}

#[test]
fn an_input_shape_changed() {
    check(
        "io-shape",
        Want {
            changed: &[DEF],
            io: vec![
                json!({"member": DEF, "name": "input", "field": "shape", "a": [32], "b": [4, 8]}),
            ],
            ..Want::default()
        },
    );
}

#[test]
fn an_output_dtype_changed() {
    check(
        "io-dtype",
        Want {
            changed: &[DEF],
            io: vec![
                json!({"member": DEF, "name": "output", "field": "dtype", "a": "float32", "b": "bfloat16"}),
            ],
            ..Want::default()
        },
    );
}

#[test]
fn cc_metadata_and_world_size_changed() {
    check(
        "cc-world-size",
        Want {
            changed: &[DEF],
            cc: &["replica_groups"],
            accessors: vec![("cc-world-size", json!(2), json!(4))],
            ..Want::default()
        },
    );
}

#[test]
fn aliasing_changed() {
    check(
        "alias",
        Want {
            changed: &["sg00/tensor_map.json"],
            alias: vec![json!({
            "member": "sg00/tensor_map.json", "name": "input", "field": "alias",
            "a": {"output": "output", "must_alias": true},
            "b": {"output": "output", "must_alias": false}})],
            accessors: vec![("must-alias", json!(true), json!(false))],
            ..Want::default()
        },
    );
}

#[test]
fn kelf_target_changed() {
    check(
        "kelf-target",
        Want {
            changed: &["kelf-0.json"],
            kelf: vec![
                json!({"member": "kelf-0.json", "name": "kelf-0.json", "field": "target",
                          "a": "cayman", "b": "sunda"}),
            ],
            accessors: vec![("arch", json!("cayman"), json!("sunda"))],
            ..Want::default()
        },
    );
}

#[test]
fn core_count_changed() {
    check(
        "cores",
        Want {
            changed: &["kelf-0.json"],
            added: &["sg01/def.json"],
            kelf: vec![
                json!({"member": "kelf-0.json", "name": "kelf-0.json", "field": "graphs",
                          "a": 1, "b": 2}),
            ],
            ..Want::default()
        },
    );
}

#[test]
fn members_added_removed_and_changed_in_content() {
    check(
        "member-added",
        Want {
            added: &["hlo_stats.json"],
            ..Want::default()
        },
    );
    check(
        "member-removed",
        Want {
            removed: &["sg00/act.bin"],
            ..Want::default()
        },
    );
    check(
        "member-content",
        Want {
            changed: &["sg00/pe.bin"],
            ..Want::default()
        },
    );
    let (_, d) = diff_json(&fixture("base"), &fixture("member-content"));
    let c = &d["members"]["changed"][0];
    assert_eq!(
        (c["size_a"].as_u64(), c["size_b"].as_u64()),
        (Some(64), Some(64))
    );
    assert_ne!(c["sha256_a"], c["sha256_b"]);
    assert_eq!(c["sha256_a"].as_str().unwrap().len(), 64);
}

#[test]
fn header_fields_alone() {
    let (code, d) = diff_json(&fixture("base"), &fixture("header-only"));
    assert_eq!(code, 1);
    assert_eq!(
        d["header"],
        json!([
            {"field": "version_minor", "a": 0, "b": 1},
            {"field": "feature_bits", "a": "0x0", "b": "0x2"},
        ])
    );
    for k in ["added", "removed", "changed"] {
        assert!(d["members"][k].as_array().unwrap().is_empty());
    }
    assert!(d["accessors"].as_array().unwrap().is_empty());
}

#[test]
fn a_neff_and_its_optimize_output_differ_only_in_header_and_debug_members() {
    let t = tempfile::tempdir().unwrap();
    let a = root().join("fixtures/mem/mem-rules-gz.neff");
    let b = t.path().join("o.neff");
    crate::common::neff_ok(&["optimize", a.to_str().unwrap(), "-o", b.to_str().unwrap()]);
    let (code, d) = diff_json(&a, &b);
    assert_eq!(code, 1);
    assert_eq!(
        names(&d["header"]),
        ["pkg_version", "data_size", "num_tpb", "hash"]
    );
    assert_eq!(
        names(&d["members"]["removed"]),
        [
            "debug_info/backend.pe.dbg",
            "sg00/debug_info_asm.pe.dbg",
            "sg00/pe.asm",
            "sg00/wavegraph-bin.json",
        ]
    );
    for k in ["added", "changed"] {
        assert!(d["members"][k].as_array().unwrap().is_empty());
    }
    for k in ["io", "cc", "alias", "kelf", "accessors"] {
        assert!(d[k].as_array().unwrap().is_empty(), "{k}");
    }
    // With --keep-debug only the header differs.
    let c = t.path().join("k.neff");
    crate::common::neff_ok(&[
        "optimize",
        "--keep-debug",
        a.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ]);
    let (_, d) = diff_json(&a, &c);
    assert!(d["members"]["removed"].as_array().unwrap().is_empty());
}

#[test]
fn text_output_has_one_line_per_difference() {
    let o = neff(&[
        "diff",
        fixture("base").to_str().unwrap(),
        fixture("var-resized").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l == "var resized sg00/def.json: scratch 256 -> 512 bytes"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("changed sg00/def.json ")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("header hash: ")),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2_and_io_errors_exit_3() {
    let base = fixture("base");
    let o = neff(&["diff", base.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let o = neff(&["diff", base.to_str().unwrap(), "/nonexistent/b.neff"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("neff: /nonexistent/b.neff: "));
}
