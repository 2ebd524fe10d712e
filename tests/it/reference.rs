//! The text of `neff get` equals what the reference re-creation
//! (`tests/helpers/neffinfo_ref.py`, the `dd | tar` + `json.loads` +
//! `json.dumps` path users run today) prints, byte for byte: on every
//! fixture, and on members built to differ from a tape's view of JSON
//! (duplicate keys, escapes, big and negative numbers, floats, deep nesting,
//! a lone surrogate).
//!
//! Compared wherever the reference answers, but for two fixtures built for
//! rules CLI.md widens (`contract_widens`) and for wrong shapes the
//! reference reads loosely and CLI.md refuses; there the contract's answer
//! wins (tests/differential.rs pins those against tests/helpers/oracle.py).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use neff::pack::{pack, PackEntry, PackOptions};

fn reference() -> PathBuf {
    let p = root().join("tests/helpers/neffinfo_ref.py");
    assert!(p.exists(), "{} is missing", p.display());
    p
}

/// The reference's text (or refusal) for every accessor of every file.
fn reference_texts(files: &[PathBuf]) -> BTreeMap<String, serde_json::Value> {
    let o = Command::new("python3")
        .arg(root().join("tests/helpers/ref_texts.py"))
        .arg(reference())
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The fixtures on which the reference's own rule is narrower than the
/// contract's and both answer, differently (CLI.md's answer wins; the
/// oracle test pins it).
fn contract_widens(file: &str, acc: &str) -> bool {
    matches!(
        (file, acc),
        // `arch` falls back to kelf `metadata.target_arch` (the reference: null).
        ("kelf-metadata-target-arch-gz.neff", "arch")
        // `num-cores` counts the TVM `nodes` form too (the reference: 0).
            | ("neffjson-tvm-nodes-raw.neff", "num-cores")
    )
}

/// Compares `neff get` with the reference on `files`; returns how many
/// answers were compared.
fn compare(files: &[PathBuf]) -> usize {
    let want = reference_texts(files);
    let (mut compared, mut wrong_shapes) = (0, 0);
    for f in files {
        let path = f.to_str().unwrap();
        for (acc, w) in want[path].as_object().unwrap() {
            let Some(text) = w.get("text").and_then(|t| t.as_str()) else {
                continue; // refused by the reference (other tests pin refusals)
            };
            if contract_widens(f.file_name().unwrap().to_str().unwrap(), acc) {
                continue;
            }
            let o = neff(&["get", path, acc]);
            let got = String::from_utf8(o.stdout).unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.code() == Some(1) && err.contains(": wrong shape: ") {
                // The reference reads some wrong shapes loosely (a string of
                // replica groups iterates as characters); CLI.md refuses them.
                wrong_shapes += 1;
                continue;
            }
            assert!(
                o.status.success(),
                "{path} {acc}: neff refused ({err}), the reference printed {text}"
            );
            assert_eq!(got.strip_suffix('\n'), Some(text), "{path} {acc}");
            compared += 1;
        }
    }
    assert!(
        wrong_shapes <= compared / 20,
        "{wrong_shapes} wrong-shape refusals against {compared} answers"
    );
    compared
}

#[test]
fn get_prints_the_reference_text_on_every_fixture() {
    let mut files = neffs("fixtures/acc");
    files.extend(neffs("fixtures/interop"));
    let compared = compare(&files);
    assert!(compared >= 300, "only {compared} answers compared");
}

fn write_neff(dir: &Path, name: &str, members: &[(&str, &str)]) -> PathBuf {
    let entries: Vec<PackEntry> = members
        .iter()
        .map(|(n, j)| PackEntry::file(n, j.as_bytes(), 0))
        .collect();
    let opts = PackOptions::default().mtime(Some(0));
    let p = dir.join(name);
    std::fs::write(&p, pack(&entries, &opts).unwrap()).unwrap();
    p
}

#[test]
fn get_prints_the_reference_text_where_a_tape_would_not() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let kelf = ("kelf-0.json", r#"{"target":"trn2","graphs":[{}]}"#);
    let deep = format!("{}{}", "[".repeat(400), "]".repeat(400));
    let deep_def = format!(r##"{{"d":{deep},"#rank_world_size":4}}"##);
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "dup-keys.neff",
            vec![
                kelf,
                ("info.json", r#"{"b":1,"a":2,"b":{"x":1,"y":2,"x":3}}"#),
                (
                    "sg00/def.json",
                    r##"{"z":1,"a":[],"z":{"k":[{"q":1,"q":null}]},"#rank_world_size":2,"#rank_world_size":8}"##,
                ),
            ],
        ),
        (
            "escapes.neff",
            vec![
                kelf,
                (
                    "sg00/def.json",
                    r#"{"s":"caf\u00e9 \ud83d\ude00 \u0001\u001f\u007f \/ \"q\" \\ \t\n","\u00e9":"é","e":"","ctl":"\b\f\r"}"#,
                ),
                ("info.json", "\u{feff}{\"bom\":true}"),
            ],
        ),
        (
            "numbers.neff",
            vec![
                kelf,
                (
                    "sg00/def.json",
                    r#"{"n":[123456789012345678901234567890,-99999999999999999999999,-0,0,-1,18446744073709551616,-9223372036854775809],"f":[1.0,1e-05,1E16,1e15,0.1,-2.5e-7,1e400,-1e400,0.0001,0.00001,1.5e300,5e-324,2.0e0,100e-2]}"#,
                ),
                (
                    "neff.json",
                    r#"{"graphs":{"sg_core0":{"op":"__kelf","w":1.10}}}"#,
                ),
            ],
        ),
        (
            "nan-and-deep.neff",
            vec![
                kelf,
                ("sg00/def.json", &deep_def),
                ("info.json", r#"{"x":NaN,"y":Infinity,"z":-Infinity}"#),
            ],
        ),
        (
            "alias-order.neff",
            vec![
                kelf,
                ("sg00/def.json", "{}"),
                (
                    "sg00/tensor_map.json",
                    r#"{"alias_map":[{"input_name":"zeta","output_name":"o1","must_alias":0},{"input_name":"alpha","output_name":"o\u00e9"},{"input_name":"mid","output_name":"o3","must_alias":[1]}]}"#,
                ),
            ],
        ),
        (
            "lone-surrogate.neff",
            vec![kelf, ("sg00/def.json", r#"{"s":"a\ud800b","t":"\udc00"}"#)],
        ),
    ];
    let files: Vec<PathBuf> = cases
        .iter()
        .map(|(name, members)| write_neff(d, name, members))
        .collect();
    let compared = compare(&files);
    // Every member accessor and alias/must-alias/cc-world-size/has-cc on
    // the files that have them.
    assert!(compared >= 20, "only {compared} answers compared");
    // The alias object keeps alias_map's order (not sorted).
    let alias = neff_ok(&["get", files[4].to_str().unwrap(), "alias"]);
    assert_eq!(
        String::from_utf8(alias).unwrap(),
        "{\"zeta\":\"o1\",\"alpha\":\"oé\",\"mid\":\"o3\"}\n"
    );
}
