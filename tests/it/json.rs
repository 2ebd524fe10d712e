//! JSON members: bad JSON is refused quickly and cleanly, typed views read
//! the sidecars, and repeated questions reuse one parse.

use neff::pack::{pack, PackEntry, PackOptions};
use neff::views::{Area, Def, Kelf, TensorMap, VarType};
use neff::{
    accessors::{self, Accessor},
    Limits, Neff, Options,
};

fn neff_with(def: &[u8], limits: Limits) -> Result<Neff, neff::Error> {
    let entries = vec![
        PackEntry::file(
            "kelf-0.json",
            &b"{\"graphs\":[],\"target\":\"sunda\"}"[..],
            0,
        ),
        PackEntry::file("sg00/def.json", def, 0),
    ];
    let bytes = pack(&entries, &PackOptions::default().mtime(Some(0))).unwrap();
    Neff::from_bytes(bytes, &Options::default().limits(limits))
}

fn def_error(def: &[u8]) -> String {
    let n = neff_with(def, Limits::default()).unwrap();
    let err = Accessor::Def.write_json(&n, &mut Vec::new()).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            neff::ErrorKind::Json | neff::ErrorKind::Shape | neff::ErrorKind::Limit
        ),
        "{err}"
    );
    err.to_string()
}

#[test]
fn nesting_100k_deep_is_refused_without_overflowing_the_stack() {
    let mut deep = vec![b'['; 100_000];
    deep.extend(vec![b']'; 100_000]);
    let t = std::time::Instant::now();
    let e = def_error(&deep);
    assert!(e.contains("JSON nesting depth over the cap of 512"), "{e}");
    // The tape parse (the accessors' path) refuses it the same way.
    let n = neff_with(&deep, Limits::default()).unwrap();
    let e = accessors::has_cc(&n).unwrap_err().to_string();
    assert!(
        e.contains("JSON nesting depth is 100000, over the cap of 512"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 2);
}

fn def_text(def: &[u8]) -> String {
    let n = neff_with(def, Limits::default()).unwrap();
    let mut out = Vec::new();
    Accessor::Def.write_json(&n, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn invalid_json_is_refused() {
    assert!(def_error(b"{\"a\": 1").starts_with("invalid JSON in sg00/def.json"));
    assert!(def_error(b"\xff\xfe{}").starts_with("invalid JSON"));
    assert!(def_error(b"{\"a\": nan}").starts_with("invalid JSON"));
    assert!(def_error(&format!("[{}]", "7".repeat(4301)).into_bytes()).contains("4300"));
}

#[test]
fn get_prints_numbers_python_reads_that_a_tape_cannot_hold() {
    // json.loads reads NaN, Infinity and integers of any size: `get` prints
    // them back as json.dumps does.
    assert_eq!(
        def_text(b"{\"n\": 123456789012345678901234567890, \"m\": -99999999999999999999999, \"f\": NaN, \"i\": -Infinity}"),
        r#"{"n":123456789012345678901234567890,"m":-99999999999999999999999,"f":NaN,"i":-Infinity}"#
    );
    // The accessors read such members too, as Python does: simd-json's
    // refusal sends them through a re-encoding a tape holds.
    let n = neff_with(
        b"{\"n\": [-99999999999999999999, -9223372036854775809, 1e400], \"a\": NaN, \"#rank_world_size\": 4}",
        Limits::default(),
    )
    .unwrap();
    assert!(accessors::has_cc(&n).unwrap());
    assert_eq!(accessors::cc_world_size(&n).unwrap(), 4);
    // NaN where an integer is needed is a wrong shape, as int(nan) fails.
    let n = neff_with(b"{\"#rank_world_size\": NaN}", Limits::default()).unwrap();
    let e = accessors::cc_world_size(&n).unwrap_err().to_string();
    assert!(e.contains("wrong shape: #rank_world_size"), "{e}");
    // What Python refuses stays refused, with Python's kind of reason.
    let n = neff_with(b"{\"a\": [1,]}", Limits::default()).unwrap();
    let e = accessors::has_cc(&n).unwrap_err().to_string();
    assert!(
        e.starts_with("invalid JSON in sg00/def.json: expecting value"),
        "{e}"
    );
}

#[test]
fn a_lone_surrogate_is_kept_as_its_escape_by_get_and_read_past_by_accessors() {
    assert_eq!(
        def_text(br#"{"s":"\ud800 and \udc00"}"#),
        r#"{"s":"\ud800 and \udc00"}"#
    );
    // The accessors read past it, as Python does.
    let n = neff_with(
        br##"{"x":"\ud800","#rank_world_size":3}"##,
        Limits::default(),
    )
    .unwrap();
    assert_eq!(accessors::cc_world_size(&n).unwrap(), 3);
    // A pair, and an escaped backslash before a `u`, are not lone.
    let n = neff_with(br#"{"a":"\ud83d\ude00 \\ud800"}"#, Limits::default()).unwrap();
    assert!(!accessors::has_cc(&n).unwrap());
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
    let at = Limits::default().max_json_size(len);
    assert!(Accessor::Def
        .write_json(&neff_with(def.as_bytes(), at).unwrap(), &mut Vec::new())
        .is_ok());
    let under = Limits::default().max_json_size(len - 1);
    let e = Accessor::Def
        .write_json(&neff_with(def.as_bytes(), under).unwrap(), &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("JSON member size"), "{e}");
}

#[test]
fn json_depth_cap_at_its_edge() {
    let nest = |d: usize| [vec![b'['; d], vec![b']'; d]].concat();
    let at = Limits::default().max_json_depth(10);
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

/// A raw (mapped) NEFF file of `entries`, opened with and without the
/// early CC skim.
fn raw_neff_file(entries: &[PackEntry], dir: &tempfile::TempDir) -> std::path::PathBuf {
    let bytes = pack(
        entries,
        &PackOptions::default().no_gzip(true).mtime(Some(0)),
    )
    .unwrap();
    let path = dir.path().join("raw.neff");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// (has-cc, cc-world-size) as text, for a NEFF opened with `early_cc`.
fn cc_answers(path: &std::path::Path, early_cc: bool) -> (String, String) {
    let opts = Options::default().early_cc(early_cc);
    let n = match Neff::open_with(path, &opts) {
        Ok(n) => n,
        Err(e) => return (e.to_string(), e.to_string()),
    };
    (
        format!("{:?}", accessors::has_cc(&n).map_err(|e| e.to_string())),
        format!(
            "{:?}",
            accessors::cc_world_size(&n).map_err(|e| e.to_string())
        ),
    )
}

/// A def.json past the two-thread threshold (4 MiB), CC keys around it.
fn huge_def(cc: &str) -> Vec<u8> {
    let vars: Vec<String> = (0..60_000)
        .map(|i| {
            format!(
                "\"w{i}.model.layers.{i}.self_attn, \\\"q\\\"\":{{\"var_id\":{i},\"type\":\"file\",\"size\":{},\"file\":\"sg00/weights/w{i}.bin\"}}",
                i * 8
            )
        })
        .collect();
    format!(
        "{{\"name\":\"definition\"{cc},\"var\":{{{}}}{cc}}}",
        vars.join(",")
    )
    .into_bytes()
}

#[test]
fn early_cc_skim_on_a_mapped_raw_neff_answers_as_the_full_parse_does() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ",\"replica_groups\":[[[0,1,2,3]]]",
        ",\"CCInfo\":{\"replica_groups\":[[[0,1,2]]]}",
        "",
        ",\"src_target_pairs\":[[0,9]],\"replica_groups\":[[[0,1]],[[0]]]",
    ];
    for cc in cases {
        let def = huge_def(cc);
        // Over the size from which the skim splits across two threads
        // (4 MiB, `json::skim::PARALLEL_MIN`).
        assert!(def.len() > 4 << 20);
        let weights = vec![7u8; 3 << 20];
        let mut entries = vec![PackEntry::file("sg00/def.json", def.clone(), 0)];
        // Members after def.json keep the walk busy while the skim runs.
        for i in 0..200 {
            entries.push(PackEntry::file(
                &format!("sg00/weights/w{i}.bin"),
                &weights[..(i * 997) % (3 << 20)],
                0,
            ));
        }
        let path = raw_neff_file(&entries, &dir);
        let full = neff_with(&def, Limits::default()).unwrap();
        accessors::def(&full).unwrap(); // parsed whole: no skim
        let want = (
            format!("{:?}", accessors::has_cc(&full).map_err(|e| e.to_string())),
            format!(
                "{:?}",
                accessors::cc_world_size(&full).map_err(|e| e.to_string())
            ),
        );
        assert_eq!(cc_answers(&path, true), want, "{cc}");
        assert_eq!(cc_answers(&path, false), want, "{cc}");
    }
}

#[test]
fn early_cc_skim_refuses_invalid_json_as_the_full_parse_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = huge_def(",\"replica_groups\":[[[0,1]]]");
    for frac in [4, 2] {
        let at = bad.len() * (frac - 1) / frac;
        let colon = at + bad[at..].iter().position(|&b| b == b':').unwrap();
        bad[colon] = b'#';
        let path = raw_neff_file(&[PackEntry::file("sg00/def.json", bad.clone(), 0)], &dir);
        let (has, ws) = cc_answers(&path, true);
        assert!(ws.contains("invalid JSON in sg00/def.json"), "{ws}");
        assert_eq!((has, ws), cc_answers(&path, false));
    }
}

#[test]
fn early_cc_skim_of_the_wrong_def_json_is_dropped() {
    // Archive order meets sg01/def.json first, but the accessors read the
    // first in sorted order (sg00); and a later duplicate of a name wins.
    let dir = tempfile::tempdir().unwrap();
    let one = huge_def(",\"replica_groups\":[[[0,1]]]");
    let two = huge_def(",\"replica_groups\":[[[0,1,2,3,4,5]]]");
    for (entries, want) in [
        (
            vec![
                PackEntry::file("sg01/def.json", one.clone(), 0),
                PackEntry::file("sg00/def.json", two.clone(), 0),
            ],
            "Ok(6)",
        ),
        (
            vec![
                PackEntry::file("sg00/def.json", one.clone(), 0),
                PackEntry::file("sg00/def.json", two.clone(), 0),
            ],
            "Ok(6)",
        ),
        (
            vec![
                PackEntry::file("x/def.json", two.clone(), 0),
                PackEntry::file("sg00/def.json", one.clone(), 0),
            ],
            "Ok(2)",
        ),
    ] {
        let path = raw_neff_file(&entries, &dir);
        assert_eq!(cc_answers(&path, true).1, want);
        assert_eq!(cc_answers(&path, false).1, want);
    }
}

#[test]
fn early_cc_skim_is_cancelled_when_the_walk_fails_after_def_json() {
    let dir = tempfile::tempdir().unwrap();
    let def = huge_def(",\"replica_groups\":[[[0,1]]]");
    let path = raw_neff_file(
        &[
            PackEntry::file("sg00/def.json", def.clone(), 0),
            PackEntry::file("sg00/after.bin", vec![1u8; 4096], 0),
        ],
        &dir,
    );
    // Corrupt the header after def.json: the walk fails there.
    let mut bytes = std::fs::read(&path).unwrap();
    let hdr = 1024 + 512 + def.len().div_ceil(512) * 512;
    bytes[hdr + 148] ^= 0x55; // checksum field
    std::fs::write(&path, &bytes).unwrap();
    let t = std::time::Instant::now();
    let (_, early) = cc_answers(&path, true);
    assert!(early.contains("bad header checksum"), "{early}");
    assert_eq!(early, cc_answers(&path, false).1);
    assert!(t.elapsed().as_secs() < 5);
}
