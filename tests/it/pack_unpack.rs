//! `neff pack` and `neff unpack`: round trips, reproducibility, interop with
//! GNU tar and bsdtar, and refusal of every extraction escape.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use neff::accessors::Accessor;
use neff::pack::{pack, PackEntry, PackKind, PackOptions};
use neff::Neff;

/// Every path under `dir` → (kind, mode, bytes or link target).
fn snapshot(dir: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let meta = std::fs::symlink_metadata(e.path()).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let v = if meta.is_dir() {
            ('d', mode, vec![])
        } else if meta.file_type().is_symlink() {
            (
                'l',
                0,
                std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .as_bytes()
                    .to_vec(),
            )
        } else {
            ('f', mode, std::fs::read(e.path()).unwrap())
        };
        m.insert(rel, v);
    }
    m
}

fn make_tree(root: &Path) {
    let long = format!("sg00/weights/{}/{}.bin", "d".repeat(120), "w".repeat(150));
    let files: &[(&str, &[u8], u32)] = &[
        ("info.json", b"{\"name\":\"x\"}", 0o644),
        (
            "kelf-0.json",
            b"{\"graphs\":[{\"name\":\"sg00\"},{\"name\":\"sg01\"}],\"target\":\"cayman\"}",
            0o644,
        ),
        (
            "sg00/def.json",
            b"{\"var\":{},\"replica_groups\":[[[0,1]]]}",
            0o600,
        ),
        ("sg00/pe.bin", &[7u8; 700], 0o755),
        ("sg00/empty.bin", b"", 0o644),
        ("sg00/donn\u{e9}es_\u{fc}.bin", b"utf8", 0o644),
        (&long, b"long", 0o644),
    ];
    for (name, data, mode) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    std::fs::create_dir_all(root.join("sg01/empty-dir")).unwrap();
}

#[test]
fn unpack_of_pack_gives_back_the_tree_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    make_tree(&src);
    for gz in [true, false] {
        let out = tmp.path().join(format!("p{gz}.neff"));
        let mut args = vec!["pack", src.to_str().unwrap(), "-o", out.to_str().unwrap()];
        if !gz {
            args.push("--no-gzip");
        }
        neff_ok(&args);
        assert!(neff_ok(&["verify", out.to_str().unwrap()]).starts_with(b"OK "));
        let info: serde_json::Value =
            serde_json::from_slice(&neff_ok(&["info", out.to_str().unwrap(), "--json"])).unwrap();
        assert_eq!(info["pkg_version"], if gz { 2 } else { 1 });
        assert_eq!(info["requested_tpb_count"], 2, "from the kelf's two graphs");
        assert_eq!(info["name"], "src");
        let dst = tmp.path().join(format!("u{gz}"));
        unpack_ok(&out, &dst);
        assert_eq!(snapshot(&dst), snapshot(&src), "gzip={gz}");
    }
}

