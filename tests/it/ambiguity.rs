//! One rule for ambiguous archives: where GNU tar (the reference reader's
//! tool) and libarchive (the runtime's reader, as `bsdtar`) would list an
//! archive differently, `neff` refuses it; where they agree, `neff` lists
//! exactly what they list. Each case is crafted here byte by byte, listed by
//! both tools, and checked against that rule.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// One 512-byte ustar header.
fn header(name: &str, typeflag: u8, size: u64, link: &str) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = typeflag;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    rechecksum(&mut h);
    h
}

fn padded(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(data.len().div_ceil(512) * 512, 0);
    v
}

/// A regular member: header and padded data.
fn member(name: &str, data: &[u8]) -> Vec<u8> {
    let mut v = header(name, b'0', data.len() as u64, "");
    v.extend(padded(data));
    v
}

/// A PAX extended header (`x`) holding `records`.
fn pax(records: &[(&str, &str)]) -> Vec<u8> {
    let body = pax_records(records);
    let mut v = header("PaxHeaders/x", b'x', body.len() as u64, "");
    v.extend(padded(&body));
    v
}

/// A PAX global header (`g`) holding `records`.
fn global(records: &[(&str, &str)]) -> Vec<u8> {
    let mut g = pax(records);
    g[156] = b'g';
    rechecksum(&mut g);
    g
}

fn archive(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut t: Vec<u8> = parts.concat();
    t.extend([0u8; 1024]);
    t
}

/// What a tool lists, or `None` when it fails on the archive.
fn listed(tool: &str, tar: &Path) -> Option<Vec<String>> {
    let o = Command::new(tool).arg("tf").arg(tar).output().unwrap();
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.trim_end_matches('/').to_string())
            .collect()
    })
}

#[test]
fn entries_that_carry_no_data_but_declare_a_size_are_refused_or_read_as_both_tools_read_them() {
    assert!(have("bsdtar"), "bsdtar is missing: run scripts/test");
    let tmp = tempfile::tempdir().unwrap();
    let inner = member("hidden.json", br#"{"secret":1}"#);
    let n = inner.len() as u64;
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for (typeflag, name, link) in [
        (b'1', "h", "a.json"),
        (b'2', "s", "a.json"),
        (b'3', "c", ""),
        (b'4', "b", ""),
        (b'5', "d/", ""),
        (b'6', "f", ""),
    ] {
        let t = typeflag as char;
        // The size in the ustar field, then in a PAX record.
        cases.push((
            format!("ustar-{t}"),
            archive(&[
                member("a.json", b"{}"),
                header(name, typeflag, n, link),
                inner.clone(),
                member("after.json", b"{}"),
            ]),
        ));
        cases.push((
            format!("pax-{t}"),
            archive(&[
                member("a.json", b"{}"),
                pax(&[("size", &n.to_string())]),
                header(name, typeflag, 0, link),
                inner.clone(),
                member("after.json", b"{}"),
            ]),
        ));
        // With no declared size, every reader agrees: nothing to refuse.
        cases.push((
            format!("plain-{t}"),
            archive(&[
                member("a.json", b"{}"),
                header(name, typeflag, 0, link),
                member("after.json", b"{}"),
            ]),
        ));
    }
    let (mut refused, mut agreed) = (0, 0);
    for (label, tar) in &cases {
        let tar_path = tmp.path().join(format!("{label}.tar"));
        std::fs::write(&tar_path, tar).unwrap();
        let gnu = listed("tar", &tar_path);
        let bsd = listed("bsdtar", &tar_path);
        let neff_path = tmp.path().join(format!("{label}.neff"));
        std::fs::write(&neff_path, wrap(tar)).unwrap();
        let o = neff(&["ls", "--all", neff_path.to_str().unwrap()]);
        if o.status.success() {
            let ours: Vec<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(|l| {
                    l.split(" -> ")
                        .next()
                        .unwrap()
                        .trim_end_matches('/')
                        .to_string()
                })
                .collect();
            assert!(
                gnu.is_some() && gnu == bsd,
                "{label}: neff read it, but GNU tar ({gnu:?}) and bsdtar ({bsd:?}) disagree"
            );
            assert_eq!(
                Some(ours),
                gnu,
                "{label}: neff lists other members than both tools"
            );
            agreed += 1;
        } else {
            assert_eq!(o.status.code(), Some(1), "{label}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("declares"), "{label}: {err}");
            assert!(
                !label.starts_with("plain"),
                "{label}: refused an ordinary archive: {err}"
            );
            refused += 1;
        }
    }
    assert_eq!(refused, 12, "every entry with a size is refused");
    assert_eq!(agreed, 6);
}

#[test]
fn a_pax_name_ends_at_its_first_nul_and_global_names_or_sizes_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "nul-path",
            archive(&[
                member("a.json", b"{}"),
                pax(&[("path", "safe.json\0../../evil.json")]),
                member("orig.json", b"{}"),
            ]),
        ),
        (
            "global-path",
            archive(&[
                member("a.json", b"{}"),
                global(&[("path", "renamed.json")]),
                member("b.json", b"{}"),
                member("c.json", b"{}"),
            ]),
        ),
        (
            "global-size",
            archive(&[
                member("a.json", b"{}"),
                global(&[("size", "0")]),
                member("b.json", b"{\"x\":1}"),
                member("c.json", b"{}"),
            ]),
        ),
    ];
    for (label, tar) in &cases {
        let tar_path = tmp.path().join(format!("{label}.tar"));
        std::fs::write(&tar_path, tar).unwrap();
        let gnu = listed("tar", &tar_path);
        let bsd = listed("bsdtar", &tar_path);
        let neff_path = tmp.path().join(format!("{label}.neff"));
        std::fs::write(&neff_path, wrap(tar)).unwrap();
        let o = neff(&["ls", "--all", neff_path.to_str().unwrap()]);
        if *label == "nul-path" {
            // Both tools end the name at the NUL: so does neff.
            assert_eq!(gnu, bsd, "{label}");
            let ours: Vec<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
            assert_eq!(Some(ours), gnu, "{label}");
        } else {
            assert_ne!(gnu, bsd, "{label}: the tools disagree");
            assert_eq!(o.status.code(), Some(1), "{label}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("global PAX record sets"), "{label}: {err}");
        }
    }
}

