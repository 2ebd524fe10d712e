//! The questions a serving control plane asks the catalogue, in the exact
//! SQL docs/GUIDE.md gives: each answers right, and each is answered
//! through an index (its `EXPLAIN QUERY PLAN` never scans `neffs`), on a
//! new catalogue and on an older one that gains the indexes when opened.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::*;
use neff::pack::{pack, PackEntry, PackOptions};
use rusqlite::{Connection, ToSql};

const V15: &str = "neuronxcc-2.15.128.0+56dc5a86";
const V16: &str = "neuronxcc-2.16.372.0+4a9b2326";

/// docs/GUIDE.md's queries, by name, verbatim (`tests` checks the page
/// carries each).
const BY_PATH: &str = "SELECT record FROM neffs WHERE path = :path;";
const BY_UUID: &str = "SELECT path FROM neffs WHERE uuid = :uuid ORDER BY path;";
const BY_HASH: &str = "SELECT path FROM neffs WHERE hash = :hash ORDER BY path;";
const TARGET_COUNT: &str = "SELECT count(*) FROM neffs
  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1;";
const TARGET_WHICH: &str = "SELECT path FROM neffs
  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1
  ORDER BY path;";
const FAILED_PER_VERSION: &str = "SELECT compiler, count(*) AS failed FROM neffs
  WHERE cache_state = 'failed' GROUP BY compiler ORDER BY compiler;";
const NEWEST_FOR_KEY: &str = "SELECT path, compiler, cache_state FROM neffs
  WHERE cache_key = :key ORDER BY mtime_ns DESC LIMIT 1;";

/// A NEFF for `arch`, `cores` NeuronCores, collectives over `world` ranks
/// (none when 0), with header uuid `[i; 16]`.
fn make(i: u8, arch: &str, cores: u32, world: u32) -> Vec<u8> {
    let cc = if world == 0 {
        String::new()
    } else {
        format!(",\"#rank_world_size\":{world}")
    };
    let mut entries = Vec::new();
    for c in 0..cores {
        entries.push(PackEntry::file(
            &format!("kelf-{c}.json"),
            format!("{{\"graphs\":[{{\"name\":\"sg{c:02}\"}}],\"target\":\"{arch}\"}}")
                .into_bytes(),
            0,
        ));
        entries.push(PackEntry::file(
            &format!("sg{c:02}/def.json"),
            format!("{{\"var\":{{}}{cc}}}").into_bytes(),
            0,
        ));
    }
    // neff.json's `__kelf` nodes are the NeuronCores the scan counts.
    let nodes: Vec<String> = (0..cores)
        .map(|c| format!("\"sg_coreV1{c}\":{{\"op\":\"__kelf\"}}"))
        .collect();
    entries.push(PackEntry::file(
        "neff.json",
        format!("{{\"graphs\":{{{}}}}}", nodes.join(",")).into_bytes(),
        0,
    ));
    entries.push(PackEntry::file(
        "info.json",
        format!("{{\"i\":{i}}}").into_bytes(),
        0,
    ));
    let opts = PackOptions::default()
        .mtime(Some(0))
        .name(format!("m{i}"))
        .uuid(Some([i; 16]));
    pack(&entries, &opts).unwrap()
}

/// One compile-cache entry: `neff` (a NEFF, with model.done), or a failed
/// compile (`None`: model.log only), its files' mtime `age` seconds ago.
fn entry(root: &Path, version: &str, key: &str, neff: Option<Vec<u8>>, age: u64) -> PathBuf {
    let d = root.join(version).join(format!("MODULE_{key}"));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("compile_flags.json"), b"[\"-O2\"]").unwrap();
    std::fs::write(d.join("model.hlo_module.pb"), b"hlo").unwrap();
    let t = SystemTime::now() - Duration::from_secs(age);
    let file = match neff {
        Some(b) => {
            std::fs::write(d.join("model.neff"), b).unwrap();
            std::fs::write(d.join("model.done"), b"").unwrap();
            d.join("model.neff")
        }
        None => {
            std::fs::write(d.join("model.log"), b"ERROR 70: internal error\n").unwrap();
            d.join("model.log")
        }
    };
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(t)
        .unwrap();
    d.join("model.neff")
}

