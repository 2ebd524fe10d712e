//! Tar constructs at the edges of the formats, built by hand here (no tool
//! writes most of them), each read by GNU tar (`tar tvf`, `tar xOf`) and
//! libarchive (`bsdtar tvf`, `bsdtar -xOf`) at test time and by `neff`
//! behind a raw and a gzip NEFF header. Where the two tools list the same
//! members (names, sizes) and extract the same bytes, `neff` must read
//! exactly that; where they differ, `neff` must refuse with a one-line
//! message that says so. Each case also states which of the two it is, so
//! a change in either tool or in `neff` fails here. docs/FORMAT.md §10
//! holds the table of these cases.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// A ustar header whose fields a case may overwrite, block by block.
#[derive(Clone)]
struct Hdr {
    name: Vec<u8>,
    mode: Vec<u8>,
    uid: Vec<u8>,
    gid: Vec<u8>,
    size: Vec<u8>,
    mtime: Vec<u8>,
    typeflag: u8,
    link: Vec<u8>,
    devmajor: Vec<u8>,
}

impl Hdr {
    fn new(name: &str, typeflag: u8, size: usize) -> Hdr {
        Hdr {
            name: name.as_bytes().to_vec(),
            mode: b"0000644\0".to_vec(),
            uid: b"0000000\0".to_vec(),
            gid: b"0000000\0".to_vec(),
            size: format!("{size:011o}\0").into_bytes(),
            mtime: b"00000000000\0".to_vec(),
            typeflag,
            link: Vec::new(),
            devmajor: b"0000000\0".to_vec(),
        }
    }

    fn block(&self) -> Vec<u8> {
        let mut h = vec![0u8; 512];
        h[..self.name.len()].copy_from_slice(&self.name);
        h[100..108].copy_from_slice(&self.mode);
        h[108..116].copy_from_slice(&self.uid);
        h[116..124].copy_from_slice(&self.gid);
        h[124..136].copy_from_slice(&self.size);
        h[136..148].copy_from_slice(&self.mtime);
        h[156] = self.typeflag;
        h[157..157 + self.link.len()].copy_from_slice(&self.link);
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[329..337].copy_from_slice(&self.devmajor);
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    /// This header followed by `data`, padded to whole blocks.
    fn with(&self, data: &[u8]) -> Vec<u8> {
        let mut v = self.block();
        v.extend_from_slice(data);
        v.resize(v.len().div_ceil(512) * 512, 0);
        v
    }
}

/// A regular member.
fn member(name: &str, data: &[u8]) -> Vec<u8> {
    Hdr::new(name, b'0', data.len()).with(data)
}

/// A member whose header `edit` changes (the data is `data` whatever the
/// size field then says).
fn edited(name: &str, data: &[u8], edit: impl FnOnce(&mut Hdr)) -> Vec<u8> {
    let mut h = Hdr::new(name, b'0', data.len());
    edit(&mut h);
    h.with(data)
}

/// A PAX `x` header holding `records` (see [`pax_raw`] for records built
/// by hand).
fn pax(records: &[(&str, &str)]) -> Vec<u8> {
    pax_raw(&pax_records(records))
}

fn pax_raw(body: &[u8]) -> Vec<u8> {
    Hdr::new("PaxHeaders/x", b'x', body.len()).with(body)
}

fn archive(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut t: Vec<u8> = parts.concat();
    t.extend([0u8; 1024]);
    t
}

/// What a tool reads: the members it lists (name, kind, size) and the bytes it
/// extracts to stdout, or `None` when it stops on the archive. GNU tar
/// reports bad metadata (exit 2) but lists and extracts: what it lists
/// and extracts is what counts.
#[derive(Debug, PartialEq)]
struct Reading {
    members: Vec<(String, char, u64)>,
    bytes: Vec<u8>,
}

fn tool_reads(tool: &str, tar: &Path) -> Option<Reading> {
    let list = Command::new(tool).arg("tvf").arg(tar).output().unwrap();
    let extract = Command::new(tool).arg("-xOf").arg(tar).output().unwrap();
    let bsd = tool == "bsdtar";
    if bsd && list.status.code().is_none() && extract.status.success() {
        // bsdtar's verbose listing dies formatting a time beyond the
        // calendar (libarchive read it: -xOf succeeds). List the names,
        // and each member's size as what it extracts.
        return bsdtar_without_times(tar, extract.stdout);
    }
    if bsd && !(list.status.success() && extract.status.success()) {
        return None;
    }
    if !bsd && (list.status.code() > Some(2) || list.stdout.is_empty()) {
        return None;
    }
    let mut members = Vec::new();
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // GNU: perms owner/group size date time name [unknown file type…];
        // bsdtar: perms links owner group size month day year name.
        // (GNU tar shows an empty name as nothing.)
        let (size, name) = if bsd {
            (f[4], f[8])
        } else {
            (f[2], f.get(5).copied().unwrap_or(""))
        };
        if !bsd && line.starts_with('V') {
            // A volume label: GNU tar shows it ("--Volume Header--") but it
            // is no member: nothing is extracted for it.
            continue;
        }
        // GNU tar's note on a multi-volume continuation is no part of the name.
        let name = name.split("--Continued at byte").next().unwrap();
        let name = name.trim_end_matches('/').to_string();
        // The kind: `f` a regular file (GNU tar shows a contiguous file as
        // `C` and a type it does not know as `?`, and extracts both as
        // regular files), `d` a directory, else the listing's letter.
        let kind = match line.chars().next().unwrap() {
            '-' => 'f',
            'C' | '?' if !bsd => 'f',
            c => c,
        };
        members.push((name, kind, size.parse().unwrap()));
    }
    Some(Reading {
        members,
        bytes: extract.stdout,
    })
}