#[test]
fn pack_of_unpack_keeps_every_member() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, f) in neffs("fixtures/interop").iter().enumerate() {
        let dst = tmp.path().join(format!("u{i}"));
        let fs = f.to_str().unwrap();
        unpack_ok(Path::new(fs), &dst);
        let out = tmp.path().join(format!("p{i}.neff"));
        neff_ok(&["pack", dst.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let (a, b) = (Neff::open(f).unwrap(), Neff::open(&out).unwrap());
        let members = |n: &Neff| -> BTreeMap<Vec<u8>, Vec<u8>> {
            n.files()
                .map(|e| (n.name(e).to_vec(), n.data(e).unwrap().to_vec()))
                .collect()
        };
        let (ma, mut mb) = (members(&a), members(&b));
        // Symlinks are not packed (regular files and directories only);
        // they come back as nothing, hard links as regular files.
        for e in a
            .entries()
            .iter()
            .filter(|e| e.kind == neff::Kind::Hardlink)
        {
            mb.remove(a.name(e));
        }
        assert_eq!(ma, mb, "{fs}");
    }
}

#[test]
fn two_packs_with_source_date_epoch_are_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    make_tree(&src);
    let mut outs = vec![];
    for i in 0..2 {
        let out = tmp.path().join(format!("r{i}.neff"));
        let o = Command::new(env!("CARGO_BIN_EXE_neff"))
            .args(["pack", src.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .unwrap();
        assert!(o.status.success());
        outs.push(std::fs::read(&out).unwrap());
        // Touch the tree between packs: file mtimes must not leak in.
        std::fs::write(src.join("info.json"), b"{\"name\":\"x\"}").unwrap();
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn gnu_tar_and_bsdtar_extract_packed_payloads_as_unpack_does() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    make_tree(&src);
    let out = tmp.path().join("p.neff");
    neff_ok(&["pack", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let ours = tmp.path().join("ours");
    neff_ok(&[
        "unpack",
        out.to_str().unwrap(),
        "-o",
        ours.to_str().unwrap(),
    ]);
    let payload = payload_file(&out, tmp.path());
    for tool in ["tar", "bsdtar"] {
        let d = tmp.path().join(tool);
        std::fs::create_dir(&d).unwrap();
        let o = Command::new(tool)
            .arg("xf")
            .arg(&payload)
            .arg("-C")
            .arg(&d)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(snapshot(&d), snapshot(&ours), "{tool}");
        let listed = Command::new(tool).arg("tf").arg(&payload).output().unwrap();
        let mut names: Vec<String> = String::from_utf8(listed.stdout)
            .unwrap()
            .lines()
            .map(|l| l.trim_end_matches('/').to_string())
            .collect();
        let mut want: Vec<String> = snapshot(&ours).into_keys().collect();
        names.sort();
        want.sort();
        assert_eq!(names, want, "{tool} tf");
    }
}

#[test]
fn neff_packed_and_python_packed_payloads_answer_alike() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, f) in neffs("fixtures/acc").iter().enumerate() {
        let d = tmp.path().join(format!("u{i}"));
        unpack_ok(f, &d);
        let out = tmp.path().join(format!("p{i}.neff"));
        neff_ok(&["pack", d.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let (a, b) = (Neff::open(f).unwrap(), Neff::open(&out).unwrap());
        for acc in Accessor::ALL {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            let rx = acc.write_json(&a, &mut x).map_err(|e| e.to_string());
            let ry = acc.write_json(&b, &mut y).map_err(|e| e.to_string());
            assert_eq!((rx, x), (ry, y), "{} {}", f.display(), acc.name());
        }
    }
}

/// `neff unpack FILE -o DIR`, which must succeed and leave every path
/// under DIR inside it.
fn unpack_ok(file: &Path, dir: &Path) {
    neff_ok(&[
        "unpack",
        file.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_contained(dir);
}

/// Every path under `dir`, resolved (symlinks followed, as far as they
/// lead), stays inside `dir`.
fn assert_contained(dir: &Path) {
    let root = std::fs::canonicalize(dir).unwrap();
    for ent in walkdir::WalkDir::new(dir).follow_links(false) {
        let ent = ent.unwrap();
        let p = ent.path();
        // A dangling symlink: resolve its parent and read its target lexically.
        let real = match std::fs::canonicalize(p) {
            Ok(r) => r,
            Err(_) => {
                let target = std::fs::read_link(p).unwrap();
                let mut r = std::fs::canonicalize(p.parent().unwrap()).unwrap();
                for c in target.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            r.pop();
                        }
                        std::path::Component::Normal(n) => r.push(n),
                        std::path::Component::RootDir => r = PathBuf::from("/"),
                        _ => {}
                    }
                }
                r
            }
        };
        assert!(
            real.starts_with(&root),
            "{} resolves to {}, outside {}",
            p.display(),
            real.display(),
            root.display()
        );
    }
}

fn hostile(entries: Vec<PackEntry>) -> Vec<u8> {
    pack(&entries, &PackOptions::default().mtime(Some(0))).unwrap()
}

fn entry(name: &str, kind: PackKind) -> PackEntry {
    PackEntry {
        name: name.as_bytes().to_vec(),
        kind,
        mode: 0o644,
        mtime: 0,
    }
}

fn file(name: &str) -> PackEntry {
    entry(name, PackKind::File(b"pwned".to_vec()))
}

#[test]
fn every_escape_is_refused_with_nothing_written() {
    let cases: Vec<(&str, Vec<PackEntry>)> = vec![
        ("dotdot", vec![file("ok.json"), file("../escape")]),
        ("absolute", vec![file("ok.json"), file("/abs/path")]),
        (
            "inner dotdot",
            vec![file("ok.json"), file("a/../../escape")],
        ),
        (
            "symlink then through it",
            vec![
                entry("link", PackKind::Symlink(b"../../etc".to_vec())),
                file("link/passwd"),
            ],
        ),
        (
            "inside symlink then through it",
            vec![
                entry("sub", PackKind::Dir),
                entry("link", PackKind::Symlink(b"sub".to_vec())),
                file("link/passwd"),
            ],
        ),
        (
            "symlink climbing out of a symlink",
            vec![
                entry("here", PackKind::Symlink(b".".to_vec())),
                entry("out", PackKind::Symlink(b"here/..".to_vec())),
            ],
        ),
        (
            "absolute symlink",
            vec![entry("link", PackKind::Symlink(b"/etc/passwd".to_vec()))],
        ),
        (
            "hardlink outside",
            vec![entry("h", PackKind::Hardlink(b"/etc/passwd".to_vec()))],
        ),
        (
            "hardlink climbing",
            vec![entry("h", PackKind::Hardlink(b"../x".to_vec()))],
        ),
        ("duplicate", vec![file("a.json"), file("a.json")]),
        (
            "symlink chain through a self link",
            vec![
                entry("s", PackKind::Symlink(b".".to_vec())),
                entry("root", PackKind::Symlink(b"s/s/s/../../..".to_vec())),
            ],
        ),
        (
            "order trick: a link through a symlink that comes later",
            vec![
                entry("t", PackKind::Symlink(b"s/..".to_vec())),
                entry("s", PackKind::Symlink(b".".to_vec())),
            ],
        ),
        (
            "link into a later symlink's parent",
            vec![
                entry("d", PackKind::Dir),
                entry("d/up", PackKind::Symlink(b"../x/..".to_vec())),
                entry("x", PackKind::Symlink(b"d/up".to_vec())),
            ],
        ),
        (
            "symlink loop",
            vec![
                entry("a", PackKind::Symlink(b"b".to_vec())),
                entry("b", PackKind::Symlink(b"a".to_vec())),
            ],
        ),
        (
            "a file written through a symlink that comes later",
            vec![
                file("link/passwd"),
                entry("link", PackKind::Symlink(b"../../etc".to_vec())),
            ],
        ),
        (
            "10,000 components",
            vec![
                file("ok.json"),
                file(&format!("{}x", "sg00/".repeat(10_000))),
            ],
        ),
    ];
    for (what, entries) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("h.neff");
        std::fs::write(&f, hostile(entries)).unwrap();
        let parent = tmp.path().join("parent");
        std::fs::create_dir(&parent).unwrap();
        let before = snapshot(tmp.path());
        let out = parent.join("out");
        let reason = assert_refused(
            &["unpack", f.to_str().unwrap(), "-o", out.to_str().unwrap()],
            &f,
        );
        assert!(reason.starts_with("unsafe member"), "{what}: {reason}");
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{what}: something was written"
        );
        assert!(!out.exists(), "{what}: created the target");
    }
}

#[test]
fn fifos_and_devices_are_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("h.neff");
    std::fs::write(
        &f,
        hostile(vec![
            file("a.json"),
            entry("fifo", PackKind::Other(b'6')),
            entry("tty", PackKind::Other(b'3')),
            entry("disk", PackKind::Other(b'4')),
        ]),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = neff(&["unpack", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("warning: skipped"))
            .count(),
        3,
        "{err}"
    );
    let got: Vec<String> = snapshot(&out).into_keys().collect();
    assert_eq!(got, vec!["a.json"]);
    // Nothing appeared beside the target either.
    let mut beside: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    beside.sort();
    assert_eq!(beside, vec!["h.neff", "out"]);
}

#[test]
fn unpack_refuses_a_non_empty_target() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("existing"), b"x").unwrap();
    let f = root().join("fixtures/acc/kelf-0-gz.neff");
    let reason = assert_refused(
        &[
            "unpack",
            f.to_str().unwrap(),
            "-o",
            tmp.path().to_str().unwrap(),
        ],
        &f,
    );
    assert!(reason.contains("not empty"), "{reason}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn links_that_stay_inside_are_extracted_and_every_path_resolves_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("l.neff");
    std::fs::write(
        &f,
        hostile(vec![
            entry("sub", PackKind::Dir),
            file("sub/file"),
            entry("s", PackKind::Symlink(b"sub".to_vec())),
            entry("t", PackKind::Symlink(b"s/file".to_vec())),
            entry("u", PackKind::Symlink(b"sub/../s/./file".to_vec())),
            entry("dangling", PackKind::Symlink(b"sub/missing".to_vec())),
            entry("h", PackKind::Hardlink(b"sub/file".to_vec())),
        ]),
    )
    .unwrap();
    let out = tmp.path().join("out");
    unpack_ok(&f, &out);
    assert_eq!(std::fs::read(out.join("t")).unwrap(), b"pwned");
    assert_eq!(std::fs::read(out.join("u")).unwrap(), b"pwned");
    assert_eq!(std::fs::read(out.join("h")).unwrap(), b"pwned");
    assert!(std::fs::symlink_metadata(out.join("dangling"))
        .unwrap()
        .is_symlink());
}
