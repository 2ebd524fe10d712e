//! `neff scan` over a generated zoo with known contents, bad files of every
//! kind, nested directories, a symlink loop and unreadable files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::*;
use neff::pack::{pack, PackEntry, PackOptions};

/// What a generated NEFF should scan as.
struct Want {
    arch: &'static str,
    cores: u64,
    world: Option<u64>,
    aliases: usize,
    must: bool,
    inputs: (u64, u64),
}

fn make_neff(i: usize) -> (Vec<u8>, Want) {
    let arch = ["sunda", "cayman", "mariana"][i % 3];
    let cores = 1 + (i % 2) as u64;
    let world = match i % 4 {
        0 => None,
        1 => Some(2 + (i % 5) as u64),
        2 => Some(8),
        _ => Some(32),
    };
    let cc = match (i % 4, world) {
        (1, Some(w)) => {
            let ranks: Vec<String> = (0..w).map(|r| r.to_string()).collect();
            format!(",\"replica_groups\":[[[{}]]]", ranks.join(","))
        }
        (2, _) => ",\"src_target_pairs\":[[0,7],[7,3]]".to_string(),
        (3, _) => ",\"#rank_world_size\":32".to_string(),
        _ => String::new(),
    };
    let n_in = 1 + (i % 7) as u64;
    let vars: Vec<String> = (0..n_in)
        .map(|k| {
            format!(
                "\"in{k}\":{{\"var_id\":{k},\"type\":\"input\",\"size\":{}}}",
                100 * (k + 1)
            )
        })
        .chain(std::iter::once(
            "\"out\":{\"var_id\":99,\"type\":\"output\",\"size\":8}".to_string(),
        ))
        .collect();
    let def = format!("{{\"var\":{{{}}}{cc}}}", vars.join(","));
    let aliases = i % 3;
    let must = i % 5 == 0 && aliases > 0;
    let am: Vec<String> = (0..aliases)
        .map(|k| {
            format!(
                "{{\"input_name\":\"in{k}\",\"output_name\":\"out{k}\",\"must_alias\":{}}}",
                must && k == 0
            )
        })
        .collect();
    let graphs: Vec<String> = (0..cores)
        .map(|c| format!("{{\"name\":\"sg0{c}\"}}"))
        .collect();
    let entries = vec![
        PackEntry::file("info.json", format!("{{\"i\":{i}}}").into_bytes(), 0),
        PackEntry::file(
            "kelf-0.json",
            format!(
                "{{\"graphs\":[{}],\"target\":\"{arch}\"}}",
                graphs.join(",")
            )
            .into_bytes(),
            0,
        ),
        PackEntry::file("sg00/def.json", def.into_bytes(), 0),
        PackEntry::file("sg00/pe.bin", vec![i as u8; 4096 + i], 0),
        PackEntry::file(
            "sg00/tensor_map.json",
            format!("{{\"alias_map\":[{}]}}", am.join(",")).into_bytes(),
            0,
        ),
    ];
    let opts = PackOptions::default()
        .no_gzip(i % 10 == 0)
        .mtime(Some(0))
        .name(format!("m{i}"));
    let want = Want {
        arch,
        cores,
        world,
        aliases,
        must,
        inputs: (n_in, 100 * n_in * (n_in + 1) / 2),
    };
    (pack(&entries, &opts).unwrap(), want)
}

fn scan_json(args: &[&str]) -> (Vec<serde_json::Value>, String, Option<i32>) {
    let o = neff(&[&["scan", "--json", "--no-progress"], args].concat());
    let recs = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (
        recs,
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code(),
    )
}

