//! Entry points shared by the fuzz targets (`fuzz/`) and the tests that
//! replay their corpora in CI (`tests/it/fuzz_replay.rs`), so that a crash
//! found by cargo-fuzz becomes a regression test that runs on stable.
//!
//! Each function feeds its input through every reader path and panics only
//! when an invariant breaks (a real bug); refusals are expected outcomes.

use std::path::Path;

/// Steps of the read path, for the benches and examples that time them
/// one by one (`--features fuzzing`).
pub mod steps {
    pub use crate::json::skim::top_level_keys;
    pub use crate::map::FileBytes;
    pub use crate::payload::inflate;
    pub use crate::tar::Index;
    pub use neff_inflate::gzip::member_header;
    pub use neff_inflate::parallel;

    /// The header walk alone, over tar bytes in memory (the walk the
    /// reader enters with an inflated payload).
    pub fn index(tar: &[u8], limits: &crate::Limits) -> crate::error::Result<Index> {
        Ok(crate::tar::walk(crate::tar::Archive::Bytes(tar), None, limits)?.index)
    }

    /// Inflates all of `gz` through the bounded stream (with its parallel
    /// rounds when `parallel`) into a reused window; the bytes produced.
    pub fn stream_inflate(gz: &[u8], parallel: bool) -> crate::error::Result<u64> {
        let mut window = vec![0u8; 256 << 10];
        let mut s = crate::payload::stream(gz, u64::MAX, parallel, None)?;
        Ok(s.finish(&mut window)?)
    }
}

use crate::accessors::Accessor;
use crate::limits::Limits;
use crate::pack::{self, PackEntry, PackKind, PackOptions};
use crate::reader::{Neff, Options};
use crate::tar::Kind;

/// Caps small enough that a fuzzer's input cannot exhaust memory.
pub fn fuzz_options() -> Options {
    Options {
        limits: Limits {
            max_inflated: 64 << 20,
            max_json_size: 16 << 20,
            max_sparse_size: 64 << 20,
            ..Limits::default()
        },
        ..Options::default()
    }
}

/// Everything a reader can do with an open NEFF: list, read every member,
/// run every accessor, summarize, plan an extraction.
pub fn exercise(n: &Neff) {
    for e in n.entries() {
        let _ = n.name(e);
        let _ = n.link(e);
        let d = n.data(e).expect("an indexed member's data can be read");
        assert_eq!(d.len() as u64, e.size);
    }
    for a in Accessor::ALL {
        let _ = a.write_json(n, &mut Vec::new());
    }
    let _ = crate::summary::Summary::of(n);
    let _ = crate::unpack::plan(n);
}

/// Target (a): arbitrary bytes as a whole NEFF.
pub fn whole_neff(data: &[u8]) {
    let _ = crate::verify::verify_bytes(data);
    if let Ok(n) = Neff::from_bytes(data.to_vec(), &fuzz_options()) {
        exercise(&n);
    }
    same_both_ways(data);
}

/// What a reader learns of a file, as text: every entry (name, kind,
/// offsets, size, data length), every accessor's answer or refusal, or the
/// refusal to open it.
fn answers(bytes: &[u8], opts: &Options) -> String {
    let n = match Neff::from_bytes(bytes.to_vec(), opts) {
        Ok(n) => n,
        Err(e) => return format!("open: {e}"),
    };
    let mut out = String::new();
    for e in n.entries() {
        let data = n.data(e).map(|d| d.len()).map_err(|e| e.to_string());
        out += &format!(
            "{:?} {:?} {} {} {} {:?}\n",
            n.name(e),
            e.kind,
            e.header_offset,
            e.offset,
            e.size,
            data
        );
    }
    for a in Accessor::ALL {
        let mut v = Vec::new();
        let r = a.write_json(&n, &mut v).map_err(|e| e.to_string());
        out += &format!("{a:?} {r:?} {}\n", String::from_utf8_lossy(&v));
    }
    out
}