/// The cache: 12 NEFFs over two compiler versions (one key compiled by
/// both, the 2.16 entry newer), 3 failed entries (2 under 2.15), catalogued.
fn catalogue(tmp: &Path) -> (PathBuf, Vec<PathBuf>) {
    let root = tmp.join("cache");
    let mut neffs = Vec::new();
    let targets = [
        ("sunda", 2, 32),
        ("sunda", 2, 32),
        ("sunda", 2, 32),
        ("sunda", 1, 32),
        ("sunda", 2, 16),
        ("cayman", 2, 32),
        ("cayman", 1, 0),
        ("sunda", 1, 0),
        ("sunda", 2, 32),
        ("cayman", 2, 64),
        ("sunda", 1, 8),
        ("cayman", 1, 8),
    ];
    for (i, (arch, cores, world)) in targets.iter().enumerate() {
        let version = if i % 2 == 0 { V15 } else { V16 };
        let key = format!("{i:020x}+0000000{}", i % 10);
        neffs.push(entry(
            &root,
            version,
            &key,
            Some(make(i as u8 + 1, arch, *cores, *world)),
            1000 + i as u64,
        ));
    }
    // One module compiled by 2.15 a day ago and by 2.16 an hour ago.
    let shared = "aaaaaaaaaaaaaaaaaaaa+bbbbbbbb";
    neffs.push(entry(
        &root,
        V15,
        shared,
        Some(make(100, "sunda", 1, 4)),
        86400,
    ));
    neffs.push(entry(
        &root,
        V16,
        shared,
        Some(make(101, "sunda", 1, 4)),
        3600,
    ));
    entry(&root, V15, "f0000000000000000001+00000001", None, 10);
    entry(&root, V15, "f0000000000000000002+00000002", None, 20);
    entry(&root, V16, "f0000000000000000003+00000003", None, 30);
    let db = tmp.join("cache.db");
    let o = neff(&[
        "scan",
        "--json",
        "--no-progress",
        "--index",
        db.to_str().unwrap(),
        root.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (db, neffs)
}

fn strings(c: &Connection, sql: &str, params: &[(&str, &dyn ToSql)]) -> Vec<String> {
    let mut st = c.prepare(sql).unwrap();
    st.query_map(params, |r| {
        let v: rusqlite::types::Value = r.get(0)?;
        Ok(match v {
            rusqlite::types::Value::Text(t) => t,
            rusqlite::types::Value::Integer(n) => n.to_string(),
            other => format!("{other:?}"),
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// `EXPLAIN QUERY PLAN`'s lines for `sql`.
fn plan(c: &Connection, sql: &str, params: &[(&str, &dyn ToSql)]) -> Vec<String> {
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    st.query_map(params, |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Asserts `sql` reads `neffs` through `index` only, never by a scan.
fn assert_indexed(c: &Connection, sql: &str, params: &[(&str, &dyn ToSql)], index: &str) {
    let p = plan(c, sql, params);
    assert!(
        p.iter().all(|l| !l.starts_with("SCAN neffs")),
        "{sql}: a full scan: {p:?}"
    );
    assert!(
        p.iter()
            .any(|l| l.starts_with("SEARCH neffs USING") && l.contains(&format!("INDEX {index} "))),
        "{sql}: not through {index}: {p:?}"
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every query of GUIDE's list, answered right and through its index.
fn check_queries(db: &Path, neffs: &[PathBuf]) {
    let c = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    // By path: the scan's record.
    let path = s(&neffs[3]).to_string();
    let rec = strings(&c, BY_PATH, &[(":path", &path)]);
    assert_eq!(rec.len(), 1);
    let v: serde_json::Value = serde_json::from_str(&rec[0]).unwrap();
    assert_eq!(v["path"], path.as_str());
    assert_eq!(v["num_cores"], 1);
    assert_indexed(&c, BY_PATH, &[(":path", &path)], "neffs_path");
    // By uuid and by hash.
    let uuid = "04".repeat(16);
    assert_eq!(
        strings(&c, BY_UUID, &[(":uuid", &uuid)]),
        vec![path.clone()]
    );
    assert_indexed(&c, BY_UUID, &[(":uuid", &uuid)], "neffs_uuid");
    let hash: String = c
        .query_row("SELECT hash FROM neffs WHERE path = ?1", [&path], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(hash.len(), 32);
    assert_eq!(
        strings(&c, BY_HASH, &[(":hash", &hash)]),
        vec![path.clone()]
    );
    assert_indexed(&c, BY_HASH, &[(":hash", &hash)], "neffs_hash");
    // The NEFFs that fit sunda, 2 cores, 32 ranks: 0, 1, 2 and 8.
    let target: [(&str, &dyn ToSql); 3] = [(":arch", &"sunda"), (":world", &32), (":cores", &2)];
    assert_eq!(strings(&c, TARGET_COUNT, &target), vec!["4"]);
    let mut want: Vec<String> = [0, 1, 2, 8].iter().map(|&i| s(&neffs[i]).into()).collect();
    want.sort();
    assert_eq!(strings(&c, TARGET_WHICH, &target), want);
    assert_indexed(&c, TARGET_COUNT, &target, "neffs_target");
    assert_indexed(&c, TARGET_WHICH, &target, "neffs_target");
    // Failed entries per compiler version.
    let failed: Vec<(String, i64)> = c
        .prepare(FAILED_PER_VERSION)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        failed,
        vec![
            ("2.15.128.0+56dc5a86".to_string(), 2),
            ("2.16.372.0+4a9b2326".to_string(), 1)
        ]
    );
    assert_indexed(&c, FAILED_PER_VERSION, &[], "neffs_cache_state");
    // The newest entry for a key compiled by both versions: 2.16's.
    let key = "aaaaaaaaaaaaaaaaaaaa+bbbbbbbb";
    let newest: (String, String, String) = c
        .query_row(NEWEST_FOR_KEY, &[(":key", &key)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(
        newest,
        (
            s(&neffs[13]).to_string(),
            "2.16.372.0+4a9b2326".to_string(),
            "ok".to_string()
        )
    );
    assert_indexed(&c, NEWEST_FOR_KEY, &[(":key", &key)], "neffs_cache_key");
}

#[test]
fn control_plane_queries_answer_through_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, neffs) = catalogue(tmp.path());
    check_queries(&db, &neffs);
}

#[test]
fn the_guide_gives_each_query_verbatim() {
    let guide = std::fs::read_to_string(root().join("docs/GUIDE.md")).unwrap();
    for q in [
        BY_PATH,
        BY_UUID,
        BY_HASH,
        TARGET_COUNT,
        TARGET_WHICH,
        FAILED_PER_VERSION,
        NEWEST_FOR_KEY,
    ] {
        assert!(guide.contains(q), "docs/GUIDE.md lacks {q}");
    }
}

#[test]
fn a_schema_2_catalogue_gains_the_indexes_when_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, neffs) = catalogue(tmp.path());
    // As schema 2 left it: the same tables, without the three indexes.
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "DROP INDEX neffs_target; DROP INDEX neffs_cache_state; DROP INDEX neffs_cache_key;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    let p = plan(&c, FAILED_PER_VERSION, &[]);
    assert!(
        p.iter().any(|l| l.starts_with("SCAN neffs")),
        "without its index the query scans: {p:?}"
    );
    drop(c);
    // A read-only open asks for an update first ...
    let e = neff::catalog::Catalog::open(&db).err().expect("refused");
    assert!(e.to_string().contains("schema version 2 is older"), "{e}");
    // ... which migrates it in place, answering every file from its rows.
    let o = neff(&[
        "scan",
        "--json",
        "--no-progress",
        "--index",
        s(&db),
        s(&tmp.path().join("cache")),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.ends_with(", 17 from the index\n"), "{err}");
    let c = Connection::open(&db).unwrap();
    let v: i32 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, neff::catalog::SCHEMA_VERSION);
    assert_eq!(v, 4);
    let names: Vec<String> = strings(
        &c,
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN
           ('neffs_target', 'neffs_cache_state', 'neffs_cache_key') ORDER BY name",
        &[],
    );
    assert_eq!(
        names,
        vec!["neffs_cache_key", "neffs_cache_state", "neffs_target"]
    );
    drop(c);
    check_queries(&db, &neffs);
}
