//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `*.neff` under `dir` (relative to the root), sorted.
pub fn neffs(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no fixtures in {dir}");
    v
}

/// Runs the `neff` binary.
pub fn neff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .output()
        .expect("run neff")
}

/// Runs `neff` and asserts success, returning stdout.
pub fn neff_ok(args: &[&str]) -> Vec<u8> {
    let o = neff(args);
    assert!(
        o.status.success(),
        "neff {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Whether an external tool is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes the payload of a NEFF (bytes after the header, `data_size` long)
/// to a file in `dir` and returns its path.
pub fn payload_file(neff: &Path, dir: &Path) -> PathBuf {
    let bytes = std::fs::read(neff).unwrap();
    let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let p = dir.join(format!(
        "{}.payload",
        neff.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&p, &bytes[1024..1024 + data_size]).unwrap();
    p
}

/// Asserts the CLI refused `args` the contract's way: exit 1, one line
/// `neff: <path>: <reason>` on stderr, nothing on stdout. Returns the reason.
pub fn assert_refused(args: &[&str], path: &Path) -> String {
    let o = neff(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(1),
        "neff {args:?}: want exit 1, stderr {err}"
    );
    assert!(
        o.stdout.is_empty(),
        "neff {args:?} printed to stdout on refusal"
    );
    assert_eq!(
        err.lines().count(),
        1,
        "neff {args:?}: not one line: {err:?}"
    );
    let prefix = format!("neff: {}: ", path.display());
    assert!(
        err.starts_with(&prefix),
        "neff {args:?}: {err:?} lacks {prefix:?}"
    );
    err[prefix.len()..].trim_end().to_string()
}

/// Names as `TOOL tf` lists `archive` (a tar, or a gzip tar), with the one
/// leading `./` that `neff` drops removed (the root entry `./` stays).
pub fn tool_list(tool: &str, archive: &Path) -> Vec<String> {
    let o = Command::new(tool).arg("tf").arg(archive).output().unwrap();
    assert!(
        o.status.success(),
        "{tool} tf {}: {}",
        archive.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            l.strip_prefix("./")
                .filter(|r| !r.is_empty())
                .unwrap_or(l)
                .to_string()
        })
        .collect()
}

/// `n` pseudo-random bytes (xorshift64 from `seed`): incompressible data
/// that every run makes the same.
#[allow(dead_code)]
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A valid NEFF header in front of `payload` (package version 2 if it is
/// gzip, else 1), with a fixed uuid: crafted tars become NEFFs.
pub fn wrap(payload: &[u8]) -> Vec<u8> {
    let opts = neff::pack::PackOptions::default()
        .no_gzip(!payload.starts_with(&[0x1f, 0x8b]))
        .mtime(Some(0));
    neff::pack::behind_header(payload, None, &opts).expect("a header for bytes in memory")
}

/// The body of a PAX extended header: one `"<len> key=value\n"` record per
/// pair, each length counting its own digits.
pub fn pax_records(records: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (k, v) in records {
        let rest = format!(" {k}={v}\n");
        let mut n = rest.len() + 1;
        while format!("{n}{rest}").len() != n {
            n += 1;
        }
        body.extend(format!("{n}{rest}").as_bytes());
    }
    body
}

/// A good NEFF's bytes (a gzip fixture that reads whole), for caches built
/// by tests.
pub fn good_neff() -> Vec<u8> {
    std::fs::read(root().join("fixtures/acc/cc-replica-groups-gz.neff")).unwrap()
}

/// Writes `bytes` at `dir/name`, making the directories between.
pub fn put(dir: &Path, name: &str, bytes: &[u8]) {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}