/// The whole-payload and streamed reads (budget unlimited, budget 0) give
/// `bytes` the same answer (`tests/it/paths.rs` does this for the fixtures).
fn same_both_ways(bytes: &[u8]) {
    let mut whole = fuzz_options();
    whole.limits.inflate_budget = u64::MAX;
    let mut streamed = fuzz_options();
    streamed.limits.inflate_budget = 0;
    assert_eq!(
        answers(bytes, &whole),
        answers(bytes, &streamed),
        "the whole and streamed reads disagree"
    );
}

/// A valid header in front of `payload` (pkg 2 if it is gzip, else 1).
pub fn wrap(payload: &[u8]) -> Vec<u8> {
    let opts = PackOptions {
        no_gzip: !payload.starts_with(&[0x1f, 0x8b]),
        mtime: Some(0),
        ..Default::default()
    };
    pack::behind_header(payload, None, &opts).expect("a header for bytes in memory")
}

/// The bounded stream's parallel paths give the sequential stream's bytes
/// (the inflater's own check, [`neff_inflate::fuzzing`]).
pub use neff_inflate::fuzzing::parallel_matches_sequential;

/// Target (b): arbitrary bytes as the tar payload behind a valid header,
/// raw and gzip-compressed.
pub fn tar_payload(data: &[u8]) {
    for payload in [data.to_vec(), pack::gzip(data)] {
        if payload.starts_with(&[0x1f, 0x8b]) {
            parallel_matches_sequential(&payload);
        }
        let bytes = wrap(&payload);
        if let Ok(n) = Neff::from_bytes(bytes.clone(), &fuzz_options()) {
            exercise(&n);
        }
        same_both_ways(&bytes);
    }
}

/// Target (c): arbitrary bytes as the JSON members of a valid NEFF. The
/// input is split on `0xff` bytes (never valid in JSON text) into the
/// contents of def.json, tensor_map.json, kelf-0.json, neff.json, info.json.
pub fn json_members(data: &[u8]) {
    let names = [
        "sg00/def.json",
        "sg00/tensor_map.json",
        "kelf-0.json",
        "neff.json",
        "info.json",
    ];
    let mut parts = data.split(|&b| b == 0xff);
    let entries: Vec<PackEntry> = names
        .iter()
        .map(|n| PackEntry::file(n, parts.next().unwrap_or(b"{}").to_vec(), 0))
        .collect();
    let opts = PackOptions {
        mtime: Some(0),
        ..Default::default()
    };
    let bytes = pack::pack(&entries, &opts).expect("packing in memory");
    let n = Neff::from_bytes(bytes, &fuzz_options()).expect("a packed NEFF opens");
    exercise(&n);
}

/// Reads a little structure out of fuzzer bytes.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (a, rest) = self.0.split_at(n);
        self.0 = rest;
        a.to_vec()
    }
}

const PARTS: [&str; 12] = [
    "a",
    "b",
    "sg00",
    "..",
    ".",
    "",
    "déf",
    "kelf-0.json",
    "def.json",
    "tensor_map.json",
    "x/y",
    "./",
];

fn name(c: &mut Cursor<'_>, long: bool) -> Vec<u8> {
    let n = c.byte().unwrap_or(0) % 6 + 1;
    let mut parts = Vec::new();
    for _ in 0..n {
        let b = c.byte().unwrap_or(0);
        if b >= 0xf0 {
            // A raw component: any bytes but NUL and '/'.
            let len = (c.byte().unwrap_or(1) % 16) as usize;
            let mut raw = c.bytes(len);
            raw.retain(|&x| x != 0 && x != b'/');
            parts.push(raw);
        } else {
            parts.push(PARTS[b as usize % PARTS.len()].as_bytes().to_vec());
        }
    }
    let mut v = parts.join(&b'/');
    if long {
        v.extend(std::iter::repeat_n(b'L', 150));
    }
    v
}

