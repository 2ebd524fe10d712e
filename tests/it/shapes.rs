//! JSON of the wrong shape for an accessor is refused, never defaulted: the
//! full table accessor × wrong shape, each refusal naming the member and the
//! path inside it (CLI.md: "JSON of the wrong shape for an accessor is
//! refused, exit 1").

use crate::common::*;
use neff::accessors::Accessor;
use neff::pack::{pack, PackEntry, PackOptions};
use neff::{Neff, Options};

/// A NEFF whose members are valid for every accessor, with `member`
/// replaced by `json` (or removed, when `json` is empty).
fn neff_with(overrides: &[(&str, &str)]) -> Vec<u8> {
    let base = [
        ("info.json", r#"{"name":"m"}"#),
        ("kelf-0.json", r#"{"target":"trn1","graphs":[{}]}"#),
        ("neff.json", r#"{"graphs":{"sg_core0":{"op":"__kelf"}}}"#),
        ("sg00/def.json", r#"{"var":{},"replica_groups":[[[0,1]]]}"#),
        (
            "sg00/tensor_map.json",
            r#"{"alias_map":[{"input_name":"i","output_name":"o"}]}"#,
        ),
    ];
    let mut entries = Vec::new();
    for (name, json) in base {
        let json = overrides
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(json, |(_, j)| *j);
        if !json.is_empty() {
            entries.push(PackEntry::file(name, json.as_bytes(), 0));
        }
    }
    let opts = PackOptions::default().mtime(Some(0));
    pack(&entries, &opts).unwrap()
}

fn answer(bytes: Vec<u8>, a: Accessor) -> Result<String, neff::Error> {
    let n = Neff::from_bytes(bytes, &Options::default()).unwrap();
    let mut out = Vec::new();
    a.write_json(&n, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn the_base_neff_answers_every_accessor() {
    for a in Accessor::ALL {
        let got = answer(neff_with(&[]), a);
        assert!(got.is_ok(), "{}: {:?}", a.name(), got.err());
    }
    assert_eq!(answer(neff_with(&[]), Accessor::CcWorldSize).unwrap(), "2");
    assert_eq!(answer(neff_with(&[]), Accessor::NumCores).unwrap(), "1");
}

#[test]
fn every_wrong_shape_is_refused_with_member_and_path() {
    use Accessor::*;
    let neff = "neff.json";
    let kelf = "kelf-0.json";
    let def = "sg00/def.json";
    let tm = "sg00/tensor_map.json";
    // (member, its JSON, other overrides, accessors, the refusal after "wrong shape: ")
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [Accessor],
        &'a str,
    );
    #[rustfmt::skip]
    let table: &[Row] = &[
        (neff, r#"{"graphs":["sg00","sg01"]}"#, &[], &[NumCores], "graphs is neither an object nor a list of objects (graphs[0])"),
        (neff, r#"{"graphs":3}"#, &[], &[NumCores], "graphs is neither an object nor a list of objects"),
        (neff, r#"{"graphs":null}"#, &[], &[NumCores], "graphs is neither an object nor a list of objects"),
        (neff, r#"{"nodes":{"a":1}}"#, &[], &[NumCores], "nodes is not a list"),
        (neff, r#"{"nodes":[{"op":"__kelf"},"x"]}"#, &[], &[NumCores], "nodes[1] is not an object"),
        (neff, r#"{"version":"0.5"}"#, &[], &[NumCores], "neff.json has neither a graphs object nor a nodes list"),
        (neff, r#"[1]"#, &[], &[NumCores], "neff.json is not an object"),
        (kelf, r#"{"target":"trn1","graphs":{"a":1}}"#, &[("neff.json", "")], &[NumCores], "kelf graphs is not a list"),
        (kelf, r#"{"target":3}"#, &[], &[Arch], "kelf target is neither a string nor a list"),
        (kelf, r#"{"target":null}"#, &[], &[Arch], "kelf target is neither a string nor a list"),
        (kelf, r#"{"target":[]}"#, &[], &[Arch], "kelf target is an empty list"),
        (kelf, r#"{"target":["trn1",1]}"#, &[], &[Arch], "kelf target list holds a non-string"),
        (kelf, r#"["trn1"]"#, &[], &[Arch], "kelf is not an object"),
        (def, r#"[1]"#, &[], &[HasCc, CcWorldSize], "def.json is not an object"),
        (def, r#"{"CCInfo":[1]}"#, &[], &[HasCc, CcWorldSize], "CCInfo is not an object"),
        (def, r#"{"replica_groups":"x"}"#, &[], &[CcWorldSize], "replica_groups is not a list"),
        (def, r#"{"replica_groups":["x"]}"#, &[], &[CcWorldSize], "replica_groups[0] is not a list"),
        (def, r#"{"replica_groups":[[1]]}"#, &[], &[CcWorldSize], "replica_groups[0][0] is not a list"),
        (def, r#"{"replica_groups":[[[0,"1"]]]}"#, &[], &[CcWorldSize], "replica_groups[0][0][1] is not an integer"),
        (def, r#"{"replica_groups":[[[0,1]],[[0.5,1]]]}"#, &[], &[CcWorldSize], "replica_groups[1][0][0] is not an integer"),
        (def, r#"{"replica_groups":[[[true]]]}"#, &[], &[CcWorldSize], "replica_groups[0][0][0] is not an integer"),
        (def, r#"{"replica_groups":[[[[0]]]]}"#, &[], &[CcWorldSize], "replica_groups[0][0][0] is not an integer"),
        (def, r#"{"src_target_pairs":{"a":1}}"#, &[], &[CcWorldSize], "src_target_pairs is not a list"),
        (def, r#"{"src_target_pairs":[[0,"7"]]}"#, &[], &[CcWorldSize], "src_target_pairs holds a non-rank value"),
        (def, r#"{"src_target_pairs":[[0,-7]]}"#, &[], &[CcWorldSize], "src_target_pairs holds a non-rank value"),
        (def, r##"{"#rank_world_size":-1}"##, &[], &[CcWorldSize], "#rank_world_size is not a non-negative integer"),
        (def, r##"{"#rank_world_size":2.5}"##, &[], &[CcWorldSize], "#rank_world_size is not a non-negative integer"),
        (def, r##"{"#rank_world_size":[8]}"##, &[], &[CcWorldSize], "#rank_world_size is not a non-negative integer"),
        (tm, r#"[1]"#, &[], &[Alias, MustAlias], "tensor_map.json is not an object"),
        (tm, r#"{"alias_map":{"i":"o"}}"#, &[], &[Alias, MustAlias], "alias_map is not a list"),
        (tm, r#"{"alias_map":null}"#, &[], &[Alias, MustAlias], "alias_map is not a list"),
        (tm, r#"{"alias_map":["i"]}"#, &[], &[Alias, MustAlias], "alias_map[0] is not an object"),
        (tm, r#"{"alias_map":[{"output_name":"o"}]}"#, &[], &[Alias], "alias_map[0].input_name is not a string"),
        (tm, r#"{"alias_map":[{"input_name":"i"}]}"#, &[], &[Alias], "alias_map[0].output_name is not a string"),
        (tm, r#"{"alias_map":[{"input_name":3,"output_name":"o"}]}"#, &[], &[Alias], "alias_map[0].input_name is not a string"),
    ];
    let mut checked = 0;
    for (member, json, more, accessors, want) in table {
        let mut overrides = vec![(*member, *json)];
        overrides.extend_from_slice(more);
        for &a in *accessors {
            let bytes = neff_with(&overrides);
            match answer(bytes, a) {
                Ok(got) => panic!(
                    "{} on {member} {json}: answered {got}, not refused",
                    a.name()
                ),
                Err(e) => {
                    let msg = e.to_string();
                    assert_eq!(e.kind(), neff::ErrorKind::Shape, "{msg}");
                    assert_eq!(
                        msg,
                        format!("{member}: wrong shape: {want}"),
                        "{} on {member} {json}",
                        a.name()
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn a_wrong_shape_is_one_line_and_exit_1_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("g.neff");
    std::fs::write(&p, neff_with(&[("neff.json", r#"{"graphs":["a"]}"#)])).unwrap();
    let o = neff(&["get", p.to_str().unwrap(), "num-cores"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("neff.json: wrong shape: graphs is neither"),
        "{err}"
    );
}

#[test]
fn a_lone_surrogate_in_a_string_to_print_is_refused_not_mangled() {
    let tm = r#"{"alias_map":[{"input_name":"a\ud800","output_name":"o"}]}"#;
    let e = answer(neff_with(&[("sg00/tensor_map.json", tm)]), Accessor::Alias).unwrap_err();
    assert!(e.to_string().contains("lone surrogate"), "{e}");
    // The questions that print no such string still answer.
    let got = answer(
        neff_with(&[("sg00/tensor_map.json", tm)]),
        Accessor::MustAlias,
    );
    assert_eq!(got.unwrap(), "false");
    let kelf = r#"{"target":"\udc00"}"#;
    let e = answer(neff_with(&[("kelf-0.json", kelf)]), Accessor::Arch).unwrap_err();
    assert!(e.to_string().contains("lone surrogate"), "{e}");
    // A literal backslash-u text in a member without lone surrogates prints.
    let kelf = r#"{"target":"\\ud800"}"#;
    let got = answer(neff_with(&[("kelf-0.json", kelf)]), Accessor::Arch).unwrap();
    assert_eq!(got, r#""\\ud800""#);
}
