//! Every cache layout of today's SDK, built from scratch and judged
//! through the `neff` binary: a vLLM / LNL entry by the NEFF its loader
//! reads (`graph_<key>.neff` before `graph.neff`) and the size its
//! `.compilation_complete` gives; `nki/` and `<key>.trash.<pid>` reported
//! for what they are; names that are no key `unknown`, never invisible;
//! a root holding no cache, and a prune of `/` or a home directory,
//! refused; versions that overflow or cannot be ordered never pruned as
//! old (docs/GUIDE.md, "Compile caches of every compiler").

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

fn key(c: char) -> String {
    std::iter::repeat_n(c, 32).collect()
}

/// A finished vLLM entry `k` under `root`: its HLO, metadata, the NEFFs
/// named, and `.compilation_complete` holding `marker`.
fn entry(root: &Path, k: &str, neffs: &[(&str, &[u8])], marker: &str) -> PathBuf {
    let d = root.join(k);
    put(&d, "graph.hlo", &[1; 100]);
    put(&d, ".artifact_metadata_v0.json", b"{}");
    for (n, b) in neffs {
        put(&d, n, b);
    }
    put(&d, ".compilation_complete", marker.as_bytes());
    d
}

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The record of the entry at `dir` in a `status --json`.
fn record(out: &[u8], dir: &Path) -> Value {
    ndjson(out)
        .into_iter()
        .find(|r| Path::new(r["path"].as_str().unwrap()) == dir)
        .unwrap_or_else(|| panic!("{} not listed", dir.display()))
}

fn status_json(root: &Path) -> Output {
    neff(&["cache", "status", root.to_str().unwrap(), "--json"])
}

fn run_with_home(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap()
}

#[test]
fn a_vllm_entry_is_judged_by_the_neff_its_loader_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let good = good_neff();
    let (a, b) = (key('a'), key('b'));
    // The loader reads graph_<key>.neff: a junk graph.neff beside it is
    // said, and leaves the entry ok.
    let kept = entry(
        root,
        &a,
        &[(&format!("graph_{a}.neff"), &good), ("graph.neff", b"junk")],
        "",
    );
    // A junk graph_<key>.neff is what the loader reads, whatever
    // graph.neff beside it is.
    let bad = entry(
        root,
        &b,
        &[(&format!("graph_{b}.neff"), b"junk"), ("graph.neff", &good)],
        "",
    );
    let o = status_json(root);
    assert_eq!(o.status.code(), Some(1));
    let k = record(&o.stdout, &kept);
    assert_eq!(k["state"], "ok");
    assert!(k["reason"]
        .as_str()
        .unwrap()
        .contains("graph.neff beside it is refused"));
    assert!(k["arch"].is_string());
    let r = record(&o.stdout, &bad);
    assert_eq!(r["state"], "corrupt");
    assert!(r["reason"]
        .as_str()
        .unwrap()
        .starts_with(&format!("graph_{b}.neff")));
    let table =
        String::from_utf8(neff(&["cache", "status", root.to_str().unwrap()]).stdout).unwrap();
    assert!(
        table.contains("notes:") && table.contains("beside it is refused"),
        "{table}"
    );
    let args = [
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--corrupt",
        "--min-age",
        "0s",
        "--apply",
    ];
    let _ = neff(&args);
    assert!(kept.join(format!("graph_{a}.neff")).exists());
    assert!(!bad.exists());
    // An older build's entry, graph.neff alone, is read by it.
    let c = key('c');
    let old = entry(root, &c, &[("graph.neff", &good)], "");
    assert_eq!(record(&status_json(root).stdout, &old)["state"], "ok");
}

#[test]
fn the_size_the_marker_gives_is_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let good = good_neff();
    let n = good.len();
    let cases = [
        (
            '1',
            format!("completed:1712345678.5\nneff_size:{n}\ncompleted_by_rank:0\n"),
            "ok",
        ),
        (
            '2',
            format!("completed:1\nneff_size:{}\n", n + 1),
            "corrupt",
        ),
        ('3', format!("neff_size:{}\n", "9".repeat(300)), "corrupt"),
        ('4', "neff_size:-5\n".into(), "unknown"),
        (
            '5',
            format!("neff_size:{n}\nneff_size:{}\n", n - 1),
            "unknown",
        ),
        ('6', "\u{0}\u{1}garbage without a size\n".into(), "ok"),
        ('7', format!("neff_size:000{n}\n"), "ok"),
    ];
    let dirs: Vec<_> = cases
        .iter()
        .map(|(c, m, _)| {
            let k = key(*c);
            entry(root, &k, &[(&format!("graph_{k}.neff"), &good)], m)
        })
        .collect();
    let out = status_json(root).stdout;
    for (d, (_, m, want)) in dirs.iter().zip(&cases) {
        let r = record(&out, d);
        assert_eq!(r["state"], *want, "marker {m:?}: {r}");
    }
    assert!(record(&out, &dirs[1])["reason"]
        .as_str()
        .unwrap()
        .contains(&format!("neff_size:{}", n + 1)));
}

