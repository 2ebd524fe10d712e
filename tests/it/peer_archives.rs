//! A peer's test suite, read as GNU tar reads it: every archive of tar-rs's
//! `tests/archives/` (copied unmodified into `fixtures/peer/tar-rs/`, MIT,
//! see its LICENSE-MIT and PROVENANCE.md), wrapped in a NEFF raw and gzip, lists as `tar tf` lists it
//! (one leading `./` removed, as CLI.md says) and gives the bytes `tar xOf`
//! extracts. Its three GNU sparse archives are expanded as `tar xOf` and
//! `bsdtar -xOf` expand them; the 12 GiB one (`sparse-large.tar`) is
//! compared as `neff unpack`, `tar xf` and `bsdtar xf` write it, holes as
//! holes, by the stretches of data each file holds.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

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

/// The stretches of `f` that hold data (`SEEK_DATA` to `SEEK_HOLE`; the
/// rest are holes, read as zeros).
fn data_ranges(f: &File) -> Vec<(u64, u64)> {
    use rustix::fs::{seek, SeekFrom};
    let len = f.metadata().unwrap().len();
    let mut v = Vec::new();
    let mut at = 0u64;
    while at < len {
        let Ok(start) = seek(f, SeekFrom::Data(at)) else {
            break; // ENXIO: only a hole is left
        };
        let end = seek(f, SeekFrom::Hole(start)).unwrap();
        v.push((start, end));
        at = end;
    }
    v
}

/// Whether files `a` and `b` hold the same bytes, reading only where
/// either holds data (both read as zeros elsewhere).
fn same_sparse_files(a: &Path, b: &Path) -> bool {
    let (fa, fb) = (File::open(a).unwrap(), File::open(b).unwrap());
    if fa.metadata().unwrap().len() != fb.metadata().unwrap().len() {
        return false;
    }
    let mut ranges = data_ranges(&fa);
    ranges.extend(data_ranges(&fb));
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    for (start, end) in ranges {
        let mut at = start;
        while at < end {
            let n = ((end - at) as usize).min(x.len());
            fa.read_exact_at(&mut x[..n], at).unwrap();
            fb.read_exact_at(&mut y[..n], at).unwrap();
            if x[..n] != y[..n] {
                return false;
            }
            at += n as u64;
        }
    }
    true
}

/// Members larger than this are compared on disk, not in memory.
const IN_MEMORY: u64 = 64 << 20;

#[test]
fn every_peer_archive_lists_and_extracts_as_gnu_tar_and_bsdtar_do() {
    assert!(
        have("tar") && have("bsdtar"),
        "GNU tar and bsdtar are needed"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (mut read, mut sparse) = (0, 0);
    for tar in archives() {
        let stem = tar.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&tar).unwrap();
        let want = tool_list("tar", &tar);
        for (kind, payload) in [("raw", bytes.clone()), ("gz", neff::pack::gzip(&bytes))] {
            let f = tmp.path().join(format!("{stem}-{kind}.neff"));
            std::fs::write(&f, wrap(&payload)).unwrap();
            let fs = f.to_str().unwrap();
            let o = neff(&["ls", "--all", fs]);
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
            if n.files().any(|e| e.size > IN_MEMORY) {
                // Holes as holes, by neff, GNU tar and bsdtar.
                let ours = tmp.path().join(format!("{stem}-{kind}-neff"));
                neff::unpack::unpack(&n, &ours).unwrap();
                for tool in ["tar", "bsdtar"] {
                    let theirs = tmp.path().join(format!("{stem}-{kind}-{tool}"));
                    std::fs::create_dir(&theirs).unwrap();
                    let o = Command::new(tool)
                        .arg("-xf")
                        .arg(&tar)
                        .arg("-C")
                        .arg(&theirs)
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "{tool} -xf {stem}");
                    for e in n.files() {
                        let name = n.name_str(e).into_owned();
                        assert!(
                            same_sparse_files(&ours.join(&name), &theirs.join(&name)),
                            "{stem} {kind}: {name} as {tool} extracts it"
                        );
                    }
                    std::fs::remove_dir_all(&theirs).unwrap();
                }
                std::fs::remove_dir_all(&ours).unwrap();
                sparse += 1;
                read += 1;
                continue;
            }
            for e in n.files() {
                let name = n.name_str(e).into_owned();
                if e.is_sparse() {
                    let o = Command::new("bsdtar")
                        .arg("-xOf")
                        .arg(&tar)
                        .arg(&name)
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "{stem}: bsdtar -xOf {name}");
                    assert_eq!(
                        &n.data(e).unwrap()[..],
                        &o.stdout[..],
                        "{stem} {kind}: {name} (bsdtar)"
                    );
                }
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
            if n.files().any(|e| e.is_sparse()) {
                sparse += 1;
            }
            read += 1;
        }
    }
    assert_eq!(sparse, 6, "the three sparse archives, raw and gzip");
    assert_eq!(read, 38, "every archive, raw and gzip");
}