fn bsdtar_without_times(tar: &Path, bytes: Vec<u8>) -> Option<Reading> {
    let names = Command::new("bsdtar").arg("tf").arg(tar).output().unwrap();
    assert!(names.status.success());
    let members = String::from_utf8_lossy(&names.stdout)
        .lines()
        .map(|name| {
            let one = Command::new("bsdtar")
                .arg("-xOf")
                .arg(tar)
                .arg(name)
                .output()
                .unwrap();
            let kind = if name.ends_with('/') { 'd' } else { 'f' };
            let name = name.trim_end_matches('/').to_string();
            (name, kind, one.stdout.len() as u64)
        })
        .collect();
    Some(Reading { members, bytes })
}

/// What `neff` reads from the NEFF at `path` (opened from disk), in the
/// same terms, with each member's mtime and mode.
fn neff_reads(path: &Path) -> Result<(Reading, Vec<(i64, u32)>), String> {
    let n = neff::Neff::open(path).map_err(|e| e.to_string())?;
    let mut members = Vec::new();
    let mut bytes = Vec::new();
    let mut meta = Vec::new();
    for e in n.entries() {
        let kind = match e.kind {
            neff::Kind::File => 'f',
            neff::Kind::Dir => 'd',
            _ => 'o',
        };
        members.push((
            String::from_utf8_lossy(n.name(e)).into_owned(),
            kind,
            e.size,
        ));
        if e.kind == neff::Kind::File {
            bytes.extend_from_slice(&n.data(e).map_err(|e| e.to_string())?);
        }
        meta.push((e.mtime, e.mode));
    }
    Ok((Reading { members, bytes }, meta))
}

