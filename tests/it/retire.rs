//! An indexed scan retires the row of a file only when it looked for the
//! file where it lived and did not find it (issue 49): a scan narrowed by
//! a flag, or one whose root failed to open, keeps the rows of the files
//! it did not look at. Also a catalogue held locked by another process
//! (`--busy-timeout`) and one whose directory may not be written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{neff, neffs};

/// zoo/a1.neff, zoo/a2.neff, zoo/d/b1.neff, zoo/d/e/c1.neff,
/// zoo/old/x.neff; returns the zoo.
fn zoo(dir: &Path) -> PathBuf {
    let zoo = dir.join("zoo");
    let src = neffs("fixtures/acc");
    for (i, rel) in [
        "a1.neff",
        "a2.neff",
        "d/b1.neff",
        "d/e/c1.neff",
        "old/x.neff",
    ]
    .iter()
    .enumerate()
    {
        let p = zoo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&src[i], &p).unwrap();
    }
    zoo
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `neff scan --index DB ARGS` (NDJSON, no progress).
fn indexed(db: &Path, args: &[&str]) -> Output {
    let mut all = vec!["scan", "--json", "--no-progress", "--index", s(db)];
    all.extend_from_slice(args);
    neff(&all)
}

/// The catalogue's keys, sorted, relative to `base` (canonical).
fn keys(db: &Path, base: &Path) -> Vec<String> {
    let base = std::fs::canonicalize(base).unwrap();
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c.prepare("SELECT key FROM neffs ORDER BY key").unwrap();
    let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(|k| {
        let k = k.unwrap();
        let p = PathBuf::from(&k);
        p.strip_prefix(&base)
            .map_or(k.clone(), |r| r.display().to_string())
    })
    .collect()
}

const ALL: [&str; 5] = [
    "a1.neff",
    "a2.neff",
    "d/b1.neff",
    "d/e/c1.neff",
    "old/x.neff",
];

