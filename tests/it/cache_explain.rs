//! `neff cache explain` and the catalogue's flag columns: one graph
//! compiled under three flag sets (their `compile_flags.json`, or a 2.14
//! entry's `compile_flags.txt`, differing by one flag) and by three
//! compiler releases; explain names the differing flag and the other
//! release, a job's empty flags give `d41d8cd9`, and
//! the GUIDE's query lists every flag set of the graph through its index,
//! on a new catalogue and on a schema-3 one migrated in place
//! (docs/GUIDE.md, "Why did it compile again?").

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;

use crate::common::*;

const V14: &str = "neuronxcc-2.14.227.0+2d4f85be";
const V15: &str = "neuronxcc-2.15.128.0+56dc5a86";
const V16: &str = "neuronxcc-2.16.372.0+4a9b2326";
const GRAPH: &str = "3540044791706521849";

/// docs/GUIDE.md's query, verbatim.
const FLAG_SETS: &str =
    "SELECT flags_hash, compile_flags, group_concat(DISTINCT compiler) AS compilers
  FROM neffs WHERE graph_hash = :graph
  GROUP BY flags_hash, compile_flags ORDER BY flags_hash;";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A compiled entry `MODULE_<key>` of `version` holding `flags` in a
/// `compile_flags.json` (none when `None`).
fn entry(root: &Path, version: &str, key: &str, flags: Option<&str>) -> PathBuf {
    let d = root.join(version).join(format!("MODULE_{key}"));
    std::fs::create_dir_all(&d).unwrap();
    let neff = std::fs::read(crate::common::root().join("fixtures/acc/cc-replica-groups-gz.neff"))
        .unwrap();
    std::fs::write(d.join("model.neff"), neff).unwrap();
    std::fs::write(d.join("model.done"), b"").unwrap();
    if let Some(f) = flags {
        std::fs::write(d.join("compile_flags.json"), f).unwrap();
    }
    d
}

/// The cache: GRAPH under `-O1` (2.15 and 2.16), `-O2` (2.15) and `-O3`
/// (2.14, its flags as text, hashed joined), another graph under `-O1`
/// (2.16), and one entry of 2.15 without a flags file.
fn cache(tmp: &Path) -> PathBuf {
    let root = tmp.join("cache");
    let o1 = r#"["--target=trn1", "-O1"]"#;
    let o2 = r#"["--target=trn1", "-O2"]"#;
    entry(&root, V15, &format!("{GRAPH}+aaaa0001"), Some(o1));
    entry(&root, V16, &format!("{GRAPH}+aaaa0001"), Some(o1));
    entry(&root, V15, &format!("{GRAPH}+bbbb0002"), Some(o2));
    entry(&root, V16, "77+aaaa0001", Some(o1));
    entry(&root, V15, "88+d41d8cd9", None);
    let old = entry(&root, V14, &format!("{GRAPH}+1554cf73"), None);
    std::fs::write(old.join("compile_flags.txt"), "--target=trn1 -O3").unwrap();
    root
}

/// The NDJSON lines of `neff cache explain ARGS --json`, and its exit code.
fn explain(args: &[&str]) -> (Vec<Value>, i32) {
    let mut a = vec!["cache", "explain"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = neff(&a);
    let lines = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, o.status.code().unwrap())
}

fn by_relation<'a>(lines: &'a [Value], relation: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["relation"] == relation).collect()
}

