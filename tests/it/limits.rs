//! Every resource cap, at its edge: the input that just fits is read, the
//! one that is one unit over is refused with `Error::Limit`, before the
//! allocation the cap guards.

use neff::pack::{pack, write_tar, PackEntry, PackOptions};
use neff::{Error, Limits, Neff, Options};

fn open(bytes: Vec<u8>, limits: Limits) -> Result<Neff, Error> {
    Neff::from_bytes(bytes, &Options::default().limits(limits))
}

fn build(entries: &[PackEntry], gzip: bool) -> Vec<u8> {
    pack(
        entries,
        &PackOptions::default().no_gzip(!gzip).mtime(Some(0)),
    )
    .unwrap()
}

fn is_limit(r: Result<Neff, Error>, what: &str) {
    match r {
        Err(Error::Limit { what: w, .. }) => assert!(w.contains(what), "{w}"),
        other => panic!(
            "want a {what} limit, got {:?}",
            other.map(|n| n.entries().len())
        ),
    }
}

#[test]
fn inflated_size_cap() {
    let entries = vec![PackEntry::file("a.bin", vec![7u8; 100_000], 0)];
    let tar_len = write_tar(&entries).len() as u64;
    let gz = build(&entries, true);
    let at = Limits::default().max_inflated(tar_len);
    assert_eq!(open(gz.clone(), at).unwrap().tar_len(), tar_len);
    is_limit(
        open(gz, Limits::default().max_inflated(tar_len - 1)),
        "inflated payload size",
    );
}

#[test]
fn member_count_cap() {
    let entries: Vec<PackEntry> = (0..50)
        .map(|i| PackEntry::file(&format!("f{i}"), vec![], 0))
        .collect();
    let raw = build(&entries, false);
    assert_eq!(
        open(raw.clone(), Limits::default().max_members(50))
            .unwrap()
            .entries()
            .len(),
        50
    );
    is_limit(
        open(raw, Limits::default().max_members(49)),
        "number of archive entries",
    );
}

#[test]
fn extended_header_cap() {
    // One PAX `path` record: "<len> path=<name>\n".
    let name = "n".repeat(5000);
    let record = 5000 + " path=\n".len() + 4;
    let raw = build(&[PackEntry::file(&name, &b"x"[..], 0)], false);
    let at = Limits::default().max_extended_header(record as u64);
    assert_eq!(open(raw.clone(), at).unwrap().entries().len(), 1);
    let under = Limits::default().max_extended_header(record as u64 - 1);
    is_limit(open(raw, under), "extended header size");
}

#[test]
fn name_and_link_length_cap() {
    let name = "d/".repeat(100) + "file";
    let raw = build(&[PackEntry::file(&name, &b"x"[..], 0)], false);
    let at = Limits::default().max_name_len(name.len());
    assert_eq!(open(raw.clone(), at).unwrap().entries().len(), 1);
    let under = Limits::default().max_name_len(name.len() - 1);
    is_limit(open(raw, under), "member name length");
    let link = PackEntry {
        name: b"l".to_vec(),
        kind: neff::pack::PackKind::Symlink(name.clone().into_bytes()),
        mode: 0o777,
        mtime: 0,
    };
    is_limit(open(build(&[link], false), under), "link target length");
}

#[test]
fn caps_are_flags_of_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("m.neff");
    let entries: Vec<PackEntry> = (0..5)
        .map(|i| PackEntry::file(&format!("f{i}"), vec![], 0))
        .collect();
    std::fs::write(&f, build(&entries, true)).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
            .args(args)
            .output()
            .unwrap()
    };
    let fs = f.to_str().unwrap();
    assert!(run(&["ls", fs, "--max-members", "5"]).status.success());
    let o = run(&["ls", fs, "--max-members", "4"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("number of archive entries is 5, over the cap of 4"));
    let o = run(&["info", fs, "--max-inflated", "1K"]);
    assert_eq!(o.status.code(), Some(1));
    let o = run(&["ls", fs, "--max-inflated", "lots"]);
    assert_eq!(o.status.code(), Some(2), "a bad size is a usage error");
}
