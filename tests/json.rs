//! JSON members: bad JSON is refused quickly and cleanly, typed views read
//! the sidecars, and repeated questions reuse one parse.

use neff::json::views::{Area, Def, Kelf, TensorMap, VarType};
use neff::pack::{pack, PackEntry, PackOptions};
use neff::{accessors, Accessor, Limits, Neff, Options};

fn neff_with(def: &[u8], limits: Limits) -> Result<Neff, neff::Error> {
    let entries = vec![
        PackEntry::file(
            "kelf-0.json",
            &b"{\"graphs\":[],\"target\":\"sunda\"}"[..],
            0,
        ),
        PackEntry::file("sg00/def.json", def, 0),
    ];
    let bytes = pack(
        &entries,
        &PackOptions {
            mtime: Some(0),
            ..Default::default()
        },
    )
    .unwrap();
    Neff::from_bytes(
        bytes,
        &Options {
            limits,
            ..Options::default()
        },
    )
}

fn def_error(def: &[u8]) -> String {
    let n = neff_with(def, Limits::default()).unwrap();
    let err = Accessor::Def.write_json(&n, &mut Vec::new()).unwrap_err();
    assert_eq!(err.exit_code(), 1);
    err.to_string()
}

#[test]
fn nesting_100k_deep_is_refused_without_overflowing_the_stack() {
    let mut deep = vec![b'['; 100_000];
    deep.extend(vec![b']'; 100_000]);
    let t = std::time::Instant::now();
    let e = def_error(&deep);
    assert!(
        e.contains("JSON nesting depth is 100000, over the cap of 512"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 2);
}

#[test]
fn invalid_json_and_out_of_range_numbers_are_refused() {
    assert!(def_error(b"{\"a\": NaN}").starts_with("invalid JSON in sg00/def.json"));
    assert!(def_error(b"{\"a\": 1").starts_with("invalid JSON in sg00/def.json"));
    assert!(def_error(b"\xff\xfe{}").starts_with("invalid JSON"));
    let big = def_error(b"{\"n\": 123456789012345678901234567890}");
    assert!(big.starts_with("invalid JSON"), "{big}");
}

#[test]
fn wrong_shapes_are_refused_with_the_key() {
    let n = neff_with(b"{\"replica_groups\": \"x\"}", Limits::default()).unwrap();
    let e = accessors::cc_world_size(&n).unwrap_err().to_string();
    assert_eq!(
        e,
        "sg00/def.json: wrong shape: replica_groups is not a list"
    );
    let n = neff_with(b"[1,2]", Limits::default()).unwrap();
    assert!(accessors::has_cc(&n)
        .unwrap_err()
        .to_string()
        .contains("def.json is not an object"));
}

#[test]
fn json_size_cap_is_checked_before_parsing_at_its_edge() {
    let def = format!("{{\"pad\":\"{}\"}}", "x".repeat(1000));
    let len = def.len() as u64;
    let at = Limits {
        max_json_size: len,
        ..Limits::default()
    };
    assert!(Accessor::Def
        .write_json(&neff_with(def.as_bytes(), at).unwrap(), &mut Vec::new())
        .is_ok());
    let under = Limits {
        max_json_size: len - 1,
        ..Limits::default()
    };
    let e = Accessor::Def
        .write_json(&neff_with(def.as_bytes(), under).unwrap(), &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("JSON member size"), "{e}");
}

#[test]
fn json_depth_cap_at_its_edge() {
    let nest = |d: usize| [vec![b'['; d], vec![b']'; d]].concat();
    let at = Limits {
        max_json_depth: 10,
        ..Limits::default()
    };
    assert!(Accessor::Def
        .write_json(&neff_with(&nest(10), at).unwrap(), &mut Vec::new())
        .is_ok());
    assert!(Accessor::Def
        .write_json(&neff_with(&nest(11), at).unwrap(), &mut Vec::new())
        .is_err());
}

#[test]
fn repeated_questions_reuse_the_first_parse() {
    let n = neff_with(b"{\"replica_groups\":[[[0,1,2]]]}", Limits::default()).unwrap();
    let a = accessors::def(&n).unwrap().json.str_ptr_for_test();
    assert_eq!(accessors::cc_world_size(&n).unwrap(), 3);
    let b = accessors::def(&n).unwrap().json.str_ptr_for_test();
    assert_eq!(a, b, "the second call parsed again");
}

#[test]
fn duplicate_keys_last_wins_and_unknown_keys_are_tolerated() {
    let n = neff_with(
        b"{\"#rank_world_size\":2,\"zzz\":{},\"#rank_world_size\":8}",
        Limits::default(),
    )
    .unwrap();
    assert_eq!(accessors::cc_world_size(&n).unwrap(), 8);
}

#[test]
fn typed_views_read_the_var_table_and_more() {
    let n = Neff::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/acc/def-var-all-types-raw.neff"
    ))
    .unwrap();
    let def = Def::new(accessors::def(&n).unwrap().json).unwrap();
    let vars = def.vars();
    let types: Vec<VarType> = vars.iter().filter_map(|v| v.var_type()).collect();
    for t in [
        VarType::Input,
        VarType::Output,
        VarType::TmpBuf,
        VarType::Virtual,
        VarType::StateBuffer,
        VarType::File,
        VarType::Pointer,
        VarType::List,
        VarType::Remote,
    ] {
        assert!(types.contains(&t), "no {t:?} var in {types:?}");
    }
    let areas: Vec<Area> = vars
        .iter()
        .filter_map(|v| v.placement())
        .map(|p| p.0)
        .collect();
    assert!(
        areas.iter().any(|a| matches!(a, Area::FabricPath(_))),
        "{areas:?}"
    );
    assert!(
        areas.iter().any(|a| matches!(a, Area::BackingBuf(_))),
        "{areas:?}"
    );
    assert!(areas.contains(&Area::Main), "{areas:?}");
    assert!(!def.dma_queues().is_empty());
    let tm = TensorMap::new(accessors::tensor_map(&n).unwrap().json);
    assert!(tm.is_some());
    let k = Kelf::new(accessors::kelf(&n).unwrap().json).unwrap();
    assert!(!k.graphs().is_empty());
}

