//! `neff mem` and `neff::mem`: the worked figures of docs/FORMAT.md §7, one
//! fixture per rule, the set total, the page settings and the refusals.

use std::path::PathBuf;

use crate::common::{assert_refused, neff, neff_ok, root};
use neff::mem::{self, Estimate, Total};
use neff::pack::{pack, PackEntry, PackOptions};
use neff::{Neff, Options};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/mem").join(name)
}

fn estimate_file(name: &str) -> Estimate {
    mem::estimate(&Neff::open(fixture(name)).unwrap()).unwrap()
}

/// A raw NEFF in memory: kelf-0 naming sg00, and these members.
fn estimate_of(files: &[(&str, &str)]) -> neff::Result<Estimate> {
    let mut entries = vec![PackEntry::file(
        "kelf-0.json",
        r#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}]}"#,
        0,
    )];
    entries.extend(
        files
            .iter()
            .map(|(n, d)| PackEntry::file(n, d.as_bytes(), 0)),
    );
    let opts = PackOptions::default().no_gzip(true).uuid(Some([1; 16]));
    mem::estimate(&Neff::from_bytes(pack(&entries, &opts).unwrap(), &Options::default()).unwrap())
}

fn one_desc(desc: &str) -> u64 {
    let engine = format!(r#"{{"dma":[{{"queue":"q","desc":[{desc}]}}]}}"#);
    let e = estimate_of(&[
        ("sg00/def.json", r#"{"var":{},"pe":"pe.json"}"#),
        ("sg00/pe.json", &engine),
    ])
    .unwrap();
    let sg = &e.subgraphs[0];
    assert_eq!(sg.dma_rings, sg.dma_descriptors * mem::DMA_DESCRIPTOR_BYTES);
    sg.dma_descriptors
}

#[test]
fn ring_256_to_256_is_34_descriptors() {
    assert_eq!(
        one_desc(r#"{"from":"a","to":"b","from_sizes":[256],"to_sizes":[256]}"#),
        34
    );
}

#[test]
fn ring_64x8_to_64x8_is_48_descriptors() {
    assert_eq!(
        one_desc(r#"{"from":"a","to":"b","from_sizes":[64,8],"to_sizes":[64,8]}"#),
        48
    );
}

#[test]
fn from_arr_parts_sum_and_take_the_parent_to_sizes() {
    // (3+16) + (4+16) for the first part, (5+16) + (2*2+16) for the second.
    let d = r#"{"from":null,"to_sizes":[4,4],"from_arr":[
        {"from":"x","from_sizes":[2,3]},
        {"from":"y","from_sizes":[1,5],"to_sizes":[1,2,2]}]}"#;
    assert_eq!(one_desc(d), 39 + 41);
    // `from` absent counts as null.
    assert_eq!(one_desc(r#"{"from_arr":[{"from_sizes":[1,3]}]}"#), 36);
    // Null `from` with no parts: nothing.
    assert_eq!(one_desc(r#"{"from":null}"#), 0);
}

#[test]
fn missing_sizes_default_to_one() {
    assert_eq!(
        one_desc(r#"{"from":"a","from_sizes":[8,2]}"#),
        2 + 16 + 1 + 16
    );
    assert_eq!(one_desc(r#"{"from":"a"}"#), 34);
}

#[test]
fn page_rounding_688_29_plus_28_07_mib_is_768_mib_and_only_a_64_mib_page_fits() {
    let e = estimate_file("page-688-28-raw.neff");
    assert_eq!(e.subgraphs.len(), 2);
    assert_eq!(
        e.subgraphs[0].scratchpad,
        (688.29 * MIB as f64).round() as u64
    );
    assert_eq!(
        e.subgraphs[1].scratchpad,
        (28.07 * MIB as f64).round() as u64
    );
    assert_eq!(e.scratchpad(64 * MIB).unwrap(), 768 * MIB);
    assert_eq!(e.scratchpad(32 * MIB).unwrap(), 736 * MIB);
    assert_eq!(e.scratchpad(128 * MIB).unwrap(), 896 * MIB);
}

#[test]
fn page_rounding_508_04_plus_18_13_mib_is_576_mib_and_only_a_64_mib_page_fits() {
    let e = estimate_file("page-508-18-raw.neff");
    assert_eq!(e.scratchpad(64 * MIB).unwrap(), 576 * MIB);
    assert_eq!(e.scratchpad(32 * MIB).unwrap(), 544 * MIB);
    assert_eq!(e.scratchpad(128 * MIB).unwrap(), 640 * MIB);
}

#[test]
fn every_rule_fixture_gives_its_documented_figures() {
    let e = estimate_file("mem-rules-gz.neff");
    let names: Vec<&str> = e.subgraphs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sg00", "sg01"]);
    let sg = &e.subgraphs[0];
    let areas: Vec<(&str, u64)> = sg
        .scratchpad_areas
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(areas, [("alt", 5120), ("main", 2500), ("sharded", 2148)]);
    assert_eq!(sg.scratchpad, 9768);
    assert_eq!(sg.code, 686);
    assert_eq!(sg.constants, 1512);
    assert_eq!(sg.dma_descriptors, 34 + 48 + 39 + 41 + 35 + 34 + 36);
    assert_eq!(sg.dma_rings, 267 * 16);
    assert_eq!(sg.missing_engines, ["sg00/dve.json"]);
    let sg1 = &e.subgraphs[1];
    assert_eq!(
        (sg1.scratchpad, sg1.code, sg1.constants, sg1.dma_rings),
        (300, 64, 64, 0)
    );
    let inputs: Vec<(&str, u64)> = e.inputs.iter().map(|i| (i.name.as_str(), i.size)).collect();
    assert_eq!(inputs, [("in0", 128), ("in1", 4096)]);
    assert_eq!(e.input_bytes, 4224);
    assert_eq!(e.persistent().unwrap(), 686 + 1512 + 4272 + 128);
    assert_eq!(e.scratchpad(64 * MIB).unwrap(), 128 * MIB);
}

#[test]
fn set_total_is_the_max_scratchpad_plus_every_persistent_byte_plus_overheads() {
    let es = [
        estimate_file("page-688-28-raw.neff"),
        estimate_file("mem-rules-gz.neff"),
        estimate_file("page-508-18-raw.neff"),
    ];
    let t = Total::of(&es, 64 * MIB).unwrap();
    assert_eq!(t.graph_scratchpads, [768 * MIB, 128 * MIB, 576 * MIB]);
    assert_eq!(t.max_scratchpad, 768 * MIB);
    assert_eq!(t.persistent, 6598);
    assert_eq!(t.runtime_fixed, 72 * MIB);
    assert_eq!(t.runtime_graphs, 3 * 4 * MIB);
    assert_eq!(t.total, 768 * MIB + 6598 + 72 * MIB + 12 * MIB);
}

#[test]
fn page_comes_from_the_flag_then_the_environment_then_64_mib() {
    let none = |_: &str| None;
    assert_eq!(mem::page_bytes(None, none).unwrap(), 64 * MIB);
    let both = |k: &str| match k {
        "NEURON_SCRATCHPAD_PAGE_SIZE" => Some("32".to_string()),
        "NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB" => Some("16".to_string()),
        _ => None,
    };
    assert_eq!(mem::page_bytes(None, both).unwrap(), 32 * MIB);
    let second = |k: &str| (k == "NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB").then(|| "16".to_string());
    assert_eq!(mem::page_bytes(None, second).unwrap(), 16 * MIB);
    assert_eq!(mem::page_bytes(Some(128), both).unwrap(), 128 * MIB);
    assert!(mem::page_bytes(Some(0), none).is_err());
    let bad = |k: &str| (k == "NEURON_SCRATCHPAD_PAGE_SIZE").then(|| "big".to_string());
    assert!(mem::page_bytes(None, bad).is_err());
}

#[test]
fn cli_page_environment_variable_and_flag() {
    let f = fixture("page-688-28-raw.neff");
    let run = |env: Option<(&str, &str)>, args: &[&str]| -> serde_json::Value {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_neff"));
        c.env_remove("NEURON_SCRATCHPAD_PAGE_SIZE")
            .env_remove("NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB");
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let o = c
            .arg("mem")
            .arg("--json")
            .args(args)
            .arg(&f)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let t = run(None, &[]);
    assert_eq!(t["total"]["max_scratchpad"], 768 * MIB);
    let t = run(Some(("NEURON_SCRATCHPAD_PAGE_SIZE", "32")), &[]);
    assert_eq!(t["page_bytes"], 32 * MIB);
    assert_eq!(t["total"]["max_scratchpad"], 736 * MIB);
    let t = run(Some(("NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB", "32")), &[]);
    assert_eq!(t["page_bytes"], 32 * MIB);
    let t = run(
        Some(("NEURON_SCRATCHPAD_PAGE_SIZE", "32")),
        &["--page-mib", "64"],
    );
    assert_eq!(t["total"]["max_scratchpad"], 768 * MIB);
    let o = neff(&["mem", "--page-mib", "0", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

#[test]
fn cli_json_is_one_object_with_per_neff_and_total_figures() {
    let a = fixture("mem-rules-gz.neff");
    let b = fixture("page-508-18-raw.neff");
    let out = neff_ok(&["mem", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.iter().filter(|&&c| c == b'\n').count(), 1);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["neffs"].as_array().unwrap().len(), 2);
    assert_eq!(v["neffs"][0]["subgraphs"][0]["dma_descriptors"], 267);
    assert_eq!(v["neffs"][0]["persistent"], 6598);
    assert_eq!(v["neffs"][1]["scratchpad"], 576 * MIB);
    assert_eq!(v["total"]["graphs"], 2);
    assert_eq!(v["total"]["total"], 576 * MIB + 6598 + 72 * MIB + 8 * MIB);
}

#[test]
fn cli_table_prints_runtime_units() {
    let a = fixture("page-688-28-raw.neff");
    let out = String::from_utf8(neff_ok(&["mem", a.to_str().unwrap()])).unwrap();
    assert!(out.contains("688.290 MB"), "{out}");
    assert!(out.contains("768.000 MB"), "{out}");
    assert!(out.contains("72.000 MB"), "{out}");
}

#[test]
fn def_json_of_the_wrong_shape_is_refused_in_one_line() {
    for (f, what) in [
        ("bad-def-not-object-gz.neff", "def.json is not an object"),
        (
            "bad-var-not-object-gz.neff",
            "var is neither an object nor an array",
        ),
        (
            "bad-virtual-no-size-gz.neff",
            "virtual variable without an integer size",
        ),
        ("bad-engine-key-not-string-gz.neff", "pe is not a string"),
        ("bad-dma-not-array-gz.neff", "dma is not an array"),
        (
            "bad-sizes-not-integers-gz.neff",
            "from_sizes holds a non-integer",
        ),
    ] {
        let p = fixture(f);
        let reason = assert_refused(&["mem", p.to_str().unwrap()], &p);
        assert!(
            reason.contains("wrong shape") && reason.contains(what),
            "{f}: {reason}"
        );
    }
}

#[test]
fn a_neff_without_any_subgraph_is_refused() {
    let e = estimate_of(&[]).unwrap_err();
    // kelf-0 names sg00/def.json, which is missing.
    assert!(e.to_string().contains("sg00/def.json"), "{e}");
}

#[test]
fn huge_sizes_are_refused_not_wrapped() {
    let e = estimate_of(&[(
        "sg00/def.json",
        r#"{"var":{"a":{"type":"virtual","size":18446744073709551615,"backing_variable_off":1}}}"#,
    )])
    .unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    let engine = r#"{"dma":[{"desc":[{"from":"a","from_sizes":[1,4294967296,4294967296]}]}]}"#;
    let e = estimate_of(&[
        ("sg00/def.json", r#"{"pe":"pe.json"}"#),
        ("sg00/pe.json", engine),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}

#[test]
fn every_fixture_is_estimated_or_refused_without_a_panic() {
    for dir in [
        "fixtures/interop",
        "fixtures/acc",
        "fixtures/diff",
        "tests/hostile",
    ] {
        for f in crate::common::neffs(dir) {
            if let Ok(n) = Neff::open(&f) {
                let _ = mem::estimate(&n);
            }
        }
    }
}

fn estimate_raw(files: &[(&str, &str)]) -> neff::Result<Estimate> {
    let entries: Vec<PackEntry> = files
        .iter()
        .map(|(n, d)| PackEntry::file(n, d.as_bytes(), 0))
        .collect();
    let opts = PackOptions::default().no_gzip(true).uuid(Some([3; 16]));
    mem::estimate(&Neff::from_bytes(pack(&entries, &opts).unwrap(), &Options::default()).unwrap())
}

const SG_DEF: &str = r#"{"var":{"v":{"type":"virtual","size":100}}}"#;

fn subgraph_names(e: &Estimate) -> Vec<&str> {
    e.subgraphs.iter().map(|s| s.definition.as_str()).collect()
}

#[test]
fn subgraphs_come_from_every_kelf_descriptor_neff_json_names() {
    // The zoo's layout: one kelf descriptor per core, named by `kelf` on
    // neff.json's nodes (no `attrs`).
    let e = estimate_raw(&[
        (
            "neff.json",
            r#"{"graphs":{"a":{"op":"__kelf","kelf":"kelf-0.json"},"b":{"op":"__kelf","kelf":"kelf-1.json"}}}"#,
        ),
        ("kelf-0.json", r#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}]}"#),
        ("kelf-1.json", r#"{"graphs":[{"definition":"sg01/def.json","name":"sg01"}]}"#),
        ("sg00/def.json", SG_DEF),
        ("sg01/def.json", SG_DEF),
    ])
    .unwrap();
    assert_eq!(subgraph_names(&e), ["sg00/def.json", "sg01/def.json"]);
}

#[test]
fn without_neff_json_the_accessors_kelf_descriptor_lists_the_subgraphs() {
    let e = estimate_raw(&[
        (
            "kelf-0.json",
            r#"{"graphs":[{"definition":"./sg01/def.json"}]}"#,
        ),
        ("sg00/def.json", SG_DEF),
        ("sg01/def.json", SG_DEF),
    ])
    .unwrap();
    assert_eq!(subgraph_names(&e), ["sg01/def.json"]);
    assert_eq!(e.subgraphs[0].name, "sg01");
}

#[test]
fn without_any_kelf_descriptor_every_sg_def_json_is_a_subgraph() {
    let e = estimate_raw(&[
        ("sg01/def.json", SG_DEF),
        ("sg00/def.json", SG_DEF),
        ("sgLnk/sg00/def.json", SG_DEF),
    ])
    .unwrap();
    assert_eq!(subgraph_names(&e), ["sg00/def.json", "sg01/def.json"]);
    assert!(estimate_raw(&[("info.json", "{}")]).is_err());
}

#[test]
fn a_kelf_whose_name_is_not_utf8_is_read_not_a_panic() {
    // `kelf-0\.json` is searched unanchored, so a non-UTF-8 prefix still
    // selects the member: it must be found by its bytes, not a lossy copy.
    let mut kelf = PackEntry::file(
        "x",
        &br#"{"graphs":[{"definition":"sg00/def.json"}]}"#[..],
        0,
    );
    kelf.name = b"\xffkelf-0.json".to_vec();
    let entries = vec![
        kelf,
        PackEntry::file("sg00/def.json", &br#"{"var":{}}"#[..], 0),
    ];
    let opts = PackOptions::default().mtime(Some(0));
    let n = Neff::from_bytes(pack(&entries, &opts).unwrap(), &Options::default()).unwrap();
    let e = mem::estimate(&n).unwrap();
    assert_eq!(e.subgraphs.len(), 1);
}