/// A zoo fully indexed, in a fresh directory: (tempdir, zoo, db).
fn indexed_zoo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path());
    let db = tmp.path().join("zoo.db");
    let o = indexed(&db, &[s(&zoo)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(keys(&db, &zoo), ALL);
    (tmp, zoo, db)
}

#[test]
fn a_glob_scan_keeps_the_rows_it_did_not_look_at_and_retires_what_it_found_gone() {
    let (_tmp, zoo, db) = indexed_zoo();
    let o = indexed(&db, &["-g", "a1.neff", s(&zoo)]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    assert_eq!(keys(&db, &zoo), ALL, "-g a1.neff dropped rows");
    // An excluded directory is not looked into.
    indexed(&db, &["-g", "!old/", s(&zoo)]);
    assert_eq!(keys(&db, &zoo), ALL, "-g '!old/' dropped rows");
    // What the glob keeps and is gone is retired; the rest stays.
    std::fs::remove_file(zoo.join("a1.neff")).unwrap();
    std::fs::remove_file(zoo.join("old/x.neff")).unwrap();
    indexed(&db, &["-g", "a1.neff", "-g", "!old/", s(&zoo)]);
    assert_eq!(
        keys(&db, &zoo),
        ["a2.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"]
    );
}

#[test]
fn a_max_depth_scan_keeps_the_rows_below_its_depth() {
    let (_tmp, zoo, db) = indexed_zoo();
    indexed(&db, &["--max-depth", "1", s(&zoo)]);
    assert_eq!(keys(&db, &zoo), ALL, "--max-depth 1 dropped rows");
    std::fs::remove_file(zoo.join("a2.neff")).unwrap();
    std::fs::remove_file(zoo.join("d/e/c1.neff")).unwrap();
    indexed(&db, &["--max-depth", "2", s(&zoo)]);
    // a2 was looked for (depth 1) and is gone; c1 (depth 3) was not.
    assert_eq!(
        keys(&db, &zoo),
        ["a1.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"]
    );
}

#[test]
fn a_files_from_scan_keeps_every_other_row_and_the_row_of_a_listed_file_gone() {
    let (tmp, zoo, db) = indexed_zoo();
    let list = tmp.path().join("list");
    std::fs::write(&list, format!("{}\n", s(&zoo.join("a1.neff")))).unwrap();
    let o = indexed(&db, &["--files-from", s(&list)]);
    assert!(o.status.success());
    assert_eq!(keys(&db, &zoo), ALL, "--files-from dropped rows");
    // A listed file that is gone is a root that cannot be opened: exit 3,
    // and its row is not taken for gone (its directory was not walked).
    std::fs::remove_file(zoo.join("a1.neff")).unwrap();
    let o = indexed(&db, &["--files-from", s(&list)]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(keys(&db, &zoo), ALL);
}

#[test]
fn a_no_follow_scan_of_a_linked_root_and_a_shard_keep_the_others_rows() {
    let (tmp, zoo, db) = indexed_zoo();
    // A NEFF reached through a link only, as a hub's cache keeps one
    // (`snapshots/…/model.neff -> ../blobs/<hash>`): its row is keyed by
    // where the link leads.
    std::fs::create_dir_all(zoo.join("blobs")).unwrap();
    std::fs::copy(&neffs("fixtures/acc")[6], zoo.join("blobs/3f9a")).unwrap();
    std::fs::create_dir_all(zoo.join("snap")).unwrap();
    std::os::unix::fs::symlink("../blobs/3f9a", zoo.join("snap/model.neff")).unwrap();
    indexed(&db, &[s(&zoo)]);
    let mut all = ALL.to_vec();
    all.insert(2, "blobs/3f9a");
    assert_eq!(keys(&db, &zoo), all);
    indexed(&db, &["--no-follow", s(&zoo)]);
    assert_eq!(keys(&db, &zoo), all, "--no-follow dropped rows");
    let link = tmp.path().join("zoo-link");
    std::os::unix::fs::symlink(&zoo, &link).unwrap();
    indexed(&db, &["--no-follow", s(&link)]);
    assert_eq!(
        keys(&db, &zoo),
        all,
        "--no-follow of a linked root dropped rows"
    );
    // Gone, with its link: retired by the scan that looks where it was.
    std::fs::remove_file(zoo.join("snap/model.neff")).unwrap();
    std::fs::remove_file(zoo.join("blobs/3f9a")).unwrap();
    indexed(&db, &["--no-follow", s(&zoo)]);
    assert_eq!(keys(&db, &zoo), ALL);
    for shard in ["1/2", "2/2", "3/3"] {
        indexed(&db, &["--shard", shard, s(&zoo)]);
        assert_eq!(keys(&db, &zoo), ALL, "--shard {shard} dropped rows");
    }
    // The unfiltered scan still retires what is gone.
    std::fs::remove_file(zoo.join("d/b1.neff")).unwrap();
    indexed(&db, &[s(&zoo)]);
    assert_eq!(
        keys(&db, &zoo),
        ["a1.neff", "a2.neff", "d/e/c1.neff", "old/x.neff"]
    );
}

/// `neff ARGS` as the user nobody (the tests run as root, whom no mode
/// bits stop), or `None` when privileges cannot be dropped.
pub(crate) fn as_nobody(args: &[&str]) -> Option<Output> {
    if !crate::common::have("setpriv") {
        return None;
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some(o)
}

/// A directory tree nobody may read and write: (tempdir, zoo, db).
pub(crate) fn shared_zoo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path());
    for e in walkdir::WalkDir::new(tmp.path()) {
        let e = e.unwrap();
        let mode = if e.file_type().is_dir() { 0o777 } else { 0o666 };
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let db = tmp.path().join("zoo.db");
    (tmp, zoo, db)
}

#[test]
fn a_root_or_directory_that_fails_to_list_keeps_its_rows() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, zoo, db) = shared_zoo();
    let args = |root: &Path| {
        let v: Vec<String> = [
            "scan",
            "--json",
            "--no-progress",
            "--index",
            s(&db),
            s(root),
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        v
    };
    let run = |root: &Path| {
        let a = args(root);
        as_nobody(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let Some(o) = run(&zoo) else {
        eprintln!("skipped: no setpriv to drop root's privileges");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(keys(&db, &zoo), ALL);
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    // A directory below the root that may not be listed: its rows stay,
    // the others are judged.
    mode(&zoo.join("d"), 0o000);
    std::fs::remove_file(zoo.join("a2.neff")).unwrap();
    let o = run(&zoo).unwrap();
    assert_eq!(
        keys(&db, &zoo),
        ["a1.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"]
    );
    assert!(o.status.success());
    // A root that may not be listed: exit 3 naming it, every row kept.
    mode(&zoo.join("d"), 0o777);
    mode(&zoo, 0o000);
    let o = run(&zoo).unwrap();
    mode(&zoo, 0o777);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.starts_with(&format!("neff: {}: ", s(&zoo))), "{err}");
    assert_eq!(
        keys(&db, &zoo),
        ["a1.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"]
    );
}

#[test]
fn a_catalogue_held_locked_ends_in_exit_3_after_the_records_read_so_far() {
    let (_tmp, zoo, db) = indexed_zoo();
    // Another process holds a write transaction open.
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN IMMEDIATE')\n\
             print('locked', flush=True)\n\
             time.sleep(60)\n",
            s(&db),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "locked\n");
    // A changed file must be written back: its batch waits for the lock.
    std::fs::copy(neffs("fixtures/interop")[0].as_path(), zoo.join("a1.neff")).unwrap();
    let t = std::time::Instant::now();
    let o = indexed(&db, &["--busy-timeout", "1s", s(&zoo)]);
    let took = t.elapsed();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("locked by another process") && err.contains("--busy-timeout"),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        ALL.len()
    );
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

#[test]
fn a_catalogue_whose_directory_may_not_be_written_is_exit_3_before_the_scan() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, zoo, db) = shared_zoo();
    let Some(o) = as_nobody(&[
        "scan",
        "--json",
        "--no-progress",
        "--index",
        s(&db),
        s(&zoo),
    ]) else {
        eprintln!("skipped: no setpriv to drop root's privileges");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let o = as_nobody(&[
        "scan",
        "--json",
        "--no-progress",
        "--index",
        s(&db),
        s(&zoo),
    ])
    .unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(s(&db)) && err.contains("cannot be written"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