/// Decodes a list of entries (files, directories, links, FIFOs) from bytes.
pub fn entries_from(data: &[u8]) -> Vec<PackEntry> {
    let mut c = Cursor(data);
    let mut out = Vec::new();
    while let Some(tag) = c.byte() {
        if out.len() >= 48 {
            break;
        }
        let nm = name(&mut c, tag & 0x80 != 0);
        let kind = match tag % 6 {
            0 | 5 => {
                let len = usize::from(c.byte().unwrap_or(0)) * 3;
                PackKind::File(c.bytes(len))
            }
            1 => PackKind::Dir,
            2 => PackKind::Symlink(name(&mut c, false)),
            3 => PackKind::Hardlink(name(&mut c, false)),
            _ => PackKind::Other(b'6'),
        };
        out.push(PackEntry {
            name: nm,
            kind,
            mode: 0o644,
            mtime: 1_700_000_000,
        });
    }
    out
}

/// How the reader names a member the writer wrote as `name`.
fn expected_name(name: &[u8], dir: bool) -> Vec<u8> {
    let mut n = name.to_vec();
    if dir && !n.ends_with(b"/") {
        n.push(b'/'); // the writer marks directories so
    }
    let mut s: &[u8] = &n;
    if s.starts_with(b"./") && s.len() > 2 {
        s = &s[2..];
    }
    let mut end = s.len();
    if dir {
        while end > 1 && s[end - 1] == b'/' {
            end -= 1;
        }
    }
    s[..end].to_vec()
}

/// `pack`'s NEFF of `entries`, or `None` where it refuses them (only a
/// file named with a trailing slash, which readers take for a directory).
fn packed(entries: &[PackEntry], opts: &PackOptions) -> Option<Vec<u8>> {
    match pack::pack(entries, opts) {
        Ok(b) => Some(b),
        Err(e) => {
            let slash = entries
                .iter()
                .any(|w| matches!(w.kind, PackKind::File(_)) && w.name.ends_with(b"/"));
            assert!(slash, "packing in memory: {e}");
            None
        }
    }
}

/// Target (d): build a valid archive with the library's writer and check
/// that the index lists exactly what was written (a differential check).
pub fn roundtrip(data: &[u8]) {
    let entries = entries_from(data);
    for no_gzip in [false, true] {
        let opts = PackOptions {
            no_gzip,
            mtime: Some(0),
            ..Default::default()
        };
        let Some(bytes) = packed(&entries, &opts) else {
            return;
        };
        crate::verify::verify_bytes(&bytes).expect("a packed NEFF verifies");
        let n = Neff::from_bytes(bytes, &fuzz_options()).expect("a packed NEFF opens");
        assert_eq!(n.entries().len(), entries.len(), "entry count");
        for (e, w) in n.entries().iter().zip(&entries) {
            let is_dir = matches!(w.kind, PackKind::Dir);
            assert_eq!(n.name(e), expected_name(&w.name, is_dir).as_slice(), "name");
            match &w.kind {
                PackKind::File(d) => {
                    assert_eq!(e.kind, Kind::File);
                    assert_eq!(&n.data(e).expect("data")[..], d.as_slice(), "data");
                }
                PackKind::Dir => assert_eq!(e.kind, Kind::Dir),
                PackKind::Symlink(t) | PackKind::Hardlink(t) => {
                    let want = if t.is_empty() {
                        None
                    } else {
                        Some(t.as_slice())
                    };
                    assert_eq!(n.link(e), want, "link target");
                }
                PackKind::Other(_) => assert_eq!(e.kind, Kind::Other),
            }
            assert_eq!(e.mtime, 1_700_000_000);
        }
        exercise(&n);
    }
}