/// A def.json over the skim threshold (1 MiB): a big var table around `cc`.
fn big_def(cc: &str) -> Vec<u8> {
    let vars: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "\"v{i}\":{{\"var_id\":{i},\"type\":\"tmp-buf\",\"size\":{}}}",
                i * 8
            )
        })
        .collect();
    format!(
        "{{\"name\":\"definition\"{cc},\"var\":{{{}}}}}",
        vars.join(",")
    )
    .into_bytes()
}

#[test]
fn skimmed_cc_keys_answer_as_the_full_parse_does() {
    let cases = [
        ",\"replica_groups\":[[[0,1,2,3]]]",
        ",\"src_target_pairs\":[[0,9]],\"#rank_world_size\":\"0012\"",
        ",\"replica_groups\":[[[0,1]]],\"replica_groups\":[[[0,1,2,3,4]]]",
        ",\"CCInfo\":{\"replica_groups\":[[[0,1,2]]]}",
        ",\"CCInfo\":7",
        "",
        ",\"replica_groups\":[[[0,1]],[[0]]]",
        ",\"replica_groups\":\"x\"",
    ];
    for cc in cases {
        let def = big_def(cc);
        assert!(def.len() > 1 << 20);
        let skim = neff_with(&def, Limits::default()).unwrap();
        let full = neff_with(&def, Limits::default()).unwrap();
        accessors::def(&full).unwrap(); // parsed whole first: no skim
        let a = (
            accessors::has_cc(&skim).map_err(|e| e.to_string()),
            accessors::cc_world_size(&skim).map_err(|e| e.to_string()),
        );
        let b = (
            accessors::has_cc(&full).map_err(|e| e.to_string()),
            accessors::cc_world_size(&full).map_err(|e| e.to_string()),
        );
        assert_eq!(a, b, "{cc}");
    }
}

#[test]
fn skim_falls_back_to_the_full_parse_for_its_errors() {
    let mut bad = big_def(",\"replica_groups\":[[[0,1]]]");
    let colon = bad.len() / 2
        + bad[bad.len() / 2..]
            .iter()
            .position(|&b| b == b':')
            .unwrap();
    bad[colon] = b'#'; // invalid JSON in the middle of the var table
    let e = accessors::cc_world_size(&neff_with(&bad, Limits::default()).unwrap()).unwrap_err();
    assert!(
        e.to_string().starts_with("invalid JSON in sg00/def.json"),
        "{e}"
    );
    // Nesting past the cap inside a key the accessor reads is refused as in
    // a full parse (nesting in keys it skips costs the skim nothing).
    let nest = format!(",\"replica_groups\":{}{}", "[".repeat(600), "]".repeat(600));
    let deep = big_def(&nest);
    let e = accessors::cc_world_size(&neff_with(&deep, Limits::default()).unwrap()).unwrap_err();
    assert!(e.to_string().contains("nesting depth"), "{e}");
    let arr = format!("[{}]", String::from_utf8(big_def("")).unwrap());
    let e = accessors::has_cc(&neff_with(arr.as_bytes(), Limits::default()).unwrap()).unwrap_err();
    assert!(e.to_string().contains("def.json is not an object"), "{e}");
}