#[test]
fn scan_reports_every_neff_right_and_survives_every_bad_file() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = tmp.path().join("zoo");
    let mut wants = BTreeMap::new();
    for i in 0..240 {
        let (bytes, want) = make_neff(i);
        let dir = zoo
            .join(format!("c{}", i % 4))
            .join(format!("MODULE_{i:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("model.neff");
        std::fs::write(&p, bytes).unwrap();
        if i % 2 == 0 {
            std::fs::write(dir.join("model.done"), b"").unwrap();
        }
        wants.insert(p.to_str().unwrap().to_string(), (i, want));
    }
    // Every hostile file, nested deeper.
    let bad = zoo.join("bad/nested/deeper");
    std::fs::create_dir_all(&bad).unwrap();
    let mut bad_names = BTreeSet::new();
    for f in neffs("tests/hostile") {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        std::fs::copy(&f, bad.join(&name)).unwrap();
        bad_names.insert(bad.join(&name).to_str().unwrap().to_string());
    }
    // A symlink loop, a dangling symlink, a file we may not be able to read.
    std::os::unix::fs::symlink("..", zoo.join("bad/loop")).unwrap();
    std::os::unix::fs::symlink("/nonexistent.neff", zoo.join("bad/vanished.neff")).unwrap();
    let locked = zoo.join("bad/locked.neff");
    std::fs::copy(root().join("fixtures/acc/kelf-0-gz.neff"), &locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let privileged = std::fs::read(&locked).is_ok();

    let (recs, err, code) = scan_json(&["--jobs", "2", zoo.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("neff scan: ") && err.contains("NEFFs/s"),
        "summary line: {err}"
    );
    let by_path: BTreeMap<String, &serde_json::Value> = recs
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r))
        .collect();
    every_good_record_says_what_its_neff_holds(&wants, &by_path);
    every_hostile_record_says_how_it_is_refused(&bad_names, &by_path);
    let vanished = zoo.join("bad/vanished.neff");
    let r = by_path
        .get(vanished.to_str().unwrap())
        .expect("a record for the dangling symlink");
    assert_eq!(r["ok"], false);
    let r = by_path
        .get(locked.to_str().unwrap())
        .expect("a record for the locked file");
    assert_eq!(r["ok"], privileged, "{r}");
    // The loop is walked once, not forever: every NEFF appears once.
    assert_eq!(by_path.len(), recs.len(), "a file was reported twice");
}

/// Each good NEFF's record: what it was made with.
fn every_good_record_says_what_its_neff_holds(
    wants: &BTreeMap<String, (usize, Want)>,
    by_path: &BTreeMap<String, &serde_json::Value>,
) {
    for (path, (i, w)) in wants {
        let r = by_path
            .get(path)
            .unwrap_or_else(|| panic!("no record for {path}"));
        let world_ok = w
            .world
            .map_or(r["cc_world_size"].is_null(), |n| r["cc_world_size"] == n);
        assert!(r["ok"] == true && world_ok, "{path}: {r}");
        assert_eq!(r["arch"], w.arch, "{path}");
        assert_eq!(r["num_cores"], w.cores, "{path}");
        assert_eq!(r["aliases"], w.aliases, "{path}");
        assert_eq!(r["must_alias"], w.must, "{path}");
        assert_eq!(r["inputs"]["count"], w.inputs.0, "{path}");
        assert_eq!(r["inputs"]["bytes"], w.inputs.1, "{path}");
        assert_eq!(r["outputs"]["count"], 1);
        assert_eq!(r["compressed"], i % 10 != 0);
        assert_eq!(r["cache_key"], format!("{i:04}"));
        // (No directory names a compiler: a NEFF without model.done is
        // not judged.)
        let state = if i % 2 == 0 { "ok" } else { "unknown" };
        assert_eq!(r["cache_state"], state, "{path}");
        assert_eq!(r["name"], format!("m{i}"));
        assert!(r["hash_ok"].is_null(), "hash_ok is null without --verify");
        for k in [
            "error",
            "bytes",
            "pkg_version",
            "members",
            "uuid",
            "data_size",
            "outputs",
            "neff_features",
            "feature_bits",
        ] {
            assert!(r.get(k).is_some(), "{path}: no {k}");
        }
    }
}

/// Each hostile file's record: what the hostile manifest says refuses it.
fn every_hostile_record_says_how_it_is_refused(
    bad_names: &BTreeSet<String>,
    by_path: &BTreeMap<String, &serde_json::Value>,
) {
    // What the hostile manifest says each file is refused by decides what
    // its record must say: a file `ls` refuses is not a readable NEFF
    // (`ok: false`); a file only `get` refuses is readable, and the question
    // refused shows in `errors` with `ok: true`.
    let manifest = std::fs::read_to_string(root().join("tests/hostile/MANIFEST.tsv")).unwrap();
    let command_of: BTreeMap<&str, &str> = manifest
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?, f.next()?))
        })
        .collect();
    let mut refused_questions = 0;
    for b in bad_names {
        let r = by_path
            .get(b)
            .unwrap_or_else(|| panic!("no record for {b}"));
        let file = Path::new(b).file_name().unwrap().to_str().unwrap();
        let command = command_of.get(file).copied().unwrap_or("");
        if command.contains("--max-") || command == "verify" || command == "unpack" {
            // Readable under the default caps (bombs, hash mismatches,
            // unpack escapes): a scan reads them as NEFFs.
            assert_eq!(r["ok"], true, "{b}: {r}");
        } else if command.starts_with("get") {
            assert_eq!(
                r["ok"], true,
                "{b}: a refused question is not a broken file: {r}"
            );
            assert!(r["error"].is_null(), "{b}: {r}");
            let errors = r["errors"].as_object().expect("errors is an object");
            assert!(!errors.is_empty(), "{b}: the refusal is in errors: {r}");
            refused_questions += 1;
        } else {
            assert_eq!(r["ok"], false, "{b}: {r}");
            assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{b}");
        }
    }
    let get_rows = command_of.values().filter(|c| c.starts_with("get")).count();
    assert!(get_rows >= 4, "the manifest has its get cases");
    assert_eq!(refused_questions, get_rows, "every get case was seen");
}