/// Target (e): extract a fuzzer-built archive into a temporary directory and
/// check that nothing appeared outside it.
pub fn unpack_contained(data: &[u8], scratch: &Path) {
    let entries = entries_from(data);
    let opts = PackOptions {
        mtime: Some(0),
        ..Default::default()
    };
    let Some(bytes) = packed(&entries, &opts) else {
        return;
    };
    let n = Neff::from_bytes(bytes, &fuzz_options()).expect("a packed NEFF opens");
    let parent = tempfile_dir(scratch);
    let out = parent.join("out");
    let result = crate::unpack::unpack(&n, &out);
    let beside: Vec<_> = std::fs::read_dir(&parent)
        .expect("read parent")
        .map(|e| e.expect("entry").file_name())
        .collect();
    match result {
        Ok(_) => assert_eq!(
            beside,
            vec![std::ffi::OsString::from("out")],
            "wrote beside the target"
        ),
        Err(crate::Error::UnsafePath { .. }) => assert!(beside.is_empty(), "refused but wrote"),
        Err(_) => {}
    }
    // Every path under the target resolves inside it.
    let real_out = std::fs::canonicalize(&out).ok();
    if let Some(real_out) = real_out {
        for e in walkdir::WalkDir::new(&out).follow_links(false) {
            let e = e.expect("walk");
            if let Ok(real) = std::fs::canonicalize(e.path()) {
                assert!(
                    real.starts_with(&real_out),
                    "{} escapes to {}",
                    e.path().display(),
                    real.display()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&parent);
}

fn tempfile_dir(scratch: &Path) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let p = scratch.join(format!(
        "u{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&p).expect("scratch dir");
    p
}

/// The validating skim ([`crate::json::skim`]) against simd-json and
/// serde_json on arbitrary bytes: it never accepts a document the full
/// parse refuses; it refuses one the full parse accepts only for the
/// reasons it is documented to be stricter (surrogate escapes, exponents,
/// depth); the values it finds are the last occurrences of the keys at the
/// root; and every split point gives the one-walk answer.
pub fn json_skim(data: &[u8]) {
    use crate::json::skim;
    const KEYS: [&str; 3] = ["a", "replica_groups", "#rank_world_size"];
    const DEPTH: usize = 64;
    let one = skim::top_level_keys(data, &KEYS, DEPTH, false);
    let full = simd_json::to_tape(&mut data.to_vec()).map(|t| crate::json::depth(&t.0));
    match &one {
        Some(found) => {
            let depth = full
                .as_ref()
                .expect("the skim accepted what simd-json refuses");
            assert!(*depth <= DEPTH, "the skim accepted a document {depth} deep");
            let root: serde_json::Value =
                serde_json::from_slice(data).expect("the skim accepted what serde_json refuses");
            match (found, root.as_object()) {
                (None, None) => {}
                (Some(pairs), Some(obj)) => {
                    for (k, key) in KEYS.iter().enumerate() {
                        let got = pairs.iter().find(|(i, _)| *i == k).map(|(_, r)| {
                            serde_json::from_slice::<serde_json::Value>(&data[r.clone()])
                                .expect("a found value parses alone")
                        });
                        assert_eq!(got.as_ref(), obj.get(*key), "key {key}");
                    }
                }
                _ => panic!("the skim and serde_json disagree on the root's kind"),
            }
        }
        None => {
            // Judged against the two parsers together: simd-json alone
            // accepts trailing bytes after a number of 20+ digits
            // (`[12345678901234567890.5x]`), which serde_json and the skim
            // refuse.
            let serde_ok = serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
            if let (Ok(depth), true) = (full, serde_ok) {
                let lenient = [&b"\\u"[..], b"e", b"E"]
                    .iter()
                    .any(|w| data.windows(w.len()).any(|x| x == *w));
                assert!(
                    lenient || depth > DEPTH,
                    "the skim refused what simd-json and serde_json accept"
                );
            }
        }
    }
    let commas = data.iter().enumerate().filter(|(_, &b)| b == b',');
    for (i, _) in commas.take(32) {
        assert_eq!(
            skim::with_split(data, &KEYS, DEPTH, i + 1),
            one,
            "split at {}",
            i + 1
        );
    }
    assert_eq!(skim::with_split(data, &KEYS, DEPTH, data.len() / 2), one);
}