/// neff's listing of `tar` behind a NEFF header, or `None` when refused
/// (exit 1 with `reason` in its one-line message).
fn neff_listed(dir: &Path, label: &str, tar: &[u8], reason: &str) -> Option<Vec<String>> {
    let p = dir.join(format!("{label}.neff"));
    std::fs::write(&p, wrap(tar)).unwrap();
    let o = neff(&["ls", "--all", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        return Some(
            String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect(),
        );
    }
    assert_eq!(o.status.code(), Some(1), "{label}: {err}");
    assert_eq!(err.lines().count(), 1, "{label}: {err}");
    assert!(err.contains(reason), "{label}: {err}");
    None
}

#[test]
fn archives_the_differential_fuzzers_found_are_refused_where_a_reader_would_differ() {
    assert!(have("bsdtar"), "bsdtar is missing: run scripts/test");
    let tmp = tempfile::tempdir().unwrap();
    let write = |label: &str, tar: &[u8]| {
        let p = tmp.path().join(format!("{label}.tar"));
        std::fs::write(&p, tar).unwrap();
        p
    };
    // Two PAX headers for one entry: GNU tar keeps the last (the entry is
    // `plain`), libarchive warns; merging them would name it `first`.
    let two_x = archive(&[
        pax(&[("path", "first")]),
        pax(&[("mtime", "5")]),
        member("plain", b"data"),
    ]);
    let p = write("two-x", &two_x);
    assert_eq!(listed("tar", &p), Some(vec!["plain".to_string()]));
    assert_eq!(listed("bsdtar", &p), None, "libarchive warns");
    let r = neff_listed(tmp.path(), "two-x", &two_x, "a second PAX extended header");
    assert_eq!(r, None);

    // The last entry's data is all there but its padding is cut: libarchive
    // refuses ("Truncated input file"), so does neff.
    let mut cut = archive(&[member("a.json", b"{}"), member("b.json", &[b' '; 600])]);
    cut.truncate(512 + 512 + 512 + 600 + 10);
    let p = write("cut-padding", &cut);
    assert_eq!(listed("bsdtar", &p), None);
    let r = neff_listed(tmp.path(), "cut-padding", &cut, "padding is cut");
    assert_eq!(r, None);

    // A cut block of zeros after the last entry: GNU tar reads it as the
    // end, libarchive refuses ("Truncated tar archive"): refused.
    let mut tail = member("a.json", b"{}");
    tail.extend([0u8; 100]);
    let p = write("cut-zero-block", &tail);
    assert_eq!(listed("tar", &p), Some(vec!["a.json".to_string()]));
    assert_eq!(listed("bsdtar", &p), None);
    let r = neff_listed(tmp.path(), "cut-zero-block", &tail, "truncated header");
    assert_eq!(r, None);

    // No bytes at all: GNU tar refuses (as libarchive's tar reader does).
    let p = write("empty", b"");
    assert_eq!(listed("tar", &p), None);
    let gz = neff::pack::gzip(b"");
    let np = tmp.path().join("empty.neff");
    std::fs::write(&np, wrap(&gz)).unwrap();
    let o = neff(&["ls", np.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("empty tar"));

    // Two GNU long names for one entry: both tools take the last; so does
    // neff (the tar crate refuses it: a departure of that crate's).
    let long = |name: &str| {
        let mut body = name.as_bytes().to_vec();
        body.push(0);
        let mut v = header("././@LongLink", b'L', body.len() as u64, "");
        v.extend(padded(&body));
        v
    };
    let two_l = archive(&[long("first"), long("second"), member("plain", b"data")]);
    let p = write("two-l", &two_l);
    let want = Some(vec!["second".to_string()]);
    assert_eq!(listed("tar", &p), want);
    assert_eq!(listed("bsdtar", &p), want);
    assert_eq!(neff_listed(tmp.path(), "two-l", &two_l, ""), want);
}

/// Recomputes a header block's checksum after its fields were edited.
fn rechecksum(h: &mut [u8]) {
    h[148..156].fill(b' ');
    let sum: u32 = h[..512].iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

#[test]
fn numeric_fields_the_two_readers_would_read_differently_are_refused() {
    assert!(have("bsdtar"), "bsdtar is missing: run scripts/test");
    let tmp = tempfile::tempdir().unwrap();
    // A size field whose digits follow a NUL: GNU tar skips the NUL and
    // reads 4 bytes of data; libarchive reads size 0 and then finds a
    // header where the data is.
    let mut a = member("a.json", b"{}\n ");
    a[124..136].copy_from_slice(b"\x000000000004\0");
    rechecksum(&mut a);
    let nul_size = archive(&[a, member("b.json", b"{}")]);
    let p = tmp.path().join("nul-size.tar");
    std::fs::write(&p, &nul_size).unwrap();
    let content = |tool: &str| {
        let o = Command::new(tool)
            .args(["-xOf", p.to_str().unwrap(), "a.json"])
            .output()
            .unwrap();
        o.stdout
    };
    assert_eq!(content("tar"), b"{}\n ");
    assert_eq!(content("bsdtar"), b"", "libarchive reads size 0");
    assert_eq!(
        neff_listed(tmp.path(), "nul-size", &nul_size, "read it differently"),
        None
    );

    // A base-256 marker GNU tar does not write (0x81): libarchive reads it
    // as a number (but not in a first header), GNU tar refuses it.
    let mut b = member("a.json", b"{}");
    b[124..136].copy_from_slice(&[0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    rechecksum(&mut b);
    let marker = archive(&[b]);
    let r = neff_listed(tmp.path(), "marker", &marker, "size field");
    assert_eq!(r, None);

    // A device number field with a space inside its digits: libarchive
    // does not recognize the archive, GNU tar lists it; refused.
    let mut c = member("a.json", b"{}");
    c[329..337].copy_from_slice(b"00000 0\0");
    rechecksum(&mut c);
    let dev = archive(&[c]);
    let p = tmp.path().join("dev.tar");
    std::fs::write(&p, &dev).unwrap();
    assert_eq!(listed("tar", &p), Some(vec!["a.json".to_string()]));
    assert_eq!(listed("bsdtar", &p), None);
    let r = neff_listed(tmp.path(), "dev", &dev, "devmajor field");
    assert_eq!(r, None);

    // The same rule holds in a PAX header's own fields: libarchive does not
    // recognize a tar whose first header's mode has digits after a NUL.
    let mut x = pax(&[("path", "named.json")]);
    x[100..108].copy_from_slice(b"0\0\x000000\0");
    rechecksum(&mut x);
    let pax_mode = archive(&[x, member("a.json", b"{}")]);
    let p = tmp.path().join("pax-mode.tar");
    std::fs::write(&p, &pax_mode).unwrap();
    assert_eq!(listed("bsdtar", &p), None);
    let r = neff_listed(tmp.path(), "pax-mode", &pax_mode, "mode field");
    assert_eq!(r, None);
}

#[test]
fn a_link_name_on_a_regular_file_is_ignored_as_both_readers_ignore_it() {
    let mut a = member("a.json", b"{}");
    a[157..163].copy_from_slice(b"target");
    rechecksum(&mut a);
    let file = wrap(&archive(&[a]));
    let n = neff::Neff::from_bytes(file, &Default::default()).unwrap();
    let e = &n.entries()[0];
    assert_eq!(e.kind, neff::Kind::File);
    assert_eq!(n.link(e), None);
}

#[test]
fn entry_types_the_two_readers_list_differently_are_refused_and_old_directories_read() {
    assert!(have("bsdtar"), "bsdtar is missing: run scripts/test");
    let tmp = tempfile::tempdir().unwrap();
    let typed = |name: &str, typeflag: u8, data: &[u8]| {
        let mut v = header(name, typeflag, data.len() as u64, "");
        v.extend(padded(data));
        v
    };
    // A Solaris ACL, a volume label with data: GNU tar lists them as
    // members, libarchive applies or skips them: refused. An unknown type
    // is a file to both (GNU tar warns): read. A GNU dump directory (`D`)
    // with data is a directory to both, but only libarchive hands its data
    // out: refused (tests/tar_constructs.rs pins each with `tar xOf`).
    for (t, name, differ, reason) in [
        (b'A', "acl", true, Some("typeflag 'A'")),
        (b'V', "label", true, Some("volume label")),
        (b'Q', "q", false, None),
        (b'D', "dumpdir/", false, Some("dump directory")),
    ] {
        let tar = archive(&[typed(name, t, b"Yx\0\0"), member("next", b"x")]);
        let p = tmp.path().join("t.tar");
        std::fs::write(&p, &tar).unwrap();
        let (gnu, bsd) = (listed("tar", &p), listed("bsdtar", &p));
        assert_eq!(
            gnu != bsd,
            differ,
            "typeflag {}: {gnu:?} {bsd:?}",
            t as char
        );
        let label = format!("type-{}", t as char);
        let got = neff_listed(tmp.path(), &label, &tar, reason.unwrap_or("-"));
        match reason {
            Some(_) => assert_eq!(got, None, "{label}"),
            None => assert_eq!(got, gnu, "{label}"),
        }
    }
    // A regular file named with a trailing slash is a directory to both.
    let tar = archive(&[typed("old/", b'0', b""), member("next", b"x")]);
    let p = tmp.path().join("old.tar");
    std::fs::write(&p, &tar).unwrap();
    let o = Command::new("tar").arg("tvf").arg(&p).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with('d'));
    let file = wrap(&tar);
    let n = neff::Neff::from_bytes(file, &Default::default()).unwrap();
    assert_eq!(n.entries()[0].kind, neff::Kind::Dir);
    // A contiguous file so named: a file to GNU tar, a directory to
    // libarchive.
    let tar = archive(&[typed("c7/", b'7', b""), member("next", b"x")]);
    let p = tmp.path().join("c7.tar");
    std::fs::write(&p, &tar).unwrap();
    let o = Command::new("tar").arg("tvf").arg(&p).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with('C'));
    let o = Command::new("bsdtar").arg("tvf").arg(&p).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with('d'));
    assert_eq!(neff_listed(tmp.path(), "c7", &tar, "contiguous-file"), None);
}
