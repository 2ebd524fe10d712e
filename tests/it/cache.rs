//! `neff cache status` and `neff cache prune` on a compile cache laid out
//! as the Neuron compiler wrapper writes it: two compiler versions, entries
//! of every state (docs/CLI.md, "neff cache").

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

const STATES: [&str; 6] = ["ok", "corrupt", "failed", "locked", "incomplete", "empty"];
pub(crate) const VERSIONS: [&str; 2] = ["2.15.100.0+2d4f85be", "2.15.128.0+56dc5a86"];

/// Writes four entries of each state under each version (48 in all):
/// {dir: state}. The remote tests upload one to their S3 server.
pub(crate) fn cache(root: &Path) -> Vec<(PathBuf, &'static str)> {
    let good = std::fs::read(root_path("fixtures/acc/cc-replica-groups-gz.neff")).unwrap();
    let mut made = Vec::new();
    for (v, version) in VERSIONS.iter().enumerate() {
        for (s, state) in STATES.iter().enumerate() {
            for k in 0..4 {
                let d = root
                    .join(format!("neuronxcc-{version}"))
                    .join(format!("MODULE_{v}{s}{k}+{k:08x}"));
                std::fs::create_dir_all(&d).unwrap();
                let w = |name: &str, bytes: &[u8]| std::fs::write(d.join(name), bytes).unwrap();
                w("compile_flags.json", b"[\"-O2\"]");
                match *state {
                    "ok" => {
                        w("model.neff", &good);
                        w("model.done", b"");
                    }
                    "corrupt" => {
                        w("model.neff", &good[..1500]);
                        w("model.done", b"");
                    }
                    "failed" => w("model.log", b"ERROR 7 [neuronx-cc]: out of memory\n"),
                    "locked" => w("model.hlo_module.pb.lock", b""),
                    "incomplete" => w("model.neff", &good[..2000]),
                    _ => w("model.hlo_module.pb", &[1u8; 100]),
                }
                made.push((d, *state));
            }
        }
    }
    made
}

fn root_path(rel: &str) -> PathBuf {
    root().join(rel)
}

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn cache_status_gives_every_entry_its_state_and_sums_each_version() {
    let tmp = tempfile::tempdir().unwrap();
    let made = cache(tmp.path());
    let root = tmp.path().to_str().unwrap();
    let o = neff(&["cache", "status", root, "--json"]);
    assert_eq!(o.status.code(), Some(1), "some entry is not ok");
    let records = ndjson(&o.stdout);
    assert_eq!(records.len(), made.len());
    for (dir, state) in &made {
        let path = dir.to_str().unwrap();
        let r = records.iter().find(|r| r["path"] == path).unwrap();
        assert_eq!(r["state"], *state, "{path}");
        assert!(r["bytes"].as_u64().unwrap() > 0);
        if *state == "ok" {
            assert_eq!(
                (&r["arch"], &r["cc_world_size"]),
                (&Value::from("cayman"), &Value::from(2))
            );
        } else if *state != "empty" {
            assert!(r["reason"].is_string(), "{r}");
        }
    }
    let text = neff(&["cache", "status", root]);
    let text = String::from_utf8(text.stdout).unwrap();
    for v in VERSIONS {
        assert!(
            text.contains(&format!("neuronxcc-{v}: 24 entries")),
            "{text}"
        );
    }
    for s in STATES {
        assert!(
            text.contains(&format!("\n  {s:<11}      4 ")),
            "{s}: {text}"
        );
    }
    assert!(
        text.contains("ERROR 7 [neuronx-cc]: out of memory"),
        "{text}"
    );
    // Every entry ok: exit 0; a root that is not there: exit 3.
    let ok_only = tempfile::tempdir().unwrap();
    let e = ok_only.path().join("neuronxcc-2.15.0.0+1/MODULE_1+1");
    std::fs::create_dir_all(&e).unwrap();
    std::fs::copy(
        root_path("fixtures/acc/cc-replica-groups-gz.neff"),
        e.join("model.neff"),
    )
    .unwrap();
    std::fs::write(e.join("model.done"), b"").unwrap();
    let o = neff(&["cache", "status", ok_only.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let o = neff(&["cache", "status", "/nonexistent/cache"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("neff: /nonexistent/cache: "));
}

#[test]
fn cache_prune_failed_removes_nothing_until_applied_then_exactly_the_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let made = cache(tmp.path());
    let root = tmp.path().to_str().unwrap();
    let o = neff(&[
        "cache",
        "prune",
        root,
        "--failed",
        "--json",
        "--min-age",
        "0s",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let plan = ndjson(&o.stdout);
    assert_eq!(plan.len(), 8);
    assert!(plan
        .iter()
        .all(|r| r["state"] == "failed" && r["removed"] == false));
    assert!(
        made.iter().all(|(d, _)| d.exists()),
        "a dry run removed something"
    );
    let o = neff(&[
        "cache",
        "prune",
        root,
        "--failed",
        "--apply",
        "--min-age",
        "0s",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("removed ")).count(),
        8,
        "{text}"
    );
    for (d, state) in &made {
        assert_eq!(d.exists(), *state != "failed", "{}", d.display());
    }
    // No selector: a usage error, nothing touched.
    assert_eq!(neff(&["cache", "prune", root]).status.code(), Some(2));
    // The locks here are fresh: --keep-versions 1 leaves them.
    let o = neff(&["cache", "prune", root, "--keep-versions", "1", "--json"]);
    let plan = ndjson(&o.stdout);
    assert!(plan
        .iter()
        .all(|r| r["compiler"] == VERSIONS[0] && r["state"] != "locked"));
    assert_eq!(plan.len(), 24 - 4 - 4);
}

#[test]
fn a_scan_of_a_cache_gives_every_entry_its_state_neff_or_not() {
    let tmp = tempfile::tempdir().unwrap();
    let made = cache(tmp.path());
    let root = tmp.path().to_str().unwrap();
    let o = neff(&["scan", "--json", "--no-progress", root]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let records = ndjson(&o.stdout);
    assert_eq!(records.len(), made.len(), "one record per entry");
    for (dir, state) in &made {
        let neff = dir.join("model.neff");
        let with_neff = neff.exists();
        let path = if with_neff { &neff } else { dir };
        let r = records
            .iter()
            .find(|r| r["path"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("no record for {}", path.display()));
        assert_eq!(r["cache_state"], *state, "{r}");
        assert!(r["compiler"]
            .as_str()
            .is_some_and(|c| VERSIONS.contains(&c)));
        assert_eq!(r["ok"], *state == "ok", "{r}");
        if *state == "failed" {
            assert_eq!(r["cache_reason"], "ERROR 7 [neuronx-cc]: out of memory");
        }
    }
}
