//! `neff scan --index`: the SQLite catalogue as a cache of the scan
//! (byte-identical output, incremental updates), under faults and
//! concurrency, against hostile database files, merged from shards, and
//! its rows against `neff info --json` / `neff get alias`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::*;
use neff::catalog::{Catalog, Filter};
use neff::pack::{pack, PackEntry, PackOptions};

/// A small NEFF whose contents vary with `i` (arch, world size, inputs,
/// aliases); `pad` adds bytes to a member. Raw (ungzipped) when `raw`, so
/// that two NEFFs of equal-length contents have equal sizes.
fn make(i: usize, pad: usize, raw: bool) -> Vec<u8> {
    let arch = ["sunda", "cayman"][i % 2];
    let cc = match i % 3 {
        0 => String::new(),
        1 => ",\"#rank_world_size\":32".to_string(),
        _ => ",\"replica_groups\":[[[0,1,2,3]]]".to_string(),
    };
    let def = format!(
        "{{\"var\":{{\"in0\":{{\"var_id\":0,\"type\":\"input\",\"size\":{},\"shape\":[1,{}],\"dtype\":\"float32\"}},\
         \"out\":{{\"var_id\":1,\"type\":\"output\",\"size\":8,\"shape\":[2],\"dtype\":\"int32\"}}}}{cc}}}",
        4 * (i % 5 + 1),
        i % 5 + 1
    );
    let am = if i % 2 == 0 {
        "{\"input_name\":\"in0\",\"output_name\":\"out\",\"must_alias\":true}"
    } else {
        ""
    };
    let entries = vec![
        PackEntry::file(
            "info.json",
            format!("{{\"i\":{:04}}}", i % 10000).into_bytes(),
            0,
        ),
        PackEntry::file(
            "kelf-0.json",
            format!("{{\"graphs\":[{{\"name\":\"sg00\"}}],\"target\":\"{arch}\"}}").into_bytes(),
            0,
        ),
        PackEntry::file("sg00/def.json", def.into_bytes(), 0),
        PackEntry::file("sg00/pe.bin", vec![7u8; 512 + pad], 0),
        PackEntry::file(
            "sg00/tensor_map.json",
            format!("{{\"alias_map\":[{am}]}}").into_bytes(),
            0,
        ),
    ];
    let opts = PackOptions::default()
        .no_gzip(raw)
        .mtime(Some(0))
        .name(format!("m{i}"))
        .uuid(Some([i as u8; 16]));
    pack(&entries, &opts).unwrap()
}

/// A zoo of `n` NEFFs in nested directories (some compile-cache entries),
/// plus a few small hostile files.
fn zoo(dir: &Path, n: usize) -> PathBuf {
    let zoo = good_zoo(dir, n);
    let bad = zoo.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    for f in neffs("tests/hostile") {
        if std::fs::metadata(&f).unwrap().len() < 64 << 10 {
            std::fs::copy(&f, bad.join(f.file_name().unwrap())).unwrap();
        }
    }
    zoo
}

