//! `neff ls` and `neff cat` agree with GNU tar (and bsdtar) on archives
//! those tools and Python's tarfile wrote, in every format, gzip and raw.

use std::process::Command;

use crate::common::*;

fn neff_list(f: &std::path::Path) -> Vec<String> {
    let out = neff_ok(&["ls", "--all", f.to_str().unwrap()]);
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| l.split(" -> ").next().unwrap().to_string())
        .collect()
}

fn all_fixtures() -> Vec<std::path::PathBuf> {
    let mut v = neffs("fixtures/interop");
    v.extend(neffs("fixtures/acc"));
    v
}

#[test]
fn ls_all_equals_gnu_tar_listing() {
    let tmp = tempfile::tempdir().unwrap();
    for f in all_fixtures() {
        let p = payload_file(&f, tmp.path());
        assert_eq!(neff_list(&f), tool_list("tar", &p), "{}", f.display());
    }
}

#[test]
fn ls_all_equals_bsdtar_listing() {
    if !have("bsdtar") {
        panic!("bsdtar is missing: run scripts/test, which installs libarchive-tools");
    }
    let tmp = tempfile::tempdir().unwrap();
    for f in all_fixtures() {
        let p = payload_file(&f, tmp.path());
        let mut want = tool_list("bsdtar", &p);
        // bsdtar prints directories without the trailing slash GNU tar keeps
        // when the archive stored none; compare modulo that.
        let mut got = neff_list(&f);
        for v in [&mut want, &mut got] {
            for s in v.iter_mut() {
                if s.len() > 1 && s.ends_with('/') {
                    s.pop();
                }
            }
        }
        assert_eq!(got, want, "{}", f.display());
    }
}

#[test]
fn cat_equals_tar_extract_for_every_member() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for f in all_fixtures() {
        let p = payload_file(&f, tmp.path());
        let fs = f.to_str().unwrap();
        let names = String::from_utf8(neff_ok(&["ls", fs])).unwrap();
        for name in names.lines() {
            let want = Command::new("tar")
                .arg("xOf")
                .arg(&p)
                .arg(name)
                .output()
                .unwrap();
            let want = if want.status.success() {
                want.stdout
            } else {
                // The member was stored with a `./` prefix.
                let o = Command::new("tar")
                    .arg("xOf")
                    .arg(&p)
                    .arg(format!("./{name}"))
                    .output()
                    .unwrap();
                assert!(o.status.success(), "tar xOf {} {name}", p.display());
                o.stdout
            };
            let pattern = format!("^{}$", regex_escape(name));
            let got = neff_ok(&["cat", fs, &pattern]);
            assert_eq!(got, want, "{fs}: member {name}");
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} members checked");
}

fn regex_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

#[test]
fn json_listing_has_the_contract_keys_and_real_offsets() {
    for f in neffs("fixtures/interop") {
        let fs = f.to_str().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&neff_ok(&["ls", "--json", fs])).unwrap();
        let neff = neff::Neff::open(&f).unwrap();
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), neff.files().count());
        for (row, e) in rows.iter().zip(neff.files()) {
            for k in ["name", "kind", "size", "offset", "mtime"] {
                assert!(row.get(k).is_some(), "{fs}: row lacks {k}");
            }
            assert_eq!(row["kind"], "file");
            let (off, size) = (
                row["offset"].as_u64().unwrap() as usize,
                row["size"].as_u64().unwrap() as usize,
            );
            assert_eq!(
                &neff.tar().unwrap()[off..off + size],
                &neff.data(e).unwrap()[..]
            );
        }
    }
}

/// One entry as the index sees it: name, kind, offset, size, mtime, link.
type Row = (Vec<u8>, &'static str, u64, u64, i64, Option<Vec<u8>>);

#[test]
fn mapped_pread_walk_and_in_memory_walk_agree() {
    use neff::{Neff, Options, ReadMode};
    for f in all_fixtures().into_iter().chain(neffs("tests/hostile")) {
        let open = |mode| Neff::open_with(&f, &Options::default().read_mode(mode));
        match (open(ReadMode::Map), open(ReadMode::Read)) {
            (Ok(a), Ok(b)) => {
                let rows = |n: &Neff| -> Vec<Row> {
                    n.entries()
                        .iter()
                        .map(|e| {
                            (
                                n.name(e).to_vec(),
                                e.kind.as_str(),
                                e.offset,
                                e.size,
                                e.mtime,
                                n.link(e).map(<[u8]>::to_vec),
                            )
                        })
                        .collect()
                };
                assert_eq!(rows(&a), rows(&b), "{}", f.display());
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", f.display()),
            (a, b) => panic!("{}: map {:?} vs read {:?}", f.display(), a.err(), b.err()),
        }
    }
}
