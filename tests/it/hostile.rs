//! Every malformed file in `tests/hostile/` is refused with exit 1 and one
//! line naming the file and the reason, by every read command; nothing panics.

use crate::common::*;
use neff::accessors::Accessor;
use neff::{Limits, Neff, Options};

/// One row of `tests/hostile/MANIFEST.tsv`: a file, the command that must
/// refuse it, and a phrase its reason must contain.
struct Row {
    file: String,
    command: Vec<String>,
    reason: String,
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("tests/hostile/MANIFEST.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut c = l.split('\t');
            let (file, cmd, reason) = (c.next().unwrap(), c.next().unwrap(), c.next().unwrap());
            Row {
                file: file.into(),
                command: cmd.split(' ').map(String::from).collect(),
                reason: reason.into(),
            }
        })
        .collect()
}

#[test]
fn manifest_covers_every_hostile_file() {
    let listed: Vec<String> = manifest().into_iter().map(|r| r.file).collect();
    for f in neffs("tests/hostile") {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        assert!(listed.contains(&name), "{name} has no row in MANIFEST.tsv");
    }
}

#[test]
fn every_hostile_file_is_refused_in_one_line_naming_the_defect() {
    for row in manifest() {
        let f = root().join("tests/hostile").join(&row.file);
        let fs = f.to_str().unwrap();
        let (cmd, rest) = row.command.split_first().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let mut args: Vec<&str> = vec![cmd.as_str(), fs];
        args.extend(rest.iter().map(String::as_str));
        if cmd == "unpack" {
            args.extend(["-o", out.to_str().unwrap()]);
        }
        if cmd == "verify" {
            let o = neff(&args);
            assert_eq!(o.status.code(), Some(1), "{}", row.file);
            let text = String::from_utf8(o.stdout).unwrap();
            assert!(
                text.starts_with(&format!("FAIL {fs}: ")) && text.contains(&row.reason),
                "{text}"
            );
            neff_ok(&["ls", fs]);
            continue;
        }
        let reason = assert_refused(&args, &f);
        assert!(
            reason.contains(&row.reason),
            "{}: {reason:?} lacks {:?}",
            row.file,
            row.reason
        );
        if cmd == "unpack" {
            assert!(!out.exists(), "{}: unpack wrote before refusing", row.file);
        }
    }
}

#[test]
fn malformed_files_are_refused_by_every_read_command() {
    for row in manifest().into_iter().filter(|r| r.command == ["ls"]) {
        let f = root().join("tests/hostile").join(&row.file);
        let fs = f.to_str().unwrap();
        for cmd in [&["info", fs][..], &["cat", fs, "."], &["get", fs, "def"]] {
            assert_refused(cmd, &f);
        }
    }
}

#[test]
fn odd_but_valid_archives_read_as_posix_says() {
    let open = |n: &str| Neff::open(root().join("tests/hostile").join(n)).unwrap();
    assert_eq!(open("many-empty-members-gz.neff").files().count(), 20000);
}

#[test]
fn bombs_are_refused_at_the_cap_and_read_without_it() {
    for file in ["gzip-bomb-zeros-gz.neff", "gzip-bomb-member-gz.neff"] {
        let f = root().join("tests/hostile").join(file);
        let reason = assert_refused(&["ls", f.to_str().unwrap(), "--max-inflated", "1M"], &f);
        assert!(reason.contains("over the cap"), "{file}: {reason}");
    }
    // Under the default cap the member bomb is an ordinary 10 MiB archive.
    let f = root().join("tests/hostile/gzip-bomb-member-gz.neff");
    let n = Neff::open(&f).unwrap();
    assert!(n.tar_len() > 10 << 20);
}

#[test]
fn library_survives_every_entry_point_on_hostile_files() {
    let limits = Limits::default().max_inflated(1 << 20);
    for f in neffs("tests/hostile") {
        let bytes = std::fs::read(&f).unwrap();
        let _ = neff::verify_bytes(&bytes);
        if let Ok(n) = Neff::from_bytes(bytes, &Options::default().limits(limits)) {
            for e in n.entries() {
                let _ = n.data(e);
            }
            for a in Accessor::ALL {
                let _ = a.write_json(&n, &mut Vec::new());
            }
        }
    }
}
