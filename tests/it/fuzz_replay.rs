//! Replays every input in `fuzz/corpus/*` and `tests/hostile/` through the
//! fuzz targets' entry points, so a crash once found stays fixed even where
//! cargo-fuzz (nightly features) cannot run.

use crate::common::root;

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "{dir} is empty");
    v
}

fn replay(dir: &str, f: impl Fn(&[u8])) {
    for (name, data) in inputs(dir) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&data)));
        assert!(r.is_ok(), "{name} crashed the target");
    }
}

#[test]
fn whole_neff_corpus_and_hostile_set() {
    replay("fuzz/corpus/whole_neff", neff::fuzzing::whole_neff);
    replay("tests/hostile", neff::fuzzing::whole_neff);
}

#[test]
fn tar_payload_corpus() {
    replay("fuzz/corpus/tar_payload", neff::fuzzing::tar_payload);
}

#[test]
fn json_members_corpus() {
    replay("fuzz/corpus/json_members", neff::fuzzing::json_members);
}

#[test]
fn roundtrip_corpus() {
    replay("fuzz/corpus/roundtrip", neff::fuzzing::roundtrip);
}

#[test]
fn unpack_contained_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    replay("fuzz/corpus/unpack_contained", |d| {
        neff::fuzzing::unpack_contained(d, tmp.path())
    });
}

#[test]
fn json_skim_corpus() {
    replay("fuzz/corpus/json_skim", neff::fuzzing::json_skim);
}
