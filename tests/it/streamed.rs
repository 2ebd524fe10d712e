//! A scan read while its walk goes on (`neff scan` without `--sorted` or
//! `--shard`): the walk hands each NEFF on as it finds it and each
//! compile-cache entry once it has walked it whole, through a bounded
//! queue, so that the scan keeps nothing per file. What it reports must be
//! what the sorted scan (which lists everything first) reports, and what
//! tools that walk on their own (`find`, `neff cache status`) see.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use crate::common::*;

fn good() -> Vec<u8> {
    std::fs::read(root().join("fixtures/acc/cc-replica-groups-gz.neff")).unwrap()
}

/// A compile cache with every shape an entry takes (a NEFF, a failed
/// and a locked entry, a lock in a subdirectory, a second NEFF deeper, an
/// entry inside an entry, a link to a directory inside the entry and one
/// back above it: a loop), loose NEFFs beside it and a link to a NEFF.
fn odd_tree(t: &Path) -> PathBuf {
    let root = t.join("cache");
    let v = root.join("neuronxcc-2.15.1.0+abc");
    let w = |p: &Path, bytes: &[u8]| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    let neff = good();
    for i in 0..12 {
        let e = v.join(format!("MODULE_{i:020x}+{i:08x}"));
        match i % 4 {
            0 => {
                w(&e.join("model.neff"), &neff);
                w(&e.join("model.done"), b"");
            }
            1 => w(&e.join("model.log"), b"ERROR: it broke\n"),
            2 => {
                w(&e.join("model.neff"), &neff);
                w(&e.join("sub/deeper/compile.lock"), b"");
                w(&e.join("sub/other.neff"), &neff);
            }
            _ => {
                w(&e.join("model.hlo_module.pb.lock"), b"");
                w(&e.join("model.hlo_module.pb"), b"x");
            }
        }
    }
    let first = v.join(format!("MODULE_{:020x}+{:08x}", 0, 0));
    w(
        &first.join("MODULE_aaaaaaaaaaaaaaaaaaaa+bbbbbbbb/model.neff"),
        &neff,
    );
    let second = v.join(format!("MODULE_{:020x}+{:08x}", 2, 2));
    std::os::unix::fs::symlink("sub", second.join("sidelink")).unwrap();
    std::os::unix::fs::symlink("../..", second.join("uplink")).unwrap();
    w(&root.join("loose/a.neff"), &neff);
    w(&root.join("loose/b.neff"), b"not a neff at all");
    std::os::unix::fs::symlink("a.neff", root.join("loose/c.neff")).unwrap();
    std::fs::create_dir_all(root.join("MODULE_cccccccccccccccccccc+dddddddd")).unwrap();
    root
}