#[test]
fn shards_partition_the_zoo_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..60 {
        let d = tmp.path().join(format!("d{}", i % 7));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("n{i}.neff")), make_neff(i).0).unwrap();
    }
    let dir = tmp.path().to_str().unwrap();
    let paths = |args: &[&str]| -> Vec<String> {
        let (recs, _, code) = scan_json(args);
        assert_eq!(code, Some(0));
        recs.iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect()
    };
    let mut all = paths(&[dir]);
    all.sort();
    let mut union = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let mut part = paths(&["--shard", &shard, dir]);
        part.sort();
        // Deterministic: the sorted index decides.
        let want: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == k - 1)
            .map(|(_, p)| p.clone())
            .collect();
        assert_eq!(part, want, "shard {shard}");
        union.extend(part);
    }
    union.sort();
    assert_eq!(union, all);
}

#[test]
fn strict_sorted_verify_and_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..5 {
        std::fs::write(tmp.path().join(format!("n{i}.neff")), make_neff(i).0).unwrap();
    }
    std::fs::copy(
        root().join("tests/hostile/empty.neff"),
        tmp.path().join("z-empty.neff"),
    )
    .unwrap();
    std::fs::copy(
        root().join("tests/hostile/md5-mismatch-gz.neff"),
        tmp.path().join("m.neff"),
    )
    .unwrap();
    let dir = tmp.path().to_str().unwrap();
    let (recs, _, code) = scan_json(&["--sorted", "--verify", dir]);
    assert_eq!(code, Some(0));
    let paths: Vec<&str> = recs.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    for r in &recs {
        let p = r["path"].as_str().unwrap();
        if p.ends_with("m.neff") {
            assert_eq!(r["hash_ok"], false);
        } else if r["ok"] == true {
            assert_eq!(r["hash_ok"], true, "{p}");
        }
    }
    let (_, _, code) = scan_json(&["--strict", dir]);
    assert_eq!(code, Some(1), "--strict with a failed file");
    let table = neff_ok(&["scan", "--no-progress", dir]);
    let table = String::from_utf8(table).unwrap();
    assert!(table.lines().next().unwrap().contains("arch"));
    assert_eq!(table.lines().count(), 1 + 7);
    assert!(
        table.contains("FAIL")
            && table.contains(&format!(
                "{}",
                Path::new(dir).join("z-empty.neff").display()
            ))
    );
}