/// `n` generated NEFFs only.
fn good_zoo(dir: &Path, n: usize) -> PathBuf {
    let zoo = dir.join("zoo");
    for i in 0..n {
        let d = zoo
            .join(format!("c{}", i % 3))
            .join(format!("MODULE_{i:04}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("model.neff"), make(i, i, i % 4 == 0)).unwrap();
        if i % 2 == 0 {
            std::fs::write(d.join("model.done"), b"").unwrap();
        }
    }
    zoo
}

/// `neff scan --json --sorted` with extra args: (stdout, stderr).
fn scan(args: &[&str]) -> (String, String) {
    let o = neff(&[&["scan", "--json", "--no-progress", "--sorted"], args].concat());
    assert!(
        o.status.success(),
        "scan {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// How many records the summary line says came from the index.
fn from_index(stderr: &str) -> usize {
    let tail = stderr
        .rsplit_once(", ")
        .and_then(|(_, t)| t.strip_suffix(" from the index\n"))
        .unwrap_or_else(|| panic!("no index count in {stderr:?}"));
    tail.parse().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn indexed_scan_prints_the_plain_scans_bytes_cold_and_warm() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 60);
    let db = tmp.path().join("zoo.db");
    let (plain, plain_err) = scan(&[s(&zoo)]);
    assert!(!plain_err.contains("from the index"));
    let (cold, err) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(cold, plain);
    assert_eq!(from_index(&err), 0);
    let (warm, err) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(warm, plain);
    let files = plain.lines().count();
    assert_eq!(
        from_index(&err),
        files,
        "every file answered from the index"
    );
    // Unsorted (and with one worker, and in the table form) too: same
    // record set, same table.
    let o = neff(&[
        "scan",
        "--json",
        "--no-progress",
        "--jobs",
        "1",
        s(&zoo),
        "--index",
        s(&db),
    ]);
    let set = |t: &str| t.lines().map(str::to_string).collect::<BTreeSet<_>>();
    assert_eq!(set(&String::from_utf8(o.stdout).unwrap()), set(&plain));
    let table = |extra: &[&str]| {
        neff_ok(&[&["scan", "--no-progress", "--sorted", s(&zoo)], extra].concat())
    };
    assert_eq!(table(&["--index", s(&db)]), table(&[]));
}

#[test]
fn incremental_scan_rereads_exactly_the_changed_files() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 12);
    let db = tmp.path().join("zoo.db");
    let check = |want_cached: usize, what: &str| {
        let (plain, _) = scan(&[s(&zoo)]);
        let (indexed, err) = scan(&[s(&zoo), "--index", s(&db)]);
        assert_eq!(indexed, plain, "after {what}");
        assert_eq!(from_index(&err), want_cached, "after {what}: {err}");
        plain.lines().count()
    };
    let n = check(0, "the first scan");
    check(n, "nothing");
    let f = |i: usize| zoo.join(format!("c{}/MODULE_{i:04}/model.neff", i % 3));

    // touch: same bytes, new mtime.
    let file = std::fs::File::options().write(true).open(f(1)).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(file);
    check(n - 1, "touch");

    // truncate: the record becomes a failure.
    let bytes = std::fs::read(f(2)).unwrap();
    std::fs::write(f(2), &bytes[..bytes.len() / 2]).unwrap();
    let (out, _) = scan(&[s(&zoo), "--index", s(&db)]);
    assert!(out.contains(&format!("\"path\":\"{}\",\"ok\":false", s(&f(2)))));
    check(n, "truncate (then nothing)");

    // Another NEFF of the same size and mtime in another inode (raw
    // NEFFs 0 and 6 differ only in content of equal length).
    let (a, b) = (make(0, 0, true), make(6, 0, true));
    assert_eq!(a.len(), b.len());
    std::fs::write(f(0), &a).unwrap();
    check(n - 1, "rewriting 0");
    let mtime = std::fs::metadata(f(0)).unwrap().modified().unwrap();
    let tmpfile = zoo.join("c0/MODULE_0000/swap.tmp");
    std::fs::write(&tmpfile, &b).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&tmpfile)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::rename(&tmpfile, f(0)).unwrap();
    assert_eq!(std::fs::metadata(f(0)).unwrap().modified().unwrap(), mtime);
    let (out, _) = scan(&[s(&zoo), "--index", s(&db)]);
    assert!(out.contains("\"name\":\"m6\""), "the replacement was read");
    check(n, "replace (then nothing)");

    // delete (the entry, as `neff cache prune` does: an entry left without
    // its NEFF would be a record of its own)
    std::fs::remove_dir_all(f(3).parent().unwrap()).unwrap();
    check(n - 1, "delete");
    let cat = Catalog::open(&db).unwrap();
    assert_eq!(cat.by_path(s(&f(3))).unwrap(), None);
    assert_eq!(cat.len().unwrap(), n - 1);

    // add
    std::fs::write(zoo.join("c0/new.neff"), make(99, 3, false)).unwrap();
    check(n - 1, "add");

    // rename: the old path's row goes, the new path is read.
    // (within its entry: an entry left with no NEFF has a record of its own)
    let renamed = zoo.join("c2/MODULE_0005/renamed.neff");
    std::fs::rename(f(5), &renamed).unwrap();
    check(n - 1, "rename");
    let cat = Catalog::open(&db).unwrap();
    assert_eq!(cat.by_path(s(&f(5))).unwrap(), None);
    assert!(cat.by_path(s(&renamed)).unwrap().is_some());
    assert_eq!(cat.len().unwrap(), n);
}

