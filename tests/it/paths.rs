//! The two ways a gzip payload is read, inflated whole or walked as a
//! bounded stream (`Limits::inflate_budget`), give every file the same
//! answer: the same entries, the same member bytes, the same accessor
//! output, or the same refusal. Run on every fixture and every hostile
//! file.

use crate::common::*;
use neff::accessors::Accessor;
use neff::{Neff, Options};

fn opts(budget: u64) -> Options {
    let mut o = Options::default();
    o.limits.inflate_budget = budget;
    o
}

/// Everything a reader can learn of a file, as text.
fn answer(bytes: &[u8], budget: u64) -> (bool, String) {
    let n = match Neff::from_bytes(bytes.to_vec(), &opts(budget)) {
        Ok(n) => n,
        Err(e) => return (false, format!("open: {e}")),
    };
    let mut out = String::new();
    for e in n.entries() {
        let data = match n.data(e) {
            Ok(d) => format!("{} bytes, md5 {:032x}", d.len(), crc(&d)),
            Err(err) => format!("error {err}"),
        };
        out += &format!(
            "{:?} {:?} {} {} {} {} {:?} | {data}\n",
            n.name_str(e),
            e.kind,
            e.offset,
            e.size,
            e.mtime,
            e.mode,
            n.link(e).map(String::from_utf8_lossy),
        );
    }
    for a in Accessor::ALL {
        let mut v = Vec::new();
        match a.write_json(&n, &mut v) {
            Ok(()) => out += &format!("{a:?}: {}\n", String::from_utf8_lossy(&v)),
            Err(e) => out += &format!("{a:?}: error {e}\n"),
        }
    }
    out += &format!("tar {}\n", n.tar_len());
    (n.is_streamed(), out)
}

fn crc(d: &[u8]) -> u128 {
    use md5::Digest;
    u128::from_be_bytes(md5::Md5::digest(d).into())
}

fn files() -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for dir in ["fixtures", "tests/hostile"] {
        for e in walkdir::WalkDir::new(root().join(dir)) {
            let e = e.unwrap();
            if e.path().extension().is_some_and(|x| x == "neff") {
                v.push(e.into_path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn whole_and_streamed_reads_give_every_file_the_same_answer() {
    let (mut compared, mut streamed) = (0, 0);
    for f in files() {
        let bytes = std::fs::read(&f).unwrap();
        let (whole_streamed, whole) = answer(&bytes, u64::MAX);
        let (was_streamed, stream) = answer(&bytes, 0);
        assert!(!whole_streamed, "{}", f.display());
        assert_eq!(whole, stream, "{}", f.display());
        compared += 1;
        streamed += usize::from(was_streamed);
    }
    assert!(compared > 100, "{compared} files");
    // The gzip files that open took the stream when asked to.
    assert!(streamed > 50, "{streamed} files streamed");
}

#[test]
fn a_streamed_neff_holds_only_the_accessors_members() {
    use neff::pack::{pack, PackEntry, PackOptions};
    let def = |ws: u32| format!("{{\"#rank_world_size\":{ws}}}").into_bytes();
    let entries = [
        PackEntry::file("sg01/def.json", def(8), 0),
        PackEntry::file("sg01/tensor_map.json", &b"{}"[..], 0),
        PackEntry::file("sg00/weights.bin", vec![7u8; 3 << 20], 0),
        PackEntry::file("sg00/def.json", def(4), 0),
        PackEntry::file("sg00/tensor_map.json", &b"{}"[..], 0),
        PackEntry::file("info.json", &b"{}"[..], 0),
    ];
    let bytes = pack(&entries, &PackOptions::default()).unwrap();
    let n = Neff::from_bytes(bytes, &opts(0)).unwrap();
    assert!(n.is_streamed() && n.tar().is_none());
    let mut held: Vec<String> = n
        .files()
        .filter(|e| n.held(e).is_some())
        .map(|e| n.name_str(e).into_owned())
        .collect();
    // The first def.json and tensor_map.json in name order (sg01's were
    // held until sg00's came, then dropped), and no weights.
    held.sort();
    assert_eq!(
        held,
        ["info.json", "sg00/def.json", "sg00/tensor_map.json"],
        "{held:?}"
    );
    assert_eq!(neff::accessors::cc_world_size(&n).unwrap(), 4);
    // Any member can still be read (inflated again) or copied out.
    for e in n.files() {
        let mut copied = Vec::new();
        n.copy_data(e, &mut copied).unwrap();
        assert_eq!(copied, &n.data(e).unwrap()[..]);
        assert_eq!(copied.len() as u64, e.size);
    }
}

/// A NEFF with `payload` as its stored payload (header from `pack`,
/// `data_size` rewritten; the hash is not checked at open).
fn with_payload(payload: &[u8]) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let mut b = pack(
        &[PackEntry::file("x", &b"x"[..], 0)],
        &PackOptions::default(),
    )
    .unwrap();
    b.truncate(1024);
    b[0x10..0x18].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(payload);
    b
}

fn gz_tar(names: &[(&str, &[u8])]) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let entries: Vec<PackEntry> = names
        .iter()
        .map(|(n, d)| PackEntry::file(n, *d, 0))
        .collect();
    pack(&entries, &PackOptions::default()).unwrap()[1024..].to_vec()
}

#[test]
fn crafted_gzip_framing_gets_one_answer_from_both_paths() {
    let info = br#"{"neuron_cc_version":"2.0"}"#;
    let one = gz_tar(&[("info.json", info), ("sg00/w.bin", &[9u8; 5000])]);
    let other = gz_tar(&[("kelf-0.json", br#"{"target":"trn1"}"#)]);
    let n = one.len();
    let mut cases: Vec<(&str, Vec<u8>, bool)> = Vec::new();
    let mut between = one[..n - 8].to_vec();
    between.extend_from_slice(b"stray bytes");
    between.extend_from_slice(&one[n - 8..]);
    cases.push((
        "bytes between the DEFLATE data and its trailer",
        between,
        false,
    ));
    let mut pre = one[..n - 8].to_vec();
    pre.extend_from_slice(&one[n - 4..]);
    pre.extend_from_slice(&one[n - 8..]);
    cases.push(("an ISIZE copy before the trailer", pre, false));
    let mut copy = one.clone();
    copy.extend_from_slice(&one[n - 8..]);
    cases.push(("a second copy of the trailer", copy, false));
    let mut reserved = one.clone();
    reserved[3] |= 0x80;
    cases.push(("a reserved header flag", reserved, false));
    let mut garbage = one.clone();
    garbage.extend_from_slice(b"garbage");
    cases.push(("garbage after the member", garbage, false));
    let mut two = one.clone();
    two.extend_from_slice(&other);
    cases.push(("two members", two, true));
    let mut padded = one.clone();
    padded.extend(vec![0u8; 4096]);
    cases.push(("zero padding", padded, true));
    cases.push(("one member", one.clone(), true));
    for (what, payload, opens) in cases {
        let bytes = with_payload(&payload);
        let (_, whole) = answer(&bytes, u64::MAX);
        let (_, stream) = answer(&bytes, 0);
        assert_eq!(whole, stream, "{what}");
        assert_eq!(!whole.starts_with("open:"), opens, "{what}: {whole}");
    }
}
