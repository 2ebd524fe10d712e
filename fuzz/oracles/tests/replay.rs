//! Replays the differential fuzz corpora (`fuzz/corpus/vs_libarchive`,
//! `fuzz/corpus/vs_tar_crate`) and every archive of the other corpora and
//! fixtures that is a plain tar through both oracles, on stable, in CI; and
//! a peer's test archives (tar-rs's `tests/archives/`, MIT, kept in
//! `fixtures/peer/tar-rs/` and read as `tests/peer_archives.rs` reads them).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Runs `f` on every file of `dir`; every file that panics is a finding,
/// and all of them are reported at once.
fn replay(dir: &str, f: fn(&[u8])) -> usize {
    let all = files(dir);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut findings = Vec::new();
    for p in &all {
        let data = std::fs::read(p).unwrap();
        if let Err(e) = std::panic::catch_unwind(|| f(&data)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            findings.push(format!("{}: {msg}", p.display()));
        }
    }
    std::panic::set_hook(hook);
    assert!(
        findings.is_empty(),
        "{} of {} inputs in {dir}:\n{}",
        findings.len(),
        all.len(),
        findings.join("\n")
    );
    all.len()
}

#[test]
fn libarchive_corpus_reads_as_libarchive_reads_it() {
    assert!(replay("fuzz/corpus/vs_libarchive", neff_oracles::vs_libarchive) > 0);
}

#[test]
fn tar_crate_corpus_reads_as_the_tar_crate_reads_it() {
    assert!(replay("fuzz/corpus/vs_tar_crate", neff_oracles::vs_tar_crate) > 0);
}

#[test]
fn tar_payload_corpus_reads_as_both_oracles_read_it() {
    let n = replay("fuzz/corpus/tar_payload", |d| {
        neff_oracles::vs_libarchive(d);
        neff_oracles::vs_tar_crate(d);
    });
    assert!(n > 0);
}

#[test]
fn peer_archives_read_as_both_oracles_read_them() {
    let n = replay("fixtures/peer/tar-rs", |d| {
        neff_oracles::vs_libarchive(d);
        neff_oracles::vs_tar_crate(d);
    });
    assert!(n >= 19);
}