#[test]
fn a_compile_finishing_changes_the_entry_state_without_a_reread() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 4);
    let db = tmp.path().join("zoo.db");
    scan(&[s(&zoo), "--index", s(&db)]);
    let p = zoo.join("c1/MODULE_0001/model.neff");
    let rec = Catalog::open(&db).unwrap().by_path(s(&p)).unwrap().unwrap();
    // (`c1` names no compiler: a NEFF without model.done is not judged.)
    assert_eq!(rec.cache_state, Some(neff::cache::State::Unknown));
    std::fs::write(zoo.join("c1/MODULE_0001/model.done"), b"").unwrap();
    let (plain, _) = scan(&[s(&zoo)]);
    let (indexed, err) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(indexed, plain);
    assert_eq!(from_index(&err), plain.lines().count());
    let rec = Catalog::open(&db).unwrap().by_path(s(&p)).unwrap().unwrap();
    assert_eq!(
        rec.cache_state,
        Some(neff::cache::State::Ok),
        "the stored row follows"
    );
}

#[test]
fn verify_rereads_rows_made_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 5);
    let db = tmp.path().join("zoo.db");
    scan(&[s(&zoo), "--index", s(&db)]);
    let (plain, _) = scan(&[s(&zoo), "--verify"]);
    let (indexed, err) = scan(&[s(&zoo), "--verify", "--index", s(&db)]);
    assert_eq!(indexed, plain);
    assert_eq!(from_index(&err), 0);
    assert!(indexed.contains("\"hash_ok\":true"));
}

#[test]
fn rows_outside_the_walked_roots_survive_and_shards_keep_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 8);
    let db = tmp.path().join("zoo.db");
    let (c0, c1) = (zoo.join("c0"), zoo.join("c1"));
    scan(&[s(&c0), "--index", s(&db)]);
    scan(&[s(&c1), "--index", s(&db)]);
    let cat = Catalog::open(&db).unwrap();
    let n0 = scan(&[s(&c0)]).0.lines().count();
    let n1 = scan(&[s(&c1)]).0.lines().count();
    assert_eq!(cat.len().unwrap(), n0 + n1);
    // Both shards into one database: neither deletes the other's rows.
    let db2 = tmp.path().join("sharded.db");
    scan(&[s(&zoo), "--shard", "1/2", "--index", s(&db2)]);
    scan(&[s(&zoo), "--shard", "2/2", "--index", s(&db2)]);
    let total = scan(&[s(&zoo)]).0.lines().count();
    assert_eq!(Catalog::open(&db2).unwrap().len().unwrap(), total);
}