#[test]
fn nki_trash_and_names_that_are_no_key_are_reported_for_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let a = key('a');
    entry(root, &a, &[(&format!("graph_{a}.neff"), &good_neff())], "");
    put(&root.join("nki"), "0123.json", b"{}");
    let dead = root.join(format!("{a}.trash.999999999"));
    put(&dead, "graph.hlo", &[1; 10]);
    let live = root.join(format!("{a}.trash.{}", std::process::id()));
    put(&live, "graph.hlo", &[1; 10]);
    let short = root.join(&a[..31]);
    put(&short, "graph.hlo", &[1; 10]);
    let upper = root.join(key('A'));
    put(&upper, "graph.hlo", &[1; 10]);
    let o = status_json(root);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(record(&o.stdout, &dead)["state"], "failed");
    assert_eq!(record(&o.stdout, &live)["state"], "locked");
    for d in [&short, &upper] {
        let r = record(&o.stdout, d);
        assert_eq!(r["state"], "unknown");
        assert!(r["reason"]
            .as_str()
            .unwrap()
            .contains("not a vLLM cache key"));
    }
    assert!(!ndjson(&o.stdout)
        .iter()
        .any(|r| r["path"].as_str().unwrap().ends_with("/nki")));
    let table =
        String::from_utf8(neff(&["cache", "status", root.to_str().unwrap()]).stdout).unwrap();
    assert!(table.contains("NKI kernel cache"), "{table}");
    assert!(table.contains(&format!("{a}.trash.999999999")), "{table}");
    // Every selector: the trash of a dead process goes, nothing else.
    let args = [
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--failed",
        "--corrupt",
        "--locked-older-than",
        "0s",
        "--incomplete-older-than",
        "0s",
        "--min-age",
        "0s",
        "--apply",
    ];
    let _ = neff(&args);
    assert!(!dead.exists());
    for d in [&live, &short, &upper, &root.join("nki"), &root.join(&a)] {
        assert!(d.exists(), "{} removed", d.display());
    }
}

#[test]
fn a_root_with_no_cache_is_said_so_and_prune_refuses_root_and_home() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    put(&home, ".bashrc", b"x");
    put(&home.join("projects/src"), "main.rs", b"fn main() {}");
    for cmd in [
        vec!["cache", "status", home.to_str().unwrap()],
        vec!["cache", "prune", home.to_str().unwrap(), "--failed"],
    ] {
        let o = neff(&cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        assert!(o.stdout.is_empty());
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("holds no compile cache"), "{err}");
    }
    // A home directory that holds a cache's entries is still no root to
    // prune, however it is spelled; nor is /.
    let m = home.join("neuronxcc-2.15.0+a/MODULE_1+a");
    put(&m, "model.log", b"ERROR bad\n");
    let dotted = format!("{}/.", home.display());
    for root in [home.to_str().unwrap(), &dotted, "/"] {
        for apply in [false, true] {
            let mut args = vec!["cache", "prune", root, "--failed", "--min-age", "0s"];
            if apply {
                args.push("--apply");
            }
            let o = run_with_home(&home, &args);
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            let err = String::from_utf8(o.stderr).unwrap();
            assert!(err.contains("prune is refused here"), "{err}");
        }
    }
    assert!(m.exists());
    // The same cache one level down prunes.
    let o = run_with_home(
        &home,
        &[
            "cache",
            "prune",
            m.parent().unwrap().to_str().unwrap(),
            "--failed",
            "--min-age",
            "0s",
            "--apply",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(!m.exists());
}

#[test]
fn versions_that_overflow_or_cannot_be_ordered_are_never_pruned_as_old() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let big = root.join("neuronxcc-2.99999999999999999999.0+a/MODULE_1+a");
    let nightly = root.join("neuronxcc-nightly/MODULE_2+a");
    let old = root.join("neuronxcc-2.21.0.0+b/MODULE_3+a");
    for d in [&big, &nightly, &old] {
        put(d, "model.log", b"ERROR bad\n");
    }
    let o = neff(&[
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--keep-versions",
        "1",
        "--json",
    ]);
    let picked: Vec<_> = ndjson(&o.stdout)
        .into_iter()
        .map(|r| PathBuf::from(r["path"].as_str().unwrap()))
        .collect();
    assert_eq!(picked, vec![old.clone()]);
    // Newest first: the huge release, the others numbered, then nightly.
    let table =
        String::from_utf8(neff(&["cache", "status", root.to_str().unwrap()]).stdout).unwrap();
    let at = |s: &str| table.find(s).unwrap();
    assert!(
        at("neuronxcc-2.9999") < at("neuronxcc-2.21")
            && at("neuronxcc-2.21") < at("neuronxcc-nightly:")
    );
}

#[test]
fn an_empty_entry_is_listed_with_the_others_not_ok() {
    let tmp = tempfile::tempdir().unwrap();
    let e = tmp.path().join("neuronxcc-2.15.0+a/MODULE_1+a");
    fs::create_dir_all(&e).unwrap();
    let o = neff(&["cache", "status", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.contains("not ok:") && table.contains("  empty      "),
        "{table}"
    );
}
