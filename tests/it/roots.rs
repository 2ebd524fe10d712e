//! A scan root that cannot be opened, for any reason (missing, a dangling
//! link, a link loop, a directory or file its user may not read), is one
//! stderr line naming it and exit 3; the other roots are scanned
//! (docs/CLI.md, issue 49).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::common::{neff, root};
use crate::retire::{as_nobody, shared_zoo};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts that `o`, a scan of `bad` then a good root of `good` NEFFs,
/// named `bad` on stderr, exited 3 and printed the good root's records.
fn reported(o: &Output, bad: &Path, good: usize) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{}: {err}", s(bad));
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("neff: {}: cannot be opened: ", s(bad))),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().filter(|l| l.contains("\"ok\":true")).count(),
        good,
        "{out}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

fn scan(bad: &Path, good: &Path) -> Output {
    neff(&["scan", "--json", "--no-progress", s(bad), s(good)])
}

#[test]
fn a_missing_dangling_or_looping_root_is_one_line_and_exit_3_the_others_scanned() {
    let tmp = tempfile::tempdir().unwrap();
    let good = root().join("fixtures/interop");
    let n = crate::common::neffs("fixtures/interop").len();
    let missing = tmp.path().join("missing");
    reported(&scan(&missing, &good), &missing, n);
    let dangling = tmp.path().join("dangling");
    std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
    let o = scan(&dangling, &good);
    reported(&o, &dangling, n);
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link to nothing"));
    let looping = tmp.path().join("loop");
    std::os::unix::fs::symlink(&looping, &looping).unwrap();
    reported(&scan(&looping, &good), &looping, n);
}

#[test]
fn a_root_its_user_may_not_read_is_one_line_and_exit_3_the_others_scanned() {
    let (_tmp, zoo, _) = shared_zoo();
    let good = zoo.join("d");
    let run = |bad: &Path| as_nobody(&["scan", "--json", "--no-progress", s(bad), s(&good)]);
    let dir = zoo.join("old");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(o) = run(&dir) else {
        eprintln!("skipped: no setpriv to drop root's privileges");
        return;
    };
    reported(&o, &dir, 2);
    let file = zoo.join("a1.neff");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    reported(&run(&file).unwrap(), &file, 2);
}