#[test]
fn kill_9_mid_update_leaves_a_database_that_answers_and_the_next_scan_completes() {
    let tmp = tempfile::tempdir().unwrap();
    // Generated NEFFs only (a few hostile files are slow to refuse in a
    // debug build, and sort first).
    let zoo = good_zoo(tmp.path(), 1000);
    let (plain, _) = scan(&[s(&zoo)]);
    let total = plain.lines().count();
    let mut partial = Vec::new();
    for (k, delay_ms) in [10u64, 30, 60, 100, 150, 220, 320, 480, 700, 1000, 1500]
        .into_iter()
        .enumerate()
    {
        let db = tmp.path().join(format!("k{k}.db"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_neff"))
            .args([
                "scan",
                "--json",
                "--no-progress",
                "--jobs",
                "1",
                s(&zoo),
                "--index",
                s(&db),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if db.exists() {
            // Opens and answers (whatever was committed), or says in one
            // line that the schema is not there yet.
            match Catalog::open(&db) {
                Ok(cat) => {
                    let n = cat.len().unwrap();
                    eprintln!("killed after {delay_ms} ms: {n} of {total} rows");
                    assert!(n <= total);
                    if n > 0 && n < total {
                        partial.push(n);
                    }
                    for r in cat.records(&Filter::default()).unwrap() {
                        assert!(plain.contains(&serde_json::to_string(&r).unwrap()));
                    }
                }
                Err(e) => {
                    eprintln!("killed after {delay_ms} ms: {e}");
                    assert!(!e.to_string().contains('\n'), "{e}")
                }
            }
        }
        let (after, err) = scan(&[s(&zoo), "--index", s(&db)]);
        assert_eq!(after, plain, "killed after {delay_ms} ms");
        assert!(from_index(&err) <= total);
        assert_eq!(Catalog::open(&db).unwrap().len().unwrap(), total);
    }
    assert!(
        !partial.is_empty(),
        "no kill landed mid-update: make the zoo bigger"
    );
}

#[test]
fn two_scans_updating_one_database_at_once_both_finish_with_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 150);
    let db = tmp.path().join("zoo.db");
    let (plain, _) = scan(&[s(&zoo)]);
    let spawn = |root: &Path| {
        Command::new(env!("CARGO_BIN_EXE_neff"))
            .args([
                "scan",
                "--json",
                "--no-progress",
                "--sorted",
                "--jobs",
                "1",
                s(root),
                "--index",
                s(&db),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The same zoo twice at once, then two halves at once.
    let (a, b) = (spawn(&zoo), spawn(&zoo));
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8(o.stdout).unwrap(), plain);
    }
    let total = plain.lines().count();
    assert_eq!(Catalog::open(&db).unwrap().len().unwrap(), total);
    let db_rows = |t: &str| -> i64 {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    let seq = tmp.path().join("seq.db");
    scan(&[
        s(&zoo.join("c0")),
        s(&zoo.join("c1")),
        s(&zoo.join("c2")),
        "--index",
        s(&seq),
    ]);
    assert!(db_rows("members") > 0);
    std::fs::remove_file(&db).unwrap();
    let _ = std::fs::remove_file(tmp.path().join("zoo.db-wal"));
    let _ = std::fs::remove_file(tmp.path().join("zoo.db-shm"));
    let (a, b) = (spawn(&zoo.join("c0")), spawn(&zoo.join("c1")));
    let c = spawn(&zoo.join("c2"));
    for c in [a, b, c] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let bad = scan(&[s(&zoo.join("bad"))]).0.lines().count();
    assert_eq!(Catalog::open(&db).unwrap().len().unwrap(), total - bad);
    assert_eq!(dump(&db), dump(&seq), "no row lost or doubled");
}

fn assert_db_refused(db: &Path, zoo: &Path, want: &str) {
    let before = std::fs::read(db).unwrap();
    let reason = assert_refused(
        &["scan", "--json", "--no-progress", s(zoo), "--index", s(db)],
        db,
    );
    assert!(reason.contains(want), "{reason:?} lacks {want:?}");
    assert_eq!(
        std::fs::read(db).unwrap(),
        before,
        "a refused file is left alone"
    );
    let e = Catalog::open(db).err().expect("the library refuses it too");
    assert!(e.to_string().contains(want), "{e}");
    // --rebuild starts it over.
    let (out, _) = scan(&[s(zoo), "--index", s(db), "--rebuild"]);
    assert_eq!(
        Catalog::open(db).unwrap().len().unwrap(),
        out.lines().count()
    );
}

#[test]
fn hostile_database_files_are_refused_in_one_line_and_rebuild_replaces_them() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 3);
    // Random bytes (well, a fixed pseudo-random 64 KiB).
    let db = tmp.path().join("random.db");
    let junk = noise(65536, 0x2545_f491_4f6c_dd1d);
    std::fs::write(&db, junk).unwrap();
    assert_db_refused(&db, &zoo, "not an SQLite database");

    // A valid SQLite database of something else.
    let db = tmp.path().join("other.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE accounts (id INTEGER, balance REAL); INSERT INTO accounts VALUES (1, 2.5);",
    )
    .unwrap();
    drop(c);
    assert_db_refused(&db, &zoo, "not a neff index");

    // Ours, from a future neff.
    let db = tmp.path().join("future.db");
    scan(&[s(&zoo), "--index", s(&db)]);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(c);
    assert_db_refused(&db, &zoo, "schema version 99 is newer");

    // Ours, with a table dropped.
    let db = tmp.path().join("damaged.db");
    scan(&[s(&zoo), "--index", s(&db)]);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("DROP TABLE aliases; PRAGMA journal_mode = DELETE;")
        .unwrap();
    drop(c);
    assert_db_refused(&db, &zoo, "table aliases is missing");

    // An empty file is an empty database: it becomes a catalogue.
    let db = tmp.path().join("empty.db");
    std::fs::write(&db, b"").unwrap();
    let (out, _) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(
        Catalog::open(&db).unwrap().len().unwrap(),
        out.lines().count()
    );
    // A directory is no database.
    let dir = tmp.path().join("dir.db");
    std::fs::create_dir(&dir).unwrap();
    let o = neff(&["scan", "--no-progress", s(&zoo), "--index", s(&dir)]);
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    assert!(Catalog::open(tmp.path().join("missing.db")).is_err());
}

/// Every row of a database, ids replaced by paths, sorted.
fn dump(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut out = Vec::new();
    // Every column but the time of scan (the shards were read at other
    // moments than the full scan).
    let cols = neff::catalog::NEFF_COLUMNS
        .iter()
        .filter(|c| **c != "scanned_at")
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let queries = [
        format!("SELECT {cols} FROM neffs"),
        "SELECT n.path, m.name, m.kind, m.size, m.offset, m.mode, m.mtime, m.link FROM members m JOIN neffs n ON n.id = m.neff_id".into(),
        "SELECT n.path, t.subgraph, t.name, t.direction, t.size, t.shape, t.dtype FROM tensors t JOIN neffs n ON n.id = t.neff_id".into(),
        "SELECT n.path, a.input, a.output, a.must_alias FROM aliases a JOIN neffs n ON n.id = a.neff_id".into(),
    ];
    for q in queries {
        let mut st = c.prepare(&q).unwrap();
        let n = st.column_count();
        let rows = st
            .query_map([], |r| {
                let vals: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect();
                Ok(vals.join("|"))
            })
            .unwrap();
        for r in rows {
            out.push(r.unwrap());
        }
    }
    out.sort();
    out
}

#[test]
fn shard_databases_merge_with_the_documented_sql_into_the_full_scans_database() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 30);
    let full = tmp.path().join("full.db");
    scan(&[s(&zoo), "--index", s(&full)]);
    let n = 3;
    for k in 1..=n {
        let shard = tmp.path().join(format!("shard-{k}.db"));
        scan(&[
            s(&zoo),
            "--shard",
            &format!("{k}/{n}"),
            "--index",
            s(&shard),
        ]);
    }
    // As docs/GUIDE.md says: start from an empty catalogue (`neff index
    // schema` into sqlite3, here the same SQL) and fold each shard in.
    let merged = tmp.path().join("merged.db");
    let c = rusqlite::Connection::open(&merged).unwrap();
    let schema = String::from_utf8(neff_ok(&["index", "schema"])).unwrap();
    c.execute_batch(&schema).unwrap();
    for k in 1..=n {
        let sql = neff::catalog::merge_sql(s(&tmp.path().join(format!("shard-{k}.db"))));
        c.execute_batch(&sql).unwrap();
    }
    drop(c);
    assert_eq!(dump(&merged), dump(&full));
    // The merged file is a catalogue the scan reuses in full.
    let (out, err) = scan(&[s(&zoo), "--index", s(&merged)]);
    assert_eq!(out, scan(&[s(&zoo)]).0);
    assert_eq!(from_index(&err), out.lines().count());
    // docs/GUIDE.md carries the SQL `neff index merge-sql` prints, verbatim.
    let printed = String::from_utf8(neff_ok(&["index", "merge-sql", "shard-2.db"])).unwrap();
    assert_eq!(printed, neff::catalog::merge_sql("shard-2.db"));
    let readme = std::fs::read_to_string(root().join("docs/GUIDE.md")).unwrap();
    assert!(
        readme.contains(&printed),
        "docs/GUIDE.md lacks the merge SQL"
    );
}

