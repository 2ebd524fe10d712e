//! GNU sparse members, read as GNU tar and libarchive read them: a matrix
//! of archives GNU tar itself writes at test time (old GNU `S` and PAX
//! 0.0, 0.1, 1.0; raw and gzip payloads; from the map, from an inflated
//! buffer and from the bounded stream), each member compared byte for byte
//! with `tar xOf` and `bsdtar -xOf`, and the listing with `tar tf` and
//! `bsdtar tf`; and hand-built maps that GNU tar and libarchive refuse or
//! read differently, which `neff` refuses with the member's name and the
//! reason. Both tools must be installed (`.ci/run` installs them): the
//! tests fail, never skip, without them.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use neff::{Limits, Neff, Options};

/// A sparse file of the matrix: name, real size, data stretches.
type Pattern = (&'static str, u64, Vec<(u64, Vec<u8>)>);

/// The sparse files of the matrix.
fn patterns() -> Vec<Pattern> {
    let mut many = Vec::new();
    for i in 0..300u64 {
        many.push((i * 8192 + 100, format!("x{i}").into_bytes()));
    }
    vec![
        ("empty", 0, vec![]),
        (
            "small-holes",
            200_000,
            vec![(70_000, b"hello".to_vec()), (150_000, b"world".to_vec())],
        ),
        ("lead-data", 100_000, vec![(0, noise(9000, 1))]),
        (
            "trailing-hole",
            5 << 20,
            vec![(0, noise(5000, 2)), (1 << 20, noise(70_000, 3))],
        ),
        (
            "ends-in-data",
            3 << 20,
            vec![
                (1 << 20, noise(4096, 4)),
                ((3 << 20) - 10, b"0123456789".to_vec()),
            ],
        ),
        (
            "large-holes",
            40 << 20,
            vec![(5 << 20, noise(1 << 20, 5)), (30 << 20, noise(123_457, 6))],
        ),
        ("many-segments", 300 * 8192, many),
    ]
}

/// Writes the pattern files into a new directory `files` of `tmp` (holes
/// by seeking, as a sparse file is made) and a small dense file
/// `plain.txt`; returns the directory.
fn make_files(tmp: &Path) -> PathBuf {
    let dir = tmp.join("files");
    std::fs::create_dir(&dir).unwrap();
    for (name, size, data) in patterns() {
        let f = File::create(dir.join(name)).unwrap();
        f.set_len(size).unwrap();
        for (at, bytes) in data {
            f.write_all_at(&bytes, at).unwrap();
        }
    }
    std::fs::write(dir.join("plain.txt"), b"not sparse\n").unwrap();
    dir
}

/// GNU tar's formats for a sparse file, as `tar` arguments.
const FORMATS: [(&str, &[&str]); 4] = [
    ("gnu", &["--format=gnu"]),
    ("pax0.0", &["--format=posix", "--sparse-version=0.0"]),
    ("pax0.1", &["--format=posix", "--sparse-version=0.1"]),
    ("pax1.0", &["--format=posix", "--sparse-version=1.0"]),
];

fn tools_present() {
    for t in ["tar", "bsdtar"] {
        assert!(have(t), "{t} is not installed: the sparse tests need it");
    }
}

/// `tool` extracting `member` of `archive` to stdout.
fn extract(tool: &str, archive: &Path, member: &str) -> Vec<u8> {
    let o = Command::new(tool)
        .arg("-xOf")
        .arg(archive)
        .arg(member)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{tool} -xOf {} {member}: {}",
        archive.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The NEFF files of a tar: raw, gzip; each path with its options (the
/// gzip one also streamed, with an inflate budget of 0).
fn neffs_of(tar: &Path, dir: &Path) -> Vec<(String, PathBuf, Options)> {
    let bytes = std::fs::read(tar).unwrap();
    let stem = tar.file_stem().unwrap().to_string_lossy().into_owned();
    let raw = dir.join(format!("{stem}-raw.neff"));
    let gz = dir.join(format!("{stem}-gz.neff"));
    std::fs::write(&raw, wrap(&bytes)).unwrap();
    std::fs::write(&gz, wrap(&neff::pack::gzip(&bytes))).unwrap();
    let streamed = Options::default().limits(Limits::default().inflate_budget(0));
    vec![
        (format!("{stem} raw"), raw, Options::default()),
        (format!("{stem} gzip"), gz.clone(), Options::default()),
        (format!("{stem} gzip streamed"), gz, streamed),
    ]
}

/// Archives `names` (of `src`) with GNU tar in `format`, into `out`.
fn gnu_tar(src: &Path, format: &[&str], names: &[&str], out: &Path) {
    let o = Command::new("tar")
        .arg("--sparse")
        .args(format)
        .arg("-cf")
        .arg(out)
        .arg("-C")
        .arg(src)
        .args(names)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The sizes `tar tvf` lists, by name.
fn tool_sizes(archive: &Path) -> Vec<(String, u64)> {
    let o = Command::new("tar")
        .arg("tvf")
        .arg(archive)
        .output()
        .unwrap();
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[5..].join(" "), f[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn every_gnu_sparse_format_reads_as_gnu_tar_and_bsdtar_extract_it() {
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    let files = make_files(tmp.path());
    let names: Vec<&str> = patterns().iter().map(|p| p.0).collect();
    let mut checked = 0;
    for (fmt, args) in FORMATS {
        // Every pattern with a dense file after it, and the sparse member
        // last in the archive.
        let mut order = names.clone();
        order.insert(3, "plain.txt");
        let tar = tmp.path().join(format!("{fmt}.tar"));
        gnu_tar(&files, args, &order, &tar);
        let want_names = tool_list("tar", &tar);
        assert_eq!(
            want_names,
            tool_list("bsdtar", &tar),
            "{fmt}: tar and bsdtar list alike"
        );
        let want_sizes = tool_sizes(&tar);
        let mut want_bytes = Vec::new();
        for name in &want_names {
            let gnu = extract("tar", &tar, name);
            assert_eq!(
                gnu,
                extract("bsdtar", &tar, name),
                "{fmt} {name}: tools agree"
            );
            want_bytes.push(gnu);
        }
        for (what, path, opts) in neffs_of(&tar, tmp.path()) {
            let n = Neff::open_with(&path, &opts).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got: Vec<String> = n
                .entries()
                .iter()
                .map(|e| n.name_str(e).into_owned())
                .collect();
            assert_eq!(got, want_names, "{what}: names");
            let sizes: Vec<(String, u64)> = n
                .entries()
                .iter()
                .map(|e| (n.name_str(e).into_owned(), e.size))
                .collect();
            assert_eq!(sizes, want_sizes, "{what}: sizes");
            // Whole reads, then one cursor in archive order, then copies.
            let mut cursor = n.cursor();
            for (e, want) in n.entries().iter().zip(&want_bytes) {
                let name = n.name_str(e);
                assert_eq!(&n.data(e).unwrap()[..], &want[..], "{what} {name}: data");
                assert_eq!(
                    &cursor.read(e).unwrap()[..],
                    &want[..],
                    "{what} {name}: cursor"
                );
                let mut out = Vec::new();
                n.copy_data(e, &mut out).unwrap();
                assert_eq!(out, *want, "{what} {name}: copy_data");
                // (GNU tar stores an empty file dense.)
                let dense = name == "plain.txt" || name == "empty";
                assert_eq!(e.is_sparse(), !dense, "{what} {name}: sparse");
                checked += 1;
            }
        }
    }
    // 4 formats × 3 ways × 8 members.
    assert_eq!(checked, 4 * 3 * 8);
}

#[test]
fn the_cli_lists_cats_and_unpacks_sparse_members_with_holes_as_holes() {
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    let files = make_files(tmp.path());
    for (fmt, args) in FORMATS {
        let tar = tmp.path().join(format!("{fmt}.tar"));
        gnu_tar(&files, args, &["large-holes", "small-holes"], &tar);
        for (what, path, _) in neffs_of(&tar, tmp.path()).into_iter().take(2) {
            let p = path.to_str().unwrap();
            let ls = String::from_utf8(neff_ok(&["ls", p])).unwrap();
            assert_eq!(
                ls.lines().collect::<Vec<_>>(),
                ["large-holes", "small-holes"],
                "{what}"
            );
            let cat = neff_ok(&["cat", p, "large-holes"]);
            assert_eq!(cat, extract("tar", &tar, "large-holes"), "{what}: cat");
            let out = tmp.path().join(format!("out-{}", what.replace(' ', "-")));
            neff_ok(&["unpack", p, "-o", out.to_str().unwrap()]);
            for name in ["large-holes", "small-holes"] {
                let got = std::fs::read(out.join(name)).unwrap();
                assert_eq!(
                    got,
                    extract("bsdtar", &tar, name),
                    "{what} {name}: unpacked"
                );
            }
            // 40 MiB with 1.1 MiB of data: the holes were not written (on
            // a file system that keeps holes, as ext4 and tmpfs do).
            let m = std::fs::metadata(out.join("large-holes")).unwrap();
            assert_eq!(m.len(), 40 << 20);
            assert!(m.blocks() * 512 < 8 << 20, "{what}: {} blocks", m.blocks());
        }
    }
}

// ---------------------------------------------------------------------
// Hand-built maps.

/// A tar header block: `name`, `size`, `typeflag`, GNU magic when `gnu`,
/// with `patch` applied before the checksum is set.
fn header(name: &str, size: u64, typeflag: u8, gnu: bool, patch: &dyn Fn(&mut [u8])) -> Vec<u8> {
    let mut b = vec![0u8; 512];
    b[..name.len()].copy_from_slice(name.as_bytes());
    b[100..108].copy_from_slice(b"0000644\0");
    b[108..116].copy_from_slice(b"0000000\0");
    b[116..124].copy_from_slice(b"0000000\0");
    b[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    b[136..148].copy_from_slice(b"00000000000\0");
    b[156] = typeflag;
    if gnu {
        b[257..265].copy_from_slice(b"ustar  \0");
    } else {
        b[257..265].copy_from_slice(b"ustar\x0000");
    }
    patch(&mut b);
    b[148..156].copy_from_slice(b"        ");
    let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    b
}

fn pad(v: &mut Vec<u8>) {
    v.resize(v.len().div_ceil(512) * 512, 0);
}

/// An old GNU `S` entry: header map `segs` (at most 4 in the header, the
/// rest in extension blocks), real size `real`, and the stored bytes.
fn old_gnu(name: &str, real: u64, segs: &[(u64, u64)], stored: &[u8]) -> Vec<u8> {
    let field = |v: u64| format!("{v:011o}\0").into_bytes();
    let head: Vec<(u64, u64)> = segs.iter().take(4).copied().collect();
    let rest: Vec<(u64, u64)> = segs.iter().skip(4).copied().collect();
    let mut out = header(name, stored.len() as u64, b'S', true, &|b| {
        for (i, &(o, l)) in head.iter().enumerate() {
            b[386 + 24 * i..398 + 24 * i].copy_from_slice(&field(o));
            b[398 + 24 * i..410 + 24 * i].copy_from_slice(&field(l));
        }
        b[482] = u8::from(!rest.is_empty());
        b[483..495].copy_from_slice(&field(real));
    });
    let chunks: Vec<&[(u64, u64)]> = rest.chunks(21).collect();
    for (k, c) in chunks.iter().enumerate() {
        let mut b = vec![0u8; 512];
        for (i, &(o, l)) in c.iter().enumerate() {
            b[24 * i..24 * i + 12].copy_from_slice(&field(o));
            b[24 * i + 12..24 * i + 24].copy_from_slice(&field(l));
        }
        b[504] = u8::from(k + 1 < chunks.len());
        out.extend_from_slice(&b);
    }
    out.extend_from_slice(stored);
    pad(&mut out);
    out
}

/// A PAX entry: records `recs` in an `x` header, then a regular entry
/// `name` holding `data`.
fn pax(name: &str, recs: &[(&str, &str)], data: &[u8]) -> Vec<u8> {
    let mut out = pax_header(recs);
    out.extend_from_slice(&header(name, data.len() as u64, b'0', false, &|_| {}));
    out.extend_from_slice(data);
    pad(&mut out);
    out
}

/// An `x` header holding the records `recs`.
fn pax_header(recs: &[(&str, &str)]) -> Vec<u8> {
    pax_body(&pax_records(recs))
}

/// An `x` header holding `text`.
fn pax_body(text: &[u8]) -> Vec<u8> {
    let mut out = header("PaxHeaders/x", text.len() as u64, b'x', false, &|_| {});
    out.extend_from_slice(text);
    pad(&mut out);
    out
}

fn end(mut v: Vec<u8>) -> Vec<u8> {
    v.extend_from_slice(&[0u8; 1024]);
    v
}

/// What `tool` makes of `archive`: its listing and each member's bytes,
/// or `None` when it fails.
fn tool_reads(tool: &str, archive: &Path) -> Option<Vec<(String, Vec<u8>)>> {
    let o = Command::new(tool).arg("tf").arg(archive).output().unwrap();
    if !o.status.success() {
        return None;
    }
    let mut v = Vec::new();
    for name in String::from_utf8(o.stdout).unwrap().lines() {
        let o = Command::new(tool)
            .arg("-xOf")
            .arg(archive)
            .arg(name)
            .output()
            .unwrap();
        if !o.status.success() {
            return None;
        }
        v.push((name.to_string(), o.stdout));
    }
    Some(v)
}

/// Opens every NEFF of the tar at `path` (see `neffs_of`) and asserts that
/// each reads `want` (names and expanded bytes); returns them.
fn assert_neff_reads(path: &Path, dir: &Path, want: &[(String, Vec<u8>)], ctx: &str) -> Vec<Neff> {
    let mut out = Vec::new();
    for (what, f, opts) in neffs_of(path, dir) {
        let n = Neff::open_with(&f, &opts).unwrap_or_else(|e| panic!("{ctx} {what}: {e}"));
        let got: Vec<(String, Vec<u8>)> = n
            .entries()
            .iter()
            .map(|e| (n.name_str(e).into_owned(), n.data(e).unwrap().into_owned()))
            .collect();
        assert_eq!(got, want, "{ctx} {what}");
        out.push(n);
    }
    out
}

#[test]
fn old_gnu_maps_with_extension_blocks_read_as_both_tools_read_them() {
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    // 30 segments: 4 in the header, 21 in one extension block, 5 in a
    // second; whole blocks but the last (as GNU tar writes them).
    let mut segs: Vec<(u64, u64)> = (0..29).map(|i| (i * 1000 + 7, 512)).collect();
    segs.push((29 * 1000 + 7, 3));
    segs.push((30_500, 0)); // the real size, as GNU tar ends a map
    let stored = noise(29 * 512 + 3, 9);
    let mut tar = old_gnu("ext.bin", 30_500, &segs, &stored);
    tar.extend_from_slice(&old_gnu(
        "lead-hole",
        4096,
        &[(3584, 512), (4096, 0)],
        &[9; 512],
    ));
    let tar = end(tar);
    let path = tmp.path().join("ext.tar");
    std::fs::write(&path, &tar).unwrap();
    let want = tool_reads("tar", &path).expect("GNU tar reads it");
    assert_eq!(
        Some(&want),
        tool_reads("bsdtar", &path).as_ref(),
        "bsdtar reads it alike"
    );
    assert_neff_reads(&path, tmp.path(), &want, "");
}

/// A NEFF of `tar` (raw) that the CLI must refuse with a reason holding
/// `why` and the member's name; says what GNU tar and bsdtar made of it.
fn refused(tar: Vec<u8>, member: &str, why: &str) -> (bool, bool) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.tar");
    let tar = end(tar);
    std::fs::write(&path, &tar).unwrap();
    for (what, f, _) in neffs_of(&path, tmp.path()) {
        let reason = assert_refused(&["ls", f.to_str().unwrap()], &f);
        assert!(reason.contains(why), "{what}: {reason:?} lacks {why:?}");
        assert!(
            reason.contains(member),
            "{what}: {reason:?} does not name {member}"
        );
    }
    let gnu = tool_reads("tar", &path);
    let bsd = tool_reads("bsdtar", &path);
    (gnu.is_some(), gnu.is_some() && gnu == bsd)
}

#[test]
fn maps_that_overlap_run_backwards_or_past_the_real_size_are_refused() {
    tools_present();
    let (_, agree) = refused(
        old_gnu("over", 2000, &[(0, 512), (100, 512), (2000, 0)], &[1; 1024]),
        "over",
        "overlaps or runs backwards",
    );
    assert!(
        !agree,
        "the tools read an overlapping map alike: read it instead"
    );
    refused(
        old_gnu(
            "back",
            2000,
            &[(1000, 512), (0, 512), (2000, 0)],
            &[1; 1024],
        ),
        "back",
        "overlaps or runs backwards",
    );
    let (gnu, _) = refused(
        old_gnu("past", 100, &[(95, 10)], &[1; 10]),
        "past",
        "runs past its real size",
    );
    assert!(!gnu, "GNU tar refuses a segment past the real size");
    refused(
        pax(
            "p01",
            &[
                ("GNU.sparse.size", "100"),
                ("GNU.sparse.numblocks", "2"),
                ("GNU.sparse.map", "10,5,12,5"),
                ("GNU.sparse.name", "p01"),
            ],
            &[1; 10],
        ),
        "p01",
        "overlaps",
    );
}

#[test]
fn stored_data_that_is_not_what_the_map_needs_is_refused() {
    tools_present();
    refused(
        old_gnu("short", 2000, &[(0, 512), (1000, 10), (2000, 0)], &[1; 515]),
        "short",
        "needs 522 stored bytes, the archive stores 515",
    );
    refused(
        pax(
            "p00",
            &[
                ("GNU.sparse.size", "100"),
                ("GNU.sparse.numblocks", "2"),
                ("GNU.sparse.offset", "0"),
                ("GNU.sparse.numbytes", "10"),
                ("GNU.sparse.offset", "100"),
                ("GNU.sparse.numbytes", "0"),
            ],
            &[1; 30],
        ),
        "p00",
        "needs 10 stored bytes, the archive stores 30",
    );
}

#[test]
fn pax_1_0_maps_that_are_not_numbers_or_run_past_the_data_are_refused() {
    tools_present();
    let recs = [
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", "real-name"),
        ("GNU.sparse.realsize", "1000"),
    ];
    let mut data = b"1\n0\nx\n".to_vec();
    pad(&mut data);
    let (_, agree) = refused(
        pax("GNUSparseFile.0/real-name", &recs, &data),
        "real-name",
        "not a number",
    );
    assert!(
        !agree,
        "the tools read a bad 1.0 map alike: read it instead"
    );
    refused(
        pax("GNUSparseFile.0/real-name", &recs, b"1\n0\n"),
        "real-name",
        "runs past",
    );
    // A good one reads, under its real name, as both tools read it.
    let tmp = tempfile::tempdir().unwrap();
    let mut data = b"3\n10\n512\n600\n2\n1000\n0\n".to_vec();
    pad(&mut data);
    data.extend_from_slice(&noise(514, 3));
    let path = tmp.path().join("ok.tar");
    std::fs::write(&path, end(pax("GNUSparseFile.0/real-name", &recs, &data))).unwrap();
    let want = tool_reads("tar", &path).expect("GNU tar reads it");
    assert_eq!(Some(&want), tool_reads("bsdtar", &path).as_ref());
    assert_eq!(want[0].0, "real-name");
    for (what, f, opts) in neffs_of(&path, tmp.path()) {
        let n = Neff::open_with(&f, &opts).unwrap();
        let e = &n.entries()[0];
        assert_eq!(n.name_str(e), "real-name", "{what}");
        assert_eq!(&n.data(e).unwrap()[..], &want[0].1[..], "{what}");
    }
}

#[test]
fn size_and_realsize_that_disagree_are_refused() {
    tools_present();
    let mut data = b"1\n0\n5\n".to_vec();
    pad(&mut data);
    data.extend_from_slice(b"abcde");
    let (_, agree) = refused(
        pax(
            "GNUSparseFile.0/two-sizes",
            &[
                ("GNU.sparse.major", "1"),
                ("GNU.sparse.minor", "0"),
                ("GNU.sparse.name", "two-sizes"),
                ("GNU.sparse.size", "100"),
                ("GNU.sparse.realsize", "200"),
            ],
            &data,
        ),
        "two-sizes",
        "disagree",
    );
    assert!(
        !agree,
        "the tools read two real sizes alike: read it instead"
    );
}

#[test]
fn a_map_entry_with_one_field_empty_or_extension_blocks_after_the_end_are_refused() {
    tools_present();
    let mut tar = old_gnu("half", 100, &[(0, 5)], &[1; 5]);
    // Second entry: an offset, no numbytes (GNU tar ends the map at it,
    // libarchive does not).
    tar[386 + 24..398 + 24].copy_from_slice(b"00000000050\0");
    let sum_fix = |t: &mut Vec<u8>| {
        t[148..156].copy_from_slice(b"        ");
        let sum: u32 = t[..512].iter().map(|&x| u32::from(x)).sum();
        t[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    };
    sum_fix(&mut tar);
    refused(tar, "half", "only one of its offset and numbytes");
    let mut tar = old_gnu("early", 100, &[(0, 5)], &[1; 5]);
    tar[482] = 1;
    sum_fix(&mut tar);
    refused(tar, "early", "extension block");
}

#[test]
fn sparse_caps_refuse_maps_and_sizes_over_them() {
    let tmp = tempfile::tempdir().unwrap();
    let segs: Vec<(u64, u64)> = (0..30).map(|i| (i * 1000, 512)).collect();
    let real = (8 << 30) - 1; // the most 11 octal digits hold
    let mut segs = segs;
    segs.push((real, 0));
    let tar = end(old_gnu("capped", real, &segs, &[7; 30 * 512]));
    let path = tmp.path().join("caps.neff");
    std::fs::write(&path, wrap(&tar)).unwrap();
    let p = path.to_str().unwrap();
    let reason = assert_refused(&["--max-sparse-size", "4G", "ls", p], &path);
    assert!(reason.contains("max_sparse_size"), "{reason}");
    let ls = neff_ok(&["ls", p]);
    assert_eq!(ls, b"capped\n");
    let reason = assert_refused(&["--max-sparse-segments", "30", "ls", p], &path);
    assert!(reason.contains("sparse map segments"), "{reason}");
    // An 8 GiB member lists from its map alone.
    let n = Neff::open(&path).unwrap();
    let e = &n.entries()[0];
    assert_eq!(e.size, real);
    assert_eq!(n.sparse_map(e).unwrap().len(), 31);
    assert!(n.held(e).is_none());
}

#[test]
fn segments_that_do_not_fill_whole_blocks_before_the_last_are_refused() {
    tools_present();
    // GNU tar reads "abc" then skips to the next block for "de"; bsdtar
    // reads "abcde" back to back.
    let mut data = b"3\n10\n3\n50\n2\n100\n0\n".to_vec();
    pad(&mut data);
    data.extend_from_slice(b"abcde");
    let recs = [
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", "split"),
        ("GNU.sparse.realsize", "100"),
    ];
    let (_, agree) = refused(
        pax("GNUSparseFile.0/split", &recs, &data),
        "split",
        "not whole blocks",
    );
    assert!(
        !agree,
        "the tools read unaligned segments alike: read them instead"
    );
    let (_, agree) = refused(
        old_gnu("split-old", 100, &[(0, 3), (50, 2), (100, 0)], b"abcde"),
        "split-old",
        "not whole blocks",
    );
    assert!(
        !agree,
        "the tools read unaligned segments alike: read them instead"
    );
}

#[test]
fn a_map_that_ends_before_the_real_size_is_refused() {
    tools_present();
    // GNU tar's `-xO` stops at the map's end (602 bytes), bsdtar's goes
    // on to the real size.
    let (_, agree) = refused(
        old_gnu("short-map", 1000, &[(10, 512), (600, 2)], &[5; 514]),
        "short-map",
        "before its real size",
    );
    assert!(
        !agree,
        "the tools read a map short of the real size alike: read it instead"
    );
}

#[test]
fn a_sparse_member_read_whole_is_capped_like_an_inflation_but_streams_uncapped() {
    let tmp = tempfile::tempdir().unwrap();
    let real = 64 << 20;
    let tar = end(old_gnu("big-hole", real, &[(0, 512), (real, 0)], &[3; 512]));
    let path = tmp.path().join("big.neff");
    std::fs::write(&path, wrap(&tar)).unwrap();
    let opts = Options::default().limits(Limits::default().max_inflated(1 << 20));
    let n = Neff::open_with(&path, &opts).unwrap();
    let e = &n.entries()[0];
    let err = n.data(e).unwrap_err().to_string();
    assert!(err.contains("sparse member read whole"), "{err}");
    // Streamed, it is not held: 64 MiB go through a counting writer.
    struct Count(u64, bool);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            self.1 &= self.0 <= 512 || b.iter().all(|&x| x == 0);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0, true);
    n.copy_data(e, &mut c).unwrap();
    assert_eq!((c.0, c.1), (real, true));
}

#[test]
fn pax_map_numbers_before_their_numblocks_or_without_one_are_refused() {
    tools_present();
    // GNU tar sizes its map by each numblocks record and keeps only the
    // numbers after the last ("excess GNU.sparse.offset" or ".map"), then
    // reads the member otherwise; bsdtar reads every number.
    let size = ("GNU.sparse.size", "3000");
    let name = ("GNU.sparse.name", "r.bin");
    let map = ("GNU.sparse.map", "0,512,1000,3,3000,0");
    let three = ("GNU.sparse.numblocks", "3");
    let pairs = |ps: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        ps.iter()
            .flat_map(|&(o, n)| [("GNU.sparse.offset", o), ("GNU.sparse.numbytes", n)])
            .collect()
    };
    let stored = noise(515, 6);
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "0.0 offsets and no numblocks",
            [vec![size], pairs(&[("90", "10")])].concat(),
        ),
        (
            "0.0 pairs before a second numblocks",
            [
                vec![size, ("GNU.sparse.numblocks", "1")],
                pairs(&[("0", "512")]),
                vec![("GNU.sparse.numblocks", "3")],
                pairs(&[("1000", "3"), ("3000", "0")]),
            ]
            .concat(),
        ),
        ("0.1 map and no numblocks", vec![size, map, name]),
        ("0.1 map before numblocks", vec![size, map, three, name]),
        (
            "0.1 map between numblocks",
            vec![size, three, map, three, name],
        ),
    ];
    for (what, recs) in cases {
        let data = if what.starts_with("0.0 offsets") {
            &stored[..10]
        } else {
            &stored[..]
        };
        let (_, agree) = refused(
            pax("GNUSparseFile.0/r.bin", &recs, data),
            "r.bin",
            "before a GNU.sparse.numblocks record",
        );
        assert!(!agree, "{what}: the tools read it alike: read it instead");
    }
}

#[test]
fn an_all_hole_sparse_file_is_refused_as_libarchive_reads_it_empty() {
    tools_present();
    // GNU tar stores it as a map of one empty segment at its size; `tar
    // -xO` and `bsdtar -xO` write the zeros, but libarchive's
    // archive_read_data (the runtime's read; the vs_libarchive oracle)
    // hands out no byte.
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("files");
    std::fs::create_dir(&files).unwrap();
    File::create(files.join("all-hole"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    for (fmt, args) in FORMATS {
        let tar = tmp.path().join(format!("{fmt}.tar"));
        gnu_tar(&files, args, &["all-hole"], &tar);
        assert_eq!(extract("tar", &tar, "all-hole"), vec![0u8; 1 << 20]);
        for (what, f, _) in neffs_of(&tar, tmp.path()).into_iter().take(2) {
            let reason = assert_refused(&["ls", f.to_str().unwrap()], &f);
            assert!(reason.contains("all hole"), "{what}: {reason}");
            assert!(reason.contains("all-hole"), "{what}: {reason}");
        }
    }
}

#[test]
fn typeflag_s_without_gnu_magic_is_a_plain_file_as_both_tools_read_it() {
    // Found by the vs_libarchive fuzzer: an `S` entry with an old GNU map
    // but POSIX or no magic. GNU tar and libarchive both take the map only
    // under the old GNU magic (`ustar  \0`); otherwise the entry is a
    // plain file of its header size.
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    let stored = noise(4096 + 12, 5);
    let mut tar = old_gnu("a.big", 1_048_588, &[(0, 4096), (1_048_576, 12)], &stored);
    for (i, magic) in [&b"ustar\x0000"[..], &[0u8; 8][..]].into_iter().enumerate() {
        tar[257..265].copy_from_slice(magic);
        tar[148..156].copy_from_slice(b"        ");
        let sum: u32 = tar[..512].iter().map(|&x| u32::from(x)).sum();
        tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let path = tmp.path().join(format!("magic{i}.tar"));
        std::fs::write(&path, end(tar.clone())).unwrap();
        let want = tool_reads("tar", &path).expect("GNU tar reads it");
        assert_eq!(want, vec![("a.big".to_string(), stored.clone())], "GNU tar");
        assert_eq!(Some(&want), tool_reads("bsdtar", &path).as_ref(), "bsdtar");
        for n in assert_neff_reads(&path, tmp.path(), &want, &format!("magic {i}")) {
            assert!(!n.entries()[0].is_sparse(), "magic {i}");
        }
    }
}

#[test]
fn a_short_segment_before_only_the_end_marker_reads_as_both_tools_read_it() {
    // Found by the vs_tar_crate fuzzer: the tar crate refuses a segment
    // that is not whole blocks unless it is the map's last, but GNU tar
    // and libarchive agree when all that follows is the empty entry at
    // the real size that GNU tar ends its maps with.
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    let stored = noise(2 * 512 + 5, 3);
    let tar = old_gnu(
        "old.bin",
        8000,
        &[(0, 512), (1024, 512), (7000, 5), (8000, 0)],
        &stored,
    );
    let path = tmp.path().join("short.tar");
    std::fs::write(&path, end(tar)).unwrap();
    let want = tool_reads("tar", &path).expect("GNU tar reads it");
    assert_eq!(want[0].1.len(), 8000);
    assert_eq!(Some(&want), tool_reads("bsdtar", &path).as_ref(), "bsdtar");
    assert_neff_reads(&path, tmp.path(), &want, "");
}

#[test]
fn nul_padding_after_gnu_sparse_records_is_refused_as_libarchive_drops_the_name() {
    // Found by the vs_libarchive fuzzer: a PAX 0.1 header whose records are
    // followed by NULs inside its size. GNU tar reads every record and
    // lists `p01.bin`; libarchive calls the header malformed and lists the
    // internal name `GNUSparseFile.1/p01.bin`.
    tools_present();
    let mut text = pax_records(&[
        ("GNU.sparse.size", "3000"),
        ("GNU.sparse.numblocks", "2"),
        ("GNU.sparse.name", "p01.bin"),
        ("GNU.sparse.map", "512,512,3000,0"),
    ]);
    text.extend_from_slice(&[0; 40]);
    let mut tar = pax_body(&text);
    tar.extend_from_slice(&header(
        "GNUSparseFile.1/p01.bin",
        512,
        b'0',
        false,
        &|_| {},
    ));
    tar.extend_from_slice(&noise(512, 4));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("padded.tar");
    std::fs::write(&path, end(tar)).unwrap();
    let names = |tool: &str| {
        let o = Command::new(tool).arg("tf").arg(&path).output().unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(names("tar"), "p01.bin\n", "GNU tar");
    assert_eq!(names("bsdtar"), "GNUSparseFile.1/p01.bin\n", "bsdtar");
    for (what, f, _) in neffs_of(&path, tmp.path()) {
        let reason = assert_refused(&["ls", f.to_str().unwrap()], &f);
        assert!(
            reason.contains("NUL padding after GNU.sparse records")
                && reason.contains("read it differently"),
            "{what}: {reason:?}"
        );
    }
}

#[test]
fn an_old_gnu_sparse_header_under_pax_sparse_map_records_is_refused() {
    // GNU tar reads the `S` header's own map (and fails after it),
    // bsdtar the records' map (or fails on a 1.0 map that is not there).
    tools_present();
    let stored = noise(515, 7);
    let s = || old_gnu("s.bin", 2000, &[(0, 512), (1000, 3), (2000, 0)], &stored);
    let size = ("GNU.sparse.size", "3000");
    let three = ("GNU.sparse.numblocks", "3");
    let cases: [(&str, Vec<(&str, &str)>); 3] = [
        ("0.0", {
            let mut r = vec![size, three];
            for (o, n) in [("0", "512"), ("1000", "3"), ("3000", "0")] {
                r.extend([("GNU.sparse.offset", o), ("GNU.sparse.numbytes", n)]);
            }
            r
        }),
        (
            "0.1",
            vec![size, three, ("GNU.sparse.map", "0,512,1000,3,3000,0")],
        ),
        (
            "1.0",
            vec![
                ("GNU.sparse.major", "1"),
                ("GNU.sparse.minor", "0"),
                ("GNU.sparse.name", "s.bin"),
                ("GNU.sparse.realsize", "3000"),
            ],
        ),
    ];
    for (what, recs) in cases {
        let mut tar = pax_header(&recs);
        tar.extend_from_slice(&s());
        let (_, agree) = refused(tar, "s.bin", "typeflag S) under PAX GNU.sparse map records");
        assert!(!agree, "{what}: the tools read it alike: read it instead");
    }
    // A GNU.sparse.name alone renames it, as both tools read it.
    let tmp = tempfile::tempdir().unwrap();
    let mut tar = pax_header(&[("GNU.sparse.name", "n.bin")]);
    tar.extend_from_slice(&s());
    let path = tmp.path().join("named.tar");
    std::fs::write(&path, end(tar)).unwrap();
    let want = tool_reads("tar", &path).expect("GNU tar reads it");
    assert_eq!(want[0].0, "n.bin");
    assert_eq!(want[0].1.len(), 2000);
    assert_eq!(Some(&want), tool_reads("bsdtar", &path).as_ref(), "bsdtar");
    assert_neff_reads(&path, tmp.path(), &want, "named");
}

#[test]
fn sparse_records_on_a_link_or_a_directory_are_refused_before_their_map_is_read() {
    tools_present();
    let recs = [
        ("GNU.sparse.size", "3"),
        ("GNU.sparse.numblocks", "1"),
        ("GNU.sparse.map", "0,3"),
    ];
    let with = |typeflag: u8, name: &str, link: &str| {
        let mut t = plain("real.bin", b"abc");
        t.extend_from_slice(&pax_header(&recs));
        t.extend_from_slice(&header(name, 0, typeflag, false, &|b| {
            b[157..157 + link.len()].copy_from_slice(link.as_bytes())
        }));
        t
    };
    for (typeflag, name, link) in [
        (b'1', "hl", "real.bin"),
        (b'2', "sl", "real.bin"),
        (b'5', "d", ""),
    ] {
        refused(with(typeflag, name, link), name, "not a regular file");
    }
    // A 1.0 map on a link: the refusal is the link's, not a map read from
    // data it does not have.
    let mut t = plain("real.bin", b"abc");
    t.extend_from_slice(&pax_header(&[
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", "hl"),
        ("GNU.sparse.realsize", "3"),
    ]));
    t.extend_from_slice(&header("GNUSparseFile.0/hl", 0, b'1', false, &|b| {
        b[157..165].copy_from_slice(b"real.bin")
    }));
    refused(t, "hl", "not a regular file");
}

/// A plain (dense) member `name` holding `data`.
fn plain(name: &str, data: &[u8]) -> Vec<u8> {
    let mut t = header(name, data.len() as u64, b'0', false, &|_| {});
    t.extend_from_slice(data);
    pad(&mut t);
    t
}

#[test]
fn a_gnu_sparse_name_alone_renames_a_plain_member_as_both_tools_read_it() {
    tools_present();
    let tmp = tempfile::tempdir().unwrap();
    let mut tar = pax_header(&[("GNU.sparse.name", "n.bin")]);
    tar.extend_from_slice(&plain("a.txt", b"abc"));
    let path = tmp.path().join("named.tar");
    std::fs::write(&path, end(tar)).unwrap();
    let want = tool_reads("tar", &path).expect("GNU tar reads it");
    assert_eq!(
        want,
        vec![("n.bin".to_string(), b"abc".to_vec())],
        "GNU tar"
    );
    assert_eq!(Some(&want), tool_reads("bsdtar", &path).as_ref(), "bsdtar");
    for n in assert_neff_reads(&path, tmp.path(), &want, "") {
        assert!(!n.entries()[0].is_sparse());
    }
}