#[test]
fn an_entry_is_explained_by_the_flag_that_differs_and_the_other_release() {
    let tmp = tempfile::tempdir().unwrap();
    let root = cache(tmp.path());
    let asked = root.join(V15).join(format!("MODULE_{GRAPH}+aaaa0001"));
    // By its path, the cache found above it.
    let (lines, code) = explain(&[s(&asked)]);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 4, "{lines:?}");
    let a = by_relation(&lines, "asked");
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["flags"], serde_json::json!(["--target=trn1", "-O1"]));
    let other = by_relation(&lines, "other_flags");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["flags_hash"], "bbbb0002");
    assert_eq!(other[0]["only_asked"], serde_json::json!(["-O1"]));
    assert_eq!(other[0]["only_here"], serde_json::json!(["-O2"]));
    let release = by_relation(&lines, "same_key");
    assert_eq!(release.len(), 1);
    assert_eq!(release[0]["compiler"], "2.16.372.0+4a9b2326");
    assert_eq!(release[0]["state"], "ok");
    // Both differ on the 2.14 entry, whose flags are its text.
    let both = by_relation(&lines, "other_flags_other_compiler");
    assert_eq!(both.len(), 1);
    assert_eq!(both[0]["compiler"], "2.14.227.0+2d4f85be");
    assert_eq!(both[0]["only_asked"], serde_json::json!(["-O1"]));
    assert_eq!(both[0]["only_here"], serde_json::json!(["-O3"]));
    assert_eq!(both[0]["hash_rule"], "joined");
    // By the name a job looked up and missed: every release's entry of it
    // is asked about; the other flags of the graph are the 2.15 -O2 one.
    let (lines, code) = explain(&[s(&root), &format!("MODULE_{GRAPH}+aaaa0001")]);
    assert_eq!(code, 0);
    assert_eq!(by_relation(&lines, "asked").len(), 2);
    let other = by_relation(&lines, "other_flags");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["only_here"], serde_json::json!(["-O2"]));
    // A name no entry has: the graph's entries under other flags.
    let (lines, _) = explain(&[s(&root), &format!("MODULE_{GRAPH}+cccc0003")]);
    assert_eq!(lines.len(), 4);
    assert_eq!(by_relation(&lines, "other_flags").len(), 4);
    // The table names the flag and the release.
    let o = neff(&["cache", "explain", s(&asked)]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("only asked: -O1") && text.contains("only here:  -O2"),
        "{text}"
    );
    assert!(
        text.contains("same_key") && text.contains("2.16.372.0+4a9b2326"),
        "{text}"
    );
}

#[test]
fn a_jobs_flags_give_their_hash_and_meet_the_entries_of_the_same_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let root = cache(tmp.path());
    // No flags at all: the MD5 of nothing, joined; the 2.15 entry without
    // compile_flags.json has that hash.
    let (lines, code) = explain(&[s(&root), "--flags", ""]);
    assert_eq!(code, 0);
    assert_eq!(lines[0]["job"]["hashes"]["joined"], "d41d8cd9");
    assert_eq!(lines[0]["job"]["hashes"]["json"], "d7517139");
    let same = by_relation(&lines, "same_flags");
    assert_eq!(same.len(), 1);
    assert!(same[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("MODULE_88+d41d8cd9"));
    // A job's flags against one graph: the entry compiled with them is
    // the same, the others differ by -O1 or -O3.
    let (lines, code) = explain(&[s(&root), "--graph", GRAPH, "--flags", "--target=trn1 -O2"]);
    assert_eq!(code, 0);
    assert_eq!(by_relation(&lines, "same_flags").len(), 1);
    let other = by_relation(&lines, "other_flags");
    assert_eq!(other.len(), 3);
    assert!(other
        .iter()
        .all(|l| l["only_asked"] == serde_json::json!(["-O2"])));
    let here: Vec<&Value> = other.iter().map(|l| &l["only_here"]).collect();
    assert_eq!(
        here,
        [
            &serde_json::json!(["-O3"]),
            &serde_json::json!(["-O1"]),
            &serde_json::json!(["-O1"])
        ]
    );
    // The 2.14 entry's hash is the joined rule's of the job's flags.
    let (lines, _) = explain(&[s(&root), "--flags", "--target=trn1  '-O3'"]);
    assert_eq!(lines[0]["job"]["hashes"]["joined"], "1554cf73");
    let same = by_relation(&lines, "same_flags");
    assert_eq!(same.len(), 1);
    assert_eq!(same[0]["compiler"], "2.14.227.0+2d4f85be");
    // With the name the job missed: the entry of its flags under another
    // name is the one to look at (its wrapper hashed them otherwise).
    let missed = format!("MODULE_{GRAPH}+cccc0003");
    let (lines, code) = explain(&[s(&root), &missed, "--flags", "--target=trn1 -O3"]);
    assert_eq!(code, 0);
    let same = by_relation(&lines, "same_flags");
    assert_eq!(same.len(), 1);
    assert_eq!(same[0]["flags_hash"], "1554cf73");
    assert_eq!(by_relation(&lines, "other_flags").len(), 3);
}