#[test]
fn tensor_and_alias_rows_match_info_json_and_get_alias_on_every_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("fixtures.db");
    let fixtures: Vec<PathBuf> = walkdir::WalkDir::new(root().join("fixtures"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    assert!(fixtures.len() > 10);
    let mut args = vec!["scan", "--json", "--no-progress", "--index", s(&db)];
    args.extend(fixtures.iter().map(|p| s(p)));
    neff_ok(&args);
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut with_tensors = 0;
    let mut with_aliases = 0;
    for f in &fixtures {
        let id: Option<i64> = c
            .query_row(
                "SELECT id FROM neffs WHERE path = ?1 AND ok = 1",
                [s(f)],
                |r| r.get(0),
            )
            .ok();
        let info = neff(&["info", "--json", s(f)]);
        let Some(id) = id else {
            assert!(!info.status.success(), "{f:?} is unreadable to info too");
            continue;
        };
        // tensors == info --json's subgraphs, in its order.
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let mut want = Vec::new();
        for sg in info["subgraphs"].as_array().unwrap() {
            for (dir, key) in [("IN", "inputs"), ("OUT", "outputs")] {
                for t in sg[key].as_array().unwrap() {
                    want.push(serde_json::json!([
                        sg["name"], t["name"], dir, t["size"], t["shape"], t["dtype"]
                    ]));
                }
            }
        }
        let mut st = c
            .prepare("SELECT subgraph, name, direction, size, shape, dtype FROM tensors WHERE neff_id = ?1 ORDER BY rowid")
            .unwrap();
        let got: Vec<serde_json::Value> = st
            .query_map([id], |r| {
                let shape: Option<String> = r.get(4)?;
                Ok(serde_json::json!([
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    shape.map(|s| serde_json::from_str::<serde_json::Value>(&s).unwrap()),
                    r.get::<_, Option<String>>(5)?,
                ]))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want, "{f:?}");
        with_tensors += usize::from(!got.is_empty());
        // aliases == get alias (an object in alias_map order), none when
        // it refuses.
        let mut st = c
            .prepare("SELECT input, output FROM aliases WHERE neff_id = ?1 ORDER BY rowid")
            .unwrap();
        let got: Vec<(String, String)> = st
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let o = neff(&["get", s(f), "alias"]);
        if o.status.success() {
            let mut line = String::from("{");
            for (k, (i, out)) in got.iter().enumerate() {
                if k > 0 {
                    line.push(',');
                }
                line += &format!("{}:{}", serde_json::json!(i), serde_json::json!(out));
            }
            line += "}\n";
            assert_eq!(String::from_utf8(o.stdout).unwrap(), line, "{f:?}");
            with_aliases += usize::from(!got.is_empty());
        } else {
            assert!(got.is_empty(), "{f:?}: rows where get alias refuses");
        }
    }
    assert!(
        with_tensors > 0 && with_aliases > 0,
        "{with_tensors} {with_aliases}"
    );
}

#[test]
fn catalog_looks_up_by_path_and_uuid_and_filters_like_sql() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), 9);
    let db = tmp.path().join("zoo.db");
    let (out, _) = scan(&[s(&zoo), "--index", s(&db)]);
    let cat = Catalog::open(&db).unwrap();
    let records: Vec<neff::scan::Record> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &records {
        let got = cat.by_path(&r.path).unwrap().unwrap();
        assert_eq!(&got, r);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(r).unwrap()
        );
    }
    assert_eq!(cat.by_path("/no/such.neff").unwrap(), None);
    let first = records.iter().find(|r| r.ok).unwrap();
    let by_uuid = cat.by_uuid(first.uuid.as_deref().unwrap()).unwrap();
    assert!(by_uuid.iter().any(|r| r.path == first.path));
    let pick = |f: &dyn Fn(&neff::scan::Record) -> bool| -> Vec<String> {
        records
            .iter()
            .filter(|r| f(r))
            .map(|r| r.path.clone())
            .collect()
    };
    let paths = |filter: Filter| -> Vec<String> {
        cat.records(&filter)
            .unwrap()
            .into_iter()
            .map(|r| r.path)
            .collect()
    };
    assert_eq!(
        paths(Filter::default().min_cc_world_size(32)),
        pick(&|r| r.cc_world_size.is_some_and(|w| w >= 32))
    );
    assert_eq!(
        paths(Filter::default().arch("cayman").ok(true)),
        pick(&|r| r.ok && r.arch.as_deref() == Some("cayman"))
    );
    // Input of shape [1,3]: NEFFs i with i % 5 == 2 (i = 2, 7).
    let shaped = paths(Filter::default().input_shape(vec![1, 3]));
    assert_eq!(shaped.len(), 2);
    assert!(shaped
        .iter()
        .all(|p| p.contains("MODULE_0002/") || p.contains("MODULE_0007/")));
    assert_eq!(paths(Filter::default()).len(), records.len());
    assert_eq!(cat.len().unwrap(), records.len());
}