fn records(args: &[&str]) -> Vec<Value> {
    let o = neff(args);
    assert!(
        o.status.success(),
        "neff {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_streamed_scan_reports_what_the_sorted_scan_does_under_every_walk_option() {
    let t = tempfile::tempdir().unwrap();
    let root = odd_tree(t.path());
    let root = root.to_str().unwrap();
    for extra in [
        &[][..],
        &["--no-follow"],
        &["-g", "!**/sub/**"],
        &["-g", "**/model.neff"],
        &["-g", "!**/model.done"],
        &["-g", "!**/*.lock"],
        &["--max-depth", "2"],
        &["--max-depth", "3"],
        &["--max-depth", "4"],
    ] {
        let mut args = vec!["scan", "--json", "--no-progress"];
        args.extend_from_slice(extra);
        args.push(root);
        let mut streamed: Vec<String> = records(&args).iter().map(Value::to_string).collect();
        streamed.sort();
        args.insert(1, "--sorted");
        let sorted = records(&args);
        let paths: Vec<&str> = sorted.iter().map(|r| r["path"].as_str().unwrap()).collect();
        assert!(paths.is_sorted(), "{extra:?}: {paths:?}");
        let mut sorted: Vec<String> = sorted.iter().map(Value::to_string).collect();
        sorted.sort();
        assert_eq!(streamed, sorted, "{extra:?}");
        assert!(!streamed.is_empty());
    }
}

#[test]
fn a_streamed_scan_finds_the_files_find_does_and_judges_entries_as_cache_status_does() {
    let t = tempfile::tempdir().unwrap();
    let root = odd_tree(t.path());
    let got = records(&["scan", "--json", "--no-progress", root.to_str().unwrap()]);
    // find -L: every *.neff the links lead to, the loop reported once.
    let found = std::process::Command::new("find")
        .arg("-L")
        .arg(&root)
        .args(["-name", "*.neff", "-type", "f"])
        .output()
        .unwrap();
    let mut want: Vec<String> = String::from_utf8(found.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    want.sort();
    let mut neffs: Vec<String> = got
        .iter()
        .filter(|r| r["path"].as_str().unwrap().ends_with(".neff"))
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    neffs.sort();
    assert_eq!(neffs, want);
    let loops: Vec<&Value> = got
        .iter()
        .filter(|r| {
            r["error"]
                .as_str()
                .is_some_and(|e| e.contains("File system loop found"))
        })
        .collect();
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert!(
        loops[0]["error"]
            .as_str()
            .unwrap()
            .ends_with(&format!("points to an ancestor {}", root.display())),
        "the ancestor named as the walk reached it: {}",
        loops[0]["error"]
    );

    // Every entry's state as `cache status` (its own listing) judges it.
    // (It exits non-zero: some entries are failed.)
    let status = neff(&["cache", "status", "--json", root.to_str().unwrap()]);
    let status: Vec<Value> = String::from_utf8(status.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let judged: BTreeMap<String, String> = status
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut compared = 0;
    for r in &got {
        let Some(state) = r["cache_state"].as_str() else {
            continue;
        };
        let p = Path::new(r["path"].as_str().unwrap());
        let entry = if p.extension().is_some_and(|x| x == "neff") {
            p.parent().unwrap()
        } else {
            p
        };
        if let Some(s) = judged.get(entry.to_str().unwrap()) {
            assert_eq!(state, s, "{}", entry.display());
            compared += 1;
        }
    }
    assert!(compared >= 10, "{compared} entries compared");
}

#[test]
fn the_walk_is_never_more_than_its_queue_ahead_of_the_readers() {
    // 3,000 files: were the tree listed whole first, every one of them
    // would be counted before the first record is made.
    let t = tempfile::tempdir().unwrap();
    for d in 0..30 {
        let dir = t.path().join(format!("d{d:02}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("{f:03}.neff")), b"not a neff").unwrap();
        }
    }
    let jobs = 2;
    let listed = AtomicUsize::new(0);
    let emitted = AtomicUsize::new(0);
    let worst = Mutex::new(0usize);
    let opts = neff::scan::ScanOptions::default().jobs(jobs);
    neff::scan::scan_listing(
        &[t.path().to_path_buf()],
        &opts,
        &|n| {
            listed.fetch_add(n, Ordering::SeqCst);
        },
        &|r| {
            assert!(!r.ok);
            let done = emitted.fetch_add(1, Ordering::SeqCst) + 1;
            let ahead = listed.load(Ordering::SeqCst).saturating_sub(done);
            let mut w = worst.lock().unwrap();
            *w = (*w).max(ahead);
        },
    )
    .unwrap();
    assert_eq!(emitted.load(Ordering::SeqCst), 3000);
    assert_eq!(listed.load(Ordering::SeqCst), 3000);
    // The queue holds 1,024 finds (16 batches of at most 64); each reader
    // holds a batch, and each of the walk's threads (ignore's default: one
    // a core, at most 12) a batch it counted before its send blocked; one
    // more for a reader between its count and its record (the counters are
    // read apart).
    let walkers = std::thread::available_parallelism().map_or(1, |n| n.get().min(12));
    let worst = *worst.lock().unwrap();
    assert!(
        worst <= 1024 + (jobs + walkers) * 64 + 1,
        "the walk got {worst} ahead"
    );
}

#[test]
fn sorted_records_come_in_path_order_with_the_walks_errors_among_them() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("z");
    for name in ["a/x.neff", "m/x.neff", "n-1.neff", "z/x.neff"] {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, good()).unwrap();
    }
    // A loop in the middle of the order: its error record sorts there.
    std::os::unix::fs::symlink("..", root.join("m/back")).unwrap();
    let got = records(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        root.to_str().unwrap(),
    ]);
    let paths: Vec<String> = got
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    let mut want = paths.clone();
    want.sort();
    assert_eq!(paths, want);
    // Byte order, not component order: "n-1.neff" before "n/…" would be
    // the same either way, so check the one pair that differs.
    let loop_at = paths.iter().position(|p| p.ends_with("m/back")).unwrap();
    assert!(paths[loop_at - 1].ends_with("a/x.neff"), "{paths:?}");
    assert!(paths[loop_at + 1].ends_with("m/x.neff"), "{paths:?}");
    assert_eq!(got.len(), 5);
}

#[test]
fn roots_of_which_one_holds_another_are_read_once_each_file() {
    let t = tempfile::tempdir().unwrap();
    let root = odd_tree(t.path());
    let r = root.to_str().unwrap();
    let sub = root.join("loose");
    let one = sub.join("a.neff");
    let once = records(&["scan", "--json", "--no-progress", "--no-follow", r]);
    let twice = records(&[
        "scan",
        "--json",
        "--no-progress",
        "--no-follow",
        one.to_str().unwrap(),
        r,
        sub.to_str().unwrap(),
    ]);
    let paths = |v: &[Value]| {
        let mut p: Vec<String> = v.iter().map(|r| r["path"].to_string()).collect();
        p.sort();
        p
    };
    assert_eq!(paths(&twice), paths(&once));
    // Disjoint roots are streamed, each read once too.
    let v = root.join("neuronxcc-2.15.1.0+abc");
    let apart = records(&[
        "scan",
        "--json",
        "--no-progress",
        "--no-follow",
        sub.to_str().unwrap(),
        v.to_str().unwrap(),
    ]);
    assert_eq!(
        paths(&apart).len(),
        once.len() - 1,
        "all but the bare entry at the root"
    );
}

/// The catalogue's rows as (key, ok, cache state), in key order. (Not
/// the path: of two paths to one file, a row keeps the one read last.)
fn rows(db: &Path) -> Vec<(String, bool, Option<String>)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare("SELECT key, ok, cache_state FROM neffs ORDER BY key")
        .unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// `neff scan --index DB [--sorted] EXTRA ROOT`: its records (as sorted
/// JSON lines) and how many came from the index.
fn indexed(db: &Path, sorted: bool, extra: &[&str], root: &Path) -> (Vec<String>, usize) {
    let mut args = vec!["scan", "--json", "--no-progress", "--index"];
    args.push(db.to_str().unwrap());
    if sorted {
        args.push("--sorted");
    }
    args.extend_from_slice(extra);
    args.push(root.to_str().unwrap());
    let o = neff(&args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let hits = err
        .split(", ")
        .find_map(|part| part.trim_end().strip_suffix(" from the index"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{args:?}: no count from the index in {err}"));
    let mut lines: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    (lines, hits)
}

#[test]
fn an_indexed_scan_read_while_walking_keys_answers_and_retires_rows_as_a_listed_one_does() {
    let t = tempfile::tempdir().unwrap();
    let options: [&[&str]; 5] = [
        &[],
        &["--no-follow"],
        &["-g", "!**/sub/**"],
        &["--max-depth", "3"],
        &["--max-depth", "4"],
    ];
    for (i, extra) in options.into_iter().enumerate() {
        let root = odd_tree(&t.path().join(i.to_string()));
        let streamed = t.path().join(format!("streamed-{i}.db"));
        // `--sorted` lists the whole walk first.
        let listed = t.path().join(format!("listed-{i}.db"));
        let (a, _) = indexed(&streamed, false, extra, &root);
        let (b, _) = indexed(&listed, true, extra, &root);
        assert_eq!(a, b, "{extra:?}: cold");
        assert!(!rows(&streamed).is_empty(), "{extra:?}");
        assert_eq!(rows(&streamed), rows(&listed), "{extra:?}: cold");
        // Warm, every row answers (a file seen through a link too, by its
        // real path's row: more answers than rows).
        let (a2, hits) = indexed(&streamed, false, extra, &root);
        assert_eq!(a2, a, "{extra:?}: warm");
        assert_eq!(hits, indexed(&listed, true, extra, &root).1, "{extra:?}");
        assert!(hits >= rows(&streamed).len(), "{extra:?}: warm, {hits}");
        // Gone: a NEFF, an entry whole, a link's target, a NEFF a link
        // leads to: the same rows retired by both.
        let v = root.join("neuronxcc-2.15.1.0+abc");
        let entry = |n: u32| v.join(format!("MODULE_{n:020x}+{n:08x}"));
        std::fs::remove_file(entry(0).join("model.neff")).unwrap();
        std::fs::remove_dir_all(entry(1)).unwrap();
        std::fs::remove_file(root.join("loose/a.neff")).unwrap();
        std::fs::remove_file(entry(2).join("sub/other.neff")).unwrap();
        let before = rows(&streamed).len();
        let (a3, _) = indexed(&streamed, false, extra, &root);
        let (b3, _) = indexed(&listed, true, extra, &root);
        assert_eq!(a3, b3, "{extra:?}: after removals");
        assert_eq!(rows(&streamed), rows(&listed), "{extra:?}: after removals");
        assert!(rows(&streamed).len() < before, "{extra:?}: nothing retired");
    }
}