#[test]
fn refused_question_is_not_a_failed_file() {
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "cc-mpmd-inconsistent-gz.neff",
        "kelf-target-list-mixed-gz.neff",
    ] {
        std::fs::copy(root().join("fixtures/acc").join(f), tmp.path().join(f)).unwrap();
    }
    std::fs::write(tmp.path().join("good.neff"), make_neff(1).0).unwrap();
    let dir = tmp.path().to_str().unwrap();
    let (recs, err, code) = scan_json(&["--strict", "--sorted", dir]);
    assert_eq!(
        code,
        Some(0),
        "--strict fails only on unreadable files: {err}"
    );
    assert!(
        err.contains("3 ok, 0 failed, 2 with refused questions"),
        "summary counts refusals apart: {err}"
    );
    let mpmd = &recs[0];
    assert!(mpmd["path"]
        .as_str()
        .unwrap()
        .ends_with("cc-mpmd-inconsistent-gz.neff"));
    assert_eq!(mpmd["ok"], true, "{mpmd}");
    assert!(mpmd["error"].is_null());
    assert!(mpmd["cc_world_size"].is_null());
    assert!(
        mpmd["errors"]["cc_world_size"]
            .as_str()
            .is_some_and(|e| e.contains("Inconsistent worker count across topologies")),
        "{mpmd}"
    );
    let mixed = &recs[2];
    assert!(mixed["path"]
        .as_str()
        .unwrap()
        .ends_with("kelf-target-list-mixed-gz.neff"));
    assert!(mixed["arch"].is_null());
    assert!(
        mixed["errors"]["arch"]
            .as_str()
            .is_some_and(|e| e.contains("mixed accelerator usage is not supported")),
        "{mixed}"
    );
    let good = &recs[1];
    assert_eq!(
        good["errors"],
        serde_json::json!({}),
        "{{}} when nothing was refused"
    );
    let table = String::from_utf8(neff_ok(&["scan", "--no-progress", "--sorted", dir])).unwrap();
    assert!(table.contains("(refused: cc_world_size)"), "{table}");
}

/// A tmpfs mounted at `at` (as root; `None` where mounts are refused),
/// lazily unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn at(at: &Path) -> Option<Tmpfs> {
        use std::os::unix::fs::MetadataExt;
        if !std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "neff-test", at.to_str().unwrap()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn one_file_system_leaves_a_mount_inside_the_tree_and_its_catalogue_rows_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let t = walk_tree(tmp.path());
    let Some(_m) = Tmpfs::at(&t.join("a/b/mnt")) else {
        eprintln!("no tmpfs can be mounted here (not root, or no CAP_SYS_ADMIN): not tried");
        return;
    };
    let neff = root().join("fixtures/acc/cc-none-gz.neff");
    std::fs::create_dir_all(t.join("a/b/mnt/deep")).unwrap();
    std::fs::copy(&neff, t.join("a/b/mnt/m.neff")).unwrap();
    std::fs::copy(&neff, t.join("a/b/mnt/deep/n.neff")).unwrap();
    // And one inside a compile-cache entry (walked whole in a step of its
    // own): its NEFF beside, a mount below.
    let entry = t.join("v/MODULE_1+a");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::copy(&neff, entry.join("model.neff")).unwrap();
    std::fs::write(entry.join("model.done"), b"").unwrap();
    let Some(_e) = Tmpfs::at(&entry.join("sub")) else {
        eprintln!("a second tmpfs cannot be mounted here: not tried");
        return;
    };
    std::fs::copy(&neff, entry.join("sub/x.neff")).unwrap();
    let mounted = [
        "a/b/mnt/deep/n.neff",
        "a/b/mnt/m.neff",
        "v/MODULE_1+a/sub/x.neff",
    ];
    let (all, _) = walked(&t, &["--no-follow"]);
    assert!(
        mounted.iter().all(|m| all.contains(&m.to_string())),
        "{all:?}"
    );
    let (ok, bad) = walked(&t, &["--no-follow", "--one-file-system"]);
    let want: Vec<String> = all
        .iter()
        .filter(|p| !mounted.contains(&p.as_str()))
        .cloned()
        .collect();
    assert!(want.contains(&"v/MODULE_1+a/model.neff".to_string()));
    assert_eq!(ok, want);
    assert!(bad.is_empty(), "{bad:?}");
    // Streamed or listed first, the walk is the same.
    let (sorted, _) = walked(&t, &["--no-follow", "--one-file-system", "--sorted"]);
    assert_eq!(sorted, want);
    // Indexed: the rows under the mount, made by a scan that entered it,
    // stay when a scan that does not enter it runs.
    let db = tmp.path().join("t.db");
    let db = db.to_str().unwrap();
    let (first, _) = walked(&t, &["--no-follow", "--index", db]);
    assert_eq!(first, all);
    let (second, _) = walked(&t, &["--no-follow", "--one-file-system", "--index", db]);
    assert_eq!(second, want);
    let rows = || -> i64 {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.query_row("SELECT count(*) FROM neffs", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(rows() as usize, all.len(), "no row retired");
    // Unmounted, the files are gone: the next scan retires their rows.
    drop(_m);
    drop(_e);
    let (third, _) = walked(&t, &["--no-follow", "--index", db]);
    assert_eq!(third, want);
    assert_eq!(rows() as usize, want.len());
}

/// A tree for the walk's flags: NEFFs at depths 1 to 4, a directory `old`
/// holding a NEFF and a link to `a`, and a link loop.
fn walk_tree(dir: &Path) -> std::path::PathBuf {
    let t = dir.join("t");
    let neff = root().join("fixtures/acc/cc-none-gz.neff");
    for p in [
        "top.neff",
        "a/one.neff",
        "a/b/two.neff",
        "a/b/c/three.neff",
        "old/x.neff",
    ] {
        let p = t.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&neff, p).unwrap();
    }
    std::os::unix::fs::symlink("../a", t.join("old/link")).unwrap();
    std::os::unix::fs::symlink("..", t.join("a/b/loop")).unwrap();
    t
}