#[test]
fn index_schema_prints_sql_that_builds_an_empty_catalogue() {
    let schema = String::from_utf8(neff_ok(&["index", "schema"])).unwrap();
    assert!(schema.contains(neff::catalog::SCHEMA));
    let readme = std::fs::read_to_string(root().join("docs/GUIDE.md")).unwrap();
    assert!(
        readme.contains(&schema),
        "docs/GUIDE.md documents this schema"
    );
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("new.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(&schema)
        .unwrap();
    let cat = Catalog::open(&db).unwrap();
    assert!(cat.is_empty().unwrap());
}

#[test]
fn a_stored_row_that_does_not_decode_is_read_again_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = good_zoo(tmp.path(), 6);
    let db = tmp.path().join("zoo.db");
    let (plain, _) = scan(&[s(&zoo)]);
    scan(&[s(&zoo), "--index", s(&db)]);
    let (a, b) = (
        zoo.join("c0/MODULE_0000/model.neff"),
        zoo.join("c1/MODULE_0001/model.neff"),
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE neffs SET record = '{not json' WHERE path = ?1",
        [s(&a)],
    )
    .unwrap();
    c.execute("UPDATE neffs SET dev = 'a string' WHERE path = ?1", [s(&b)])
        .unwrap();
    drop(c);
    let (out, err) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(out, plain);
    assert_eq!(from_index(&err), 4);
    let cat = Catalog::open(&db).unwrap();
    assert!(cat.by_path(s(&a)).unwrap().unwrap().ok);
    let (_, err) = scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(from_index(&err), 6, "both rows were replaced");
}

