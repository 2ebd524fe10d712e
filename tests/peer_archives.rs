//! A peer's test suite, read as GNU tar reads it: every archive of tar-rs's
//! `tests/archives/` (copied unmodified into `fixtures/peer/tar-rs/`, MIT,
//! see its LICENSE-MIT and PROVENANCE.md), wrapped in a NEFF raw and gzip, lists as `tar tf` lists it
//! (one leading `./` removed, as CLI.md says) and gives the bytes `tar xOf`
//! extracts, or, for the GNU sparse files tar expands and `neff` does not
//! read, is refused with that reason (never listed with its stored bytes).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

fn archives() -> Vec<PathBuf> {
    let dir = root().join("fixtures/peer/tar-rs");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tar"))
        .collect();
    v.sort();
    assert!(v.len() >= 19, "{} archives", v.len());
    v
}

#[test]
fn every_peer_archive_lists_and_extracts_as_gnu_tar_does_or_is_refused_as_sparse() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut read, mut refused) = (0, 0);
    for tar in archives() {
        let stem = tar.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&tar).unwrap();
        let want = tool_list("tar", &tar);
        for (kind, payload) in [("raw", bytes.clone()), ("gz", neff::pack::gzip(&bytes))] {
            let f = tmp.path().join(format!("{stem}-{kind}.neff"));
            std::fs::write(&f, wrap(&payload)).unwrap();
            let fs = f.to_str().unwrap();
            let o = neff(&["ls", "--all", fs]);
            if stem.starts_with("sparse") {
                assert_eq!(o.status.code(), Some(1), "{stem} {kind}");
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(err.contains("GNU sparse file"), "{stem} {kind}: {err}");
                refused += 1;
                continue;
            }
            assert!(
                o.status.success(),
                "{stem} {kind}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let got: Vec<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(|l| l.split(" -> ").next().unwrap().to_string())
                .collect();
            assert_eq!(got, want, "{stem} {kind}: listing");
            // Member bytes: each regular member as `tar xOf` extracts it.
            let n = neff::Neff::open(&f).unwrap();
            for e in n.files() {
                let name = n.name_str(e).into_owned();
                let o = Command::new("tar")
                    .arg("xOf")
                    .arg(&tar)
                    .arg(&name)
                    .output()
                    .unwrap();
                if !o.status.success() {
                    // The archive's own spelling (`./name`) is what tar wants.
                    let o2 = Command::new("tar")
                        .arg("xOf")
                        .arg(&tar)
                        .arg(format!("./{name}"))
                        .output()
                        .unwrap();
                    assert!(o2.status.success(), "{stem}: tar xOf {name}");
                    assert_eq!(
                        &n.data(e).unwrap()[..],
                        &o2.stdout[..],
                        "{stem} {kind}: {name}"
                    );
                } else if want.iter().filter(|w| **w == name).count() == 1 {
                    assert_eq!(
                        &n.data(e).unwrap()[..],
                        &o.stdout[..],
                        "{stem} {kind}: {name}"
                    );
                }
            }
            read += 1;
        }
    }
    assert_eq!(refused, 6, "the three sparse archives, raw and gzip");
    assert!(read >= 32, "{read}");
}