#[test]
fn nothing_matched_is_exit_1_and_a_bad_question_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = cache(tmp.path());
    let (lines, code) = explain(&[s(&root), "--graph", "12345"]);
    assert_eq!((lines.len(), code), (0, 1));
    let o = neff(&["cache", "explain", s(&root)]);
    assert_eq!(o.status.code(), Some(2));
    let o = neff(&["cache", "explain", s(&root), "--flags", "'open"]);
    assert_eq!(o.status.code(), Some(2));
    let o = neff(&["cache", "explain", s(&root), "not-an-entry"]);
    assert_eq!(o.status.code(), Some(2));
}

/// (flags_hash, compile_flags, compilers) of GRAPH, by the GUIDE's query
/// (the compilers sorted: `group_concat` gives them in no set order).
fn flag_sets(c: &Connection) -> Vec<(String, Option<String>, String)> {
    let mut st = c.prepare(FLAG_SETS).unwrap();
    st.query_map(&[(":graph", &GRAPH)], |r| {
        let compilers: String = r.get(2)?;
        let mut compilers: Vec<&str> = compilers.split(',').collect();
        compilers.sort_unstable();
        Ok((r.get(0)?, r.get(1)?, compilers.join(",")))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn check_flag_sets(db: &Path) {
    let c = Connection::open(db).unwrap();
    assert_eq!(
        flag_sets(&c),
        vec![
            (
                "1554cf73".into(),
                Some(r#"["--target=trn1","-O3"]"#.into()),
                "2.14.227.0+2d4f85be".into()
            ),
            (
                "aaaa0001".into(),
                Some(r#"["--target=trn1","-O1"]"#.into()),
                "2.15.128.0+56dc5a86,2.16.372.0+4a9b2326".into()
            ),
            (
                "bbbb0002".into(),
                Some(r#"["--target=trn1","-O2"]"#.into()),
                "2.15.128.0+56dc5a86".into()
            ),
        ]
    );
    let mut st = c
        .prepare(&format!("EXPLAIN QUERY PLAN {FLAG_SETS}"))
        .unwrap();
    let plan: Vec<String> = st
        .query_map(&[(":graph", &GRAPH)], |r| r.get(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        plan.iter().any(|l| l.contains("INDEX neffs_graph"))
            && !plan.iter().any(|l| l.starts_with("SCAN neffs")),
        "{plan:?}"
    );
    let no_flags: Option<String> = c
        .query_row(
            "SELECT compile_flags FROM neffs WHERE graph_hash = '88' AND flags_hash = 'd41d8cd9'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(no_flags, None);
}

fn index(db: &Path, root: &Path) -> String {
    let o = neff(&["scan", "--json", "--no-progress", "--index", s(db), s(root)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn every_flag_set_of_a_graph_is_one_query_through_its_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = cache(tmp.path());
    let db = tmp.path().join("cache.db");
    index(&db, &root);
    check_flag_sets(&db);
}

#[test]
fn a_schema_3_catalogue_gains_the_flag_columns_when_updated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = cache(tmp.path());
    let db = tmp.path().join("cache.db");
    index(&db, &root);
    // As schema 3 left it: no flag columns, no index of them.
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "DROP INDEX neffs_graph;
         ALTER TABLE neffs DROP COLUMN compile_flags;
         ALTER TABLE neffs DROP COLUMN flags_hash;
         ALTER TABLE neffs DROP COLUMN graph_hash;
         PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(c);
    let e = neff::catalog::Catalog::open(&db).err().expect("refused");
    assert!(e.to_string().contains("schema version 3 is older"), "{e}");
    // The update migrates it, every file answered from its row.
    let err = index(&db, &root);
    assert!(err.ends_with(", 6 from the index\n"), "{err}");
    let c = Connection::open(&db).unwrap();
    let v: i32 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, neff::catalog::SCHEMA_VERSION);
    assert_eq!(v, 4);
    drop(c);
    check_flag_sets(&db);
}

#[test]
fn the_guide_gives_the_query_verbatim_and_explains_explain() {
    let guide = std::fs::read_to_string(crate::common::root().join("docs/GUIDE.md")).unwrap();
    assert!(guide.contains(FLAG_SETS), "docs/GUIDE.md lacks {FLAG_SETS}");
    assert!(guide.contains("### Why did it compile again?"));
    assert!(guide.contains("neff cache explain"));
}