/// The secondary indexes present in `db`.
fn index_names(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
        )
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn a_cold_load_builds_every_index_at_its_end_and_a_missing_index_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    // Over 4 batches of files: the cold path (indexes dropped, then built).
    let zoo = good_zoo(tmp.path(), 1100);
    let db = tmp.path().join("cold.db");
    let (out, _) = scan(&[s(&zoo), "--index", s(&db)]);
    let want: Vec<String> = {
        let mut v: Vec<String> = neff::catalog::INDEXES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(index_names(&db), want);
    // Rows equal those of a load that kept its indexes (files one by one).
    let (plain, _) = scan(&[s(&zoo)]);
    assert_eq!(out, plain);
    assert_eq!(Catalog::open(&db).unwrap().len().unwrap(), 1100);
    // A cold load killed before its end leaves no index: the next open
    // puts them back.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("DROP INDEX tensors_name; DROP INDEX neffs_uuid;")
        .unwrap();
    scan(&[s(&zoo), "--index", s(&db)]);
    assert_eq!(index_names(&db), want);
}

/// Runs `neff` in the project's root (relative paths are the fixtures').
fn neff_in_root(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

#[test]
fn a_schema_1_catalogue_upgrades_in_place_with_one_row_per_file_that_answers() {
    use std::os::unix::fs::MetadataExt;
    // fixtures/catalog/v1.sqlite: `neff scan fixtures/acc --index` by the
    // release before schema 2 (paths as typed, relative; options as Rust
    // Debug text; `complete`).
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("v1.sqlite");
    std::fs::copy(root().join("fixtures/catalog/v1.sqlite"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1);
    // As if made on this machine: the files' identities as they are here.
    let paths: Vec<String> = c
        .prepare("SELECT path FROM neffs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(paths.len(), 37);
    for p in &paths {
        let m = std::fs::metadata(root().join(p)).unwrap();
        let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
        c.execute(
            "UPDATE neffs SET dev = ?2, ino = ?3, size = ?4, mtime_ns = ?5, ctime_ns = ?6 WHERE path = ?1",
            rusqlite::params![
                p,
                m.dev() as i64,
                m.ino() as i64,
                m.size() as i64,
                ns(m.mtime(), m.mtime_nsec()),
                ns(m.ctime(), m.ctime_nsec())
            ],
        )
        .unwrap();
    }
    // A second, older row of one file under another spelling of its path.
    c.execute_batch(
        "INSERT INTO neffs (id, path, dev, ino, size, mtime_ns, ctime_ns, options, ok, errors, record)
         SELECT -1, './' || path, dev, ino, size, mtime_ns, ctime_ns, options, ok, errors, record
         FROM neffs WHERE path = 'fixtures/acc/cc-none-gz.neff'",
    )
    .unwrap();
    drop(c);

    let o = neff_in_root(&[
        "scan",
        "--json",
        "--no-progress",
        "fixtures/acc",
        "--index",
        s(&db),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        from_index(&err),
        37,
        "every row answered after the upgrade: {err}"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, neff::catalog::SCHEMA_VERSION as i64);
    let rows: Vec<(String, String, String)> = c
        .prepare("SELECT key, path, options FROM neffs")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 37, "one row per file");
    for (key, path, options) in &rows {
        let real = std::fs::canonicalize(root().join(path.trim_start_matches("./"))).unwrap();
        assert_eq!(key, s(&real));
        let o: serde_json::Value = serde_json::from_str(options).unwrap();
        assert_eq!(o["verify"], false);
        assert_eq!(o["limits"]["max_json_depth"], 512);
    }
    // The records printed are the plain scan's.
    let plain = neff_in_root(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        "fixtures/acc",
    ]);
    let warm = neff_in_root(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        "fixtures/acc",
        "--index",
        s(&db),
    ]);
    assert_eq!(warm.stdout, plain.stdout);
}

#[test]
fn one_directory_scanned_as_relative_absolute_and_dot_slash_paths_keeps_one_row_per_file() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = good_zoo(tmp.path(), 20);
    let db = tmp.path().join("zoo.db");
    let run = |root: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
            .args([
                "scan",
                "--json",
                "--no-progress",
                "--sorted",
                root,
                "--index",
                s(&db),
            ])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            String::from_utf8(o.stdout).unwrap(),
            from_index(&String::from_utf8_lossy(&o.stderr)),
        )
    };
    let (rel, _) = run("zoo");
    let (abs, hits) = run(s(&zoo));
    assert_eq!(
        hits, 20,
        "the absolute path finds the rows the relative one made"
    );
    let (dot, hits) = run("./zoo/");
    assert_eq!(hits, 20);
    // Each printed record carries the path as typed this time.
    assert!(rel.lines().all(|l| l.contains("\"path\":\"zoo/c")), "{rel}");
    assert!(abs
        .lines()
        .all(|l| l.contains(&format!("\"path\":\"{}/c", s(&zoo)))));
    assert!(
        dot.lines().all(|l| l.contains("\"path\":\"./zoo/c")),
        "{dot}"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let (rows, timed, json): (i64, i64, i64) = c
        .query_row(
            "SELECT count(*), count(scanned_at), sum(json_valid(options)) FROM neffs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((rows, timed, json), (20, 20, 20));
    let at: String = c
        .query_row("SELECT min(scanned_at) FROM neffs", [], |r| r.get(0))
        .unwrap();
    assert!(
        at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
        "ISO 8601 UTC: {at}"
    );
    // The views answer.
    let states: Vec<(String, i64)> = c
        .prepare("SELECT state, entries FROM cache_states ORDER BY state")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(states, [("ok".into(), 10), ("unknown".into(), 10)]);
    let targets: i64 = c
        .query_row("SELECT sum(neffs) FROM neffs_by_target", [], |r| r.get(0))
        .unwrap();
    assert_eq!(targets, 20);
}