/// The paths a scan printed, relative to `t`, sorted; and its failed
/// records' paths.
fn walked(t: &Path, extra: &[&str]) -> (Vec<String>, Vec<String>) {
    let (recs, err, code) = scan_json(&[&[t.to_str().unwrap()], extra].concat());
    assert_eq!(code, Some(0), "{err}");
    let rel = |r: &serde_json::Value| {
        let p = r["path"].as_str().unwrap();
        p.strip_prefix(t.to_str().unwrap())
            .unwrap()
            .trim_start_matches('/')
            .to_string()
    };
    let mut ok: Vec<String> = recs.iter().filter(|r| r["ok"] == true).map(rel).collect();
    let mut bad: Vec<String> = recs.iter().filter(|r| r["ok"] == false).map(rel).collect();
    ok.sort();
    bad.sort();
    (ok, bad)
}

#[test]
fn glob_max_depth_and_no_follow_choose_the_files_as_fd_and_rg_do() {
    let tmp = tempfile::tempdir().unwrap();
    let t = walk_tree(tmp.path());
    let all = [
        "a/b/c/three.neff",
        "a/b/two.neff",
        "a/one.neff",
        "old/link/b/c/three.neff",
        "old/link/b/two.neff",
        "old/link/one.neff",
        "old/x.neff",
        "top.neff",
    ];
    let (ok, bad) = walked(&t, &[]);
    assert_eq!(ok, all);
    // The loop, reported once (met first through a/ or through old/link).
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].ends_with("b/loop"), "{bad:?}");
    assert_eq!(walked(&t, &["--max-depth", "1"]).0, ["top.neff"]);
    assert_eq!(
        walked(&t, &["--max-depth", "2"]).0,
        ["a/one.neff", "old/x.neff", "top.neff"]
    );
    assert_eq!(
        walked(&t, &["-g", "!old/"]).0,
        ["a/b/c/three.neff", "a/b/two.neff", "a/one.neff", "top.neff"]
    );
    assert_eq!(
        walked(&t, &["--glob", "a/**", "--glob", "!**/c/**"]).0,
        ["a/b/two.neff", "a/one.neff"]
    );
    let (ok, bad) = walked(&t, &["--no-follow"]);
    assert_eq!(
        ok,
        [
            "a/b/c/three.neff",
            "a/b/two.neff",
            "a/one.neff",
            "old/x.neff",
            "top.neff"
        ]
    );
    assert!(bad.is_empty(), "no link entered, so no loop: {bad:?}");
    // The indexed scan walks the same way.
    let db = tmp.path().join("t.db");
    let (ok, _) = walked(&t, &["--max-depth", "2", "--index", db.to_str().unwrap()]);
    assert_eq!(ok, ["a/one.neff", "old/x.neff", "top.neff"]);
    // A glob that does not compile is a usage error, before any output.
    let o = neff(&["scan", "-g", "[bad", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("neff: --glob: "));
}