/// What a case must do.
enum Want {
    /// Both tools read the same; `neff` reads it so, with these mtimes
    /// (one per member, when given).
    Read(Option<&'static [i64]>),
    /// The tools read it differently; `neff` refuses, naming this.
    Refused(&'static str),
}

/// Runs every case: the tools at test time, then `neff` raw and gzip.
fn check(cases: Vec<(&str, Vec<u8>, Want)>) {
    assert!(have("tar"), "GNU tar is missing: run scripts/test");
    assert!(have("bsdtar"), "bsdtar is missing: run scripts/test");
    let tmp = tempfile::tempdir().unwrap();
    for (label, tar, want) in cases {
        let tar_path = tmp.path().join(format!("{label}.tar"));
        std::fs::write(&tar_path, &tar).unwrap();
        let gnu = tool_reads("tar", &tar_path);
        let bsd = tool_reads("bsdtar", &tar_path);
        for (how, payload) in [("raw", tar.clone()), ("gzip", neff::pack::gzip(&tar))] {
            let p = tmp.path().join(format!("{label}-{how}.neff"));
            std::fs::write(&p, wrap(&payload)).unwrap();
            let ours = neff_reads(&p);
            match &want {
                Want::Read(mtimes) => {
                    assert!(
                        gnu.is_some() && gnu == bsd,
                        "{label}: the tools differ, yet it should be read:\n  GNU tar: {gnu:?}\n  bsdtar:  {bsd:?}"
                    );
                    let (reading, meta) =
                        ours.unwrap_or_else(|e| panic!("{label} ({how}): refused: {e}"));
                    assert_eq!(Some(&reading), gnu.as_ref(), "{label} ({how})");
                    if let Some(m) = mtimes {
                        let got: Vec<i64> = meta.iter().map(|m| m.0).collect();
                        assert_eq!(&got, m, "{label} ({how}): mtimes");
                    }
                }
                Want::Refused(reason) => {
                    assert_ne!(gnu, bsd, "{label}: the tools agree, yet it is refused");
                    let e = ours
                        .err()
                        .unwrap_or_else(|| panic!("{label} ({how}): read"));
                    assert!(e.contains(reason), "{label} ({how}): {e}");
                    assert!(e.contains("read it differently"), "{label} ({how}): {e}");
                    // The CLI's refusal: one line naming the file, exit 1.
                    let msg = assert_refused(&["ls", p.to_str().unwrap()], &p);
                    assert!(msg.contains(reason), "{label} ({how}): {msg}");
                }
            }
        }
    }
}

fn first() -> Vec<u8> {
    member("first", b"F1")
}

/// GNU base-256: `0x80` then the big-endian value, or `0xff` and two's
/// complement for a negative one, in a field of `len` bytes.
fn b256(v: i64, len: usize) -> Vec<u8> {
    let mut f = vec![if v < 0 { 0xff } else { 0 }; len];
    f[len - 8..].copy_from_slice(&v.to_be_bytes());
    if v >= 0 {
        f[0] = 0x80;
    }
    f
}

#[test]
fn base256_fields_are_read_as_both_tools_read_them_negative_times_included() {
    let data = b"AAAA";
    check(vec![
        (
            "negative-mtime",
            archive(&[
                first(),
                edited("a", data, |h| h.mtime = b256(-86400, 12)),
                member("b", b"B"),
            ]),
            Want::Read(Some(&[0, -86400, 0])),
        ),
        (
            "negative-mtime-first",
            archive(&[edited("a", data, |h| h.mtime = b256(-86400, 12))]),
            Want::Read(Some(&[-86400])),
        ),
        (
            "mode",
            archive(&[edited("a", data, |h| h.mode = b256(0o644, 8))]),
            Want::Read(None),
        ),
        (
            "uid-gid-negative",
            archive(&[edited("a", data, |h| {
                h.uid = b256(1000, 8);
                h.gid = b256(-1, 8);
            })]),
            Want::Read(None),
        ),
        (
            "size",
            archive(&[
                edited("a", data, |h| h.size = b256(4, 12)),
                member("b", b"B"),
            ]),
            Want::Read(None),
        ),
        (
            // GNU tar: out of time_t range (an error, read on); libarchive
            // saturates. Metadata only: the same members and bytes.
            "mtime-beyond-64-bits",
            archive(&[
                first(),
                edited("a", data, |h| {
                    h.mtime = b256(0, 12);
                    h.mtime[1] = 0x7f;
                }),
            ]),
            Want::Read(Some(&[0, i64::MAX])),
        ),
        (
            "negative-size",
            archive(&[
                first(),
                edited("a", data, |h| h.size = b256(-1, 12)),
                member("b", b"B"),
            ]),
            Want::Refused("size field"),
        ),
        (
            "size-marker-0x81",
            archive(&[
                first(),
                edited("a", data, |h| {
                    h.size = b256(4, 12);
                    h.size[0] = 0x81;
                }),
                member("b", b"B"),
            ]),
            Want::Refused("size field"),
        ),
    ]);
}

#[test]
fn octal_fields_are_read_to_the_first_space_or_nul_where_both_tools_do() {
    let data = b"AAAA";
    let size = |f: &'static [u8]| move |h: &mut Hdr| h.size = f.to_vec();
    let after = |edit: Box<dyn FnOnce(&mut Hdr)>| {
        archive(&[first(), edited("a", data, edit), member("b", b"B")])
    };
    check(vec![
        (
            "size-space-inside",
            after(Box::new(size(b"0000000004 7"))),
            Want::Read(None),
        ),
        (
            "size-nul-inside",
            after(Box::new(size(b"0000000004\x007"))),
            Want::Read(None),
        ),
        (
            "size-space-8",
            after(Box::new(size(b"0000000004 8"))),
            Want::Read(None),
        ),
        (
            "size-leading-spaces",
            after(Box::new(size(b"         4 \0"))),
            Want::Read(None),
        ),
        (
            "size-tab",
            after(Box::new(size(b"\t0000000004\0"))),
            Want::Read(None),
        ),
        (
            "size-no-terminator",
            after(Box::new(size(b"000000000004"))),
            Want::Read(None),
        ),
        (
            "leading-spaces-first",
            archive(&[edited("a", data, size(b"         4 \0")), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "no-terminator-first",
            archive(&[edited("a", data, size(b"000000000004")), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "size-all-nuls",
            archive(&[
                first(),
                edited("a", b"", size(b"\0\0\0\0\0\0\0\0\0\0\0\0")),
                member("b", b"B"),
            ]),
            Want::Read(None),
        ),
        (
            // Metadata only: GNU tar reports each (exit 2) and lists and
            // extracts the same members and bytes as libarchive.
            "metadata-oddities",
            after(Box::new(|h: &mut Hdr| {
                h.mtime = b"0000000001x\0".to_vec();
                h.mode = b"644 12\0\0".to_vec();
                h.uid = b"        ".to_vec();
                h.gid = b"000001x\0".to_vec();
            })),
            Want::Read(Some(&[0, 1, 0])),
        ),
        (
            "mtime-all-spaces",
            after(Box::new(|h: &mut Hdr| h.mtime = vec![b' '; 12])),
            Want::Read(Some(&[0, 0, 0])),
        ),
        (
            "size-space-inside-first",
            archive(&[edited("a", data, size(b"0000000004 7")), member("b", b"B")]),
            Want::Refused("first header"),
        ),
        (
            "size-nul-inside-first",
            archive(&[
                edited("a", data, size(b"0000000004\x007")),
                member("b", b"B"),
            ]),
            Want::Refused("first header"),
        ),
        (
            "mtime-garbage-first",
            archive(&[
                edited("a", data, |h| h.mtime = b"0000000001x\0".to_vec()),
                member("b", b"B"),
            ]),
            Want::Refused("mtime field"),
        ),
        (
            "devmajor-space-inside-first",
            archive(&[edited("a", data, |h| h.devmajor = b"00000 0\0".to_vec())]),
            Want::Refused("devmajor field"),
        ),
        (
            "size-all-spaces",
            after(Box::new(size(b"            "))),
            Want::Refused("size field"),
        ),
        (
            "size-garbage",
            after(Box::new(size(b"0000000004x\0"))),
            Want::Refused("size field"),
        ),
        (
            "size-leading-nul",
            after(Box::new(size(b"\x0000000000004"))),
            Want::Refused("size field"),
        ),
    ]);
}

#[test]
fn pax_records_are_read_as_both_tools_read_them() {
    let after = |x: Vec<u8>| archive(&[first(), x, member("a", b"AAAA"), member("b", b"B")]);
    let sized = |x: Vec<u8>| {
        archive(&[
            first(),
            x,
            Hdr::new("a", b'0', 1).with(b"AAAA"),
            member("b", b"B"),
        ])
    };
    check(vec![
        (
            "length-leading-zeros",
            after(pax_raw(b"00019 path=longnam\n")),
            Want::Read(None),
        ),
        (
            "length-leading-zeros-first",
            archive(&[pax_raw(b"00019 path=longnam\n"), member("a", b"AAAA")]),
            Want::Read(None),
        ),
        (
            "mtime-fraction",
            after(pax(&[("mtime", "1.5")])),
            Want::Read(Some(&[0, 1, 0])),
        ),
        (
            "mtime-negative-fraction",
            after(pax(&[("mtime", "-1.5")])),
            Want::Read(Some(&[0, -2, 0])),
        ),
        (
            "mtime-negative",
            after(pax(&[("mtime", "-1")])),
            Want::Read(Some(&[0, -1, 0])),
        ),
        // Out of range or malformed: GNU tar ignores it (an error, read
        // on), libarchive reads something else; metadata only.
        (
            "mtime-out-of-range",
            after(pax(&[("mtime", "99999999999999999999")])),
            Want::Read(Some(&[0, 0, 0])),
        ),
        (
            "mtime-malformed",
            after(pax(&[("mtime", "abc")])),
            Want::Read(Some(&[0, 0, 0])),
        ),
        (
            "size-override",
            sized(pax(&[("size", "4")])),
            Want::Read(None),
        ),
        (
            "size-leading-zeros",
            sized(pax(&[("size", "0004")])),
            Want::Read(None),
        ),
        (
            "size-empty",
            sized(pax(&[("size", "")])),
            Want::Refused("PAX size"),
        ),
        (
            "size-trailing-space",
            sized(pax(&[("size", "4 ")])),
            Want::Refused("PAX size"),
        ),
        (
            "size-fraction",
            sized(pax(&[("size", "4.0")])),
            Want::Refused("PAX size"),
        ),
        (
            "size-plus",
            sized(pax(&[("size", "+4")])),
            Want::Refused("PAX size"),
        ),
        (
            "size-negative",
            sized(pax(&[("size", "-4")])),
            Want::Refused("PAX size"),
        ),
        (
            "size-huge",
            sized(pax(&[("size", "99999999999999999999")])),
            Want::Refused("PAX size"),
        ),
        // An empty name: GNU tar reads "" ("Substituting `.'"), libarchive
        // the header's.
        (
            "path-empty",
            after(pax(&[("path", "")])),
            Want::Refused("an empty PAX path"),
        ),
        (
            "path-nul-first",
            after(pax(&[("path", "\0zz")])),
            Want::Refused("an empty PAX path"),
        ),
        (
            "sparse-name-empty",
            archive(&[
                first(),
                pax(&[
                    ("GNU.sparse.major", "1"),
                    ("GNU.sparse.minor", "0"),
                    ("GNU.sparse.name", ""),
                    ("GNU.sparse.realsize", "5"),
                ]),
                member(
                    "GNUSparseFile.0/s",
                    &[&b"1\n0\n5\n"[..], &[0; 506], b"hello"].concat(),
                ),
            ]),
            Want::Refused("an empty PAX path or GNU.sparse.name"),
        ),
        // On a file, both ignore a link name.
        (
            "linkpath-empty-file",
            after(pax(&[("linkpath", "")])),
            Want::Read(None),
        ),
    ]);
}

#[test]
fn an_empty_pax_linkpath_on_a_link_is_refused_as_the_tools_read_its_target_differently() {
    // (Reading holds no link targets: the listings are compared here.)
    let mut link = Hdr::new("l", b'2', 0);
    link.link = b"a".to_vec();
    let tar = archive(&[pax(&[("linkpath", "")]), link.block(), member("a", b"A")]);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.tar");
    std::fs::write(&path, &tar).unwrap();
    let target = |tool: &str| {
        let o = Command::new(tool).arg("tvf").arg(&path).output().unwrap();
        let list = String::from_utf8(o.stdout).unwrap();
        list.lines()
            .next()
            .unwrap()
            .split(" -> ")
            .nth(1)
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(target("tar"), "", "GNU tar");
    assert_eq!(target("bsdtar"), "a", "bsdtar");
    let p = tmp.path().join("t.neff");
    std::fs::write(&p, wrap(&tar)).unwrap();
    let msg = assert_refused(&["ls", p.to_str().unwrap()], &p);
    assert!(msg.contains("an empty PAX linkpath"), "{msg}");
}

#[test]
fn the_ustar_prefix_is_read_whatever_the_version_field_holds_as_both_tools_read_it() {
    // GNU tar takes a header as POSIX when its magic is "ustar\0" and
    // libarchive when it starts "ustar"; neither looks at the version, so
    // both join the prefix to the name (the tar crate wants "00": found by
    // the vs_tar_crate fuzz run, where neff was right).
    let with = |version: &[u8; 2], prefix: &[u8]| {
        let mut v = member("m", b"MM");
        v[263..265].copy_from_slice(version);
        v[345..345 + prefix.len()].copy_from_slice(prefix);
        v[148..156].fill(b' ');
        let sum: u32 = v[..512].iter().map(|&b| u32::from(b)).sum();
        v[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        v
    };
    let mut cases = Vec::new();
    for (label, version) in [
        ("prefix-version-00", b"00"),
        ("prefix-version-c0", b"c0"),
        ("prefix-version-nul", b"\0\0"),
        ("prefix-version-spaces", b"  "),
    ] {
        cases.push((
            label,
            archive(&[first(), with(version, b"pre/fix"), member("b", b"B")]),
            Want::Read(None),
        ));
    }
    check(cases);
}

#[test]
fn entry_types_both_tools_handle_are_read_and_the_others_refused() {
    let typed = |name: &str, t: u8, data: &[u8]| Hdr::new(name, t, data.len()).with(data);
    let mut cases = vec![
        (
            "contiguous-7",
            archive(&[first(), typed("c7", b'7', b"SEVEN"), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "dump-dir-empty",
            archive(&[first(), typed("dd/", b'D', b""), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "dump-dir-no-slash",
            archive(&[first(), typed("dd", b'D', b""), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "volume-label-first",
            archive(&[
                typed("label", b'V', b""),
                member("a", b"AAAA"),
                member("b", b"B"),
            ]),
            Want::Read(None),
        ),
        (
            "volume-label-later",
            archive(&[first(), typed("label", b'V', b""), member("b", b"B")]),
            Want::Read(None),
        ),
        (
            "dump-dir-with-data",
            archive(&[
                first(),
                typed("dd/", b'D', b"Yx\0Nb\0\0"),
                member("b", b"B"),
            ]),
            Want::Refused("dump directory"),
        ),
        (
            "volume-label-with-data",
            archive(&[typed("label", b'V', b"XXXX"), member("b", b"B")]),
            Want::Refused("volume label"),
        ),
        (
            "volume-label-after-pax",
            archive(&[
                first(),
                pax(&[("path", "renamed")]),
                typed("label", b'V', b""),
                member("b", b"B"),
            ]),
            Want::Refused("volume label"),
        ),
        (
            "multi-volume-first",
            archive(&[typed("cont", b'M', b"MMMM"), member("b", b"B")]),
            Want::Refused("multi-volume"),
        ),
        (
            "solaris-acl",
            archive(&[first(), typed("acl", b'A', b"Yx\0\0"), member("b", b"B")]),
            Want::Refused("typeflag 'A'"),
        ),
        (
            "unknown-type-named-as-directory",
            archive(&[first(), typed("u/", b'Q', b""), member("b", b"B")]),
            Want::Refused("unknown-type"),
        ),
        (
            "odd-typeflag-first",
            archive(&[typed("u", b'!', b"UNK"), member("b", b"B")]),
            Want::Refused("first header"),
        ),
    ];
    // Types neither tool knows: a regular file to both (GNU tar warns
    // "extracted as normal file").
    for t in [
        b'Q', b'N', b'I', b'E', b'Z', b'z', b'9', b'8', b'!', b'~', 0x01, 0xff,
    ] {
        let label: &'static str = Box::leak(format!("unknown-type-{t:02x}").into_boxed_str());
        cases.push((
            label,
            archive(&[first(), typed("u", t, b"UNK"), member("b", b"B")]),
            Want::Read(None),
        ));
    }
    cases.push((
        "unknown-type-first",
        archive(&[typed("u", b'Q', b"UNK"), member("b", b"B")]),
        Want::Read(None),
    ));
    check(cases);
}

#[test]
fn random_size_fields_are_read_only_where_both_tools_read_them_alike() {
    assert!(
        have("tar") && have("bsdtar"),
        "GNU tar or bsdtar is missing"
    );
    let tmp = tempfile::tempdir().unwrap();
    // Size fields from the bytes the two parsers treat differently: digits
    // (8 is not octal), spaces, tabs, NULs, newlines, signs, garbage, and
    // base-256 markers; mostly zeros, so most sizes fit the data present.
    let alphabet = b"00000000000014 \t\0\0\n8x+-";
    let bytes = noise(300 * 13, 21);
    let (mut read, mut refused) = (0, 0);
    for (i, r) in bytes.chunks(13).enumerate() {
        let mut f: Vec<u8> = r[..12]
            .iter()
            .map(|&b| alphabet[b as usize % alphabet.len()])
            .collect();
        match r[12] % 8 {
            0 => f[0] = 0x80,
            1 => f[0] = 0xff,
            2 => f[0] = b' ',
            _ => {}
        }
        let in_first = r[12] % 5 == 0;
        // Zeros for data: a size that stops short of them leaves a block
        // of zeros, the end of the archive to every reader.
        let a = edited("a", &[0; 512], |h| h.size = f.clone());
        let tar = if in_first {
            archive(&[a, member("b", b"B")])
        } else {
            archive(&[first(), a, member("b", b"B")])
        };
        let tar_path = tmp.path().join(format!("{i}.tar"));
        std::fs::write(&tar_path, &tar).unwrap();
        let gnu = tool_reads("tar", &tar_path);
        let bsd = tool_reads("bsdtar", &tar_path);
        let p = tmp.path().join(format!("{i}.neff"));
        std::fs::write(&p, wrap(&tar)).unwrap();
        let field = f.escape_ascii();
        match neff_reads(&p) {
            Ok((ours, _)) => {
                assert!(
                    gnu.is_some() && gnu == bsd,
                    "size field \"{field}\": neff read it, the tools differ:\n  GNU tar: {gnu:?}\n  bsdtar:  {bsd:?}"
                );
                assert_eq!(Some(ours), gnu, "size field \"{field}\"");
                read += 1;
            }
            Err(e) if e.contains("read it differently") => {
                // (Or neither reads it at all.)
                assert!(
                    gnu != bsd || gnu.is_none(),
                    "size field \"{field}\": refused, the tools agree on {gnu:?}: {e}"
                );
                refused += 1;
            }
            // Otherwise the size runs past the data: libarchive stops too.
            Err(e) => {
                assert!(
                    e.contains("runs past the end"),
                    "size field \"{field}\": {e}"
                );
                assert_eq!(bsd, None, "size field \"{field}\": {e}");
            }
        }
    }
    assert!(read > 30 && refused > 30, "read {read}, refused {refused}");
}
